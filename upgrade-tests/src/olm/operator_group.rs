//! The environment's namespaces: OLM's, the operator's, and which ones the installed operator
//! serves — the OperatorGroup an [`super::OlmEnv`] creates in the operator namespace for an
//! install mode, and where a user of that install creates objects.

use olmpack_model::plan::InstallModeType;

/// Where OLM's global catalogs live (`catalog-operator --namespace`).
pub const CATALOG_NAMESPACE: &str = "olm";
/// Where operators are installed, with the OperatorGroup of the environment's install mode.
pub const OPERATOR_NAMESPACE: &str = "operators";

/// The namespaces a SingleNamespace (the first) or MultiNamespace (both) OperatorGroup
/// targets; the environment creates them. Neither is the operator namespace.
pub const TARGET_NAMESPACES: [&str; 2] = ["olmpack-target-a", "olmpack-target-b"];

/// Every mode, in the order a user installing by hand would prefer them.
pub const PREFERENCE: [InstallModeType; 4] = [
    InstallModeType::AllNamespaces,
    InstallModeType::OwnNamespace,
    InstallModeType::SingleNamespace,
    InstallModeType::MultiNamespace,
];

/// The OperatorGroup's `spec.targetNamespaces` for `mode` (empty: all namespaces).
pub fn target_namespaces(mode: InstallModeType) -> Vec<&'static str> {
    match mode {
        InstallModeType::AllNamespaces => Vec::new(),
        InstallModeType::OwnNamespace => vec![OPERATOR_NAMESPACE],
        InstallModeType::SingleNamespace => vec![TARGET_NAMESPACES[0]],
        InstallModeType::MultiNamespace => TARGET_NAMESPACES.to_vec(),
    }
}

/// Where example objects of namespaced kinds are created under `mode`: a namespace the
/// operator serves, as a user of that install would create them (`kubectl create -n NS`).
pub fn example_namespace(mode: InstallModeType) -> &'static str {
    match mode {
        InstallModeType::AllNamespaces => "default",
        InstallModeType::OwnNamespace => OPERATOR_NAMESPACE,
        InstallModeType::SingleNamespace | InstallModeType::MultiNamespace => TARGET_NAMESPACES[0],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            assert_eq!(target_namespaces(mode), targets, "{mode}");
            assert_eq!(example_namespace(mode), examples, "{mode}");
        }
    }
}
