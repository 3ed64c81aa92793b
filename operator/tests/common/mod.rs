//! Helpers shared by the integration tests; each test binary uses a subset.
#![allow(dead_code)]

pub mod harness;
pub mod olm;
pub mod strategies;
