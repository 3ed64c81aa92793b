//! `olmpack plan …`: inspect the release plan.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use olmpack::kubebuilder::{self, InitOptions, Project};
use olmpack_model::plan;
use olmpack_model::upgrade_graph::UpgradeGraph;

use super::{CmdResult, Failure};
use olmpack::refusal::CommandError;

#[derive(Debug, clap::Subcommand)]
pub enum PlanCommand {
    /// Print the JSON Schema of olmpack.yaml (for editors: `# yaml-language-server: $schema=…`).
    Schema,
    /// Print each release's computed upgrade edges (replaces, skips, skipRange).
    Edges {
        /// The release plan.
        #[arg(long, default_value = plan::DEFAULT_PLAN_FILE)]
        plan: PathBuf,
    },
    /// Write a release plan (olmpack.yaml) into a kubebuilder or operator-sdk project: its
    /// PROJECT file names the package. kubebuilder: `dist/install.yaml` (run `make
    /// build-installer` first) is the release's manifests, `config/samples` its samples; a
    /// cert-manager Certificate in the manifests is left out (OLM runs no cert-manager).
    /// operator-sdk (PROJECT names an `*.sdk.operatorframework.io` plugin): `bundle/manifests`
    /// (run `make bundle` first) is the release's manifests, its CSV gives the metadata and
    /// samples, and olmpack writes to olmpack/bundle and olmpack/catalog, apart from
    /// operator-sdk's bundle/. Refuses to replace an olmpack.yaml without --force.
    Init {
        /// The project's directory.
        #[arg(long, default_value = ".")]
        project: PathBuf,
        /// The release's version [default: operator-sdk: the bundle CSV's `spec.version`;
        /// kubebuilder: 0.1.0].
        #[arg(long, value_name = "VERSION")]
        release_version: Option<String>,
        /// The image repository: the operator image is REPOSITORY:v{version}, the bundle image
        /// REPOSITORY-bundle:v{version}, the catalog image REPOSITORY-catalog:latest.
        /// Default: registry.example/<projectName>, to edit.
        #[arg(long)]
        repository: Option<String>,
        /// The channel the release is published to.
        #[arg(long, default_value = "stable")]
        channel: String,
        /// Replace an existing olmpack.yaml.
        #[arg(long)]
        force: bool,
    },
}

pub fn run(cmd: PlanCommand, policy: &olmpack_oci::input::Policy) -> CmdResult {
    match cmd {
        PlanCommand::Init {
            project,
            release_version,
            repository,
            channel,
            force,
        } => {
            let limits = &policy.limits;
            return init(
                &project,
                release_version,
                repository,
                channel,
                force,
                limits,
            );
        }
        PlanCommand::Schema => print!("{}", plan::schema::json_schema()),
        PlanCommand::Edges { plan: path } => {
            let loaded = olmpack::plan::load(&path, policy)?;
            let graph = UpgradeGraph::from_plan(&loaded);
            for node in graph.nodes() {
                let e = &node.csv;
                println!("{}", node.bundle);
                println!("  replaces: {}", e.replaces.as_deref().unwrap_or("-"));
                println!(
                    "  skips: {}",
                    if e.skips.is_empty() {
                        "-".to_owned()
                    } else {
                        e.skips.join(", ")
                    }
                );
                println!("  skipRange: {}", e.skip_range.as_deref().unwrap_or("-"));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `olmpack plan init`: reads the kubebuilder or operator-sdk project, writes its plan
/// (checked first).
fn init(
    dir: &Path,
    version: Option<String>,
    repository: Option<String>,
    channel: String,
    force: bool,
    limits: &olmpack_oci::input::Limits,
) -> CmdResult {
    let project_file = dir.join("PROJECT");
    let project = Project::parse(
        &project_file.display().to_string(),
        &olmpack_oci::input::text(&project_file, limits)?,
    )?;
    let (manifests, installer) = match &project.operator_sdk {
        Some(key) => sdk_manifests(dir, key, limits)?,
        None => installer_manifests(dir, limits)?,
    };
    let sdk = project.operator_sdk.is_some();
    let version = version
        .or_else(|| installer.csv_version.clone().filter(|_| sdk))
        .unwrap_or_else(|| "0.1.0".to_owned());
    let options = InitOptions {
        cert_manager: installer.cert_manager,
        // operator-sdk's samples are the CSV's alm-examples, taken with it.
        samples: if sdk { Vec::new() } else { samples(dir)? },
        repository: repository.unwrap_or_else(|| format!("registry.example/{}", project.name)),
        version,
        channel,
        output: sdk.then(kubebuilder::operator_sdk_output),
        manifests,
    };
    let install = dir.join(&options.manifests);
    let text = kubebuilder::plan_text(&project, &options)?;
    let target = dir.join(plan::DEFAULT_PLAN_FILE);
    if target.exists() && !force {
        return Err(Failure(format!(
            "{}: exists; nothing was written (--force replaces it)",
            target.display()
        ))
        .into());
    }
    // Checked before it is written: a refusal names the inputs it was made of, not a file
    // that is not there.
    let made = format!(
        "the plan made of {} and the arguments",
        project_file.display()
    );
    plan::parse(Path::new(&made), &text)
        .map_err(|e| Failure(format!("{e}\nnothing was written to {}", target.display())))?;
    super::write_file_atomically(&target, text.as_bytes())?;
    if installer.runs_default_image() {
        eprintln!(
            "warning: {} runs image controller:latest (kubebuilder's default), so every release would run the same image: build it with `make {} IMG={}:v{}`",
            install.display(),
            if sdk { "bundle" } else { "build-installer" },
            options.repository,
            options.version
        );
    }
    let output = options.output.clone().unwrap_or_default();
    eprintln!(
        "wrote {} for {} {} ({}{}); next: olmpack generate (writes {} and {}), then olmpack upgrade test",
        target.display(),
        project.name,
        options.version,
        project.apis.join(", "),
        if project.conversion {
            "; conversion webhook: give upgrade test --webhook-command"
        } else {
            ""
        },
        output.bundles.display(),
        output.catalog.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// A kubebuilder project's manifests: `make build-installer`'s `dist/install.yaml`.
fn installer_manifests(
    dir: &Path,
    limits: &olmpack_oci::input::Limits,
) -> Result<(PathBuf, kubebuilder::Installer), CommandError> {
    let manifests = PathBuf::from("dist/install.yaml");
    let install = dir.join(&manifests);
    // Only a missing file is "not found": anything else there (a FIFO, a directory) is
    // refused by the reader below, saying what it is.
    if std::fs::symlink_metadata(&install).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
    {
        return Err(Failure(format!(
            "{}: not found: run `make build-installer` in the project first (olmpack reads its output and does not run kustomize)",
            install.display()
        ))
        .into());
    }
    let installer = kubebuilder::Installer::read(&olmpack_oci::input::text(&install, limits)?);
    Ok((manifests, installer))
}

/// An operator-sdk project's manifests: `make bundle`'s `bundle/manifests` (`key` is the
/// PROJECT file's plugin that makes it one, for the message when they are not there).
fn sdk_manifests(
    dir: &Path,
    key: &str,
    limits: &olmpack_oci::input::Limits,
) -> Result<(PathBuf, kubebuilder::Installer), CommandError> {
    let manifests = PathBuf::from(kubebuilder::OPERATOR_SDK_MANIFESTS);
    let bundle = dir.join(&manifests);
    let mut files = Vec::new();
    if let Ok(entries) = std::fs::read_dir(&bundle) {
        for entry in entries {
            let path = entry?.path();
            let yaml = path.extension().is_some_and(|e| e == "yaml" || e == "yml");
            if yaml && path.is_file() {
                files.push(path);
            }
        }
    }
    files.sort();
    let texts = (files.iter())
        .map(|f| olmpack_oci::input::text(f, limits))
        .collect::<Result<Vec<_>, _>>()?;
    let installer = kubebuilder::Installer::read_files(texts.iter().map(String::as_str));
    if installer.csv_version.is_none() {
        return Err(Failure(format!(
            "{}: no ClusterServiceVersion there, and PROJECT names operator-sdk's {key}: run `make bundle` in the project first (olmpack reads its bundle/manifests and does not run operator-sdk), or write the plan yourself with `manifests` naming the output of `kustomize build config/manifests`",
            bundle.display()
        ))
        .into());
    }
    Ok((manifests, installer))
}

/// `config/samples/*.yaml` (not its kustomization), relative to the project, sorted.
fn samples(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let samples = Path::new("config/samples");
    let Ok(entries) = std::fs::read_dir(dir.join(samples)) else {
        return Ok(Vec::new());
    };
    let mut found = Vec::new();
    for entry in entries {
        // The name as it is (not made UTF-8): a name the plan cannot hold is refused when
        // the plan is written, naming the file.
        let name = entry?.file_name();
        let bytes = name.as_encoded_bytes();
        let yaml = bytes.ends_with(b".yaml") || bytes.ends_with(b".yml");
        if yaml && bytes != b"kustomization.yaml" {
            found.push(samples.join(&name));
        }
    }
    found.sort();
    Ok(found)
}
