//! Real Kubernetes control planes and OCI registries for Rust tests — the envtest that Rust
//! lacks — and, in later issues, upgrade and rollback tests across CRD versions.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use upgrade_tests::{Registry, RegistryAuth, TestEnv, TestEnvOptions};
//!
//! // etcd + kube-apiserver on free loopback ports, RBAC on, admin client ready.
//! let env = TestEnv::start().await?;
//! let client = env.client();
//! // The same, with kube-controller-manager for garbage collection of owned objects.
//! let gc_env = TestEnv::start_with(TestEnvOptions { controller_manager: true, ..Default::default() }).await?;
//! // A registry that requires basic auth.
//! let registry = Registry::start(RegistryAuth::Htpasswd {
//!     username: "u".into(),
//!     password: "p".into(),
//! }).await?;
//! # Ok(()) }
//! ```
//!
//! Every process is killed and every temp directory removed when its handle drops, also when
//! a test panics; processes also die with the test process (see [`process`]). The binaries
//! come from `cargo xtask setup` (see [`binaries`]).

pub mod binaries;
pub mod control_plane;
pub mod corpus;
pub mod defects;
pub mod fake_nodes;
pub mod files;
pub mod https;
pub mod live;
pub mod olareg;
pub mod olm;
pub mod pki;
pub mod process;
pub mod registry;

pub use binaries::{Tool, ToolData};
pub use control_plane::{EnvError, TestEnv, TestEnvOptions};
pub use https::HttpsServer;
pub use olareg::ReferrersRegistry;
pub use olm::{OlmEnv, OlmEnvOptions};
pub use pki::{CertificateAuthority, CertifiedKey};
pub use registry::{Registry, RegistryAuth};

/// Installs rustls' ring provider as the process default; safe to call any number of times.
///
/// Several dependencies enable aws-lc-rs too, and with two providers compiled in rustls
/// panics at the first TLS setup unless one is installed explicitly.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
