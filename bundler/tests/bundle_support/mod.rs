//! Shared by the bundle tests: comparing olmpack's rendering of a bundle with the real opm's.

use std::path::Path;
use std::process::Command;

use olmpack::bundle::load;
use olmpack::catalog::render::{RenderOptions, render_loaded};
use olmpack_envtest::binaries::Tool;
use serde_json::Value;

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
