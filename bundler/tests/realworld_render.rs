//! `olmpack catalog render` against `opm render` on every version directory of the
//! community-operators corpus (bundle format and package-manifest format), with JSON and YAML
//! output, with and without `--migrate-level bundle-object-to-csv-metadata`: the bytes on
//! stdout must be identical where opm succeeds, and olmpack must fail where opm fails.
//!
//! opm's outcome is cached under `~/.cache/olmpack/opm-render/` keyed by opm's version, the
//! arguments and a hash of every file of the input directory, so reruns only run olmpack.
//! Comparisons run on two threads. Known disagreements are listed, with their reason, in
//! `tests/fixtures/realworld/render-known-differences.txt`; the test fails when the set of
//! disagreements differs from that list in either direction.
//!
//! Run: `cargo xtask conformance realworld_render` (unpacks the corpus once).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use sha2::{Digest, Sha256};

const MIGRATE: &str = "bundle-object-to-csv-metadata";

/// One way of rendering: output format and migrate level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Variant {
    yaml: bool,
    migrate: bool,
}

impl Variant {
    const ALL: [Variant; 4] = [
        Variant {
            yaml: false,
            migrate: false,
        },
        Variant {
            yaml: true,
            migrate: false,
        },
        Variant {
            yaml: false,
            migrate: true,
        },
        Variant {
            yaml: true,
            migrate: true,
        },
    ];

    fn args(self) -> Vec<&'static str> {
        let mut args = vec!["-o", if self.yaml { "yaml" } else { "json" }];
        if self.migrate {
            args.extend(["--migrate-level", MIGRATE]);
        }
        args
    }

    fn label(self) -> String {
        format!(
            "{}{}",
            if self.yaml { "yaml" } else { "json" },
            if self.migrate { "+migrate" } else { "" }
        )
    }
}

/// What a render run produced.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Outcome {
    ok: bool,
    stdout: Vec<u8>,
    stderr: String,
}

/// sha256 over every file (relative path and contents) below `dir`, in sorted order.
fn tree_hash(dir: &Path, hasher: &mut Sha256, rel: &Path) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let rel = rel.join(e.file_name());
        let ty = e.file_type().unwrap();
        hasher.update(rel.to_string_lossy().as_bytes());
        hasher.update([0]);
        if ty.is_dir() {
            hasher.update(b"d");
            tree_hash(&e.path(), hasher, &rel);
        } else if ty.is_file() {
            let bytes = std::fs::read(e.path()).unwrap();
            hasher.update((bytes.len() as u64).to_le_bytes());
            hasher.update(&bytes);
        } else {
            hasher.update(b"o");
        }
    }
}

fn run(program: &Path, args: &[&str], dir: &Path) -> Outcome {
    let out = Command::new(program)
        .args(args)
        .arg(dir)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", program.display()));
    Outcome {
        ok: out.status.success(),
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// opm's outcome for `dir`, from the cache when present.
fn opm_render(opm: &Path, cache: &Path, dir: &Path, variant: Variant) -> Outcome {
    let mut hasher = Sha256::new();
    hasher.update(variant.args().join(" ").as_bytes());
    tree_hash(dir, &mut hasher, Path::new(""));
    let key: String = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let base = cache.join(&key[..2]).join(&key);
    let (out_file, err_file, rc_file) = (
        base.with_extension("out"),
        base.with_extension("err"),
        base.with_extension("rc"),
    );
    if let Ok(rc) = std::fs::read_to_string(&rc_file) {
        return Outcome {
            ok: rc.trim() == "0",
            stdout: std::fs::read(&out_file).unwrap_or_default(),
            stderr: std::fs::read_to_string(&err_file).unwrap_or_default(),
        };
    }
    let mut args = vec!["render"];
    args.extend(variant.args());
    let outcome = run(opm, &args, dir);
    std::fs::create_dir_all(base.parent().unwrap()).unwrap();
    std::fs::write(&out_file, &outcome.stdout).unwrap();
    std::fs::write(&err_file, &outcome.stderr).unwrap();
    // The rc file last: its presence marks a complete entry.
    std::fs::write(&rc_file, if outcome.ok { "0" } else { "1" }).unwrap();
    outcome
}

fn opm_cache_dir(opm: &Path) -> PathBuf {
    let version = Command::new(opm).arg("version").output().unwrap();
    let mut hasher = Sha256::new();
    hasher.update(&version.stdout);
    let digest: String = hasher.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    olmpack_testkit::corpus::cache_dir()
        .unwrap()
        .parent()
        .unwrap()
        .join("opm-render")
        .join(digest)
}

/// The first line where two outputs differ, for the report.
fn first_difference(a: &[u8], b: &[u8]) -> String {
    let (a, b) = (String::from_utf8_lossy(a), String::from_utf8_lossy(b));
    for (i, (x, y)) in a.lines().zip(b.lines()).enumerate() {
        if x != y {
            let cut = |s: &str| s.chars().take(160).collect::<String>();
            return format!("line {}: olmpack {:?} / opm {:?}", i + 1, cut(x), cut(y));
        }
    }
    format!(
        "lengths differ: olmpack {} lines / opm {} lines",
        a.lines().count(),
        b.lines().count()
    )
}

fn known_differences() -> BTreeSet<String> {
    let file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/realworld/render-known-differences.txt");
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Directory (relative to the corpus), bundle format or not, variant, olmpack's and opm's
/// outcomes.
type CaseResult = (String, bool, Variant, Outcome, Outcome);

#[derive(Default)]
struct Tally {
    identical: usize,
    both_failed: usize,
    total: usize,
}

#[test]
fn realworld_render_matches_opm() {
    let Some(corpus) = olmpack_testkit::corpus::require(
        olmpack_testkit::corpus::COMMUNITY_OPERATORS,
        "realworld_render_matches_opm",
    ) else {
        return;
    };
    let opm = olmpack_envtest::binaries::Tool::Opm
        .path()
        .expect("opm is required (cargo xtask setup)");
    let olmpack = PathBuf::from(env!("CARGO_BIN_EXE_olmpack"));
    let cache = opm_cache_dir(&opm);
    let dirs = olmpack_testkit::corpus::version_dirs(&corpus);
    assert!(dirs.len() > 1000, "corpus looks incomplete: {}", dirs.len());
    let cases: Vec<(&PathBuf, bool, Variant)> = dirs
        .iter()
        .flat_map(|(d, b)| Variant::ALL.iter().map(move |v| (d, *b, *v)))
        .collect();
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<CaseResult>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(&(dir, bundle, variant)) = cases.get(i) else {
                        break;
                    };
                    let theirs = opm_render(&opm, &cache, dir, variant);
                    let mut args = vec!["catalog", "render"];
                    args.extend(variant.args());
                    let ours = run(&olmpack, &args, dir);
                    let rel = dir.strip_prefix(&corpus).unwrap().display().to_string();
                    results
                        .lock()
                        .unwrap()
                        .push((rel, bundle, variant, ours, theirs));
                    if i.is_multiple_of(500) {
                        eprint!("[{i}/{}]", cases.len());
                        let _ = std::io::stderr().flush();
                    }
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by(|a, b| (&a.0, a.2).cmp(&(&b.0, b.2)));

    let mut tallies: BTreeMap<(bool, Variant), Tally> = BTreeMap::new();
    let mut disagreements = BTreeSet::new();
    let mut details = Vec::new();
    for (rel, bundle, variant, ours, theirs) in &results {
        let t = tallies.entry((*bundle, *variant)).or_default();
        t.total += 1;
        let key = format!("{rel} {}", variant.label());
        match (ours.ok, theirs.ok) {
            (true, true) if ours.stdout == theirs.stdout => t.identical += 1,
            (false, false) => t.both_failed += 1,
            (true, true) => {
                details.push(format!(
                    "{key}: {}",
                    first_difference(&ours.stdout, &theirs.stdout)
                ));
                disagreements.insert(key);
            }
            (true, false) => {
                details.push(format!(
                    "{key}: olmpack renders, opm fails: {}",
                    theirs.stderr.trim()
                ));
                disagreements.insert(key);
            }
            (false, true) => {
                details.push(format!(
                    "{key}: opm renders, olmpack fails: {}",
                    ours.stderr.trim()
                ));
                disagreements.insert(key);
            }
        }
    }
    println!("| format | variant | byte-identical | both fail | disagree | dirs |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for ((bundle, variant), t) in &tallies {
        println!(
            "| {} | {} | {} | {} | {} | {} |",
            if *bundle {
                "bundle"
            } else {
                "package-manifest"
            },
            variant.label(),
            t.identical,
            t.both_failed,
            t.total - t.identical - t.both_failed,
            t.total
        );
    }
    let known = known_differences();
    let new: Vec<&String> = disagreements.difference(&known).collect();
    let fixed: Vec<&String> = known.difference(&disagreements).collect();
    for d in &details {
        println!("disagreement: {d}");
    }
    assert!(
        new.is_empty() && fixed.is_empty(),
        "{} new disagreement(s) with opm, {} listed one(s) now agree: new {new:#?}, fixed {fixed:#?}",
        new.len(),
        fixed.len()
    );
}
