//! `installModes`: what the plan supports, except that with a conversion webhook only
//! AllNamespaces can be (OLM refuses anything else).

use std::collections::BTreeSet;

use olmpack_model::csv::InstallMode;
use olmpack_model::plan::{CsvMetadata, InstallModeType};
use olmpack_model::report::Finding;

/// Every install mode OLM knows, each supported or not; a plan that asks for more than
/// AllNamespaces with a conversion webhook gets AllNamespaces and a warning.
pub(super) fn install_modes(
    csv: &CsvMetadata,
    has_conversion: bool,
    notes: &mut Vec<Finding>,
) -> Vec<InstallMode> {
    let mut supported: BTreeSet<InstallModeType> = csv
        .install_modes
        .clone()
        .unwrap_or_else(|| vec![InstallModeType::AllNamespaces])
        .into_iter()
        .collect();
    let only_all: BTreeSet<InstallModeType> = [InstallModeType::AllNamespaces].into();
    if has_conversion && supported != only_all {
        notes.push(
            Finding::warning(
                "plan/install-modes-forced",
                format!(
                    "install modes {} changed to AllNamespaces only: a CRD converts through a webhook, and OLM supports conversion webhooks only for operators installed in AllNamespaces mode",
                    supported.iter().map(|m| m.as_str()).collect::<Vec<_>>().join(", ")
                ),
            )
            .field("csv.installModes"),
        );
        supported = only_all;
    }
    (InstallModeType::ALL.iter())
        .map(|mode| InstallMode {
            type_: Some(mode.as_str().to_owned()),
            supported: Some(supported.contains(mode)),
            ..InstallMode::default()
        })
        .collect()
}
