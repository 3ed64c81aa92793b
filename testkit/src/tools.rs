//! Whether the pinned tools a test needs are installed: "NOT RUN" said loudly when one is
//! not, a failure under `CI=true` (CI's setup installs every tool).

use olmpack_envtest::binaries::{KubeMinor, Tool};

/// The tools OLM v1's environment runs: catalogd, operator-controller and the registry it
/// pulls from.
pub const OLM_V1: [Tool; 3] = [Tool::Catalogd, Tool::OperatorController, Tool::Olareg];

/// Whether every tool of `tools` is installed, for `what` (e.g. "OLM v1"); prints "NOT RUN"
/// naming the missing ones and returns `false` when one is not, and panics instead under
/// `CI=true`.
pub fn require(tools: &[Tool], what: &str) -> bool {
    let missing: Vec<String> = tools
        .iter()
        .filter_map(|tool| tool.path().err().map(|e| e.to_string()))
        .collect();
    if missing.is_empty() {
        return true;
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{what} is not installed in CI: {missing:?}"
    );
    eprintln!("\n*** NOT RUN: {what} is not installed: {missing:?} ***\n");
    false
}

/// Whether the control plane of Kubernetes `minor` is installed (etcd, and that minor's
/// kube-apiserver and kube-controller-manager), for `what`; as [`require`]: "NOT RUN" said
/// loudly when not, a panic under `CI=true`.
pub fn require_kubernetes(minor: KubeMinor, what: &str) -> bool {
    let missing: Vec<String> = [Tool::KubeApiserver, Tool::KubeControllerManager]
        .into_iter()
        .filter_map(|tool| minor.tool_path(tool).err().map(|e| e.to_string()))
        .chain(Tool::Etcd.path().err().map(|e| e.to_string()))
        .collect();
    if missing.is_empty() {
        return true;
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{what}: Kubernetes {minor} is not installed in CI: {missing:?}"
    );
    eprintln!("\n*** NOT RUN: {what}: Kubernetes {minor} is not installed: {missing:?} ***\n");
    false
}
