//! Shared by the bundle tests: comparing olmpack's rendering of a bundle with the real opm's.

use std::path::Path;
use std::process::Command;

use olmpack::bundle::load;
use olmpack::catalog::render::{RenderOptions, render_loaded};
use serde_json::Value;
use upgrade_tests::Tool;

/// Runs `opm render <dir>` and asserts that olmpack renders the same `olm.bundle`: name,
/// every property in order, and related images. Returns opm's rendering.
pub fn assert_renders_like_opm(dir: &Path) -> Value {
    let opm = Tool::Opm
        .path()
        .expect("opm is installed by cargo xtask setup");
    let rendered = Command::new(&opm)
        .args(["render", "-o", "json"])
        .arg(dir)
        .output()
        .unwrap();
    assert!(
        rendered.status.success(),
        "opm render {}: {}",
        dir.display(),
        String::from_utf8_lossy(&rendered.stderr)
    );
    let theirs: Value = serde_json::from_slice(&rendered.stdout).unwrap();
    let ours = serde_json::to_value(
        render_loaded(&load::load_dir(dir).unwrap(), &RenderOptions::default()).unwrap(),
    )
    .unwrap();
    assert_eq!(ours["name"], theirs["name"], "{}", dir.display());
    assert_eq!(
        ours["properties"],
        theirs["properties"],
        "{}",
        dir.display()
    );
    assert_eq!(
        ours["relatedImages"],
        theirs["relatedImages"],
        "{}",
        dir.display()
    );
    theirs
}

/// `POST …?dryRun=All` of one object as written (raw JSON, so what a typed client could not
/// even encode still reaches the server); `Err` holds the server's refusal.
pub async fn apiserver_dry_run(client: &kube::Client, object: &Value) -> Result<(), String> {
    let api_version = object["apiVersion"].as_str().unwrap_or("");
    let kind = object["kind"].as_str().unwrap_or("");
    let plural = format!("{}s", kind.to_lowercase());
    let base = if api_version.contains('/') {
        format!("/apis/{api_version}")
    } else {
        format!("/api/{api_version}")
    };
    let cluster_scoped = matches!(
        kind,
        "CustomResourceDefinition"
            | "ClusterRole"
            | "ClusterRoleBinding"
            | "PriorityClass"
            | "PriorityLevelConfiguration"
    );
    let path = if cluster_scoped {
        format!("{base}/{plural}?dryRun=All")
    } else {
        format!("{base}/namespaces/default/{plural}?dryRun=All")
    };
    let request = http::Request::post(path)
        .header("content-type", "application/json")
        .body(serde_json::to_vec(object).unwrap())
        .unwrap();
    client
        .request_text(request)
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
}
