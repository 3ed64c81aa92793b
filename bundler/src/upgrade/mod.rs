//! Will the next release break clusters that run an older one? Three answers, from cheapest
//! to most real, each over every edge of the plan's upgrade graph
//! ([`olmpack_model::upgrade_graph`]):
//!
//! - [`check`]: static — the CRDs of each edge's two releases compared as OLM v1 and OLM v0
//!   compare them (`olmpack upgrade check`);
//! - [`test`]: live, on a real apiserver with the operator's conversion webhook — upgrade, round
//!   trips, storage migration, webhook outage, rollback (`olmpack upgrade test`);
//! - [`olm`]: under the real OLM v0, installing every release by Subscription and upgrading
//!   along every edge it takes (`olmpack upgrade olm`).

pub mod check;
pub mod olm;
pub mod test;
