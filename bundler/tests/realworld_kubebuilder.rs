//! kubebuilder's `make build-installer` output (`dist/install.yaml` of its book and scaffold
//! projects, from the shared corpus) goes through `olmpack bundle generate` with only a plan
//! file added. The bundle must validate without errors (including the pod-can-start rule) and
//! the real kube-apiserver must accept every object OLM would create from it (server-side dry
//! run: the plain objects and the CSV's Deployments). Projects whose manager mounts the
//! cert-manager metrics certificate stop with a clear error naming the plan's choice; with
//! `certManagerCertificates: drop` they pass the same checks, the metrics Secret unmounted.

use std::path::{Path, PathBuf};
use std::process::Command;

mod apiserver_support;

const PLAN: &str = "package: project
defaultChannel: alpha
channels: [alpha]
csv:
  displayName: Project
  description: A kubebuilder project.
  provider: {name: example}
  maintainers: [{name: example, email: dev@example.com}]
  minKubeVersion: 1.28.0
releases:
  - version: 0.1.0
    manifests: manifests
";

/// The corpus file, or `None` (said loudly; a failure in CI, where the corpus is present).
fn install_yaml(project: &str) -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let corpus = std::env::var_os("OLMPACK_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("../shared/corpus"));
    let file = corpus.join(format!("kubebuilder-5c40072/{project}.install.yaml"));
    if file.is_file() {
        return Some(file);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "the kubebuilder corpus is missing at {} in CI",
        file.display()
    );
    eprintln!(
        "NOT RUN: the kubebuilder corpus is not at {}",
        file.display()
    );
    None
}

/// The plan's line for the cert-manager choice.
const DROP: &str = "certManagerCertificates: drop\n";

/// Runs `olmpack bundle generate` on the project's install.yaml plus the plan (with `extra`
/// plan lines).
fn generate(project: &str, extra: &str) -> Option<(tempfile::TempDir, std::process::Output)> {
    let install = install_yaml(project)?;
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("manifests")).unwrap();
    std::fs::copy(install, dir.path().join("manifests/install.yaml")).unwrap();
    std::fs::write(dir.path().join("olmpack.yaml"), format!("{PLAN}{extra}")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_olmpack"))
        .args([
            "bundle",
            "generate",
            "--plan",
            "olmpack.yaml",
            "--out",
            "out",
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    Some((dir, out))
}

/// Everything the command printed (findings go to stderr).
fn report(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

async fn passes(project: &str, extra: &str) {
    let Some((dir, out)) = generate(project, extra) else {
        return;
    };
    let stdout = report(&out);
    assert_eq!(out.status.code(), Some(0), "{project}: {stdout}");
    assert!(stdout.contains(" 0 error(s)"), "{stdout}");
    if stdout.contains("Certificate/") {
        assert!(
            stdout.contains("info[input/cert-manager-replaced]"),
            "{project}: the webhook certificate is OLM's: {stdout}"
        );
    }
    if !extra.is_empty() {
        assert!(
            stdout.contains("warning[input/cert-manager-unmounted]")
                && stdout.contains("Secret metrics-server-cert (its Certificate was left out) is no longer mounted: removed volume metrics-certs, the mount at /tmp/k8s-metrics-server/metrics-certs in container manager, argument --metrics-cert-path=/tmp/k8s-metrics-server/metrics-certs of container manager"),
            "{project}: {stdout}"
        );
    }
    let env = olmpack_envtest::control_plane::TestEnv::start()
        .await
        .expect("test environment starts");
    let client = env.client();
    let objects = apiserver_support::objects_olm_creates(&dir.path().join("out/0.1.0"));
    if !extra.is_empty() {
        let deployments: Vec<_> = objects
            .iter()
            .filter(|o| o["kind"] == "Deployment")
            .collect();
        let text = serde_json::to_string(&deployments).unwrap();
        assert!(
            deployments.len() == 1
                && !text.contains("metrics-server-cert")
                && !text.contains("metrics-cert-path"),
            "{project}: the Deployment still uses the dropped Secret: {text}"
        );
        assert!(
            stdout.contains("warning[input/cert-manager-secret-referenced]"),
            "{project}: the ServiceMonitor's TLS configuration names the Secret: {stdout}"
        );
    }
    assert!(objects.len() >= 5, "{project}: {} objects", objects.len());
    for object in &objects {
        if object["apiVersion"]
            .as_str()
            .is_some_and(|v| v.starts_with("monitoring.coreos.com/"))
        {
            // OLM needs prometheus-operator's CRDs on the cluster for these too.
            eprintln!(
                "NOT RUN: apiserver dry run of {} {}: the test apiserver has no prometheus-operator CRDs",
                object["kind"], object["metadata"]["name"]
            );
            continue;
        }
        if let Err(err) = apiserver_support::apiserver_dry_run(&client, object).await {
            panic!(
                "{project}: the apiserver refuses {} {}: {err}",
                object["kind"], object["metadata"]["name"]
            );
        }
    }
}

/// The manager mounts the metrics certificate cert-manager would issue: generate stops with
/// an error naming the Secret and what to do, instead of a bundle whose pod cannot start.
fn stops_on_the_metrics_certificate(project: &str) {
    let Some((dir, out)) = generate(project, "") else {
        return;
    };
    let stdout = report(&out);
    assert_eq!(out.status.code(), Some(1), "{project}: {stdout}");
    let line = stdout
        .lines()
        .find(|l| l.starts_with("error[input/cert-manager-certificate]"))
        .unwrap_or_else(|| panic!("{project}: {stdout}"));
    assert!(line.contains("Secret metrics-server-cert"), "{line}");
    assert!(
        stdout.contains("hint: set `certManagerCertificates: drop` in the plan to leave the Certificate out and remove the Secret metrics-server-cert volume"),
        "{stdout}"
    );
    assert!(!dir.path().join("out").exists(), "nothing is written");
}

#[tokio::test]
async fn realworld_kubebuilder_getting_started() {
    passes("getting-started", "").await;
}

#[tokio::test]
async fn realworld_kubebuilder_project_v4() {
    passes("project-v4", "").await;
}

#[tokio::test]
async fn realworld_kubebuilder_project_v4_multigroup() {
    passes("project-v4-multigroup", "").await;
}

#[tokio::test]
async fn realworld_kubebuilder_project_v4_with_plugins() {
    passes("project-v4-with-plugins", "").await;
}

#[test]
fn realworld_kubebuilder_cronjob_tutorial_stops_on_the_metrics_certificate() {
    stops_on_the_metrics_certificate("cronjob-tutorial");
}

#[test]
fn realworld_kubebuilder_multiversion_tutorial_stops_on_the_metrics_certificate() {
    stops_on_the_metrics_certificate("multiversion-tutorial");
}

#[tokio::test]
async fn realworld_kubebuilder_cronjob_tutorial_with_the_metrics_certificate_dropped() {
    passes("cronjob-tutorial", DROP).await;
}

#[tokio::test]
async fn realworld_kubebuilder_multiversion_tutorial_with_the_metrics_certificate_dropped() {
    passes("multiversion-tutorial", DROP).await;
}
