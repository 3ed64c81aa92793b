//! Catalog image build and push, against named baselines measured in the same run.
//!
//! - Build: `olmpack::image::build::build_catalog_image` of a generated File-Based Catalog
//!   (200 packages × 50 bundles by default) versus `tar cf - . | gzip -6` of the same files
//!   (the floor: no hashing, no layout, no determinism work).
//! - Push: the built layout to a loopback registry (CNCF distribution), MB/s of compressed
//!   bytes, and a second push where every blob is already there.
//!
//! Run: `eval "$(cargo xtask env)"; cargo bench -p olmpack --bench image`
//! Sizes: `OLMPACK_BENCH_PACKAGES`, `OLMPACK_BENCH_BUNDLES`.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use olmpack::image::build::build_catalog_image;
use olmpack_oci::image::progress::Progress;
use olmpack_oci::image::{
    auth::Credentials, build::BuildOptions, push::push_layout, registry::RegistryAccess,
};
use serde_json::json;

const RUNS: usize = 3;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Deterministic pseudo-random bytes (xorshift64), standing in for the base64 manifests of
/// `olm.bundle.object` properties, which compress far less than prose.
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

/// Writes `packages` directories, each with one `catalog.json` stream of a package, a channel
/// and `bundles` bundles with realistic properties (including a 3 KiB `olm.bundle.object`).
/// Returns (files, bytes).
fn generate(root: &Path, packages: usize, bundles: usize) -> (usize, u64) {
    use base64::Engine as _;
    let mut bytes = 0;
    for p in 0..packages {
        let name = format!("operator-{p:03}");
        let dir = root.join(&name);
        std::fs::create_dir_all(&dir).unwrap();
        let mut docs = vec![json!({
            "schema": "olm.package", "name": name, "defaultChannel": "stable",
            "description": format!("Operator {p} manages things. ").repeat(20),
        })];
        let entries: Vec<_> = (0..bundles)
            .map(|b| {
                let mut entry = json!({"name": format!("{name}.v1.{b}.0")});
                if b > 0 {
                    entry["replaces"] = json!(format!("{name}.v1.{}.0", b - 1));
                    entry["skipRange"] = json!(format!(">=1.0.0 <1.{b}.0"));
                }
                entry
            })
            .collect();
        docs.push(
            json!({"schema": "olm.channel", "package": name, "name": "stable", "entries": entries}),
        );
        for b in 0..bundles {
            let digest = format!("{:064x}", p * 100_000 + b);
            docs.push(json!({
                "schema": "olm.bundle",
                "name": format!("{name}.v1.{b}.0"),
                "package": name,
                "image": format!("quay.io/example/{name}-bundle@sha256:{digest}"),
                "relatedImages": [
                    {"name": "manager", "image": format!("quay.io/example/{name}@sha256:{digest}")},
                ],
                "properties": [
                    {"type": "olm.package", "value": {"packageName": name, "version": format!("1.{b}.0")}},
                    {"type": "olm.gvk", "value": {"group": "example.com", "kind": "Thing", "version": "v1"}},
                    {"type": "olm.bundle.object", "value": {"data": base64::engine::general_purpose::STANDARD
                        .encode(noise((p * 100_000 + b) as u64, 3 * 1024))}},
                    {"type": "olm.csv.metadata", "value": {
                        "displayName": format!("Operator {p}"),
                        "description": format!("Version 1.{b}.0 of operator {p}. ").repeat(30),
                        "keywords": ["example", "bench"],
                        "provider": {"name": "olmpack"},
                        "installModes": [{"type": "AllNamespaces", "supported": true}],
                    }},
                ],
            }));
        }
        let mut text = String::new();
        for doc in docs {
            text.push_str(&serde_json::to_string_pretty(&doc).unwrap());
            text.push('\n');
        }
        bytes += text.len() as u64;
        std::fs::write(dir.join("catalog.json"), text).unwrap();
    }
    (packages, bytes)
}

fn best<T>(mut run: impl FnMut() -> T) -> (Duration, T) {
    let mut best = None;
    let mut last = None;
    for _ in 0..RUNS {
        let started = Instant::now();
        let value = run();
        let took = started.elapsed();
        best = Some(best.map_or(took, |b: Duration| b.min(took)));
        last = Some(value);
    }
    (best.unwrap(), last.unwrap())
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1_000_000.0
}

fn main() {
    olmpack::install_crypto_provider();
    let packages = env_usize("OLMPACK_BENCH_PACKAGES", 200);
    let bundles = env_usize("OLMPACK_BENCH_BUNDLES", 50);
    let work = tempfile::tempdir().unwrap();
    let catalog = work.path().join("catalog");
    let (files, bytes) = generate(&catalog, packages, bundles);
    println!(
        "catalog: {packages} packages x {bundles} bundles, {files} files, {:.1} MB",
        mb(bytes)
    );

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let layout = work.path().join("layout");
    let options = BuildOptions {
        tag: Some("bench".into()),
        ..Default::default()
    };
    let (olmpack_time, root) = best(|| {
        runtime
            .block_on(build_catalog_image(
                &catalog,
                &layout,
                &options,
                None,
                &Progress::Quiet,
            ))
            .unwrap()
    });
    let layer_size: u64 = {
        let layout = olmpack_oci::image::layout::Layout::open(&layout).unwrap();
        let manifest: olmpack_oci::image::layout::ImageManifest =
            layout.read_json(&root.digest, "manifest").unwrap();
        manifest.layers.iter().map(|l| l.size).sum()
    };

    let floor_out = work.path().join("floor.tar.gz");
    let (floor_time, ()) = best(|| {
        let status = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "tar cf - -C '{}' . | gzip -6 > '{}'",
                catalog.display(),
                floor_out.display()
            ))
            .status()
            .unwrap();
        assert!(status.success());
    });
    let floor_size = std::fs::metadata(&floor_out).unwrap().len();
    println!(
        "build: olmpack {:.0} ms (layer {:.2} MB), tar | gzip -6 {:.0} ms ({:.2} MB); olmpack / floor = {:.2}x time, {:.3}x size",
        olmpack_time.as_secs_f64() * 1000.0,
        mb(layer_size),
        floor_time.as_secs_f64() * 1000.0,
        mb(floor_size),
        olmpack_time.as_secs_f64() / floor_time.as_secs_f64(),
        layer_size as f64 / floor_size as f64,
    );

    let registry = runtime
        .block_on(olmpack_testkit::registry::Registry::start(
            olmpack_testkit::registry::RegistryAuth::Anonymous,
        ))
        .expect("docker-registry is installed (cargo xtask setup)");
    let access = RegistryAccess {
        credentials: Credentials::Anonymous,
        auth_files: Default::default(),
        ..Default::default()
    };
    let source = format!("{}:bench", layout.display());
    let mut repo = 0;
    let (push_time, report) = best(|| {
        repo += 1;
        let target = format!("{}/bench/catalog{repo}:v1", registry.host());
        runtime
            .block_on(push_layout(&source, &target, &access, &Progress::Quiet))
            .unwrap()
    });
    let (repush_time, again) = best(|| {
        let target = format!("{}/bench/catalog{repo}:v1", registry.host());
        runtime
            .block_on(push_layout(&source, &target, &access, &Progress::Quiet))
            .unwrap()
    });
    assert_eq!(again.blobs_pushed, 0);
    println!(
        "push to loopback registry: {:.2} MB in {:.0} ms = {:.1} MB/s; again with every blob present: {:.0} ms",
        mb(report.bytes_pushed),
        push_time.as_secs_f64() * 1000.0,
        mb(report.bytes_pushed) / push_time.as_secs_f64(),
        repush_time.as_secs_f64() * 1000.0,
    );
}
