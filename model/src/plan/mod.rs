//! The release plan (`olmpack.yaml`): everything olmpack needs to produce an operator's bundles
//! and catalog, in one declarative file.
//!
//! Contract:
//! - Unknown keys are errors (a typo must not silently drop a setting), reported with the
//!   file and the field path (`releases[2].chanels`).
//! - Paths inside the plan are relative to the plan file's directory.
//! - [`Plan::releases`] is kept in file order; [`LoadedPlan::sorted_releases`] gives semver
//!   order, which is what upgrade edges are computed from.
//! - The JSON Schema ([`schema::json_schema`]) is generated from these types, so editors
//!   check exactly what olmpack accepts.
//!
//! Pure: [`parse`] takes the plan's text and the path it came from. Reading the file, and
//! resolving the files the plan names inside its directory, is the `olmpack` crate's job
//! (`olmpack::plan::load`, `olmpack::plan::PlanInputs`).

pub mod schema;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::names::is_dns1123_label;

/// The file name olmpack looks for when `--plan` is not given.
pub const DEFAULT_PLAN_FILE: &str = "olmpack.yaml";

/// What stands for a release's version in an image template (`bundleImage`, `operatorImage`).
pub const VERSION_PLACEHOLDER: &str = "{version}";

/// The image `template` names for the release `version`: every [`VERSION_PLACEHOLDER`]
/// replaced. The one place a template is filled in.
pub fn image_for_release(template: &str, version: &str) -> String {
    template.replace(VERSION_PLACEHOLDER, version)
}

/// A release plan's text that olmpack refuses: not YAML, not a plan, or a plan that breaks a
/// rule the types cannot express. Always invalid input (exit 1); failing to read the file is
/// the loader's error, in the `olmpack` crate.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The text is not YAML.
    #[error("{path}: {message}")]
    Parse {
        /// The plan file the text came from.
        path: PathBuf,
        /// What the YAML reader refused, with line and column.
        message: String,
    },
    /// The YAML is not a valid plan.
    #[error("{path}: {field}: {message}")]
    Invalid {
        /// The plan file the text came from.
        path: PathBuf,
        /// Where in the plan, e.g. `releases[2].version` or `(top level)`.
        field: String,
        /// What is wrong with it, in our words.
        message: String,
    },
    /// The YAML is a plan, but several of its values are refused: every one, at once.
    #[error("{}", several(path, problems))]
    Several {
        /// The plan file the text came from.
        path: PathBuf,
        /// `(field, message)` of each problem, in the order the plan's fields come.
        problems: Vec<(String, String)>,
    },
}

/// One `path: field: message` line per problem.
fn several(path: &Path, problems: &[(String, String)]) -> String {
    let lines: Vec<String> = problems
        .iter()
        .map(|(field, message)| format!("{}: {field}: {message}", path.display()))
        .collect();
    lines.join("\n")
}

/// An operator's release plan.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(title = "olmpack release plan")]
pub struct Plan {
    /// The OLM package name (a DNS-1123 label), e.g. `my-operator`.
    pub package: String,
    /// The channel a subscription without a channel follows. Must be one of the channels that
    /// some release is published to.
    pub default_channel: String,
    /// Channels every release is published to unless the release says otherwise.
    #[serde(default)]
    pub channels: Vec<String>,
    /// `createdAt` for every release that sets none (RFC 3339). Without it, and without
    /// `SOURCE_DATE_EPOCH`, the CSV has no `createdAt`: olmpack never writes the current time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// The bundle image of each release, with `{version}` standing for the release version,
    /// e.g. `quay.io/acme/my-operator-bundle:v{version}`. The catalog names bundles by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle_image: Option<String>,
    /// The operator image of each release, with `{version}`, e.g.
    /// `quay.io/acme/my-operator:v{version}`: what the manifests' Deployments run.
    /// `olmpack release` builds it from the operator binaries and pins the CSVs to its digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator_image: Option<String>,
    /// The catalog image `olmpack release` builds and pushes, e.g.
    /// `quay.io/acme/my-operator-catalog:latest`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog_image: Option<String>,
    /// How `olmpack release` builds images.
    #[serde(default, skip_serializing_if = "ReleaseImages::is_empty")]
    pub images: ReleaseImages,
    /// ClusterServiceVersion metadata shared by every release.
    pub csv: CsvMetadata,
    /// Labels for `metadata/annotations.yaml` and `bundle.Dockerfile` on top of the standard
    /// ones, e.g. `com.redhat.openshift.versions`.
    #[serde(default)]
    pub bundle_labels: BTreeMap<String, String>,
    /// Sample custom resources (YAML files, relative to the plan) for `alm-examples`, used by
    /// every release whose CRDs own their kind.
    #[serde(default)]
    pub samples: Vec<PathBuf>,
    /// How `replaces` / `skips` are computed when a release does not set them.
    #[serde(default)]
    pub upgrades: UpgradePolicy,
    /// What happens to a cert-manager Certificate in the manifests that is not a webhook
    /// serving certificate (OLM replaces those itself) and whose Secret a Deployment mounts,
    /// e.g. kubebuilder's metrics certificate. OLM does not run cert-manager, so the Secret
    /// would never exist and the pod could not start. `error` (default): stop with a hint.
    /// `drop`: leave the Certificate out with a warning and remove from the Deployments the
    /// Secret's volume, its volumeMounts and the container args pointing into the mount
    /// (e.g. `--metrics-cert-path`; controller-runtime then serves metrics with a
    /// self-signed certificate).
    #[serde(default, skip_serializing_if = "ErrorOrDrop::is_default")]
    pub cert_manager_certificates: ErrorOrDrop,
    /// What happens to Helm install and upgrade hooks (`helm.sh/hook: pre-install`,
    /// `post-upgrade`, ...) in `helm template` output. OLM never runs Helm hooks, so their work
    /// (a migration Job, say) would never happen. `error` (default): stop, naming each hook
    /// object, with a hint. `drop`: leave them out with a warning each (the operator does that
    /// work itself, or it is not needed under OLM). Test, delete and rollback hooks are always
    /// left out with a warning.
    #[serde(default, skip_serializing_if = "ErrorOrDrop::is_default")]
    pub helm_hooks: ErrorOrDrop,
    /// Where `olmpack generate` writes, relative to the plan (`--bundles` and `--catalog`
    /// win). Default: `bundle` and `catalog`. An operator-sdk project keeps its own `bundle/`
    /// (the output of `make bundle`), so `olmpack plan init` writes other directories there.
    #[serde(default, skip_serializing_if = "Output::is_default")]
    pub output: Output,
    /// Every release, oldest first or in any order.
    pub releases: Vec<Release>,
}

/// The plan's output directories ([`Plan::output`]).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Output {
    /// The bundles' directory (`<version>/` for each release), relative to the plan.
    #[serde(default = "Output::default_bundles")]
    pub bundles: PathBuf,
    /// The catalog's directory, relative to the plan.
    #[serde(default = "Output::default_catalog")]
    pub catalog: PathBuf,
}

impl Default for Output {
    fn default() -> Self {
        Self {
            bundles: Self::default_bundles(),
            catalog: Self::default_catalog(),
        }
    }
}

impl Output {
    fn default_bundles() -> PathBuf {
        PathBuf::from("bundle")
    }

    fn default_catalog() -> PathBuf {
        PathBuf::from("catalog")
    }

    /// True for `bundle` and `catalog`.
    pub fn is_default(&self) -> bool {
        self == &Self::default()
    }
}

/// Image build settings of `olmpack release`.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReleaseImages {
    /// The operator binary of each platform (`os/arch[/variant]` → path relative to the plan),
    /// e.g. `linux/amd64: target/x86_64-unknown-linux-musl/release/my-operator`. The newest
    /// release's operator image is built from them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub operator_binaries: BTreeMap<String, PathBuf>,
    /// The operator image's base (`repository@sha256:…`); none: only the binary and a non-root
    /// user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator_base: Option<String>,
    /// The catalog image's base, e.g. the opm image by digest; none: the catalog alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog_base: Option<String>,
}

impl ReleaseImages {
    /// True when nothing is set.
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }
}

/// CSV fields shared by all releases.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CsvMetadata {
    /// Human-readable operator name (`spec.displayName`), e.g. `My Operator`.
    pub display_name: String,
    /// Long description (Markdown), `spec.description`.
    pub description: String,
    /// One-line summary, the `description` annotation OperatorHub shows in tiles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short_description: Option<String>,
    /// The operator's logo (`spec.icon`), read from a file next to the plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon: Option<Icon>,
    /// Search words for consoles and OperatorHub (`spec.keywords`).
    #[serde(default)]
    pub keywords: Vec<String>,
    /// People to contact about the operator (`spec.maintainers`).
    #[serde(default)]
    pub maintainers: Vec<Maintainer>,
    /// Who publishes the operator (`spec.provider`).
    pub provider: Provider,
    /// Named URLs shown with the operator, e.g. documentation (`spec.links`).
    #[serde(default)]
    pub links: Vec<Link>,
    /// e.g. `alpha`, `beta`, `stable`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maturity: Option<String>,
    /// One of OperatorHub's capability levels, e.g. `Seamless Upgrades`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<String>,
    /// OperatorHub categories, e.g. `Database` (the `categories` annotation).
    #[serde(default)]
    pub categories: Vec<String>,
    /// Oldest Kubernetes version the operator supports (semver, e.g. `1.28.0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_kube_version: Option<String>,
    /// Install modes the operator supports. Default: AllNamespaces only. Forced to
    /// AllNamespaces only when a CRD uses a conversion webhook (OLM requires it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install_modes: Option<Vec<InstallModeType>>,
    /// Extra CSV annotations (`repository`, `support`, `containerImage`, feature flags...).
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
    /// CSV labels, e.g. `operatorframework.io/arch.amd64: supported`.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Display metadata for owned CRDs, keyed by CRD name (`plural.group`).
    #[serde(default)]
    pub crds: BTreeMap<String, CrdDisplay>,
}

/// The operator's logo: a file whose bytes the CSV embeds.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Icon {
    /// Image file relative to the plan; its bytes are embedded as base64.
    pub path: PathBuf,
    /// `image/svg+xml`, `image/png`, `image/jpeg` or `image/gif`.
    pub mediatype: String,
}

/// A person to contact about the operator.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Maintainer {
    /// The person's name.
    pub name: String,
    /// The person's e-mail address.
    pub email: String,
}

/// Who publishes the operator.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Provider {
    /// The publisher's name, e.g. a company.
    pub name: String,
    /// The publisher's web site.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// A named URL shown with the operator.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Link {
    /// What the link points to, e.g. `Documentation`.
    pub name: String,
    /// Where it points.
    pub url: String,
}

/// OLM install modes.
#[derive(
    Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq, PartialOrd, Ord,
)]
pub enum InstallModeType {
    /// The operator watches its own namespace only.
    OwnNamespace,
    /// The operator watches one namespace, not necessarily its own.
    SingleNamespace,
    /// The operator watches a chosen set of namespaces.
    MultiNamespace,
    /// The operator watches every namespace.
    AllNamespaces,
}

impl InstallModeType {
    /// Every install mode, in the order OLM lists them.
    pub const ALL: [InstallModeType; 4] = [
        InstallModeType::OwnNamespace,
        InstallModeType::SingleNamespace,
        InstallModeType::MultiNamespace,
        InstallModeType::AllNamespaces,
    ];

    /// The name OLM uses in `spec.installModes[].type`.
    pub fn as_str(self) -> &'static str {
        match self {
            InstallModeType::OwnNamespace => "OwnNamespace",
            InstallModeType::SingleNamespace => "SingleNamespace",
            InstallModeType::MultiNamespace => "MultiNamespace",
            InstallModeType::AllNamespaces => "AllNamespaces",
        }
    }
}

impl std::fmt::Display for InstallModeType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl crate::choice::Choice for InstallModeType {
    const CHOICES: &'static [(&'static str, Self)] = &[
        ("AllNamespaces", InstallModeType::AllNamespaces),
        ("OwnNamespace", InstallModeType::OwnNamespace),
        ("SingleNamespace", InstallModeType::SingleNamespace),
        ("MultiNamespace", InstallModeType::MultiNamespace),
    ];
}

/// How an owned CRD is shown in consoles.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CrdDisplay {
    /// Name shown for the custom resource kind; default: the CRD's kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// What the custom resource is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Kubernetes kinds the operator creates for this CRD (`resources` in the CSV).
    #[serde(default)]
    pub resources: Vec<CrdResource>,
    /// Descriptors for every version; a version listed in `versions` replaces these.
    #[serde(default)]
    pub spec_descriptors: Vec<Descriptor>,
    /// Status descriptors for every version; a version listed in `versions` replaces these.
    #[serde(default)]
    pub status_descriptors: Vec<Descriptor>,
    /// Per-version overrides of the descriptors.
    #[serde(default)]
    pub versions: BTreeMap<String, VersionDescriptors>,
}

/// A Kubernetes kind the operator creates for a custom resource, e.g. a Deployment.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CrdResource {
    /// The kind, e.g. `Deployment`.
    pub kind: String,
    /// Its API version, e.g. `v1`.
    pub version: String,
    /// The name of the object, when it is always the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// Descriptors for one version of a CRD.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VersionDescriptors {
    /// The version's spec descriptors.
    #[serde(default)]
    pub spec_descriptors: Vec<Descriptor>,
    /// The version's status descriptors.
    #[serde(default)]
    pub status_descriptors: Vec<Descriptor>,
}

/// A spec or status descriptor (a field shown in consoles).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Descriptor {
    /// The field's path under `spec` or `status`, e.g. `replicas`.
    pub path: String,
    /// The field's label in consoles.
    pub display_name: String,
    /// Help text shown with the field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(
        default,
        rename = "x-descriptors",
        skip_serializing_if = "Vec::is_empty"
    )]
    /// How consoles show or edit the field, e.g. `urn:alm:descriptor:com.tectonic.ui:podCount`.
    pub x_descriptors: Vec<String>,
}

/// How default upgrade edges are computed.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpgradePolicy {
    /// `replaces-chain` (default): each release replaces the newest older release that is
    /// not `broken`, and skips the broken ones in between. `none`: only explicit edges.
    #[serde(default)]
    pub policy: EdgePolicy,
}

/// Which default edges a plan computes (see [`UpgradePolicy::policy`]).
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum EdgePolicy {
    /// Each release replaces the newest older release that is not broken.
    #[default]
    ReplacesChain,
    /// Only the edges releases set explicitly.
    None,
}

/// What happens to an input object OLM has no counterpart for: the plan's
/// [`Plan::cert_manager_certificates`] and [`Plan::helm_hooks`].
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorOrDrop {
    /// Stop with an error naming each such object and the plan field that chooses.
    #[default]
    Error,
    /// Leave each such object out, with a warning naming it (and what else went with it).
    Drop,
}

impl ErrorOrDrop {
    /// True for the default, `error`.
    pub fn is_default(&self) -> bool {
        *self == Self::Error
    }
}

/// One release: a bundle.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Release {
    /// Semantic version of the release, without a leading `v`.
    pub version: String,
    /// Directory of Kubernetes YAML (plain, kustomize or helm output), or one such file (a
    /// kubebuilder project's `dist/install.yaml`), relative to the plan.
    pub manifests: PathBuf,
    /// Channels this release is published to (default: the plan's `channels`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channels: Option<Vec<String>>,
    /// Explicit `spec.replaces` (a bundle name, e.g. `my-operator.v1.2.3`); `""` for none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<String>,
    /// Explicit `spec.skips` (bundle names); added to computed skips.
    #[serde(default)]
    pub skips: Vec<String>,
    /// The `olm.skipRange` annotation, e.g. `>=1.0.0 <1.0.3`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip_range: Option<String>,
    /// A broken release: later releases skip it and nothing replaces it.
    #[serde(default)]
    pub broken: bool,
    /// Marked deprecated in the catalog.
    #[serde(default)]
    pub deprecated: bool,
    /// `createdAt` for this release (RFC 3339), overriding the plan's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// More sample custom resources for this release only.
    #[serde(default)]
    pub samples: Vec<PathBuf>,
    /// Entries for `metadata/properties.yaml` (`{type, value}`).
    #[serde(default)]
    pub properties: Vec<serde_json::Value>,
    /// Entries for `metadata/dependencies.yaml` (`{type, value}`).
    #[serde(default)]
    pub dependencies: Vec<serde_json::Value>,
}

/// A plan with the location it was read from.
#[derive(Clone, Debug, PartialEq)]
pub struct LoadedPlan {
    /// The file the plan was read from; relative paths in the plan start at its directory.
    pub path: PathBuf,
    /// The plan as read and checked.
    pub plan: Plan,
}

impl LoadedPlan {
    /// The directory that relative paths in the plan are resolved against.
    pub fn base_dir(&self) -> &Path {
        match self.path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        }
    }

    /// Resolves a path from the plan.
    pub fn resolve(&self, path: &Path) -> PathBuf {
        self.base_dir().join(path)
    }

    /// Where `olmpack generate` writes the bundles ([`Plan::output`]), resolved.
    pub fn bundles_dir(&self) -> PathBuf {
        self.resolve(&self.plan.output.bundles)
    }

    /// Where `olmpack generate` writes the catalog ([`Plan::output`]), resolved.
    pub fn catalog_dir(&self) -> PathBuf {
        self.resolve(&self.plan.output.catalog)
    }

    /// Releases with parsed versions, oldest first.
    pub fn sorted_releases(&self) -> Vec<(semver::Version, &Release)> {
        let mut releases: Vec<_> = self
            .plan
            .releases
            .iter()
            .filter_map(|r| Some((semver::Version::parse(&r.version).ok()?, r)))
            .collect();
        releases.sort_by(|a, b| a.0.cmp(&b.0));
        releases
    }

    /// The bundle (CSV) name of a version: `<package>.v<version>`.
    pub fn bundle_name(&self, version: &str) -> String {
        format!("{}.v{version}", self.plan.package)
    }

    /// The channels a release is published to.
    pub fn channels_of<'a>(&'a self, release: &'a Release) -> &'a [String] {
        release.channels.as_deref().unwrap_or(&self.plan.channels)
    }

    /// The release with exactly this version string, if the plan has one.
    pub fn release(&self, version: &str) -> Option<&Release> {
        self.plan.releases.iter().find(|r| r.version == version)
    }
}

/// A deserializer's complaint in our words: no Rust type names.
fn describe_type_error(message: &str) -> String {
    let mut out = message.to_owned();
    for (theirs, ours) in [
        ("expected struct ", "expected a mapping ("),
        ("expected enum ", "expected one of the allowed values ("),
    ] {
        while let Some(i) = out.find(theirs) {
            let rest = &out[i + theirs.len()..];
            let end = rest
                .find(|c: char| !c.is_alphanumeric() && c != '_')
                .unwrap_or(rest.len());
            let name = lower_words(&rest[..end]);
            out = format!("{}{ours}{name}){}", &out[..i], &rest[end..]);
        }
    }
    let out = out.replace("invalid type: ", "wrong type: ");
    plain_kinds(&out)
}

/// serde's names of a value's kind in our words: `floating point `777.0`` and `integer `8``
/// become "a number" (YAML reads `0777` as a number; the value shown would not be what was
/// written), `sequence` "a list", `map` "a mapping"; a string field gets a hint to quote.
fn plain_kinds(message: &str) -> String {
    let mut out = message.to_owned();
    for kind in ["floating point `", "integer `"] {
        while let Some(i) = out.find(kind) {
            let rest = &out[i + kind.len()..];
            let end = rest.find('`').map_or(rest.len(), |e| e + 1);
            out = format!("{}a number{}", &out[..i], &rest[end..]);
        }
    }
    let out = out
        .replace("wrong type: sequence,", "wrong type: a list,")
        .replace("wrong type: map,", "wrong type: a mapping,");
    if out.contains("wrong type: a number, expected a string") {
        return format!("{out} (quote the value to keep it as text)");
    }
    out
}

/// The kind of a YAML value, for messages.
fn kind_of(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "empty",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "a mapping",
    }
}

/// `CsvMetadata` → `csv metadata`.
fn lower_words(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            out.push(' ');
        }
        out.extend(c.to_lowercase());
    }
    out
}

/// Parses plan text that came from `path` (used in messages and to resolve relative paths).
pub fn parse(path: &Path, text: &str) -> Result<LoadedPlan, PlanError> {
    let value: serde_json::Value = crate::yaml::from_str(text).map_err(|e| PlanError::Parse {
        path: path.to_path_buf(),
        message: e.to_string(),
    })?;
    if !value.is_object() {
        return Err(PlanError::Invalid {
            path: path.to_path_buf(),
            field: "(top level)".to_owned(),
            message: format!(
                "wrong type: {}, expected a mapping (package:, releases:, …)",
                kind_of(&value)
            ),
        });
    }
    let plan: Plan = serde_path_to_error::deserialize(value).map_err(|e| {
        let field = e.path().to_string();
        PlanError::Invalid {
            path: path.to_path_buf(),
            field: if field == "." {
                "(top level)".to_owned()
            } else {
                field
            },
            message: describe_type_error(&e.into_inner().to_string()),
        }
    })?;
    let loaded = LoadedPlan {
        path: path.to_path_buf(),
        plan,
    };
    check(&loaded)?;
    Ok(loaded)
}

/// Checks what the types cannot express, and reports every problem at once.
fn check(loaded: &LoadedPlan) -> Result<(), PlanError> {
    let mut problems = Vec::new();
    check_package(&loaded.plan, &mut problems);
    check_releases(loaded, &mut problems);
    check_created_at(&loaded.plan, &mut problems);
    check_image_templates(loaded, &mut problems);
    check_default_channel(loaded, &mut problems);
    check_bundle_labels(&loaded.plan, &mut problems);
    check_output(&loaded.plan.output, &mut problems);
    match problems.len() {
        0 => Ok(()),
        1 => {
            let (field, message) = problems.remove(0);
            Err(PlanError::Invalid {
                path: loaded.path.clone(),
                field,
                message,
            })
        }
        _ => Err(PlanError::Several {
            path: loaded.path.clone(),
            problems,
        }),
    }
}

/// `(field, message)` of one refused value.
type Problems = Vec<(String, String)>;

/// Output directories stay under the plan's directory and apart: `generate` replaces each
/// whole, so one inside the other (or the plan's own directory) would be replaced by the other.
fn check_output(output: &Output, problems: &mut Problems) {
    let dirs = [
        ("output.bundles", &output.bundles),
        ("output.catalog", &output.catalog),
    ];
    let before = problems.len();
    for (field, dir) in dirs {
        let normal = dir
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
        if dir.as_os_str().is_empty() || !normal {
            problems.push((
                field.to_owned(),
                format!(
                    "{:?} is not a directory under the plan's: give a relative path without `.` or `..`",
                    dir.display().to_string()
                ),
            ));
        }
    }
    let (bundles, catalog) = (&output.bundles, &output.catalog);
    let valid = problems.len() == before;
    if valid && (bundles.starts_with(catalog) || catalog.starts_with(bundles)) {
        problems.push((
            "output".to_owned(),
            format!(
                "bundles {:?} and catalog {:?} overlap: generate replaces each directory whole, so give two apart",
                bundles.display().to_string(),
                catalog.display().to_string()
            ),
        ));
    }
}

fn check_package(plan: &Plan, problems: &mut Problems) {
    if !is_dns1123_label(&plan.package) {
        problems.push((
            "package".into(),
            format!(
                "{:?} is not a DNS-1123 label (lowercase letters, digits and '-', at most 63 characters)",
                plan.package
            ),
        ));
    }
}

/// Versions (semantic, distinct as OLM orders them) and channels of every release.
fn check_releases(loaded: &LoadedPlan, problems: &mut Problems) {
    let plan = &loaded.plan;
    if plan.releases.is_empty() {
        problems.push(("releases".into(), "at least one release is required".into()));
    }
    let mut seen = BTreeMap::new();
    for (i, release) in plan.releases.iter().enumerate() {
        match semver::Version::parse(&release.version) {
            Err(e) => problems.push((
                format!("releases[{i}].version"),
                format!("{:?} is not a semantic version: {e}", release.version),
            )),
            Ok(version) => {
                // OLM orders bundles ignoring build metadata: 1.0.0+a and 1.0.0+b are one version.
                let key = (version.major, version.minor, version.patch, version.pre);
                if let Some(first) = seen.insert(key, i) {
                    problems.push((
                        format!("releases[{i}].version"),
                        same_version(&plan.releases[first].version, first, &release.version),
                    ));
                }
            }
        }
        if loaded.channels_of(release).is_empty() {
            problems.push((
                format!("releases[{i}].channels"),
                "no channels: set the release's `channels` or the plan's `channels`".into(),
            ));
        }
        for (j, channel) in loaded.channels_of(release).iter().enumerate() {
            if channel.trim().is_empty() || channel.contains(',') {
                problems.push((
                    format!("releases[{i}].channels[{j}]"),
                    format!("{channel:?} is not a valid channel name"),
                ));
            }
        }
    }
}

/// `bundleLabels`: each key and value must be written into `bundle.Dockerfile` as one `LABEL`
/// line and into the image config as an OCI label unchanged, so a key is a label name as Docker
/// and OCI recommend it (reverse-DNS: letters, digits, `.`, `-`, `_`, `/`, starting and ending
/// with a letter or digit) and a value holds no control character (a Dockerfile line cannot).
fn check_bundle_labels(plan: &Plan, problems: &mut Problems) {
    for (key, value) in &plan.bundle_labels {
        if !is_label_key(key) {
            problems.push((
                "bundleLabels".into(),
                format!(
                    "key {key:?} is not a label key (letters, digits, '.', '-', '_' and '/', starting and ending with a letter or digit, at most 253 characters)"
                ),
            ));
        } else if value.chars().any(char::is_control) {
            problems.push((
                format!("bundleLabels.{key}"),
                format!(
                    "{value:?} holds a control character, which a bundle.Dockerfile LABEL cannot carry"
                ),
            ));
        }
    }
}

/// A label key `bundle.Dockerfile` and the image config can both carry as written.
pub fn is_label_key(key: &str) -> bool {
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    key.len() <= 253
        && edge(key.chars().next())
        && edge(key.chars().next_back())
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '/'))
}

/// The message for a release whose version another release (`releases[first]`) already has.
fn same_version(first_version: &str, first: usize, version: &str) -> String {
    if first_version == version {
        format!("version {version} is also releases[{first}]")
    } else {
        format!(
            "version {version} equals releases[{first}].version {first_version} but for build metadata, which OLM ignores when it orders bundles"
        )
    }
}

/// `createdAt`, the plan's and each release's, is an RFC 3339 timestamp: OperatorHub shows it
/// as the CSV's creation time, and olmpack copies it as written.
fn check_created_at(plan: &Plan, problems: &mut Problems) {
    let stamps = std::iter::once(("createdAt".to_owned(), &plan.created_at)).chain(
        (plan.releases.iter().enumerate())
            .map(|(i, r)| (format!("releases[{i}].createdAt"), &r.created_at)),
    );
    for (field, value) in stamps {
        let Some(value) = value else { continue };
        let format = &time::format_description::well_known::Rfc3339;
        if let Err(e) = time::OffsetDateTime::parse(value, format) {
            problems.push((
                field,
                format!("{value:?} is not an RFC 3339 timestamp ({e})"),
            ));
        }
    }
}

fn check_default_channel(loaded: &LoadedPlan, problems: &mut Problems) {
    let plan = &loaded.plan;
    let published = plan
        .releases
        .iter()
        .flat_map(|r| loaded.channels_of(r))
        .any(|c| c == &plan.default_channel);
    // A plan with no release says so once (`releases`), not again here.
    if !published && !plan.releases.is_empty() {
        problems.push((
            "defaultChannel".into(),
            format!(
                "channel {:?} has no release; publish a release to it or pick another default",
                plan.default_channel
            ),
        ));
    }
}

/// The plan's image names, each as every release names it, are image references: the
/// catalog names bundle and operator images by them (opm refuses a catalog whose `image` or
/// `relatedImages` is not one), `olmpack release` pushes to them, and a Deployment's pods
/// cannot start with no image (the apiserver refuses a Pod whose image is empty).
fn check_image_templates(loaded: &LoadedPlan, problems: &mut Problems) {
    let plan = &loaded.plan;
    let templates = [
        ("bundleImage", &plan.bundle_image),
        ("operatorImage", &plan.operator_image),
        ("catalogImage", &plan.catalog_image),
    ];
    for (field, template) in templates
        .into_iter()
        .filter_map(|(f, t)| Some((f, t.as_ref()?)))
    {
        // Without `{version}` every release names the same image: one check.
        let per_release = template.contains(VERSION_PLACEHOLDER);
        let checked = if per_release { plan.releases.len() } else { 1 };
        for release in plan.releases.iter().take(checked) {
            let image = image_for_release(template, &release.version);
            let problem = match image.is_empty() {
                true => Some("must not be empty".to_owned()),
                false => crate::pullspec::check(&image).err(),
            };
            let Some(problem) = problem else { continue };
            let shown = match per_release {
                true => format!("for release {} names {image:?}", release.version),
                false => format!("{image:?}"),
            };
            problems.push((
                field.to_owned(),
                format!("{shown}, which is not an image reference: {problem}"),
            ));
            // One refusal per field: the same mistake in every release says nothing new.
            break;
        }
    }
    check_image_bases(&plan.images, problems);
}

/// The base images `olmpack release` builds on are image references it pulls as written (no
/// `{version}`): one that is not is refused when the plan is read, not when the release pulls.
fn check_image_bases(images: &ReleaseImages, problems: &mut Problems) {
    let bases = [
        ("images.operatorBase", &images.operator_base),
        ("images.catalogBase", &images.catalog_base),
    ];
    for (field, base) in bases
        .into_iter()
        .filter_map(|(f, b)| Some((f, b.as_ref()?)))
    {
        let problem = match base.is_empty() {
            true => Some("must not be empty".to_owned()),
            false => crate::pullspec::check(base).err(),
        };
        if let Some(problem) = problem {
            problems.push((
                field.to_owned(),
                format!("{base:?}, which is not an image reference: {problem}"),
            ));
        }
    }
}

#[cfg(test)]
mod tests;
