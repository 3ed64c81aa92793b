//! `olmpack catalog validate` and `olmpack catalog render` against `opm validate` and
//! `opm render`, side by side in one run: wall time and peak RSS (from `/usr/bin/time`).
//!
//! The catalog is generated: `OLMPACK_BENCH_PACKAGES` packages (default 400) of
//! `OLMPACK_BENCH_BUNDLES` bundles each (default 20), every package with an icon and a
//! description, every bundle with `olm.package`, `olm.gvk`, `olm.gvk.required`,
//! `olm.csv.metadata` (long description, CRD descriptions, install modes, links, maintainers)
//! and relatedImages, three channels (stable with a skipRange head, fast, candidate) and some
//! deprecations. Rendering uses `OLMPACK_BENCH_RENDER` (default 100) bundle directories
//! re-versioned from the test fixture. Run: `cargo bench -p olmpack --bench catalog`.

mod support;

use std::path::{Path, PathBuf};

use support::{best_of, env_usize};

use base64::Engine as _;
use serde_json::{Value, json};

/// Deterministic filler text.
fn lorem(seed: usize, len: usize) -> String {
    const WORDS: [&str; 12] = [
        "operator",
        "reconciles",
        "the",
        "web",
        "application",
        "with",
        "rolling",
        "upgrades",
        "and",
        "conversion",
        "webhooks",
        "safely",
    ];
    let mut s = String::new();
    let mut i = seed;
    while s.len() < len {
        s.push_str(WORDS[i % WORDS.len()]);
        s.push(' ');
        i = i.wrapping_mul(31).wrapping_add(7);
    }
    s
}

fn generate_catalog(root: &Path, packages: usize, bundles: usize) -> usize {
    let mut bytes = 0;
    let icon: Vec<u8> = (0..1500u32).map(|i| (i * 7 % 251) as u8).collect();
    let icon = base64::engine::general_purpose::STANDARD.encode(icon);
    for p in 0..packages {
        let name = format!("operator-{p:04}");
        let mut docs: Vec<Value> = vec![json!({
            "schema": "olm.package", "name": name, "defaultChannel": "stable",
            "description": lorem(p, 1500),
            "icon": {"base64data": icon, "mediatype": "image/png"},
        })];
        let bundle_name = |b: usize| format!("{name}.v1.{b}.0");
        let mut stable = Vec::new();
        for b in 0..bundles {
            let mut e = json!({"name": bundle_name(b)});
            if b > 0 {
                e["replaces"] = json!(bundle_name(b - 1));
            }
            if b == bundles - 1 {
                e["skipRange"] = json!(format!(">=1.0.0 <1.{b}.0"));
            }
            stable.push(e);
        }
        let half = bundles / 2;
        let mut fast = Vec::new();
        for b in half..bundles {
            let mut e = json!({"name": bundle_name(b)});
            if b > half {
                e["replaces"] = json!(bundle_name(b - 1));
            }
            fast.push(e);
        }
        for (chan, entries) in [("stable", &stable), ("fast", &fast), ("candidate", &fast)] {
            docs.push(
                json!({"schema": "olm.channel", "package": name, "name": chan, "entries": entries}),
            );
        }
        for b in 0..bundles {
            let version = format!("1.{b}.0");
            let csv_metadata = json!({
                "annotations": {"capabilities": "Seamless Upgrades", "categories": "Application Runtime",
                    "containerImage": format!("quay.io/example/{name}:v{version}"),
                    "createdAt": "2026-01-01T00:00:00Z", "repository": "https://github.com/example/op"},
                "apiServiceDefinitions": {},
                "crdDescriptions": {"owned": (0..3).map(|k| json!({
                    "name": format!("things{k}.example.com"), "version": "v1", "kind": format!("Thing{k}"),
                    "displayName": format!("Thing {k}"), "description": lorem(k, 200),
                    "specDescriptors": [{"path": "replicas", "displayName": "Replicas", "x-descriptors": ["urn:alm:descriptor:com.tectonic.ui:podCount"]}],
                })).collect::<Vec<_>>()},
                "description": lorem(p * 31 + b, 3000),
                "displayName": format!("Operator {p}"),
                "installModes": [
                    {"type": "OwnNamespace", "supported": true}, {"type": "SingleNamespace", "supported": true},
                    {"type": "MultiNamespace", "supported": false}, {"type": "AllNamespaces", "supported": true}],
                "keywords": ["web", "app", "operator"],
                "links": [{"name": "Docs", "url": "https://example.com/docs"}],
                "maintainers": [{"name": "Team", "email": "team@example.com"}],
                "maturity": "stable", "minKubeVersion": "1.28.0", "provider": {"name": "Example"},
            });
            let mut properties = vec![
                json!({"type": "olm.package", "value": {"packageName": name, "version": version}}),
                json!({"type": "olm.gvk.required", "value": {"group": "cert-manager.io", "kind": "Certificate", "version": "v1"}}),
            ];
            for k in 0..3 {
                properties.push(json!({"type": "olm.gvk", "value": {"group": "example.com", "kind": format!("Thing{k}"), "version": "v1"}}));
            }
            properties.push(json!({"type": "olm.csv.metadata", "value": csv_metadata}));
            docs.push(json!({
                "schema": "olm.bundle", "name": bundle_name(b), "package": name,
                "image": format!("quay.io/example/{name}-bundle@sha256:{:064x}", p * 1000 + b),
                "properties": properties,
                "relatedImages": [
                    {"name": "operator", "image": format!("quay.io/example/{name}:v{version}")},
                    {"name": "", "image": format!("quay.io/example/{name}-bundle@sha256:{:064x}", p * 1000 + b)},
                    {"name": "proxy", "image": "quay.io/example/kube-rbac-proxy:v0.18.0"},
                ],
            }));
        }
        docs.push(json!({"schema": "olm.deprecations", "package": name, "entries": [
            {"reference": {"schema": "olm.bundle", "name": bundle_name(0)}, "message": "1.0.0 is out of support"}]}));
        let dir = root.join(&name);
        std::fs::create_dir_all(&dir).unwrap();
        let mut text = String::new();
        for d in docs {
            text.push_str(&serde_json::to_string(&d).unwrap());
            text.push('\n');
        }
        bytes += text.len();
        std::fs::write(dir.join("catalog.json"), text).unwrap();
    }
    bytes
}

fn bundle_dirs(root: &Path, count: usize) -> Vec<PathBuf> {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/catalog/bundles/webapp-0.2.0");
    (0..count)
        .map(|i| {
            let dir = root.join(format!("bundle-{i:04}"));
            upgrade_tests::files::copy_tree(&fixture, &dir).unwrap();
            let csv = dir.join("manifests/webapp-operator.clusterserviceversion.yaml");
            let text = std::fs::read_to_string(&csv)
                .unwrap()
                .replace("0.2.0", &format!("0.{}.{}", 3 + i / 100, i % 100));
            std::fs::write(csv, text).unwrap();
            dir
        })
        .collect()
}

fn main() {
    let packages = env_usize("OLMPACK_BENCH_PACKAGES", 400);
    let bundles = env_usize("OLMPACK_BENCH_BUNDLES", 20);
    let renders = env_usize("OLMPACK_BENCH_RENDER", 100);
    let runs = env_usize("OLMPACK_BENCH_RUNS", 3);
    let opm = upgrade_tests::Tool::Opm
        .path()
        .expect("opm is required (cargo xtask setup)");
    let olmpack = PathBuf::from(env!("CARGO_BIN_EXE_olmpack"));
    let work = tempfile::tempdir().unwrap();
    let catalog = work.path().join("catalog");
    let bytes = generate_catalog(&catalog, packages, bundles);
    let cat = catalog.to_str().unwrap();
    println!(
        "catalog: {packages} packages, {} bundles, {:.1} MiB of JSON; {} cores",
        packages * bundles,
        bytes as f64 / 1048576.0,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    let (o_t, o_m) = best_of(runs, &olmpack, &["catalog", "validate", cat]);
    let (p_t, p_m) = best_of(runs, &opm, &["validate", cat]);
    let dirs = bundle_dirs(&work.path().join("bundles"), renders);
    let dir_args: Vec<&str> = dirs.iter().map(|d| d.to_str().unwrap()).collect();
    let mut ours = vec!["catalog", "render"];
    ours.extend(&dir_args);
    let mut theirs = vec!["render", "-o", "json"];
    theirs.extend(&dir_args);
    let (or_t, or_m) = best_of(runs, &olmpack, &ours);
    let (pr_t, pr_m) = best_of(runs, &opm, &theirs);
    println!(
        "| task | olmpack wall | opm wall | speed-up | olmpack peak RSS | opm peak RSS | memory ratio |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for (task, ot, om, pt, pm) in [
        ("validate catalog", o_t, o_m, p_t, p_m),
        (
            &*format!("render {renders} bundle dirs"),
            or_t,
            or_m,
            pr_t,
            pr_m,
        ),
    ] {
        println!(
            "| {task} | {ot:.2} s | {pt:.2} s | {:.1}x | {om:.0} MiB | {pm:.0} MiB | {:.2} |",
            pt / ot.max(0.005),
            om / pm
        );
    }
}
