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
//!
//! `openshift-4.N` names an older OpenShift release: the API kinds served are its own where
//! `tools.toml` pins them (`[[openshift.older]]`: 4.14), else those of the pinned release; the
//! release number is what OpenShift's OLM judges a bundle's
//! `olm.maxOpenShiftVersion` against ([`Platform::upgrade_gate`]). Its control plane is the
//! Kubernetes minor that release ships when `tools.toml` pins it (4.14: 1.27, 4.22: 1.35),
//! else the default minor ([`Platform::kubernetes_minor`]).
//!
//! `kubernetes-1.N` names a Kubernetes minor `tools.toml` pins ([`KubeMinor::pinned`]): its
//! own kube-apiserver, kube-controller-manager and kube-scheduler run the control plane
//! (`upgrade test`, and `upgrade olm` under either OLM); `kubernetes` is the default minor.
#![warn(missing_docs)]

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use olmpack_envtest::binaries::{KubeMinor, ToolNotFound, openshift_crds, openshift_release};
use olmpack_model::openshift::{self, OpenShiftRelease, UpgradeGate};

use crate::cluster_crds;
use crate::upgrade::check::{CrdFileError, parse_crd_file};
use olmpack_oci::input::{self, InputError, Limits};

/// A cluster platform.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Platform {
    /// Plain Kubernetes: only the kinds the apiserver and the bundle's CRDs serve.
    Kubernetes {
        /// The Kubernetes minor whose control plane runs.
        minor: KubeMinor,
    },
    /// OpenShift 4.`minor` (`openshift`: the release olmpack pins, [`openshift_release`]).
    OpenShift {
        /// The minor release of OpenShift 4.
        minor: u64,
    },
}

/// The names `--platform` takes, in the order help lists them.
pub const NAMES: [&str; 4] = ["kubernetes", "kubernetes-1.N", "openshift", "openshift-4.N"];

impl Default for Platform {
    fn default() -> Self {
        Platform::kubernetes()
    }
}

impl Platform {
    /// Kubernetes at the default minor `tools.toml` pins.
    pub fn kubernetes() -> Self {
        Platform::Kubernetes {
            minor: KubeMinor::default(),
        }
    }

    /// The Kubernetes minor whose control plane runs the platform. OpenShift 4.N: the minor
    /// that release ships when `tools.toml` pins it (`[[kubernetes.minor]] openshift`), else
    /// the default minor ([`Self::ships_its_own_kubernetes`] says which).
    pub fn kubernetes_minor(self) -> KubeMinor {
        match self {
            Platform::Kubernetes { minor } => minor,
            Platform::OpenShift { minor } => KubeMinor::of_openshift(minor).unwrap_or_default(),
        }
    }

    /// The control plane the platform runs on, for reports: `OpenShift 4.22 on Kubernetes
    /// 1.35 (kube-apiserver v1.35.8)`; for an OpenShift release whose own minor is not pinned
    /// that says so (OpenShift 4.N ships Kubernetes 1.(N+13) from 4.3 on).
    pub fn control_plane(self) -> String {
        let apiserver = self.kubernetes_minor().control_plane();
        match self {
            Platform::Kubernetes { .. } => apiserver,
            Platform::OpenShift { minor: os } if self.ships_its_own_kubernetes() => {
                format!("OpenShift 4.{os} on {apiserver}")
            }
            Platform::OpenShift { minor: os } => format!(
                "OpenShift 4.{os} on {apiserver}: the Kubernetes minor OpenShift 4.{os} ships{} is not pinned",
                shipped_kubernetes(os)
            ),
        }
    }

    /// Whether the control plane is the Kubernetes release the platform ships: always for
    /// Kubernetes; for OpenShift 4.N when olmpack pins the minor 4.N ships.
    pub fn ships_its_own_kubernetes(self) -> bool {
        match self {
            Platform::Kubernetes { .. } => true,
            Platform::OpenShift { minor } => KubeMinor::of_openshift(minor).is_some(),
        }
    }

    /// OpenShift at the release olmpack pins.
    pub fn openshift() -> Self {
        Platform::OpenShift {
            minor: pinned_openshift_minor(),
        }
    }
}

/// ` (1.M)`: the Kubernetes minor OpenShift 4.`openshift` ships (1.(N+13) from 4.3 on), for
/// messages; empty before 4.3.
pub fn shipped_kubernetes(openshift: u64) -> String {
    match openshift >= 3 {
        true => format!(" (1.{})", openshift + 13),
        false => String::new(),
    }
}

/// The minor of the OpenShift 4 release `tools.toml` pins (0 if it pins none).
fn pinned_openshift_minor() -> u64 {
    openshift_release()
        .and_then(|r| r.strip_prefix("4."))
        .and_then(|m| m.parse().ok())
        .unwrap_or(0)
}

impl FromStr for Platform {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, String> {
        if let Some(minor) = name.strip_prefix("kubernetes-1.") {
            return kubernetes_minor(name, minor);
        }
        let pinned = pinned_openshift_minor();
        let minor = name
            .strip_prefix("openshift-4.")
            .and_then(|m| m.parse::<u64>().ok());
        match (name, minor) {
            ("kubernetes", _) => Ok(Platform::kubernetes()),
            ("openshift", _) => Ok(Platform::openshift()),
            (_, Some(minor)) if (1..=pinned).contains(&minor) => Ok(Platform::OpenShift { minor }),
            (_, Some(minor)) => Err(format!(
                "{name:?}: olmpack knows OpenShift 4.1 to 4.{pinned} (it serves the API kinds of 4.{pinned}); 4.{minor} is not among them"
            )),
            _ => Err(format!(
                "{name:?} is not a platform olmpack knows; use one of: {}",
                NAMES.join(", ")
            )),
        }
    }
}

/// `kubernetes-1.<minor>` as a pinned minor, or why not.
fn kubernetes_minor(name: &str, minor: &str) -> Result<Platform, String> {
    let pinned = || {
        KubeMinor::pinned()
            .iter()
            .map(|m| format!("kubernetes-{m} ({})", m.version()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match minor.parse::<u64>().ok().and_then(KubeMinor::of) {
        Some(minor) => Ok(Platform::Kubernetes { minor }),
        None => Err(format!(
            "{name:?}: olmpack pins these Kubernetes minors (tools.toml): {}",
            pinned()
        )),
    }
}

impl fmt::Display for Platform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Platform::Kubernetes { minor } if minor.is_default() => f.write_str("Kubernetes"),
            Platform::Kubernetes { minor } => write!(f, "Kubernetes {minor}"),
            Platform::OpenShift { minor } => write!(f, "OpenShift 4.{minor}"),
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
    /// API kinds on OpenShift — that release's own when `tools.toml` pins them (4.14), else
    /// the pinned release's, read from `$OLMPACK_OPENSHIFT_CRDS` or the tool cache.
    pub fn cluster_crds(
        self,
        limits: &Limits,
    ) -> Result<Vec<CustomResourceDefinition>, PlatformError> {
        match self {
            Platform::Kubernetes { .. } => Ok(Vec::new()),
            Platform::OpenShift { minor } => {
                let dir = openshift_crds(minor).map_err(|source| PlatformError::NotInstalled {
                    platform: self,
                    source,
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
        matches!(self, Platform::OpenShift { .. })
    }

    /// What OpenShift's OLM does once a bundle whose `olm.maxOpenShiftVersion` properties are
    /// `values` is installed as ClusterServiceVersion `csv`: it blocks upgrades of the cluster
    /// to the next minor release when the maximum is below it, or when the property is
    /// invalid (OLM's operator-lifecycle-manager ClusterOperator reports Upgradeable=False).
    /// `None` when nothing is blocked (and always on Kubernetes). The value is read as OLM
    /// reads it, and an invalid one is named in OLM's words
    /// ([`olmpack_model::openshift::upgrade_gate`]).
    pub fn upgrade_gate(self, csv: &str, values: &[serde_json::Value]) -> Option<String> {
        let Platform::OpenShift { minor } = self else {
            return None;
        };
        match openshift::upgrade_gate(OpenShiftRelease::four(minor), values) {
            UpgradeGate::Open => None,
            UpgradeGate::Blocked { max, next } => Some(format!(
                "OLM on {self} blocks upgrades of the cluster to {next} while {csv} is \
                 installed: its olm.maxOpenShiftVersion is {max}"
            )),
            UpgradeGate::Invalid(why) => Some(format!(
                "OLM on {self} blocks upgrades of the cluster while {csv} is installed: its \
                 olm.maxOpenShiftVersion property is invalid ({why})"
            )),
        }
    }

    /// The OpenShift release the platform is, if it is OpenShift.
    pub fn as_openshift(self) -> Option<OpenShiftRelease> {
        match self {
            Platform::OpenShift { minor } => Some(OpenShiftRelease::four(minor)),
            Platform::Kubernetes { .. } => None,
        }
    }

    /// The roles of the test control plane's one node: on OpenShift a single-node
    /// OpenShift's (master, control-plane and worker, untainted), so pods that select or
    /// tolerate masters run as they do there; none on Kubernetes (a plain worker).
    pub fn node_roles(self) -> Vec<String> {
        match self {
            Platform::Kubernetes { .. } => Vec::new(),
            Platform::OpenShift { .. } => ["master", "control-plane", "worker"]
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
        assert_eq!("kubernetes".parse(), Ok(Platform::kubernetes()));
        let default = KubeMinor::default();
        assert_eq!(
            format!("kubernetes-{default}").parse(),
            Ok(Platform::kubernetes())
        );
        for minor in KubeMinor::pinned() {
            assert_eq!(
                format!("kubernetes-{minor}").parse(),
                Ok(Platform::Kubernetes { minor })
            );
        }
        let unknown = "kubernetes-1.2".parse::<Platform>().unwrap_err();
        assert!(
            unknown.contains(&format!("kubernetes-{default} ({})", default.version())),
            "{unknown}"
        );
        assert_eq!("openshift".parse(), Ok(Platform::openshift()));
        assert_eq!(
            "openshift-4.14".parse(),
            Ok(Platform::OpenShift { minor: 14 })
        );
        assert_eq!(
            "okd".parse::<Platform>(),
            Err(
                "\"okd\" is not a platform olmpack knows; use one of: kubernetes, kubernetes-1.N, openshift, openshift-4.N"
                    .to_owned()
            )
        );
        let pinned = pinned_openshift_minor();
        assert!(pinned >= 14, "tools.toml pins an OpenShift 4 release");
        let newer = format!("openshift-4.{}", pinned + 1);
        assert_eq!(
            newer.parse::<Platform>(),
            Err(format!(
                "{newer:?}: olmpack knows OpenShift 4.1 to 4.{pinned} (it serves the API kinds of 4.{pinned}); 4.{} is not among them",
                pinned + 1
            ))
        );
        assert_eq!(
            Platform::OpenShift { minor: 14 }.to_string(),
            "OpenShift 4.14"
        );
    }

    #[test]
    fn openshift_runs_on_the_kubernetes_minor_it_ships_where_pinned() {
        let default = KubeMinor::default();
        let table = [
            (
                14,
                27,
                "OpenShift 4.14 on Kubernetes 1.27 (kube-apiserver v1.27.16)".to_owned(),
            ),
            (
                22,
                35,
                "OpenShift 4.22 on Kubernetes 1.35 (kube-apiserver v1.35.8)".to_owned(),
            ),
            (
                16,
                default.minor(),
                format!(
                    "OpenShift 4.16 on Kubernetes {default} (kube-apiserver {}): the Kubernetes minor OpenShift 4.16 ships (1.29) is not pinned",
                    default.version()
                ),
            ),
        ];
        for (openshift, kubernetes, said) in table {
            let platform = Platform::OpenShift { minor: openshift };
            assert_eq!(
                platform.kubernetes_minor().minor(),
                kubernetes,
                "4.{openshift}"
            );
            assert_eq!(platform.control_plane(), said);
        }
        assert_eq!(
            Platform::openshift().kubernetes_minor().minor(),
            35,
            "the pinned OpenShift release runs on its own minor"
        );
        let minor = KubeMinor::of(27).expect("1.27 is pinned");
        assert_eq!(
            Platform::Kubernetes { minor }.control_plane(),
            "Kubernetes 1.27 (kube-apiserver v1.27.16)"
        );
    }

    #[test]
    fn max_openshift_version_gates_cluster_upgrades_as_openshifts_olm_does() {
        use serde_json::json;
        let on = Platform::OpenShift { minor: 14 };
        let gate = |values: &[serde_json::Value]| on.upgrade_gate("op.v1", values);
        let blocks = |max: &str| {
            Some(format!(
                "OLM on OpenShift 4.14 blocks upgrades of the cluster to 4.15 while op.v1 is installed: its olm.maxOpenShiftVersion is {max}"
            ))
        };
        let invalid = |why: &str| {
            Some(format!(
                "OLM on OpenShift 4.14 blocks upgrades of the cluster while op.v1 is installed: its olm.maxOpenShiftVersion property is invalid ({why})"
            ))
        };
        let table = [
            (vec![], None),
            (vec![json!("4.8")], blocks("4.8")),
            (vec![json!("4.14")], blocks("4.14")),
            (vec![json!("v4.14")], blocks("4.14")),
            (vec![json!("4.15")], None),
            (vec![json!("4.15.0")], None),
            (vec![json!("5")], None),
            (vec![json!("\"4.20\"")], None),
            (vec![json!(4.8)], blocks("4.8")),
            (
                vec![json!("")],
                invalid(r#"value cannot be "" (an empty string)"#),
            ),
            (
                vec![json!("4.15.1")],
                invalid(
                    "property olm.maxOpenShiftVersion must specify only <major>.<minor> version, got invalid value 4.15.1",
                ),
            ),
            (
                vec![json!("4.15"), json!("4.16")],
                invalid(
                    r#"defining more than one "olm.maxOpenShiftVersion" property is not allowed"#,
                ),
            ),
        ];
        for (values, want) in table {
            assert_eq!(gate(&values), want, "{values:?}");
        }
        assert_eq!(
            Platform::kubernetes().upgrade_gate("op.v1", &[json!("4.8")]),
            None
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
        let crds = Platform::openshift()
            .crds_in(dir.path(), &Limits::default())
            .unwrap();
        let names: Vec<_> = crds
            .iter()
            .map(|c| c.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(names, ["as.route.openshift.io", "bs.route.openshift.io"]);

        std::fs::write(dir.path().join("c.yaml"), "kind: ConfigMap\n").unwrap();
        let err = Platform::openshift()
            .crds_in(dir.path(), &Limits::default())
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("OpenShift"), "{err}");
        assert!(err.contains("c.yaml"), "{err}");

        let empty = tempfile::tempdir().unwrap();
        let err = Platform::openshift()
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
            Platform::kubernetes()
                .cluster_crds(&Limits::default())
                .unwrap()
                .is_empty()
        );
    }
}
