//! Finding the real binaries the environments run.
//!
//! Each tool is looked up first in its environment variable (set by `cargo xtask test`, or by
//! `eval "$(cargo xtask env)"` before a plain `cargo test`), then on `PATH`.

use std::path::PathBuf;

/// A tool the test environments can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tool {
    Etcd,
    KubeApiserver,
    KubeControllerManager,
    KubeScheduler,
    Kwok,
    OlmOperator,
    CatalogOperator,
    Registry,
    Opm,
    Crdify,
    Actionlint,
    Skopeo,
    Umoci,
    Faketime,
    Cosign,
    Olareg,
    Helm,
}

impl Tool {
    /// The environment variable naming the binary.
    pub fn env_var(self) -> &'static str {
        match self {
            Tool::Etcd => "OLMPACK_ETCD",
            Tool::KubeApiserver => "OLMPACK_KUBE_APISERVER",
            Tool::KubeControllerManager => "OLMPACK_KUBE_CONTROLLER_MANAGER",
            Tool::KubeScheduler => "OLMPACK_KUBE_SCHEDULER",
            Tool::Kwok => "OLMPACK_KWOK",
            Tool::OlmOperator => "OLMPACK_OLM_OPERATOR",
            Tool::CatalogOperator => "OLMPACK_CATALOG_OPERATOR",
            Tool::Registry => "OLMPACK_REGISTRY",
            Tool::Opm => "OLMPACK_OPM",
            Tool::Crdify => "OLMPACK_CRDIFY",
            Tool::Actionlint => "OLMPACK_ACTIONLINT",
            Tool::Skopeo => "OLMPACK_SKOPEO",
            Tool::Umoci => "OLMPACK_UMOCI",
            Tool::Faketime => "OLMPACK_FAKETIME",
            Tool::Cosign => "OLMPACK_COSIGN",
            Tool::Olareg => "OLMPACK_OLAREG",
            Tool::Helm => "OLMPACK_HELM",
        }
    }

    /// The binary's file name, as looked up on `PATH`.
    pub fn file_name(self) -> &'static str {
        match self {
            Tool::Etcd => "etcd",
            Tool::KubeApiserver => "kube-apiserver",
            Tool::KubeControllerManager => "kube-controller-manager",
            Tool::KubeScheduler => "kube-scheduler",
            Tool::Kwok => "kwok",
            Tool::OlmOperator => "olm-operator",
            Tool::CatalogOperator => "catalog-operator",
            Tool::Registry => "docker-registry",
            Tool::Opm => "opm",
            Tool::Crdify => "crdify",
            Tool::Actionlint => "actionlint",
            Tool::Skopeo => "skopeo",
            Tool::Umoci => "umoci",
            Tool::Faketime => "faketime",
            Tool::Cosign => "cosign",
            Tool::Olareg => "olareg",
            Tool::Helm => "helm",
        }
    }

    /// The path of the binary, or an error saying how to provide it.
    pub fn path(self) -> Result<PathBuf, ToolNotFound> {
        if let Some(path) = std::env::var_os(self.env_var()) {
            let path = PathBuf::from(path);
            return if path.is_file() {
                Ok(path)
            } else {
                Err(ToolNotFound {
                    tool: self.file_name(),
                    env_var: self.env_var(),
                    looked_at: Some(path),
                })
            };
        }
        std::env::var_os("PATH")
            .into_iter()
            .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
            .map(|dir| dir.join(self.file_name()))
            .find(|candidate| candidate.is_file())
            .ok_or(ToolNotFound {
                tool: self.file_name(),
                env_var: self.env_var(),
                looked_at: None,
            })
    }
}

/// A tool binary that is neither named by its environment variable nor on `PATH`.
#[derive(Debug, thiserror::Error)]
#[error(
    "{tool} not found{}: run `cargo xtask setup` and use `cargo xtask test`, or set {env_var}",
    looked_at.as_ref().map(|p| format!(" at {}", p.display())).unwrap_or_else(|| " on PATH".to_owned())
)]
pub struct ToolNotFound {
    pub tool: &'static str,
    pub env_var: &'static str,
    pub looked_at: Option<PathBuf>,
}

/// A directory of data files that `cargo xtask setup` installs next to a tool.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolData {
    /// OLM v0's CustomResourceDefinitions, from the same release as the OLM binaries.
    OlmCrds,
    /// kwok's node and pod stages (what kwok does to fake nodes and pods).
    KwokStages,
    /// OLM v1's CustomResourceDefinitions (ClusterCatalog, ClusterExtension), from
    /// operator-controller at the version `tools.toml` pins.
    OlmV1Crds,
    /// operator-framework/api's validator test data, at the version `tools.toml` pins.
    UpstreamApiTestdata,
    /// operator-registry's bundle-validation test data, at the version `tools.toml` pins.
    UpstreamRegistryTestdata,
    /// Kueue's Helm chart (`charts/kueue`), at the version `tools.toml` pins: a real chart.
    KueueChart,
    /// Kyverno's Helm chart (`charts/kyverno`), at the version `tools.toml` pins: a real chart
    /// with Helm hooks.
    KyvernoChart,
}

impl ToolData {
    /// The environment variable naming the directory.
    pub fn env_var(self) -> &'static str {
        match self {
            ToolData::OlmCrds => "OLMPACK_OLM_CRDS",
            ToolData::KwokStages => "OLMPACK_KWOK_STAGES",
            ToolData::OlmV1Crds => "OLMPACK_OLMV1_CRDS",
            ToolData::UpstreamApiTestdata => "OLMPACK_UPSTREAM_API_TESTDATA",
            ToolData::UpstreamRegistryTestdata => "OLMPACK_UPSTREAM_REGISTRY_TESTDATA",
            ToolData::KueueChart => "OLMPACK_KUEUE_CHART",
            ToolData::KyvernoChart => "OLMPACK_KYVERNO_CHART",
        }
    }

    /// The directory, or an error saying how to provide it.
    pub fn path(self) -> Result<PathBuf, ToolNotFound> {
        let found = std::env::var_os(self.env_var()).map(PathBuf::from);
        match found {
            Some(dir) if dir.is_dir() => Ok(dir),
            looked_at => Err(ToolNotFound {
                tool: match self {
                    ToolData::OlmCrds => "OLM's CRDs",
                    ToolData::KwokStages => "kwok's stages",
                    ToolData::OlmV1Crds => "OLM v1's CRDs",
                    ToolData::UpstreamApiTestdata => "operator-framework/api's test data",
                    ToolData::UpstreamRegistryTestdata => "operator-registry's test data",
                    ToolData::KueueChart => "Kueue's Helm chart",
                    ToolData::KyvernoChart => "Kyverno's Helm chart",
                },
                env_var: self.env_var(),
                looked_at,
            }),
        }
    }
}
