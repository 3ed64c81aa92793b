//! Supply chain artifacts of a release: SPDX SBOMs of the bundle and catalog images
//! ([`sbom`]), attached to them as OCI artifacts.
#![warn(missing_docs)]

pub mod attach;
pub mod cosign;
pub mod oci;
// Documented separately; drop this allow once its public items carry docs.
#[allow(missing_docs)]
pub mod sbom;
