//! olmpack: OLM bundles, File-Based Catalogs and their images from one release plan, for any
//! operator.
//!
//! Data flows one way: **plan → read → build → validate → lay out → write/push**. The pure
//! model is its own crate, [`olmpack_model`] (the plan's types and parsing, findings, the
//! upgrade graph, versions, the Go-compatible YAML reader), which depends on no I/O or
//! command-line crate (`cargo xtask lint` checks). Below it all lies [`olmpack_oci`]: OCI
//! images, registries, SBOMs and signatures, and safe file reading and writing — nothing OLM
//! (`cargo xtask lint` checks), named by its own paths (`olmpack_oci::input`, ...); [`image`]
//! builds bundle and catalog images on its images.
//!
//! - [`plan`]: loading the release plan (`olmpack.yaml`) and resolving the files it names.
//! - [`bundle`]: registry+v1 bundles: build the CSV and bundle files from manifests, validate
//!   any bundle directory.
//! - [`catalog`]: File-Based Catalogs: model, opm's render, templates, upgrade graphs,
//!   validation.
//! - [`build`]: every bundle of a plan and the catalog that publishes them, built in memory.
//! - [`install`]: install manifests for users (OLM v0 Subscription, OLM v1 ClusterExtension + RBAC).
//! - [`image`]: bundle and catalog images without a container engine, on [`olmpack_oci::image`]
//!   (OCI layouts, pushes, pulls).
//! - [`release`]: the `olmpack release` job — from the plan to pushed, digest-pinned images.
//! - [`upgrade`]: will the next release break installed clusters — [`upgrade::check`]
//!   (static, OLM v0 and v1's checks), [`upgrade::test`] (a real apiserver), [`upgrade::olm`]
//!   (the real OLM v0 or OLM v1 behind one driver; [`upgrade::olm::platform`]: the cluster it runs as, Kubernetes or
//!   OpenShift, for `upgrade olm --platform`).
//! - [`cluster_crds`]: kinds of other operators a bundle may ship (ServiceMonitor, …) and
//!   stand-in CRDs for them, for `upgrade olm --cluster-crd NAME`.
//! - [`kubebuilder`]: a kubebuilder project's PROJECT file as a release plan (`olmpack plan init`).
//! - [`tools`]: the pinned reference tools as one OCI image (`olmpack tools pack/install`).
//! - [`refusal`]: which errors refuse the input (exit 1) rather than fail (exit 2).
//!
//! Pure code in the middle, I/O at the edges: only plan and manifest loading, `output`, and
//! `image` (build reads directories, push and base pulls use the network) touch the file
//! system or network.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod build;
pub mod bundle;
pub mod catalog;
pub mod cluster_crds;
pub mod image;
pub mod install;
pub mod json;
pub mod kubebuilder;
pub mod plan;
pub mod refusal;
pub mod release;
pub mod tools;
pub mod upgrade;

/// Installs rustls' ring provider as the process default; call first in every binary and test
/// harness that may use TLS. One definition for every crate that uses TLS: the test
/// environment's.
pub use olmpack_envtest::install_crypto_provider;
