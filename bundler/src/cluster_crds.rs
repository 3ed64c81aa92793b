//! Kinds that a bundle may ship objects of but whose CRDs belong to another operator, which
//! the cluster must already run: prometheus-operator's `ServiceMonitor`, `PodMonitor` and
//! `PrometheusRule` (kubebuilder projects ship a ServiceMonitor), and cert-manager's
//! `Issuer`, `ClusterIssuer` and `Certificate` (kubebuilder projects with webhooks can ship
//! them for their serving certificate). OLM v0 creates such an
//! object only where the cluster serves its kind; the install fails elsewhere.
//!
//! [`by_name`] gives a stand-in CRD for `olmpack upgrade olm --cluster-crd NAME`: the kind's
//! real group, names, scope and served version, with a schema that keeps every field
//! (`x-kubernetes-preserve-unknown-fields`). The cluster then serves the kind as
//! the owner's CRD would; objects are stored as written, not validated against the owner's
//! schema (pass that CRD's file to `--cluster-crd` for that).
#![warn(missing_docs)]

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::json;

/// One well-known kind of another operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WellKnown {
    /// The CRD name (`<plural>.<group>`), what `--cluster-crd` takes.
    pub name: &'static str,
    /// The API group.
    pub group: &'static str,
    /// The kind.
    pub kind: &'static str,
    /// The plural resource name.
    pub plural: &'static str,
    /// The served and stored version.
    pub version: &'static str,
    /// The operator whose CRD it is.
    pub owner: &'static str,
    /// Whether objects of the kind live in a namespace (else cluster-scoped).
    pub namespaced: bool,
}

/// Every kind [`by_name`] knows.
pub const WELL_KNOWN: [WellKnown; 6] = [
    WellKnown {
        name: "servicemonitors.monitoring.coreos.com",
        group: "monitoring.coreos.com",
        kind: "ServiceMonitor",
        plural: "servicemonitors",
        version: "v1",
        owner: "prometheus-operator",
        namespaced: true,
    },
    WellKnown {
        name: "podmonitors.monitoring.coreos.com",
        group: "monitoring.coreos.com",
        kind: "PodMonitor",
        plural: "podmonitors",
        version: "v1",
        owner: "prometheus-operator",
        namespaced: true,
    },
    WellKnown {
        name: "prometheusrules.monitoring.coreos.com",
        group: "monitoring.coreos.com",
        kind: "PrometheusRule",
        plural: "prometheusrules",
        version: "v1",
        owner: "prometheus-operator",
        namespaced: true,
    },
    cert_manager("issuers.cert-manager.io", "Issuer", "issuers", true),
    cert_manager(
        "clusterissuers.cert-manager.io",
        "ClusterIssuer",
        "clusterissuers",
        false,
    ),
    cert_manager(
        "certificates.cert-manager.io",
        "Certificate",
        "certificates",
        true,
    ),
];

/// A cert-manager kind (group `cert-manager.io`, version v1).
const fn cert_manager(
    name: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
) -> WellKnown {
    WellKnown {
        name,
        group: "cert-manager.io",
        kind,
        plural,
        version: "v1",
        owner: "cert-manager",
        namespaced,
    }
}

/// The well-known kind of `group`/`kind`, if it is one.
pub fn for_kind(group: &str, kind: &str) -> Option<&'static WellKnown> {
    WELL_KNOWN
        .iter()
        .find(|w| w.group == group && w.kind == kind)
}

/// The stand-in CRD named `name` (module docs), or `None` for a name olmpack does not know.
pub fn by_name(name: &str) -> Option<CustomResourceDefinition> {
    let known = WELL_KNOWN.iter().find(|w| w.name == name)?;
    let singular = known.kind.to_lowercase();
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {
            "name": known.name,
            "annotations": {"olmpack.dev/stand-in": format!("{}'s {} kind, without its schema", known.owner, known.kind)},
        },
        "spec": {
            "group": known.group,
            "scope": if known.namespaced { "Namespaced" } else { "Cluster" },
            "names": {
                "kind": known.kind,
                "listKind": format!("{}List", known.kind),
                "plural": known.plural,
                "singular": singular,
            },
            "versions": [{
                "name": known.version,
                "served": true,
                "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
            }],
        },
    });
    Some(serde_json::from_value(crd).expect("the stand-in is a valid CustomResourceDefinition"))
}

/// The names [`by_name`] knows, for messages.
pub fn names() -> Vec<&'static str> {
    WELL_KNOWN.iter().map(|w| w.name).collect()
}

/// Why `--cluster-crd ARG` gives no CRD, when `ARG` is neither a file nor a name olmpack
/// knows: both said, with the names it knows (those of `ARG`'s group first, when any).
pub fn unknown(arg: &str) -> String {
    let group = arg.split_once('.').map(|(_, g)| g).unwrap_or_default();
    let mut known = names();
    known.sort_by_key(|n| !n.ends_with(&format!(".{group}")));
    format!(
        "--cluster-crd {arg}: no such file, and not a CRD name olmpack carries a stand-in for \
         (known: {}); give the CRD's file (e.g. from its operator's release) for any other",
        known.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_well_known_name_gives_its_crd() {
        for known in WELL_KNOWN {
            let crd = by_name(known.name).unwrap();
            assert_eq!(crd.metadata.name.as_deref(), Some(known.name));
            assert_eq!(
                format!("{}.{}", crd.spec.names.plural, crd.spec.group),
                known.name
            );
            assert_eq!(crd.spec.names.kind, known.kind);
            assert_eq!(for_kind(known.group, known.kind), Some(&known));
        }
        assert!(by_name("widgets.example.com").is_none());
        let scope = |name| by_name(name).unwrap().spec.scope;
        assert_eq!(scope("issuers.cert-manager.io"), "Namespaced");
        assert_eq!(scope("clusterissuers.cert-manager.io"), "Cluster");
        assert!(for_kind("apps", "Deployment").is_none());
    }

    #[test]
    fn an_unknown_name_is_said_so_with_the_known_ones() {
        assert_eq!(
            unknown("widgets.cert-manager.io"),
            "--cluster-crd widgets.cert-manager.io: no such file, and not a CRD name olmpack \
             carries a stand-in for (known: issuers.cert-manager.io, clusterissuers.cert-manager.io, \
             certificates.cert-manager.io, servicemonitors.monitoring.coreos.com, \
             podmonitors.monitoring.coreos.com, prometheusrules.monitoring.coreos.com); give the \
             CRD's file (e.g. from its operator's release) for any other"
        );
        assert!(unknown("crds/x.yaml").contains("(known: servicemonitors.monitoring.coreos.com, "));
    }
}
