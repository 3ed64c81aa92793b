//! Pushing through a fault-injecting proxy: connection resets, HTTP 500s, stalled responses.
//! The push completes or fails clearly; the registry never holds a manifest whose blobs are
//! missing; running the push again finishes it.

mod image_support;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use image_support::proxy::{Fault, FaultProxy, Rule};
use image_support::{Inspector, access, fixture, options};
use oci_client::secrets::RegistryAuth as OciAuth;
use olmpack::image::{build::build_bundle_image, build::build_catalog_image};
use olmpack_oci::image::progress::Progress;
use olmpack_oci::image::{auth::Credentials, push::push_layout};
use olmpack_testkit::{registry::Registry, registry::RegistryAuth};

fn build(dir: &Path) {
    build_bundle_image(&fixture("bundle"), &dir.join("bundle"), &options("v1")).unwrap();
}

fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(" | ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[tokio::test]
async fn push_completes_through_resets_500s_and_a_stalled_response() {
    olmpack::install_crypto_provider();
    let registry = Registry::start(RegistryAuth::Anonymous).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    build_catalog_image(
        &fixture("catalog"),
        &dir.path().join("catalog"),
        &options("v1"),
        None,
        &Progress::Quiet,
    )
    .await
    .unwrap();
    build(dir.path());
    // Every kind of fault, repeatedly, on every kind of request (blob checks, uploads,
    // manifest and tag pushes); each fault is followed by two good answers. oci-client's
    // anonymous token probes (`GET /v2/`) are let through: their failures are ignored anyway.
    let requests = Arc::new(AtomicUsize::new(0));
    let rule: Arc<Rule> = Arc::new(move |_, method, path| {
        let cycle = [
            Fault::Reset,
            Fault::Pass,
            Fault::Pass,
            Fault::Error500,
            Fault::Pass,
            Fault::Pass,
            Fault::ResetAfterForward,
            Fault::Pass,
            Fault::Pass,
            Fault::Stall,
            Fault::Pass,
            Fault::Pass,
        ];
        if method == "GET" && path == "/v2/" {
            return Fault::Pass;
        }
        cycle[requests.fetch_add(1, Ordering::SeqCst) % cycle.len()]
    });
    let proxy = FaultProxy::start(registry.host(), rule).await;
    let mut access = access(Credentials::Anonymous);
    access.max_concurrent = 1;
    let inspector = Inspector::new(OciAuth::Anonymous);
    for layout in ["bundle", "catalog"] {
        let target = format!("{}/faults/{layout}:v1", proxy.host());
        let report = push_layout(
            &format!("{}:v1", dir.path().join(layout).display()),
            &target,
            &access,
            &Progress::Quiet,
        )
        .await
        .unwrap_or_else(|e| panic!("{}\n{:?}", error_chain(&e), proxy.log.lock().unwrap()));
        let direct = format!("{}/faults/{layout}:v1", registry.host());
        inspector
            .assert_same_as_layout(&direct, &dir.path().join(layout), "v1")
            .await;
        assert_eq!(
            report.pinned,
            format!("{}/faults/{layout}@{}", proxy.host(), report.digest)
        );
    }
    let faults = proxy.faults();
    for kind in [
        Fault::Reset,
        Fault::Error500,
        Fault::ResetAfterForward,
        Fault::Stall,
    ] {
        assert!(faults.contains(&kind), "{kind:?} was injected: {faults:?}");
    }
}

#[tokio::test]
async fn a_push_that_gives_up_leaves_no_dangling_manifest_and_a_rerun_finishes_it() {
    olmpack::install_crypto_provider();
    let registry = Registry::start(RegistryAuth::Anonymous).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let layout = dir.path().join("bundle");
    let source = format!("{}:v1", layout.display());
    let inspector = Inspector::new(OciAuth::Anonymous);
    let repo = format!("{}/faults/bundle", registry.host());
    let mut quick = access(Credentials::Anonymous);
    quick.retry.attempts = 2;

    // 1. The second blob upload always fails: the push stops before any manifest.
    let uploads = Arc::new(AtomicUsize::new(0));
    let rule: Arc<Rule> = {
        let uploads = uploads.clone();
        Arc::new(move |_, method, path| {
            if method == "POST" && path.contains("/blobs/uploads/") {
                let n = uploads.fetch_add(1, Ordering::SeqCst);
                if n >= 1 {
                    return Fault::Error500;
                }
            }
            Fault::Pass
        })
    };
    let mut narrow = quick.clone();
    narrow.max_concurrent = 1;
    let proxy = FaultProxy::start(registry.host(), rule).await;
    let err = push_layout(
        &source,
        &format!("{}/faults/bundle:v1", proxy.host()),
        &narrow,
        &Progress::Quiet,
    )
    .await
    .unwrap_err();
    let chain = error_chain(&err);
    assert!(
        chain.starts_with("uploading blob sha256:")
            && chain.contains(" failed after 2 attempt(s): "),
        "{chain}"
    );
    assert!(chain.contains("500"), "{chain}");
    assert_eq!(
        inspector.assert_no_dangling_manifest(&repo, &layout).await,
        0
    );
    assert!(
        inspector.manifest(&format!("{repo}:v1")).await.is_none(),
        "no tag yet"
    );
    drop(proxy);

    // 2. Blobs go through, every manifest push fails: blobs stay, no manifest, no tag.
    let rule: Arc<Rule> = Arc::new(|_, method, path| {
        if method == "PUT" && path.contains("/manifests/") {
            Fault::Reset
        } else {
            Fault::Pass
        }
    });
    let proxy = FaultProxy::start(registry.host(), rule).await;
    let err = push_layout(
        &source,
        &format!("{}/faults/bundle:v1", proxy.host()),
        &quick,
        &Progress::Quiet,
    )
    .await
    .unwrap_err();
    let chain = error_chain(&err);
    assert!(chain.starts_with("pushing manifest to "), "{chain}");
    assert!(chain.contains("after 2 attempt(s)"), "{chain}");
    assert_eq!(
        inspector.assert_no_dangling_manifest(&repo, &layout).await,
        0
    );
    assert!(inspector.manifest(&format!("{repo}:v1")).await.is_none());
    drop(proxy);

    // 3. Only the tag update fails (the manifest went in by digest): the tag is not there,
    //    the manifest is complete.
    let rule: Arc<Rule> = Arc::new(|_, method, path| {
        if method == "PUT" && path.ends_with("/manifests/v1") {
            Fault::Error500
        } else {
            Fault::Pass
        }
    });
    let proxy = FaultProxy::start(registry.host(), rule).await;
    let err = push_layout(
        &source,
        &format!("{}/faults/bundle:v1", proxy.host()),
        &quick,
        &Progress::Quiet,
    )
    .await
    .unwrap_err();
    assert!(
        error_chain(&err).contains("/manifests/v1"),
        "{}",
        error_chain(&err)
    );
    assert_eq!(
        inspector.assert_no_dangling_manifest(&repo, &layout).await,
        1
    );
    assert!(inspector.manifest(&format!("{repo}:v1")).await.is_none());
    drop(proxy);

    // 4. Running the push again finishes it, sending no blob twice.
    let report = push_layout(&source, &format!("{repo}:v1"), &quick, &Progress::Quiet)
        .await
        .unwrap();
    assert_eq!(report.blobs_pushed, 0, "every blob was already there");
    inspector
        .assert_same_as_layout(&format!("{repo}:v1"), &layout, "v1")
        .await;
    assert_eq!(
        inspector.assert_no_dangling_manifest(&repo, &layout).await,
        1
    );
}

#[tokio::test]
async fn a_stalled_registry_fails_with_a_timeout_not_a_hang() {
    olmpack::install_crypto_provider();
    let registry = Registry::start(RegistryAuth::Anonymous).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    build(dir.path());
    let rule: Arc<Rule> = Arc::new(|_, method, _| {
        if method == "HEAD" {
            Fault::Stall
        } else {
            Fault::Pass
        }
    });
    let proxy = FaultProxy::start(registry.host(), rule).await;
    let mut quick = access(Credentials::Anonymous);
    quick.retry.attempts = 2;
    quick.read_timeout = Duration::from_millis(500);
    let started = std::time::Instant::now();
    let err = push_layout(
        &format!("{}:v1", dir.path().join("bundle").display()),
        &format!("{}/faults/stalled:v1", proxy.host()),
        &quick,
        &Progress::Quiet,
    )
    .await
    .unwrap_err();
    let chain = error_chain(&err);
    assert!(chain.starts_with("checking blob sha256:"), "{chain}");
    assert!(chain.contains("after 2 attempt(s)"), "{chain}");
    assert!(
        chain.to_lowercase().contains("timed out") || chain.contains("timeout"),
        "{chain}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "gave up instead of hanging"
    );
}
