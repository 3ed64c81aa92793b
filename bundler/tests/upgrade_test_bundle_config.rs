//! `olmpack upgrade test` applies the Secrets and ConfigMaps a bundle ships before the
//! operator's process starts, as OLM applies them with the bundle: the Deployment's
//! `secretKeyRef` variable, `envFrom` ConfigMap and ConfigMap volume resolve to each
//! release's own values, and the edge passes (without them the kubelet would refuse the
//! container: `crd_upgrade_live_a_missing_secret_is_the_kubelets_refusal`). Fixture:
//! tests/fixtures/upgrade_test_bundle_config.

use std::path::{Path, PathBuf};
use std::process::Command;

use olmpack_envtest::binaries::Tool;
use serde_json::Value;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/upgrade_test_bundle_config")
}

/// The operator's stand-in: it exits 1 unless its variables and the mounted ConfigMap hold
/// its release's values, else appends what it read to `seen` and runs.
fn command(seen: &Path) -> String {
    format!(
        r#"v="${{OLMPACK_RELEASE#config.v}}"
file="$(cat /tmp/olmpack-config-settings/MODE 2>/dev/null)"
if [ "$PASSWORD" != "s3cret-$v" ] || [ "$MODE" != "fast-$v" ] || [ "$file" != "fast-$v" ]; then
  echo "not configured: PASSWORD=$PASSWORD MODE=$MODE file=$file"; exit 1
fi
echo "$OLMPACK_RELEASE PASSWORD=$PASSWORD MODE=$MODE file=$file" >> '{}'
exec sleep 600"#,
        seen.display()
    )
}

#[test]
fn upgrade_test_the_bundles_secrets_and_config_maps_reach_the_operators_container() {
    let test = "upgrade_test_the_bundles_secrets_and_config_maps_reach_the_operators_container";
    if !olmpack_testkit::tools::require(&[Tool::Etcd, Tool::KubeApiserver], "upgrade test") {
        return;
    }
    if !olmpack_envtest::container::mount_namespaces_allowed() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{test}: mount namespaces need root under CI"
        );
        eprintln!("\n*** {test}: NOT RUN: mount namespaces need root ***\n");
        return;
    }
    let catalog = tempfile::tempdir().unwrap();
    std::fs::copy(
        fixture().join("package.json"),
        catalog.path().join("package.json"),
    )
    .unwrap();
    let seen = tempfile::NamedTempFile::new().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_olmpack"))
        .args(["upgrade", "test", "--catalog"])
        .arg(catalog.path())
        .arg("--bundles")
        .arg(fixture().join("bundles"))
        .args(["--output", "json", "--webhook-command"])
        .arg(command(seen.path()))
        .output()
        .unwrap();
    let shown = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let start = stdout.find('[').unwrap_or_default();
    let reports: Vec<Value> = serde_json::Deserializer::from_str(&stdout[start..])
        .into_iter()
        .next()
        .and_then(Result::ok)
        .unwrap_or_else(|| panic!("no JSON report:\n{shown}"));
    assert_eq!(reports.len(), 1, "{shown}");
    assert_eq!(reports[0]["verdict"], "passed", "{shown}");
    assert_eq!(out.status.code(), Some(0), "{shown}");
    // Each release's process read its own release's values (a release may be started more
    // than once during the edge).
    let text = std::fs::read_to_string(seen.path()).unwrap();
    let lines: std::collections::BTreeSet<&str> = text.lines().collect();
    assert_eq!(
        lines.into_iter().collect::<Vec<_>>(),
        [
            "config.v1.0.0 PASSWORD=s3cret-1.0.0 MODE=fast-1.0.0 file=fast-1.0.0",
            "config.v2.0.0 PASSWORD=s3cret-2.0.0 MODE=fast-2.0.0 file=fast-2.0.0",
        ],
        "{shown}"
    );
}
