//! Supply chain artifacts of a release: SPDX SBOMs of the images
//! ([`sbom`]), attached to them as OCI artifacts.
#![warn(missing_docs)]

pub mod attach;
pub mod cosign;
pub mod oci;
pub mod sbom;
