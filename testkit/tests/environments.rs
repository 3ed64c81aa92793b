//! The test environment against the real kube-apiserver, kube-controller-manager and registry.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, PostParams};
use kube::core::conversion::{ConversionRequest, ConversionResponse, ConversionReview};
use kube::core::{ApiResource, GroupVersionKind};
use olmpack_envtest::{control_plane::TestEnv, control_plane::TestEnvOptions, https::HttpsServer};
use olmpack_testkit::{registry::Registry, registry::RegistryAuth};
use serde_json::json;

fn from_json<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).expect("test fixture is valid")
}

async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = Instant::now();
    while !check().await {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn pid_alive(pid: u32) -> bool {
    // A killed and reaped process has no /proc entry; a zombie would still show "Z".
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| !stat.contains(") Z "))
        .unwrap_or(false)
}

/// Converts `Gadget` objects between v1 (`spec.colour`) and v2 (`spec.paint.colour`),
/// counting calls.
fn convert(review: ConversionReview, calls: &AtomicUsize) -> ConversionReview {
    calls.fetch_add(1, Ordering::SeqCst);
    let request = match ConversionRequest::from_review(review) {
        Ok(request) => request,
        Err(_) => {
            return ConversionResponse::invalid(kube::core::Status::failure(
                "no request",
                "BadRequest",
            ))
            .into_review();
        }
    };
    let desired = request.desired_api_version.clone();
    let mut converted = Vec::new();
    for mut object in request.objects.clone() {
        let spec = object["spec"].take();
        let colour = spec
            .get("colour")
            .or_else(|| spec.get("paint").and_then(|p| p.get("colour")))
            .cloned()
            .unwrap_or(serde_json::Value::Null);
        object["spec"] = if desired.ends_with("/v2") {
            json!({"paint": {"colour": colour}})
        } else {
            json!({"colour": colour})
        };
        object["apiVersion"] = json!(desired);
        converted.push(object);
    }
    ConversionResponse::for_request(request)
        .success(converted)
        .into_review()
}

#[tokio::test]
async fn envtest_conversion_roundtrip() {
    let env = TestEnv::start().await.expect("test environment starts");

    let calls = Arc::new(AtomicUsize::new(0));
    let handler_calls = calls.clone();
    let router = axum::Router::new().route(
        "/convert",
        axum::routing::post(move |axum::Json(review): axum::Json<ConversionReview>| {
            let calls = handler_calls.clone();
            async move { axum::Json(convert(review, &calls)) }
        }),
    );
    let cert = env.ca().issue_server(&["127.0.0.1"]).unwrap();
    let webhook = HttpsServer::start(router, &cert).await.unwrap();

    let schema = |spec: serde_json::Value| json!({"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}});
    let crd: CustomResourceDefinition = from_json(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.test.olmpack.dev"},
        "spec": {
            "group": "test.olmpack.dev",
            "names": {"kind": "Gadget", "plural": "gadgets", "singular": "gadget", "listKind": "GadgetList"},
            "scope": "Namespaced",
            "versions": [
                {"name": "v1", "served": true, "storage": true,
                 "schema": schema(json!({"type": "object", "properties": {"colour": {"type": "string"}}}))},
                {"name": "v2", "served": true, "storage": false,
                 "schema": schema(json!({"type": "object", "properties": {"paint": {"type": "object", "properties": {"colour": {"type": "string"}}}}}))},
            ],
            "conversion": {
                "strategy": "Webhook",
                "webhook": {
                    "conversionReviewVersions": ["v1"],
                    "clientConfig": {
                        "url": format!("{}/convert", webhook.url()),
                        "caBundle": base64_encode(env.ca().cert_pem()),
                    },
                },
            },
        },
    }));
    env.install_crd(&crd).await.expect("CRD is established");

    let resource = |version: &str| {
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("test.olmpack.dev", version, "Gadget"),
            "gadgets",
        )
    };
    let v1: Api<DynamicObject> = Api::namespaced_with(env.client(), "default", &resource("v1"));
    let v2: Api<DynamicObject> = Api::namespaced_with(env.client(), "default", &resource("v2"));

    // Create at v2 (stored as v1: the apiserver converts on write), read back at both.
    let object: DynamicObject = from_json(json!({
        "apiVersion": "test.olmpack.dev/v2",
        "kind": "Gadget",
        "metadata": {"name": "blue-one"},
        "spec": {"paint": {"colour": "blue"}},
    }));
    // A new CRD's REST endpoint can lag its Established condition by a moment.
    let started = Instant::now();
    let created = loop {
        match v2.create(&PostParams::default(), &object).await {
            Ok(created) => break created,
            Err(err) if started.elapsed() < Duration::from_secs(30) => {
                tracing::debug!(%err, "Gadget endpoint not served yet");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(err) => panic!("creating the Gadget failed: {err}"),
        }
    };
    assert_eq!(created.data["spec"]["paint"]["colour"], "blue");

    let at_v1 = v1.get("blue-one").await.expect("readable at v1");
    assert_eq!(at_v1.data["spec"]["colour"], "blue");
    assert!(at_v1.data["spec"].get("paint").is_none());
    let at_v2 = v2.get("blue-one").await.expect("readable at v2");
    assert_eq!(at_v2.data["spec"]["paint"]["colour"], "blue");
    assert!(
        calls.load(Ordering::SeqCst) >= 2,
        "the webhook converted on write and on read"
    );
}

fn base64_encode(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}

#[tokio::test]
async fn envtest_rbac_enforced() {
    let env = TestEnv::start().await.expect("test environment starts");
    let admin = env.client();
    let namespaces: Api<Namespace> = Api::all(admin.clone());
    namespaces
        .create(
            &PostParams::default(),
            &from_json(json!({"metadata": {"name": "team"}})),
        )
        .await
        .unwrap();
    let accounts: Api<ServiceAccount> = Api::namespaced(admin.clone(), "team");
    accounts
        .create(
            &PostParams::default(),
            &from_json(json!({"metadata": {"name": "reader"}})),
        )
        .await
        .unwrap();
    Api::<Role>::namespaced(admin.clone(), "team")
        .create(
            &PostParams::default(),
            &from_json(json!({
                "metadata": {"name": "configmap-reader"},
                "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}],
            })),
        )
        .await
        .unwrap();

    let as_reader = env.client_as_service_account("team", "reader").unwrap();
    let configmaps: Api<ConfigMap> = Api::namespaced(as_reader, "team");
    match configmaps.list(&ListParams::default()).await {
        Err(kube::Error::Api(status)) => assert_eq!(status.code, 403, "{status:?}"),
        other => panic!("expected 403 before the RoleBinding, got {other:?}"),
    }

    Api::<RoleBinding>::namespaced(admin.clone(), "team")
        .create(
            &PostParams::default(),
            &from_json(json!({
                "metadata": {"name": "reader-reads"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "configmap-reader"},
                "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": "team"}],
            })),
        )
        .await
        .unwrap();
    eventually("the RoleBinding to take effect", || {
        let configmaps = configmaps.clone();
        async move { configmaps.list(&ListParams::default()).await.is_ok() }
    })
    .await;

    // The binding grants reading only: writing stays forbidden.
    let write = configmaps
        .create(
            &PostParams::default(),
            &from_json(json!({"metadata": {"name": "x"}})),
        )
        .await;
    assert!(
        matches!(write, Err(kube::Error::Api(ref s)) if s.code == 403),
        "{write:?}"
    );
}

#[tokio::test]
async fn envtest_controller_manager_collects_garbage() {
    let env = TestEnv::start_with(TestEnvOptions {
        controller_manager: true,
        ..Default::default()
    })
    .await
    .expect("test environment with controller manager starts");
    let configmaps: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let owner = configmaps
        .create(
            &PostParams::default(),
            &from_json(json!({"metadata": {"name": "owner"}})),
        )
        .await
        .unwrap();
    configmaps
        .create(
            &PostParams::default(),
            &from_json(json!({"metadata": {"name": "child", "ownerReferences": [{
                "apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
                "uid": owner.metadata.uid.unwrap(),
            }]}})),
        )
        .await
        .unwrap();
    configmaps
        .delete("owner", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the garbage collector to delete the child", || {
        let configmaps = configmaps.clone();
        async move { matches!(configmaps.get_opt("child").await, Ok(None)) }
    })
    .await;
}

#[tokio::test]
async fn envtest_parallel() {
    let (a, b) = tokio::join!(TestEnv::start(), TestEnv::start());
    let (a, b) = (
        a.expect("first environment"),
        b.expect("second environment"),
    );
    assert_ne!(a.server_url(), b.server_url());

    // Each is its own cluster: a namespace made in one does not exist in the other.
    let ns: Namespace = from_json(json!({"metadata": {"name": "only-in-a"}}));
    Api::<Namespace>::all(a.client())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    assert!(
        Api::<Namespace>::all(b.client())
            .get_opt("only-in-a")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        Api::<Namespace>::all(a.client())
            .get_opt("only-in-a")
            .await
            .unwrap()
            .is_some()
    );

    let pids: Vec<u32> = a.pids().into_iter().chain(b.pids()).collect();
    let dirs = [a.dir().to_owned(), b.dir().to_owned()];
    assert!(pids.iter().all(|pid| pid_alive(*pid)));
    assert!(dirs.iter().all(|d| d.exists()));
    drop(a);
    drop(b);
    for pid in pids {
        assert!(!pid_alive(pid), "process {pid} outlived its environment");
    }
    for dir in dirs {
        assert!(!dir.exists(), "{} outlived its environment", dir.display());
    }
}

#[tokio::test]
async fn envtest_cleans_up_after_a_panicking_test() {
    let handle = tokio::spawn(async {
        let env = TestEnv::start().await.expect("test environment starts");
        let record = (env.pids(), env.dir().to_owned());
        std::fs::write(
            std::env::temp_dir().join(format!("panic-record-{}", std::process::id())),
            serde_json::to_string(&(record.0.clone(), record.1.clone())).unwrap(),
        )
        .unwrap();
        panic!("a failing test");
        #[allow(unreachable_code)]
        drop(env);
    });
    assert!(handle.await.unwrap_err().is_panic());
    let record_path = std::env::temp_dir().join(format!("panic-record-{}", std::process::id()));
    let (pids, dir): (Vec<u32>, std::path::PathBuf) =
        serde_json::from_str(&std::fs::read_to_string(&record_path).unwrap()).unwrap();
    std::fs::remove_file(record_path).unwrap();
    assert_eq!(pids.len(), 2);
    for pid in pids {
        assert!(!pid_alive(pid), "process {pid} outlived the panicking test");
    }
    assert!(!dir.exists());
}

fn sha256(data: &[u8]) -> String {
    use sha2::Digest as _;
    let hex: String = sha2::Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("sha256:{hex}")
}

#[tokio::test]
async fn envtest_registry_roundtrip() {
    use oci_client::client::{ClientConfig, ClientProtocol};
    use oci_client::manifest::{IMAGE_LAYER_MEDIA_TYPE, OCI_IMAGE_MEDIA_TYPE, OciDescriptor};
    use oci_client::secrets::RegistryAuth as OciAuth;
    use oci_client::{Client, Reference, RegistryOperation};

    olmpack_envtest::install_crypto_provider();
    let anonymous = Registry::start(RegistryAuth::Anonymous).await.unwrap();
    let private = Registry::start(RegistryAuth::Htpasswd {
        username: "pusher".into(),
        password: "s3cret".into(),
    })
    .await
    .unwrap();

    let layer = b"hello from olmpack".to_vec();
    let config =
        br#"{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}"#
            .to_vec();
    let manifest = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": OCI_IMAGE_MEDIA_TYPE,
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": sha256(&config), "size": config.len()},
        "layers": [{"mediaType": IMAGE_LAYER_MEDIA_TYPE, "digest": sha256(&layer), "size": layer.len()}],
    }))
    .unwrap();

    for (registry, auth) in [
        (&anonymous, OciAuth::Anonymous),
        (&private, OciAuth::Basic("pusher".into(), "s3cret".into())),
    ] {
        // A fresh client per registry: credentials must not leak from one to the other.
        let client = Client::try_from(ClientConfig {
            protocol: ClientProtocol::Http,
            ..Default::default()
        })
        .unwrap();
        let reference: Reference = format!("{}/olmpack/smoke:v1", registry.host())
            .parse()
            .unwrap();
        client
            .auth(&reference, &auth, RegistryOperation::Push)
            .await
            .unwrap();
        client
            .push_blob(&reference, layer.clone(), &sha256(&layer))
            .await
            .unwrap();
        client
            .push_blob(&reference, config.clone(), &sha256(&config))
            .await
            .unwrap();
        client
            .push_manifest_raw(
                &reference,
                manifest.clone(),
                OCI_IMAGE_MEDIA_TYPE.parse().unwrap(),
            )
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "push to {} failed: {e}\n{}",
                    registry.host(),
                    registry.log_tail()
                )
            });

        let puller = Client::try_from(ClientConfig {
            protocol: ClientProtocol::Http,
            ..Default::default()
        })
        .unwrap();
        let (bytes, digest) = puller
            .pull_manifest_raw(&reference, &auth, &[OCI_IMAGE_MEDIA_TYPE])
            .await
            .unwrap();
        assert_eq!(bytes.as_ref(), manifest.as_slice());
        assert_eq!(
            digest,
            sha256(&manifest),
            "pulled digest equals pushed digest"
        );
        let mut pulled_layer = Vec::new();
        let descriptor = OciDescriptor {
            media_type: IMAGE_LAYER_MEDIA_TYPE.to_owned(),
            digest: sha256(&layer),
            size: layer.len() as i64,
            ..Default::default()
        };
        puller
            .pull_blob(&reference, &descriptor, &mut pulled_layer)
            .await
            .unwrap();
        assert_eq!(pulled_layer, layer);
    }

    // Without credentials the private registry refuses.
    let client = Client::try_from(ClientConfig {
        protocol: ClientProtocol::Http,
        ..Default::default()
    })
    .unwrap();
    let reference: Reference = format!("{}/olmpack/smoke:v1", private.host())
        .parse()
        .unwrap();
    let denied = client
        .pull_manifest_raw(&reference, &OciAuth::Anonymous, &[OCI_IMAGE_MEDIA_TYPE])
        .await;
    assert!(
        denied.is_err(),
        "anonymous pull from the htpasswd registry must fail"
    );
    let wrong = client
        .pull_manifest_raw(
            &reference,
            &OciAuth::Basic("pusher".into(), "wrong".into()),
            &[OCI_IMAGE_MEDIA_TYPE],
        )
        .await;
    assert!(wrong.is_err(), "a wrong password must fail");
}

/// The InstallPlan retry window given reaches OLM's catalog-operator (its own flag), so a
/// shorter one shortens the cases that fail that way; the corpus test shows OLM's verdicts
/// are the same with it.
#[tokio::test]
async fn envtest_olm_catalog_operator_gets_the_install_plan_retry_window() {
    let env =
        olmpack_envtest::olm::v0::OlmEnv::start_with(olmpack_envtest::olm::v0::OlmEnvOptions {
            install_plan_retry: Duration::from_secs(7),
            ..Default::default()
        })
        .await
        .expect("OLM starts");
    let commands: Vec<String> = env
        .pids()
        .iter()
        .filter_map(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).ok())
        .map(|raw| String::from_utf8_lossy(&raw).replace('\0', " "))
        .filter(|command| command.contains("catalog-operator "))
        .collect();
    assert_eq!(commands.len(), 1, "one catalog-operator: {commands:?}");
    assert!(
        commands[0].contains(" --install-plan-retry-timeout=7000ms"),
        "{}",
        commands[0]
    );
}

/// A CRD of group `fleet.test.olmpack.dev` for `kind`, with `versions` as (name, served,
/// storage) and any fields allowed.
fn fleet_crd(
    kind: &str,
    plural: &str,
    versions: &[(&str, bool, bool)],
) -> CustomResourceDefinition {
    let versions: Vec<serde_json::Value> = versions
        .iter()
        .map(|(name, served, storage)| {
            json!({"name": name, "served": served, "storage": storage,
                   "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}})
        })
        .collect();
    from_json(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.fleet.test.olmpack.dev")},
        "spec": {
            "group": "fleet.test.olmpack.dev",
            "names": {"kind": kind, "plural": plural},
            "scope": "Namespaced",
            "versions": versions,
        },
    }))
}

/// Examples are read back at the apiVersion they were written at, not at the group's
/// preferred version: once one kind of a group gains v2 (FirstMate), the group prefers v2,
/// where another kind (Admiral) is not served at all — though it still is at v1. A kind no
/// longer served at its example's version is read at a version that serves it.
#[tokio::test]
async fn envtest_examples_are_read_back_at_their_own_version() {
    use olmpack_envtest::olm::read_back_resource;
    let env = TestEnv::start().await.expect("test environment starts");
    let crds = [
        fleet_crd("Admiral", "admirals", &[("v1", true, true)]),
        fleet_crd(
            "FirstMate",
            "firstmates",
            &[("v1", true, false), ("v2", true, true)],
        ),
        fleet_crd(
            "Captain",
            "captains",
            &[("v1alpha1", true, false), ("v1", true, true)],
        ),
    ];
    for crd in &crds {
        env.install_crd(crd).await.expect("CRD is established");
    }
    let client = env.client();
    let written = [
        ("fleet.test.olmpack.dev/v1", "Admiral", "nelson"),
        ("fleet.test.olmpack.dev/v1", "FirstMate", "bush"),
        ("fleet.test.olmpack.dev/v1alpha1", "Captain", "hornblower"),
    ];
    for (api_version, kind, name) in written {
        let (resource, _) = read_back_resource(&client, api_version, kind)
            .await
            .expect("served where it is written");
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &resource);
        let object: DynamicObject = from_json(json!({
            "apiVersion": api_version, "kind": kind, "metadata": {"name": name}, "spec": {},
        }));
        let started = Instant::now();
        while let Err(err) = api.create(&PostParams::default(), &object).await {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "create {kind}: {err}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    // Captain's v1alpha1 stops being served (as an upgrade may do).
    let captains = fleet_crd(
        "Captain",
        "captains",
        &[("v1alpha1", false, false), ("v1", true, true)],
    );
    env.install_crd(&captains).await.expect("CRD is updated");

    // Right after the update, discovery may still list Captain's v1alpha1 (its endpoint
    // gone): reading the whole group fails for a moment.
    let started = Instant::now();
    let group = loop {
        match kube::discovery::group(&client, "fleet.test.olmpack.dev").await {
            Err(err) if started.elapsed() < Duration::from_secs(30) => {
                tracing::debug!(%err, "discovery not settled yet");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            other => break other.expect("the group is served"),
        }
    };
    assert_eq!(group.preferred_version(), Some("v2"), "the trap is set");
    assert!(
        group.recommended_kind("Admiral").is_none(),
        "the trap is set"
    );

    let expected = [
        (
            "fleet.test.olmpack.dev/v1",
            "Admiral",
            "nelson",
            "fleet.test.olmpack.dev/v1",
        ),
        (
            "fleet.test.olmpack.dev/v1",
            "FirstMate",
            "bush",
            "fleet.test.olmpack.dev/v1",
        ),
        (
            "fleet.test.olmpack.dev/v1alpha1",
            "Captain",
            "hornblower",
            "fleet.test.olmpack.dev/v1",
        ),
    ];
    for (written_at, kind, name, read_at) in expected {
        let started = Instant::now();
        let (resource, scope) = loop {
            let found = read_back_resource(&client, written_at, kind).await;
            match found {
                // Discovery may still list Captain's v1alpha1 for a moment after the update.
                Ok((r, _))
                    if r.api_version != read_at && started.elapsed() < Duration::from_secs(30) =>
                {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                other => break other.expect("a served version of the kind"),
            }
        };
        assert_eq!(
            resource.api_version, read_at,
            "{kind} written at {written_at}"
        );
        assert_eq!(scope, kube::discovery::Scope::Namespaced);
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &resource);
        let read = api.get(name).await.expect("readable where it is looked up");
        assert_eq!(read.types.map(|t| t.api_version).as_deref(), Some(read_at));
    }
    let unknown = read_back_resource(&client, "fleet.test.olmpack.dev/v1", "Boatswain")
        .await
        .expect_err("no version serves Boatswain");
    assert_eq!(
        unknown,
        "Boatswain is no longer served at fleet.test.olmpack.dev/v1 nor at any other version of group \"fleet.test.olmpack.dev\""
    );
}

/// A TCP proxy on 127.0.0.1 to `target` that relays everything, except that the first `cut`
/// times a client sends on a connection idle for 300 ms (a new request on a kept-alive
/// connection), it closes that connection instead: the client has written its request and
/// the connection ends with no answer, as when an apiserver under load drops it.
async fn cutting_proxy(target: String, cut: usize) -> std::net::SocketAddr {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let cuts = Arc::new(AtomicUsize::new(cut));
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let target = target.clone();
            let cuts = cuts.clone();
            tokio::spawn(async move {
                let server = tokio::net::TcpStream::connect(&target).await.unwrap();
                let (mut client_in, mut client_out) = client.into_split();
                let (mut server_in, mut server_out) = server.into_split();
                let last = Arc::new(std::sync::Mutex::new(None::<Instant>));
                let seen = last.clone();
                let answers = async move {
                    let mut buf = vec![0; 64 * 1024];
                    while let Ok(n @ 1..) = server_in.read(&mut buf).await {
                        *seen.lock().unwrap() = Some(Instant::now());
                        if client_out.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                };
                let requests = async move {
                    let mut buf = vec![0; 64 * 1024];
                    while let Ok(n @ 1..) = client_in.read(&mut buf).await {
                        let idle = last
                            .lock()
                            .unwrap()
                            .is_some_and(|t| t.elapsed() > Duration::from_millis(300));
                        if idle
                            && cuts
                                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |c| {
                                    c.checked_sub(1)
                                })
                                .is_ok()
                        {
                            return;
                        }
                        if server_out.write_all(&buf[..n]).await.is_err() {
                            return;
                        }
                    }
                };
                // Either side ending ends the connection (both halves dropped).
                tokio::select! { () = answers => {}, () = requests => {} }
            });
        }
    });
    addr
}

/// A read the apiserver's connection drops before answering ("connection closed before
/// message completed" in the HTTP library's words) is retried and named in olmpack's words;
/// a refusal is not retried.
#[tokio::test]
async fn envtest_transient_transport_errors_are_retried_and_named() {
    use olmpack_envtest::olm::v0::transient::{Retried, retrying, transient};
    let env = TestEnv::start().await.expect("test environment starts");
    let target = env.server_url().trim_start_matches("https://").to_owned();
    let proxy = cutting_proxy(target, 2).await;
    let mut config = env.config().clone();
    config.cluster_url = format!("https://{proxy}").parse().unwrap();
    let client = kube::Client::try_from(config).unwrap();
    let namespaces: Api<Namespace> = Api::all(client);
    let idle = || tokio::time::sleep(Duration::from_millis(600));

    namespaces
        .get("default")
        .await
        .expect("the first read goes through");
    idle().await;
    let cut = namespaces
        .get("default")
        .await
        .expect_err("the proxy cuts the next one");
    let ours = transient(&cut);
    assert!(ours.is_some(), "a cut connection is transient: {cut:?}");

    namespaces
        .get("default")
        .await
        .expect("a new connection goes through");
    idle().await;
    let retried = Retried::default();
    let read = retrying(&retried, "read Namespace default", || {
        namespaces.get("default")
    })
    .await;
    assert!(read.is_ok(), "{read:?}");
    assert_eq!(
        retried.take(),
        [format!(
            "read Namespace default: {} (retried 1×)",
            ours.unwrap()
        )]
    );

    let refused = retrying(&retried, "read Namespace nowhere", || {
        namespaces.get("nowhere")
    })
    .await;
    assert!(
        matches!(refused, Err(olmpack_envtest::olm::OlmError::Api { .. })),
        "{refused:?}"
    );
    assert!(retried.take().is_empty(), "a refusal is not retried");
}

/// Before an InstallPlan is approved, OLM must manage the operator namespace: olmpack waits
/// until the OperatorGroup's status lists the namespaces it targets, as OLM's olm-operator
/// writes them — all namespaces (`""`) at first, the one target after a reset to
/// SingleNamespace.
#[tokio::test]
async fn envtest_olm_manages_the_namespace_before_a_plan_is_approved() {
    use olmpack_model::plan::InstallModeType;
    let mut env = olmpack_envtest::olm::v0::OlmEnv::start()
        .await
        .expect("OLM starts");
    let deadline = || Instant::now() + Duration::from_secs(60);
    let managed = env
        .wait_until_managed(deadline())
        .await
        .expect("OLM takes it up");
    assert_eq!(managed, [""]);
    env.reset(InstallModeType::SingleNamespace)
        .await
        .expect("the environment resets");
    let managed = env
        .wait_until_managed(deadline())
        .await
        .expect("OLM takes it up");
    assert_eq!(managed, [env.namespaces().targets[0].as_str()]);
    assert_eq!(managed, ["olmpack-target-a-2"]);
}
