//! Hostile sizes (issue 23): input that is endless, huge or built to make an algorithm
//! super-linear — stdin read within `--max-file-size`, catalogs of 20,000 entries whose
//! skipRanges cover every older version, a CRD of 3,000 versions — each finishes in bounded
//! time and memory.

mod hostile_support;

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hostile_support::*;

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

// --- stdin is read within --max-file-size ---

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

// --- catalog algorithms: n·log n (a hang check; the speed targets are benchmarks) ---

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
