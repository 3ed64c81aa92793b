//! Leftovers of killed runs (issue 44): `image build` (a layout's `.<name>.tmp-…` next to it)
//! and `catalog render IMAGE` (`$TMPDIR/.olmpack-pull-…`) remove what killed earlier runs left —
//! a directory whose owner marker names a process that is gone — and nothing else: not a
//! directory of a live run, not one without a marker.

mod hostile_support;

use std::path::Path;
use std::time::Duration;

use hostile_support::*;

/// This process's start time (field 22 of `/proc/self/stat`), as olmpack's marker records it.
fn start_time() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let after = &stat[stat.rfind(')').unwrap() + 1..];
    after.split_whitespace().nth(19).unwrap().parse().unwrap()
}

/// A pid no process has any more.
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

/// Leftovers under `parent` named `<prefix><case>`, each with a staged blob; returns each
/// case's name and whether the next run must remove it.
fn leftovers(parent: &Path, prefix: &str) -> Vec<(String, bool)> {
    let (me, started, dead) = (std::process::id(), start_time(), dead_pid());
    let rows = [
        ("dead", Some(format!("olmpack pid {dead} start 1\n")), true),
        (
            "live",
            Some(format!("olmpack pid {me} start {started}\n")),
            false,
        ),
        (
            "reused-pid",
            Some(format!("olmpack pid {me} start {}\n", started + 1)),
            true,
        ),
        ("no-marker", None, false),
    ];
    rows.into_iter()
        .map(|(case, marker, swept)| {
            let dir = parent.join(format!("{prefix}{case}"));
            write(&dir.join("blobs/.incoming-0"), vec![0u8; 4096]);
            if let Some(marker) = marker {
                write(&dir.join(".olmpack-owner"), marker);
            }
            (
                dir.file_name().unwrap().to_string_lossy().into_owned(),
                swept,
            )
        })
        .collect()
}

fn check_swept(parent: &Path, cases: &[(String, bool)], what: &str) {
    for (name, swept) in cases {
        assert_eq!(
            !parent.join(name).exists(),
            *swept,
            "{what}: {name} {}",
            if *swept { "was left" } else { "was removed" }
        );
    }
}

#[test]
fn hostile_leftovers_of_a_killed_image_build_are_swept_by_owner_marker_only() {
    let dir = temp();
    let d = dir.path();
    write(&d.join("c/catalog.yaml"), CATALOG);
    let cases = leftovers(&d.join("out"), ".cat.tmp-");
    run(
        d,
        &["image", "build", "catalog", "c", "--layout", "out/cat"],
    )
    .expect(0, "image build")
    .in_our_words();
    check_swept(&d.join("out"), &cases, "image build");
    assert!(d.join("out/cat/oci-layout").is_file());
    assert!(
        !d.join("out/cat/.olmpack-owner").exists(),
        "the layout keeps the owner marker"
    );
    let mut left: Vec<String> = std::fs::read_dir(d.join("out"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, [".cat.tmp-live", ".cat.tmp-no-marker", "cat"]);
}

#[test]
fn hostile_leftovers_of_a_killed_catalog_render_image_are_swept_by_owner_marker_only() {
    let dir = temp();
    let d = dir.path();
    let tmp = d.join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let cases = leftovers(&tmp, ".olmpack-pull-");
    // The registry is not there: the run fails (exit 2), after sweeping, and leaves nothing.
    run_env(
        d,
        &[
            "catalog",
            "render",
            "127.0.0.1:9/demo/catalog:v1",
            "--attempts",
            "1",
        ],
        &[("TMPDIR", &tmp.display().to_string())],
        Duration::from_secs(60),
    )
    .expect(2, "catalog render IMAGE")
    .says("error: failed to pull 127.0.0.1:9/demo/catalog:v1\n  caused by: pulling manifest 127.0.0.1:9/demo/catalog:v1: cannot connect to http://127.0.0.1:9: connection refused (after 1 attempt(s))")
    .in_our_words();
    check_swept(&tmp, &cases, "catalog render IMAGE");
    let mut left: Vec<String> = std::fs::read_dir(&tmp)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, [".olmpack-pull-live", ".olmpack-pull-no-marker"]);
}
