//! Writing the catalog for a release plan: one directory per package, deterministic bytes.
//!
//! Interface for `olmpack catalog generate`: [`build_catalog`] takes the package metadata, the
//! plan's [`UpgradeGraph`] and the rendered `olm.bundle` blobs ([`super::render`]), and returns
//! a [`FileTree`] holding `<package>/catalog.json`. Channel entries are the graph's, unchanged;
//! deprecated releases get an `olm.deprecations` entry. The catalog is validated with opm's
//! rules before it is returned; a plan that would produce an invalid catalog is an error
//! listing every finding.
#![warn(missing_docs)]

use super::declcfg::{
    Bundle, Channel, ChannelEntry, DeclarativeConfig, Deprecation, DeprecationEntry, Package,
    Reference, SCHEMA_BUNDLE, SCHEMA_CHANNEL, SCHEMA_DEPRECATIONS, SCHEMA_PACKAGE,
};
use std::path::Path;

use super::model::Model;
use olmpack_model::csv::Icon;
use olmpack_model::file_name::FileName;
use olmpack_model::upgrade_graph::UpgradeGraph;
use olmpack_oci::output::{FileTree, OutputError};

/// Package-level metadata from the plan.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PackageMeta {
    /// The package name.
    pub name: String,
    /// The channel installed when the user names none.
    pub default_channel: String,
    /// Package description.
    pub description: String,
    /// Package icon, if the plan gives one.
    pub icon: Option<Icon>,
}

/// Why the catalog could not be generated.
#[derive(Debug, thiserror::Error)]
pub enum CatalogGenerateError {
    /// The plan lists a release whose bundle was not rendered (an internal inconsistency of the inputs).
    #[error("no rendered bundle for release {bundle} of package {package}")]
    MissingBundle {
        /// The package.
        package: String,
        /// The missing bundle's name.
        bundle: String,
    },
    /// The generated catalog fails olmpack's own catalog validation, so opm would refuse it or serve it wrongly.
    #[error("generated catalog for package {package} is invalid:\n{findings}")]
    Invalid {
        /// The package.
        package: String,
        /// The error findings, one per line.
        findings: String,
    },
    /// Printing the catalog blobs of a package as YAML/JSON failed.
    #[error("failed to print the catalog of package {package}")]
    Write {
        /// The package.
        package: String,
        /// The writer's error.
        #[source]
        source: super::serialize::SerializeError,
    },
    /// The package name cannot be a directory name (the plan's package names are DNS-1123
    /// labels, so only a package from elsewhere gets here).
    #[error("package {package:?} cannot name the catalog's directory: {source}")]
    PackageName {
        /// The package.
        package: String,
        /// Why not.
        #[source]
        source: olmpack_model::file_name::FileNameError,
    },
    /// Placing the catalog files into the output tree failed.
    #[error("failed to lay out the catalog")]
    Output(#[from] OutputError),
}

/// Never about the input olmpack reads: a failure to do the job (exit 2).
impl crate::refusal::Refusal for CatalogGenerateError {
    fn refuses_input(&self) -> bool {
        false
    }
}

/// The catalog of one package as a declarative config (see the module docs).
pub fn build_config(
    package: &PackageMeta,
    graph: &UpgradeGraph,
    rendered: &[Bundle],
) -> Result<DeclarativeConfig, CatalogGenerateError> {
    let mut bundles = Vec::new();
    for node in graph.nodes() {
        let b = rendered
            .iter()
            .find(|b| b.name == node.bundle)
            .ok_or_else(|| CatalogGenerateError::MissingBundle {
                package: package.name.clone(),
                bundle: node.bundle.clone(),
            })?;
        bundles.push(b.clone());
    }
    let cfg = DeclarativeConfig {
        packages: vec![Package {
            origin: None,
            schema: SCHEMA_PACKAGE.to_owned(),
            name: package.name.clone(),
            default_channel: package.default_channel.clone(),
            icon: package.icon.clone(),
            description: package.description.clone(),
            properties: Vec::new(),
        }],
        channels: channels(&package.name, graph),
        bundles,
        deprecations: deprecations(&package.name, graph).into_iter().collect(),
        others: Vec::new(),
    };
    let (_, findings) = Model::build(&cfg);
    if !findings.is_empty() {
        let findings = findings
            .iter()
            .map(|f| format!("  [{}] {}", f.rule, f.message))
            .collect::<Vec<_>>()
            .join("\n");
        return Err(CatalogGenerateError::Invalid {
            package: package.name.clone(),
            findings,
        });
    }
    Ok(cfg)
}

/// `<package>/catalog.json` for one package (see the module docs).
pub fn build_catalog(
    package: &PackageMeta,
    graph: &UpgradeGraph,
    rendered: &[Bundle],
) -> Result<FileTree, CatalogGenerateError> {
    let cfg = build_config(package, graph, rendered)?;
    to_files(&package.name, &cfg)
}

/// `<package>/catalog.json`: the catalog of `package`, as written.
pub fn to_files(package: &str, cfg: &DeclarativeConfig) -> Result<FileTree, CatalogGenerateError> {
    let text =
        super::serialize::to_string(cfg, super::serialize::Format::Json).map_err(|source| {
            CatalogGenerateError::Write {
                package: package.to_owned(),
                source,
            }
        })?;
    let dir = FileName::new(package).map_err(|source| CatalogGenerateError::PackageName {
        package: package.to_owned(),
        source,
    })?;
    let mut tree = FileTree::new();
    tree.insert(Path::new(dir.as_str()).join("catalog.json"), text)?;
    Ok(tree)
}

/// The `olm.channel` blobs: the graph's channels (by name) and entries (by version).
fn channels(package: &str, graph: &UpgradeGraph) -> Vec<Channel> {
    graph
        .channels()
        .iter()
        .map(|channel| Channel {
            origin: None,
            schema: SCHEMA_CHANNEL.to_owned(),
            name: channel.name.clone(),
            package: package.to_owned(),
            entries: channel
                .entries
                .iter()
                .map(|e| ChannelEntry {
                    name: e.bundle.clone(),
                    replaces: e.edges.replaces.clone().unwrap_or_default(),
                    skips: e.edges.skips.clone(),
                    skip_range: e.edges.skip_range.clone().unwrap_or_default(),
                })
                .collect(),
            properties: Vec::new(),
        })
        .collect()
}

/// The `olm.deprecations` blob for the deprecated releases, if any.
fn deprecations(package: &str, graph: &UpgradeGraph) -> Option<Deprecation> {
    let mut entries: Vec<DeprecationEntry> = graph
        .nodes()
        .iter()
        .filter(|n| n.deprecated)
        .map(|n| DeprecationEntry {
            reference: Reference {
                schema: SCHEMA_BUNDLE.to_owned(),
                name: n.bundle.clone(),
            },
            message: format!("{package} {} is deprecated", n.version),
        })
        .collect();
    entries.sort_by(|a, b| a.reference.cmp(&b.reference));
    (!entries.is_empty()).then(|| Deprecation {
        origin: None,
        schema: SCHEMA_DEPRECATIONS.to_owned(),
        package: package.to_owned(),
        entries,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each package's catalog is `<package>/catalog.json` only when the name is one plain
    /// path component; any other name is refused, naming it, with no tree made.
    #[test]
    fn hostile_package_names_name_no_directory() {
        let cfg = DeclarativeConfig::default();
        let tree = to_files("demo", &cfg).unwrap();
        let paths: Vec<_> = tree.iter().map(|(p, _)| p.display().to_string()).collect();
        assert_eq!(paths, ["demo/catalog.json"]);
        let long = "p".repeat(300);
        let table = [
            (
                "/abs/dir",
                "\"/abs/dir\" holds '/': a file name must be one path component",
            ),
            (
                "../../x",
                "\"../../x\" holds '/': a file name must be one path component",
            ),
            ("..", "\"..\" names a directory, not a file"),
            (
                "a\0b",
                "\"a\\0b\" holds '\\0' (U+0000): a file name is made of ASCII letters, digits, '.', '_', '-' and '+'",
            ),
            (
                "a\nb",
                "\"a\\nb\" holds '\\n' (U+000A): a file name is made of ASCII letters, digits, '.', '_', '-' and '+'",
            ),
            (
                "\u{ff0e}\u{ff0e}",
                "\"．．\" holds '．' (U+FF0E): a file name is made of ASCII letters, digits, '.', '_', '-' and '+'",
            ),
            (&long, "a file name is at most 100 bytes; this one has 300"),
        ];
        for (package, why) in table {
            let err = to_files(package, &cfg).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("package {package:?} cannot name the catalog's directory: {why}")
            );
        }
    }
}
