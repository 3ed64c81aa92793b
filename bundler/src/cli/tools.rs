//! `olmpack tools`: the reference tools the live commands run (etcd, kube-apiserver, OLM, …).

use std::fmt::Write as _;
use std::process::ExitCode;

use olmpack::tools::{self as artifact, Installed};
use olmpack_envtest::binaries::{KUBEBUILDER_ASSETS, tools_cache_dir};
use olmpack_envtest::binaries::{KubeMinor, Tool};
use olmpack_oci::image::progress::Progress;

use super::CmdResult;
use super::image::{BuildArgs, RegistryArgs};

/// The variable naming the tools image to install from.
const TOOLS_IMAGE_VAR: &str = "OLMPACK_TOOLS_IMAGE";

/// The tools image a released olmpack installs from (by digest), compiled in by olmpack's
/// release workflow; `None` in other builds.
const BUILT_IN_TOOLS_IMAGE: Option<&str> = option_env!("OLMPACK_TOOLS_IMAGE");

/// `olmpack tools …`.
#[derive(Debug, clap::Subcommand)]
pub enum ToolsCommand {
    /// Say where each tool is found: its OLMPACK_* variable, $KUBEBUILDER_ASSETS (etcd,
    /// kube-apiserver), the per-user tool cache at the pinned version, or PATH — in that
    /// order. Exit 0 when etcd and kube-apiserver (what `upgrade test` needs) are found.
    List,
    /// Install the tools `upgrade test` and `upgrade olm` run (etcd, kube-apiserver,
    /// kube-controller-manager, kube-scheduler, kwok, OLM v0, opm — the versions this olmpack
    /// pins) into the per-user tool cache, from olmpack's tools image. Every blob is checked
    /// against its digest; concurrent installs wait for each other; a failed install leaves
    /// the cache as it was. The live commands do this on first use when a tools image is known.
    Install {
        /// The tools image: host/repository@sha256:… (or :tag). Default: $OLMPACK_TOOLS_IMAGE,
        /// else the image this olmpack release was built with.
        #[arg(long)]
        from: Option<String>,
        /// Also install the control plane of this Kubernetes minor (`1.27`), one that
        /// olmpack pins (repeatable; `olmpack tools list` shows them), or `all`. The default
        /// minor is always installed; the live commands install the one `--platform` runs on
        /// when it is missing.
        #[arg(long = "kubernetes", value_name = "1.N|all")]
        kubernetes: Vec<String>,
        #[command(flatten)]
        registry: Box<RegistryArgs>,
    },
    /// Pack the tool cache `cargo xtask setup` filled into a tools image (an OCI layout, to
    /// push with `olmpack image push`), as olmpack's release workflow does. Prints its digest; the
    /// same tools give the same digest.
    Pack {
        #[command(flatten)]
        output: BuildArgs,
    },
}

/// Runs `olmpack tools …`.
pub fn run(cmd: ToolsCommand) -> CmdResult {
    match cmd {
        ToolsCommand::List => {
            let (text, ready) = list();
            print!("{text}");
            Ok(ExitCode::from(u8::from(!ready)))
        }
        ToolsCommand::Install {
            from,
            kubernetes,
            registry,
        } => {
            let minors = minors_named(&kubernetes)?;
            let reference = from.or_else(default_image).ok_or_else(|| {
                super::Invalid(format!(
                    "no tools image known to this build of olmpack: give --from host/repository@sha256:… or set {TOOLS_IMAGE_VAR}"
                ))
            })?;
            install(&reference, &registry, &minors)
        }
        ToolsCommand::Pack { output } => {
            let options = output.options(
                &artifact::host_platform(),
                &olmpack_oci::input::Limits::default(),
            );
            let progress = |line: &str| eprintln!("olmpack tools pack: {line}");
            let cache = artifact::cache_dir()?;
            let root = artifact::pack(&cache, output.layout(), &options, &progress)?;
            println!("{}", root.digest);
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// `$OLMPACK_TOOLS_IMAGE`, else the image compiled into this build.
fn default_image() -> Option<String> {
    std::env::var(TOOLS_IMAGE_VAR)
        .ok()
        .filter(|v| !v.is_empty())
        .or_else(|| {
            BUILT_IN_TOOLS_IMAGE
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        })
}

/// The Kubernetes minors `--kubernetes` names (`1.27`, `all`); `Err` (bad arguments, exit 2)
/// naming the pinned ones when it names another.
fn minors_named(names: &[String]) -> Result<Vec<KubeMinor>, super::Failure> {
    let mut pinned = KubeMinor::pinned();
    pinned.sort();
    let mut minors = Vec::new();
    for name in names {
        if name == "all" {
            minors.extend(pinned.iter().copied());
            continue;
        }
        let found = name
            .strip_prefix("1.")
            .and_then(|m| m.parse::<u64>().ok())
            .and_then(KubeMinor::of);
        let Some(minor) = found else {
            let choices: Vec<String> = pinned.iter().map(ToString::to_string).collect();
            return Err(super::Failure(format!(
                "--kubernetes {name:?}: olmpack pins Kubernetes {} (or give `all`)",
                choices.join(", ")
            )));
        };
        minors.push(minor);
    }
    Ok(minors)
}

fn install(reference: &str, registry: &RegistryArgs, minors: &[KubeMinor]) -> CmdResult {
    let cache = artifact::cache_dir()?;
    let access = registry.access()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let outcome = runtime.block_on(artifact::install(
        reference,
        &cache,
        &access,
        &Progress::auto(),
        minors,
    ))?;
    match outcome {
        Installed::AlreadyThere => eprintln!("tools already installed in {}", cache.display()),
        Installed::Dirs(dirs) => eprintln!(
            "installed {} into {}",
            dirs.iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            cache.display()
        ),
    }
    Ok(ExitCode::SUCCESS)
}

/// Installs the tools image on first use: when one of `needed` is found nowhere (and no
/// variable names it) and a tools image is known, says so on stderr and installs it. Without
/// a known image nothing happens; the command then fails naming the tool and how to get it.
pub(super) fn ensure(
    needed: &[Tool],
    minor: KubeMinor,
) -> Result<(), olmpack::refusal::CommandError> {
    let mut missing: Vec<String> = needed
        .iter()
        .filter(|tool| tool.locate().is_err_and(|e| e.looked_at.is_none()))
        .map(|tool| tool.file_name().to_owned())
        .collect();
    if !minor.is_default() && minor.tool_path(Tool::KubeApiserver).is_err() {
        missing.push(format!("kube-apiserver {}", minor.version()));
    }
    let Some(reference) = default_image().filter(|_| !missing.is_empty()) else {
        return Ok(());
    };
    let cache = artifact::cache_dir()?;
    eprintln!(
        "olmpack: {} not found; installing olmpack's pinned tools from {reference} into {} (once; `olmpack tools list` shows them)",
        missing.join(", "),
        cache.display()
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let access = olmpack_oci::image::registry::RegistryAccess::default();
    runtime.block_on(artifact::install(
        &reference,
        &cache,
        &access,
        &Progress::Lines,
        &[minor],
    ))?;
    Ok(())
}

/// The table `olmpack tools list` prints, and whether `upgrade test` can run.
fn list() -> (String, bool) {
    let mut out = String::new();
    let cache = tools_cache_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_else(|| "(no HOME: set OLMPACK_TOOLS_DIR)".to_owned());
    let _ = writeln!(out, "tool cache: {cache}");
    let assets = std::env::var_os(KUBEBUILDER_ASSETS)
        .map(|d| d.to_string_lossy().into_owned())
        .unwrap_or_else(|| "(not set)".to_owned());
    let _ = writeln!(out, "{KUBEBUILDER_ASSETS}: {assets}");
    let mut ready = true;
    let mut missing = 0;
    for tool in Tool::ALL {
        let line = match tool.locate() {
            Ok(found) => format!("{} (from {})", found.path.display(), found.source),
            Err(err) => {
                missing += 1;
                if matches!(tool, Tool::Etcd | Tool::KubeApiserver) {
                    ready = false;
                }
                match err.looked_at {
                    Some(path) => format!("not found: ${} names {}", err.env_var, path.display()),
                    None => format!("not found (${} to set it)", err.env_var),
                }
            }
        };
        let _ = writeln!(out, "{:<24} {line}", tool.file_name());
    }
    for minor in KubeMinor::pinned().into_iter().filter(|m| !m.is_default()) {
        let line = match minor.tool_path(Tool::KubeApiserver) {
            Ok(path) => format!("{} (from tool cache)", path.display()),
            Err(_) => format!(
                "not installed: kube-apiserver {} (`olmpack tools install --kubernetes {minor}`)",
                minor.version()
            ),
        };
        let _ = writeln!(out, "{:<24} {line}", format!("kubernetes-{minor}"));
    }
    if missing > 0 {
        let _ = writeln!(out, "{}", install_hint(missing, default_image().as_deref()));
    }
    (out, ready)
}

/// What to do when `missing` tools are found nowhere: `olmpack tools install`, from the
/// tools image this build knows (`known`), else with `--from`.
fn install_hint(missing: usize, known: Option<&str>) -> String {
    let from = match known {
        Some(image) => format!("installs them from {image}"),
        None => format!(
            "installs them from a tools image: give --from host/repository@sha256:… or set {TOOLS_IMAGE_VAR}"
        ),
    };
    format!(
        "{missing} tool(s) not found: `olmpack tools install` {from} (into the tool cache above)"
    )
}

#[cfg(test)]
mod tests {
    use super::install_hint;

    #[test]
    fn missing_tools_point_at_tools_install() {
        assert_eq!(
            install_hint(2, Some("ghcr.io/olmpack/tools@sha256:ab")),
            "2 tool(s) not found: `olmpack tools install` installs them from ghcr.io/olmpack/tools@sha256:ab (into the tool cache above)"
        );
        assert_eq!(
            install_hint(9, None),
            "9 tool(s) not found: `olmpack tools install` installs them from a tools image: give --from host/repository@sha256:… or set OLMPACK_TOOLS_IMAGE (into the tool cache above)"
        );
    }
}
