//! A kubebuilder or operator-sdk project as a release plan (`olmpack plan init`).
//!
//! Contract: [`Project::parse`] reads the `PROJECT` file as kubebuilder writes it (YAML:
//! `projectName`, `domain`, `layout`, `plugins`, `resources[]` with `group`, `version`, `kind`
//! and `webhooks`); other fields are ignored. A `layout` or `plugins` key of operator-sdk's
//! (`*.sdk.operatorframework.io/…`, as `operator-sdk init` writes:
//! `manifests.sdk.operatorframework.io/v2`, `scorecard.sdk.operatorframework.io/v2`,
//! `helm.sdk.operatorframework.io/v1`) makes it an operator-sdk project. [`plan_text`] writes
//! the plan of one release of the project: for kubebuilder its `dist/install.yaml` (what `make
//! build-installer` writes) as the release's manifests and its `config/samples` as samples; for
//! operator-sdk its `bundle/manifests` (what `make bundle` writes: the CSV, whose metadata and
//! `alm-examples` the plan takes) and output directories apart from operator-sdk's own
//! `bundle/`; the images under one repository with `{version}` in the tags (kubebuilder's
//! `controller:latest` would make every release run the same image), and comments saying what
//! to edit and how the next release is added. Every value is written by the YAML serializer
//! and comment text cannot end its comment. Pure: the CLI reads the files and writes the plan.

use std::fmt::Write as _;
use std::path::PathBuf;

use olmpack_model::plan::Output;
use serde::{Deserialize, Serialize};

/// A `PROJECT` file that cannot become a plan.
#[derive(Debug, thiserror::Error)]
pub enum KubebuilderError {
    /// The file is not YAML of the PROJECT file's shape.
    #[error("{file}: not a kubebuilder PROJECT file: {problem}")]
    Parse {
        /// The PROJECT file.
        file: String,
        /// What is wrong, in our words.
        problem: String,
    },
    /// `projectName` is missing.
    #[error("{file}: projectName is not set (kubebuilder init --project-name sets it)")]
    NoName {
        /// The PROJECT file.
        file: String,
    },
    /// A file the plan would name has a name that is not UTF-8, which YAML text cannot hold.
    #[error(
        "{}: its name is not UTF-8, so olmpack.yaml cannot name it; nothing was written (rename it)",
        file.display()
    )]
    NotUtf8 {
        /// The file, relative to the project.
        file: PathBuf,
    },
    /// The plan could not be printed as YAML.
    #[error("cannot print the plan as YAML: {0}")]
    Print(String),
    /// `projectName` is not a valid OLM package name.
    #[error("{file}: projectName {name:?} cannot be the OLM package name: {problem}")]
    BadName {
        /// The PROJECT file.
        file: String,
        /// The name.
        name: String,
        /// Why not.
        problem: String,
    },
}

/// A PROJECT that cannot become a plan is refused (exit 1); failing to print one is not.
impl crate::refusal::Refusal for KubebuilderError {
    fn refuses_input(&self) -> bool {
        !matches!(self, KubebuilderError::Print(_))
    }
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ProjectFile {
    project_name: Option<String>,
    #[serde(default)]
    domain: String,
    /// One plugin key (PROJECT version 3 of kubebuilder 3.0) or a list of them.
    #[serde(default)]
    layout: serde_json::Value,
    /// Plugin keys with their settings.
    #[serde(default)]
    plugins: serde_json::Value,
    #[serde(default)]
    resources: Vec<Resource>,
}

#[derive(Debug, Deserialize)]
struct Resource {
    /// A Kubernetes built-in type (`kubebuilder create webhook --group core --kind Pod`):
    /// its group is Kubernetes' own, never under the project's domain.
    #[serde(default)]
    core: bool,
    /// The Go package of the type (`k8s.io/api/...` for built-in types).
    #[serde(default)]
    path: String,
    #[serde(default)]
    group: String,
    #[serde(default)]
    domain: Option<String>,
    version: String,
    kind: String,
    #[serde(default)]
    webhooks: Option<Webhooks>,
}

#[derive(Debug, Default, Deserialize)]
struct Webhooks {
    #[serde(default)]
    conversion: bool,
    #[serde(default)]
    defaulting: bool,
    #[serde(default)]
    validation: bool,
}

impl Resource {
    /// The API group as the apiserver names it: a built-in type's own (`core` for the
    /// group without a name, `apps`…), else the resource's group under its domain (the
    /// project's, unless the resource names one).
    fn group(&self, project_domain: &str) -> String {
        if self.core || self.path.starts_with("k8s.io/api/") {
            return match self.group.as_str() {
                "" => "core".to_owned(),
                group => group.to_owned(),
            };
        }
        let domain = self.domain.as_deref().unwrap_or(project_domain);
        match (self.group.is_empty(), domain.is_empty()) {
            (true, _) => domain.to_owned(),
            (false, true) => self.group.clone(),
            (false, false) => format!("{}.{domain}", self.group),
        }
    }
}

/// What a plan needs from a kubebuilder project.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Project {
    /// `projectName`: the OLM package name.
    pub name: String,
    /// Each API as `Kind (group/version)`, in the PROJECT file's order.
    pub apis: Vec<String>,
    /// Whether any resource has a conversion webhook.
    pub conversion: bool,
    /// Whether any resource has a defaulting or validating webhook.
    pub admission: bool,
    /// The first `layout` or `plugins` key of operator-sdk's, when the project is one.
    pub operator_sdk: Option<String>,
}

/// The first plugin key of `layout` (one or a list) and `plugins` that is operator-sdk's
/// (`<name>.sdk.operatorframework.io/<version>`).
fn operator_sdk_key(layout: &serde_json::Value, plugins: &serde_json::Value) -> Option<String> {
    let layout = match layout {
        serde_json::Value::String(key) => vec![key.as_str()],
        serde_json::Value::Array(keys) => keys.iter().filter_map(|k| k.as_str()).collect(),
        _ => Vec::new(),
    };
    let plugins = plugins.as_object().into_iter().flat_map(|p| p.keys());
    let sdk = |key: &&str| {
        key.split_once('/')
            .is_some_and(|(name, _)| name.ends_with(".sdk.operatorframework.io"))
    };
    layout
        .into_iter()
        .chain(plugins.map(String::as_str))
        .find(sdk)
        .map(str::to_owned)
}

impl Project {
    /// Reads the text of a PROJECT file; `file` names it in errors.
    pub fn parse(file: &str, text: &str) -> Result<Project, KubebuilderError> {
        let parsed: ProjectFile =
            olmpack_model::yaml::from_str(text).map_err(|e| KubebuilderError::Parse {
                file: file.to_owned(),
                problem: e.to_string(),
            })?;
        let name = parsed
            .project_name
            .ok_or_else(|| KubebuilderError::NoName {
                file: file.to_owned(),
            })?;
        if let Some(problem) = olmpack_model::names::dns1123_label_problem(&name) {
            return Err(KubebuilderError::BadName {
                file: file.to_owned(),
                name,
                problem,
            });
        }
        let apis = parsed
            .resources
            .iter()
            .map(|r| format!("{} ({}/{})", r.kind, r.group(&parsed.domain), r.version))
            .collect();
        let hooks = || parsed.resources.iter().filter_map(|r| r.webhooks.as_ref());
        Ok(Project {
            name,
            apis,
            conversion: hooks().any(|w| w.conversion),
            admission: hooks().any(|w| w.defaulting || w.validation),
            operator_sdk: operator_sdk_key(&parsed.layout, &parsed.plugins),
        })
    }
}

/// The image kubebuilder's scaffolding gives the manager when `make build-installer` runs
/// without `IMG`.
pub const DEFAULT_IMAGE: &str = "controller:latest";

/// What `plan init` needs to know of the release's manifests: `dist/install.yaml`, or the
/// files of operator-sdk's `bundle/manifests`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Installer {
    /// Whether it holds a cert-manager Certificate (kubebuilder's metrics certificate, say).
    pub cert_manager: bool,
    /// The images of its Deployments' containers (and its CSV's), in order.
    pub images: Vec<String>,
    /// The `spec.version` of its ClusterServiceVersion, when it has one.
    pub csv_version: Option<String>,
}

impl Installer {
    /// Reads the installer's YAML stream as Go would; a stream that does not parse gives an
    /// empty installer (`olmpack generate` reports it, naming the document).
    pub fn read(text: &str) -> Installer {
        Self::read_files([text])
    }

    /// [`Installer::read`] over several files (a bundle's `manifests/`), in the order given.
    pub fn read_files<'a>(texts: impl IntoIterator<Item = &'a str>) -> Installer {
        let docs: Vec<serde_json::Value> = texts
            .into_iter()
            .flat_map(|text| {
                olmpack_model::yaml::from_multi_str_go(text).map_or_else(|_| Vec::new(), |(d, _)| d)
            })
            .collect();
        let cert_manager = docs.iter().any(|doc| {
            doc["kind"] == "Certificate"
                && doc["apiVersion"]
                    .as_str()
                    .is_some_and(|v| v.starts_with("cert-manager.io/"))
        });
        let csvs = || {
            docs.iter()
                .filter(|doc| doc["kind"] == "ClusterServiceVersion")
        };
        let csv_deployments = csvs()
            .flat_map(|csv| csv["spec"]["install"]["spec"]["deployments"].as_array())
            .flatten()
            .map(|d| &d["spec"]);
        let deployments = docs.iter().filter(|doc| doc["kind"] == "Deployment");
        let images = deployments
            .map(|doc| &doc["spec"])
            .chain(csv_deployments)
            .flat_map(|spec| spec["template"]["spec"]["containers"].as_array())
            .flatten()
            .filter_map(|c| c["image"].as_str().map(str::to_owned))
            .collect();
        let csv_version = csvs()
            .find_map(|csv| csv["spec"]["version"].as_str())
            .map(str::to_owned);
        Installer {
            cert_manager,
            images,
            csv_version,
        }
    }

    /// Whether a Deployment still runs [`DEFAULT_IMAGE`].
    pub fn runs_default_image(&self) -> bool {
        self.images.iter().any(|i| i == DEFAULT_IMAGE)
    }
}

/// The choices of one `plan init`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InitOptions {
    /// The release's version (semantic, no `v`).
    pub version: String,
    /// Where the images go: `<repository>:v{version}`, `<repository>-bundle:v{version}`,
    /// `<repository>-catalog:latest`.
    pub repository: String,
    /// The channel the release is published to.
    pub channel: String,
    /// The release's manifests, relative to the plan (`dist/install.yaml`).
    pub manifests: PathBuf,
    /// The samples, relative to the plan.
    pub samples: Vec<PathBuf>,
    /// Whether the manifests hold a cert-manager Certificate (kubebuilder's metrics
    /// certificate, say).
    pub cert_manager: bool,
    /// The plan's output directories, when not `bundle` and `catalog` (an operator-sdk
    /// project's own `bundle/` is `make bundle`'s).
    pub output: Option<Output>,
}

/// Where `plan init` has `olmpack generate` write in an operator-sdk project, whose `bundle/`
/// is `make bundle`'s.
pub fn operator_sdk_output() -> Output {
    Output {
        bundles: PathBuf::from("olmpack/bundle"),
        catalog: PathBuf::from("olmpack/catalog"),
    }
}

/// Where operator-sdk's `make bundle` writes the bundle's manifests, relative to the project.
pub const OPERATOR_SDK_MANIFESTS: &str = "bundle/manifests";

/// The plan `olmpack plan init` writes (module docs). Every value goes through the YAML
/// serializer, so no text from the PROJECT file, the install manifests' directory or the
/// arguments can add a line, a key or a release; text in a comment has its line breaks and
/// other control characters replaced by spaces, so it cannot end the comment.
pub fn plan_text(project: &Project, options: &InitOptions) -> Result<String, KubebuilderError> {
    let name = &project.name;
    let repo = &options.repository;
    let output = options.output.clone().unwrap_or_default();
    let (tool, csv) = match project.operator_sdk {
        Some(_) => ("operator-sdk", Csv::from_bundle()),
        None => ("kubebuilder", Csv::named(name)),
    };
    let mut out = comment(&[
        &format!("Release plan of the {tool} project {name}, written by `olmpack plan init`."),
        &format!("APIs: {}.", project.apis.join(", ")),
        &format!(
            "Edit the CSV metadata and the image repository; `olmpack generate` writes {}/",
            plan_path(&output.bundles)?
        ),
        &format!(
            "and {}/, `olmpack upgrade test` runs every upgrade edge on a real apiserver.",
            plan_path(&output.catalog)?
        ),
    ]);
    let head = Head {
        package: name,
        default_channel: &options.channel,
        channels: [&options.channel],
        operator_image: format!("{repo}:v{{version}}"),
        bundle_image: format!("{repo}-bundle:v{{version}}"),
        catalog_image: format!("{repo}-catalog:latest"),
        csv,
    };
    out.push_str(&yaml(&head)?);
    if project.operator_sdk.is_some() {
        out.push_str(&comment(&[
            "An empty displayName, description or provider name is taken from the CSV of the",
            "release's manifests (`make bundle`'s), as is the rest of its metadata the plan does",
            "not set, and its alm-examples. operator-sdk's own bundle/ is `make bundle`'s, so",
            "olmpack writes elsewhere:",
        ]));
        out.push_str(&yaml(&OutputKey { output: &output })?);
    } else if let Some(output) = &options.output {
        out.push_str(&yaml(&OutputKey { output })?);
    }
    if options.cert_manager {
        out.push_str(&comment(&[
            "The manifests hold a cert-manager Certificate. OLM runs no cert-manager: it serves",
            "webhooks with certificates of its own, and a Secret another Certificate would make",
            "never exists, so such a Certificate is left out and the Deployment no longer mounts",
            "its Secret (controller-runtime then serves metrics with its own certificate).",
        ]));
        out.push_str("certManagerCertificates: drop\n");
    }
    out.push_str(&comment(match project.operator_sdk {
        Some(_) => &[
            "One entry per release. For the next one, keep this release's bundle/manifests (say",
            "releases/VERSION/manifests), point this entry at it, run `make bundle VERSION=...`",
            "and add the new release.",
        ],
        None => &[
            "One entry per release. For the next one, keep this release's install.yaml (say",
            "releases/VERSION/install.yaml), point this entry at it, and add the new release.",
        ],
    }));
    let release = ReleaseEntry {
        version: &options.version,
        manifests: plan_path(&options.manifests)?,
        samples: options
            .samples
            .iter()
            .map(|s| plan_path(s))
            .collect::<Result<_, _>>()?,
    };
    out.push_str(&yaml(&Releases {
        releases: [release],
    })?);
    Ok(out)
}

/// The plan's keys before its releases, in the order written.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Head<'a> {
    package: &'a str,
    default_channel: &'a str,
    channels: [&'a str; 1],
    operator_image: String,
    bundle_image: String,
    catalog_image: String,
    csv: Csv<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Csv<'a> {
    display_name: &'a str,
    description: String,
    provider: Provider<'a>,
}

impl<'a> Csv<'a> {
    /// A kubebuilder project's: named after the project, to edit.
    fn named(name: &'a str) -> Self {
        Csv {
            display_name: name,
            description: format!("The {name} operator."),
            provider: Provider { name },
        }
    }

    /// An operator-sdk project's: empty, so the bundle's CSV gives each.
    fn from_bundle() -> Self {
        Csv {
            display_name: "",
            description: String::new(),
            provider: Provider { name: "" },
        }
    }
}

#[derive(Serialize)]
struct Provider<'a> {
    name: &'a str,
}

#[derive(Serialize)]
struct OutputKey<'a> {
    output: &'a Output,
}

#[derive(Serialize)]
struct Releases<'a> {
    releases: [ReleaseEntry<'a>; 1],
}

#[derive(Serialize)]
struct ReleaseEntry<'a> {
    version: &'a str,
    manifests: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    samples: Vec<String>,
}

/// `value` as YAML, its keys in the order of its fields.
fn yaml<T: Serialize>(value: &T) -> Result<String, KubebuilderError> {
    let mut text =
        serde_saphyr::to_string(value).map_err(|e| KubebuilderError::Print(e.to_string()))?;
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(text)
}

/// `path` as the plan names it (with `/`); a name that is not UTF-8 cannot be written in the
/// plan's text, so it is refused naming the file.
fn plan_path(path: &std::path::Path) -> Result<String, KubebuilderError> {
    match path.to_str() {
        Some(_) => Ok(olmpack_oci::input::slash_path(path)),
        None => Err(KubebuilderError::NotUtf8 {
            file: path.to_path_buf(),
        }),
    }
}

/// `lines` as YAML comment lines; a control character or a Unicode line or paragraph
/// separator in a line becomes a space, so no text ends its comment.
fn comment(lines: &[&str]) -> String {
    let mut out = String::new();
    for line in lines {
        let clean: String = line
            .chars()
            .map(|c| match c {
                c if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{feff}') => ' ',
                c => c,
            })
            .collect();
        let _ = writeln!(out, "# {}", clean.trim_end());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROJECT: &str = "domain: tutorial.kubebuilder.io\nlayout:\n- go.kubebuilder.io/v4\nprojectName: project\nrepo: tutorial.kubebuilder.io/project\nresources:\n- api: {crdVersion: v1, namespaced: true}\n  group: batch\n  kind: CronJob\n  version: v1\n  webhooks: {conversion: true, spoke: [v2], webhookVersion: v1}\n- group: batch\n  kind: CronJob\n  version: v2\n  webhooks: {defaulting: true, validation: true}\nversion: \"3\"\n";

    #[test]
    fn a_project_file_gives_name_apis_and_webhooks() {
        let project = Project::parse("PROJECT", PROJECT).unwrap();
        assert_eq!(
            project,
            Project {
                name: "project".into(),
                apis: vec![
                    "CronJob (batch.tutorial.kubebuilder.io/v1)".into(),
                    "CronJob (batch.tutorial.kubebuilder.io/v2)".into()
                ],
                conversion: true,
                admission: true,
                operator_sdk: None,
            }
        );
    }

    #[test]
    fn built_in_and_external_types_keep_their_own_groups() {
        let text = "domain: testproject.org\nprojectName: project-v4\nresources:\n\
            - {domain: testproject.org, group: crew, kind: Captain, version: v1}\n\
            - {domain: io, external: true, group: cert-manager, kind: Issuer, version: v1}\n\
            - {core: true, group: core, kind: Pod, path: k8s.io/api/core/v1, version: v1}\n\
            - {core: true, group: apps, kind: Deployment, path: k8s.io/api/apps/v1, version: v1}\n\
            - {group: batch, kind: Job, path: k8s.io/api/batch/v1, version: v1}\n";
        let project = Project::parse("PROJECT", text).unwrap();
        assert_eq!(
            project.apis,
            [
                "Captain (crew.testproject.org/v1)",
                "Issuer (cert-manager.io/v1)",
                "Pod (core/v1)",
                "Deployment (apps/v1)",
                "Job (batch/v1)",
            ]
        );
    }

    #[test]
    fn operator_sdk_projects_are_told_by_their_plugin_keys() {
        let cases = [
            // operator-sdk v1.42.3's Go sample: kubebuilder's layout, operator-sdk's plugins.
            (
                "layout: [go.kubebuilder.io/v4]\nplugins:\n  deploy-image.go.kubebuilder.io/v1-alpha: {}\n  manifests.sdk.operatorframework.io/v2: {}\n  scorecard.sdk.operatorframework.io/v2: {}\n",
                Some("manifests.sdk.operatorframework.io/v2"),
            ),
            // operator-sdk's Helm and Ansible projects: its layout.
            (
                "layout: [helm.sdk.operatorframework.io/v1]\n",
                Some("helm.sdk.operatorframework.io/v1"),
            ),
            // kubebuilder 3.0's one-string layout.
            (
                "layout: go.kubebuilder.io/v3\nplugins: {scorecard.sdk.operatorframework.io/v2: {}}\n",
                Some("scorecard.sdk.operatorframework.io/v2"),
            ),
            // kubebuilder alone, with its own plugins.
            (
                "layout: [go.kubebuilder.io/v4]\nplugins: {deploy-image.go.kubebuilder.io/v1-alpha: {}}\n",
                None,
            ),
            ("layout: [sdk.operatorframework.io.example/v1]\n", None),
        ];
        for (text, want) in cases {
            let text = format!("projectName: p\n{text}");
            let project = Project::parse("PROJECT", &text).unwrap();
            assert_eq!(project.operator_sdk.as_deref(), want, "{text}");
        }
    }

    #[test]
    fn a_bundle_gives_its_csv_version_and_images() {
        let csv = "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nspec:\n  version: 0.0.1\n  install:\n    spec:\n      deployments:\n      - spec: {template: {spec: {containers: [{name: m, image: \"controller:latest\"}]}}}\n";
        let installer = Installer::read_files(["kind: Service\n", csv]);
        assert_eq!(installer.csv_version.as_deref(), Some("0.0.1"));
        assert!(installer.runs_default_image() && !installer.cert_manager);
        assert_eq!(Installer::read("kind: Service\n").csv_version, None);
    }

    #[test]
    fn the_installer_is_read_as_objects() {
        let text = "apiVersion: apps/v1\nkind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n      - {name: manager, image: \"controller:latest\"}\n---\n# image: controller:latest in a comment\napiVersion: cert-manager.io/v1\nkind: Certificate\n";
        let installer = Installer::read(text);
        assert_eq!(installer.images, ["controller:latest"]);
        assert!(installer.cert_manager && installer.runs_default_image());
        let pinned = Installer::read("kind: ConfigMap\ndata: {image: controller:latest}\n");
        assert_eq!(pinned, Installer::default());
    }

    #[test]
    fn bad_project_files_are_named() {
        let cases = [
            (
                "domain: x\n",
                "PROJECT: projectName is not set (kubebuilder init --project-name sets it)",
            ),
            (
                "projectName: My_Project\n",
                "PROJECT: projectName \"My_Project\" cannot be the OLM package name: ",
            ),
            ("- a\n- b\n", "PROJECT: not a kubebuilder PROJECT file: "),
        ];
        for (text, message) in cases {
            let err = Project::parse("PROJECT", text).unwrap_err().to_string();
            assert!(err.starts_with(message), "{text:?}: {err}");
        }
    }
}
