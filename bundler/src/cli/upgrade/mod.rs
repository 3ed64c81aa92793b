//! `olmpack upgrade …`: will the next release break the clusters that run an older one?

use clap::Subcommand;

use super::CmdResult;

mod check;
mod olm;
mod test;

/// Upgrade safety across CRD versions.
#[derive(Debug, Subcommand)]
pub enum UpgradeCommand {
    /// Static check of every upgrade edge (no cluster): compare the CRDs of each edge's two
    /// releases with OLM v1's and OLM v0's checks.
    #[command(long_about = check::LONG_ABOUT)]
    Check(check::CheckArgs),
    /// Run every edge live on a real apiserver with the operator's conversion webhook:
    /// upgrade, round trips through every version, storage migration, webhook outage,
    /// rollback.
    Test(test::TestArgs),
    /// Let the real OLM v0 (on a local control plane, no cluster needed) install every
    /// release by Subscription and upgrade along every edge it takes; report what OLM said.
    Olm(olm::OlmArgs),
    /// Merge the JUnit reports of `upgrade olm --shard I/N` runs (one per CI job) into one,
    /// checking every shard is there exactly once; exit 1 if a case failed or a shard is
    /// missing.
    MergeShards(olm::MergeArgs),
}

pub fn run(cmd: UpgradeCommand, policy: &olmpack_oci::input::Policy) -> CmdResult {
    match cmd {
        UpgradeCommand::Check(args) => check::run(args, policy),
        UpgradeCommand::Test(args) => test::run(args, policy),
        UpgradeCommand::Olm(args) => olm::run(args, policy),
        UpgradeCommand::MergeShards(args) => olm::merge(args, &policy.limits),
    }
}

/// `--catalog` and `--bundles` naming one directory: a bad argument (exit 2), refused before
/// either is read. The catalog's files are not bundle directories, nor its bundle directories
/// a catalog.
fn refuse_same_dir(
    catalog: &std::path::Path,
    bundles: &std::path::Path,
) -> Result<(), crate::cli::Failure> {
    let same = match (catalog.canonicalize(), bundles.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => catalog == bundles,
    };
    match same {
        true => Err(crate::cli::Failure(format!(
            "--catalog and --bundles both name {}: the catalog and the directory of its bundle directories are two directories",
            catalog.display()
        ))),
        false => Ok(()),
    }
}
