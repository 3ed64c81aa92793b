//! `cargo xtask`: installs the reference tools and runs the whole test suite.
//!
//! - `cargo xtask setup` installs every tool pinned in `tools.toml` (see [`tools`]).
//! - `cargo xtask test [--timings] [FILTER]` runs setup, unpacks the corpus, then the whole suite (the
//!   `realworld_` conformance tests included), then checks that the run
//!   left no process and no test-environment directory behind.
//! - `cargo xtask env` prints the `export` lines that point a plain `cargo test` at the tools.
//! - `cargo xtask lint` checks the crate layout ([`layout`]: the model crate stays pure, the
//!   lower layer `olmpack-oci` knows no OLM, no shipped crate needs a test-only one, no module
//!   cycle in `olmpack`, no import circle of
//!   files in product code) and the glossary ([`glossary`]: docs/architecture.md's words keep their one
//!   meaning in product code), then runs `cargo fmt --check` and `cargo clippy -D warnings`.
//! - `cargo xtask conformance` unpacks the real-world corpora once and runs the `realworld_`
//!   tests against them.

#![forbid(unsafe_code)]

mod corpus;
mod glossary;
mod lanes;
mod layout;
mod sweep;
mod timings;
mod tools;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "cargo xtask", about = "olmpack project automation")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Install the reference tools pinned in tools.toml into the per-user cache
    /// ($OLMPACK_TOOLS_DIR, default ~/.cache/olmpack/tools). Idempotent.
    Setup,
    /// Run setup, then every test of the workspace against the real tools.
    ///
    /// FILTER is passed to the test harness of every test binary. Exits non-zero when a test
    /// fails or when a process or test directory started by the run outlives it.
    Test {
        /// Print each test's time, and the ten slowest at the end.
        #[arg(long)]
        timings: bool,
        /// Test binaries run at once (each binary's own tests run in parallel too). The
        /// longest start first, by the last run's times.
        #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=16))]
        jobs: u16,
        /// Only run tests whose name contains this string.
        filter: Option<String>,
        /// More arguments for the test harness (after `--`), e.g. `--nocapture`.
        #[arg(last = true)]
        harness_args: Vec<String>,
    },
    /// Print `export VAR=...` lines for the pinned tools, for use with a plain `cargo test`.
    Env,
    /// Print the import graph of olmpack's top-level modules and run the layout checks of
    /// `lint` (model purity, a lower layer without OLM, no module cycle) alone.
    Layout {
        /// The crate source directory to graph and check (default: bundler/src).
        src: Option<PathBuf>,
    },
    /// Check the crate layout (olmpack-model depends on no I/O or CLI crate; olmpack-oci on
    /// nothing OLM; olmpack's top-level modules import each other without a cycle), the glossary (docs/architecture.md's words keep
    /// their one meaning in product code), formatting, and run clippy with warnings denied.
    Lint,
    /// Unpack the real-world corpora (once, into ~/.cache/olmpack/corpus) and run the
    /// `realworld_` conformance tests against them and the real tools.
    ///
    /// Without the corpus ($OLMPACK_CORPUS, default ../shared/corpus) it says so and exits 0,
    /// except under CI=true, where a missing corpus is a failure.
    Conformance {
        /// Only run conformance tests whose name contains this string (default: `realworld_`).
        filter: Option<String>,
        /// More arguments for the test harness (after `--`), e.g. `--nocapture`.
        #[arg(last = true)]
        harness_args: Vec<String>,
    },
    /// Regenerate the reference operator's generated files: operator/deploy/<release>/ from
    /// `webapp-operator manifests`, then bundle/ and catalog/ with `olmpack generate`.
    Regenerate,
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("xtask: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    let root = workspace_root();
    match cli.command {
        Cmd::Setup => {
            setup(&root)?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Env => {
            let pins = tools::Pins::load(&root)?;
            let layout = tools::Layout::from_env()?;
            for (key, value) in layout.test_env(&pins) {
                println!("export {key}={}", shell_quote(&value.to_string_lossy()));
            }
            let cache = corpus::cache_dir()?;
            println!(
                "export OLMPACK_CORPUS_CACHE={}",
                shell_quote(&cache.to_string_lossy())
            );
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Layout { src } => {
            let src = src.unwrap_or_else(|| root.join("bundler/src"));
            print!("{}", layout::describe(&src)?);
            layout::check_model_is_pure(&root)?;
            layout::check_lower_layer_knows_no_olm(&root)?;
            layout::check_module_cycles(&src)?;
            println!(
                "layout: olmpack-model is pure; olmpack-oci knows no OLM; no module cycle in {}",
                src.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Lint => {
            layout::check_all(&root)?;
            glossary::check_all(&root)?;
            cargo(&root, &["fmt", "--all", "--", "--check"])?;
            cargo(
                &root,
                &[
                    "clippy",
                    "--workspace",
                    "--all-targets",
                    "--",
                    "-D",
                    "warnings",
                ],
            )?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Test {
            timings,
            jobs,
            filter,
            harness_args,
        } => {
            // The whole suite includes the `realworld_` conformance tests: unpack their
            // corpus first (once; a stamp makes later runs free). A missing archive is
            // reported by those tests themselves (NOT RUN, or a failure under CI=true).
            let cache = corpus::cache_dir()?;
            corpus::ensure_unpacked(&corpus::source_dir(&root), &cache)?;
            let env = vec![("OLMPACK_CORPUS_CACHE".to_owned(), cache.into_os_string())];
            let run = TestRun {
                filter,
                harness_args,
                extra_env: env,
                timings,
                jobs: jobs.into(),
            };
            test(&root, run)
        }
        Cmd::Conformance {
            filter,
            harness_args,
        } => conformance(&root, filter, harness_args),
        Cmd::Regenerate => {
            regenerate(&root)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn regenerate(root: &Path) -> Result<()> {
    let run = |args: &[&str]| -> Result<String> {
        let out = Command::new(cargo_bin())
            .current_dir(root)
            .args(["run", "--quiet", "--package"])
            .args(args)
            .output()
            .with_context(|| format!("running cargo run -p {}", args.join(" ")))?;
        anyhow::ensure!(
            out.status.success(),
            "cargo run -p {} failed:\n{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(String::from_utf8(out.stdout)?)
    };
    let releases = run(&["webapp-operator", "--", "manifests", "--list-releases"])?;
    let deploy = root.join("operator").join("deploy");
    let staging = root.join("target").join("deploy-staging");
    if staging.exists() {
        std::fs::remove_dir_all(&staging)?;
    }
    for release in releases.lines().filter(|l| !l.trim().is_empty()) {
        let text = run(&["webapp-operator", "--", "manifests", "--release", release])?;
        let dir = staging.join(release);
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join("manifests.yaml"), text)?;
    }
    if deploy.exists() {
        std::fs::remove_dir_all(&deploy)?;
    }
    std::fs::rename(&staging, &deploy)?;
    eprintln!("xtask: wrote {}", deploy.display());
    let status = Command::new(cargo_bin())
        .current_dir(root)
        .args(["run", "--quiet", "--package", "olmpack", "--", "generate"])
        .status()?;
    anyhow::ensure!(status.success(), "olmpack generate failed");
    Ok(())
}

fn setup(root: &Path) -> Result<(tools::Pins, tools::Layout)> {
    let pins = tools::Pins::load(root)?;
    let layout = tools::Layout::from_env()?;
    let started = Instant::now();
    let vendor = std::env::var_os("OLMPACK_GO_VENDOR_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root.join("../shared/vendor"));
    for line in tools::setup(&pins, &layout, &vendor)? {
        eprintln!("setup: {line}");
    }
    eprintln!(
        "setup: tools ready in {} ({:.1?})",
        layout.cache.display(),
        started.elapsed()
    );
    warm_book_builds(root);
    Ok((pins, layout))
}

/// The `byo_operator_*` tests build the kubebuilder book's managers from the corpus with Go;
/// building them once here fills Go's module and build caches (outside the checkout), so
/// that the tests' own builds of patched copies take seconds. Failures only warn: the tests
/// say NOT RUN without Go or the corpus.
fn warm_book_builds(root: &Path) {
    let book = corpus::source_dir(root).join("kubebuilder-5c40072/src");
    if !book.is_dir() {
        eprintln!(
            "setup: kubebuilder book sources not at {}: not warmed",
            book.display()
        );
        return;
    }
    let out = std::env::temp_dir().join(format!("olmpack-book-warm-{}", std::process::id()));
    for project in ["cronjob-tutorial", "multiversion-tutorial"] {
        let started = Instant::now();
        let status = Command::new("go")
            .args(["build", "-o"])
            .arg(out.join(project))
            .arg("./cmd")
            .current_dir(book.join(project))
            .status();
        match status {
            Ok(s) if s.success() => eprintln!(
                "setup: go build of the book's {project}: Go caches warm ({:.1?})",
                started.elapsed()
            ),
            Ok(s) => eprintln!("setup: warning: go build of the book's {project} failed ({s})"),
            Err(e) => eprintln!("setup: warning: cannot run go for the book's {project}: {e}"),
        }
    }
    let _ = std::fs::remove_dir_all(&out);
}

fn conformance(root: &Path, filter: Option<String>, harness_args: Vec<String>) -> Result<ExitCode> {
    let source = corpus::source_dir(root);
    let cache = corpus::cache_dir()?;
    let missing = corpus::ensure_unpacked(&source, &cache)?;
    if !missing.is_empty() {
        eprintln!(
            "xtask: conformance NOT RUN: corpus archive(s) missing: {}",
            missing.join(", ")
        );
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            eprintln!("xtask: CI=true and the corpus is missing: failing");
            return Ok(ExitCode::FAILURE);
        }
        return Ok(ExitCode::SUCCESS);
    }
    let filter = filter.unwrap_or_else(|| "realworld_".to_owned());
    anyhow::ensure!(
        filter.contains("realworld_"),
        "conformance runs only `realworld_` tests; {filter:?} names none"
    );
    let env = vec![("OLMPACK_CORPUS_CACHE".to_owned(), cache.into_os_string())];
    let run = TestRun {
        filter: Some(filter),
        harness_args,
        extra_env: env,
        timings: false,
        jobs: 2,
    };
    test(root, run)
}

/// What `cargo xtask test` (or `conformance`) runs.
struct TestRun {
    filter: Option<String>,
    harness_args: Vec<String>,
    extra_env: Vec<(String, std::ffi::OsString)>,
    timings: bool,
    jobs: usize,
}

fn test(root: &Path, run: TestRun) -> Result<ExitCode> {
    let (pins, layout) = setup(root)?;

    // Every test environment puts its data, certificates and logs under this directory
    // (via TMPDIR), so the sweep below can tell our processes and leftovers from others.
    let scratch = root.join("target").join("xtask-test-tmp");
    if scratch.exists() {
        std::fs::remove_dir_all(&scratch)
            .with_context(|| format!("clearing {}", scratch.display()))?;
    }
    std::fs::create_dir_all(&scratch)?;

    let mut env = vec![
        ("TMPDIR".to_owned(), scratch.clone().into_os_string()),
        ("OLMPACK_WORKSPACE".to_owned(), root.as_os_str().to_owned()),
    ];
    env.extend(layout.test_env(&pins));
    env.extend(run.extra_env);
    let built = Instant::now();
    let binaries = lanes::build(root, &env)?;
    eprintln!(
        "xtask: {} test binaries built in {:.1?}",
        binaries.len(),
        built.elapsed()
    );

    let started = Instant::now();
    let mut args: Vec<String> = run.filter.into_iter().collect();
    args.extend(run.harness_args);
    let harness = lanes::Harness {
        args,
        env,
        timings: run.timings,
    };
    let times_file = layout.cache.join("test-times.tsv");
    let ordered = lanes::order(binaries, &lanes::load_times(&times_file));
    let outcomes = lanes::run(ordered, run.jobs, &harness);
    lanes::save_times(&times_file, &outcomes);
    let docs_passed = lanes::doc_tests(root, &harness)?;
    let busy: f64 = outcomes.iter().map(|o| o.seconds).sum();
    eprintln!(
        "xtask: tests finished in {:.1?} ({} binaries, {busy:.1} s of binary time, {} at once)",
        started.elapsed(),
        outcomes.len(),
        run.jobs
    );

    let leftovers = sweep::sweep(&scratch)?;
    for line in &leftovers {
        eprintln!("xtask: left behind by the tests: {line}");
    }
    let _ = std::fs::remove_dir_all(&scratch);

    let failed = report_failures(&outcomes, docs_passed);
    if failed {
        return Ok(ExitCode::FAILURE);
    }
    if !leftovers.is_empty() {
        eprintln!(
            "xtask: {} process(es) or directories outlived the tests",
            leftovers.len()
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints each failed binary's panic messages, then one line per failure, at the end of the
/// run where a truncated CI log still shows them; true when anything failed.
fn report_failures(outcomes: &[lanes::Outcome], docs_passed: bool) -> bool {
    let failed: Vec<&lanes::Outcome> = outcomes.iter().filter(|o| !o.passed).collect();
    for outcome in &failed {
        eprintln!("xtask: {} said:", outcome.binary.label());
        for line in &outcome.panics {
            eprintln!("    {line}");
        }
    }
    for outcome in &failed {
        eprintln!(
            "xtask: failed: {} ({:.1} s)",
            outcome.binary.label(),
            outcome.seconds
        );
    }
    if !docs_passed {
        eprintln!("xtask: failed: doc tests");
    }
    !failed.is_empty() || !docs_passed
}

fn cargo(root: &Path, args: &[&str]) -> Result<()> {
    let status = Command::new(cargo_bin())
        .current_dir(root)
        .args(args)
        .status()
        .with_context(|| format!("running cargo {}", args.join(" ")))?;
    anyhow::ensure!(status.success(), "cargo {} failed", args.join(" "));
    Ok(())
}

fn cargo_bin() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned())
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the workspace root")
        .to_path_buf()
}

fn shell_quote(value: &str) -> String {
    format!("'{}'", value.replace('\'', r"'\''"))
}
