//! The edges of an upgrade graph, the releases on both ends, and the check of each edge.
//!
//! Edges come from a catalog [`Model`] ([`edges`]; a plan's edges are those of the catalog it
//! generates): on every channel, `replaces`, every `skips` entry,
//! and `olm.skipRange` (every other entry of the channel whose version is in the range);
//! [`next_head_edges`] adds, when a previously published catalog is known, the edge from each
//! of its channel heads to the channel's new head. An edge found several ways is one edge.
//!
//! An [`InstalledBundle`] is what OLM installs from one bundle: its CRDs as OLM applies them (a CSV
//! `ConversionWebhook` listing a CRD sets that CRD's `spec.conversion` to `Webhook`, as OLM v0
//! and OLM v1 do), the CSV's example objects, and the bundle's conversion-webhook findings
//! (the `webhook/conversion-*` rules of `bundle validate`, reused as they are).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde::Serialize;
use serde_json::Value;

use super::{
    Consumer, Consumers, PairInput, Problem, RefusedBy, assumed_stored_versions, check_pair,
};
use crate::bundle::load::{LoadedBundle, Object};
use crate::bundle::validate;
use crate::catalog::cover::ByVersion;
use crate::catalog::model::{Bundle, Model};
use crate::catalog::property::{self, Typed};
use olmpack_model::csv::ClusterServiceVersion;
use olmpack_model::report::{Finding, Severity};
pub use olmpack_model::upgrade::Edge;
use olmpack_model::upgrade::Verdict;
pub use olmpack_model::upgrade_graph::EdgeKind;
use olmpack_model::version::{Range, Version};

/// A release could not be read.
#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    /// A CRD of a release does not decode as an `apiextensions.k8s.io/v1` CRD, so it cannot be compared.
    #[error(
        "{file}: {object}: not a valid apiextensions.k8s.io/v1 CustomResourceDefinition: {path}: {message}"
    )]
    Crd {
        /// The file the CRD came from.
        file: PathBuf,
        /// The object, e.g. `CustomResourceDefinition/webapps.apps.olmpack.dev`.
        object: String,
        /// Where in the object decoding failed.
        path: String,
        /// Why decoding failed.
        message: String,
    },
    /// A CRD of a release uses an API version other than `apiextensions.k8s.io/v1` or `v1beta1`.
    #[error(
        "{file}: {object}: apiVersion {api_version} is not supported (only apiextensions.k8s.io/v1 and v1beta1 CRDs can be compared)"
    )]
    CrdVersion {
        /// The file the CRD came from.
        file: PathBuf,
        /// The object.
        object: String,
        /// The API version it is written in.
        api_version: String,
    },
    /// A catalog bundle's embedded manifest cannot be decoded, so its CRDs are unknown.
    #[error("catalog bundle {bundle}: olm.bundle.object property {index} is not a JSON manifest")]
    BundleObject {
        /// The catalog bundle name.
        bundle: String,
        /// Position of the `olm.bundle.object` property among the bundle's properties.
        index: usize,
    },
}

/// Never about the input olmpack reads: a failure to do the job (exit 2).
impl crate::refusal::Refusal for GraphError {
    fn refuses_input(&self) -> bool {
        false
    }
}

/// What OLM installs from one bundle.
#[derive(Clone, Debug, Default)]
pub struct InstalledBundle {
    /// The bundle (CSV) name.
    pub name: String,
    /// The CRDs, as OLM applies them.
    pub crds: Vec<CustomResourceDefinition>,
    /// Example objects: the CSV's `alm-examples` (which carry the plan's samples).
    pub examples: Vec<Value>,
    /// Problems of the bundle that matter on upgrade (conversion webhooks, unreadable examples).
    pub findings: Vec<Finding>,
    /// The install strategy's Deployments: name → `spec.selector` (`null` when unset).
    pub deployments: BTreeMap<String, Value>,
    /// The resources a mutating admission webhook of the CSV covers, as `(group, resource)`
    /// (`*` for any): objects of these are stored as the webhook leaves them.
    pub mutated: Vec<(String, String)>,
}

impl InstalledBundle {
    /// Whether a mutating admission webhook of this release covers the objects of `crd`.
    pub fn mutates(&self, crd: &CustomResourceDefinition) -> bool {
        crate::bundle::validate::examples::covers(&self.mutated, crd)
    }
}

impl InstalledBundle {
    /// From a bundle directory (or one generated in memory).
    pub fn from_bundle(bundle: &LoadedBundle) -> Result<InstalledBundle, GraphError> {
        let csv = bundle.csv().map(|c| &c.value);
        let name = bundle
            .csv()
            .map(Object::name)
            .unwrap_or_default()
            .to_owned();
        let crds = bundle
            .crds()
            .map(|crd| typed_crd(crd.object, &crd.v1))
            .collect::<Result<Vec<_>, _>>()?;
        let findings = validate::webhook_findings(bundle)
            .into_iter()
            .filter(|f| f.rule.starts_with("webhook/conversion"))
            .collect();
        Ok(Self::assemble(name, crds, csv, findings))
    }

    /// From a catalog bundle's `olm.bundle.object` properties (when no bundle directory has it).
    pub fn from_catalog(bundle: &Bundle) -> Result<InstalledBundle, GraphError> {
        let mut objects = Vec::new();
        for (index, p) in bundle.properties.iter().enumerate() {
            if let Ok(Typed::BundleObject(bytes)) = property::parse(index, p) {
                let value: Value =
                    serde_json::from_slice(&bytes).map_err(|_| GraphError::BundleObject {
                        bundle: bundle.name.clone(),
                        index,
                    })?;
                objects.push(Object {
                    file: PathBuf::from(format!("{}#olm.bundle.object[{index}]", bundle.name)),
                    index,
                    value,
                });
            }
        }
        let csv = objects
            .iter()
            .find(|o| o.kind() == "ClusterServiceVersion")
            .map(|o| &o.value);
        let crds = objects
            .iter()
            .filter(|o| o.kind() == "CustomResourceDefinition")
            .map(|o| typed_crd(o, &crate::bundle::crd_v1beta1::to_v1(&o.value)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self::assemble(bundle.name.clone(), crds, csv, Vec::new()))
    }

    fn assemble(
        name: String,
        mut crds: Vec<CustomResourceDefinition>,
        csv: Option<&Value>,
        mut findings: Vec<Finding>,
    ) -> InstalledBundle {
        let mut examples = Vec::new();
        let typed = csv.map(|c| ClusterServiceVersion::read(c).0);
        if let Some(csv) = &typed {
            for crd in &mut crds {
                apply_conversion_webhook(crd, csv);
            }
        }
        match typed.as_ref().map(ClusterServiceVersion::alm_examples) {
            Some(Ok(list)) => examples = list,
            Some(Err(e)) => findings.push(
                Finding::warning(
                    "crd-upgrade/examples-unreadable",
                    format!("{}; its examples were not checked", e.problem()),
                )
                .object(format!("ClusterServiceVersion/{name}"))
                .field(e.field()),
            ),
            None => {}
        }
        crds.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
        let deployments = (typed.as_ref())
            .and_then(|c| c.strategy())
            .and_then(|s| s.deployments.as_ref())
            .into_iter()
            .flatten()
            .filter_map(|d| {
                let selector = d.spec.as_ref().and_then(|spec| spec.selector.clone());
                Some((d.name.clone()?, selector.unwrap_or(Value::Null)))
            })
            .collect();
        let mutated = (typed.as_ref())
            .map(crate::bundle::validate::examples::mutated_resources)
            .unwrap_or_default();
        InstalledBundle {
            name,
            crds,
            examples,
            findings,
            deployments,
            mutated,
        }
    }
}

/// The CRD `object` as read into the typed v1 model from `v1`, its v1 shape (a v1beta1 CRD
/// converted as `bundle validate` converts it, so that every edge gets a verdict).
fn typed_crd(object: &Object, v1: &Value) -> Result<CustomResourceDefinition, GraphError> {
    let api_version = v1.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if api_version != "apiextensions.k8s.io/v1" {
        return Err(GraphError::CrdVersion {
            file: object.file.clone(),
            object: object.display_name(),
            api_version: object.api_version().to_owned(),
        });
    }
    serde_path_to_error::deserialize(v1).map_err(|e| GraphError::Crd {
        file: object.file.clone(),
        object: object.display_name(),
        path: e.path().to_string(),
        message: e.inner().to_string(),
    })
}

/// Namespace written into the conversion webhook's service reference: OLM fills in the
/// operator's namespace at install, which is not known before.
pub const INSTALL_NAMESPACE: &str = "olm";

/// What OLM does at install for the CSV's `ConversionWebhook` definition that lists this CRD
/// ([`crate::bundle::csv::olm_conversion`], in [`INSTALL_NAMESPACE`]; its CA bundle is OLM's
/// to inject). A CRD no definition lists is left as it is.
pub fn apply_conversion_webhook(crd: &mut CustomResourceDefinition, csv: &ClusterServiceVersion) {
    let name = crd.metadata.name.clone().unwrap_or_default();
    let definitions = (csv.spec.as_ref())
        .and_then(|spec| spec.webhookdefinitions.as_deref())
        .unwrap_or_default();
    let Some(definition) = crate::bundle::csv::definition_converting(definitions, &name) else {
        return;
    };
    let conversion = crate::bundle::csv::olm_conversion(definition, INSTALL_NAMESPACE);
    // The shape is built from the definition's own values; a definition whose values do not
    // fit (a port that is no integer, say) leaves the CRD as the bundle ships it.
    if let Ok(conversion) = serde_json::from_value(conversion) {
        crd.spec.conversion = Some(conversion);
    }
}

#[derive(Default)]
struct Edges(BTreeMap<(String, String, String), Edge>);

impl Edges {
    fn add(&mut self, package: &str, from: &str, to: &str, channel: &str, via: EdgeKind) {
        let key = (package.to_owned(), from.to_owned(), to.to_owned());
        let edge = self.0.entry(key).or_insert_with(|| Edge {
            package: package.to_owned(),
            from: from.to_owned(),
            to: to.to_owned(),
            channels: BTreeSet::new(),
            via: BTreeSet::new(),
        });
        edge.channels.insert(channel.to_owned());
        edge.via.insert(via);
    }
}

/// Every edge of every channel of `model`, ordered by package, then by the versions of
/// `to` and `from`. n·log n in the entries plus the edges: the versions a `skipRange` covers
/// are found by binary search ([`ByVersion`]), not by testing every entry.
pub fn edges(model: &Model) -> Vec<Edge> {
    let mut out = Edges::default();
    for pkg in model.packages.values() {
        for ch in pkg.channels.values() {
            let by_version = ByVersion::new(ch.entries.iter().filter_map(|e| {
                let v = pkg.bundles.get(&e.name)?.version.as_ref()?;
                Some((v, e.name.as_str()))
            }));
            for e in &ch.entries {
                if !e.replaces.is_empty() {
                    out.add(
                        &pkg.name,
                        &e.replaces,
                        &e.name,
                        &ch.name,
                        EdgeKind::Replaces,
                    );
                }
                for s in &e.skips {
                    out.add(&pkg.name, s, &e.name, &ch.name, EdgeKind::Skips);
                }
                if e.skip_range.is_empty() {
                    continue;
                }
                let Ok(range) = Range::parse(&e.skip_range) else {
                    continue;
                };
                for i in by_version.covered(&range, &None, &None) {
                    let other = by_version.get(i).1;
                    if other != e.name {
                        out.add(&pkg.name, other, &e.name, &ch.name, EdgeKind::SkipRange);
                    }
                }
            }
        }
    }
    sorted(model, out.0.into_values().collect())
}

/// From each channel head of `previous` to the head of the same channel in `current`, when
/// they differ.
pub fn next_head_edges(previous: &Model, current: &Model) -> Vec<Edge> {
    let mut out = Edges::default();
    for (name, pkg) in &previous.packages {
        let Some(now) = current.packages.get(name) else {
            continue;
        };
        for (ch_name, ch) in &pkg.channels {
            let Some(new_head) = now.channels.get(ch_name).and_then(|c| c.head()) else {
                continue;
            };
            for old_head in ch.heads() {
                if old_head.name != new_head.name {
                    out.add(
                        name,
                        &old_head.name,
                        &new_head.name,
                        ch_name,
                        EdgeKind::NextHead,
                    );
                }
            }
        }
    }
    sorted(current, out.0.into_values().collect())
}

fn sorted(model: &Model, mut edges: Vec<Edge>) -> Vec<Edge> {
    let version = |pkg: &str, name: &str| -> Option<Version> {
        model.packages.get(pkg)?.bundles.get(name)?.version.clone()
    };
    edges.sort_by_cached_key(|e| {
        (
            e.package.clone(),
            version(&e.package, &e.to),
            version(&e.package, &e.from),
            e.to.clone(),
            e.from.clone(),
        )
    });
    edges
}

/// Merges edges found several ways (channels and `via` united), keeping the first's order.
pub fn merge(edges: Vec<Edge>) -> Vec<Edge> {
    let mut out: Vec<Edge> = Vec::new();
    let mut at: std::collections::HashMap<(String, String, String), usize> =
        std::collections::HashMap::new();
    for edge in edges {
        let key = (edge.package.clone(), edge.from.clone(), edge.to.clone());
        match at.get(&key) {
            Some(&i) => {
                out[i].channels.extend(edge.channels);
                out[i].via.extend(edge.via);
            }
            None => {
                at.insert(key, out.len());
                out.push(edge);
            }
        }
    }
    out
}

/// The verdict on one edge.
#[derive(Clone, Debug, Serialize)]
pub struct EdgeResult {
    /// The upgrade judged.
    pub edge: Edge,
    /// The CRDs compared (by name).
    pub crds: Vec<String>,
    /// What the comparison found, in report order.
    pub findings: Vec<Finding>,
    /// Who refuses the edge: who refuses each of its errors (nobody, for an error that breaks
    /// clusters although nobody refuses it), each once, in the tables' order.
    pub refused_by: BTreeSet<RefusedBy>,
}

impl EdgeResult {
    /// Whether any finding is an error.
    pub fn refused(&self) -> bool {
        self.findings.iter().any(|f| f.severity == Severity::Error)
    }

    /// Whether `consumer` refuses the edge.
    pub fn refused_by_consumer(&self, consumer: Consumer) -> bool {
        self.refused_by.iter().any(|r| r.contains(consumer))
    }

    /// Whether the edge breaks clusters although no OLM refuses it (kube-apiserver refuses
    /// clients' requests afterwards, or data is lost).
    pub fn breaks_clusters(&self) -> bool {
        self.refused_by.iter().any(|r| r.breaks_clusters())
    }

    /// Whether the edge fails the check for `consumers`: one of them refuses it, or it breaks
    /// clusters whoever installs it.
    pub fn fails(&self, consumers: Consumers) -> bool {
        self.verdict(consumers).failed()
    }

    /// The edge's verdict for `consumers`: refused when one of them refuses it, or when
    /// kube-apiserver refuses clients' requests afterwards; data lost when it breaks clusters
    /// otherwise (nobody refuses, data is lost); else passed. It fails the check exactly when
    /// [`Verdict::failed`].
    pub fn verdict(&self, consumers: Consumers) -> Verdict {
        let selected = consumers
            .list()
            .iter()
            .any(|c| self.refused_by_consumer(*c));
        if selected || self.refused_by_consumer(Consumer::KubeApiserver) {
            Verdict::Refused
        } else if self.breaks_clusters() {
            Verdict::DataLost
        } else {
            Verdict::Passed
        }
    }
}

/// Compares the CRDs of `from` and `to` (matched by name) for one edge.
pub fn check_edge(edge: &Edge, from: &InstalledBundle, to: &InstalledBundle) -> EdgeResult {
    let label = edge.label();
    let mut findings = Vec::new();
    let mut refused_by = BTreeSet::new();
    let mut crds = Vec::new();
    for old in &from.crds {
        let name = old.metadata.name.clone().unwrap_or_default();
        crds.push(name.clone());
        let problems = match to
            .crds
            .iter()
            .find(|c| c.metadata.name == old.metadata.name)
        {
            Some(new) => check_pair(&PairInput {
                from: old,
                to: new,
                stored_versions: assumed_stored_versions(old),
                examples: &from.examples,
                mutated: from.mutates(old),
            }),
            None => vec![crd_removed(&name)],
        };
        for p in problems {
            if p.severity == Severity::Error {
                refused_by.insert(p.refused_by);
            }
            findings.push(p.finding(&format!("{label}: CustomResourceDefinition/{name}")));
        }
    }
    for (name, old, new) in changed_selectors(from, to) {
        refused_by.insert(RefusedBy::BOTH_OLMS);
        findings.push(
            Finding::error(
                "upgrade/deployment-selector",
                format!("the next release changes the selector of Deployment {name} from {old} to {new}: OLM v0 and OLM v1 update the Deployment in place and kube-apiserver refuses, since spec.selector is immutable (OLM v0's CSV fails with InstallComponentFailed, OLM v1's ClusterExtension keeps retrying \"cannot patch\"); rename the Deployment when its selector must change; refused by OLM v0 and OLM v1"),
            )
            .object(format!("{label}: Deployment/{name}"))
            .field("spec.selector"),
        );
    }
    for f in &to.findings {
        let mut f = f.clone();
        f.object = Some(format!(
            "{label}: {}",
            f.object.as_deref().unwrap_or(&to.name)
        ));
        if f.severity == Severity::Error {
            refused_by.insert(RefusedBy::BOTH_OLMS);
        }
        findings.push(f);
    }
    EdgeResult {
        edge: edge.clone(),
        crds,
        findings,
        refused_by,
    }
}

/// Deployments of both releases (by name) whose `spec.selector` differs: `(name, old, new)`
/// with each selector as compact JSON.
fn changed_selectors(
    from: &InstalledBundle,
    to: &InstalledBundle,
) -> Vec<(String, String, String)> {
    from.deployments
        .iter()
        .filter_map(|(name, old)| {
            let new = to.deployments.get(name)?;
            (old != new).then(|| (name.clone(), old.to_string(), new.to_string()))
        })
        .collect()
}

fn crd_removed(name: &str) -> Problem {
    Problem {
        rule: "crd-upgrade/crd-removed",
        crd: name.to_owned(),
        version: None,
        path: None,
        message: "the next release no longer ships this CRD: its objects lose their operator, and an installer that prunes what a release no longer contains deletes the CRD with every object".into(),
        refused_by: RefusedBy::NOBODY,
        severity: Severity::Error,
    }
}

/// Checks every edge; an edge whose `from` or `to` has no known release gets an info saying
/// it was not checked.
pub fn check_edges(
    edges: &[Edge],
    releases: &BTreeMap<String, InstalledBundle>,
) -> Vec<EdgeResult> {
    edges
        .iter()
        .map(|edge| match (releases.get(&edge.from), releases.get(&edge.to)) {
            (Some(from), Some(to)) => check_edge(edge, from, to),
            (from, _) => {
                let missing = if from.is_none() { &edge.from } else { &edge.to };
                EdgeResult {
                    edge: edge.clone(),
                    crds: Vec::new(),
                    findings: vec![Finding::info(
                        "crd-upgrade/edge-not-checked",
                        format!("no bundle directory or olm.bundle.object properties for {missing}, so this edge was not checked"),
                    )
                    .object(edge.label())],
                    refused_by: BTreeSet::new(),
                }
            }
        })
        .collect()
}

/// All findings of all edges as one report.
pub fn report(subject: &str, results: &[EdgeResult]) -> olmpack_model::report::Report {
    let mut report = olmpack_model::report::Report::new(subject);
    for r in results {
        report.extend(r.findings.iter().cloned());
    }
    report.normalize();
    report
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::load::load_stream;

    fn model(entries: &str, versions: &[&str]) -> Model {
        let mut text =
            String::from(r#"{"schema":"olm.package","name":"p","defaultChannel":"stable"}"#);
        text.push_str(&format!(
            r#"{{"schema":"olm.channel","package":"p","name":"stable","entries":{entries}}}"#
        ));
        for v in versions {
            text.push_str(&format!(
                r#"{{"schema":"olm.bundle","package":"p","name":"p.v{v}","image":"x/p:{v}","properties":[{{"type":"olm.package","value":{{"packageName":"p","version":"{v}"}}}}]}}"#
            ));
        }
        Model::from_config(load_stream(std::path::Path::new("c.json"), text.as_bytes()).config).0
    }

    fn pairs(edges: &[Edge]) -> Vec<(String, String, Vec<&'static str>)> {
        edges
            .iter()
            .map(|e| {
                (
                    e.from.clone(),
                    e.to.clone(),
                    e.via.iter().map(|v| v.as_str()).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn replaces_skips_skip_range_and_next_heads() {
        let now = model(
            r#"[{"name":"p.v1.0.0"},{"name":"p.v1.1.0","replaces":"p.v1.0.0"},
               {"name":"p.v1.2.0","replaces":"p.v1.1.0","skips":["p.v1.0.0"],"skipRange":">=1.0.0 <1.2.0"}]"#,
            &["1.0.0", "1.1.0", "1.2.0"],
        );
        let edge = |from: &str, to: &str, via: &[&'static str]| {
            (from.to_owned(), to.to_owned(), via.to_vec())
        };
        assert_eq!(
            pairs(&edges(&now)),
            vec![
                edge("p.v1.0.0", "p.v1.1.0", &["replaces"]),
                edge("p.v1.0.0", "p.v1.2.0", &["skips", "skipRange"]),
                edge("p.v1.1.0", "p.v1.2.0", &["replaces", "skipRange"]),
            ]
        );
        let before = model(r#"[{"name":"p.v1.0.0"}]"#, &["1.0.0"]);
        assert_eq!(
            pairs(&next_head_edges(&before, &now)),
            vec![edge("p.v1.0.0", "p.v1.2.0", &["next head"])]
        );
        assert!(next_head_edges(&now, &now).is_empty());
    }

    #[test]
    fn conversion_webhook_findings_are_those_bundle_validate_reports() {
        let csv = serde_json::json!({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
            "metadata": {"name": "p.v1"},
            "spec": {"installModes": [{"type": "OwnNamespace", "supported": true}],
                "install": {"strategy": "deployment", "spec": {"deployments": [{"name": "op", "spec": {}}]}},
                "webhookdefinitions": [{"type": "ConversionWebhook", "generateName": "c.example.com",
                    "deploymentName": "op", "containerPort": 443, "admissionReviewVersions": ["v1"],
                    "sideEffects": "None", "conversionCRDs": ["things.example.com"]}]}});
        let bundle = LoadedBundle {
            objects: vec![Object {
                file: PathBuf::from("manifests/csv.yaml"),
                index: 0,
                value: csv,
            }],
            ..LoadedBundle::default()
        };
        let full: Vec<Finding> = validate::validate(&bundle, &validate::Options::default())
            .findings
            .into_iter()
            .filter(|f| f.rule.starts_with("webhook/conversion"))
            .collect();
        let rules: Vec<&str> = full.iter().map(|f| f.rule.as_str()).collect();
        assert_eq!(
            rules,
            [
                "webhook/conversion-install-modes",
                "webhook/conversion-crds"
            ]
        );
        assert_eq!(
            InstalledBundle::from_bundle(&bundle).unwrap().findings,
            full
        );
    }

    /// The installed bundle's examples are the CSV's `alm-examples` as the model reads them;
    /// an annotation that is not a JSON array of objects is a warning naming the field.
    #[test]
    fn examples_are_read_by_the_models_reader() {
        let with = |annotation: Value| {
            let csv = serde_json::json!({"metadata": {"name": "p.v1", "annotations": {"alm-examples": annotation}}});
            InstalledBundle::assemble("p.v1".into(), Vec::new(), Some(&csv), Vec::new())
        };
        let cases: [(Value, usize, &[&str]); 5] = [
            (Value::Null, 0, &[]),
            (serde_json::json!(" "), 0, &[]),
            (serde_json::json!(r#"[{"kind":"Thing"}]"#), 1, &[]),
            (
                serde_json::json!("[1]"),
                0,
                &[
                    "alm-examples is not a JSON array of objects: element 0 is a number; its examples were not checked",
                ],
            ),
            (
                serde_json::json!("kind: Thing"),
                0,
                &[
                    "alm-examples is not a JSON array of objects: expected value at line 1 column 1; its examples were not checked",
                ],
            ),
        ];
        for (annotation, count, messages) in cases {
            let release = with(annotation.clone());
            assert_eq!(release.examples.len(), count, "{annotation}");
            let found: Vec<&str> = release
                .findings
                .iter()
                .map(|f| f.message.as_str())
                .collect();
            assert_eq!(found, messages, "{annotation}");
            for finding in &release.findings {
                assert_eq!(finding.rule, "crd-upgrade/examples-unreadable");
                assert_eq!(
                    finding.field.as_deref(),
                    Some("metadata.annotations.alm-examples")
                );
                assert_eq!(
                    finding.object.as_deref(),
                    Some("ClusterServiceVersion/p.v1")
                );
            }
        }
    }

    fn release(selector: Value, crd_api: &str) -> InstalledBundle {
        let csv = serde_json::json!({"metadata": {"name": "p.v1"}, "spec": {"install": {"spec": {"deployments": [
            {"name": "op", "spec": {"selector": selector}}]}}}});
        let crd_value = serde_json::json!({
            "apiVersion": crd_api, "kind": "CustomResourceDefinition",
            "metadata": {"name": "things.example.com"},
            "spec": {"group": "example.com", "version": "v1", "names": {"kind": "Thing", "plural": "things"}}
        });
        let object = Object {
            file: PathBuf::from("crd.yaml"),
            index: 0,
            value: crd_value,
        };
        let crd = typed_crd(&object, &crate::bundle::crd_v1beta1::to_v1(&object.value)).unwrap();
        InstalledBundle::assemble("p.v1".into(), vec![crd], Some(&csv), Vec::new())
    }

    #[test]
    fn v1beta1_crds_are_compared_and_a_changed_selector_is_refused_by_both_olms() {
        let old = release(
            serde_json::json!({"matchLabels": {"app": "op"}}),
            "apiextensions.k8s.io/v1beta1",
        );
        let same = release(
            serde_json::json!({"matchLabels": {"app": "op"}}),
            "apiextensions.k8s.io/v1beta1",
        );
        let changed = release(
            serde_json::json!({"matchLabels": {"app": "op", "tier": "m"}}),
            "apiextensions.k8s.io/v1beta1",
        );
        let edge = Edge {
            package: "p".into(),
            from: "p.v1".into(),
            to: "p.v2".into(),
            channels: BTreeSet::new(),
            via: BTreeSet::new(),
        };
        let result = check_edge(&edge, &old, &same);
        assert!(!result.refused(), "{:#?}", result.findings);
        let result = check_edge(&edge, &old, &changed);
        let rules: Vec<&str> = result
            .findings
            .iter()
            .filter(|f| f.severity == Severity::Error)
            .map(|f| f.rule.as_str())
            .collect();
        assert_eq!(rules, ["upgrade/deployment-selector"]);
        // Both refuse: the live OLM v1 (keda 2.2.0 -> 2.3.0, olm_v1_e2e_corpus) says
        // `cannot patch "keda-olm-operator" with kind Deployment: … field is immutable`.
        assert!(result.refused_by_consumer(Consumer::OlmV0));
        assert!(result.refused_by_consumer(Consumer::OlmV1));
        assert!(result.fails(Consumers::OlmV1) && result.fails(Consumers::All));
        assert_eq!(result.verdict(Consumers::All), Verdict::Refused);
        assert_eq!(
            super::super::verdict::consumers_say(&result),
            "OLM v0 refuses it, OLM v1 refuses it"
        );
    }
}
