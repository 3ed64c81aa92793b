//! Which cases a catalog asks for: per package, per group of channels with identical
//! entries, per install mode, one case per entry (install it, then take OLM v0's upgrade
//! from it, if any).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use olmpack_model::choice::Choice;
use olmpack_model::csv::ClusterServiceVersion;
use olmpack_model::plan::InstallModeType;
use olmpack_model::report::Consumer;
use olmpack_model::upgrade::Edge;
use serde::Serialize;

use super::OlmRunError;
use crate::catalog::load::{LoadOptions, load_dir_with};
use crate::catalog::model::{Bundle, Channel, Model, Package};
use crate::catalog::property::{self, Typed};
use crate::catalog::upgrade::{edges_between, v0_successor, v1_successor};

/// Which OLM installs and upgrades the cases.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OlmVersion {
    /// OLM v0 (olm-operator and catalog-operator): Subscription, InstallPlan, CSV.
    #[default]
    V0,
    /// OLM v1 (catalogd and operator-controller): ClusterCatalog, ClusterExtension.
    V1,
}

impl OlmVersion {
    /// Who refuses what it refuses, in findings.
    pub fn consumer(self) -> Consumer {
        match self {
            OlmVersion::V0 => Consumer::OlmV0,
            OlmVersion::V1 => Consumer::OlmV1,
        }
    }

    /// Its name on the command line: `v0` or `v1`.
    pub fn as_str(self) -> &'static str {
        match self {
            OlmVersion::V0 => "v0",
            OlmVersion::V1 => "v1",
        }
    }
}

impl std::fmt::Display for OlmVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Choice for OlmVersion {
    const CHOICES: &'static [(&'static str, Self)] =
        &[("v0", OlmVersion::V0), ("v1", OlmVersion::V1)];
}

/// One install (and at most one upgrade) to run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Case {
    /// The package installed.
    pub package: String,
    /// Every channel with this exact graph; the first is subscribed to.
    pub channels: Vec<String>,
    /// The bundle installed first (the starting CSV).
    pub from: String,
    /// The upgrade the OLM should take from `from`: to its successor in the channels, by
    /// every way that holds (replaces, skips, skipRange). `None`: `from` has no successor
    /// (a channel head), and the case only installs it.
    pub upgrade: Option<Edge>,
    /// The OperatorGroup the operator is installed under.
    pub install_mode: InstallModeType,
    /// The `olm.maxOpenShiftVersion` property values of the case's bundles that have any
    /// (bundle name → values), which OpenShift's OLM judges once they are installed.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub max_openshift_versions: BTreeMap<String, Vec<serde_json::Value>>,
    /// The OLM that runs the case; its successor of `from` is `upgrade`'s `to`.
    pub olm: OlmVersion,
}

impl Case {
    /// The bundle the case upgrades to, when it has an upgrade.
    pub fn to(&self) -> Option<&str> {
        self.upgrade.as_ref().map(|edge| edge.to.as_str())
    }

    /// What the case runs: `FROM → TO`, or `FROM` when it only installs.
    pub fn title(&self) -> String {
        self.upgrade
            .as_ref()
            .map_or_else(|| self.from.clone(), Edge::title)
    }

    /// The case's name in reports: `FROM → TO [channels] (mode)`.
    pub fn name(&self) -> String {
        let olm = match self.olm {
            OlmVersion::V0 => String::new(),
            OlmVersion::V1 => " on OLM v1".to_owned(),
        };
        format!(
            "{} [{}] ({}){olm}",
            self.title(),
            self.channels.join(","),
            self.install_mode
        )
    }
}

/// Loads the catalog in `dir` and plans its cases, each in the install mode its starting
/// bundle prefers (see [`preferred_mode`]).
pub fn load_cases(dir: &Path, package: Option<&str>) -> Result<Vec<Case>, OlmRunError> {
    load_cases_for(dir, package, &[], &olmpack_oci::input::Limits::default())
}

/// As [`load_cases_for`], for the OLM `olm`: under OLM v1 each case's upgrade is OLM v1's
/// successor among the entries of its channels ([`v1_successor`]).
pub fn load_cases_of(
    olm: OlmVersion,
    dir: &Path,
    package: Option<&str>,
    modes: &[InstallModeType],
    limits: &olmpack_oci::input::Limits,
) -> Result<Vec<Case>, OlmRunError> {
    let mut cases = load_cases_for(dir, package, modes, limits)?;
    if olm == OlmVersion::V1 {
        let model = load_model(dir, limits)?;
        for case in &mut cases {
            let Some(pkg) = model.packages.get(&case.package) else {
                continue;
            };
            let channels: Vec<&Channel> = case
                .channels
                .iter()
                .filter_map(|c| pkg.channels.get(c))
                .collect();
            case.upgrade = v1_successor(pkg, &channels, &case.from).map(|s| {
                let via = channels
                    .iter()
                    .flat_map(|ch| edges_between(pkg, ch, &case.from, &s.to))
                    .collect();
                upgrade(&case.package, &case.channels, &case.from, s.to, via)
            });
            let bundles = std::iter::once(case.from.as_str()).chain(case.to());
            case.max_openshift_versions = max_openshift_versions(pkg, bundles);
            case.olm = OlmVersion::V1;
        }
    }
    Ok(cases)
}

/// As [`load_cases`], with one case per entry and per mode of `modes` (all cases in the
/// preferred mode when `modes` is empty). A mode the bundle does not support still gets its
/// case: OLM's refusal is the verdict.
pub fn load_cases_for(
    dir: &Path,
    package: Option<&str>,
    modes: &[InstallModeType],
    limits: &olmpack_oci::input::Limits,
) -> Result<Vec<Case>, OlmRunError> {
    let model = load_model(dir, limits)?;
    if let Some(name) = package
        && !model.packages.contains_key(name)
    {
        return Err(OlmRunError::NoPackage {
            dir: dir.to_owned(),
            package: name.to_owned(),
        });
    }
    Ok(model
        .packages
        .values()
        .filter(|p| package.is_none_or(|name| p.name == name))
        .flat_map(|p| plan_cases(p, modes))
        .collect())
}

/// The catalog of `dir` as loaded, within `limits`: what every reader of `upgrade olm`
/// starts from (the cases, the catalog served to OLM v0).
pub(super) fn load_catalog(
    dir: &Path,
    limits: &olmpack_oci::input::Limits,
) -> Result<crate::catalog::declcfg::DeclarativeConfig, OlmRunError> {
    let options = LoadOptions {
        limits: *limits,
        ..LoadOptions::default()
    };
    let loaded = load_dir_with(dir, options).map_err(|source| OlmRunError::Load {
        dir: dir.to_owned(),
        source,
    })?;
    Ok(loaded.config)
}

/// The catalog of `dir` as a model; `Err` when it does not load or fails validation.
fn load_model(dir: &Path, limits: &olmpack_oci::input::Limits) -> Result<Model, OlmRunError> {
    let (model, findings) = Model::from_config(load_catalog(dir, limits)?);
    if let Some(first) = findings
        .iter()
        .find(|f| f.severity == olmpack_model::report::Severity::Error)
    {
        return Err(OlmRunError::Invalid {
            dir: dir.to_owned(),
            first: first.message.clone(),
        });
    }
    Ok(model)
}

/// The cases of one package (module docs), channels sharing identical graphs merged.
pub fn plan_cases(pkg: &Package, modes: &[InstallModeType]) -> Vec<Case> {
    let mut by_graph: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for ch in pkg.channels.values() {
        let mut entries: Vec<String> = ch
            .entries
            .iter()
            .map(|e| format!("{}|{}|{:?}|{}", e.name, e.replaces, e.skips, e.skip_range))
            .collect();
        entries.sort();
        by_graph
            .entry(entries.join("\n"))
            .or_default()
            .push(&ch.name);
    }
    let mut groups: Vec<Vec<&str>> = by_graph.into_values().collect();
    groups.sort();
    let mut cases = Vec::new();
    for channels in groups {
        let ch = &pkg.channels[channels[0]];
        let mut names: Vec<&str> = ch.entries.iter().map(|e| e.name.as_str()).collect();
        names.sort_by(|a, b| {
            let v = |n: &str| pkg.bundles.get(n).and_then(|b| b.version.clone());
            v(a).cmp(&v(b)).then_with(|| a.cmp(b))
        });
        names.dedup();
        let channels: Vec<String> = channels.iter().map(|c| (*c).to_owned()).collect();
        for from in names {
            let chosen = match modes {
                [] => vec![
                    pkg.bundles
                        .get(from)
                        .map_or(InstallModeType::AllNamespaces, preferred_mode),
                ],
                some => some.to_vec(),
            };
            let next = v0_successor(pkg, ch, from).map(|s| {
                let via = edges_between(pkg, ch, from, &s.to).into_iter().collect();
                upgrade(&pkg.name, &channels, from, s.to, via)
            });
            let bundles = std::iter::once(from).chain(next.as_ref().map(|edge| edge.to.as_str()));
            let max_openshift_versions = max_openshift_versions(pkg, bundles);
            for install_mode in chosen {
                cases.push(Case {
                    package: pkg.name.clone(),
                    channels: channels.clone(),
                    from: from.to_owned(),
                    upgrade: next.clone(),
                    install_mode,
                    max_openshift_versions: max_openshift_versions.clone(),
                    olm: OlmVersion::V0,
                });
            }
        }
    }
    cases
}

/// A case's upgrade of `package` from `from` to `to` in `channels`, by `via`.
fn upgrade(
    package: &str,
    channels: &[String],
    from: &str,
    to: String,
    via: BTreeSet<olmpack_model::upgrade_graph::EdgeKind>,
) -> Edge {
    Edge {
        channels: channels.iter().cloned().collect(),
        via,
        ..Edge::new(package, from, to)
    }
}

/// The `olm.maxOpenShiftVersion` values of each of `bundles` that has any.
fn max_openshift_versions<'a>(
    pkg: &Package,
    bundles: impl Iterator<Item = &'a str>,
) -> BTreeMap<String, Vec<serde_json::Value>> {
    bundles
        .filter_map(|name| {
            let values: Vec<serde_json::Value> = pkg
                .bundles
                .get(name)?
                .properties
                .iter()
                .filter(|p| p.type_ == olmpack_model::openshift::MAX_VERSION_PROPERTY)
                .map(|p| p.value.clone())
                .collect();
            (!values.is_empty()).then(|| (name.to_owned(), values))
        })
        .collect()
}

/// Every install mode, in the order a user installing by hand would prefer them.
const PREFERENCE: [InstallModeType; 4] = [
    InstallModeType::AllNamespaces,
    InstallModeType::OwnNamespace,
    InstallModeType::SingleNamespace,
    InstallModeType::MultiNamespace,
];

/// The first install mode of [`PREFERENCE`] that the bundle's CSV supports
/// (AllNamespaces when it says nothing usable: OLM's verdict then shows what it accepts).
pub fn preferred_mode(bundle: &Bundle) -> InstallModeType {
    let supported = supported_modes(bundle);
    PREFERENCE
        .into_iter()
        .find(|m| supported.contains(m))
        .unwrap_or(InstallModeType::AllNamespaces)
}

/// The install modes the CSV among the bundle's `olm.bundle.object` properties supports.
fn supported_modes(bundle: &Bundle) -> Vec<InstallModeType> {
    let Some(csv) = bundle_csv(bundle) else {
        return Vec::new();
    };
    let spec = csv.spec.unwrap_or_default();
    spec.install_modes
        .unwrap_or_default()
        .into_iter()
        .filter(|m| m.supported == Some(true))
        .filter_map(|m| m.type_.as_deref().and_then(InstallModeType::from_name))
        .collect()
}

/// The bundle's CSV, from its `olm.bundle.object` properties (`None` when it has none that
/// decodes).
fn bundle_csv(bundle: &Bundle) -> Option<ClusterServiceVersion> {
    bundle.properties.iter().enumerate().find_map(|(i, p)| {
        let Ok(Typed::BundleObject(bytes)) = property::parse(i, p) else {
            return None;
        };
        let value: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
        (value["kind"] == "ClusterServiceVersion")
            .then(|| ClusterServiceVersion::from_value(&value).ok())
            .flatten()
    })
}
