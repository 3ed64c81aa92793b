//! olmpack's upgrade-test engine — a shipped part of the product, not a test suite (the
//! folder is named for what it answers): the environments olmpack's live commands start,
//! also used by its tests: a real etcd + kube-apiserver (+ kube-controller-manager) — the
//! envtest that Rust lacks — real OLM v0 and OLM v1 on it ([`olm`]), and the live CRD upgrade
//! runs (`olmpack upgrade test`) and OLM installs (`olmpack upgrade olm`) on them.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use olmpack_envtest::{control_plane::TestEnv, control_plane::TestEnvOptions};
//!
//! // etcd + kube-apiserver on free loopback ports, RBAC on, admin client ready.
//! let env = TestEnv::start().await?;
//! let client = env.client();
//! // The same, with kube-controller-manager for garbage collection of owned objects.
//! let gc_env = TestEnv::start_with(TestEnvOptions { controller_manager: true, ..Default::default() }).await?;
//! # Ok(()) }
//! ```
//!
//! Every process is killed and every temp directory removed when its handle drops, also when
//! a test panics; processes also die with the process that started them (see [`process`]).
//! The binaries come from `cargo xtask setup` or `olmpack tools install` (see [`binaries`]).

pub mod binaries;
pub mod container;
pub mod control_plane;
pub mod https;
pub mod live;
pub mod netns;
pub mod olm;
pub mod pki;
pub mod process;
pub mod service_ca;

/// Installs rustls' ring provider as the process default; safe to call any number of times.
///
/// Several dependencies enable aws-lc-rs too, and with two providers compiled in rustls
/// panics at the first TLS setup unless one is installed explicitly.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
