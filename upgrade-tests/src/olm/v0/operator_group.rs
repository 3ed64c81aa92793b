//! The environment's namespaces: OLM's, the operator's, and which ones the installed operator
//! serves — the OperatorGroup an [`super::OlmEnv`] creates in the operator namespace for an
//! install mode, and where a user of that install creates objects.

use olmpack_model::plan::InstallModeType;

/// Where OLM's global catalogs live (`catalog-operator --namespace`).
pub const CATALOG_NAMESPACE: &str = "olm";
/// Where an environment's first install goes, with the OperatorGroup of its install mode.
pub const OPERATOR_NAMESPACE: &str = "operators";

/// The namespaces a SingleNamespace (the first) or MultiNamespace (both) OperatorGroup of an
/// environment's first install targets; neither is the operator namespace.
pub const TARGET_NAMESPACES: [&str; 2] = ["olmpack-target-a", "olmpack-target-b"];

/// The namespaces of one install: the operator's, and the ones its OperatorGroup may target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Namespaces {
    /// Where the operator is installed, with the OperatorGroup.
    pub operator: String,
    /// What a SingleNamespace (the first) or MultiNamespace (both) OperatorGroup targets.
    pub targets: [String; 2],
}

impl Namespaces {
    /// The namespaces of an environment's `n`th install (from 0): [`OPERATOR_NAMESPACE`] and
    /// [`TARGET_NAMESPACES`], then the same names with `-2`, `-3`… appended, so that an
    /// install never waits for the namespaces of the one before it to go.
    pub fn nth(n: u32) -> Self {
        let suffix = match n {
            0 => String::new(),
            n => format!("-{}", n + 1),
        };
        Self {
            operator: format!("{OPERATOR_NAMESPACE}{suffix}"),
            targets: TARGET_NAMESPACES.map(|t| format!("{t}{suffix}")),
        }
    }

    /// Every one of them.
    pub fn all(&self) -> [&str; 3] {
        [&self.operator, &self.targets[0], &self.targets[1]]
    }

    /// The OperatorGroup's `spec.targetNamespaces` for `mode` (empty: all namespaces).
    pub fn targeted(&self, mode: InstallModeType) -> Vec<&str> {
        match mode {
            InstallModeType::AllNamespaces => Vec::new(),
            InstallModeType::OwnNamespace => vec![&self.operator],
            InstallModeType::SingleNamespace => vec![&self.targets[0]],
            InstallModeType::MultiNamespace => vec![&self.targets[0], &self.targets[1]],
        }
    }

    /// Where example objects of namespaced kinds are created under `mode`: a namespace the
    /// operator serves, as a user of that install would create them (`kubectl create -n NS`).
    pub fn for_examples(&self, mode: InstallModeType) -> &str {
        match mode {
            InstallModeType::AllNamespaces => "default",
            InstallModeType::OwnNamespace => &self.operator,
            InstallModeType::SingleNamespace | InstallModeType::MultiNamespace => &self.targets[0],
        }
    }
}

/// The name of the OperatorGroup an environment creates in each operator namespace.
pub const NAME: &str = "olmpack";

/// Whether OLM manages the namespaces an OperatorGroup targets, by its `status`: the
/// olm-operator writes `status.namespaces` (`[""]` for all namespaces) and
/// `status.lastUpdated` once it has synced the group. Until then OLM's catalog-operator may
/// not find an OperatorGroup managing the namespace ("attenuated service account query
/// failed - no operator group found that is managing this namespace") and leaves an
/// approved InstallPlan as it is.
pub fn managed(status: &serde_json::Value, targeted: &[&str]) -> bool {
    let mut want: Vec<&str> = match targeted {
        [] => vec![""],
        some => some.to_vec(),
    };
    let mut have: Vec<&str> = status["namespaces"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n.as_str())
        .collect();
    want.sort_unstable();
    have.sort_unstable();
    status["lastUpdated"].is_string() && have == want
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn olm_manages_the_namespaces_once_its_status_lists_them() {
        let synced = |namespaces: serde_json::Value| json!({"namespaces": namespaces, "lastUpdated": "2026-12-05T14:00:00Z"});
        let table = [
            (json!({}), vec![], false),
            (json!(null), vec![], false),
            (synced(json!([""])), vec![], true),
            (json!({"namespaces": [""]}), vec![], false),
            (synced(json!(["operators"])), vec!["operators"], true),
            (synced(json!([""])), vec!["operators"], false),
            (
                synced(json!(["olmpack-target-b", "olmpack-target-a"])),
                vec!["olmpack-target-a", "olmpack-target-b"],
                true,
            ),
            (
                synced(json!(["olmpack-target-a"])),
                vec!["olmpack-target-a", "olmpack-target-b"],
                false,
            ),
        ];
        for (status, targeted, want) in table {
            assert_eq!(
                managed(&status, &targeted),
                want,
                "{status} for {targeted:?}"
            );
        }
    }

    #[test]
    fn each_mode_targets_its_namespaces() {
        let table = [
            (InstallModeType::AllNamespaces, vec![], "default"),
            (
                InstallModeType::OwnNamespace,
                vec!["operators"],
                "operators",
            ),
            (
                InstallModeType::SingleNamespace,
                vec!["olmpack-target-a"],
                "olmpack-target-a",
            ),
            (
                InstallModeType::MultiNamespace,
                vec!["olmpack-target-a", "olmpack-target-b"],
                "olmpack-target-a",
            ),
        ];
        for (mode, targets, examples) in table {
            assert_eq!(Namespaces::nth(0).targeted(mode), targets, "{mode}");
            assert_eq!(Namespaces::nth(0).for_examples(mode), examples, "{mode}");
        }
        let third = Namespaces::nth(2);
        assert_eq!(
            third.all(),
            ["operators-3", "olmpack-target-a-3", "olmpack-target-b-3"]
        );
        assert_eq!(
            third.targeted(InstallModeType::OwnNamespace),
            ["operators-3"]
        );
    }
}
