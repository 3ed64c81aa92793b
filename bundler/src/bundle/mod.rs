//! registry+v1 bundles: generate ours from a release plan ([`generate`]), read any bundle
//! directory ([`load`]), and validate it ([`validate`]).
//!
//! Flow ([`generate`]): plan → every file it names, read ([`read`], [`manifests`]) → CSV and
//! objects ([`csv`], pure) → image digests pinned ([`pin`]) → files ([`files`], pure) →
//! validation of the built bundle ([`validate`], pure) → the caller writes or checks them.

pub mod certmanager;
pub mod cr_format;
pub mod cr_schema;
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
pub mod read;
pub mod scorecard;
pub mod validate;
