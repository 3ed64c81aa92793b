//! The cert-manager choice, table-driven: exact findings and what is left of the Deployment.

use serde_json::{Value, json};

use crate::bundle::inputs::Sourced;
use crate::bundle::manifests::{ImportChoices, classify};
use olmpack_model::plan::ErrorOrDrop;
use olmpack_model::report::{Finding, Severity};

/// kubebuilder's manager Deployment (cronjob-tutorial's `dist/install.yaml`), with `args`.
fn deployment(args: Value) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "project-controller-manager"},
        "spec": {"template": {"spec": {
            "containers": [{
                "name": "manager",
                "args": args,
                "volumeMounts": [
                    {"mountPath": "/tmp/k8s-metrics-server/metrics-certs", "name": "metrics-certs", "readOnly": true},
                    {"mountPath": "/tmp/k8s-webhook-server/serving-certs", "name": "webhook-certs", "readOnly": true}
                ]
            }],
            "volumes": [
                {"name": "metrics-certs", "secret": {"secretName": "metrics-server-cert", "optional": false}},
                {"name": "webhook-certs", "secret": {"secretName": "webhook-server-cert"}}
            ]
        }}}
    })
}

fn certificate(name: &str, secret: &str, dns: &str) -> Value {
    json!({
        "apiVersion": "cert-manager.io/v1", "kind": "Certificate",
        "metadata": {"name": name},
        "spec": {"dnsNames": [dns], "secretName": secret, "issuerRef": {"kind": "Issuer", "name": "selfsigned"}}
    })
}

fn objects(args: Value) -> Vec<Sourced> {
    [
        deployment(args),
        certificate(
            "project-metrics-certs",
            "metrics-server-cert",
            "project-controller-manager-metrics-service.project-system.svc",
        ),
        certificate(
            "project-serving-cert",
            "webhook-server-cert",
            "project-webhook-service.project-system.svc",
        ),
        certificate("unused", "nobody-mounts-it", "unused.project-system.svc"),
        json!({"apiVersion": "cert-manager.io/v1", "kind": "Issuer", "metadata": {"name": "selfsigned"}, "spec": {"selfSigned": {}}}),
        json!({"apiVersion": "monitoring.coreos.com/v1", "kind": "ServiceMonitor", "metadata": {"name": "metrics"},
               "spec": {"endpoints": [{"tlsConfig": {"ca": {"secret": {"key": "ca.crt", "name": "metrics-server-cert"}}}}]}}),
    ]
    .into_iter()
    .enumerate()
    .map(|(index, value)| Sourced {
        file: "install.yaml".into(),
        index,
        value,
    })
    .collect()
}

/// `severity[rule] object: message` (and `hint: …`), as the text report shows them.
fn shown(findings: &[Finding]) -> Vec<String> {
    findings
        .iter()
        .map(|f| {
            let severity = match f.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
                Severity::Info => "info",
            };
            let hint = f
                .hint
                .as_deref()
                .map_or(String::new(), |h| format!(" hint: {h}"));
            format!(
                "{severity}[{}] {}: {}{hint}",
                f.rule,
                f.object.as_deref().unwrap_or(""),
                f.message
            )
        })
        .collect()
}

const KUBEBUILDER_ARGS: [&str; 6] = [
    "--metrics-bind-address=:8443",
    "--leader-elect",
    "--health-probe-bind-address=:8081",
    "--metrics-cert-path=/tmp/k8s-metrics-server/metrics-certs",
    "--webhook-cert-path=/tmp/k8s-webhook-server/serving-certs",
    "--webhook-port=9443",
];

const REPLACED: [&str; 2] = [
    "info[input/cert-manager-replaced] Certificate/project-serving-cert: webhook serving certificate (Secret webhook-server-cert) left out: OLM creates, mounts and rotates webhook certificates itself",
    "info[input/cert-manager-replaced] Issuer/selfsigned: Issuer left out: it only issues certificates, which OLM handles itself for webhooks",
];

const UNUSED: &str = "warning[input/cert-manager-dropped] Certificate/unused: Certificate left out: OLM does not run cert-manager, and nothing mounts its Secret nobody-mounts-it";

#[test]
fn the_default_stops_with_a_hint_naming_the_choice() {
    let mut problems = Vec::new();
    let inputs = classify(
        objects(json!(KUBEBUILDER_ARGS)),
        ImportChoices::default(),
        &mut problems,
    );
    assert_eq!(
        shown(&problems),
        [
            "error[input/cert-manager-certificate] Certificate/project-metrics-certs: OLM does not run cert-manager, so Secret metrics-server-cert, which a Deployment mounts, would never exist and the pod could not start hint: set `certManagerCertificates: drop` in the plan to leave the Certificate out and remove the Secret metrics-server-cert volume, its mounts and the container args pointing into them (e.g. kubebuilder's --metrics-cert-path; controller-runtime then serves metrics with a self-signed certificate), or ship the Secret"
        ]
    );
    let mut expected = vec![REPLACED[0], UNUSED, REPLACED[1]];
    expected.sort();
    let mut notes = shown(&inputs.notes);
    notes.sort();
    assert_eq!(notes, expected);
    assert_eq!(
        inputs.deployments[0].value,
        deployment(json!(KUBEBUILDER_ARGS))
    );
}

/// One row: the manager's args, then what `drop` leaves of them and the unmount warning's
/// list of removals.
struct Row {
    args: &'static [&'static str],
    kept: &'static [&'static str],
    removed: &'static str,
}

#[test]
fn drop_leaves_the_certificate_out_and_unmounts_its_secret() {
    let rows = [
        Row {
            args: &KUBEBUILDER_ARGS,
            kept: &[
                "--metrics-bind-address=:8443",
                "--leader-elect",
                "--health-probe-bind-address=:8081",
                "--webhook-cert-path=/tmp/k8s-webhook-server/serving-certs",
                "--webhook-port=9443",
            ],
            removed: "volume metrics-certs, the mount at /tmp/k8s-metrics-server/metrics-certs in container manager, argument --metrics-cert-path=/tmp/k8s-metrics-server/metrics-certs of container manager",
        },
        Row {
            args: &[
                "--tls-cert",
                "/tmp/k8s-metrics-server/metrics-certs/tls.crt",
                "--leader-elect",
                "/tmp/k8s-metrics-server/metrics-certs-other",
            ],
            kept: &[
                "--leader-elect",
                "/tmp/k8s-metrics-server/metrics-certs-other",
            ],
            removed: "volume metrics-certs, the mount at /tmp/k8s-metrics-server/metrics-certs in container manager, argument --tls-cert /tmp/k8s-metrics-server/metrics-certs/tls.crt of container manager",
        },
        Row {
            args: &["--leader-elect"],
            kept: &["--leader-elect"],
            removed: "volume metrics-certs, the mount at /tmp/k8s-metrics-server/metrics-certs in container manager",
        },
    ];
    for row in rows {
        let mut problems = Vec::new();
        let inputs = classify(
            objects(json!(row.args)),
            ImportChoices {
                cert_manager: ErrorOrDrop::Drop,
                ..ImportChoices::default()
            },
            &mut problems,
        );
        assert_eq!(shown(&problems), Vec::<String>::new());
        let unmounted = format!(
            "warning[input/cert-manager-unmounted] Deployment/project-controller-manager: Secret metrics-server-cert (its Certificate was left out) is no longer mounted: removed {}",
            row.removed
        );
        let mut expected = vec![
            "warning[input/cert-manager-dropped] Certificate/project-metrics-certs: Certificate left out (certManagerCertificates: drop): OLM does not run cert-manager, so Secret metrics-server-cert would never exist; the Deployments no longer mount it",
            REPLACED[0],
            UNUSED,
            REPLACED[1],
            &unmounted,
            "warning[input/cert-manager-secret-referenced] ServiceMonitor/metrics: refers to Secret metrics-server-cert, whose Certificate was left out: nothing creates it, so whatever reads it (e.g. Prometheus scraping with this TLS configuration) fails",
        ];
        expected.sort();
        let mut notes = shown(&inputs.notes);
        notes.sort();
        assert_eq!(notes, expected, "{:?}", row.args);
        let pod = &inputs.deployments[0].value["spec"]["template"]["spec"];
        assert_eq!(
            pod["containers"][0]["args"],
            json!(row.kept),
            "{:?}",
            row.args
        );
        assert_eq!(
            pod["containers"][0]["volumeMounts"],
            json!([{"mountPath": "/tmp/k8s-webhook-server/serving-certs", "name": "webhook-certs", "readOnly": true}])
        );
        assert_eq!(
            pod["volumes"],
            json!([{"name": "webhook-certs", "secret": {"secretName": "webhook-server-cert"}}])
        );
    }
}
