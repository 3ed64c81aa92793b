//! Graphs and upgrade paths of fixture catalogs (insta snapshots) and their OLM v0/v1
//! differences.

use std::path::Path;

use olmpack::catalog::graph::{GraphFormat, draw};
use olmpack::catalog::load::load_dir;
use olmpack::catalog::model::Model;
use olmpack::catalog::upgrade;
use olmpack_model::upgrade_graph::EdgeKind;

fn model(name: &str) -> Model {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/catalog")
        .join(name);
    Model::build(&load_dir(&dir).unwrap().config).0
}

#[test]
fn mermaid_and_dot_snapshots() {
    let m = model("valid/two-channels-with-deprecations");
    insta::assert_snapshot!("two_channels_mermaid", draw(&m, None, GraphFormat::Mermaid));
    insta::assert_snapshot!("two_channels_dot", draw(&m, None, GraphFormat::Dot));
    let m = model("valid/skips-and-skiprange-on-head");
    insta::assert_snapshot!(
        "skiprange_mermaid",
        draw(&m, Some("pkg"), GraphFormat::Mermaid)
    );
    assert_eq!(
        draw(&m, None, GraphFormat::Dot),
        draw(&m, None, GraphFormat::Dot)
    );
}

#[test]
fn v0_and_v1_paths_differ_where_skiprange_is_not_on_the_head() {
    let m = model("invalid/skiprange-not-on-head");
    let paths = upgrade::package_paths(&m.packages["pkg"]);
    let from_a = paths.iter().find(|p| p.bundle == "pkg.v1.0.0").unwrap();
    // v0 ignores the non-head skipRange: 1.0.0 → 1.1.0 (replaces) → 1.2.0 (replaces).
    assert_eq!(
        from_a.v0.iter().map(|s| s.to.as_str()).collect::<Vec<_>>(),
        ["pkg.v1.1.0", "pkg.v1.2.0"]
    );
    // v1 sees both the replaces and the skipRange edge into 1.1.0, then goes on.
    assert_eq!(from_a.v1[0].to, "pkg.v1.1.0");
    let m = model("valid/skips-and-skiprange-on-head");
    let paths = upgrade::package_paths(&m.packages["pkg"]);
    let from_a = paths.iter().find(|p| p.bundle == "pkg.v1.0.0").unwrap();
    // The head's skipRange covers 1.0.0: v0 jumps straight to the head; v1 picks the highest.
    assert_eq!(from_a.v0.len(), 1);
    assert_eq!(from_a.v0[0].via, EdgeKind::SkipRange);
    assert_eq!(from_a.v1.len(), 1);
    assert_eq!(from_a.v1[0].to, "pkg.v1.2.0");
    insta::assert_snapshot!("upgrade_paths_text", upgrade::format_text(&paths));
}

#[test]
fn v1_prefers_non_deprecated_and_v0_follows_the_head() {
    let m = model("valid/two-channels-with-deprecations");
    let pkg = &m.packages["pkg"];
    let stable = &pkg.channels["stable"];
    let step = upgrade::v0_successor(pkg, stable, "pkg.v1.0.0").unwrap();
    assert_eq!(
        (step.to.as_str(), step.via),
        ("pkg.v1.1.0", EdgeKind::Replaces)
    );
    assert!(upgrade::v0_successor(pkg, stable, "pkg.v1.2.0").is_none());
    let step = upgrade::v1_successor(pkg, &[stable], "pkg.v1.1.0").unwrap();
    assert_eq!(step.to, "pkg.v1.2.0");
}

#[test]
fn cli_graph_and_upgrade_paths() {
    let bin = env!("CARGO_BIN_EXE_olmpack");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/catalog/valid/two-channels-with-deprecations");
    let run = |args: &[&str]| {
        let out = std::process::Command::new(bin)
            .args(args)
            .arg(&dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let m = model("valid/two-channels-with-deprecations");
    assert_eq!(
        run(&["catalog", "graph", "--format", "dot"]),
        draw(&m, None, GraphFormat::Dot)
    );
    assert_eq!(
        run(&["catalog", "graph", "--package", "pkg"]),
        draw(&m, None, GraphFormat::Mermaid)
    );
    let json: serde_json::Value =
        serde_json::from_str(&run(&["catalog", "upgrade-paths", "--json"])).unwrap();
    let first = &json[0];
    assert_eq!(first["channel"], "fast");
    assert_eq!(first["bundle"], "pkg.v1.0.0");
    assert_eq!(first["v0"][0]["to"], "pkg.v1.1.0");
    assert_eq!(first["v0"][0]["via"], "replaces");
}

/// `catalog graph` draws one package at a time and writes each out as it goes (issue 44:
/// memory bounded by the largest package): the text is the whole model's drawing, ids that
/// collide across packages (`a-b`, `a_b`) or that mermaid reserves (`end`) still numbered
/// apart; `--package` draws one.
#[test]
fn cli_graph_of_many_packages_is_the_whole_drawing() {
    let bin = env!("CARGO_BIN_EXE_olmpack");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/catalog/many-packages");
    let run = |args: &[&str]| {
        let out = std::process::Command::new(bin)
            .args(["catalog", "graph"])
            .args(args)
            .arg(&dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let m = model("many-packages");
    let mermaid = run(&[]);
    assert_eq!(mermaid, draw(&m, None, GraphFormat::Mermaid));
    let subgraphs: Vec<&str> = mermaid
        .lines()
        .filter(|l| l.starts_with("  subgraph"))
        .collect();
    assert_eq!(
        subgraphs,
        [
            "  subgraph a_b[\"a-b\"]",
            "  subgraph a_b_2[\"a_b\"]",
            "  subgraph end_2[\"end\"]"
        ]
    );
    assert_eq!(run(&["--format", "dot"]), draw(&m, None, GraphFormat::Dot));
    assert_eq!(
        run(&["--package", "a_b"]),
        draw(&m, Some("a_b"), GraphFormat::Mermaid)
    );
}

#[test]
fn every_edge_that_holds_between_two_entries_is_named() {
    let m = model("valid/skips-and-skiprange-on-head");
    let pkg = &m.packages["pkg"];
    let stable = &pkg.channels["stable"];
    let cases: [(&str, &str, &[EdgeKind]); 4] = [
        (
            "pkg.v1.1.0",
            "pkg.v1.2.0",
            &[EdgeKind::Replaces, EdgeKind::SkipRange],
        ),
        ("pkg.v1.0.0", "pkg.v1.2.0", &[EdgeKind::SkipRange]),
        ("pkg.v1.0.0", "pkg.v1.1.0", &[EdgeKind::Replaces]),
        ("pkg.v1.2.0", "pkg.v1.0.0", &[]),
    ];
    for (from, to, want) in cases {
        assert_eq!(
            upgrade::edges_between(pkg, stable, from, to),
            want,
            "{from} → {to}"
        );
    }
}

/// `catalog graph` of a catalog `catalog validate` refuses still draws it (exit 0) but warns
/// that it is invalid, with the first error; a valid catalog draws with no warning.
#[test]
fn graph_of_an_invalid_catalog_warns_that_it_is_invalid() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = dir.path().join("c/demo/catalog.yaml");
    std::fs::create_dir_all(catalog.parent().unwrap()).unwrap();
    let valid = "---\nschema: olm.package\nname: demo\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: demo\nname: stable\nentries:\n  - name: demo.v0.1.0\n---\nschema: olm.bundle\npackage: demo\nname: demo.v0.1.0\nimage: quay.io/acme/demo-bundle:v0.1.0\nproperties:\n  - type: olm.package\n    value: {packageName: demo, version: 0.1.0}\n";
    let graph = || {
        std::process::Command::new(env!("CARGO_BIN_EXE_olmpack"))
            .args(["catalog", "graph", "c"])
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    std::fs::write(&catalog, valid).unwrap();
    let out = graph();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    let invalid = valid.replace(
        "  - name: demo.v0.1.0\n",
        "  - name: demo.v0.1.0\n  - name: demo.v0.2.0\n    replaces: demo.v0.1.0\n",
    );
    std::fs::write(&catalog, invalid).unwrap();
    let out = graph();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("demo.v0.2.0"));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "warning: c: 1 error(s), so `olmpack catalog validate` refuses it (first: no olm.bundle blobs found in package \"demo\" for olm.channel entries [demo.v0.2.0]); the graph shows the catalog as read\n"
    );
}
