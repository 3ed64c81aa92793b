//! `olmpack plan …`: inspect the release plan.

use std::path::PathBuf;
use std::process::ExitCode;

use olmpack::plan;
use olmpack::upgrade_graph::UpgradeGraph;

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
}

pub fn run(cmd: PlanCommand) -> CmdResult {
    match cmd {
        PlanCommand::Schema => print!("{}", plan::schema::json_schema()),
        PlanCommand::Edges { plan: path } => {
            let loaded = plan::load(&path)?;
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
