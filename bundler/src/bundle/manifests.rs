//! The generator's input: a directory of Kubernetes YAML (plain files, `kustomize build` or
//! `helm template` output), read and sorted into what a bundle needs.
//!
//! Contract:
//! - Every `*.yaml`, `*.yml` and `*.json` file under the directory is read, recursively, in
//!   sorted path order; multi-document streams are fine. The input may also be one file (a
//!   kubebuilder project's `dist/install.yaml`).
//! - Every problem is collected (not just the first) as a [`Finding`] naming the file, the
//!   object and the field; [`read_dir`] fails when there is any.
//! - Objects OLM cannot ship in a registry+v1 bundle are errors, except `Namespace`, which
//!   kustomize output nearly always has and OLM creates itself: it is dropped with a warning.
//! - A ClusterServiceVersion (operator-sdk's bundle or `config/manifests` output) is imported
//!   by [`crate::bundle::operator_sdk`]; Helm hooks and a chart's self-generated webhook
//!   certificate are handled by [`crate::bundle::helm`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::inputs::{Inputs, Sourced};
use crate::bundle::certmanager;
use crate::json::str_at;
use olmpack_model::plan::{ErrorOrDrop, Plan};
use olmpack_model::report::Finding;
use olmpack_oci::input::Limits;

/// The plan's choices about input objects OLM has no counterpart for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImportChoices {
    /// cert-manager Certificates whose Secret a Deployment mounts
    /// ([`Plan::cert_manager_certificates`]).
    pub cert_manager: ErrorOrDrop,
    /// Helm install and upgrade hooks ([`Plan::helm_hooks`]).
    pub helm_hooks: ErrorOrDrop,
}

impl ImportChoices {
    /// The choices `plan` makes.
    pub fn of(plan: &Plan) -> Self {
        Self {
            cert_manager: plan.cert_manager_certificates,
            helm_hooks: plan.helm_hooks,
        }
    }
}

/// Kinds OLM can ship as plain bundle objects (besides the CSV and CRDs), as opm's
/// supported-resources list has them.
pub const SUPPORTED_EXTRA_KINDS: [&str; 22] = [
    "ClusterRole",
    "ClusterRoleBinding",
    "ConfigMap",
    "ConsoleCLIDownload",
    "ConsoleLink",
    "ConsolePlugin",
    "ConsoleQuickStart",
    "ConsoleYAMLSample",
    "NetworkPolicy",
    "PodDisruptionBudget",
    "PodMonitor",
    "PriorityClass",
    "PrometheusRule",
    "Role",
    "RoleBinding",
    "Secret",
    "Service",
    "ServiceAccount",
    "ServiceMonitor",
    "VerticalPodAutoscaler",
    "CustomResourceDefinition",
    "ClusterServiceVersion",
];

/// Reads every manifest under `dir`, or the file `dir` names (symlinks may lead anywhere
/// inside `root`, see [`olmpack_oci::input::read_tree_within`]); `Err` holds every problem found.
pub fn read_dir(
    dir: &Path,
    root: Option<&Path>,
    choices: ImportChoices,
    limits: &Limits,
) -> Result<Inputs, Vec<Finding>> {
    if dir.is_file() {
        return read_file(dir, choices, limits);
    }
    let tree = match olmpack_oci::input::read_tree_within(dir, root, limits) {
        Ok(tree) if tree.files.is_empty() && tree.refused.is_empty() => {
            return Err(vec![
                Finding::error("input/no-manifests", "the manifests directory is empty")
                    .file(dir.display().to_string())
                    .hint("point the release's `manifests` at the output of `kustomize build`, `helm template` or your operator's manifest command"),
            ]);
        }
        Ok(tree) => tree,
        Err(err) => {
            return Err(vec![
                Finding::error("input/unreadable", err.to_string())
                    .file(dir.display().to_string())
                    .hint("point the release's `manifests` at a directory of Kubernetes YAML"),
            ]);
        }
    };
    let mut problems: Vec<Finding> = tree
        .refused
        .iter()
        .map(|r| Finding::error("input/refused", r.message()).file(dir.join(&r.file)))
        .collect();
    let files = tree.files.into_iter().filter(|(relative, _)| {
        matches!(
            relative.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml" | "json")
        )
    });
    let (objects, lenient) = parse_files(files.map(|(r, c)| (dir.join(r), c)), &mut problems);
    let mut inputs = classify(objects, choices, &mut problems);
    crate::bundle::operator_sdk::read_bundle_metadata(dir, root, &mut inputs, limits);
    crate::bundle::scorecard::read_beside_bundle(dir, root, &mut inputs, limits);
    inputs.notes.splice(0..0, lenient);
    if problems.is_empty() {
        Ok(inputs)
    } else {
        Err(problems)
    }
}

/// [`read_dir`] for a release whose `manifests` is one file (kubebuilder's
/// `dist/install.yaml`): whatever its extension, it is read as YAML.
fn read_file(file: &Path, choices: ImportChoices, limits: &Limits) -> Result<Inputs, Vec<Finding>> {
    let contents = olmpack_oci::input::read(file, limits).map_err(|err| {
        vec![Finding::error("input/unreadable", err.to_string()).file(file.display().to_string())]
    })?;
    let mut problems = Vec::new();
    let (objects, lenient) = parse_files([(file.to_owned(), contents)], &mut problems);
    let mut inputs = classify(objects, choices, &mut problems);
    inputs.notes.splice(0..0, lenient);
    if problems.is_empty() {
        Ok(inputs)
    } else {
        Err(problems)
    }
}

/// Every document of `files` (path → contents) as an object, the way Go's decoder reads it;
/// unreadable files are problems, lenient readings are returned as warnings.
fn parse_files(
    files: impl IntoIterator<Item = (PathBuf, Vec<u8>)>,
    problems: &mut Vec<Finding>,
) -> (Vec<Sourced>, Vec<Finding>) {
    let mut objects = Vec::new();
    let mut lenient = Vec::new();
    for (file, contents) in files {
        let text = match olmpack_oci::input::decode(&file, contents) {
            Ok(text) => text,
            Err(_) => {
                problems.push(Finding::error("input/not-utf8", "not UTF-8 text").file(file));
                continue;
            }
        };
        match olmpack_model::yaml::from_multi_str_go(&text) {
            Ok((docs, notes)) => {
                lenient.extend(notes.into_iter().map(|note| lenient_finding(&file, note)));
                objects.extend(docs.into_iter().enumerate().map(|(index, value)| Sourced {
                    file: file.clone(),
                    index,
                    value,
                }))
            }
            Err(err) => {
                problems.push(Finding::error("input/invalid-yaml", err.to_string()).file(file))
            }
        }
    }
    (objects, lenient)
}

/// A warning for input read the lenient way Go reads it.
fn lenient_finding(file: &Path, note: olmpack_model::yaml::Leniency) -> Finding {
    Finding::warning(
        "input/lenient-yaml",
        format!(
            "document {}, line {}: {}",
            note.document, note.line, note.message
        ),
    )
    .file(file.to_path_buf())
}

/// Sorts objects into roles; pure. `choices` decide about cert-manager Certificates that are
/// not webhook serving certificates (see [`crate::bundle::certmanager`]) and about Helm
/// install and upgrade hooks (see [`crate::bundle::helm`]); a
/// ClusterServiceVersion is folded in by [`crate::bundle::operator_sdk::import`].
pub fn classify(
    objects: Vec<Sourced>,
    choices: ImportChoices,
    problems: &mut Vec<Finding>,
) -> Inputs {
    let mut sorter = Sorter {
        crd_kinds: crd_kinds(&objects),
        certificates: certmanager::Wiring::of(&objects),
        choices,
        inputs: Inputs::default(),
        csvs: Vec::new(),
        unmount: BTreeSet::new(),
        seen: BTreeMap::new(),
    };
    for object in objects {
        if let Some(object) = sorter.identified(object, problems) {
            sorter.place(object, problems);
        }
    }
    let Sorter {
        mut inputs,
        csvs,
        unmount,
        ..
    } = sorter;
    crate::bundle::operator_sdk::import(&mut inputs, csvs, problems);
    crate::bundle::helm::drop_webhook_cert_secrets(&mut inputs);
    unmount_secrets(&mut inputs, &unmount);
    inputs
}

/// `(group, kind)` of every CRD's resources, so custom resources of those kinds are
/// recognised in any order.
fn crd_kinds(objects: &[Sourced]) -> BTreeSet<(String, String)> {
    objects
        .iter()
        .filter(|o| o.kind() == "CustomResourceDefinition")
        .map(|o| {
            (
                str_at(&o.value, "/spec/group").to_owned(),
                str_at(&o.value, "/spec/names/kind").to_owned(),
            )
        })
        .collect()
}

/// The state of one [`classify`] run.
struct Sorter {
    crd_kinds: BTreeSet<(String, String)>,
    certificates: certmanager::Wiring,
    choices: ImportChoices,
    inputs: Inputs,
    csvs: Vec<Sourced>,
    /// Secrets of dropped Certificates, to unmount from the Deployments.
    unmount: BTreeSet<String>,
    /// `(group, kind, name)` → where it was first defined.
    seen: BTreeMap<(String, String, String), String>,
}

impl Sorter {
    /// The object, when it is a mapping with apiVersion, kind and name, defined once.
    fn identified(&mut self, object: Sourced, problems: &mut Vec<Finding>) -> Option<Sourced> {
        if !object.value.is_object() {
            problems.push(
                Finding::error(
                    "input/not-an-object",
                    "document is not a Kubernetes object (a mapping)",
                )
                .file(object.location()),
            );
            return None;
        }
        let missing = [
            ("apiVersion", object.api_version()),
            ("kind", object.kind()),
            ("metadata.name", object.name()),
        ]
        .into_iter()
        .find(|(_, value)| value.is_empty());
        if let Some((field, _)) = missing {
            problems.push(object.finding(
                Finding::error("input/missing-field", format!("{field} is required")).field(field),
            ));
            return None;
        }
        let identity = (
            group_of(&object).to_owned(),
            object.kind().to_owned(),
            object.name().to_owned(),
        );
        if let Some(first) = self.seen.insert(identity, object.location()) {
            problems.push(
                object.finding(
                    Finding::error(
                        "input/duplicate-object",
                        format!("{} is also defined in {first}", object.display()),
                    )
                    .field("metadata.name"),
                ),
            );
            return None;
        }
        Some(object)
    }

    /// Puts an identified object where its role says.
    fn place(&mut self, object: Sourced, problems: &mut Vec<Finding>) {
        if let Some(finding) = crate::bundle::helm::hook(&object, self.choices.helm_hooks) {
            file_finding(finding, problems, &mut self.inputs.notes);
            return;
        }
        let group = group_of(&object).to_owned();
        let inputs = &mut self.inputs;
        match object.kind() {
            "CustomResourceDefinition" => inputs.crds.push(object),
            "Deployment" if group == "apps" => inputs.deployments.push(object),
            "ServiceAccount" => inputs.service_accounts.push(object),
            "Role" => inputs.roles.push(object),
            "ClusterRole" => inputs.cluster_roles.push(object),
            "RoleBinding" => inputs.role_bindings.push(object),
            "ClusterRoleBinding" => inputs.cluster_role_bindings.push(object),
            "Service" => inputs.services.push(object),
            "ValidatingWebhookConfiguration" => inputs.validating_webhooks.push(object),
            "MutatingWebhookConfiguration" => inputs.mutating_webhooks.push(object),
            "ClusterServiceVersion" => self.csvs.push(object),
            "Namespace" => inputs.notes.push(object.finding(Finding::warning(
                "input/namespace-dropped",
                "Namespace objects are not shipped in bundles; OLM installs into the namespace the user picks",
            ))),
            "Configuration" if group == crate::bundle::scorecard::GROUP => {
                crate::bundle::scorecard::keep(&mut inputs.scorecard, object, &mut inputs.notes)
            }
            _ if group == certmanager::GROUP => {
                let (finding, secret) = self.certificates.decide(&object, self.choices.cert_manager);
                self.unmount.extend(secret);
                file_finding(finding, problems, &mut inputs.notes);
            }
            kind if self.crd_kinds.contains(&(group.clone(), kind.to_owned())) => {
                inputs.custom_resources.push(object)
            }
            kind if SUPPORTED_EXTRA_KINDS.contains(&kind) => inputs.others.push(object),
            kind => problems.push(object.finding(
                Finding::error(
                    "input/unsupported-kind",
                    format!(
                        "kind {kind} ({}) cannot be shipped in a registry+v1 bundle",
                        object.api_version()
                    ),
                )
                .field("kind")
                .hint(unsupported_kind_hint(kind)),
            )),
        }
    }
}

/// An error stops the import (`problems`); anything else is reported with the bundle (`notes`).
fn file_finding(finding: Finding, problems: &mut Vec<Finding>, notes: &mut Vec<Finding>) {
    if finding.severity == olmpack_model::report::Severity::Error {
        problems.push(finding);
    } else {
        notes.push(finding);
    }
}

/// What to do with an object of a kind OLM does not install from a bundle.
fn unsupported_kind_hint(kind: &str) -> &'static str {
    if kind == "APIService" {
        // Kueue's chart registers its visibility API this way.
        return "OLM creates an aggregated API's APIService itself, with a serving certificate it mounts into the deployment, from the CSV's spec.apiservicedefinitions.owned, which olmpack does not write from an APIService; leave the APIService out (with the RoleBinding to extension-apiserver-authentication-reader in kube-system, which OLM creates for such an API too), or serve the API from a CRD";
    }
    "OLM installs only the CSV's deployments, RBAC, CRDs and a fixed list of kinds (Service, ConfigMap, Secret, PrometheusRule, ServiceMonitor, ...); remove it or create it from the operator"
}

/// The API group of an object's apiVersion (`""` for the core group).
fn group_of(object: &Sourced) -> &str {
    object.api_version().rsplit_once('/').map_or("", |(g, _)| g)
}

/// Removes the volumes of dropped Certificates' Secrets from the Deployments.
fn unmount_secrets(inputs: &mut Inputs, unmount: &BTreeSet<String>) {
    for secret in unmount {
        for deployment in &mut inputs.deployments {
            inputs
                .notes
                .extend(certmanager::unmount(deployment, secret));
        }
        for object in &inputs.others {
            inputs
                .notes
                .extend(certmanager::still_referenced(object, secret));
        }
    }
}
