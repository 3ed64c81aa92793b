//! `olmpack bundle validate` (the same load and validation, in process) over every version
//! directory of the community-operators corpus: per-rule counts of errors and warnings, written
//! to `target/tmp/realworld-validate-counts.md` and printed, separately for bundle-format
//! directories (`manifests/` + `metadata/`) and package-manifest directories (validated as the
//! CLI would validate them: as a bundle without annotations).
//!
//! Asserted: every error names its consumer and comes from a rule of the severity model's
//! table (whose consumer tests are `bundle_consumers_*`); no directory makes olmpack fail; and
//! every error outside `deprecated-api/` on a bundle-format directory is listed, with its
//! consumer's proof, in `tests/fixtures/realworld/validate-expected-errors.txt` — the test
//! fails on an error that is not listed and on a listed one that is gone.
//!
//! Run: `cargo xtask conformance realworld_validate` (unpacks the corpus once).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use olmpack::bundle::{load, validate};
use olmpack_model::report::Severity;

/// Per rule: [errors, warnings, directories with an error, errors when targeting Kubernetes
/// 1.21] for each format (bundle, package manifest).
type Counts = BTreeMap<String, [[usize; 4]; 2]>;

/// The last Kubernetes minor that served `apiextensions.k8s.io/v1beta1`: the corpus's bundles
/// were published for it.
const PUBLISHED_FOR: (u64, u64) = (1, 21);

#[derive(Default)]
struct Tally {
    counts: Counts,
    /// Directories per format, and those with at least one error.
    dirs: [usize; 2],
    invalid: [usize; 2],
    /// Errors without a consumer, or from a rule outside the table.
    unexplained: Vec<String>,
    /// Directories olmpack could not load (exit 2).
    failed: Vec<String>,
    /// `(directory, rule)` of every error outside `deprecated-api/` on a bundle-format
    /// directory.
    errors: BTreeSet<(String, String)>,
}

fn tally(tally: &Mutex<Tally>, corpus: &Path, dir: &Path, bundle: bool) {
    let format = usize::from(!bundle);
    let rel = dir.strip_prefix(corpus).unwrap().display().to_string();
    let loaded = match load::load_dir(dir) {
        Ok(loaded) => loaded,
        Err(e) => {
            tally.lock().unwrap().failed.push(format!("{rel}: {e}"));
            return;
        }
    };
    let report = validate::validate(&loaded, &validate::Options::default());
    let then = validate::validate(
        &loaded,
        &validate::Options {
            kube_version: PUBLISHED_FOR,
            ..Default::default()
        },
    );
    let mut t = tally.lock().unwrap();
    for f in then
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
    {
        t.counts.entry(f.rule.clone()).or_default()[format][3] += 1;
    }
    t.dirs[format] += 1;
    let mut rules_with_errors = std::collections::BTreeSet::new();
    for f in &report.findings {
        let entry = &mut t.counts.entry(f.rule.clone()).or_default()[format];
        match f.severity {
            Severity::Error => {
                entry[0] += 1;
                rules_with_errors.insert(f.rule.clone());
            }
            Severity::Warning => entry[1] += 1,
            _ => {}
        }
        if bundle && f.severity == Severity::Error && !f.rule.starts_with("deprecated-api/") {
            t.errors.insert((rel.clone(), f.rule.clone()));
        }
        if f.severity == Severity::Error
            && (f.consumer.is_none()
                || validate::consumers::consumer(&f.rule) != f.consumer
                || !validate::consumers::RULES.iter().any(|(r, _)| *r == f.rule))
        {
            t.unexplained
                .push(format!("{rel}: {} {}", f.rule, f.message));
        }
    }
    if !rules_with_errors.is_empty() {
        t.invalid[format] += 1;
    }
    for rule in rules_with_errors {
        t.counts.get_mut(&rule).unwrap()[format][2] += 1;
    }
}

fn table(t: &Tally) -> String {
    let mut out = format!(
        "# `bundle validate` on community-operators\n\n\
         {} bundle-format directories ({} with errors), {} package-manifest directories ({} with errors).\n\n\
         Errors and warnings target Kubernetes {}.{} (the default); \"errors on 1.21\" targets the last release that served \
         apiextensions.k8s.io/v1beta1, which the corpus's bundles were published for.\n\n\
         | rule | consumer | bundle: errors | bundle: dirs with errors | bundle: warnings | bundle: errors on 1.21 | package-manifest: errors | package-manifest: dirs with errors | package-manifest: warnings |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|\n",
        t.dirs[0],
        t.invalid[0],
        t.dirs[1],
        t.invalid[1],
        validate::TARGET_KUBE_VERSION.0,
        validate::TARGET_KUBE_VERSION.1,
    );
    for (rule, [b, p]) in &t.counts {
        let consumer = validate::consumers::consumer(rule)
            .map(|c| {
                serde_json::to_value(c)
                    .unwrap()
                    .as_str()
                    .unwrap_or("")
                    .to_owned()
            })
            .unwrap_or_default();
        out += &format!(
            "| {rule} | {consumer} | {} | {} | {} | {} | {} | {} | {} |\n",
            b[0], b[2], b[1], b[3], p[0], p[2], p[1]
        );
    }
    out
}

/// The committed expectations: `(directory, rule)` pairs, and per rule the consumer's proof.
struct Expected {
    errors: BTreeSet<(String, String)>,
    proofs: BTreeMap<String, String>,
}

const EXPECTED: &str = "tests/fixtures/realworld/validate-expected-errors.txt";

/// Reads [`EXPECTED`]: `proof <rule>: <text>` lines and `<directory> <rule>` lines; `#` starts
/// a comment.
fn expected() -> Expected {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(EXPECTED))
        .unwrap_or_else(|e| panic!("{EXPECTED}: {e}"));
    let mut out = Expected {
        errors: BTreeSet::new(),
        proofs: BTreeMap::new(),
    };
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("proof ") {
            let (rule, proof) = rest
                .split_once(':')
                .unwrap_or_else(|| panic!("{EXPECTED}: `proof <rule>: <text>` expected: {line}"));
            out.proofs
                .insert(rule.trim().to_owned(), proof.trim().to_owned());
            continue;
        }
        let (dir, rule) = line
            .split_once(' ')
            .unwrap_or_else(|| panic!("{EXPECTED}: `<directory> <rule>` expected: {line}"));
        out.errors.insert((dir.to_owned(), rule.trim().to_owned()));
    }
    out
}

/// Every listed rule has a proof that names a case of `bundle_consumers.rs` for the rule.
fn check_proofs(expected: &Expected) {
    let consumers = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bundle_consumers.rs"),
    )
    .unwrap();
    let rules: BTreeSet<&String> = expected.errors.iter().map(|(_, r)| r).collect();
    for rule in rules {
        let proof = expected
            .proofs
            .get(rule)
            .unwrap_or_else(|| panic!("{EXPECTED}: no `proof {rule}: …` line"));
        assert!(
            consumers.contains(&format!("\"{rule}\"")) && proof.contains("bundle_consumers"),
            "{EXPECTED}: the proof of {rule} must name its bundle_consumers case: {proof}"
        );
    }
}

#[test]
fn realworld_validate_counts() {
    let Some(corpus) = olmpack_testkit::corpus::require(
        olmpack_testkit::corpus::COMMUNITY_OPERATORS,
        "realworld_validate_counts",
    ) else {
        return;
    };
    let dirs = olmpack_testkit::corpus::version_dirs(&corpus);
    assert!(dirs.len() > 1000, "corpus looks incomplete: {}", dirs.len());
    let next = AtomicUsize::new(0);
    let result = Mutex::new(Tally::default());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                while let Some((dir, bundle)) = dirs.get(next.fetch_add(1, Ordering::Relaxed)) {
                    tally(&result, &corpus, dir, *bundle);
                }
            });
        }
    });
    let t = result.into_inner().unwrap();
    let text = table(&t);
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("realworld-validate-counts.md");
    std::fs::write(&path, &text).unwrap();
    println!("{text}\nwritten to {}", path.display());
    assert_eq!(t.dirs[0] + t.dirs[1], dirs.len(), "{:#?}", t.failed);
    assert!(
        t.unexplained.is_empty(),
        "errors without a consumer test:\n{}",
        t.unexplained.join("\n")
    );
    let found: String = t.errors.iter().map(|(d, r)| format!("{d} {r}\n")).collect();
    let listing = Path::new(env!("CARGO_TARGET_TMPDIR")).join("realworld-validate-errors.txt");
    std::fs::write(&listing, found).unwrap();
    println!(
        "errors outside deprecated-api/ on bundle-format directories: {} (rule, directory) pairs in {} directories, listed in {}",
        t.errors.len(),
        t.errors
            .iter()
            .map(|(d, _)| d)
            .collect::<BTreeSet<_>>()
            .len(),
        listing.display()
    );
    let expected = expected();
    check_proofs(&expected);
    let new: Vec<_> = t.errors.difference(&expected.errors).collect();
    let gone: Vec<_> = expected.errors.difference(&t.errors).collect();
    assert!(
        new.is_empty() && gone.is_empty(),
        "{} error(s) not explained in {EXPECTED}: {new:#?}\n{} listed error(s) no longer reported: {gone:#?}",
        new.len(),
        gone.len()
    );
}
