//! `olmpack image …` (not built yet).

use super::CmdResult;

#[derive(Debug, clap::Subcommand)]
pub enum ImageCommand {
    /// Not built yet.
    Resolve {
        /// An image reference.
        reference: String,
    },
}

pub fn run(_cmd: ImageCommand) -> CmdResult {
    Err("olmpack image is not built yet".into())
}
