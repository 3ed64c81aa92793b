//! registry+v1 bundles: generate ours from a release plan ([`generate`]), read any bundle
//! directory ([`load`]), and validate it ([`validate`]).
//!
//! Flow: plan + manifests ([`manifests`]) → CSV and objects ([`csv`], pure) → files
//! ([`files`], pure) → validation ([`validate`], pure) → the caller writes or checks them.

pub mod certmanager;
pub mod crd_v1beta1;
pub mod csv;
pub mod fieldcase;
pub mod files;
pub mod generate;
pub mod helm;
pub mod inputs;
pub mod load;
pub mod manifests;
pub mod operator_sdk;
pub mod pin;
pub mod scorecard;
pub mod validate;
