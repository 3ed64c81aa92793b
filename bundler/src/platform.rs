//! The kind of cluster an operator is installed on, for `upgrade olm --platform`: plain
//! Kubernetes, or OpenShift, which also serves its own API kinds — Route, the console kinds
//! (ConsolePlugin, ConsoleLink, ConsoleYAMLSample, ConsoleQuickStart, …),
//! SecurityContextConstraints and the `config.openshift.io` kinds (ClusterVersion,
//! Infrastructure, …). OLM v0 holds a CSV whose `nativeAPIs` the cluster does not serve at
//! `RequirementsNotMet`, and cannot create a bundle's objects of a kind it does not serve.
//!
//! On the test control plane those kinds are served by the CRDs openshift/api generates for
//! them (the Default feature set of a self-managed cluster, at the version `tools.toml` pins;
//! `cargo xtask setup` copies them), and prometheus-operator's kinds (ServiceMonitor,
//! PodMonitor, PrometheusRule), which OpenShift's monitoring stack serves, by the stand-ins
//! of [`crate::cluster_crds`]. OpenShift's service-ca is played too
//! ([`olmpack_envtest::service_ca`]: serving-certificate Secrets for annotated Services, CA
//! bundles injected where annotated). Not emulated: the other operators of an OpenShift
//! cluster (no ClusterVersion or Infrastructure object exists, only their kinds), and
//! admission by SecurityContextConstraints.
#![warn(missing_docs)]

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use olmpack_envtest::binaries::{ToolData, ToolNotFound, openshift_release};

use crate::cluster_crds;
use crate::input::{self, InputError, Limits};
use crate::upgrade::check::{CrdFileError, parse_crd_file};

/// A cluster platform.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Platform {
    /// Plain Kubernetes: only the kinds the apiserver and the bundle's CRDs serve.
    #[default]
    Kubernetes,
    /// OpenShift at the release olmpack pins ([`openshift_release`]).
    OpenShift,
}

/// The names `--platform` takes, in the order help lists them.
pub const NAMES: [&str; 2] = ["kubernetes", "openshift"];

impl FromStr for Platform {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, String> {
        match name {
            "kubernetes" => Ok(Platform::Kubernetes),
            "openshift" => Ok(Platform::OpenShift),
            _ => Err(format!(
                "{name:?} is not a platform olmpack knows; use one of: {}",
                NAMES.join(", ")
            )),
        }
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Platform::Kubernetes => f.write_str("Kubernetes"),
            Platform::OpenShift => match openshift_release() {
                Some(release) => write!(f, "OpenShift {release}"),
                None => f.write_str("OpenShift"),
            },
        }
    }
}

/// The platform's kinds could not be served.
#[derive(Debug, thiserror::Error)]
pub enum PlatformError {
    /// The CRDs are not installed.
    #[error("{platform}'s API kinds: {source}")]
    NotInstalled {
        /// The platform.
        platform: Platform,
        /// Where they were looked for.
        source: ToolNotFound,
    },
    /// The CRD directory could not be listed or a file in it read.
    #[error("{platform}'s API kinds: {source}")]
    Unreadable {
        /// The platform.
        platform: Platform,
        /// What failed.
        source: InputError,
    },
    /// A CRD file is not one CRD.
    #[error("{platform}'s API kinds: {source}")]
    NotACrd {
        /// The platform.
        platform: Platform,
        /// What is wrong.
        source: CrdFileError,
    },
    /// The directory holds no CRD.
    #[error(
        "{platform}'s API kinds: {dir} holds no CRD file (*.yaml); run `cargo xtask setup` again"
    )]
    Empty {
        /// The platform.
        platform: Platform,
        /// The directory.
        dir: PathBuf,
    },
}

impl Platform {
    /// The CRDs the cluster has before OLM installs anything: none on Kubernetes; OpenShift's
    /// API kinds on OpenShift, read from `$OLMPACK_OPENSHIFT_CRDS` or the tool cache.
    pub fn cluster_crds(
        self,
        limits: &Limits,
    ) -> Result<Vec<CustomResourceDefinition>, PlatformError> {
        match self {
            Platform::Kubernetes => Ok(Vec::new()),
            Platform::OpenShift => {
                let dir = ToolData::OpenShiftCrds.path().map_err(|source| {
                    PlatformError::NotInstalled {
                        platform: self,
                        source,
                    }
                })?;
                let mut crds = self.crds_in(&dir, limits)?;
                let monitoring = cluster_crds::WELL_KNOWN
                    .iter()
                    .filter(|k| k.owner == "prometheus-operator")
                    .filter_map(|k| cluster_crds::by_name(k.name));
                crds.extend(monitoring);
                Ok(crds)
            }
        }
    }

    /// Whether the platform runs OpenShift's service-ca (serving certificates and CA
    /// bundles for annotated objects).
    pub fn service_ca(self) -> bool {
        self == Platform::OpenShift
    }

    /// The roles of the test control plane's one node: on OpenShift a single-node
    /// OpenShift's (master, control-plane and worker, untainted), so pods that select or
    /// tolerate masters run as they do there; none on Kubernetes (a plain worker).
    pub fn node_roles(self) -> Vec<String> {
        match self {
            Platform::Kubernetes => Vec::new(),
            Platform::OpenShift => ["master", "control-plane", "worker"]
                .map(str::to_owned)
                .to_vec(),
        }
    }

    /// Every `*.yaml` file of `dir`, each one CRD, in file-name order.
    fn crds_in(
        self,
        dir: &Path,
        limits: &Limits,
    ) -> Result<Vec<CustomResourceDefinition>, PlatformError> {
        let unreadable = |source| PlatformError::Unreadable {
            platform: self,
            source,
        };
        let mut tree = input::list_tree(dir, Some(dir), limits)
            .and_then(|listing| listing.read(|p| p.extension().is_some_and(|e| e == "yaml")))
            .map_err(unreadable)?;
        if let Some(refused) = tree.refused.pop() {
            return Err(unreadable(refused.error));
        }
        if tree.files.is_empty() {
            return Err(PlatformError::Empty {
                platform: self,
                dir: dir.to_path_buf(),
            });
        }
        tree.files
            .into_iter()
            .map(|(file, bytes)| {
                let path = dir.join(&file);
                let text = input::decode(&path, bytes).map_err(unreadable)?;
                parse_crd_file(&path.display().to_string(), &text).map_err(|source| {
                    PlatformError::NotACrd {
                        platform: self,
                        source,
                    }
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_others_are_refused_with_the_choices() {
        assert_eq!("kubernetes".parse(), Ok(Platform::Kubernetes));
        assert_eq!("openshift".parse(), Ok(Platform::OpenShift));
        assert_eq!(
            "okd".parse::<Platform>(),
            Err(
                "\"okd\" is not a platform olmpack knows; use one of: kubernetes, openshift"
                    .to_owned()
            )
        );
    }

    #[test]
    fn a_directory_of_crds_is_read_in_name_order_and_a_stray_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let crd = |plural: &str| {
            format!(
                "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: {plural}.route.openshift.io\nspec:\n  group: route.openshift.io\n  names: {{kind: X, plural: {plural}}}\n  scope: Namespaced\n  versions: [{{name: v1, served: true, storage: true, schema: {{openAPIV3Schema: {{type: object}}}}}}]\n"
            )
        };
        std::fs::write(dir.path().join("b.crd.yaml"), crd("bs")).unwrap();
        std::fs::write(dir.path().join("a.crd.yaml"), crd("as")).unwrap();
        std::fs::write(dir.path().join("doc.go"), "package x").unwrap();
        let crds = Platform::OpenShift
            .crds_in(dir.path(), &Limits::default())
            .unwrap();
        let names: Vec<_> = crds
            .iter()
            .map(|c| c.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(names, ["as.route.openshift.io", "bs.route.openshift.io"]);

        std::fs::write(dir.path().join("c.yaml"), "kind: ConfigMap\n").unwrap();
        let err = Platform::OpenShift
            .crds_in(dir.path(), &Limits::default())
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("OpenShift"), "{err}");
        assert!(err.contains("c.yaml"), "{err}");

        let empty = tempfile::tempdir().unwrap();
        let err = Platform::OpenShift
            .crds_in(empty.path(), &Limits::default())
            .unwrap_err()
            .to_string();
        assert!(
            err.ends_with("holds no CRD file (*.yaml); run `cargo xtask setup` again"),
            "{err}"
        );
    }

    #[test]
    fn kubernetes_serves_nothing_more() {
        assert!(
            Platform::Kubernetes
                .cluster_crds(&Limits::default())
                .unwrap()
                .is_empty()
        );
    }
}
