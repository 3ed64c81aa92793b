//! olmpack: OLM bundles, File-Based Catalogs and their images from one release plan, for any
//! operator.
//!
//! Data flows one way: **plan → model → validate → build → render → write/push**. The pure
//! model is its own crate, [`olmpack_model`], which depends on no I/O or command-line crate
//! (`cargo xtask lint` checks); its modules are re-exported here under their old names:
//! [`plan`] (types and parsing; loading the file is here), [`report`], [`upgrade_graph`],
//! [`yaml`], [`names`], [`choice`], and `catalog::{version, pullspec}`.
//! - [`plan`]: the release plan (`olmpack.yaml`): loading it, resolving the files it names.
//! - [`bundle`]: registry+v1 bundles: build the CSV and bundle files from manifests, validate
//!   any bundle directory.
//! - [`catalog`]: File-Based Catalogs: model, render, templates, upgrade graphs, validation.
//! - [`image`]: bundle and catalog images without a container engine; OCI layouts and pushes.
//! - [`compat`]: CRD compatibility across upgrades (OLM v0 and OLM v1 checks, every edge of
//!   an upgrade graph).
//! - [`report`]: validation findings and their text/JSON/JUnit/Markdown output.
//! - [`input`]: reading input files safely (regular files only, bounded, symlinks kept inside).
//! - [`cluster_crds`]: kinds of other operators a bundle may ship (ServiceMonitor, …) and
//!   stand-in CRDs for them, for `upgrade olm --cluster-crd NAME`.
//! - [`install`]: install manifests for users (OLM v0 Subscription, OLM v1 ClusterExtension + RBAC).
//! - [`output`]: generated file trees, written atomically or checked against disk.
//! - [`upgrade_graph`]: the plan's upgrade graph, the one source of CSV and channel edges.
//! - [`upgrade_olm`]: the real OLM v0 installs and upgrades a catalog's releases (`olmpack upgrade olm`).
//! - [`release`]: the whole release job — bundles and catalog from one plan.
//! - [`live`]: `olmpack upgrade test`, every upgrade edge live on a real apiserver.
//! - [`pipeline`]: `olmpack release` — from the plan to pushed, digest-pinned images.
//! - [`kubebuilder`]: a kubebuilder project's PROJECT file as a release plan (`olmpack plan init`).
//! - [`tools`]: the pinned reference tools as one OCI image (`olmpack tools pack/install`).
//!
//! Pure code in the middle, I/O at the edges: only plan and manifest loading, `output`, and
//! `image` (build reads directories, push and base pulls use the network) touch the file
//! system or network.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod bundle;
pub mod catalog;
pub mod cluster_crds;
pub mod compat;
pub mod image;
pub mod input;
pub mod install;
pub mod json;
pub mod kubebuilder;
pub mod live;
pub mod output;
pub mod pipeline;
pub mod plan;
pub mod release;
pub mod supply;
pub mod tools;
pub mod upgrade_olm;

/// Installs rustls' ring provider as the process default; call first in every binary and test
/// harness that may use TLS (several dependencies also compile in aws-lc-rs, and with two
/// providers rustls panics at the first TLS setup). Safe to call more than once.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
