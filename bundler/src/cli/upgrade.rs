//! `olmpack upgrade …`: will the next release break the clusters that run an older one?

use clap::Subcommand;

use super::CmdResult;
use super::upgrade_check;

/// Upgrade safety across CRD versions.
#[derive(Debug, Subcommand)]
pub enum UpgradeCommand {
    /// Static check of every upgrade edge (no cluster): compare the CRDs of each edge's two
    /// releases with OLM v1's and OLM v0's checks.
    #[command(long_about = upgrade_check::LONG_ABOUT)]
    Check(upgrade_check::CheckArgs),
}

pub fn run(cmd: UpgradeCommand) -> CmdResult {
    match cmd {
        UpgradeCommand::Check(args) => upgrade_check::run(args),
    }
}
