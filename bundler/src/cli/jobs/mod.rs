//! The jobs a release runs: `olmpack generate` (every bundle and the catalog, written or
//! checked) and `olmpack release` (from the plan to pushed, digest-pinned images).

pub mod generate;
pub mod release;
