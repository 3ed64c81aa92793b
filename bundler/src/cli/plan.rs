//! `olmpack plan …`: inspect the release plan.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use olmpack::kubebuilder::{self, InitOptions, Project};
use olmpack_model::plan;
use olmpack_model::upgrade_graph::UpgradeGraph;

use super::CmdResult;

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
    /// Write a release plan (olmpack.yaml) into a kubebuilder project: its PROJECT file names
    /// the package, `dist/install.yaml` (run `make build-installer` first) is the release's
    /// manifests, `config/samples` its samples; a cert-manager Certificate in the manifests is
    /// left out (OLM runs no cert-manager). Refuses to replace an olmpack.yaml without --force.
    Init {
        /// The kubebuilder project's directory.
        #[arg(long, default_value = ".")]
        project: PathBuf,
        /// The release's version.
        #[arg(long, value_name = "VERSION", default_value = "0.1.0")]
        release_version: String,
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

pub fn run(cmd: PlanCommand, policy: &olmpack::input::Policy) -> CmdResult {
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

/// `olmpack plan init`: reads the kubebuilder project, writes its plan (checked first).
fn init(
    dir: &Path,
    version: String,
    repository: Option<String>,
    channel: String,
    force: bool,
    limits: &olmpack::input::Limits,
) -> CmdResult {
    let project_file = dir.join("PROJECT");
    let project = Project::parse(
        &project_file.display().to_string(),
        &olmpack::input::text(&project_file, limits)?,
    )?;
    let manifests = PathBuf::from("dist/install.yaml");
    let install = dir.join(&manifests);
    // Only a missing file is "not found": anything else there (a FIFO, a directory) is
    // refused by the reader below, saying what it is.
    if std::fs::symlink_metadata(&install).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
    {
        return Err(format!(
            "{}: not found: run `make build-installer` in the project first (olmpack reads its output and does not run kustomize)",
            install.display()
        )
        .into());
    }
    let installer = kubebuilder::Installer::read(&olmpack::input::text(&install, limits)?);
    let options = InitOptions {
        cert_manager: installer.cert_manager,
        samples: samples(dir)?,
        repository: repository.unwrap_or_else(|| format!("registry.example/{}", project.name)),
        version,
        channel,
        manifests,
    };
    let text = kubebuilder::plan_text(&project, &options)?;
    let target = dir.join(plan::DEFAULT_PLAN_FILE);
    if target.exists() && !force {
        return Err(format!(
            "{}: exists; nothing was written (--force replaces it)",
            target.display()
        )
        .into());
    }
    // Checked before it is written: a refusal names the inputs it was made of, not a file
    // that is not there.
    let made = format!(
        "the plan made of {} and the arguments",
        project_file.display()
    );
    plan::parse(Path::new(&made), &text)
        .map_err(|e| format!("{e}\nnothing was written to {}", target.display()))?;
    super::write_file_atomically(&target, text.as_bytes())?;
    if installer.runs_default_image() {
        eprintln!(
            "warning: {} runs image controller:latest (kubebuilder's default), so every release would run the same image: build it with `make build-installer IMG={}:v{}`",
            install.display(),
            options.repository,
            options.version
        );
    }
    eprintln!(
        "wrote {} for {} {} ({}{}); next: olmpack generate, then olmpack upgrade test",
        target.display(),
        project.name,
        options.version,
        project.apis.join(", "),
        if project.conversion {
            "; conversion webhook: give upgrade test --webhook-command"
        } else {
            ""
        }
    );
    Ok(ExitCode::SUCCESS)
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
