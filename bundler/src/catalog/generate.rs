//! Writing the catalog for a release plan: one directory per package, deterministic bytes.
//!
//! Interface for `olmpack catalog generate` (the plan module maps `olmpack.yaml` onto it):
//! [`build_catalog`] takes the package metadata, the releases ([`ReleaseInput`]), the channel
//! [`Policy`] and the rendered `olm.bundle` blobs ([`super::render`]), and returns a
//! [`FileTree`] holding `<package>/catalog.json`. The catalog is validated with opm's rules
//! before it is returned; a plan that would produce an invalid catalog is an error listing
//! every finding.

use super::declcfg::{Bundle, DeclarativeConfig, Icon, Package, SCHEMA_PACKAGE};
use super::model::Model;
use super::policy::{self, Policy, PolicyError, ReleaseInput};
use crate::output::{FileTree, OutputError};

/// Package-level metadata from the plan.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PackageMeta {
    pub name: String,
    pub default_channel: String,
    pub description: String,
    pub icon: Option<Icon>,
}

/// Why the catalog could not be generated.
#[derive(Debug, thiserror::Error)]
pub enum GenerateError {
    #[error("invalid release plan for package {package}")]
    Policy {
        package: String,
        #[source]
        source: PolicyError,
    },
    #[error("no rendered bundle for release {bundle} of package {package}")]
    MissingBundle { package: String, bundle: String },
    #[error("generated catalog for package {package} is invalid:\n{findings}")]
    Invalid { package: String, findings: String },
    #[error("failed to print the catalog of package {package}")]
    Write {
        package: String,
        #[source]
        source: super::write::WriteError,
    },
    #[error("failed to lay out the catalog")]
    Output(#[from] OutputError),
}

/// The catalog of one package as a declarative config (see the module docs).
pub fn build_config(
    package: &PackageMeta,
    inputs: &[ReleaseInput],
    policy: &Policy,
    rendered: &[Bundle],
) -> Result<DeclarativeConfig, GenerateError> {
    let channels = policy::compute_channels(&package.name, inputs, policy).map_err(|source| {
        GenerateError::Policy {
            package: package.name.clone(),
            source,
        }
    })?;
    let mut bundles = Vec::new();
    for r in inputs {
        let b = rendered
            .iter()
            .find(|b| b.name == r.bundle)
            .ok_or_else(|| GenerateError::MissingBundle {
                package: package.name.clone(),
                bundle: r.bundle.clone(),
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
        channels,
        bundles,
        deprecations: policy::deprecations(&package.name, inputs)
            .into_iter()
            .collect(),
        others: Vec::new(),
    };
    let (_, findings) = Model::build(&cfg);
    if !findings.is_empty() {
        let findings = findings
            .iter()
            .map(|f| format!("  [{}] {}", f.rule, f.message))
            .collect::<Vec<_>>()
            .join("\n");
        return Err(GenerateError::Invalid {
            package: package.name.clone(),
            findings,
        });
    }
    Ok(cfg)
}

/// `<package>/catalog.json` for one package (see the module docs).
pub fn build_catalog(
    package: &PackageMeta,
    inputs: &[ReleaseInput],
    policy: &Policy,
    rendered: &[Bundle],
) -> Result<FileTree, GenerateError> {
    let cfg = build_config(package, inputs, policy, rendered)?;
    let text = super::write::to_string(&cfg, super::write::Format::Json).map_err(|source| {
        GenerateError::Write {
            package: package.name.clone(),
            source,
        }
    })?;
    let mut tree = FileTree::new();
    tree.insert(format!("{}/catalog.json", package.name), text)?;
    Ok(tree)
}
