//! registry+v1 bundles: read any bundle directory ([`load`]), generate ours from a release
//! plan, and validate.

pub mod load;
