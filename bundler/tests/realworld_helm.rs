//! Real operators' Helm charts through the real `helm template` into `olmpack bundle generate`.
//!
//! The charts are copied by `cargo xtask setup` from the Go modules at the versions
//! `tools.toml` pins, and rendered by the pinned helm with a fixed release name and namespace,
//! for the pinned kube-apiserver's Kubernetes version.
//!
//! - Kueue's (`charts/kueue` of sigs.k8s.io/kueue): CRDs with a conversion webhook, admission
//!   webhooks, the empty Secret its manager fills with its own webhook certificate, an
//!   aggregated API (APIService) and, with `enableCertManager=true`, cert-manager Certificates
//!   and an Issuer instead of that Secret. No hooks, no chart dependencies.
//! - Kyverno's (`charts/kyverno` of github.com/kyverno/kyverno, its two subcharts inside):
//!   post-upgrade, pre-delete, post-delete and test hooks, and bindings to the built-in `view`
//!   ClusterRole.
//!
//! The findings are stated exactly; a bundle that is generated must pass the real
//! kube-apiserver's dry run of every object OLM creates from it (the pod-can-start rule runs in
//! generate's validation). Without helm, the charts or kube-apiserver the tests say NOT RUN
//! (and fail under CI=true).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod apiserver_support;

const PLAN: &str = "package: kueue
defaultChannel: alpha
channels: [alpha]
csv:
  displayName: Kueue
  description: Job queueing, from Kueue's Helm chart.
  provider: {name: example}
  maintainers: [{name: example, email: dev@example.com}]
  minKubeVersion: 1.28.0
releases:
  - version: 0.17.0
    manifests: manifests
";

/// A chart to render: where setup put it, the release name and the namespace.
struct Chart {
    data: olmpack_envtest::binaries::ToolData,
    release: &'static str,
    namespace: &'static str,
}

const KUEUE: Chart = Chart {
    data: olmpack_envtest::binaries::ToolData::KueueChart,
    release: "kueue",
    namespace: "kueue-system",
};

const KYVERNO: Chart = Chart {
    data: olmpack_envtest::binaries::ToolData::KyvernoChart,
    release: "kyverno",
    namespace: "kyverno",
};

/// helm, the chart's directory and the pinned kube-apiserver's version (what helm renders
/// for: a helm built without its release flags assumes Kubernetes v1.20), or `None` (said
/// loudly; a failure in CI, where setup installed them).
fn tools(chart: &Chart) -> Option<(PathBuf, PathBuf, String)> {
    let found = olmpack_envtest::binaries::Tool::Helm
        .path()
        .and_then(|helm| {
            let apiserver = olmpack_envtest::binaries::Tool::KubeApiserver.path()?;
            Ok((helm, chart.data.path()?, apiserver))
        });
    match found {
        Ok((helm, dir, apiserver)) => {
            let out = Command::new(apiserver).arg("--version").output().unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            let version = text.trim().trim_start_matches("Kubernetes ").to_owned();
            assert!(
                version.starts_with("v1."),
                "kube-apiserver --version: {text}"
            );
            Some((helm, dir, version))
        }
        Err(err) if std::env::var("CI").as_deref() == Ok("true") => {
            panic!("{err} (required in CI)")
        }
        Err(err) => {
            eprintln!("\n*** NOT RUN: realworld_helm: {err} ***\n");
            None
        }
    }
}

/// `helm template` of the chart with `set` values into `<dir>/manifests/<release>.yaml`;
/// `None` when the tools are missing.
fn render(chart: &Chart, set: &[&str], dir: &Path) -> Option<()> {
    let (helm, chart_dir, kube_version) = tools(chart)?;
    let mut cmd = Command::new(helm);
    cmd.args(["template", chart.release])
        .arg(chart_dir)
        .args(["--namespace", chart.namespace, "--include-crds"])
        .args(["--kube-version", &kube_version]);
    for value in set {
        cmd.args(["--set", value]);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "helm template failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::create_dir(dir.join("manifests")).unwrap();
    let file = format!("manifests/{}.yaml", chart.release);
    std::fs::write(dir.join(file), &out.stdout).unwrap();
    Some(())
}

/// Drops the documents of `<dir>/manifests/<release>.yaml` that `drop` picks (what a user
/// does with a part of a chart OLM cannot install, after olmpack named it).
fn without_documents(dir: &Path, release: &str, drop: impl Fn(&str) -> bool) {
    let path = dir.join(format!("manifests/{release}.yaml"));
    let text = std::fs::read_to_string(&path).unwrap();
    let all: Vec<&str> = text.split("\n---\n").collect();
    let kept: Vec<&str> = all.iter().copied().filter(|doc| !drop(doc)).collect();
    assert!(
        kept.len() < all.len(),
        "no document to drop in {}",
        path.display()
    );
    std::fs::write(&path, kept.join("\n---\n")).unwrap();
}

/// Drops the documents rendered from Kueue's templates whose path (under `templates/`) starts
/// with `prefix`.
fn without_templates(dir: &Path, prefix: &str) {
    let marker = format!("# Source: kueue/templates/{prefix}");
    without_documents(dir, "kueue", |doc| doc.contains(&marker));
}

/// Renders the chart with `set` (minus the documents of templates under `drop`), then runs
/// `olmpack bundle generate` with the plan plus `extra` plan lines.
fn generate(set: &[&str], drop: Option<&str>, extra: &str) -> Option<(tempfile::TempDir, Output)> {
    let dir = tempfile::tempdir().unwrap();
    render(&KUEUE, set, dir.path())?;
    if let Some(prefix) = drop {
        without_templates(dir.path(), prefix);
    }
    let out = run_generate(dir.path(), &format!("{PLAN}{extra}"));
    Some((dir, out))
}

/// `olmpack bundle generate` in `dir` with `plan` as its olmpack.yaml.
fn run_generate(dir: &Path, plan: &str) -> Output {
    std::fs::write(dir.join("olmpack.yaml"), plan).unwrap();
    Command::new(env!("CARGO_BIN_EXE_olmpack"))
        .args(["bundle", "generate", "--plan", "olmpack.yaml"])
        .args(["--out", "out"])
        .current_dir(dir)
        .output()
        .unwrap()
}

/// The finding lines the command printed (findings go to stderr), in order.
fn finding_lines(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.starts_with("error[") || l.starts_with("warning[") || l.starts_with("info["))
        .map(str::to_owned)
        .collect()
}

/// The file names of the generated bundle `<dir>/out/<version>/manifests/` that `pick` picks.
fn shipped_files(dir: &Path, version: &str, pick: impl Fn(&str) -> bool) -> Vec<String> {
    std::fs::read_dir(dir.join(format!("out/{version}/manifests")))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|f| pick(f))
        .collect()
}

/// The real API server accepts every object OLM creates from the bundle.
async fn apiserver_accepts(bundle: &Path) {
    let env = olmpack_envtest::control_plane::TestEnv::start()
        .await
        .expect("test environment starts");
    let client = env.client();
    let objects = apiserver_support::objects_olm_creates(bundle);
    assert!(objects.len() >= 5, "{} objects", objects.len());
    for object in &objects {
        if let Err(err) = apiserver_support::apiserver_dry_run(&client, object).await {
            panic!(
                "the apiserver refuses {} {}: {err}",
                object["kind"], object["metadata"]["name"]
            );
        }
    }
}

/// The hint of an APIService refused.
const API_SERVICE_HINT: &str = "  hint: OLM creates an aggregated API's APIService itself, with a serving certificate it mounts into the deployment, from the CSV's spec.apiservicedefinitions.owned, which olmpack does not write from an APIService; leave the APIService out (with the RoleBinding to extension-apiserver-authentication-reader in kube-system, which OLM creates for such an API too), or serve the API from a CRD";

/// The warning for each admission webhook whose namespaceSelector OLM replaces, at `document`
/// numbers of the mutating and the validating configuration.
fn namespace_selector_warnings(mutating: usize, validating: usize) -> Vec<String> {
    let warn = |document: usize, kind: &str, index: usize| {
        format!(
            "warning[input/webhook-namespace-selector] manifests/kueue.yaml (document {document}): {kind}/kueue-{}-webhook-configuration: webhooks[{index}].namespaceSelector: OLM replaces namespaceSelector with one for the OperatorGroup's namespaces",
            if kind.starts_with("Mutating") {
                "mutating"
            } else {
                "validating"
            }
        )
    };
    let mut out: Vec<String> = [16, 2, 9]
        .iter()
        .map(|i| warn(mutating, "MutatingWebhookConfiguration", *i))
        .collect();
    out.extend(
        [10, 17, 3]
            .iter()
            .map(|i| warn(validating, "ValidatingWebhookConfiguration", *i)),
    );
    out
}

/// The lines of the `input/*` findings (what the importer said about the chart's objects).
fn input_findings(out: &Output) -> Vec<String> {
    finding_lines(out)
        .into_iter()
        .filter(|l| {
            l.split_once('[')
                .is_some_and(|(_, r)| r.starts_with("input/"))
        })
        .collect()
}

/// The generated CSV.
fn csv(dir: &Path) -> serde_json::Value {
    let path = dir.join("out/0.17.0/manifests/kueue.clusterserviceversion.yaml");
    olmpack_model::yaml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// What the bundle's CSV must say for Kueue: its admission and conversion webhooks, only
/// AllNamespaces (a conversion webhook needs it), and no chart certificate volume.
fn check_csv(dir: &Path) {
    let csv = csv(dir);
    let spec = &csv["spec"];
    let definitions = spec["webhookdefinitions"].as_array().unwrap();
    assert_eq!(definitions.len(), 44);
    let conversion: Vec<&serde_json::Value> = definitions
        .iter()
        .filter(|d| d["type"] == "ConversionWebhook")
        .collect();
    assert_eq!(conversion.len(), 1);
    assert_eq!(
        conversion[0]["conversionCRDs"],
        serde_json::json!([
            "clusterqueues.kueue.x-k8s.io",
            "cohorts.kueue.x-k8s.io",
            "localqueues.kueue.x-k8s.io",
            "multikueueclusters.kueue.x-k8s.io",
            "workloads.kueue.x-k8s.io"
        ])
    );
    let supported: Vec<&str> = spec["installModes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["supported"] == true)
        .map(|m| m["type"].as_str().unwrap())
        .collect();
    assert_eq!(supported, ["AllNamespaces"]);
    let pod = &spec["install"]["spec"]["deployments"][0]["spec"]["template"]["spec"];
    let text = serde_json::to_string(pod).unwrap();
    assert!(
        !text.contains("serving-certs") && !text.contains("\"name\":\"cert\""),
        "the chart's certificate volume gives way to OLM's: {text}"
    );
}

/// Kueue's chart as it is: its aggregated visibility API stops generation, each APIService
/// named with what OLM does instead, then (without them) the RoleBinding to a kube-system
/// Role; nothing is written.
#[test]
fn realworld_helm_kueue_stops_on_its_aggregated_api() {
    let Some((dir, out)) = generate(&[], None, "") else {
        return;
    };
    let refused = |document: usize, version: &str| {
        format!(
            "error[input/unsupported-kind] manifests/kueue.yaml (document {document}): APIService/{version}.visibility.kueue.x-k8s.io: kind: kind APIService (apiregistration.k8s.io/v1) cannot be shipped in a registry+v1 bundle\n{API_SERVICE_HINT}\n"
        )
    };
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "{}{}olmpack.yaml: 2 error(s), 0 warning(s), 0 info\nolmpack: nothing written\n",
            refused(75, "v1beta1"),
            refused(76, "v1beta2")
        )
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(!dir.path().join("out").exists(), "nothing is written");
    // Without the APIServices, their RoleBinding in kube-system is what stops it.
    let Some((dir, out)) = generate(&[], Some("visibility/apiservice_"), "") else {
        return;
    };
    let mut want = vec![
        "error[input/dangling-role-ref] manifests/kueue.yaml (document 70): RoleBinding/kueue-visibility-server-auth-reader: roleRef: refers to Role extension-apiserver-authentication-reader, which is not in the manifests".to_owned(),
    ];
    want.extend(namespace_selector_warnings(75, 76));
    assert_eq!(finding_lines(&out), want);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("  hint: the binding is for a Role in kube-system, but OLM creates a bundle's objects in the namespace the operator is installed into, where there is no Role extension-apiserver-authentication-reader; OLM binds extension-apiserver-authentication-reader itself for an API in the CSV's spec.apiservicedefinitions.owned\n"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(!dir.path().join("out").exists(), "nothing is written");
}

/// Without the visibility API's templates the chart becomes a bundle: the certificate volume
/// gives way to OLM's, the Secret Kueue fills itself ships empty, and the real API server
/// accepts every object OLM creates.
#[tokio::test]
async fn realworld_helm_kueue_without_the_visibility_api() {
    let Some((dir, out)) = generate(&[], Some("visibility/"), "") else {
        return;
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let mut want = vec!["warning[input/webhook-cert-volume-dropped] manifests/kueue.yaml (document 72): Deployment/kueue-controller-manager: spec.template.spec.volumes: volume cert carries webhook serving certificates; OLM mounts its own there, so it is left out of the CSV".to_owned()];
    want.extend(namespace_selector_warnings(73, 74));
    assert_eq!(input_findings(&out), want, "{stderr}");
    assert!(
        stderr.contains("0.17.0: 0 error(s), 43 warning(s), 1 info\n"),
        "{stderr}"
    );
    check_csv(dir.path());
    let secret = dir
        .path()
        .join("out/0.17.0/manifests/kueue-webhook-server-cert_v1_secret.yaml");
    let secret: serde_json::Value =
        olmpack_model::yaml::from_str(&std::fs::read_to_string(secret).unwrap()).unwrap();
    assert!(
        secret.get("data").is_none() && secret.get("type").is_none(),
        "the Secret Kueue's own certificate management fills ships as the chart has it: {secret}"
    );
    apiserver_accepts(&dir.path().join("out/0.17.0")).await;
}

/// With `enableCertManager=true`: the webhook Certificate and the Issuer give way to OLM
/// (info), the metrics and visibility Certificates are errors until the plan drops them (their
/// volumes go too), and then the bundle passes the same checks.
#[tokio::test]
async fn realworld_helm_kueue_with_cert_manager() {
    let set = ["enableCertManager=true"];
    let Some((_, out)) = generate(&set, Some("visibility/"), "") else {
        return;
    };
    assert_eq!(
        finding_lines(&out),
        [
            "error[input/cert-manager-certificate] manifests/kueue.yaml (document 72): Certificate/kueue-metrics-cert: OLM does not run cert-manager, so Secret kueue-metrics-server-cert, which a Deployment mounts, would never exist and the pod could not start",
            "error[input/cert-manager-certificate] manifests/kueue.yaml (document 73): Certificate/kueue-visibility-server-cert: OLM does not run cert-manager, so Secret kueue-visibility-server-cert, which a Deployment mounts, would never exist and the pod could not start",
        ]
    );
    assert_eq!(out.status.code(), Some(1));
    let Some((dir, out)) = generate(&set, Some("visibility/"), "certManagerCertificates: drop\n")
    else {
        return;
    };
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let mut want: Vec<String> = [
        "warning[input/cert-manager-unmounted] manifests/kueue.yaml (document 71): Deployment/kueue-controller-manager: spec.template.spec: Secret kueue-metrics-server-cert (its Certificate was left out) is no longer mounted: removed volume metrics-certs, the mount at /etc/kueue/metrics/certs in container manager",
        "warning[input/cert-manager-unmounted] manifests/kueue.yaml (document 71): Deployment/kueue-controller-manager: spec.template.spec: Secret kueue-visibility-server-cert (its Certificate was left out) is no longer mounted: removed volume visibility, the mount at /visibility in container manager",
        "warning[input/webhook-cert-volume-dropped] manifests/kueue.yaml (document 71): Deployment/kueue-controller-manager: spec.template.spec.volumes: volume cert carries webhook serving certificates; OLM mounts its own there, so it is left out of the CSV",
        "warning[input/cert-manager-dropped] manifests/kueue.yaml (document 72): Certificate/kueue-metrics-cert: Certificate left out (certManagerCertificates: drop): OLM does not run cert-manager, so Secret kueue-metrics-server-cert would never exist; the Deployments no longer mount it",
        "warning[input/cert-manager-dropped] manifests/kueue.yaml (document 73): Certificate/kueue-visibility-server-cert: Certificate left out (certManagerCertificates: drop): OLM does not run cert-manager, so Secret kueue-visibility-server-cert would never exist; the Deployments no longer mount it",
        "info[input/cert-manager-replaced] manifests/kueue.yaml (document 74): Certificate/kueue-serving-cert: webhook serving certificate (Secret kueue-webhook-server-cert) left out: OLM creates, mounts and rotates webhook certificates itself",
        "info[input/cert-manager-replaced] manifests/kueue.yaml (document 75): Issuer/kueue-selfsigned-issuer: Issuer left out: it only issues certificates, which OLM handles itself for webhooks",
    ]
    .map(str::to_owned)
    .to_vec();
    want.extend(namespace_selector_warnings(76, 77));
    assert_eq!(input_findings(&out), want, "{stderr}");
    assert!(
        stderr.contains("0.17.0: 0 error(s), 47 warning(s), 3 info\n"),
        "{stderr}"
    );
    check_csv(dir.path());
    let files = shipped_files(dir.path(), "0.17.0", |f| {
        f.contains("secret") || f.contains("cert-manager")
    });
    assert_eq!(
        files,
        Vec::<String>::new(),
        "no Secret, no cert-manager object"
    );
    apiserver_accepts(&dir.path().join("out/0.17.0")).await;
}

/// The plan for Kyverno's chart.
fn kyverno_plan() -> String {
    PLAN.replace("kueue", "kyverno")
        .replace("Kueue", "Kyverno")
        .replace("0.17.0", "3.4.4")
}

/// Renders Kyverno's chart with `set` into a temporary directory; `None` without the tools.
fn render_kyverno(set: &[&str]) -> Option<tempfile::TempDir> {
    let dir = tempfile::tempdir().unwrap();
    render(&KYVERNO, set, dir.path())?;
    Some(dir)
}

/// Drops Kyverno's bindings to the built-in `view` ClusterRole (what a user does after
/// olmpack refused them, see `realworld_helm_kyverno_binds_the_built_in_view_role`).
fn without_view_bindings(dir: &Path) {
    without_documents(dir, "kyverno", |doc| {
        doc.contains("kind: ClusterRoleBinding")
            && doc.contains("kind: ClusterRole\n  name: view\n")
    });
}

/// Kyverno's post-upgrade hook objects: their document in the chart as rendered, and name.
const KYVERNO_POST_UPGRADE_HOOKS: [(usize, &str); 5] = [
    (63, "ServiceAccount/kyverno-migrate-resources"),
    (64, "ClusterRole/kyverno:migrate-resources"),
    (65, "ClusterRoleBinding/kyverno:migrate-resources"),
    (74, "Job/kyverno-clean-reports"),
    (75, "Job/kyverno-migrate-resources"),
];

/// The values that switch off Kyverno's two post-upgrade hooks.
const KYVERNO_NO_UPGRADE_HOOKS: [&str; 2] = [
    "policyReportsCleanup.enabled=false",
    "crds.migration.enabled=false",
];

/// Kyverno's chart as it is: its post-upgrade hooks (two Jobs, and the RBAC one runs with, each
/// object a hook) are errors naming each object; nothing is written.
#[test]
fn realworld_helm_kyverno_post_upgrade_hooks_are_refused() {
    let Some(dir) = render_kyverno(&[]) else {
        return;
    };
    let out = run_generate(dir.path(), &kyverno_plan());
    let refused = |document: usize, object: &str| {
        format!(
            "error[input/helm-hook] manifests/kyverno.yaml (document {document}): {object}: metadata.annotations.helm.sh/hook: a Helm post-upgrade hook: OLM never runs Helm hooks, so this work would never happen"
        )
    };
    let want: Vec<String> = KYVERNO_POST_UPGRADE_HOOKS
        .iter()
        .map(|(document, object)| refused(*document, object))
        .collect();
    assert_eq!(finding_lines(&out), want);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("  hint: move the work into the operator (do it at startup or when reconciling), remove the hook annotation if the object is simply part of the install, or set `helmHooks: drop` in the plan to leave install and upgrade hooks out\n"),
        "{stderr}"
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(!dir.path().join("out").exists(), "nothing is written");
}

/// With `helmHooks: drop` (and without its bindings to the built-in `view` ClusterRole, see
/// below), Kyverno's chart as it is becomes a bundle: the post-upgrade hook objects are left
/// out with a warning each, and none of them is shipped.
#[test]
fn realworld_helm_kyverno_post_upgrade_hooks_dropped_by_the_plan() {
    let Some(dir) = render_kyverno(&[]) else {
        return;
    };
    without_view_bindings(dir.path());
    let out = run_generate(dir.path(), &format!("{}helmHooks: drop\n", kyverno_plan()));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let lines = finding_lines(&out);
    let dropped = |object: &str| {
        format!(
            "{object}: metadata.annotations.helm.sh/hook: a Helm post-upgrade hook is left out (helmHooks: drop): OLM never runs Helm hooks, so the operator must do this work itself"
        )
    };
    // Documents are renumbered once the bindings are gone: match the lines by their end.
    for (_, object) in KYVERNO_POST_UPGRADE_HOOKS {
        let want = dropped(object);
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("warning[input/helm-hook-dropped]") && l.ends_with(&want)),
            "missing {want} in {lines:#?}"
        );
    }
    let files = shipped_files(dir.path(), "3.4.4", |f| {
        f.contains("migrate-resources") || f.contains("clean-reports")
    });
    assert_eq!(files, Vec::<String>::new(), "no hook object is shipped");
}

/// Without the post-upgrade hooks, what stops Kyverno's chart is its bindings to the cluster's
/// built-in `view` ClusterRole, whose rules a CSV cannot name.
#[test]
fn realworld_helm_kyverno_binds_the_built_in_view_role() {
    let Some(dir) = render_kyverno(&KYVERNO_NO_UPGRADE_HOOKS) else {
        return;
    };
    let out = run_generate(dir.path(), &kyverno_plan());
    let refused = |document: usize, controller: &str| {
        format!(
            "error[input/dangling-role-ref] manifests/kyverno.yaml (document {document}): ClusterRoleBinding/kyverno:{controller}:view: roleRef: refers to ClusterRole view, which is not in the manifests"
        )
    };
    assert_eq!(
        finding_lines(&out),
        [
            refused(38, "admission-controller"),
            refused(40, "background-controller"),
            refused(43, "reports-controller"),
        ]
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("  hint: view is a ClusterRole every cluster has, with rules that differ between clusters; OLM grants the CSV's service accounts only the rules the CSV lists, so put a ClusterRole with the rules the operator needs in the manifests and bind that\n"),
        "{stderr}"
    );
    assert_eq!(out.status.code(), Some(1));
}

/// Without those bindings too, Kyverno's chart becomes a bundle: its test hooks (Pods) and
/// delete hooks (Jobs and their RBAC) are left out, each with a warning naming it, and the
/// real API server accepts every object OLM creates.
#[tokio::test]
async fn realworld_helm_kyverno_leaves_out_test_and_delete_hooks() {
    let Some(dir) = render_kyverno(&KYVERNO_NO_UPGRADE_HOOKS) else {
        return;
    };
    without_view_bindings(dir.path());
    let out = run_generate(dir.path(), &kyverno_plan());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let dropped = |document: usize, object: &str, hook: &str| {
        let what = if hook == "test" {
            "a Helm test hook is left out: only `helm test` runs it".to_owned()
        } else {
            format!("a Helm {hook} hook is left out: OLM never runs Helm hooks")
        };
        format!(
            "warning[input/helm-hook-dropped] manifests/kyverno.yaml (document {document}): {object}: metadata.annotations.helm.sh/hook: {what}"
        )
    };
    assert_eq!(
        input_findings(&out),
        [
            dropped(59, "ServiceAccount/kyverno-remove-configmap", "post-delete"),
            dropped(60, "Role/kyverno:remove-configmap", "post-delete"),
            dropped(61, "RoleBinding/kyverno:remove-configmap", "post-delete"),
            dropped(62, "Pod/kyverno-admission-controller-metrics", "test"),
            dropped(63, "Pod/kyverno-cleanup-controller-liveness", "test"),
            dropped(64, "Pod/kyverno-cleanup-controller-metrics", "test"),
            dropped(65, "Pod/kyverno-cleanup-controller-readiness", "test"),
            dropped(66, "Pod/kyverno-reports-controller-metrics", "test"),
            dropped(67, "Job/kyverno-remove-configmap", "post-delete"),
            dropped(68, "Job/kyverno-scale-to-zero", "pre-delete"),
        ],
        "{stderr}"
    );
    assert!(
        stderr.contains("3.4.4: 0 error(s), 45 warning(s), 1 info\n"),
        "{stderr}"
    );
    // Its controllers all name their container `controller`: relatedImages stay unique.
    assert!(!stderr.contains("csv/related-image"), "{stderr}");
    let files = shipped_files(dir.path(), "3.4.4", |f| {
        f.contains("_pod") || f.contains("_job") || f.contains("remove-configmap")
    });
    assert_eq!(files, Vec::<String>::new(), "no hook object is shipped");
    apiserver_accepts(&dir.path().join("out/3.4.4")).await;
}
