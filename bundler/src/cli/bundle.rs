//! `olmpack bundle …` (in progress).

use super::CmdResult;

#[derive(Debug, clap::Subcommand)]
pub enum BundleCommand {
    /// Not built yet.
    Validate {
        /// The bundle directory.
        dir: std::path::PathBuf,
    },
}

pub fn run(_cmd: BundleCommand) -> CmdResult {
    Err("olmpack bundle is not built yet".into())
}
