//! Benchmark: generate and validate a bundle with 50 CRDs × 3 versions.
//!
//! Reports (not asserts) the generation time against a named floor measured in the same run —
//! parsing the same input YAML and printing it back, which any generator must at least do —
//! and the peak memory of the `olmpack bundle generate` process.
//!
//! Run: `cargo bench -p olmpack --bench bundle`.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use olmpack::bundle::generate::{GenerateOptions, generate};

const CRDS: usize = 50;
const RUNS: usize = 7;

fn schema(depth: usize) -> String {
    let pad = " ".repeat(14 + depth * 4);
    let mut s = String::new();
    for i in 0..12 {
        let _ = writeln!(
            s,
            "{pad}field{i}: {{type: string, maxLength: 253, description: \"Field {i} of the spec, documented as real CRDs are documented.\"}}"
        );
    }
    if depth < 2 {
        let _ = writeln!(s, "{pad}nested:\n{pad}  type: object\n{pad}  properties:");
        s.push_str(&schema(depth + 1));
    }
    s
}

fn write_inputs(dir: &Path) {
    let mut manifests = String::new();
    for c in 0..CRDS {
        let _ = write!(
            manifests,
            "---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {{name: widgets{c}.bench.olmpack.dev}}\nspec:\n  group: bench.olmpack.dev\n  names: {{kind: Widget{c}, listKind: Widget{c}List, plural: widgets{c}, singular: widget{c}}}\n  scope: Namespaced\n  conversion:\n    strategy: Webhook\n    webhook:\n      conversionReviewVersions: [v1]\n      clientConfig: {{service: {{name: bench-webhook, namespace: bench, path: /convert}}}}\n  versions:\n"
        );
        for (v, storage) in [("v1alpha1", false), ("v1beta1", false), ("v1", true)] {
            let _ = write!(
                manifests,
                "    - name: {v}\n      served: true\n      storage: {storage}\n      schema:\n        openAPIV3Schema:\n          type: object\n          properties:\n            spec:\n              type: object\n              properties:\n{}",
                schema(0)
            );
        }
    }
    manifests.push_str("---\napiVersion: v1\nkind: ServiceAccount\nmetadata: {name: bench}\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: bench}\nrules: [{apiGroups: [bench.olmpack.dev], resources: ['*'], verbs: [get, list, watch]}]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: bench}\nroleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: bench}\nsubjects: [{kind: ServiceAccount, name: bench, namespace: bench}]\n---\napiVersion: v1\nkind: Service\nmetadata: {name: bench-webhook}\nspec: {selector: {app: bench}, ports: [{port: 443, targetPort: 9443}]}\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: bench}\nspec:\n  selector: {matchLabels: {app: bench}}\n  template:\n    metadata: {labels: {app: bench}}\n    spec:\n      serviceAccountName: bench\n      containers: [{name: manager, image: quay.io/olmpack/bench:v1, resources: {requests: {cpu: 10m, memory: 64Mi}}}]\n");
    std::fs::create_dir_all(dir.join("deploy")).unwrap();
    std::fs::write(dir.join("deploy/all.yaml"), manifests).unwrap();
    std::fs::write(
        dir.join("olmpack.yaml"),
        "package: bench\ndefaultChannel: stable\nchannels: [stable]\ncreatedAt: \"2026-01-01T00:00:00Z\"\ncsv: {displayName: Bench, description: d, provider: {name: olmpack}}\nreleases: [{version: 1.0.0, manifests: deploy}]\n",
    )
    .unwrap();
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    write_inputs(dir.path());
    let plan = olmpack::plan::load(&dir.path().join("olmpack.yaml"), &Default::default()).unwrap();
    let input = std::fs::read_to_string(dir.path().join("deploy/all.yaml")).unwrap();

    let mut generate_times = Vec::new();
    let mut files = 0;
    let mut bytes = 0;
    for _ in 0..RUNS {
        let started = Instant::now();
        let generated =
            generate(&plan, &GenerateOptions::default()).expect("the benchmark bundle generates");
        generate_times.push(started.elapsed());
        files = generated.tree.len();
        bytes = generated.tree.total_size();
    }
    let mut floor_times = Vec::new();
    for _ in 0..RUNS {
        let started = Instant::now();
        let docs = olmpack_model::yaml::from_multi_str(&input).unwrap();
        let mut out = 0;
        for doc in &docs {
            out += olmpack_model::yaml::to_string(doc).unwrap().len();
        }
        assert!(out > 0);
        floor_times.push(started.elapsed());
    }
    let (g, f) = (median(generate_times), median(floor_times));

    // Peak memory of the real CLI doing the same job (a child process, so getrusage sees it alone).
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_olmpack"))
        .args(["bundle", "generate", "--plan"])
        .arg(dir.path().join("olmpack.yaml"))
        .arg("--out")
        .arg(dir.path().join("out"))
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    let peak_kib = max_rss_of_children_kib();

    println!(
        "bundle with {CRDS} CRDs x 3 versions: {files} files, {:.1} MB generated, input {:.1} MB",
        bytes as f64 / 1e6,
        input.len() as f64 / 1e6
    );
    println!(
        "generate + validate (median of {RUNS}): {:.1} ms",
        g.as_secs_f64() * 1e3
    );
    println!(
        "floor, parse + print the input YAML:    {:.1} ms",
        f.as_secs_f64() * 1e3
    );
    println!(
        "ratio generate / floor: {:.2}",
        g.as_secs_f64() / f.as_secs_f64()
    );
    println!(
        "peak RSS of `olmpack bundle generate`: {:.1} MiB",
        peak_kib as f64 / 1024.0
    );
}

#[allow(unsafe_code)]
fn max_rss_of_children_kib() -> i64 {
    // SAFETY: getrusage writes into the zeroed struct we own; no other invariants.
    unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage.ru_maxrss
    }
}
