//! Hostile and broken input (issue 13): every case is built in a temp dir — FIFOs, symlink
//! cycles, sparse files, files outside the project — and must end with the documented exit
//! code, a message naming the file in our words, and nothing written or removed.

mod hostile_support;

use std::os::unix::fs::symlink;
use std::path::Path;

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

// --- outputs: never destroy what olmpack did not make ---

#[test]
fn hostile_out_file_is_refused_and_kept() {
    let (dir, _) = example();
    let d = dir.path();
    write(&d.join("notes.txt"), "my notes\n");
    for args in [
        &["bundle", "generate", "--out", "notes.txt"][..],
        &["catalog", "generate", "--out", "notes.txt"],
        &["generate", "--catalog", "notes.txt"],
        &["generate", "--bundles", "notes.txt"],
    ] {
        let before = snapshot(d);
        run(d, args)
            .expect(2, &format!("{args:?}"))
            .says("notes.txt: is a file, not a directory")
            .says("nothing was written")
            .in_our_words();
        assert_eq!(snapshot(d), before, "{args:?} changed files");
    }
}

#[test]
fn hostile_out_device_like_path_is_refused() {
    let (dir, _) = example();
    let d = dir.path();
    mkfifo(&d.join("null"));
    std::fs::create_dir(d.join("real")).unwrap();
    write(&d.join("real/mine.txt"), "x");
    symlink("real", d.join("link")).unwrap();
    for (out, says) in [
        ("null", "is not a directory (a device, FIFO or socket)"),
        ("link", "is a symlink"),
        ("real", "olmpack did not generate (it holds mine.txt"),
    ] {
        let before = snapshot(d);
        run(d, &["bundle", "generate", "--out", out])
            .expect(2, out)
            .says(says)
            .in_our_words();
        assert_eq!(snapshot(d), before, "--out {out} changed files");
    }
}

#[test]
fn hostile_generated_trees_are_replaced_and_stamped() {
    let (dir, _) = example();
    let d = dir.path();
    run(d, &["generate"]).expect(0, "first run");
    assert!(d.join("bundle/.olmpack-generated").is_file());
    assert!(d.join("catalog/.olmpack-generated").is_file());
    // A tree generated before stamps existed: every file is one olmpack writes.
    std::fs::remove_file(d.join("bundle/.olmpack-generated")).unwrap();
    run(d, &["generate"]).expect(0, "unstamped generated tree");
    run(d, &["generate", "--check"]).expect(0, "check ignores the stamp");
    // A stamped tree with a file olmpack no longer writes is still replaced (stale version).
    write(&d.join("bundle/0.0.1/manifests/old.yaml"), "kind: Old\n");
    run(d, &["generate"]).expect(0, "stamped tree with a stale file");
    assert!(!d.join("bundle/0.0.1").exists());
}

// --- inputs: never hang ---

#[test]
fn hostile_symlink_cycles_end_the_walk() {
    let dir = temp();
    let d = dir.path();
    write(&d.join("catalog/demo/catalog.yaml"), CATALOG);
    symlink(".", d.join("catalog/a")).unwrap();
    symlink(".", d.join("catalog/b")).unwrap();
    symlink("..", d.join("catalog/demo/up")).unwrap();
    for cmd in ["validate", "graph", "upgrade-paths"] {
        run(d, &["catalog", cmd, "catalog"])
            .expect(1, cmd)
            .says("a: leads to the directory")
            .says("b: leads to the directory")
            .says("already being read")
            .in_our_words();
    }
    run(d, &["catalog", "render", "catalog"])
        .expect(1, "render")
        .says("already being read");
}

#[test]
fn hostile_fifos_are_refused_without_blocking() {
    let dir = temp();
    let d = dir.path();
    // A catalog file.
    write(&d.join("catalog/demo/catalog.yaml"), CATALOG);
    mkfifo(&d.join("catalog/demo/extra.yaml"));
    run(d, &["catalog", "validate", "catalog"])
        .expect(1, "catalog validate")
        .says("demo/extra.yaml")
        .says("is a FIFO (named pipe), not a regular file");
    run(d, &["catalog", "graph", "catalog/demo/extra.yaml"])
        .expect(1, "graph on a FIFO")
        .says("FIFO");
    // A manifest.
    bundle_fixture(&d.join("bundle"));
    mkfifo(&d.join("bundle/manifests/pipe.yaml"));
    // A file olmpack cannot read is refused alike by every command that reads the bundle
    // (issue 23: one contract), never blocking.
    run(d, &["bundle", "validate", "bundle"])
        .expect(1, "bundle validate")
        .says("manifests/pipe.yaml")
        .says("FIFO");
    run(d, &["catalog", "render", "bundle"])
        .expect(1, "render")
        .says("manifests/pipe.yaml");
    // The plan, a template.
    mkfifo(&d.join("olmpack.yaml"));
    mkfifo(&d.join("template.yaml"));
    run(d, &["generate"])
        .expect(1, "plan")
        .says("olmpack.yaml: is a FIFO");
    run(d, &["plan", "edges"]).expect(1, "plan edges");
    run(d, &["catalog", "template", "template.yaml"])
        .expect(1, "template")
        .says("template.yaml: is a FIFO");
}

#[test]
fn hostile_fifo_as_manifest_icon_or_sample_of_a_plan() {
    for target in ["icon.svg", "samples/v1.yaml", "deploy/1.1.0/pipe.yaml"] {
        let (dir, _) = example();
        let d = dir.path();
        let _ = std::fs::remove_file(d.join(target));
        mkfifo(&d.join(target));
        let before = snapshot(d);
        run(d, &["generate"])
            .expect(1, target)
            .says(target)
            .says("FIFO")
            .says("nothing written")
            .in_our_words();
        assert_eq!(snapshot(d), before, "{target}: files changed");
    }
}

// --- inputs: never read without bound, never outside the project ---

#[test]
fn hostile_huge_files_are_refused_from_their_size() {
    let (dir, _) = example();
    let d = dir.path();
    // 300 GiB, sparse: reading it would take minutes and all memory.
    std::fs::remove_file(d.join("icon.svg")).unwrap();
    sparse(&d.join("icon.svg"), 300 << 30);
    run(d, &["generate"])
        .expect(1, "huge icon")
        .says("icon.svg: is 322122547200 bytes, more than the limit")
        .says("--max-file-size")
        .in_our_words();
    let cat = temp();
    write(&cat.path().join("c/catalog.yaml"), CATALOG);
    sparse(&cat.path().join("c/big.json"), 300 << 30);
    run(cat.path(), &["catalog", "validate", "c"])
        .expect(1, "huge catalog file")
        .says("big.json");
}

/// The limits are one value handed from the command line to every reader: a 2 MiB file under
/// `--max-file-size 1` is refused by each command that reads a bundle or a catalog (under the
/// default limit of 256 MiB it would be read).
#[test]
fn hostile_lowered_limits_reach_every_reader() {
    let dir = temp();
    let d = dir.path();
    bundle_fixture(&d.join("bundles/b"));
    let pad = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: pad}}\ndata: {{pad: \"{}\"}}\n",
        "x".repeat(2 << 20)
    );
    write(&d.join("bundles/b/manifests/pad.configmap.yaml"), &pad);
    let mut big = String::from(CATALOG);
    big.push_str(&format!(
        "---\nschema: custom.pad\npad: \"{}\"\n",
        "x".repeat(2 << 20)
    ));
    write(&d.join("c/catalog.yaml"), &big);
    let limit = "more than the limit of 1048576 bytes";
    for args in [
        &["bundle", "validate", "bundles/b"][..],
        &["catalog", "render", "bundles/b"],
        &["catalog", "render", "c"],
        &["catalog", "graph", "c"],
        &["catalog", "upgrade-paths", "c"],
        &["image", "build", "bundle", "bundles/b", "--layout", "out"],
        &["upgrade", "check", "--catalog", "c", "--bundles", "bundles"],
    ] {
        let mut args = args.to_vec();
        args.extend(["--max-file-size", "1"]);
        run(d, &args)
            .expect(1, &format!("{args:?}"))
            .says(limit)
            .in_our_words();
    }
    assert!(!d.join("out").exists(), "image build wrote a layout");
}

#[test]
fn hostile_limits_are_flags() {
    let dir = temp();
    let d = dir.path();
    let mut big = String::from(CATALOG);
    big.push_str(&format!(
        "---\nschema: custom.pad\npad: \"{}\"\n",
        "x".repeat(3 << 20)
    ));
    write(&d.join("c/catalog.yaml"), &big);
    run(d, &["catalog", "validate", "c", "--max-file-size", "1"])
        .expect(1, "over a lowered limit")
        .says("more than the limit of 1048576 bytes");
    run(d, &["catalog", "validate", "c", "--max-file-size", "8"]).expect(0, "raised again");
    run(d, &["catalog", "validate", "c", "--max-input-size", "1"])
        .expect(1, "tree limit")
        .says("--max-input-size");
    run(d, &["catalog", "validate", "c", "--max-input-files", "0"])
        .expect(1, "file count limit")
        .says("--max-input-files");
}

#[test]
fn hostile_plan_paths_stay_inside_the_plan_directory() {
    let outside = temp();
    write(&outside.path().join("secret"), "root:x:0:0\n");
    write(
        &outside.path().join("etc/x.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: stolen}\n",
    );
    let secret = outside.path().join("secret");
    let etc = outside.path().join("etc");
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "absolute icon path",
            format!(
                "icon: {{path: {}, mediatype: image/svg+xml}}",
                secret.display()
            ),
            "csv.icon.path",
        ),
        (
            "manifests up the tree",
            format!("manifests: {}", etc.display()),
            "releases[0].manifests",
        ),
    ];
    for (name, line, field) in cases {
        let (dir, plan) = example();
        let d = dir.path();
        let text = std::fs::read_to_string(&plan).unwrap();
        let text = if line.starts_with("icon") {
            text.replace("icon: {path: icon.svg, mediatype: image/svg+xml}", &line)
        } else {
            text.replacen("manifests: deploy/1.0.0", &line, 1)
        };
        write(&plan, text);
        let before = snapshot(d);
        run(d, &["generate"])
            .expect(1, name)
            .says(field)
            .says("must stay inside the plan's directory")
            .in_our_words();
        assert_eq!(snapshot(d), before, "{name}: files changed");
        run(d, &["generate", "--allow-outside-paths"]).expect(0, &format!("{name} allowed"));
    }
    // Relative escapes and a symlink leading out.
    let (dir, plan) = example();
    let d = dir.path();
    let rel = pathdiff(outside.path(), d);
    let text = std::fs::read_to_string(&plan).unwrap().replace(
        "icon: {path: icon.svg",
        &format!("icon: {{path: {}/secret", rel),
    );
    write(&plan, text);
    run(d, &["generate"])
        .expect(1, "../ icon")
        .says("csv.icon.path");
    let (dir, _) = example();
    let d = dir.path();
    std::fs::remove_file(d.join("icon.svg")).unwrap();
    symlink(&secret, d.join("icon.svg")).unwrap();
    run(d, &["generate"])
        .expect(1, "symlinked icon")
        .says("csv.icon.path");
    let (dir, _) = example();
    let d = dir.path();
    symlink(&etc, d.join("deploy/1.0.0/linked")).unwrap();
    run(d, &["generate"])
        .expect(1, "symlink in manifests leading out")
        .says("deploy/1.0.0/linked")
        .says("outside");
    assert!(!d.join("bundle").exists());
    run(d, &["generate", "--allow-outside-paths"]).expect(0, "symlink allowed");
    let csv = std::fs::read_to_string(d.join("bundle/1.0.0/manifests/stolen_v1_configmap.yaml"));
    assert!(csv.is_ok(), "the linked ConfigMap is read when allowed");
}

/// `../../x` from `from` to `to` (both absolute).
fn pathdiff(to: &Path, from: &Path) -> String {
    let ups = from.components().count() - 1;
    format!(
        "{}{}",
        "../".repeat(ups),
        to.strip_prefix("/").unwrap().display()
    )
}

#[test]
fn hostile_huge_string_in_plan_is_bounded_and_truncated() {
    let (dir, plan) = example();
    let d = dir.path();
    let text = std::fs::read_to_string(&plan).unwrap().replace(
        "package: guestbook-operator",
        &format!("package: {}", "A".repeat(10 << 20)),
    );
    write(&plan, text);
    // run() caps the address space at 2 GiB.
    let out = run(d, &["generate"]);
    out.expect(1, "10 MB package name").in_our_words();
    assert!(
        out.all().len() < 4000,
        "{} bytes of output",
        out.all().len()
    );
    assert!(out.all().contains("characters left out"), "{}", out.all());
}

/// Image names the catalog would refuse are the plan's fault, said against the plan's field
/// (found by the fuzzer: a 1 MiB operatorImage reached the catalog check, which named no file).
#[test]
fn hostile_plan_images_are_refused_against_the_plan() {
    let cases: [(&str, String, &str); 3] = [
        (
            "operatorImage: quay.io/olmpack/guestbook-operator:v{version}",
            format!("operatorImage: {}", "h".repeat(1 << 20)),
            "olmpack.yaml: operatorImage: \"hhh",
        ),
        (
            "bundleImage: quay.io/olmpack/guestbook-operator-bundle:v{version}",
            "bundleImage: quay.io/olmpack/Guestbook:v{version}".into(),
            "olmpack.yaml: bundleImage: for release 1.0.0 names \"quay.io/olmpack/Guestbook:v1.0.0\", which is not an image reference",
        ),
        (
            "bundleImage: quay.io/olmpack/guestbook-operator-bundle:v{version}",
            String::new(),
            "olmpack.yaml: bundleImage: not set; the catalog names each bundle by its image",
        ),
    ];
    for (from, to, expected) in cases {
        let (dir, plan) = example();
        let text = std::fs::read_to_string(&plan).unwrap();
        assert!(text.contains(from), "{from}");
        write(&plan, text.replace(from, &to));
        let out = run(dir.path(), &["generate", "--check"]);
        out.expect(1, expected).says(expected).in_our_words();
    }
}

// --- exit codes and messages ---

/// Turns the plan's text into broken bytes.
type Breaker = Box<dyn Fn(&str) -> Vec<u8>>;

#[test]
fn hostile_invalid_plans_exit_1_in_our_words() {
    let cases: Vec<(&str, Breaker, &str)> = vec![
        (
            "syntax",
            Box::new(|t| format!("{t}\n  - [oops\n").into_bytes()),
            "olmpack.yaml",
        ),
        (
            "wrong type",
            Box::new(|t| t.replace("csv:\n", "csv: 3\nx:\n").into_bytes()),
            "olmpack.yaml",
        ),
        (
            "whole plan of the wrong type",
            Box::new(|_| b"just a string\n".to_vec()),
            "expected a mapping",
        ),
        (
            "bad UTF-8",
            Box::new(|t| {
                let mut b = t.as_bytes().to_vec();
                b.extend_from_slice(b"# \xff\xfe\n");
                b
            }),
            "olmpack.yaml: is not UTF-8 text",
        ),
        (
            "two documents",
            Box::new(|t| format!("{t}---\npackage: x\n").into_bytes()),
            "more than one YAML document",
        ),
    ];
    for (name, change, says) in cases {
        let (dir, plan) = example();
        let text = std::fs::read_to_string(&plan).unwrap();
        std::fs::write(&plan, change(&text)).unwrap();
        let before = snapshot(dir.path());
        run(dir.path(), &["generate"])
            .expect(1, name)
            .says(says)
            .in_our_words();
        assert_eq!(snapshot(dir.path()), before, "{name}");
        run(dir.path(), &["plan", "edges"]).expect(1, name);
    }
    // Lenient as Go's decoders: a BOM, empty leading and trailing documents, CRLF.
    let (dir, plan) = example();
    let text = std::fs::read_to_string(&plan).unwrap();
    let text = format!("\u{feff}---\n---\n{}---\n", text.replace('\n', "\r\n"));
    std::fs::write(&plan, text).unwrap();
    run(dir.path(), &["plan", "edges"]).expect(0, "BOM, CRLF, empty documents");
    // Duplicate keys: whatever the decoding rule, never exit 2 and never a library's words.
    let (dir, plan) = example();
    let text = std::fs::read_to_string(&plan).unwrap();
    std::fs::write(&plan, format!("{text}package: again\n")).unwrap();
    let out = run(dir.path(), &["plan", "edges"]);
    out.in_our_words();
    assert_ne!(out.code, 2, "{}", out.all());
}

#[test]
fn hostile_invalid_catalog_fails_alike_everywhere() {
    let dir = temp();
    let d = dir.path();
    write(
        &d.join("c/catalog.yaml"),
        format!("{CATALOG}---\nschema: [oops\n"),
    );
    write(&d.join("plain.txt"), "these are my notes, not a catalog\n");
    for args in [
        &["catalog", "validate", "c"][..],
        &["catalog", "render", "c"],
        &["catalog", "graph", "c"],
        &["catalog", "upgrade-paths", "c"],
        &["catalog", "graph", "plain.txt"],
    ] {
        run(d, args)
            .expect(1, &format!("{args:?}"))
            .says(if args[2] == "plain.txt" {
                "plain.txt"
            } else {
                "catalog.yaml"
            })
            .in_our_words();
    }
}

#[test]
fn hostile_image_build_parses_what_it_packages() {
    let dir = temp();
    let d = dir.path();
    bundle_fixture(&d.join("bundle"));
    write(&d.join("bundle/manifests/broken.yaml"), "kind: [oops\n");
    run(
        d,
        &["image", "build", "bundle", "bundle", "--layout", "out"],
    )
    .expect(1, "broken bundle")
    .says("manifests/broken.yaml")
    .says("--as-is");
    assert!(!d.join("out").exists());
    run(
        d,
        &[
            "image", "build", "bundle", "bundle", "--layout", "out", "--as-is",
        ],
    )
    .expect(0, "--as-is");
    write(&d.join("c/catalog.yaml"), "schema: [oops\n");
    run(d, &["image", "build", "catalog", "c", "--layout", "out2"])
        .expect(1, "broken catalog")
        .says("catalog.yaml");
    assert!(!d.join("out2").exists());
}

#[test]
fn hostile_resource_bombs_are_stopped_in_our_words() {
    let dir = temp();
    let d = dir.path();
    // Alias bomb: 9 levels of 10 aliases each = 10^9 values if expanded.
    let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..10 {
        let p = i - 1;
        bomb.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    write(
        &d.join("c/catalog.yaml"),
        format!("{CATALOG}---\nschema: custom\n{bomb}"),
    );
    run(d, &["catalog", "validate", "c"])
        .expect(1, "alias bomb")
        .says("catalog.yaml")
        .in_our_words();
    // Deep nesting and too many documents.
    write(
        &d.join("c/catalog.yaml"),
        format!(
            "{CATALOG}---\nschema: custom\nx: {}{}\n",
            "[".repeat(5000),
            "]".repeat(5000)
        ),
    );
    run(d, &["catalog", "validate", "c"])
        .expect(1, "deep nesting")
        .in_our_words();
    let many: String = (0..100_001)
        .map(|i| format!("---\nschema: c{i}\n"))
        .collect();
    write(&d.join("c/catalog.yaml"), format!("{CATALOG}{many}"));
    run(d, &["catalog", "validate", "c"])
        .expect(1, "many documents")
        .says("catalog.yaml")
        .says("too large to read safely: 100001 documents")
        .in_our_words();
}

#[test]
fn hostile_control_and_bidi_characters_are_shown_safely() {
    let dir = temp();
    let d = dir.path();
    let evil = "demo\u{202e}txt.exe\u{0}";
    write(
        &d.join("c/catalog.json"),
        format!(
            "{{\"schema\":\"olm.package\",\"name\":\"{}\",\"defaultChannel\":\"x\"}}",
            evil.replace('\u{0}', "\\u0000")
        ),
    );
    let text = run(d, &["catalog", "validate", "c"]);
    text.expect(1, "text").in_our_words();
    assert!(!text.stdout.contains('\u{202e}'), "{}", text.stdout);
    assert!(text.stdout.contains("<U+202E>"), "{}", text.stdout);
    let json = run(d, &["catalog", "validate", "c", "--output", "json"]);
    json.expect(1, "json");
    assert!(!json.stdout.contains('\u{202e}'));
    assert!(json.stdout.contains("\\u202e"), "{}", json.stdout);
    let value: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let messages: Vec<String> = value["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["message"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        messages.iter().any(|m| m.contains('\u{202e}')),
        "the raw value is carried: {messages:?}"
    );
}

#[test]
fn hostile_render_names_the_broken_file() {
    let dir = temp();
    let d = dir.path();
    // A CSV that does not parse (a tab where YAML wants spaces).
    bundle_fixture(&d.join("tabs"));
    let csv = d.join("tabs/manifests/memcached-operator.clusterserviceversion.yaml");
    let text = std::fs::read_to_string(&csv).unwrap();
    std::fs::write(&csv, text.replacen("\n  ", "\n\t", 3)).unwrap();
    run(d, &["catalog", "render", "tabs"])
        .expect(1, "tabs")
        .says("memcached-operator.clusterserviceversion.yaml")
        .in_our_words();
    // A CSV that is a symlink loop.
    bundle_fixture(&d.join("loop"));
    let csv = d.join("loop/manifests/memcached-operator.clusterserviceversion.yaml");
    std::fs::remove_file(&csv).unwrap();
    symlink(csv.file_name().unwrap(), &csv).unwrap();
    run(d, &["catalog", "render", "loop"])
        .expect(1, "loop")
        .says("memcached-operator.clusterserviceversion.yaml")
        .says("symlink loop");
    // `manifests` is a file: still a bundle, and the error says so.
    bundle_fixture(&d.join("flat"));
    std::fs::remove_dir_all(d.join("flat/manifests")).unwrap();
    write(&d.join("flat/manifests"), "not a directory\n");
    write(&d.join("flat/bundle.Dockerfile"), "FROM scratch\n");
    let out = run(d, &["catalog", "render", "flat"]);
    out.expect(1, "manifests is a file").in_our_words();
    assert!(!out.all().contains("bundle.Dockerfile"), "{}", out.all());
}

#[test]
fn hostile_empty_leading_documents_are_accepted_and_a_bom_read_as_opm_reads_it() {
    let dir = temp();
    let d = dir.path();
    bundle_fixture(&d.join("b"));
    let ann = d.join("b/metadata/annotations.yaml");
    let text = std::fs::read_to_string(&ann).unwrap();
    std::fs::write(&ann, format!("---\n---\n{text}")).unwrap();
    // The annotations are read: the channel they name is checked.
    run(d, &["bundle", "validate", "b"])
        .expect(0, "annotations after empty documents")
        .says("metadata/annotations.yaml: operators.operatorframework.io.bundle.channels.v1: channel \"alpha\"");
    let plain = temp();
    let json = serde_json::to_string(&serde_json::json!({
        "schema": "olm.package", "name": "demo", "defaultChannel": "stable"
    }))
    .unwrap();
    let rest = "{\"schema\":\"olm.channel\",\"package\":\"demo\",\"name\":\"stable\",\"entries\":[{\"name\":\"demo.v1.0.0\"}]}\n{\"schema\":\"olm.bundle\",\"package\":\"demo\",\"name\":\"demo.v1.0.0\",\"image\":\"quay.io/demo/b:v1\",\"properties\":[{\"type\":\"olm.package\",\"value\":{\"packageName\":\"demo\",\"version\":\"1.0.0\"}}]}\n";
    write(
        &plain.path().join("c/catalog.json"),
        format!("{json}\n{rest}"),
    );
    run(plain.path(), &["catalog", "validate", "c"]).expect(0, "without BOM");
    write(
        &plain.path().join("c/catalog.json"),
        format!("\u{feff}{json}\n{rest}"),
    );
    // opm reads a JSON file behind a BOM as YAML, one object per document: the package only.
    run(plain.path(), &["catalog", "validate", "c"])
        .expect(1, "with BOM")
        .says("warning[catalog/lenient-yaml] catalog.json: the file begins with a UTF-8 byte-order mark, so opm reads it as YAML and keeps only the first object of each document: 2 of its 3 objects are ignored");
}
