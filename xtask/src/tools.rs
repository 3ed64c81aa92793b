//! The reference tools pinned in `tools.toml`: where they live and how they are installed.
//!
//! Contract:
//! - Every tool lands in `<cache>/<name>/<version>/bin/` where `<cache>` is
//!   `$OLMPACK_TOOLS_DIR`, else `$XDG_CACHE_HOME/olmpack/tools`, else `~/.cache/olmpack/tools`.
//! - A tool directory is complete or absent: it is built in a sibling temp directory and
//!   renamed into place, with a `.complete` stamp naming exactly what was built. A stamp that
//!   does not match the pin (or no stamp) means "build again".
//! - Installing is idempotent: when every stamp matches and every Debian package is present,
//!   setup runs no build and no package manager.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail, ensure};
use serde::Deserialize;

/// The parsed `tools.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pins {
    pub kubernetes: KubernetesPin,
    pub olm: OlmPin,
    pub olmv1: OlmV1Pin,
    pub openshift: OpenShiftPin,
    pub upstream: UpstreamPin,
    pub go: BTreeMap<String, GoPin>,
    pub debian: DebianPins,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KubernetesPin {
    pub version: String,
    pub staging: String,
    pub go: String,
    /// More Kubernetes minors, each built next to the default one.
    #[serde(default)]
    pub minor: Vec<KubernetesMinorPin>,
}

/// One more Kubernetes minor (`[[kubernetes.minor]]`): `--platform kubernetes-1.<minor>`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KubernetesMinorPin {
    pub version: String,
    pub staging: String,
    pub go: String,
    /// GOTOOLCHAIN for the build (`go1.22.5`), when the local Go cannot build this minor.
    #[serde(default)]
    pub toolchain: Option<String>,
    /// The OpenShift releases that ship this minor (why it is pinned).
    pub openshift: String,
}

/// What one Kubernetes build needs: the default pin's or a minor's.
#[derive(Debug, Clone, Copy)]
struct KubeBuild<'a> {
    version: &'a str,
    staging: &'a str,
    go: &'a str,
    toolchain: Option<&'a str>,
    /// The OpenShift releases that ship it (a minor's; for the setup report).
    openshift: Option<&'a str>,
}

impl KubeBuild<'_> {
    /// `v1.27.16 (OpenShift 4.14's)`, for the setup report.
    fn name(&self) -> String {
        match self.openshift {
            Some(openshift) => format!("{} (OpenShift {openshift}'s)", self.version),
            None => self.version.to_owned(),
        }
    }
}

impl KubernetesPin {
    /// The default version first, then each minor in file order.
    fn builds(&self) -> Vec<KubeBuild<'_>> {
        let default = KubeBuild {
            version: &self.version,
            staging: &self.staging,
            go: &self.go,
            toolchain: None,
            openshift: None,
        };
        let minors = self.minor.iter().map(|m| KubeBuild {
            version: &m.version,
            staging: &m.staging,
            go: &m.go,
            toolchain: m.toolchain.as_deref(),
            openshift: Some(&m.openshift),
        });
        std::iter::once(default).chain(minors).collect()
    }
}

/// OLM v0 (olm-operator, catalog-operator, its CRDs) and kwok, built from one wrapper module.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OlmPin {
    pub version: String,
    pub kwok: String,
    pub go: String,
}

/// OLM v1: catalogd and operator-controller built from operator-controller's module at this
/// exact version, with its CRDs (ClusterCatalog, ClusterExtension) and standard manifest.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OlmV1Pin {
    pub version: String,
    /// pkg.package-operator.run/boxcutter, which the module requires: from the proxy where it
    /// is served, else from the vendored source tarball.
    pub boxcutter: String,
    /// Go build tags, as upstream's own build uses them.
    #[serde(default)]
    pub tags: Vec<String>,
}

/// OpenShift's own API kinds as CRDs (Route, the console kinds, SecurityContextConstraints,
/// `config.openshift.io`), copied from openshift/api at this exact version.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenShiftPin {
    /// The openshift/api module version (a pseudo-version of its main branch).
    pub api: String,
    /// The OpenShift release that module version describes (`4.22`).
    pub release: String,
    /// Older releases whose own API kinds are pinned too (`openshift-4.N` on the Kubernetes
    /// minor that release ships).
    #[serde(default)]
    pub older: Vec<OpenShiftReleasePin>,
}

/// An older OpenShift release's API kinds: openshift/api at a commit of its release branch.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenShiftReleasePin {
    /// The openshift/api module version (a pseudo-version of a commit on `release-4.N`).
    pub api: String,
    /// The release (`4.14`).
    pub release: String,
}

impl OpenShiftPin {
    /// `(module version, release)` of every pinned release, the newest first.
    pub fn releases(&self) -> Vec<(&str, &str)> {
        std::iter::once((self.api.as_str(), self.release.as_str()))
            .chain(
                self.older
                    .iter()
                    .map(|o| (o.api.as_str(), o.release.as_str())),
            )
            .collect()
    }
}

/// Upstream validators' test data (valid and invalid bundles, CSVs, CRDs) and a real operator's
/// Helm chart, copied from the modules at these exact versions.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpstreamPin {
    /// operator-framework/api (what `operator-sdk bundle validate` runs).
    pub api: String,
    /// operator-framework/operator-registry (opm's bundle validation).
    pub registry: String,
    /// sigs.k8s.io/kueue, whose Helm chart (`charts/kueue`) is a real chart to render.
    pub kueue: String,
    /// github.com/kyverno/kyverno, whose Helm chart (`charts/kyverno`) has hooks.
    pub kyverno: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GoPin {
    pub module: String,
    pub version: String,
    pub package: String,
    pub binary: String,
    /// Go build tags, as the tool's own build uses them.
    #[serde(default)]
    pub tags: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DebianPins {
    pub packages: Vec<String>,
}

/// Binaries built from k8s.io/kubernetes.
const KUBE_BINARIES: [&str; 3] = [
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
];

const OLM_MODULE: &str = "github.com/operator-framework/operator-lifecycle-manager";
const KWOK_MODULE: &str = "sigs.k8s.io/kwok";
/// `(package, binary)` of the OLM + kwok build.
const OLM_BINARIES: [(&str, &str); 3] = [
    ("cmd/olm", "olm-operator"),
    ("cmd/catalog", "catalog-operator"),
    ("cmd/kwok", "kwok"),
];
/// Where OLM's CRDs are in its module, and where setup puts them in the tool directory.
const OLM_CRDS: (&str, &str) = ("deploy/chart/crds", "crds");
/// kwok's "fast" node and pod stages (ready at once, deleted at once) and where they go.
const KWOK_STAGES: [&str; 2] = ["kustomize/stage/node/fast", "kustomize/stage/pod/fast"];
const KWOK_STAGES_DIR: &str = "kwok-stages";
/// One upstream test-data set: the module, the directory in it, the tool directory and the
/// environment variable naming the copy.
struct TestdataSet {
    module: &'static str,
    dir: &'static str,
    tool: &'static str,
    env_var: &'static str,
    /// Which pin of `[upstream]` gives the version.
    version: fn(&UpstreamPin) -> &String,
}

impl TestdataSet {
    fn version<'a>(&self, pin: &'a UpstreamPin) -> &'a str {
        (self.version)(pin)
    }
}

const UPSTREAM_TESTDATA: [TestdataSet; 4] = [
    TestdataSet {
        module: "github.com/operator-framework/api",
        dir: "pkg/validation/internal/testdata",
        tool: "operator-framework-api",
        env_var: "OLMPACK_UPSTREAM_API_TESTDATA",
        version: |pin| &pin.api,
    },
    TestdataSet {
        module: "github.com/operator-framework/operator-registry",
        dir: "pkg/lib/bundle/testdata/validate",
        tool: "operator-registry-testdata",
        env_var: "OLMPACK_UPSTREAM_REGISTRY_TESTDATA",
        version: |pin| &pin.registry,
    },
    TestdataSet {
        module: "sigs.k8s.io/kueue",
        dir: "charts/kueue",
        tool: "kueue-chart",
        env_var: "OLMPACK_KUEUE_CHART",
        version: |pin| &pin.kueue,
    },
    TestdataSet {
        module: "github.com/kyverno/kyverno",
        dir: "charts/kyverno",
        tool: "kyverno-chart",
        env_var: "OLMPACK_KYVERNO_CHART",
        version: |pin| &pin.kyverno,
    },
];
/// Where setup puts each copy, inside its tool directory.
const TESTDATA_DIR: &str = "testdata";
const OPENSHIFT_API_MODULE: &str = "github.com/openshift/api";
/// The directories of openshift/api whose CRDs setup copies, and where they go.
const OPENSHIFT_CRDS: ([&str; 4], &str) = (
    [
        "config/v1/zz_generated.crd-manifests",
        "console/v1/zz_generated.crd-manifests",
        "route/v1/zz_generated.crd-manifests",
        "security/v1/zz_generated.crd-manifests",
    ],
    "crds",
);
const OLMV1_MODULE: &str = "github.com/operator-framework/operator-controller";
const BOXCUTTER_MODULE: &str = "pkg.package-operator.run/boxcutter";
/// `(package, binary)` of the OLM v1 build, in the order the `.complete` stamp lists them.
const OLMV1_BINARIES: [(&str, &str); 2] = [
    ("cmd/catalogd", "catalogd"),
    ("cmd/operator-controller", "operator-controller"),
];
/// Where OLM v1's CRDs are in its module (ClusterExtension, ClusterCatalog), and where setup
/// puts them in the tool directory: the standard set (what `olmpack release`'s manifests are
/// dry-run against), and the experimental one (also the fields of alpha features, such as a
/// ClusterExtension's `config` for OwnNamespace and SingleNamespace installs), which
/// `upgrade olm --olm v1` runs with.
const OLMV1_CRDS: [([&str; 2], &str); 2] = [
    (
        [
            "helm/olmv1/base/operator-controller/crd/standard",
            "helm/olmv1/base/catalogd/crd/standard",
        ],
        "crds",
    ),
    (
        [
            "helm/olmv1/base/operator-controller/crd/experimental",
            "helm/olmv1/base/catalogd/crd/experimental",
        ],
        "crds-experimental",
    ),
];
/// OLM v1's standard install manifest (RBAC, Deployments and their flags), copied to the same
/// path in the tool directory.
const OLMV1_MANIFEST: &str = "manifests/standard.yaml";

/// Debian packages whose binaries the tests use, with the binary and its env variable.
const DEBIAN_BINARIES: [(&str, &str, &str); 4] = [
    (
        "docker-registry",
        "/usr/bin/docker-registry",
        "OLMPACK_REGISTRY",
    ),
    ("skopeo", "/usr/bin/skopeo", "OLMPACK_SKOPEO"),
    ("faketime", "/usr/bin/faketime", "OLMPACK_FAKETIME"),
    ("umoci", "/usr/bin/umoci", "OLMPACK_UMOCI"),
];

impl Pins {
    pub fn load(workspace: &Path) -> Result<Self> {
        let path = workspace.join("tools.toml");
        let text =
            fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        toml::from_str(&text).with_context(|| format!("parsing {}", path.display()))
    }
}

/// Where the tools of one pin set live.
#[derive(Debug)]
pub struct Layout {
    pub cache: PathBuf,
}

impl Layout {
    pub fn from_env() -> Result<Self> {
        let cache = if let Some(dir) = std::env::var_os("OLMPACK_TOOLS_DIR") {
            PathBuf::from(dir)
        } else if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
            PathBuf::from(dir).join("olmpack/tools")
        } else if let Some(home) = std::env::var_os("HOME") {
            PathBuf::from(home).join(".cache/olmpack/tools")
        } else {
            bail!("cannot place the tool cache: set OLMPACK_TOOLS_DIR or HOME");
        };
        Ok(Self { cache })
    }

    fn tool_dir(&self, name: &str, version: &str) -> PathBuf {
        self.cache.join(name).join(version)
    }

    /// The environment variables that point the test suite at every pinned tool.
    pub fn test_env(&self, pins: &Pins) -> Vec<(String, OsString)> {
        let kube = self
            .tool_dir("kubernetes", &pins.kubernetes.version)
            .join("bin");
        let mut vars = vec![
            (
                "OLMPACK_KUBE_APISERVER".to_owned(),
                kube.join("kube-apiserver").into_os_string(),
            ),
            (
                "OLMPACK_KUBE_CONTROLLER_MANAGER".to_owned(),
                kube.join("kube-controller-manager").into_os_string(),
            ),
            (
                "OLMPACK_KUBE_SCHEDULER".to_owned(),
                kube.join("kube-scheduler").into_os_string(),
            ),
        ];
        let olm = self.tool_dir("olm", &olm_dir_version(&pins.olm));
        for (var, path) in [
            ("OLMPACK_OLM_OPERATOR", "bin/olm-operator"),
            ("OLMPACK_CATALOG_OPERATOR", "bin/catalog-operator"),
            ("OLMPACK_KWOK", "bin/kwok"),
            ("OLMPACK_OLM_CRDS", OLM_CRDS.1),
            ("OLMPACK_KWOK_STAGES", KWOK_STAGES_DIR),
        ] {
            vars.push((var.to_owned(), olm.join(path).into_os_string()));
        }
        let olmv1 = self.tool_dir("olmv1", &pins.olmv1.version);
        for (var, path) in [
            ("OLMPACK_CATALOGD", "bin/catalogd"),
            ("OLMPACK_OPERATOR_CONTROLLER", "bin/operator-controller"),
            ("OLMPACK_OLMV1_CRDS", OLMV1_CRDS[0].1),
            ("OLMPACK_OLMV1_EXPERIMENTAL_CRDS", OLMV1_CRDS[1].1),
            ("OLMPACK_OLMV1_MANIFEST", OLMV1_MANIFEST),
        ] {
            vars.push((var.to_owned(), olmv1.join(path).into_os_string()));
        }
        vars.push((
            "OLMPACK_OPENSHIFT_CRDS".to_owned(),
            self.tool_dir("openshift-api", &pins.openshift.api)
                .join(OPENSHIFT_CRDS.1)
                .into_os_string(),
        ));
        for set in &UPSTREAM_TESTDATA {
            let dir = self.tool_dir(set.tool, set.version(&pins.upstream));
            vars.push((
                set.env_var.to_owned(),
                dir.join(TESTDATA_DIR).into_os_string(),
            ));
        }
        for (name, pin) in &pins.go {
            let bin = self
                .tool_dir(name, &pin.version)
                .join("bin")
                .join(&pin.binary);
            vars.push((env_var_for(name), bin.into_os_string()));
        }
        for (_, bin, var) in DEBIAN_BINARIES {
            vars.push((var.to_owned(), OsString::from(bin)));
        }
        vars
    }
}

/// `opm` → `OLMPACK_OPM`.
fn env_var_for(tool: &str) -> String {
    format!("OLMPACK_{}", tool.to_uppercase().replace('-', "_"))
}

/// Installs every pinned tool that is missing; returns what it did, one line per tool.
pub fn setup(pins: &Pins, layout: &Layout, vendor: &Path) -> Result<Vec<String>> {
    fs::create_dir_all(&layout.cache)
        .with_context(|| format!("creating {}", layout.cache.display()))?;
    let mut report = vec![install_debian(&pins.debian)?];
    for build in pins.kubernetes.builds() {
        report.push(install_kubernetes(build, layout)?);
    }
    report.extend([
        install_olm(&pins.olm, layout)?,
        install_olmv1(&pins.olmv1, layout, vendor)?,
        install_upstream_testdata(&pins.upstream, layout)?,
    ]);
    for (api, release) in pins.openshift.releases() {
        report.push(install_openshift_api(api, release, layout)?);
    }
    for (name, pin) in &pins.go {
        report.push(install_go_tool(name, pin, layout)?);
    }
    Ok(report)
}

fn install_debian(pins: &DebianPins) -> Result<String> {
    let missing: Vec<&str> = pins
        .packages
        .iter()
        .map(String::as_str)
        .filter(|pkg| !debian_installed(pkg))
        .collect();
    if missing.is_empty() {
        return Ok(format!(
            "debian: {} already installed",
            pins.packages.join(", ")
        ));
    }
    // As root run apt-get directly; otherwise through passwordless sudo (CI runners).
    let sudo = !is_root();
    if sudo && !passwordless_sudo() {
        bail!(
            "Debian packages missing: {}; install them with `sudo apt-get install -y {}` and run setup again",
            missing.join(", "),
            missing.join(" ")
        );
    }
    let apt = || {
        let mut cmd = Command::new(if sudo { "sudo" } else { "env" });
        if sudo {
            cmd.args(["-n", "env"]);
        }
        // Wait for another apt (a parallel setup or job) rather than fail on its lock.
        cmd.args([
            "DEBIAN_FRONTEND=noninteractive",
            "apt-get",
            "-o",
            "DPkg::Lock::Timeout=600",
        ]);
        cmd
    };
    let started = Instant::now();
    let install = |update_first: bool| -> Result<bool> {
        if update_first {
            run(apt().args(["update", "-q"]))?;
        }
        Ok(apt()
            .args(["install", "-y", "-q", "--no-install-recommends"])
            .args(&missing)
            .status()
            .context("running apt-get")?
            .success())
    };
    // A fresh machine has no package lists yet: update only when the first try fails.
    if !install(false)? {
        ensure!(
            install(true)?,
            "apt-get could not install {}",
            missing.join(", ")
        );
    }
    Ok(format!(
        "debian: installed {} in {:.0?}",
        missing.join(", "),
        started.elapsed()
    ))
}

fn debian_installed(package: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", package])
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).contains("install ok installed"))
        .unwrap_or(false)
}

fn passwordless_sudo() -> bool {
    Command::new("sudo")
        .args(["-n", "true"])
        .status()
        .is_ok_and(|s| s.success())
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).trim() == "0")
        .unwrap_or(false)
}

/// What a tool directory's `.complete` stamp must say for the directory to be reused.
fn stamp(parts: &[&str]) -> String {
    let mut s = parts.join("\n");
    s.push('\n');
    s
}

fn is_complete(dir: &Path, stamp: &str, binaries: &[&str]) -> bool {
    fs::read_to_string(dir.join(".complete")).is_ok_and(|s| s == stamp)
        && binaries.iter().all(|b| dir.join("bin").join(b).is_file())
}

fn install_kubernetes(pin: KubeBuild<'_>, layout: &Layout) -> Result<String> {
    let dest = layout.tool_dir("kubernetes", pin.version);
    let mut parts = vec![
        "k8s.io/kubernetes",
        pin.version,
        pin.staging,
        "version-ldflags",
    ];
    parts.extend(pin.toolchain);
    let stamp = stamp(&parts);
    if is_complete(&dest, &stamp, &KUBE_BINARIES) {
        return Ok(format!("kubernetes {}: up to date", pin.name()));
    }
    let started = Instant::now();
    build_into(&dest, &stamp, |work| {
        // The staging modules are replaced with ./staging paths in kubernetes' own go.mod;
        // read that list from the published go.mod and pin each to its release instead.
        let gomod = go_mod_of("k8s.io/kubernetes", pin.version, work)?;
        let staging = staging_modules(&gomod)?;
        let mut module = format!(
            "module olmpack.dev/tools/kubernetes\n\ngo {}\n\nrequire k8s.io/kubernetes {}\n\nreplace (\n",
            pin.go, pin.version
        );
        for m in &staging {
            module.push_str(&format!("\t{m} => {m} {}\n", pin.staging));
        }
        module.push_str(")\n");
        let packages: Vec<(String, String)> = KUBE_BINARIES
            .iter()
            .map(|b| (format!("k8s.io/kubernetes/cmd/{b}"), (*b).to_owned()))
            .collect();
        // Without these the binaries report v0.0.0-master, which breaks version checks.
        let (major, minor) = kube_major_minor(pin.version)?;
        let ldflags = [
            "k8s.io/component-base/version",
            "k8s.io/client-go/pkg/version",
        ]
        .iter()
        .map(|pkg| {
            format!(
                "-X {pkg}.gitVersion={} -X {pkg}.gitMajor={major} -X {pkg}.gitMinor={minor} -X {pkg}.gitTreeState=clean -X {pkg}.buildDate=1970-01-01T00:00:00Z",
                pin.version
            )
        })
        .collect::<Vec<_>>()
        .join(" ");
        build_wrapper_module(
            work,
            &module,
            &BuildFlags {
                tags: "",
                ldflags: &ldflags,
                toolchain: pin.toolchain,
            },
            &packages,
        )
    })?;
    Ok(format!(
        "kubernetes {}: built {} in {:.0?}{}",
        pin.name(),
        KUBE_BINARIES.join(", "),
        started.elapsed(),
        pin.toolchain
            .map(|t| format!(" with {t}"))
            .unwrap_or_default()
    ))
}

fn install_go_tool(name: &str, pin: &GoPin, layout: &Layout) -> Result<String> {
    let dest = layout.tool_dir(name, &pin.version);
    let tags = pin.tags.join(",");
    let stamp = stamp(&[&pin.module, &pin.version, &pin.package, &pin.binary, &tags]);
    if is_complete(&dest, &stamp, &[&pin.binary]) {
        return Ok(format!("{name} {}: up to date", pin.version));
    }
    let started = Instant::now();
    build_into(&dest, &stamp, |work| {
        let gomod = go_mod_of(&pin.module, &pin.version, work)?;
        let go = go_directive(&gomod).unwrap_or("1.22");
        let module = format!(
            "module olmpack.dev/tools/{name}\n\ngo {go}\n\nrequire {} {}\n",
            pin.module, pin.version
        );
        build_wrapper_module(
            work,
            &module,
            &BuildFlags {
                tags: &tags,
                ldflags: "",
                toolchain: None,
            },
            &[(pin.package.clone(), pin.binary.clone())],
        )
    })?;
    Ok(format!(
        "{name} {}: built in {:.0?}",
        pin.version,
        started.elapsed()
    ))
}

/// `v0.38.0-kwok-v0.8.0`: one directory per pair of versions.
fn olm_dir_version(pin: &OlmPin) -> String {
    format!("{}-kwok-{}", pin.version, pin.kwok)
}

/// OLM v0's olm-operator and catalog-operator and kwok, from one wrapper module (kwok's
/// k8s.io/* versions win MVS and OLM still builds with them), plus OLM's CRDs and kwok's
/// stage definitions copied from the same module versions.
fn install_olm(pin: &OlmPin, layout: &Layout) -> Result<String> {
    let dest = layout.tool_dir("olm", &olm_dir_version(pin));
    let binaries: Vec<&str> = OLM_BINARIES.iter().map(|(_, b)| *b).collect();
    let stamp = stamp(&[
        OLM_MODULE,
        &pin.version,
        KWOK_MODULE,
        &pin.kwok,
        &binaries.join(" "),
        OLM_CRDS.0,
        &KWOK_STAGES.join(" "),
    ]);
    if is_complete(&dest, &stamp, &binaries) {
        return Ok(format!(
            "olm {} + kwok {}: up to date",
            pin.version, pin.kwok
        ));
    }
    let started = Instant::now();
    build_into(&dest, &stamp, |work| {
        let olm_dir = module_dir(OLM_MODULE, &pin.version, work)?;
        let kwok_dir = module_dir(KWOK_MODULE, &pin.kwok, work)?;
        copy_yaml_files(&olm_dir.join(OLM_CRDS.0), &work.join(OLM_CRDS.1))?;
        for stages in KWOK_STAGES {
            copy_yaml_files(&kwok_dir.join(stages), &work.join(KWOK_STAGES_DIR))?;
        }
        let module = format!(
            "module olmpack.dev/tools/olm\n\ngo {}\n\nrequire (\n\t{OLM_MODULE} {}\n\t{KWOK_MODULE} {}\n)\n",
            pin.go, pin.version, pin.kwok
        );
        let packages: Vec<(String, String)> = OLM_BINARIES
            .iter()
            .map(|(package, binary)| {
                let module = if *binary == "kwok" {
                    KWOK_MODULE
                } else {
                    OLM_MODULE
                };
                (format!("{module}/{package}"), (*binary).to_owned())
            })
            .collect();
        build_wrapper_module(
            work,
            &module,
            &BuildFlags {
                tags: "",
                ldflags: "",
                toolchain: None,
            },
            &packages,
        )
    })?;
    Ok(format!(
        "olm {} + kwok {}: built {} in {:.0?}",
        pin.version,
        pin.kwok,
        binaries.join(", "),
        started.elapsed()
    ))
}

/// OLM v1's catalogd and operator-controller from one wrapper module, plus its CRDs and
/// standard manifest copied from the same module version.
fn install_olmv1(pin: &OlmV1Pin, layout: &Layout, vendor: &Path) -> Result<String> {
    let dest = layout.tool_dir("olmv1", &pin.version);
    let binaries: Vec<&str> = OLMV1_BINARIES.iter().map(|(_, b)| *b).collect();
    let tags = pin.tags.join(",");
    let stamp = stamp(&[
        OLMV1_MODULE,
        &pin.version,
        &binaries.join(" "),
        &tags,
        &OLMV1_CRDS[0].0.join(" "),
        OLMV1_CRDS[0].1,
        &OLMV1_CRDS[1].0.join(" "),
        OLMV1_CRDS[1].1,
        OLMV1_MANIFEST,
    ]);
    let crds_there = OLMV1_CRDS.iter().all(|(_, to)| dest.join(to).is_dir());
    if is_complete(&dest, &stamp, &binaries) && crds_there {
        return Ok(format!("olm v1 {}: up to date", pin.version));
    }
    let started = Instant::now();
    build_into(&dest, &stamp, |work| {
        let dir = module_dir(OLMV1_MODULE, &pin.version, work)?;
        for (from, to) in OLMV1_CRDS {
            for crds in from {
                copy_yaml_files(&dir.join(crds), &work.join(to))?;
            }
        }
        let manifest = work.join(OLMV1_MANIFEST);
        fs::create_dir_all(manifest.parent().context("manifest path has a parent")?)?;
        fs::write(&manifest, fs::read(dir.join(OLMV1_MANIFEST))?)?;
        let go = go_directive(&fs::read_to_string(dir.join("go.mod"))?)
            .unwrap_or("1.22")
            .to_owned();
        let mut module = format!(
            "module olmpack.dev/tools/olmv1\n\ngo {go}\n\nrequire {OLMV1_MODULE} {}\n",
            pin.version
        );
        if let Some(source) = boxcutter_source(&pin.boxcutter, work, vendor)? {
            module.push_str(&format!(
                "\nreplace {BOXCUTTER_MODULE} => {}\n",
                source.display()
            ));
        }
        let packages: Vec<(String, String)> = OLMV1_BINARIES
            .iter()
            .map(|(package, binary)| (format!("{OLMV1_MODULE}/{package}"), (*binary).to_owned()))
            .collect();
        let flags = BuildFlags {
            tags: &tags,
            ldflags: "",
            toolchain: None,
        };
        build_wrapper_module(work, &module, &flags, &packages)?;
        let unpacked = work.join(BOXCUTTER_SRC);
        if unpacked.exists() {
            fs::remove_dir_all(&unpacked)?;
        }
        Ok(())
    })?;
    Ok(format!(
        "olm v1 {}: built {} in {:.0?}",
        pin.version,
        binaries.join(", "),
        started.elapsed()
    ))
}

/// Where in the build directory the vendored boxcutter source is unpacked.
const BOXCUTTER_SRC: &str = "boxcutter-src";

/// `None` when the module proxy serves boxcutter at `version`; else the directory its vendored
/// source tarball (`<vendor>/boxcutter-<version>.tar.xz`) is unpacked into, for a `replace`.
fn boxcutter_source(version: &str, work: &Path, vendor: &Path) -> Result<Option<PathBuf>> {
    if go_mod_download(BOXCUTTER_MODULE, version, work).is_ok() {
        return Ok(None);
    }
    let tarball = vendor.join(format!("boxcutter-{version}.tar.xz"));
    ensure!(
        tarball.is_file(),
        "the Go module proxy refuses {BOXCUTTER_MODULE}@{version} and its source is not at {}: put the tarball there or set OLMPACK_GO_VENDOR_DIR",
        tarball.display()
    );
    let to = work.join(BOXCUTTER_SRC);
    fs::create_dir_all(&to)?;
    run(Command::new("tar")
        .arg("-xJf")
        .arg(&tarball)
        .arg("-C")
        .arg(&to))?;
    // A `git archive` may or may not wrap the tree in one top directory.
    if to.join("go.mod").is_file() {
        return Ok(Some(to));
    }
    let mut dirs = fs::read_dir(&to)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("go.mod").is_file());
    match (dirs.next(), dirs.next()) {
        (Some(dir), None) => Ok(Some(dir)),
        _ => bail!("{} holds no single Go module", tarball.display()),
    }
}

/// OpenShift `release`'s API kinds as CRDs: the files of [`OPENSHIFT_CRDS`]' directories that
/// [`openshift_default_crd`] picks, copied from openshift/api at module version `api`. Before
/// openshift/api generated its manifests into `zz_generated.crd-manifests/` (release 4.14's
/// branch), they are in the API version's directory itself.
fn install_openshift_api(api: &str, release: &str, layout: &Layout) -> Result<String> {
    let dest = layout.tool_dir("openshift-api", api);
    let stamp = stamp(&[
        OPENSHIFT_API_MODULE,
        api,
        &OPENSHIFT_CRDS.0.join(" "),
        OPENSHIFT_CRDS.1,
    ]);
    if is_complete(&dest, &stamp, &[]) && dest.join(OPENSHIFT_CRDS.1).is_dir() {
        return Ok(format!("openshift api {release}: up to date"));
    }
    let started = Instant::now();
    build_into(&dest, &stamp, |work| {
        let dir = module_dir(OPENSHIFT_API_MODULE, api, work)?;
        let to = work.join(OPENSHIFT_CRDS.1);
        fs::create_dir_all(&to)?;
        for from in OPENSHIFT_CRDS.0 {
            let generated = dir.join(from);
            let from = match generated.is_dir() {
                true => generated,
                false => generated.parent().unwrap_or(&dir).to_owned(),
            };
            let mut copied = 0;
            for entry in
                fs::read_dir(&from).with_context(|| format!("reading {}", from.display()))?
            {
                let path = entry?.path();
                let name = path.file_name().unwrap_or_default().to_string_lossy();
                if openshift_default_crd(&name) {
                    // Module cache files are read-only; the copies must be removable.
                    fs::write(to.join(&*name), fs::read(&path)?)?;
                    copied += 1;
                }
            }
            ensure!(
                copied > 0,
                "{} holds no CRDs of the Default feature set; the build recipe needs updating",
                from.display()
            );
        }
        Ok(())
    })?;
    Ok(format!(
        "openshift api {release} ({api}): copied in {:.0?}",
        started.elapsed()
    ))
}

/// Whether an openshift/api CRD manifest is the one a self-managed cluster with the Default
/// feature set serves: `…_<plural>.crd.yaml`, `…-Default.crd.yaml`,
/// `…-SelfManagedHA[-Default].crd.yaml` — not TechPreview, DevPreview, CustomNoUpgrade, OKD or
/// Hypershift variants.
fn openshift_default_crd(name: &str) -> bool {
    let Some(stem) = name.strip_suffix(".crd.yaml") else {
        return false;
    };
    let last = stem.rsplit('_').next().unwrap_or(stem);
    let variants: Vec<&str> = last.split('-').skip(1).collect();
    matches!(
        variants.as_slice(),
        [] | ["Default"] | ["SelfManagedHA"] | ["SelfManagedHA", "Default"]
    )
}

/// Upstream validators' test data, each set copied whole from its module.
fn install_upstream_testdata(pin: &UpstreamPin, layout: &Layout) -> Result<String> {
    let mut done = Vec::new();
    for set in UPSTREAM_TESTDATA {
        let version = set.version(pin);
        let dest = layout.tool_dir(set.tool, version);
        let stamp = stamp(&[set.module, version, set.dir, TESTDATA_DIR]);
        if is_complete(&dest, &stamp, &[]) && dest.join(TESTDATA_DIR).is_dir() {
            done.push(format!("{} {version}: up to date", set.tool));
            continue;
        }
        let started = Instant::now();
        build_into(&dest, &stamp, |work| {
            let dir = module_dir(set.module, version, work)?;
            copy_tree(&dir.join(set.dir), &work.join(TESTDATA_DIR))
        })?;
        done.push(format!(
            "{} {version}: copied in {:.0?}",
            set.tool,
            started.elapsed()
        ));
    }
    Ok(format!("upstream test data: {}", done.join("; ")))
}

/// Copies the regular files and directories under `from` into `to` (created), as writable files.
fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            // Module cache files are read-only; the copies must be removable and replaceable.
            fs::write(&target, fs::read(entry.path())?)?;
        }
    }
    Ok(())
}

/// Copies every `*.yaml` file of `from` except kustomizations into `to` (created).
fn copy_yaml_files(from: &Path, to: &Path) -> Result<()> {
    fs::create_dir_all(to)?;
    let mut copied = 0;
    for entry in fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let path = entry?.path();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if name.ends_with(".yaml") && name != "kustomization.yaml" {
            // Module cache files are read-only; the copies must be removable and replaceable.
            fs::write(to.join(&*name), fs::read(&path)?)?;
            copied += 1;
        }
    }
    ensure!(
        copied > 0,
        "{} holds no YAML files; the build recipe needs updating",
        from.display()
    );
    Ok(())
}

/// Builds in `<dest>.tmp-<pid>` and renames it to `dest` only when `build` succeeded.
fn build_into(dest: &Path, stamp: &str, build: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    let parent = dest.parent().context("tool directory has no parent")?;
    fs::create_dir_all(parent)?;
    let work = parent.join(format!(
        ".{}.tmp-{}",
        dest.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    ));
    if work.exists() {
        fs::remove_dir_all(&work)?;
    }
    fs::create_dir_all(work.join("bin"))?;
    let result = build(&work).and_then(|()| {
        fs::write(work.join(".complete"), stamp)?;
        if dest.exists() {
            fs::remove_dir_all(dest)
                .with_context(|| format!("removing stale {}", dest.display()))?;
        }
        fs::rename(&work, dest).with_context(|| format!("moving build into {}", dest.display()))?;
        Ok(())
    });
    if result.is_err() {
        let _ = fs::remove_dir_all(&work);
    }
    result
}

/// Downloads `module@version` through the module proxy; returns `go mod download -json`.
fn go_mod_download(module: &str, version: &str, work: &Path) -> Result<serde_json::Value> {
    let out = Command::new("go")
        .args(["mod", "download", "-json", &format!("{module}@{version}")])
        .current_dir(work)
        .env("GOFLAGS", "-mod=mod")
        .output()
        .context("running `go mod download` (is Go installed?)")?;
    let info: serde_json::Value = serde_json::from_slice(&out.stdout)
        .with_context(|| format!("reading `go mod download` output for {module}@{version}"))?;
    if let Some(err) = info.get("Error").and_then(|e| e.as_str()) {
        bail!("the Go module proxy has no {module}@{version}: {err}");
    }
    Ok(info)
}

/// Downloads `module@version` through the module proxy and returns its go.mod text.
fn go_mod_of(module: &str, version: &str, work: &Path) -> Result<String> {
    let info = go_mod_download(module, version, work)?;
    let path = info
        .get("GoMod")
        .and_then(|p| p.as_str())
        .context("`go mod download` named no go.mod")?;
    fs::read_to_string(path).with_context(|| format!("reading {path}"))
}

/// Downloads `module@version` and returns the directory of its sources in the module cache.
fn module_dir(module: &str, version: &str, work: &Path) -> Result<PathBuf> {
    let info = go_mod_download(module, version, work)?;
    info.get("Dir")
        .and_then(|p| p.as_str())
        .map(PathBuf::from)
        .context("`go mod download` named no source directory")
}

/// The `k8s.io/*` modules that kubernetes' go.mod replaces with `./staging/...` paths.
fn staging_modules(gomod: &str) -> Result<Vec<String>> {
    let modules: Vec<String> = gomod
        .lines()
        .filter_map(|line| {
            let (from, to) = line.trim().trim_start_matches("replace").split_once("=>")?;
            to.trim()
                .starts_with("./staging/")
                .then(|| from.trim().to_owned())
        })
        .collect();
    ensure!(
        !modules.is_empty(),
        "k8s.io/kubernetes' go.mod replaces no staging modules; the build recipe needs updating"
    );
    Ok(modules)
}

/// Flags for `go build`.
struct BuildFlags<'a> {
    tags: &'a str,
    ldflags: &'a str,
    /// GOTOOLCHAIN (`go1.22.5`); `None` builds with the local Go.
    toolchain: Option<&'a str>,
}

/// `v1.37.2` → `("1", "37")`.
fn kube_major_minor(version: &str) -> Result<(&str, &str)> {
    let mut parts = version.trim_start_matches('v').split('.');
    match (parts.next(), parts.next()) {
        (Some(major), Some(minor)) => Ok((major, minor)),
        _ => bail!("kubernetes version {version:?} is not vMAJOR.MINOR.PATCH"),
    }
}

fn go_directive(gomod: &str) -> Option<&str> {
    gomod
        .lines()
        .find_map(|line| line.strip_prefix("go ").map(str::trim))
}

/// Writes a wrapper module that imports `packages` and builds each `(package, binary)` into
/// `work/bin/<binary>`.
fn build_wrapper_module(
    work: &Path,
    module: &str,
    flags: &BuildFlags<'_>,
    packages: &[(String, String)],
) -> Result<()> {
    let src = work.join("src");
    fs::create_dir_all(&src)?;
    fs::write(src.join("go.mod"), module)?;
    let imports: String = packages
        .iter()
        .map(|(p, _)| format!("\t_ \"{p}\"\n"))
        .collect();
    fs::write(
        src.join("tools.go"),
        format!("//go:build tools\n\npackage tools\n\nimport (\n{imports})\n"),
    )?;
    let go = |args: &[&str]| -> Result<()> {
        let mut cmd = Command::new("go");
        cmd.args(args)
            .current_dir(&src)
            .env("GOFLAGS", "-mod=mod")
            .env("GOTOOLCHAIN", flags.toolchain.unwrap_or("local"));
        run(&mut cmd)
    };
    go(&["mod", "tidy"])?;
    let tag_arg = format!("-tags={}", flags.tags);
    let ldflags_arg = format!("-ldflags={}", flags.ldflags);
    for (package, binary) in packages {
        let out = format!("../bin/{binary}");
        let mut args = vec!["build", "-o", &out];
        if !flags.tags.is_empty() {
            args.push(&tag_arg);
        }
        if !flags.ldflags.is_empty() {
            args.push(&ldflags_arg);
        }
        args.push(package);
        go(&args)?;
    }
    fs::remove_dir_all(&src)?;
    Ok(())
}

fn run(cmd: &mut Command) -> Result<()> {
    let shown = format!("{cmd:?}");
    let status = cmd.status().with_context(|| format!("starting {shown}"))?;
    ensure!(status.success(), "{shown} failed with {status}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openshift_crds_are_those_of_a_self_managed_default_cluster() {
        let picked: Vec<&str> = [
            "routes.crd.yaml",
            "00_consolelinks.crd.yaml",
            "0000_00_cluster-version-operator_01_clusterversions-Default.crd.yaml",
            "0000_00_cluster-version-operator_01_clusterversions-OKD.crd.yaml",
            "0000_10_config-operator_01_apiservers-TechPreviewNoUpgrade.crd.yaml",
            "0000_10_config-operator_01_schedulers-Hypershift.crd.yaml",
            "0000_10_config-operator_01_schedulers-SelfManagedHA-Default.crd.yaml",
            "0000_10_config-operator_01_infrastructures-Hypershift-CustomNoUpgrade.crd.yaml",
            "0000_03_config-operator_01_securitycontextconstraints.crd.yaml",
            "doc.go",
        ]
        .into_iter()
        .filter(|name| openshift_default_crd(name))
        .collect();
        assert_eq!(
            picked,
            [
                "routes.crd.yaml",
                "00_consolelinks.crd.yaml",
                "0000_00_cluster-version-operator_01_clusterversions-Default.crd.yaml",
                "0000_10_config-operator_01_schedulers-SelfManagedHA-Default.crd.yaml",
                "0000_03_config-operator_01_securitycontextconstraints.crd.yaml",
            ]
        );
    }

    #[test]
    fn staging_modules_are_read_from_the_replace_block() {
        let gomod = "module k8s.io/kubernetes\n\nreplace (\n\tk8s.io/api => ./staging/src/k8s.io/api\n\tgithub.com/x/y => github.com/x/y v1.0.0\n\tk8s.io/kms => ./staging/src/k8s.io/kms\n)\n";
        assert_eq!(
            staging_modules(gomod).unwrap(),
            vec!["k8s.io/api".to_owned(), "k8s.io/kms".to_owned()]
        );
        assert!(staging_modules("module x\n").is_err());
    }

    #[test]
    fn each_pinned_kubernetes_minor_is_built_with_its_own_staging_release() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let pins = Pins::load(&root).unwrap();
        let builds = pins.kubernetes.builds();
        assert_eq!(builds[0].version, pins.kubernetes.version);
        assert!(builds.iter().any(|b| b.version.starts_with("v1.27.")));
        for build in &builds {
            assert_eq!(
                build.staging,
                build.version.replacen("v1.", "v0.", 1),
                "{}",
                build.version
            );
        }
        let versions: std::collections::BTreeSet<_> = builds.iter().map(|b| b.version).collect();
        assert_eq!(versions.len(), builds.len(), "a minor is pinned twice");
    }

    #[test]
    fn the_pin_file_of_this_repository_parses() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let pins = Pins::load(&root).unwrap();
        assert!(pins.kubernetes.version.starts_with("v1."));
        assert!(pins.go.contains_key("opm"));
        let vars = Layout {
            cache: PathBuf::from("/cache"),
        }
        .test_env(&pins);
        let opm = vars.iter().find(|(k, _)| k == "OLMPACK_OPM").unwrap();
        assert_eq!(
            opm.1,
            OsString::from(format!("/cache/opm/{}/bin/opm", pins.go["opm"].version))
        );
        let kwok = vars.iter().find(|(k, _)| k == "OLMPACK_KWOK").unwrap();
        assert_eq!(
            kwok.1,
            OsString::from(format!(
                "/cache/olm/{}-kwok-{}/bin/kwok",
                pins.olm.version, pins.olm.kwok
            ))
        );
        assert!(vars.iter().any(|(k, _)| k == "OLMPACK_KUBE_SCHEDULER"));
        let helm = vars.iter().find(|(k, _)| k == "OLMPACK_HELM").unwrap();
        assert_eq!(
            helm.1,
            OsString::from(format!("/cache/helm/{}/bin/helm", pins.go["helm"].version))
        );
        let chart = vars
            .iter()
            .find(|(k, _)| k == "OLMPACK_KUEUE_CHART")
            .unwrap();
        assert_eq!(
            chart.1,
            OsString::from(format!(
                "/cache/kueue-chart/{}/testdata",
                pins.upstream.kueue
            ))
        );
    }

    /// The stamp setup writes for OLM v1 is the one the cache already holds for its layout:
    /// module, version, binaries, build tags, CRD source directories, then where the CRDs and
    /// the manifest are.
    #[test]
    fn the_olm_v1_stamp_names_its_layout() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let pins = Pins::load(&root).unwrap();
        let dir = std::env::temp_dir().join(format!("xtask-olmv1-{}", std::process::id()));
        let layout = Layout { cache: dir.clone() };
        let dest = layout.tool_dir("olmv1", &pins.olmv1.version);
        fs::create_dir_all(dest.join("bin")).unwrap();
        fs::create_dir_all(dest.join("crds")).unwrap();
        fs::create_dir_all(dest.join("crds-experimental")).unwrap();
        for bin in ["catalogd", "operator-controller"] {
            fs::write(dest.join("bin").join(bin), "").unwrap();
        }
        fs::write(
            dest.join(".complete"),
            format!(
                "github.com/operator-framework/operator-controller\n{}\ncatalogd operator-controller\ncontainers_image_openpgp\nhelm/olmv1/base/operator-controller/crd/standard helm/olmv1/base/catalogd/crd/standard\ncrds\nhelm/olmv1/base/operator-controller/crd/experimental helm/olmv1/base/catalogd/crd/experimental\ncrds-experimental\nmanifests/standard.yaml\n",
                pins.olmv1.version
            ),
        )
        .unwrap();
        let done = install_olmv1(&pins.olmv1, &layout, Path::new("/nonexistent")).unwrap();
        assert_eq!(done, format!("olm v1 {}: up to date", pins.olmv1.version));
        let vars = layout.test_env(&pins);
        let var = |name: &str| vars.iter().find(|(k, _)| k == name).unwrap().1.clone();
        assert_eq!(
            var("OLMPACK_OPERATOR_CONTROLLER"),
            dest.join("bin/operator-controller")
        );
        assert_eq!(
            var("OLMPACK_OLMV1_MANIFEST"),
            dest.join("manifests/standard.yaml")
        );
        assert_eq!(
            var("OLMPACK_OLMV1_EXPERIMENTAL_CRDS"),
            dest.join("crds-experimental")
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_directory_without_a_matching_stamp_is_rebuilt() {
        let dir = std::env::temp_dir().join(format!("xtask-stamp-{}", std::process::id()));
        fs::create_dir_all(dir.join("bin")).unwrap();
        fs::write(dir.join("bin/tool"), "").unwrap();
        assert!(!is_complete(&dir, "a\n", &["tool"]));
        fs::write(dir.join(".complete"), "a\n").unwrap();
        assert!(is_complete(&dir, "a\n", &["tool"]));
        assert!(!is_complete(&dir, "b\n", &["tool"]));
        assert!(!is_complete(&dir, "a\n", &["tool", "other"]));
        fs::remove_dir_all(&dir).unwrap();
    }
}
