//! Whether the pinned tools a test needs are installed: "NOT RUN" said loudly when one is
//! not, a failure under `CI=true` (CI's setup installs every tool).

use olmpack_envtest::binaries::Tool;

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
