//! `olmpack catalog render` against `opm render` on every version directory of the
//! community-operators corpus (bundle format and package-manifest format), with JSON and YAML
//! output, with and without `--migrate-level bundle-object-to-csv-metadata`: the bytes on
//! stdout must be identical where opm succeeds, and olmpack must fail where opm fails.
//!
//! opm's outcome is cached under `~/.cache/olmpack/opm-render/` keyed by opm's version, the
//! arguments and a hash of every file of the input directory, so reruns only run olmpack.
//! Comparisons run on two threads; directories opm renders are given to olmpack in batches
//! (see [`BATCH`]), the others one by one. Known disagreements are listed, with their reason, in
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

/// Every file (relative path and contents) below `dir`, in sorted order, as the bytes the
/// cache key hashes.
fn tree_bytes(dir: &Path, out: &mut Vec<u8>, rel: &Path) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let rel = rel.join(e.file_name());
        let ty = e.file_type().unwrap();
        out.extend_from_slice(rel.to_string_lossy().as_bytes());
        out.push(0);
        if ty.is_dir() {
            out.push(b'd');
            tree_bytes(&e.path(), out, &rel);
        } else if ty.is_file() {
            let bytes = std::fs::read(e.path()).unwrap();
            out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
            out.extend_from_slice(&bytes);
        } else {
            out.push(b'o');
        }
    }
}

fn run(program: &Path, args: &[&str], dirs: &[&Path]) -> Outcome {
    let out = Command::new(program)
        .args(args)
        .args(dirs)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", program.display()));
    Outcome {
        ok: out.status.success(),
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// opm's outcome for `dir` (whose files are `tree`, see [`tree_bytes`]), from the cache
/// when present.
fn opm_render(opm: &Path, cache: &Path, dir: &Path, tree: &[u8], variant: Variant) -> Outcome {
    let mut hasher = Sha256::new();
    hasher.update(variant.args().join(" ").as_bytes());
    hasher.update(tree);
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
    let outcome = run(opm, &args, &[dir]);
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

/// How one comparison ended.
#[derive(Debug)]
enum Verdict {
    Identical,
    BothFailed,
    /// The first difference, for the report.
    Disagree(String),
}

fn verdict(ours: &Outcome, theirs: &Outcome) -> Verdict {
    match (ours.ok, theirs.ok) {
        (true, true) if ours.stdout == theirs.stdout => Verdict::Identical,
        (false, false) => Verdict::BothFailed,
        (true, true) => Verdict::Disagree(first_difference(&ours.stdout, &theirs.stdout)),
        (true, false) => Verdict::Disagree(format!(
            "olmpack renders, opm fails: {}",
            theirs.stderr.trim()
        )),
        (false, true) => Verdict::Disagree(format!(
            "opm renders, olmpack fails: {}",
            ours.stderr.trim()
        )),
    }
}

/// Directories one olmpack run renders where opm rendered each one alone. Both print the
/// blobs of several references sorted by package and name, so when the directories come in
/// that order the run prints opm's outputs one after the other; a batch that does not is
/// compared again directory by directory. Each olmpack run costs a process start, which
/// batching saves for the two thousand renders opm accepts.
const BATCH: usize = 16;

#[derive(Default)]
struct Tally {
    identical: usize,
    both_failed: usize,
    total: usize,
}

/// One case: a directory in one variant, with opm's outcome.
struct Case<'a> {
    dir: &'a Path,
    rel: String,
    bundle: bool,
    variant: Variant,
    theirs: Outcome,
}

/// Runs `work` on two threads over `items`, keeping each result with its item's index.
fn on_two_threads<'a, T: Sync, R: Send>(
    items: &'a [T],
    work: impl Fn(&'a T) -> R + Sync,
) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, R)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else {
                        break;
                    };
                    let result = work(item);
                    results.lock().unwrap().push((i, result));
                    if i.is_multiple_of(500) {
                        eprint!("[{i}/{}]", items.len());
                        let _ = std::io::stderr().flush();
                    }
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, r)| r).collect()
}

/// How many batches ran, and how many of them printed opm's outputs one after another.
#[derive(Default)]
struct Batches {
    run: AtomicUsize,
    held: AtomicUsize,
}

/// olmpack's verdict for every case of `group` (cases of one variant): one run for all of
/// them when opm rendered each (see [`BATCH`]), else one run per case.
fn compare(olmpack: &Path, group: &[&Case<'_>], batches: &Batches) -> Vec<Verdict> {
    let variant = group[0].variant;
    let mut args = vec!["catalog", "render"];
    args.extend(variant.args());
    if group.len() > 1 && group.iter().all(|c| c.theirs.ok) {
        let dirs: Vec<&Path> = group.iter().map(|c| c.dir).collect();
        let ours = run(olmpack, &args, &dirs);
        let theirs: Vec<&[u8]> = group.iter().map(|c| c.theirs.stdout.as_slice()).collect();
        batches.run.fetch_add(1, Ordering::Relaxed);
        if ours.ok && ours.stdout == theirs.concat() {
            batches.held.fetch_add(1, Ordering::Relaxed);
            return group.iter().map(|_| Verdict::Identical).collect();
        }
    }
    let each = |c: &&Case<'_>| verdict(&run(olmpack, &args, &[c.dir]), &c.theirs);
    group.iter().map(each).collect()
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
    let cases: Vec<Case<'_>> = on_two_threads(&dirs, |(dir, bundle)| {
        let mut tree = Vec::new();
        tree_bytes(dir, &mut tree, Path::new(""));
        Variant::ALL.map(|variant| Case {
            dir,
            rel: dir.strip_prefix(&corpus).unwrap().display().to_string(),
            bundle: *bundle,
            variant,
            theirs: opm_render(&opm, &cache, dir, &tree, variant),
        })
    })
    .into_iter()
    .flatten()
    .collect();
    // Per variant, runs of cases opm renders (in corpus order) in batches, the others alone.
    let mut groups: Vec<Vec<&Case<'_>>> = Vec::new();
    for variant in Variant::ALL {
        let of_variant: Vec<&Case<'_>> = cases.iter().filter(|c| c.variant == variant).collect();
        for stretch in of_variant.chunk_by(|a, b| a.theirs.ok == b.theirs.ok) {
            let size = if stretch[0].theirs.ok { BATCH } else { 1 };
            groups.extend(stretch.chunks(size).map(<[&Case<'_>]>::to_vec));
        }
    }
    let batches = Batches::default();
    let verdicts: Vec<(&Case<'_>, Verdict)> = on_two_threads(&groups, |group| {
        let verdicts = compare(&olmpack, group, &batches);
        group.iter().copied().zip(verdicts).collect::<Vec<_>>()
    })
    .into_iter()
    .flatten()
    .collect();
    let (held, ran) = (batches.held.into_inner(), batches.run.into_inner());
    println!(
        "{held} of {ran} batches printed opm's outputs one after another; the rest were \
         compared directory by directory"
    );

    let mut tallies: BTreeMap<(bool, Variant), Tally> = BTreeMap::new();
    let mut disagreements = BTreeSet::new();
    let mut details = Vec::new();
    for (case, verdict) in &verdicts {
        let t = tallies.entry((case.bundle, case.variant)).or_default();
        t.total += 1;
        match verdict {
            Verdict::Identical => t.identical += 1,
            Verdict::BothFailed => t.both_failed += 1,
            Verdict::Disagree(detail) => {
                let key = format!("{} {}", case.rel, case.variant.label());
                details.push(format!("{key}: {detail}"));
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
