//! Bundle and catalog images without a container engine: built byte-reproducibly into OCI
//! image layouts, pushed to registries, resolved to digests. What is not OLM's — layers,
//! layouts, registries, pulls, pushes, operator images — is [`olmpack_oci::image`];
//! [`build`] adds the bundle and catalog images.
//!
//! Contract (beside that of [`olmpack_oci::image`]: reproducible, whole or absent, no
//! credentials printed):
//! - **Where files land.** A bundle image has one layer per `bundle.Dockerfile` `COPY` line:
//!   `manifests/` → `/manifests/`, `metadata/` → `/metadata/`, and `tests/scorecard/` →
//!   `/tests/scorecard/` when present; its labels are exactly `metadata/annotations.yaml`'s
//!   `annotations`. A catalog image has one layer with the File-Based Catalog under `/configs`
//!   and the label `operators.operatorframework.io.index.configs.v1=/configs`; on a base image
//!   (the opm image) it keeps every base layer and setting, appends its layer and runs
//!   `/bin/opm serve /configs --cache-dir=/tmp/cache --cache-enforce-integrity=false`.
#![warn(missing_docs)]

pub mod build;

/// The label a File-Based Catalog image carries to say where its configs are.
pub const CATALOG_CONFIGS_LABEL: &str = "operators.operatorframework.io.index.configs.v1";
