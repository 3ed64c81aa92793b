//! `olmpack tools list` outside olmpack's checkout: with an empty HOME and no tool variables
//! nothing is found and it says where to get etcd and kube-apiserver; a kubebuilder
//! project's envtest binaries (`$KUBEBUILDER_ASSETS`) and the per-user tool cache at the
//! pinned version are found, in that order, and `upgrade test` would use them.

use std::path::Path;
use std::process::Command;

fn tools_list(home: &Path, extra: &[(&str, &Path)]) -> (i32, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_olmpack"));
    cmd.args(["tools", "list"])
        .current_dir(home)
        .env_clear()
        .env("PATH", "/nonexistent")
        .env("HOME", home);
    for (key, value) in extra {
        cmd.env(key, value);
    }
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

fn executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn line<'a>(text: &'a str, tool: &str) -> &'a str {
    text.lines()
        .find(|l| l.split_whitespace().next() == Some(tool))
        .unwrap_or_else(|| panic!("no line for {tool}:\n{text}"))
}

#[test]
fn tools_list_finds_envtest_assets_then_the_cache() {
    let home = tempfile::tempdir().unwrap();
    let (code, text) = tools_list(home.path(), &[]);
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains(" tool(s) not found: `olmpack tools install` installs them from "),
        "{text}"
    );
    assert!(
        line(&text, "etcd").contains("not found ($OLMPACK_ETCD to set it)"),
        "{text}"
    );
    // Another pinned Kubernetes minor: one line, with how to get it.
    assert!(
        line(&text, "kubernetes-1.27").contains("not installed: kube-apiserver v1.27."),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "tool cache: {}",
            home.path().join(".cache/olmpack/tools").display()
        )),
        "{text}"
    );

    let assets = home.path().join("envtest");
    executable(&assets.join("etcd"));
    executable(&assets.join("kube-apiserver"));
    let (code, text) = tools_list(home.path(), &[("KUBEBUILDER_ASSETS", &assets)]);
    assert_eq!(code, 0, "{text}");
    assert_eq!(
        line(&text, "etcd"),
        format!(
            "etcd                     {} (from $KUBEBUILDER_ASSETS)",
            assets.join("etcd").display()
        )
    );
    // envtest has no controller-manager: that one is still missing.
    assert!(
        line(&text, "kube-controller-manager").contains("not found"),
        "{text}"
    );

    // The per-user cache at the pinned version, as `cargo xtask setup` lays it out.
    let cache = home.path().join("tools");
    let kube = kubernetes_pin();
    let manager = cache.join(format!("kubernetes/{kube}/bin/kube-controller-manager"));
    executable(&manager);
    let (_, text) = tools_list(
        home.path(),
        &[
            ("KUBEBUILDER_ASSETS", &assets),
            ("OLMPACK_TOOLS_DIR", &cache),
        ],
    );
    assert!(
        line(&text, "kube-controller-manager")
            .ends_with(&format!("{} (from tool cache)", manager.display())),
        "{text}"
    );
}

/// `[kubernetes] version` of tools.toml.
fn kubernetes_pin() -> String {
    let text = include_str!("../../tools.toml");
    let section = text
        .split("[kubernetes]")
        .nth(1)
        .expect("a [kubernetes] table");
    section
        .lines()
        .find_map(|l| l.trim().strip_prefix("version = "))
        .map(|v| v.trim_matches('"').to_owned())
        .expect("[kubernetes] has a version")
}
