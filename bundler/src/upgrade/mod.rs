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

use crate::refusal::Refusal;

pub mod check;
pub mod olm;
pub mod test;

// `upgrade olm`'s errors say whether they refuse the input here, beside the module, while
// `olm/` is being restructured.

/// A platform's API kinds olmpack refuses to read; a missing tool or file is not.
impl Refusal for olm::platform::PlatformError {
    fn refuses_input(&self) -> bool {
        use olm::platform::PlatformError as E;
        match self {
            E::Unreadable { source, .. } => source.is_refusal(),
            E::NotInstalled { .. } | E::NotACrd { .. } | E::Empty { .. } => false,
        }
    }
}
