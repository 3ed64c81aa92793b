//! `olmpack catalog validate` and `olmpack catalog render` against `opm validate` and
//! `opm render`, side by side in one run: wall time and peak RSS (from `/usr/bin/time`).
//!
//! The catalog is generated with the community catalog's shape (about 1.5 GB of JSON at the
//! default `OLMPACK_BENCH_PACKAGES`, 340 packages): most packages ship 3–25 bundles, every 20th
//! 60–180; every package has an icon and a description, every bundle `olm.package`,
//! `olm.gvk`, `olm.gvk.required`, `olm.csv.metadata` (long description, CRD descriptions,
//! install modes, links, maintainers), its CSV and 1–4 CRDs as `olm.bundle.object` (about
//! 220 KB a bundle, as real bundles embed them) and relatedImages; three channels (stable with
//! a skipRange head, fast, candidate) and a deprecation. `OLMPACK_BENCH_CATALOG=DIR` writes it
//! there (kept), `OLMPACK_BENCH_GENERATE_ONLY=1` stops after writing it. Rendering uses `OLMPACK_BENCH_RENDER` (default 100) bundle directories
//! re-versioned from the test fixture. Run: `cargo bench -p olmpack --bench catalog`.
//! Targets for validate: at least 100× faster than opm, at most 1/50 of its peak RSS.

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

/// How many bundles package `p` ships: most a handful to two dozen, every 20th a long-lived
/// one with 60–180 (the shape of the community catalog: 324 packages, 6,708 bundles, a few
/// packages holding hundreds).
fn bundles_of(p: usize) -> usize {
    if p % 20 == 7 {
        60 + (p % 7) * 20
    } else {
        3 + (p * 37) % 23
    }
}

/// A CRD as bundles embed it (`olm.bundle.object`): an apiextensions/v1 object with a
/// documented schema of `fields` properties; `__VERSION__` stands for the bundle's version.
fn crd_json(package: &str, k: usize, fields: usize) -> String {
    let props: serde_json::Map<String, Value> = (0..fields)
        .map(|f| {
            (
                format!("field{f:03}"),
                json!({"type": if f % 3 == 0 { "integer" } else { "string" },
                       "description": lorem(k * 1000 + f, 300)}),
            )
        })
        .collect();
    let group = format!("{package}.example.com");
    serde_json::to_string(&json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("things{k}.{group}"),
                     "annotations": {"example.com/bundle-version": "__VERSION__"}},
        "spec": {"group": group, "names": {"kind": format!("Thing{k}"), "plural": format!("things{k}")},
                 "scope": "Namespaced",
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object",
                                   "properties": {"spec": {"type": "object", "properties": props}}}}}]},
    }))
    .unwrap()
}

/// The CSV a bundle embeds (`olm.bundle.object`), about 25 KB.
fn csv_json(package: &str, p: usize) -> String {
    serde_json::to_string(&json!({
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
        "metadata": {"name": format!("{package}.v__VERSION__")},
        "spec": {"version": "__VERSION__", "description": lorem(p, 12000),
                 "install": {"strategy": "deployment", "spec": {"deployments": [{"name": package,
                     "spec": {"template": {"spec": {"containers": [{"name": "manager",
                         "image": format!("quay.io/example/{package}:v__VERSION__"),
                         "args": (0..40).map(|i| format!("--flag-{i}={}", lorem(i, 40))).collect::<Vec<_>>()}]}}}}],
                     "clusterPermissions": [{"serviceAccountName": package,
                         "rules": (0..60).map(|i| json!({"apiGroups": [format!("g{i}.example.com")],
                             "resources": ["things", "things/status"], "verbs": ["get", "list", "watch", "update"]})).collect::<Vec<_>>()}]}}},
    }))
    .unwrap()
}

fn object_property(template: &str, version: &str) -> Value {
    let data =
        base64::engine::general_purpose::STANDARD.encode(template.replace("__VERSION__", version));
    json!({"type": "olm.bundle.object", "value": {"data": data}})
}

/// Writes one package's `catalog.json` blob by blob; returns its size.
fn generate_package(root: &Path, p: usize, icon: &str) -> usize {
    let name = format!("operator-{p:04}");
    let bundles = bundles_of(p);
    let mut docs: Vec<Value> = vec![json!({
        "schema": "olm.package", "name": name, "defaultChannel": "stable",
        "description": lorem(p, 1500),
        "icon": {"base64data": icon, "mediatype": "image/png"},
    })];
    docs.extend(channels(&name, bundles));
    let crds: Vec<String> = (0..1 + p % 4).map(|k| crd_json(&name, k, 150)).collect();
    let csv = csv_json(&name, p);
    for b in 0..bundles {
        docs.push(bundle_blob(&name, p, b, &csv, &crds));
    }
    docs.push(json!({"schema": "olm.deprecations", "package": name, "entries": [
        {"reference": {"schema": "olm.bundle", "name": format!("{name}.v1.0.0")}, "message": "1.0.0 is out of support"}]}));
    let dir = root.join(&name);
    std::fs::create_dir_all(&dir).unwrap();
    let mut text = Vec::new();
    for d in docs {
        serde_json::to_writer(&mut text, &d).unwrap();
        text.push(b'\n');
    }
    std::fs::write(dir.join("catalog.json"), &text).unwrap();
    text.len()
}

/// Three channels: stable (every bundle, a skipRange head), fast and candidate (the newer half).
fn channels(name: &str, bundles: usize) -> Vec<Value> {
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
    [("stable", &stable), ("fast", &fast), ("candidate", &fast)]
        .into_iter()
        .map(|(chan, entries)| json!({"schema": "olm.channel", "package": name, "name": chan, "entries": entries}))
        .collect()
}

/// One `olm.bundle` blob: package, GVKs, csv metadata, the CSV and CRDs as objects.
fn bundle_blob(name: &str, p: usize, b: usize, csv: &str, crds: &[String]) -> Value {
    let version = format!("1.{b}.0");
    let csv_metadata = json!({
        "annotations": {"capabilities": "Seamless Upgrades", "categories": "Application Runtime",
            "containerImage": format!("quay.io/example/{name}:v{version}"),
            "createdAt": "2026-01-01T00:00:00Z", "repository": "https://github.com/example/op"},
        "apiServiceDefinitions": {},
        "crdDescriptions": {"owned": (0..crds.len()).map(|k| json!({
            "name": format!("things{k}.{name}.example.com"), "version": "v1", "kind": format!("Thing{k}"),
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
    for k in 0..crds.len() {
        properties.push(json!({"type": "olm.gvk", "value": {"group": format!("{name}.example.com"), "kind": format!("Thing{k}"), "version": "v1"}}));
    }
    properties.push(json!({"type": "olm.csv.metadata", "value": csv_metadata}));
    properties.push(object_property(csv, &version));
    properties.extend(crds.iter().map(|c| object_property(c, &version)));
    let bundle_image = format!("quay.io/example/{name}-bundle@sha256:{:064x}", p * 1000 + b);
    json!({
        "schema": "olm.bundle", "name": format!("{name}.v{version}"), "package": name,
        "image": bundle_image, "properties": properties,
        "relatedImages": [
            {"name": "operator", "image": format!("quay.io/example/{name}:v{version}")},
            {"name": "", "image": bundle_image},
            {"name": "proxy", "image": "quay.io/example/kube-rbac-proxy:v0.18.0"},
        ],
    })
}

/// Generates the catalog, one directory per package; returns (bundles, bytes of JSON).
fn generate_catalog(root: &Path, packages: usize) -> (usize, usize) {
    let icon: Vec<u8> = (0..1500u32).map(|i| (i * 7 % 251) as u8).collect();
    let icon = base64::engine::general_purpose::STANDARD.encode(icon);
    let bytes = (0..packages)
        .map(|p| generate_package(root, p, &icon))
        .sum();
    ((0..packages).map(bundles_of).sum(), bytes)
}

fn bundle_dirs(root: &Path, count: usize) -> Vec<PathBuf> {
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/catalog/bundles/webapp-0.2.0");
    (0..count)
        .map(|i| {
            let dir = root.join(format!("bundle-{i:04}"));
            olmpack_testkit::files::copy_tree(&fixture, &dir).unwrap();
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
    let packages = env_usize("OLMPACK_BENCH_PACKAGES", 340);
    let renders = env_usize("OLMPACK_BENCH_RENDER", 100);
    let runs = env_usize("OLMPACK_BENCH_RUNS", 3);
    let work = tempfile::tempdir().unwrap();
    let catalog = std::env::var_os("OLMPACK_BENCH_CATALOG")
        .map_or_else(|| work.path().join("catalog"), PathBuf::from);
    let (bundles, bytes) = generate_catalog(&catalog, packages);
    let cat = catalog.to_str().unwrap();
    println!(
        "catalog {cat}: {packages} packages, {bundles} bundles, {:.1} MiB of JSON; {} cores",
        bytes as f64 / 1048576.0,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    if std::env::var_os("OLMPACK_BENCH_GENERATE_ONLY").is_some() {
        return;
    }
    let opm = olmpack_envtest::binaries::Tool::Opm
        .path()
        .expect("opm is required (cargo xtask setup)");
    let olmpack = PathBuf::from(env!("CARGO_BIN_EXE_olmpack"));
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
            "| {task} | {ot:.2} s | {pt:.2} s | {:.1}x | {om:.0} MiB | {pm:.0} MiB | 1/{:.0} |",
            pt / ot.max(0.005),
            pm / om.max(0.1)
        );
    }
}
