//! olmpack's lower layer: OCI images without a container engine and what ships beside them,
//! on safe file reading and writing. Nothing here knows the operator packaging the images
//! carry; the `olmpack` crate builds that on top (`cargo xtask lint` checks that this crate
//! depends on none of it and names none of it).
//!
//! - [`input`]: reading input files safely (regular files only, bounded, symlinks kept inside).
//! - [`output`]: generated file trees, written atomically or checked against disk.
//! - [`leftovers`]: temp directories a killed run left behind, removed by the next run.
//! - [`image`]: images built byte-reproducibly into OCI layouts, pushed to registries, pulled
//!   and resolved to digests.
//! - [`supply`]: SBOMs and signatures attached to pushed images.
//!
//! Every error of this crate says through [`RefusesInput`] whether it refuses the input or
//! means the job could not be done; `olmpack::refusal` turns that into an exit code.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod image;
pub mod input;
pub mod leftovers;
pub mod output;
pub mod supply;

/// An error that says whether it refuses the input. Implemented beside every error of this
/// crate; `olmpack::refusal::Refusal` asks it for each of them.
pub trait RefusesInput {
    /// True when the input is refused (invalid input, input that is refused to be read);
    /// false when the job could not be done (a missing or unreadable input, an output that
    /// may not be replaced, I/O or network failure).
    fn refuses_input(&self) -> bool;
}
