//! Hostile files on disk (issues 23 and 44): output directories olmpack did not mark as its
//! own, a release run that meets a corrupted layout, a second run into the same `--out` or
//! what an interrupted one left, and input that is not a regular file (a FIFO blob or bundle
//! file, a device or a huge file as a signing key) — refused naming the file, nothing written.

mod hostile_support;

use std::io::Write as _;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hostile_support::*;

fn bundle_fixture(dir: &Path) {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bundles/sdk-memcached");
    for sub in ["manifests", "metadata"] {
        for entry in std::fs::read_dir(source.join(sub)).unwrap() {
            let path = entry.unwrap().path();
            write(
                &dir.join(sub).join(path.file_name().unwrap()),
                std::fs::read(&path).unwrap(),
            );
        }
    }
}

/// The digests of an image layout's manifest and its first layer.
fn manifest_and_layer(layout: &Path) -> (String, String) {
    let read = |p: PathBuf| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
    };
    let index = read(layout.join("index.json"));
    let manifest = index["manifests"][0]["digest"].as_str().unwrap().to_owned();
    let m = read(blob(layout, &manifest));
    let layer = m["layers"][0]["digest"].as_str().unwrap().to_owned();
    (manifest, layer)
}

fn blob(layout: &Path, digest: &str) -> PathBuf {
    layout
        .join("blobs/sha256")
        .join(digest.trim_start_matches("sha256:"))
}

// --- an output directory olmpack may replace is one it marked as its own ---

#[test]
fn hostile_layout_with_a_foreign_file_is_never_replaced() {
    let dir = temp();
    let d = dir.path();
    write(&d.join("c/catalog.yaml"), CATALOG);
    std::fs::create_dir(d.join("thesis")).unwrap();
    write(&d.join("thesis/oci-layout"), "");
    write(&d.join("thesis/thesis.tex"), "x\n");
    let before = snapshot(d);
    run(d, &["image", "build", "catalog", "c", "--layout", "thesis"])
        .expect(2, "a directory holding oci-layout and a thesis")
        .says("thesis: is a directory olmpack did not write")
        .says(".olmpack-generated")
        .says("nothing was written")
        .in_our_words();
    assert_eq!(snapshot(d), before, "files changed");
    // A layout olmpack wrote is stamped and replaced by the next build.
    run(d, &["image", "build", "catalog", "c", "--layout", "mine"]).expect(0, "first build");
    assert!(d.join("mine/.olmpack-generated").is_file());
    run(d, &["image", "build", "catalog", "c", "--layout", "mine"]).expect(0, "rebuild");
    bundle_fixture(&d.join("b"));
    run(d, &["image", "build", "bundle", "b", "--layout", "thesis"])
        .expect(2, "bundle image over the thesis")
        .says("thesis.tex");
    assert_eq!(std::fs::read(d.join("thesis/thesis.tex")).unwrap(), b"x\n");
}

// --- a blob that is a FIFO is refused, not waited on ---

#[test]
fn hostile_push_of_a_fifo_blob_does_not_hang() {
    let dir = temp();
    let d = dir.path();
    write(&d.join("c/catalog.yaml"), CATALOG);
    run(d, &["image", "build", "catalog", "c", "--layout", "l"]).expect(0, "build");
    let (_, layer) = manifest_and_layer(&d.join("l"));
    std::fs::remove_file(blob(&d.join("l"), &layer)).unwrap();
    mkfifo(&blob(&d.join("l"), &layer));
    run(d, &["image", "push", "l", "127.0.0.1:9/demo/catalog:v1"])
        .expect(1, "push of a FIFO blob")
        .says(&layer)
        .says("is a FIFO (named pipe), not a regular file")
        .in_our_words();
}

// --- release: verified layouts, one run per --out, leftovers removed ---

/// `olmpack example --out out` in `d`.
fn example_release(d: &Path) -> Outcome {
    run_with(d, &["example", "--out", "out"], Duration::from_secs(300))
}

#[test]
fn hostile_release_rebuilds_a_corrupted_layout_instead_of_calling_it_unchanged() {
    let dir = temp();
    let d = dir.path();
    example_release(d).expect(0, "first release");
    let layout = d.join("out/images/catalog");
    let outside = d.join("outside-blob");
    type Corrupt = Box<dyn Fn(&Path)>;
    let cases: Vec<(&str, Corrupt)> = vec![
        ("deleted", Box::new(|p| std::fs::remove_file(p).unwrap())),
        (
            "appended to",
            Box::new(|p| {
                let mut f = std::fs::OpenOptions::new().append(true).open(p).unwrap();
                f.write_all(b"more").unwrap();
            }),
        ),
        (
            "a FIFO",
            Box::new(|p| {
                std::fs::remove_file(p).unwrap();
                mkfifo(p);
            }),
        ),
        (
            "a symlink out of the layout",
            Box::new(move |p| {
                std::fs::copy(p, &outside).unwrap();
                std::fs::remove_file(p).unwrap();
                symlink(&outside, p).unwrap();
            }),
        ),
    ];
    for (what, corrupt) in cases {
        let (_, layer) = manifest_and_layer(&layout);
        let path = blob(&layout, &layer);
        corrupt(&path);
        let again = example_release(d);
        again.expect(0, what);
        assert!(
            !again.all().contains("nothing to do"),
            "{what}: a corrupted layout was called unchanged:\n{}",
            again.all()
        );
        let meta = std::fs::symlink_metadata(&path).unwrap();
        assert!(meta.is_file(), "{what}: the blob was not rebuilt");
        example_release(d)
            .expect(0, what)
            .says("nothing to do: the release is complete");
    }
}

#[test]
fn hostile_release_refuses_a_second_run_into_the_same_out() {
    let dir = temp();
    let d = dir.path();
    std::fs::create_dir(d.join("out")).unwrap();
    // Another run holds --out.
    let held = std::fs::File::open(d.join("out")).unwrap();
    held.try_lock().unwrap();
    let before = snapshot(d);
    example_release(d)
        .expect(2, "second run")
        .says("another `olmpack release` is writing to this directory now")
        .in_our_words();
    assert_eq!(snapshot(d), before, "the second run changed files");
    drop(held);
    example_release(d).expect(0, "after the first run ended");
}

#[test]
fn hostile_release_removes_what_an_interrupted_run_left() {
    let dir = temp();
    let d = dir.path();
    for leftover in [
        ".release-staging-Xa1b2c/images/catalog/blobs/sha256/x",
        ".bundle.olmpack-old-Q1w2e3/1.0.0/manifests/a.yaml",
        ".catalog.olmpack-new-Z9y8x7/catalog.json",
    ] {
        write(&d.join("out").join(leftover), "half written\n");
    }
    write(&d.join("out/.my-notes"), "mine\n");
    std::fs::create_dir(d.join("elsewhere")).unwrap();
    write(&d.join("elsewhere/keep"), "mine\n");
    symlink(d.join("elsewhere"), d.join("out/.release-staging-link")).unwrap();
    example_release(d).expect(0, "release after an interrupted one");
    let mut names: Vec<String> = std::fs::read_dir(d.join("out"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    names.sort();
    assert_eq!(names, [".my-notes", ".release-staging-link"]);
    assert!(d.join("elsewhere/keep").is_file());
}

// --- one contract for a bundle file that cannot be read ---

#[test]
fn hostile_unreadable_bundle_file_is_refused_alike_everywhere() {
    let dir = temp();
    let d = dir.path();
    bundle_fixture(&d.join("b"));
    mkfifo(&d.join("b/manifests/pipe.yaml"));
    let line = "bundle b: manifests/pipe.yaml: is a FIFO (named pipe), not a regular file; olmpack reads only regular files";
    for args in [
        &["bundle", "validate", "b"][..],
        &["catalog", "render", "b"],
        &["image", "build", "bundle", "b", "--layout", "out"],
    ] {
        run(d, args)
            .expect(1, &format!("{args:?}"))
            .says(line)
            .in_our_words();
    }
    assert!(!d.join("out").exists());
}

// --- key files: bounded regular files ---

#[test]
fn hostile_sign_key_that_is_a_fifo_a_device_or_huge_is_refused_naming_it() {
    let (dir, _) = example();
    let d = dir.path();
    mkfifo(&d.join("key.fifo"));
    sparse(&d.join("huge.pem"), 3 << 30);
    let rows = [
        (
            "key.fifo",
            1,
            "key.fifo: is a FIFO (named pipe), not a regular file; olmpack reads only regular files",
        ),
        (
            "/dev/zero",
            1,
            "/dev/zero: is a device, not a regular file; olmpack reads only regular files",
        ),
        (
            "huge.pem",
            1,
            "huge.pem: is 3221225472 bytes, more than the 1048576 bytes a key or credentials file may have",
        ),
        ("missing.pem", 2, "missing.pem: does not exist"),
    ];
    for (key, code, message) in rows {
        let before = snapshot(d);
        run_with(
            d,
            &["release", "--sign-key", key, "--out", "out"],
            std::time::Duration::from_secs(20),
        )
        .expect(code, key)
        .says("cannot read the signing key")
        .says(message)
        .in_our_words();
        assert_eq!(snapshot(d), before, "{key}: files were written");
    }
}
