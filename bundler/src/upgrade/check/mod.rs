//! CRD compatibility across an upgrade: will replacing one CRD with the next break the
//! clusters that run the first, and which OLM would refuse it?
//!
//! Pure code over typed `apiextensions.k8s.io/v1` CRDs:
//! - [`olm_v1`]: OLM v1's preflight (crdify's checks, with OLM v1's configuration);
//! - [`olm_v0`]: OLM v0's checks (stored versions, existing objects against the new schema);
//! - [`check_pair`]: both, plus what neither OLM refuses but breaks clusters anyway (a served
//!   version that silently disappears, a conversion webhook that disappears while the served
//!   versions still differ);
//! - [`graph`]: the edges of an upgrade graph and the CRDs on both ends of each;
//! - [`request`]: what one check judges (a catalog's edges, each published head to the new
//!   head), the same for `upgrade check` and `release`;
//! - [`markdown`]: a per-edge verdict table for `$GITHUB_STEP_SUMMARY`;
//! - [`verdict`]: each edge's verdict per consumer (OLM v0, OLM v1) as text, JSON and JUnit.
//!
//! Rule ids are `crd-upgrade/<check>`; every finding names the CRD, the version (or the pair
//! of served versions `vA -> vB`), the property path in crdify's notation (`^.spec.image`) and
//! who refuses it.
#![warn(missing_docs)]

pub mod graph;
pub mod kube_version;
pub mod markdown;
pub mod olm_v0;
pub mod olm_v1;
pub mod request;
pub mod schema;
pub mod verdict;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde::Serialize;
use serde_json::Value;

use olmpack_model::objects::Identity;
use olmpack_model::report::{Consumer, Finding, Severity};
pub use olmpack_model::upgrade::RefusedBy;

/// The installers whose verdict on an upgrade edge `upgrade check` gives, in order: the
/// report's one [`Consumer`] type, OLM v0 and OLM v1.
pub const UPGRADE_CONSUMERS: [Consumer; 2] = [Consumer::OlmV0, Consumer::OlmV1];

/// Whose refusals fail `upgrade check` (`--consumer`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Consumers {
    /// Both OLMs.
    All,
    /// OLM v0 only.
    OlmV0,
    /// OLM v1 only.
    OlmV1,
}

impl Consumers {
    /// Empty for all, else ` by OLM v0` or ` by OLM v1`: what a count of refused edges means.
    pub fn scope(self) -> &'static str {
        match self {
            Consumers::All => "",
            Consumers::OlmV0 => " by OLM v0",
            Consumers::OlmV1 => " by OLM v1",
        }
    }

    /// The consumers selected.
    pub fn list(self) -> &'static [Consumer] {
        match self {
            Consumers::All => &UPGRADE_CONSUMERS,
            Consumers::OlmV0 => &[Consumer::OlmV0],
            Consumers::OlmV1 => &[Consumer::OlmV1],
        }
    }
}

impl olmpack_model::choice::Choice for Consumers {
    const CHOICES: &'static [(&'static str, Self)] = &[
        ("all", Consumers::All),
        ("olm-v0", Consumers::OlmV0),
        ("olm-v1", Consumers::OlmV1),
    ];
}

/// One incompatibility between two CRDs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// `crd-upgrade/<check>`.
    pub rule: &'static str,
    /// The CRD's name (`webapps.apps.olmpack.dev`).
    pub crd: String,
    /// The version (`v1`), or the pair of served versions (`v1beta1 -> v1`).
    pub version: Option<String>,
    /// The property path (`^.spec.image`).
    pub path: Option<String>,
    /// What changed, in our words.
    pub message: String,
    /// Who refuses the change (nobody: it is information, or it breaks clusters although
    /// nobody refuses it).
    pub refused_by: RefusedBy,
    /// `error` unless said otherwise (a deprecated version that stops being served is
    /// `info`; what OLM v0 only warns about is `warning`).
    pub severity: Severity,
}

impl Problem {
    /// As a report finding on `object` (e.g. `a.v1 -> a.v2: CustomResourceDefinition/x`);
    /// the field is `version:path` when known.
    pub fn finding(&self, object: &str) -> Finding {
        let field = match (&self.version, &self.path) {
            (Some(v), Some(p)) => Some(format!("{v}:{p}")),
            (Some(v), None) => Some(v.clone()),
            (None, Some(p)) => Some(p.clone()),
            (None, None) => None,
        };
        let message = if self.severity == Severity::Info {
            self.message.clone()
        } else {
            format!("{}; {}", self.message, self.refused_by)
        };
        let mut finding = Finding::new(self.rule, self.severity, message).object(object);
        if let Some(field) = field {
            finding = finding.field(field);
        }
        finding
    }
}

/// Everything about one CRD on one edge of an upgrade graph.
#[derive(Clone, Debug)]
pub struct PairInput<'a> {
    /// The installed CRD, as OLM installs it (its CSV's conversion webhook applied).
    pub from: &'a CustomResourceDefinition,
    /// The next CRD, as OLM would apply it.
    pub to: &'a CustomResourceDefinition,
    /// The installed CRD's `status.storedVersions` as the cluster has it (at least its
    /// storage version).
    pub stored_versions: Vec<String>,
    /// Example objects of the installed release (CSV `alm-examples`, the plan's samples).
    pub examples: &'a [Value],
    /// A mutating admission webhook of the installed release covers these objects, so they
    /// are stored as it leaves them, not as written.
    pub mutated: bool,
}

/// Every problem of one CRD on one edge: OLM v1's, OLM v0's and ours, in a stable order.
pub fn check_pair(input: &PairInput<'_>) -> Vec<Problem> {
    let mut out = olm_v1::check(input.from, input.to, &input.stored_versions);
    out.extend(olm_v0::check(input));
    out.extend(served_version_removal(input.from, input.to));
    out.extend(conversion_webhook_missing(input.from, input.to));
    out.sort_by(|a, b| {
        (&a.version, &a.path, a.rule, &a.message).cmp(&(&b.version, &b.path, b.rule, &b.message))
    });
    out.dedup();
    out
}

/// The stored versions a cluster surely has for an installed CRD: its `status.storedVersions`
/// and its storage version (the apiserver adds that one as soon as the CRD is installed).
pub fn assumed_stored_versions(crd: &CustomResourceDefinition) -> Vec<String> {
    let mut out: Vec<String> = crd
        .status
        .as_ref()
        .and_then(|s| s.stored_versions.clone())
        .unwrap_or_default();
    if let Some(storage) = crd.spec.versions.iter().find(|v| v.storage)
        && !out.contains(&storage.name)
    {
        out.push(storage.name.clone());
    }
    out
}

fn crd_name(crd: &CustomResourceDefinition) -> String {
    crd.metadata.name.clone().unwrap_or_default()
}

/// A version served by `from` that `to` no longer serves: clients and stored manifests using
/// it fail. Fine (info) when `from` had deprecated it.
fn served_version_removal(
    from: &CustomResourceDefinition,
    to: &CustomResourceDefinition,
) -> Vec<Problem> {
    let mut out = Vec::new();
    for version in from.spec.versions.iter().filter(|v| v.served) {
        let still = to
            .spec
            .versions
            .iter()
            .any(|v| v.name == version.name && v.served);
        if still {
            continue;
        }
        let group = &from.spec.group;
        let (message, severity, refused_by) = if version.deprecated == Some(true) {
            (
                format!(
                    "{group}/{} is no longer served; the installed CRD deprecated it, so clients were warned",
                    version.name
                ),
                Severity::Info,
                RefusedBy::NOBODY,
            )
        } else {
            (
                format!(
                    "{group}/{} is no longer served although the installed CRD did not deprecate it: clients and manifests using it get 404 from kube-apiserver (deprecate it for at least one release first)",
                    version.name
                ),
                Severity::Error,
                RefusedBy::only(Consumer::KubeApiserver),
            )
        };
        out.push(Problem {
            rule: "crd-upgrade/served-version-removal",
            crd: crd_name(to),
            version: Some(version.name.clone()),
            path: None,
            message,
            refused_by,
            severity,
        });
    }
    out
}

/// `from` converted through a webhook; `to` does not, while its served versions still differ:
/// the apiserver then only rewrites `apiVersion`, and objects lose or garble fields.
fn conversion_webhook_missing(
    from: &CustomResourceDefinition,
    to: &CustomResourceDefinition,
) -> Vec<Problem> {
    if !olm_v1::has_webhook(from) || olm_v1::has_webhook(to) {
        return Vec::new();
    }
    let pairs = olm_v1::served_pairs(to);
    let Some((pair, (path, _, what))) = pairs.first() else {
        return Vec::new();
    };
    vec![Problem {
        rule: "crd-upgrade/conversion-webhook-missing",
        crd: crd_name(to),
        version: Some(pair.clone()),
        path: Some(path.clone()),
        message: format!(
            "the installed CRD converts through a webhook, the new one has spec.conversion.strategy None, but its served versions differ ({} differences, first: {what}): kube-apiserver will only rewrite apiVersion (declare a ConversionWebhook for this CRD in the CSV)",
            pairs.len()
        ),
        refused_by: RefusedBy::NOBODY,
        severity: Severity::Error,
    }]
}

/// Two CRD files compared as `crdify` compares them with OLM v1's configuration: the errors
/// are exactly what OLM v1 refuses (with the old file's `status.storedVersions`, usually
/// empty). What else would break a cluster is a warning: a served version that disappears, a
/// conversion webhook that disappears, and the old storage version missing from the new CRD
/// (on a cluster `status.storedVersions` holds at least it, so OLM v0, OLM v1 and
/// kube-apiserver refuse the change there unless the objects were migrated).
pub fn check_files(old: &CustomResourceDefinition, new: &CustomResourceDefinition) -> Vec<Problem> {
    let stored: Vec<String> = old
        .status
        .as_ref()
        .and_then(|s| s.stored_versions.clone())
        .unwrap_or_default();
    let mut out = olm_v1::check(old, new, &stored);
    let mut extra = served_version_removal(old, new);
    extra.extend(conversion_webhook_missing(old, new));
    for version in assumed_stored_versions(old) {
        if !stored.contains(&version) && !new.spec.versions.iter().any(|v| v.name == version) {
            extra.push(Problem {
                rule: "crd-upgrade/stored-version-removal",
                crd: crd_name(new),
                version: Some(version.clone()),
                path: None,
                message: format!("{version} is the old CRD's storage version and is gone from the new spec.versions; the file carries no status.storedVersions, but on a cluster it lists {version} unless every object was migrated and the list pruned, and then OLM v0, OLM v1 and kube-apiserver refuse the new CRD"),
                refused_by: RefusedBy::BOTH_OLMS,
                severity: Severity::Warning,
            });
        }
    }
    for p in &mut extra {
        if p.severity == Severity::Error {
            p.severity = Severity::Warning;
        }
    }
    out.extend(extra);
    out.sort_by(|a, b| {
        (&a.version, &a.path, a.rule, &a.message).cmp(&(&b.version, &b.path, b.rule, &b.message))
    });
    out
}

/// The one edge `olmpack upgrade check --crd OLD NEW` judges: from CRD file `old` to CRD
/// file `new` (each named as given), with [`check_files`]' findings, located at
/// `OLD -> NEW: CustomResourceDefinition/<name>`.
pub fn crd_files_result(
    (old, old_crd): (&str, &CustomResourceDefinition),
    (new, new_crd): (&str, &CustomResourceDefinition),
) -> graph::EdgeResult {
    let problems = check_files(old_crd, new_crd);
    let name = new_crd.metadata.name.clone().unwrap_or_default();
    let object = format!("{old} -> {new}: CustomResourceDefinition/{name}");
    let edge = graph::Edge {
        package: String::new(),
        from: old.to_owned(),
        to: new.to_owned(),
        channels: Default::default(),
        via: Default::default(),
    };
    graph::EdgeResult {
        edge,
        crds: vec![name],
        refused_by: problems
            .iter()
            .filter(|p| p.severity == Severity::Error)
            .map(|p| p.refused_by)
            .collect(),
        findings: problems.iter().map(|p| p.finding(&object)).collect(),
    }
}

/// Whether OLM v1 refuses the change (any error in [`check_files`]' result).
pub fn olm_v1_refuses(problems: &[Problem]) -> bool {
    problems
        .iter()
        .any(|p| p.severity == Severity::Error && p.refused_by.contains(Consumer::OlmV1))
}

/// A CRD file could not be read as one `apiextensions.k8s.io/v1` CRD.
#[derive(Debug, thiserror::Error)]
pub enum CrdFileError {
    /// The file cannot be read.
    #[error(transparent)]
    Read(olmpack_oci::input::InputError),
    /// The file is not YAML.
    #[error("{file}: {message}")]
    Yaml {
        /// The CRD file.
        file: String,
        /// The parser's complaint, in our words.
        message: String,
    },
    /// The file holds more or fewer than one YAML document.
    #[error("{file}: expected one CustomResourceDefinition, found {count} YAML documents")]
    Documents {
        /// The CRD file.
        file: String,
        /// How many documents it holds.
        count: usize,
    },
    /// The file's object is not an `apiextensions.k8s.io/v1` CRD.
    #[error("{file}: {found} is not an apiextensions.k8s.io/v1 CustomResourceDefinition")]
    NotACrd {
        /// The CRD file.
        file: String,
        /// Its `apiVersion` and `kind` as written.
        found: String,
    },
    /// A field of the CRD has the wrong shape, so the CRD does not decode.
    #[error("{file}: CustomResourceDefinition/{name}: field {path}: {message}")]
    Field {
        /// The CRD file.
        file: String,
        /// The CRD's name.
        name: String,
        /// Where the field is, e.g. `spec.versions[0].schema`.
        path: String,
        /// What is wrong with it.
        message: String,
    },
}

/// A CRD file olmpack refuses (exit 1): not one CRD, or a file it refuses to read; one it
/// cannot get at is exit 2.
impl crate::refusal::Refusal for CrdFileError {
    fn refuses_input(&self) -> bool {
        match self {
            CrdFileError::Read(read) => read.is_refusal(),
            CrdFileError::Yaml { .. }
            | CrdFileError::Documents { .. }
            | CrdFileError::NotACrd { .. }
            | CrdFileError::Field { .. } => true,
        }
    }
}

/// Reads CRD file `path` (within `limits`) and parses it as [`parse_crd_file`] does.
pub fn read_crd_file(
    path: &std::path::Path,
    limits: &olmpack_oci::input::Limits,
) -> Result<CustomResourceDefinition, CrdFileError> {
    let text = olmpack_oci::input::text(path, limits).map_err(CrdFileError::Read)?;
    parse_crd_file(&path.display().to_string(), &text)
}

/// Parses the text of a CRD file (`file` names it in errors): exactly one YAML document, an
/// `apiextensions.k8s.io/v1` `CustomResourceDefinition`. Read as Go's decoder reads it
/// (crdify's): fields Kubernetes does not know are ignored, and a repeated key keeps its last
/// value (lenient: YAML itself forbids repeated keys).
pub fn parse_crd_file(file: &str, text: &str) -> Result<CustomResourceDefinition, CrdFileError> {
    let docs = olmpack_model::yaml::from_multi_str_last_key_wins(text).map_err(|e| {
        CrdFileError::Yaml {
            file: file.to_owned(),
            message: e.to_string(),
        }
    })?;
    let [doc] = docs.as_slice() else {
        return Err(CrdFileError::Documents {
            file: file.to_owned(),
            count: docs.len(),
        });
    };
    let identity = Identity::of(doc);
    if identity.api_version != "apiextensions.k8s.io/v1"
        || identity.kind != "CustomResourceDefinition"
    {
        return Err(CrdFileError::NotACrd {
            file: file.to_owned(),
            found: crate::bundle::cr_schema::what_document_is(doc),
        });
    }
    serde_path_to_error::deserialize(doc).map_err(|e| CrdFileError::Field {
        file: file.to_owned(),
        name: identity.name.to_owned(),
        path: e.path().to_string(),
        message: e.inner().to_string(),
    })
}
