//! `olmpack tools`: the reference tools the live commands run (etcd, kube-apiserver, OLM, …).

use std::fmt::Write as _;
use std::process::ExitCode;

use upgrade_tests::Tool;
use upgrade_tests::binaries::{KUBEBUILDER_ASSETS, tools_cache_dir};

use super::CmdResult;

/// `olmpack tools …`.
#[derive(Debug, clap::Subcommand)]
pub enum ToolsCommand {
    /// Say where each tool is found: its OLMPACK_* variable, $KUBEBUILDER_ASSETS (etcd,
    /// kube-apiserver), the per-user tool cache at the pinned version, or PATH — in that
    /// order. Exit 0 when etcd and kube-apiserver (what `upgrade test` needs) are found.
    List,
}

/// Runs `olmpack tools …`.
pub fn run(cmd: ToolsCommand) -> CmdResult {
    match cmd {
        ToolsCommand::List => {
            let (text, ready) = list();
            print!("{text}");
            Ok(ExitCode::from(u8::from(!ready)))
        }
    }
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
    for tool in Tool::ALL {
        let line = match tool.locate() {
            Ok(found) => format!("{} (from {})", found.path.display(), found.source),
            Err(err) => {
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
    (out, ready)
}
