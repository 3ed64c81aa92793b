//! A corpus package's catalog made the way a user makes one: its newest bundle directories
//! chained by `replaces` (with the `olm.skipRange` each CSV declares) in an
//! `olm.template.basic` template, rendered by `olmpack catalog template`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The packages (corpus directories) the OLM corpus suite installs, chosen for variety
/// (install modes, namespaced examples, extra objects, webhooks, skipRange, v1beta1 CRDs,
/// ServiceMonitors).
pub const PACKAGES: [&str; 22] = [
    "community-operators/cert-manager",
    "community-operators/cert-utils-operator",
    "community-operators/cockroachdb",
    "community-operators/community-windows-machine-config-operator",
    "community-operators/crane-operator",
    "community-operators/devopsinabox",
    "community-operators/flux",
    "community-operators/gitlab-runner-operator",
    "community-operators/hedvig-operator",
    "community-operators/keda",
    "community-operators/koku-metrics-operator",
    "community-operators/mongodb-atlas-kubernetes",
    "community-operators/mta-operator",
    "community-operators/node-healthcheck-operator",
    "community-operators/opentelemetry-operator",
    "community-operators/poison-pill-operator",
    "community-operators/rhoas-operator",
    "community-operators/universal-crossplane",
    "community-operators/volume-expander-operator",
    "upstream-community-operators/cloud-native-postgresql",
    "upstream-community-operators/metallb-operator",
    "upstream-community-operators/sap-btp-operator",
];

/// The newest `count` bundle directories of a package, oldest first (by semver of the name).
fn newest(package_dir: &Path, count: usize) -> Vec<PathBuf> {
    let mut dirs: Vec<(semver::Version, PathBuf)> = std::fs::read_dir(package_dir)
        .unwrap()
        .filter_map(|e| {
            let path = e.unwrap().path();
            let name = path
                .file_name()?
                .to_str()?
                .trim_start_matches('v')
                .to_owned();
            let version = semver::Version::parse(&name).ok()?;
            path.join("manifests").is_dir().then_some((version, path))
        })
        .collect();
    dirs.sort();
    dirs.into_iter()
        .rev()
        .take(count)
        .rev()
        .map(|(_, p)| p)
        .collect()
}

/// What the catalog needs of one bundle directory: CSV name, package, channel, skipRange.
struct BundleFacts {
    dir: PathBuf,
    csv: String,
    package: String,
    channel: String,
    skip_range: Option<String>,
}

fn facts(dir: &Path) -> BundleFacts {
    let bundle = olmpack::bundle::load::load_dir(dir).unwrap();
    let csv = bundle.csv().expect("a bundle directory has a CSV");
    let annotation = |key: &str| bundle.annotation(key).unwrap_or_default().to_owned();
    let channel = match annotation("operators.operatorframework.io.bundle.channel.default.v1") {
        c if !c.is_empty() => c,
        _ => annotation("operators.operatorframework.io.bundle.channels.v1")
            .split(',')
            .next()
            .unwrap_or_default()
            .to_owned(),
    };
    BundleFacts {
        dir: dir.to_owned(),
        csv: csv.name().to_owned(),
        package: annotation("operators.operatorframework.io.bundle.package.v1"),
        channel,
        skip_range: csv
            .value
            .pointer("/metadata/annotations/olm.skipRange")
            .and_then(|v| v.as_str())
            .map(str::to_owned),
    }
}

/// The catalog file `<package>.json` in `catalog_dir` of a package's newest `count` bundle
/// directories, each replacing the one before, with the skipRange its CSV declares; through
/// `olmpack catalog template` (a basic template whose bundle images map to the corpus directories); returns
/// the package name.
pub fn render_package(package_dir: &Path, count: usize, out: &Path, catalog_dir: &Path) -> String {
    let bundles: Vec<BundleFacts> = newest(package_dir, count)
        .iter()
        .map(|d| facts(d))
        .collect();
    let first = &bundles[0];
    let mut template = format!(
        "schema: olm.template.basic\nentries:\n- schema: olm.package\n  name: {}\n  defaultChannel: {}\n- schema: olm.channel\n  package: {}\n  name: {}\n  entries:\n",
        first.package, first.channel, first.package, first.channel
    );
    let mut previous: Option<&str> = None;
    for b in &bundles {
        template.push_str(&format!("  - name: {}\n", b.csv));
        if let Some(p) = previous {
            template.push_str(&format!("    replaces: {p}\n"));
        }
        if let Some(range) = &b.skip_range {
            template.push_str(&format!("    skipRange: '{range}'\n"));
        }
        previous = Some(&b.csv);
    }
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_olmpack"));
    cmd.args(["catalog", "template"]);
    for b in &bundles {
        let image = format!("corpus.invalid/{}:{}", b.package, b.csv);
        template.push_str(&format!("- schema: olm.bundle\n  image: {image}\n"));
        cmd.arg("--bundle")
            .arg(format!("{image}={}", b.dir.display()));
    }
    let path = out.join(format!("{}.template.yaml", first.package));
    std::fs::write(&path, &template).unwrap();
    let rendered = cmd.arg(&path).output().unwrap();
    assert!(
        rendered.status.success(),
        "{}: catalog template failed: {}",
        package_dir.display(),
        String::from_utf8_lossy(&rendered.stderr)
    );
    let file = catalog_dir.join(format!("{}.json", first.package));
    std::fs::write(file, rendered.stdout).unwrap();
    first.package.clone()
}
