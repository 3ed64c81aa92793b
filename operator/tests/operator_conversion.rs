//! Conversion through the real apiserver: the CRD of release 0.3.0 (all three versions
//! served) calls the operator's `/convert` on a certificate the apiserver trusts.

mod common;

use std::time::Duration;

use common::harness::{self, APPS_NS, Cluster};
use kube::api::{Api, DynamicObject, PostParams};
use serde_json::json;
use webapp_operator::api::Version;
use webapp_operator::conversion::PRESERVED_ANNOTATION;
use webapp_operator::releases::OperatorRelease;

fn spec_at(version: Version) -> serde_json::Value {
    match version {
        Version::V1alpha1 => {
            json!({"image": "shop:1", "replicas": 2, "port": 9000, "databaseSecret": "db", "debug": true})
        }
        Version::V1beta1 => json!({"image": "shop:1", "replicas": 2, "containerPort": 9000,
                                   "database": {"secretName": "db", "key": "dsn"}, "debug": true}),
        Version::V1 => json!({"image": "shop:1", "replicas": 2, "containerPort": 9000,
                              "database": {"secretName": "db", "key": "dsn"}, "logLevel": "Warn"}),
    }
}

/// What the object created at `from` looks like at `to`.
fn expected(from: Version, to: Version) -> serde_json::Value {
    let key = if from == Version::V1alpha1 {
        None
    } else {
        Some("dsn")
    };
    let (debug, log_level) = if from == Version::V1 {
        (None, Some("Warn"))
    } else {
        (Some(true), None)
    };
    let mut spec = json!({"image": "shop:1", "replicas": 2});
    match to {
        Version::V1alpha1 => {
            spec["port"] = json!(9000);
            spec["databaseSecret"] = json!("db");
        }
        _ => {
            spec["containerPort"] = json!(9000);
            spec["database"] = json!({"secretName": "db"});
            if let Some(key) = key {
                spec["database"]["key"] = json!(key);
            }
        }
    }
    if let Some(debug) = debug {
        spec["debug"] = json!(debug);
    }
    if let (Version::V1, Some(level)) = (to, log_level) {
        spec["logLevel"] = json!(level);
    }
    spec
}

async fn cluster() -> Cluster {
    harness::cluster(OperatorRelease::find("0.3.0").unwrap(), false).await
}

#[tokio::test]
async fn operator_conversion_through_apiserver_every_pair() {
    let cluster = cluster().await;
    for from in Version::ALL {
        let name = format!("from-{}", from.name());
        harness::create_webapp(&cluster, from, &name, spec_at(from)).await;
        for to in Version::ALL {
            let read = cluster
                .webapps(to)
                .get(&name)
                .await
                .unwrap_or_else(|err| panic!("reading {name} at {} failed: {err}", to.name()));
            assert_eq!(read.types.as_ref().unwrap().api_version, to.api_version());
            assert_eq!(
                read.data["spec"],
                expected(from, to),
                "{name} read at {}",
                to.name()
            );
            assert_eq!(read.metadata.name.as_deref(), Some(name.as_str()));
        }
    }
    // Lists convert too, and in order.
    let list = cluster
        .webapps(Version::V1alpha1)
        .list(&Default::default())
        .await
        .unwrap();
    assert_eq!(list.items.len(), 3);
    let requests = cluster.webhook.metrics.encode();
    assert!(
        requests.contains("webapp_webhook_requests_total{endpoint=\"convert\",result=\"ok\"}"),
        "{requests}"
    );
    assert!(!requests.contains("result=\"failed\""), "{requests}");
}

#[tokio::test]
async fn operator_conversion_down_and_up_is_lossless_through_apiserver() {
    let cluster = cluster().await;
    harness::create_webapp(&cluster, Version::V1, "rich", spec_at(Version::V1)).await;
    // A client that only knows v1alpha1 reads, edits a label and writes back the object.
    let alpha = cluster.webapps(Version::V1alpha1);
    let mut old = alpha.get("rich").await.unwrap();
    assert!(
        old.metadata
            .annotations
            .as_ref()
            .unwrap()
            .contains_key(PRESERVED_ANNOTATION),
        "hub-only fields are preserved in the annotation: {:?}",
        old.metadata
    );
    old.metadata.labels = Some([("edited".to_owned(), "yes".to_owned())].into());
    alpha
        .replace("rich", &PostParams::default(), &old)
        .await
        .unwrap();
    let v1 = cluster.webapps(Version::V1).get("rich").await.unwrap();
    assert_eq!(
        v1.data["spec"],
        spec_at(Version::V1),
        "v1-only fields survived the v1alpha1 write"
    );
    assert_eq!(v1.metadata.labels.unwrap()["edited"], "yes");
    assert!(
        !v1.metadata
            .annotations
            .unwrap_or_default()
            .contains_key(PRESERVED_ANNOTATION),
        "the annotation does not leak into the hub"
    );
    // The same through v1beta1.
    let beta = cluster.webapps(Version::V1beta1);
    let mut old = beta.get("rich").await.unwrap();
    old.data["spec"]["replicas"] = json!(3);
    beta.replace("rich", &PostParams::default(), &old)
        .await
        .unwrap();
    let v1 = cluster.webapps(Version::V1).get("rich").await.unwrap();
    let mut want = spec_at(Version::V1);
    want["replicas"] = json!(3);
    assert_eq!(v1.data["spec"], want);
}

#[tokio::test]
async fn operator_admission_webhooks_through_apiserver() {
    let cluster = cluster().await;
    let ca = base64_encode(cluster.env.ca().cert_pem());
    let url = cluster.webhook_url();
    let hook = |name: &str, path: &str| {
        json!({
            "name": name,
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "failurePolicy": "Fail",
            "matchPolicy": "Equivalent",
            "clientConfig": {"url": format!("{url}{path}"), "caBundle": ca},
            "rules": [{"apiGroups": ["apps.olmpack.dev"], "apiVersions": ["v1"],
                       "operations": ["CREATE", "UPDATE"], "resources": ["webapps"]}],
        })
    };
    let client = cluster.env.client();
    let validating: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &kube::core::ApiResource::from_gvk(&kube::core::GroupVersionKind::gvk(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingWebhookConfiguration",
        )),
    );
    let mutating: Api<DynamicObject> = Api::all_with(
        client.clone(),
        &kube::core::ApiResource::from_gvk(&kube::core::GroupVersionKind::gvk(
            "admissionregistration.k8s.io",
            "v1",
            "MutatingWebhookConfiguration",
        )),
    );
    let object = |kind: &str, hook: serde_json::Value| -> DynamicObject {
        serde_json::from_value(json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": {"name": "webapp-operator"}, "webhooks": [hook],
        }))
        .unwrap()
    };
    validating
        .create(
            &PostParams::default(),
            &object(
                "ValidatingWebhookConfiguration",
                hook("vwebapp.apps.olmpack.dev", "/validate"),
            ),
        )
        .await
        .unwrap();
    mutating
        .create(
            &PostParams::default(),
            &object(
                "MutatingWebhookConfiguration",
                hook("mwebapp.apps.olmpack.dev", "/mutate"),
            ),
        )
        .await
        .unwrap();
    // Webhook configurations take effect asynchronously: wait for the defaulting to show.
    let alpha = cluster.webapps(Version::V1alpha1);
    let mut attempt = 0;
    harness::eventually(
        "the defaulting webhook applies",
        Duration::from_secs(30),
        || {
            attempt += 1;
            let name = format!("defaulted-{attempt}");
            let cluster = &cluster;
            let alpha = alpha.clone();
            async move {
                let object: DynamicObject = serde_json::from_value(json!({
                    "apiVersion": "apps.olmpack.dev/v1alpha1", "kind": "WebApp",
                    "metadata": {"name": name, "namespace": APPS_NS},
                    "spec": {"image": "shop:1"},
                }))
                .unwrap();
                let _ = cluster;
                match alpha.create(&PostParams::default(), &object).await {
                    Ok(created) => {
                        created.data["spec"]["port"] == 8080
                            && created.data["spec"]["replicas"] == 1
                    }
                    Err(_) => false,
                }
            }
        },
    )
    .await;
    // An unpinned image is denied, with the validator's message, at any version.
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "apps.olmpack.dev/v1beta1", "kind": "WebApp",
        "metadata": {"name": "unpinned", "namespace": APPS_NS},
        "spec": {"image": "registry.example/shop"},
    }))
    .unwrap();
    let err = cluster
        .webapps(Version::V1beta1)
        .create(&PostParams::default(), &object)
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("spec.image \"registry.example/shop\" must name a tag or a digest"),
        "{err}"
    );
    // The CEL rule of v1 (debug with logLevel) is enforced by the apiserver itself.
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "apps.olmpack.dev/v1", "kind": "WebApp",
        "metadata": {"name": "both", "namespace": APPS_NS},
        "spec": {"image": "shop:1", "debug": true, "logLevel": "Info"},
    }))
    .unwrap();
    let err = cluster
        .webapps(Version::V1)
        .create(&PostParams::default(), &object)
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("debug is deprecated and cannot be combined with logLevel"),
        "{err}"
    );
}

#[tokio::test]
async fn operator_cert_rotation_served_without_restart() {
    let cluster = cluster().await;
    harness::create_webapp(&cluster, Version::V1, "rotated", spec_at(Version::V1)).await;
    let before = served_certificate(&cluster).await;
    let (cert_path, key_path) = cluster.cert_files();
    assert_eq!(
        before,
        pem_der(&std::fs::read_to_string(&cert_path).unwrap())
    );

    // Rotate: new key and certificate from the same CA, written over the old files.
    let next = cluster.env.ca().issue_server(&["127.0.0.1"]).unwrap();
    std::fs::write(&key_path, &next.key_pem).unwrap();
    std::fs::write(&cert_path, &next.cert_pem).unwrap();
    let want = pem_der(&next.cert_pem);
    assert_ne!(before, want);
    let started = std::time::Instant::now();
    while served_certificate(&cluster).await != want {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the rotated certificate was not served within 10 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The apiserver converts through the rotated certificate.
    let read = cluster
        .webapps(Version::V1alpha1)
        .get("rotated")
        .await
        .unwrap();
    assert_eq!(read.data["spec"]["port"], 9000);
}

fn pem_der(pem: &str) -> Vec<u8> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    CertificateDer::pem_slice_iter(pem.as_bytes())
        .next()
        .unwrap()
        .unwrap()
        .to_vec()
}

/// The leaf certificate the webhook presents in a fresh TLS handshake.
async fn served_certificate(cluster: &Cluster) -> Vec<u8> {
    use std::sync::Arc;
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(pem_der(cluster.env.ca().cert_pem()).into())
        .unwrap();
    let config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let addr = cluster.webhook.webhook_addr.unwrap();
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let tls = connector.connect(name, tcp).await.unwrap();
    let (_, session) = tls.get_ref();
    session.peer_certificates().unwrap()[0].to_vec()
}

fn base64_encode(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}
