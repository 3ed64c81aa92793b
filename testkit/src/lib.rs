//! Test-only helpers for olmpack's and the reference operator's tests and benches — never a
//! dependency of a shipped crate (`cargo xtask lint` fails if one is):
//!
//! - [`defects`]: deliberately broken next releases of a CRD, one defect each;
//! - [`corpus`]: where the real-world corpora are unpacked, and "NOT RUN" when they are not;
//! - [`files`]: copying fixture trees;
//! - [`Registry`], [`ReferrersRegistry`]: real OCI registries (with or without auth, with the
//!   referrers API);
//! - [`fake_nodes`]: many fake nodes (kwok) on a test control plane, for scale runs;
//! - [`tools`]: whether the pinned tools a test needs are installed, "NOT RUN" when not.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use olmpack_testkit::{registry::Registry, registry::RegistryAuth};
//!
//! // A registry that requires basic auth.
//! let registry = Registry::start(RegistryAuth::Htpasswd {
//!     username: "u".into(),
//!     password: "p".into(),
//! }).await?;
//! # Ok(()) }
//! ```

pub mod corpus;
pub mod defects;
pub mod fake_nodes;
pub mod files;
pub mod olareg;
pub mod registry;
pub mod tools;
