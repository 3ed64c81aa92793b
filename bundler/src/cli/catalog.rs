//! `olmpack catalog …` (not built yet).

use super::CmdResult;

#[derive(Debug, clap::Subcommand)]
pub enum CatalogCommand {
    /// Not built yet.
    Validate {
        /// The catalog directory.
        dir: std::path::PathBuf,
    },
}

pub fn run(_cmd: CatalogCommand) -> CmdResult {
    Err("olmpack catalog is not built yet".into())
}
