//! Hostile input, round two (issue 23): output directories olmpack did not mark as its own,
//! FIFOs where blobs should be, unbounded stdin, release runs that meet corrupted layouts, a
//! concurrent run or an interrupted one, super-linear catalog algorithms, graph ids, one
//! contract for unreadable bundle files, and messages in our words.

mod hostile_support;

use std::io::Write as _;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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

/// Runs olmpack with `args`, feeding `input` to its stdin endlessly (repeated) until it stops
/// reading; a deadline turns a hang into a failure.
fn run_fed(cwd: &Path, args: &[&str], input: &'static [u8]) -> Outcome {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 2097152; exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_olmpack"))
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    std::thread::spawn(move || while stdin.write_all(input).is_ok() {});
    let (mut out, mut err) = (child.stdout.take().unwrap(), child.stderr.take().unwrap());
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut out, &mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut err, &mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("olmpack {args:?} kept reading stdin for more than 60 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Outcome {
        code: status.code().unwrap_or(-1),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
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

// --- 1. an output directory olmpack may replace is one it marked as its own ---

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

// --- 2. a blob that is a FIFO is refused, not waited on ---

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

// --- 3. stdin is read within --max-file-size ---

#[test]
fn hostile_template_on_stdin_is_bounded() {
    let dir = temp();
    let out = run_fed(
        dir.path(),
        &["catalog", "template", "-", "--max-file-size", "1"],
        b"a: b\n",
    );
    out.expect(1, "endless stdin")
        .says("the template on standard input: is more than the limit of 1048576 bytes")
        .says("--max-file-size")
        .in_our_words();
}

// --- 4.–6. release: verified layouts, one run per --out, leftovers removed ---

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

// --- 7. catalog algorithms: n·log n (a hang check; the speed targets are benchmarks) ---

/// One package, one channel of `n` bundles, each replacing the previous; `skip_range`
/// decides each entry's skipRange from its index.
fn chain(n: usize, skip_range: impl Fn(usize) -> Option<String>) -> String {
    let mut out =
        String::from("{\"schema\":\"olm.package\",\"name\":\"p\",\"defaultChannel\":\"stable\"}\n");
    let mut entries = Vec::new();
    for i in 0..n {
        let mut e = serde_json::json!({"name": format!("p.v1.{i}.0")});
        if i > 0 {
            e["replaces"] = format!("p.v1.{}.0", i - 1).into();
        }
        if let Some(r) = skip_range(i) {
            e["skipRange"] = r.into();
        }
        entries.push(e);
    }
    out.push_str(
        &serde_json::json!({"schema":"olm.channel","package":"p","name":"stable","entries":entries})
            .to_string(),
    );
    out.push('\n');
    for i in 0..n {
        out.push_str(&format!(
            "{{\"schema\":\"olm.bundle\",\"package\":\"p\",\"name\":\"p.v1.{i}.0\",\"image\":\"quay.io/p/b:v1.{i}.0\",\"properties\":[{{\"type\":\"olm.package\",\"value\":{{\"packageName\":\"p\",\"version\":\"1.{i}.0\"}}}}]}}\n"
        ));
    }
    out
}

#[test]
fn hostile_large_catalogs_finish() {
    let dir = temp();
    let d = dir.path();
    // 20,000 entries, each with a skipRange covering every older version (2·10⁸ pairs).
    write(
        &d.join("wide/catalog.json"),
        chain(20_000, |i| (i > 0).then(|| format!(">=1.0.0 <1.{i}.0"))),
    );
    let out = run(d, &["catalog", "validate", "wide"]);
    out.expect(0, "20,000 skipRange entries");
    // upgrade-paths prints every path: 400 bundles.
    write(
        &d.join("paths/catalog.json"),
        chain(400, |i| {
            (i % 2 == 1).then(|| format!(">=1.{}.0 <1.{i}.0", i - 1))
        }),
    );
    let out = run(d, &["catalog", "upgrade-paths", "paths"]);
    out.expect(0, "upgrade-paths on 400 bundles");
    assert!(
        out.stdout.contains("p.v1.0.0 → p.v1.1.0 (replaces)"),
        "{}",
        out.stdout
    );
    run(d, &["catalog", "graph", "paths"]).expect(0, "graph on 400 bundles");
}

#[test]
fn hostile_crd_with_3000_versions_is_checked() {
    let dir = temp();
    let d = dir.path();
    let crd = |extra: &str| {
        let mut versions = String::new();
        for i in 0..3000 {
            let storage = i == 2999;
            versions.push_str(&format!(
                "  - name: v{}\n    served: true\n    storage: {storage}\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          spec:\n            type: object\n            properties:\n              size: {{type: integer}}\n{}",
                i + 1,
                if i % 1000 == 999 { extra } else { "" }
            ));
        }
        format!(
            "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: things.example.com}}\nspec:\n  group: example.com\n  names: {{kind: Thing, plural: things, singular: thing, listKind: ThingList}}\n  scope: Namespaced\n  versions:\n{versions}"
        )
    };
    write(&d.join("old.yaml"), crd(""));
    write(
        &d.join("new.yaml"),
        crd("              color: {type: string, enum: [red]}\n"),
    );
    let out = run(d, &["upgrade", "check", "--crd", "old.yaml", "new.yaml"]);
    out.in_our_words();
    assert!(out.code == 0 || out.code == 1, "{}", out.all());
}

// --- 8. graph ids injective, names escaped ---

#[test]
fn hostile_graph_ids_are_distinct_and_names_escaped() {
    let dir = temp();
    let d = dir.path();
    let bundle = |name: &str, version: &str| {
        serde_json::json!({"schema":"olm.bundle","package":"p","name":name,"image":format!("quay.io/p/b:{version}"),
            "properties":[{"type":"olm.package","value":{"packageName":"p","version":version}}]})
        .to_string()
    };
    let channel = "sta\"ble";
    let evil = "p.v1.2.0\u{1b}[31m\nred";
    let text = [
        serde_json::json!({"schema":"olm.package","name":"p","defaultChannel":channel}).to_string(),
        serde_json::json!({"schema":"olm.channel","package":"p","name":channel,"entries":[
            {"name":"p.v1.0.0"},{"name":"p-v1-0-0","replaces":"p.v1.0.0"},
            {"name":evil,"replaces":"p-v1-0-0"},{"name":"end","replaces":evil}]})
        .to_string(),
        bundle("p.v1.0.0", "1.0.0"),
        bundle("p-v1-0-0", "1.1.0"),
        bundle(evil, "1.2.0"),
        bundle("end", "1.3.0"),
    ]
    .join("\n");
    write(&d.join("c/catalog.json"), text);
    run(d, &["catalog", "validate", "c"]).expect(0, "the catalog is valid");
    let mermaid = run(d, &["catalog", "graph", "c"]);
    mermaid.expect(0, "mermaid");
    let dot = run(d, &["catalog", "graph", "c", "--format", "dot"]);
    dot.expect(0, "dot");
    for (what, text, shown) in [
        (
            "mermaid",
            &mermaid.stdout,
            "#60;U+001B#62;[31m#60;U+000A#62;red",
        ),
        ("dot", &dot.stdout, "<U+001B>[31m<U+000A>red"),
    ] {
        assert!(!text.contains('\u{1b}'), "{what}: raw ESC\n{text}");
        assert!(text.contains(shown), "{what}: ESC not shown\n{text}");
        assert!(!text.contains("[31m\nred"), "{what}: raw newline\n{text}");
    }
    // Four nodes, four ids, each declared once.
    let ids: Vec<&str> = mermaid
        .stdout
        .lines()
        .filter_map(|l| l.trim().strip_prefix("class "))
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!((ids.len(), unique.len()), (4, 4), "{}", mermaid.stdout);
    assert!(!ids.contains(&"end"), "mermaid's keyword as an id: {ids:?}");
    // Every label is one quoted string: no raw quote inside mermaid's ["…"].
    for line in mermaid.stdout.lines().filter(|l| l.contains("[\"")) {
        let inner = &line[line.find("[\"").unwrap() + 2..line.rfind("\"]").unwrap()];
        assert!(!inner.contains('"'), "raw quote in {line}");
    }
    assert!(
        mermaid.stdout.contains("channel sta#34;ble"),
        "{}",
        mermaid.stdout
    );
    // dot: quotes escaped, so every line has an even number of unescaped quotes.
    for line in dot.stdout.lines() {
        let unescaped = line.replace("\\\\", "").replace("\\\"", "");
        assert_eq!(unescaped.matches('"').count() % 2, 0, "{line}");
    }
    assert!(
        dot.stdout.contains("label=\"channel sta\\\"ble"),
        "{}",
        dot.stdout
    );
    let node_ids: Vec<&str> = dot
        .stdout
        .lines()
        .filter(|l| l.contains(" [label=") && !l.contains("->"))
        .map(|l| l.trim().split("\" [").next().unwrap())
        .collect();
    let mut unique = node_ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!((node_ids.len(), unique.len()), (4, 4), "{}", dot.stdout);
}

// --- 9. one contract for a bundle file that cannot be read ---

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

// --- 10. messages in our words ---

#[test]
fn hostile_messages_name_the_problem_in_our_words() {
    let dir = temp();
    let d = dir.path();
    let catalog_cases: [(&str, &str, &str); 3] = [
        (
            "c1/catalog.yaml",
            "schema: olm.package\nname: *nowhere\n",
            "alias *nowhere is used before an anchor &nowhere defines it",
        ),
        (
            "c2/catalog.yaml",
            "schema: olm.package\nname: &loop [*loop]\n",
            "alias *loop refers to the value that contains it",
        ),
        (
            "c3/catalog.json",
            "{\"schema\":\"olm.package\",\"name\":\"\\ud800\",\"defaultChannel\":\"x\"}\n",
            "\\ud800 is half of a UTF-16 surrogate pair, without its other half",
        ),
    ];
    for (file, text, says) in catalog_cases {
        write(&d.join(file), text);
        let (dir_arg, name) = file.split_once('/').unwrap();
        let out = run(d, &["catalog", "validate", dir_arg]);
        out.expect(1, file)
            .says(&format!("error[catalog/load] {name}: invalid "))
            .says(says)
            .in_our_words();
        for leak in ["alias bomb", "weak recursion", "hex escape"] {
            assert!(!out.all().contains(leak), "{file}: {leak}\n{}", out.all());
        }
    }
    // The plan.
    let (plan_dir, plan) = example();
    write(&plan, "- package: x\n- releases: []\n");
    run(plan_dir.path(), &["plan", "edges"])
        .expect(1, "a list as the plan")
        .says("olmpack.yaml: (top level): wrong type: a list, expected a mapping (package:, releases:, …)")
        .in_our_words();
    let (plan_dir, plan) = example();
    let text = std::fs::read_to_string(&plan)
        .unwrap()
        .replace("package: guestbook-operator", "package: 0777");
    write(&plan, text);
    let out = run(plan_dir.path(), &["plan", "edges"]);
    out.expect(1, "package: 0777")
        .says(
            "package: wrong type: a number, expected a string (quote the value to keep it as text)",
        )
        .in_our_words();
    assert!(!out.all().contains("floating point"), "{}", out.all());
    // A CRD file holding a string.
    write(&d.join("s.yaml"), "just a string\n");
    write(&d.join("n.yaml"), "42\n");
    let out = run(d, &["upgrade", "check", "--crd", "s.yaml", "n.yaml"]);
    out.expect(1, "a string as a CRD")
        .says("s.yaml: a string is not an apiextensions.k8s.io/v1 CustomResourceDefinition")
        .in_our_words();
    assert!(!out.all().contains("  is not"), "{}", out.all());
    // A registry that is not there: the connection, in our words.
    write(&d.join("c/catalog.yaml"), CATALOG);
    run(d, &["image", "build", "catalog", "c", "--layout", "l"]).expect(0, "build");
    let out = run(d, &["image", "push", "l", "127.0.0.1:9/demo/catalog:v1"]);
    out.expect(2, "no registry")
        .says("cannot connect to http://127.0.0.1:9")
        .in_our_words();
    for leak in [
        "error sending request",
        "client error",
        "tcp connect error",
        "hyper",
    ] {
        assert!(!out.all().contains(leak), "{leak}\n{}", out.all());
    }
}
