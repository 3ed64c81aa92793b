//! `olmpack upgrade check`: the static CRD upgrade check of every edge of an upgrade graph
//! (from a plan, or a catalog and its bundles), or of two CRD files.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use olmpack::build::{self, BuildError};
use olmpack::bundle::generate::GenerateError;
use olmpack::upgrade::check::graph::{self, EdgeResult};
use olmpack::upgrade::check::request::Request;
use olmpack::upgrade::check::{self, Consumers, markdown, verdict};
use olmpack_model::plan;
use olmpack_model::report::OutputFormat;

use crate::cli::CmdResult;
use olmpack_oci::input::{Limits, Policy};

pub const LONG_ABOUT: &str = "\
Static check of every upgrade edge (no cluster): for each edge of the upgrade graph, compare the
CRDs of the installed release with those of the next one, with every check OLM v1 runs (crdify
with OLM v1's configuration: scope, storedVersionRemoval, existingFieldRemoval, enum (additions
allowed), default, required, type, maximum/minimum and their Items/Length/Properties forms,
pattern, nullable, oneOf, and any other schema change failing closed; served versions must be
compatible unless the CRD converts through a webhook) and OLM v0's (stored versions, the
installed release's example objects against the new schema, CSV conversion-webhook rules).

Edges: every replaces, skips and skipRange edge of every channel; with --plan, also from each
channel head of the catalog already next to the plan (if any) to the new head.

Inputs (one of):
  --plan olmpack.yaml          generate bundles and catalog in memory, as `olmpack generate` does
  --catalog DIR --bundles DIR  a catalog and the bundle directories of its bundles (CRDs fall
                               back to the catalog's olm.bundle.object properties)
  --crd OLD.yaml NEW.yaml      two CRD files, compared as crdify does with OLM v1's
                               configuration: exit 1 exactly when OLM v1 would refuse NEW

Every finding has a rule id (crd-upgrade/<check>), the CRD, the version (or pair of served
versions), the property path (^.spec.field) and who refuses it (OLM v0, OLM v1, both,
kube-apiserver). --output markdown prints a per-edge verdict table for $GITHUB_STEP_SUMMARY.

Exit codes: 0 every edge is safe; 1 an edge would be refused (findings printed) or an input is
invalid (e.g. a --crd file that is not a CRD); 2 an input is missing or unreadable, or the
arguments are wrong.";

#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The release plan [default: olmpack.yaml, when no other input is given].
    #[arg(long, conflicts_with_all = ["catalog", "bundles", "crd"])]
    plan: Option<PathBuf>,
    /// A File-Based Catalog directory (needs --bundles).
    #[arg(long, requires = "bundles", conflicts_with = "crd")]
    catalog: Option<PathBuf>,
    /// The directory holding one bundle directory per bundle of --catalog.
    #[arg(long, requires = "catalog")]
    bundles: Option<PathBuf>,
    /// Compare two CRD files (old, new) the way crdify does with OLM v1's configuration.
    #[arg(long, num_args = 2, value_names = ["OLD", "NEW"])]
    crd: Option<Vec<PathBuf>>,
    /// Output format (markdown: a per-edge verdict table, for `$GITHUB_STEP_SUMMARY`).
    #[arg(long, value_parser = crate::cli::choice::<OutputFormat>(), default_value = "text")]
    output: OutputFormat,
    /// Whose refusals fail the check (exit 1): olm-v0, olm-v1 or all. Every output still
    /// gives both OLMs' verdicts; an edge that breaks clusters without any refusal (a
    /// served version dropped, data lost) fails whatever is chosen.
    #[arg(long, value_parser = crate::cli::choice::<Consumers>(), default_value = "all")]
    consumer: Consumers,
}

pub fn run(args: CheckArgs, policy: &Policy) -> CmdResult {
    let limits = &policy.limits;
    if let Some(files) = &args.crd {
        return crd_files((&files[0], &files[1]), args.output, args.consumer, limits);
    }
    let (subject, request) = match (&args.catalog, &args.bundles) {
        (Some(catalog), Some(bundles)) => {
            super::refuse_same_dir(catalog, bundles)?;
            let request = Request::of_catalog_dir(catalog, bundles, limits)?;
            (catalog.display().to_string(), request)
        }
        _ => {
            let path = args
                .plan
                .clone()
                .unwrap_or_else(|| PathBuf::from(plan::DEFAULT_PLAN_FILE));
            match from_plan(&path, policy)? {
                Ok(request) => (path.display().to_string(), request),
                Err(code) => return Ok(code),
            }
        }
    };
    Ok(print(
        &subject,
        &request.check(),
        args.output,
        args.consumer,
    ))
}

fn crd_files(
    (old, new): (&Path, &Path),
    output: OutputFormat,
    consumers: Consumers,
    limits: &Limits,
) -> CmdResult {
    let old_crd = check::read_crd_file(old, limits)?;
    let new_crd = check::read_crd_file(new, limits)?;
    let (old, new) = (old.display().to_string(), new.display().to_string());
    let result = check::crd_files_result((&old, &old_crd), (&new, &new_crd));
    Ok(print(
        &format!("{old} -> {new}"),
        &[result],
        output,
        consumers,
    ))
}

fn print(
    subject: &str,
    results: &[EdgeResult],
    output: OutputFormat,
    consumers: Consumers,
) -> ExitCode {
    let report = graph::report(subject, results);
    let text = match output {
        OutputFormat::Text => format!(
            "{}{}",
            report.format(OutputFormat::Text),
            verdict::text(results, consumers)
        ),
        OutputFormat::Json => verdict::json(&report, results, consumers),
        OutputFormat::Junit => verdict::junit(subject, results, consumers),
        OutputFormat::Markdown => markdown::format(subject, results, consumers),
    };
    print!("{text}");
    ExitCode::from(u8::from(results.iter().any(|r| r.fails(consumers))))
}

/// The plan's request, its bundles and catalog generated in memory; `Err(code)` when the
/// plan itself is invalid (its findings printed).
fn from_plan(
    path: &Path,
    policy: &Policy,
) -> Result<Result<Request, ExitCode>, olmpack::refusal::CommandError> {
    let loaded = olmpack::plan::load(path, policy)?;
    let built = match build::build(&loaded, &crate::cli::generate_options(None, policy)?) {
        Ok(built) => built,
        Err(BuildError::Bundles(GenerateError::Invalid(findings))) => {
            return Ok(Err(crate::cli::report_invalid(path, findings)));
        }
        Err(e) => return Err(e.into()),
    };
    Ok(Ok(Request::of_build(&loaded, built, &policy.limits)?))
}
