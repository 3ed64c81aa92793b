//! Finding the real binaries the environments run, with or without olmpack's checkout.
//!
//! Each tool is looked up, in this order:
//! 1. in its environment variable (`OLMPACK_ETCD`, …; set by `cargo xtask test`, or by
//!    `eval "$(cargo xtask env)"` before a plain `cargo test`);
//! 2. for etcd and kube-apiserver, in `$KUBEBUILDER_ASSETS` (a kubebuilder project's envtest
//!    binaries, as `setup-envtest use -p path` prints it);
//! 3. in the per-user tool cache at the version olmpack pins (`tools.toml`, compiled in):
//!    `$OLMPACK_TOOLS_DIR`, else `$XDG_CACHE_HOME/olmpack/tools`, else `~/.cache/olmpack/tools`,
//!    laid out `<name>/<version>/bin/<binary>` as `cargo xtask setup` installs it;
//! 4. on `PATH`.
//!
//! [`Tool::locate`] says where a tool was found; `olmpack tools list` prints it for all.

use std::path::{Path, PathBuf};

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
    /// OLM v1's catalog server (unpacks ClusterCatalogs and serves their FBC).
    Catalogd,
    /// OLM v1's installer (reconciles ClusterExtensions).
    OperatorController,
}

impl Tool {
    /// Every tool, in `olmpack tools list` order.
    pub const ALL: [Tool; 19] = [
        Tool::Etcd,
        Tool::KubeApiserver,
        Tool::KubeControllerManager,
        Tool::KubeScheduler,
        Tool::Kwok,
        Tool::OlmOperator,
        Tool::CatalogOperator,
        Tool::Catalogd,
        Tool::OperatorController,
        Tool::Opm,
        Tool::Crdify,
        Tool::Registry,
        Tool::Olareg,
        Tool::Skopeo,
        Tool::Umoci,
        Tool::Cosign,
        Tool::Helm,
        Tool::Actionlint,
        Tool::Faketime,
    ];

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
            Tool::Catalogd => "OLMPACK_CATALOGD",
            Tool::OperatorController => "OLMPACK_OPERATOR_CONTROLLER",
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
            Tool::Catalogd => "catalogd",
            Tool::OperatorController => "operator-controller",
        }
    }

    /// The path of the binary, or an error saying how to provide it.
    pub fn path(self) -> Result<PathBuf, ToolNotFound> {
        self.locate().map(|found| found.path)
    }

    /// The binary and where it was found (module docs for the order), or an error saying
    /// where it was looked for and how to provide it.
    pub fn locate(self) -> Result<Found, ToolNotFound> {
        let not_found = |looked_at| ToolNotFound {
            tool: self.file_name(),
            env_var: self.env_var(),
            looked_at,
            cache: self.cache_path(),
        };
        if let Some(path) = std::env::var_os(self.env_var()) {
            let path = PathBuf::from(path);
            return if path.is_file() {
                Ok(Found {
                    path,
                    source: Source::EnvVar(self.env_var()),
                })
            } else {
                Err(not_found(Some(path)))
            };
        }
        let candidates = [
            (self.kubebuilder_asset(), Source::KubebuilderAssets),
            (self.cache_path(), Source::Cache),
            (on_path(self.file_name()), Source::Path),
        ];
        candidates
            .into_iter()
            .find_map(|(path, source)| {
                path.filter(|p| p.is_file())
                    .map(|path| Found { path, source })
            })
            .ok_or_else(|| not_found(None))
    }

    /// `$KUBEBUILDER_ASSETS/<binary>` for the tools setup-envtest provides.
    fn kubebuilder_asset(self) -> Option<PathBuf> {
        match self {
            Tool::Etcd | Tool::KubeApiserver => std::env::var_os(KUBEBUILDER_ASSETS)
                .map(|dir| PathBuf::from(dir).join(self.file_name())),
            _ => None,
        }
    }

    /// Where `cargo xtask setup` (and the tools artifact) put the pinned version in the
    /// per-user cache; `None` for tools installed from Debian packages.
    pub fn cache_path(self) -> Option<PathBuf> {
        let (dir, binary) = self.cache_entry()?;
        Some(tools_cache_dir()?.join(dir).join("bin").join(binary))
    }

    /// The tool's directory inside the tool cache (`<name>/<version>`, relative), shared by
    /// the tools built together (kube-apiserver and kube-controller-manager, say); `None`
    /// for tools installed from Debian packages.
    pub fn cache_dir(self) -> Option<PathBuf> {
        self.cache_entry().map(|(dir, _)| dir)
    }

    /// The binary's path inside the tool cache, relative (`<name>/<version>/bin/<binary>`).
    pub fn cache_binary(self) -> Option<PathBuf> {
        self.cache_entry()
            .map(|(dir, binary)| dir.join("bin").join(binary))
    }

    fn cache_entry(self) -> Option<(PathBuf, &'static str)> {
        let pins = pins();
        let (dir, version, binary) = match self {
            Tool::KubeApiserver | Tool::KubeControllerManager | Tool::KubeScheduler => (
                "kubernetes",
                pins.kubernetes.version.clone(),
                self.file_name(),
            ),
            Tool::Kwok | Tool::OlmOperator | Tool::CatalogOperator => (
                "olm",
                format!("{}-kwok-{}", pins.olm.version, pins.olm.kwok),
                self.file_name(),
            ),
            Tool::Catalogd | Tool::OperatorController => (
                "olmv1",
                pins.olmv1.as_ref()?.version.clone(),
                self.file_name(),
            ),
            Tool::Etcd
            | Tool::Opm
            | Tool::Crdify
            | Tool::Actionlint
            | Tool::Cosign
            | Tool::Olareg
            | Tool::Helm => {
                let name = self.file_name();
                let pin = pins.go.get(name)?;
                (name, pin.version.clone(), pin.binary.as_str())
            }
            Tool::Registry | Tool::Skopeo | Tool::Umoci | Tool::Faketime => return None,
        };
        Some((Path::new(dir).join(version), binary))
    }
}

/// The variable kubebuilder's envtest reads: a directory with `etcd` and `kube-apiserver`.
pub const KUBEBUILDER_ASSETS: &str = "KUBEBUILDER_ASSETS";

/// A tool binary and where it was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub path: PathBuf,
    pub source: Source,
}

/// Where a tool was found (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Its own `OLMPACK_*` variable.
    EnvVar(&'static str),
    /// `$KUBEBUILDER_ASSETS`.
    KubebuilderAssets,
    /// The per-user tool cache.
    Cache,
    /// `PATH`.
    Path,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::EnvVar(var) => write!(f, "${var}"),
            Source::KubebuilderAssets => write!(f, "${KUBEBUILDER_ASSETS}"),
            Source::Cache => write!(f, "tool cache"),
            Source::Path => write!(f, "PATH"),
        }
    }
}

/// The tool cache the tools are found in now: the root of the cache layout `etcd` was located
/// in (through `$OLMPACK_ETCD`, the cache or `PATH`), e.g. the one `cargo xtask setup` filled
/// for the test environment; `None` when etcd is not inside such a layout.
pub fn located_cache_dir() -> Option<PathBuf> {
    let etcd = Tool::Etcd.path().ok()?;
    let relative = Tool::Etcd.cache_binary()?;
    let root = etcd.to_str()?.strip_suffix(relative.to_str()?)?;
    Some(PathBuf::from(root))
}

/// The per-user tool cache (module docs); `None` without `HOME`.
pub fn tools_cache_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("OLMPACK_TOOLS_DIR") {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
        return Some(PathBuf::from(dir).join("olmpack/tools"));
    }
    std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache/olmpack/tools"))
}

fn on_path(file_name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join(file_name))
        .find(|candidate| candidate.is_file())
}

/// The versions olmpack pins (`tools.toml`, compiled in), as far as lookups need them.
#[derive(Debug, serde::Deserialize)]
struct Pins {
    kubernetes: KubernetesPin,
    olm: OlmPin,
    #[serde(default)]
    olmv1: Option<VersionPin>,
    #[serde(default)]
    openshift: Option<OpenShiftPin>,
    #[serde(default)]
    go: std::collections::BTreeMap<String, GoPin>,
}

#[derive(Debug, serde::Deserialize)]
struct VersionPin {
    version: String,
}

/// `[kubernetes]`: the default version and the other pinned minors.
#[derive(Debug, serde::Deserialize)]
struct KubernetesPin {
    version: String,
    #[serde(default)]
    minor: Vec<KubernetesMinorPin>,
}

#[derive(Debug, serde::Deserialize)]
struct KubernetesMinorPin {
    version: String,
    openshift: String,
}

/// A Kubernetes minor whose control plane (kube-apiserver, kube-controller-manager,
/// kube-scheduler) the test environments can run: the default one `tools.toml` pins
/// (`[kubernetes] version`) or one of its `[[kubernetes.minor]]`. Only pinned minors exist
/// ([`KubeMinor::pinned`]); etcd is the same for all.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KubeMinor(u64);

impl Default for KubeMinor {
    fn default() -> Self {
        KubeMinor(minor_of(&pins().kubernetes.version))
    }
}

impl std::fmt::Display for KubeMinor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "1.{}", self.0)
    }
}

impl KubeMinor {
    /// Every pinned minor, the default first.
    pub fn pinned() -> Vec<KubeMinor> {
        let kubernetes = &pins().kubernetes;
        std::iter::once(&kubernetes.version)
            .chain(kubernetes.minor.iter().map(|m| &m.version))
            .map(|v| KubeMinor(minor_of(v)))
            .collect()
    }

    /// Kubernetes 1.`minor`, when it is pinned.
    pub fn of(minor: u64) -> Option<KubeMinor> {
        Self::pinned().into_iter().find(|m| m.0 == minor)
    }

    /// The minor number (`27` for Kubernetes 1.27).
    pub fn minor(self) -> u64 {
        self.0
    }

    /// Whether this is the default minor (`[kubernetes] version`).
    pub fn is_default(self) -> bool {
        self == KubeMinor::default()
    }

    /// The pinned release of this minor (`v1.27.16`).
    pub fn version(self) -> &'static str {
        let kubernetes = &pins().kubernetes;
        std::iter::once(&kubernetes.version)
            .chain(kubernetes.minor.iter().map(|m| &m.version))
            .find(|v| minor_of(v) == self.0)
            .map(String::as_str)
            .expect("a KubeMinor is one of the pinned minors")
    }

    /// The OpenShift releases that ship this minor, as `tools.toml` says (`None` for the
    /// default minor).
    pub fn openshift(self) -> Option<&'static str> {
        pins()
            .kubernetes
            .minor
            .iter()
            .find(|m| minor_of(&m.version) == self.0)
            .map(|m| m.openshift.as_str())
    }

    /// The pinned minor that OpenShift 4.`openshift` ships, when `tools.toml` pins one for it
    /// (its `openshift` field names that release).
    pub fn of_openshift(openshift: u64) -> Option<KubeMinor> {
        let release = format!("4.{openshift}");
        pins()
            .kubernetes
            .minor
            .iter()
            .find(|m| m.openshift.split(',').any(|r| r.trim() == release))
            .map(|m| KubeMinor(minor_of(&m.version)))
    }

    /// This minor's control plane, for reports: `Kubernetes 1.27 (kube-apiserver v1.27.16)`.
    pub fn control_plane(self) -> String {
        format!("Kubernetes {self} (kube-apiserver {})", self.version())
    }

    /// This minor's directory inside the tool cache, relative (`kubernetes/v1.27.16`).
    pub fn cache_dir(self) -> PathBuf {
        Path::new("kubernetes").join(self.version())
    }

    /// The path of `tool` (kube-apiserver, kube-controller-manager or kube-scheduler) of this
    /// minor. The default minor's are looked up as [`Tool::locate`] says; another minor's
    /// only in the tool cache: the one the default tools were found in, else the per-user one.
    pub fn tool_path(self, tool: Tool) -> Result<PathBuf, KubeMinorNotInstalled> {
        if self.is_default() {
            return tool.path().map_err(|source| KubeMinorNotInstalled {
                minor: self,
                version: self.version(),
                tool: tool.file_name(),
                looked_at: Vec::new(),
                default: Some(Box::new(source)),
            });
        }
        let relative = self.cache_dir().join("bin").join(tool.file_name());
        let looked_at: Vec<PathBuf> = located_cache_dir()
            .into_iter()
            .chain(tools_cache_dir())
            .map(|cache| cache.join(&relative))
            .collect();
        looked_at
            .iter()
            .find(|p| p.is_file())
            .cloned()
            .ok_or(KubeMinorNotInstalled {
                minor: self,
                version: self.version(),
                tool: tool.file_name(),
                looked_at,
                default: None,
            })
    }
}

/// `v1.27.16` → 27 (0 when the version does not read so; tools.toml's own tests keep it
/// readable).
fn minor_of(version: &str) -> u64 {
    version
        .trim_start_matches('v')
        .split('.')
        .nth(1)
        .and_then(|m| m.parse().ok())
        .unwrap_or(0)
}

/// A binary of a pinned Kubernetes minor that is not installed.
#[derive(Debug, thiserror::Error)]
#[error(
    "{tool} of Kubernetes {minor} ({version}) is not installed{}{}",
    if looked_at.is_empty() { String::new() } else { format!(" (looked at {})", looked_at.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")) },
    match default { Some(source) => format!(": {source}"), None => format!(": `olmpack tools install --kubernetes {minor}` installs it from olmpack's tools image (the live commands do on first use when a tools image is known), and `cargo xtask setup` in olmpack's checkout builds every minor tools.toml pins into the tool cache (tools/kubernetes/{version}/)") }
)]
pub struct KubeMinorNotInstalled {
    /// The minor.
    pub minor: KubeMinor,
    /// Its pinned release.
    pub version: &'static str,
    /// The binary's file name.
    pub tool: &'static str,
    /// Where it was looked for (another minor's: the tool caches).
    pub looked_at: Vec<PathBuf>,
    /// The default minor's lookup failure (its usual message).
    pub default: Option<Box<ToolNotFound>>,
}

#[derive(Debug, serde::Deserialize)]
struct OpenShiftPin {
    api: String,
    release: String,
    #[serde(default)]
    older: Vec<OpenShiftReleasePin>,
}

#[derive(Debug, serde::Deserialize)]
struct OpenShiftReleasePin {
    api: String,
    release: String,
}

/// The directory of OpenShift 4.`minor`'s own API kinds (CRDs) in the tool cache, relative
/// (`openshift-api/<version>/crds`), when `tools.toml` pins an older release of that number
/// (`[[openshift.older]]`); the pinned release's own are [`ToolData::OpenShiftCrds`].
pub fn older_openshift_crds_dir(minor: u64) -> Option<PathBuf> {
    let release = format!("4.{minor}");
    let pin = pins().openshift.as_ref()?;
    pin.older
        .iter()
        .find(|o| o.release == release)
        .map(|o| Path::new("openshift-api").join(&o.api).join("crds"))
}

/// Every older OpenShift release's API-kinds directory `tools.toml` pins (relative), in its
/// order; see [`older_openshift_crds_dir`].
pub fn older_openshift_crds_dirs() -> Vec<PathBuf> {
    let Some(pin) = pins().openshift.as_ref() else {
        return Vec::new();
    };
    pin.older
        .iter()
        .map(|o| Path::new("openshift-api").join(&o.api).join("crds"))
        .collect()
}

/// OpenShift 4.`minor`'s API kinds: its own when `tools.toml` pins that release
/// ([`older_openshift_crds_dir`], looked up in the tool cache only), else the pinned
/// release's ([`ToolData::OpenShiftCrds`]).
pub fn openshift_crds(minor: u64) -> Result<PathBuf, ToolNotFound> {
    let Some(relative) = older_openshift_crds_dir(minor) else {
        return ToolData::OpenShiftCrds.path();
    };
    let cache = tools_cache_dir().map(|cache| cache.join(&relative));
    match cache.clone().filter(|dir| dir.is_dir()) {
        Some(dir) => Ok(dir),
        None => Err(ToolNotFound {
            tool: "the API kinds (CRDs) of that OpenShift release",
            env_var: ToolData::OpenShiftCrds.env_var(),
            looked_at: cache.clone(),
            cache,
        }),
    }
}

/// The OpenShift release whose API kinds [`ToolData::OpenShiftCrds`] holds (`4.22`), as
/// `tools.toml` pins it.
pub fn openshift_release() -> Option<&'static str> {
    pins().openshift.as_ref().map(|pin| pin.release.as_str())
}

#[derive(Debug, serde::Deserialize)]
struct OlmPin {
    version: String,
    kwok: String,
}

#[derive(Debug, serde::Deserialize)]
struct GoPin {
    version: String,
    binary: String,
}

fn pins() -> &'static Pins {
    static PINS: std::sync::OnceLock<Pins> = std::sync::OnceLock::new();
    PINS.get_or_init(|| {
        toml::from_str(include_str!("../../tools.toml"))
            .expect("tools.toml (compiled in) has [kubernetes], [olm] and [go.*] pins")
    })
}

/// A tool binary that was found nowhere (module docs).
#[derive(Debug, thiserror::Error)]
#[error(
    "{tool} not found{}: install olmpack's pinned tools (`olmpack tools install --from <olmpack tools image>`, or `cargo xtask setup` in olmpack's checkout, puts them in {}){}, or set {env_var}",
    looked_at.as_ref().map(|p| format!(" at {}", p.display())).unwrap_or_else(|| format!(" (looked in ${env_var}{}, the tool cache and PATH)", if matches!(*tool, "etcd" | "kube-apiserver") { ", $KUBEBUILDER_ASSETS" } else { "" })),
    cache.as_deref().and_then(Path::parent).map(|p| p.display().to_string()).unwrap_or_else(|| "the tool cache".to_owned()),
    if matches!(*tool, "etcd" | "kube-apiserver") { ", point KUBEBUILDER_ASSETS at a kubebuilder project's envtest binaries (`setup-envtest use -p path`)" } else { "" }
)]
pub struct ToolNotFound {
    pub tool: &'static str,
    pub env_var: &'static str,
    pub looked_at: Option<PathBuf>,
    /// Where the tool cache would have it.
    pub cache: Option<PathBuf>,
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
    /// OLM v1's experimental CustomResourceDefinitions (the standard ones plus the fields of
    /// alpha features: a ClusterExtension's `config`), from the same operator-controller
    /// version; what [`crate::olm::v1::OlmV1Env`] runs with.
    OlmV1ExperimentalCrds,
    /// OLM v1's standard install manifest (`manifests/standard.yaml`: RBAC and the flags its
    /// Deployments run with), from the same operator-controller version; a file.
    OlmV1Manifest,
    /// OpenShift's API kinds as CRDs (Route, console kinds, SecurityContextConstraints,
    /// `config.openshift.io`), from openshift/api at the version `tools.toml` pins.
    OpenShiftCrds,
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
            ToolData::OlmV1ExperimentalCrds => "OLMPACK_OLMV1_EXPERIMENTAL_CRDS",
            ToolData::OlmV1Manifest => "OLMPACK_OLMV1_MANIFEST",
            ToolData::OpenShiftCrds => "OLMPACK_OPENSHIFT_CRDS",
            ToolData::UpstreamApiTestdata => "OLMPACK_UPSTREAM_API_TESTDATA",
            ToolData::UpstreamRegistryTestdata => "OLMPACK_UPSTREAM_REGISTRY_TESTDATA",
            ToolData::KueueChart => "OLMPACK_KUEUE_CHART",
            ToolData::KyvernoChart => "OLMPACK_KYVERNO_CHART",
        }
    }

    /// The directory inside the tool cache, relative, for the data installed with a tool
    /// (OLM's CRDs and kwok's stages with the OLM binaries, OLM v1's CRDs); `None` for the
    /// test data only `cargo xtask setup` provides.
    pub fn cache_dir(self) -> Option<PathBuf> {
        let pins = pins();
        let olm = || Path::new("olm").join(format!("{}-kwok-{}", pins.olm.version, pins.olm.kwok));
        match self {
            ToolData::OlmCrds => Some(olm().join("crds")),
            ToolData::KwokStages => Some(olm().join("kwok-stages")),
            ToolData::OlmV1Crds => pins
                .olmv1
                .as_ref()
                .map(|pin| Path::new("olmv1").join(&pin.version).join("crds")),
            ToolData::OlmV1ExperimentalCrds => pins.olmv1.as_ref().map(|pin| {
                Path::new("olmv1")
                    .join(&pin.version)
                    .join("crds-experimental")
            }),
            ToolData::OlmV1Manifest => pins.olmv1.as_ref().map(|pin| {
                Path::new("olmv1")
                    .join(&pin.version)
                    .join("manifests/standard.yaml")
            }),
            ToolData::OpenShiftCrds => pins
                .openshift
                .as_ref()
                .map(|pin| Path::new("openshift-api").join(&pin.api).join("crds")),
            _ => None,
        }
    }

    /// The directory (a file for [`ToolData::OlmV1Manifest`]) — from its variable, else from
    /// the tool cache — or an error saying how to provide it.
    pub fn path(self) -> Result<PathBuf, ToolNotFound> {
        let found = match std::env::var_os(self.env_var()) {
            Some(dir) => Some(PathBuf::from(dir)),
            None => self
                .cache_dir()
                .zip(tools_cache_dir())
                .map(|(dir, cache)| cache.join(dir))
                .filter(|dir| dir.exists()),
        };
        match found {
            Some(dir) if dir.exists() => Ok(dir),
            looked_at => Err(ToolNotFound {
                cache: None,
                tool: match self {
                    ToolData::OlmCrds => "OLM's CRDs",
                    ToolData::KwokStages => "kwok's stages",
                    ToolData::OlmV1Crds => "OLM v1's CRDs",
                    ToolData::OlmV1ExperimentalCrds => "OLM v1's experimental CRDs",
                    ToolData::OlmV1Manifest => "OLM v1's standard manifest",
                    ToolData::OpenShiftCrds => "OpenShift's API CRDs",
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
