//! `.github/workflows/release.yml`, run on this machine: every `run:` step of its `publish` job
//! in order, as GitHub Actions runs it (`bash -e`, the `GITHUB_ENV`/`GITHUB_PATH`/
//! `GITHUB_OUTPUT`/`GITHUB_STEP_SUMMARY` files, `${{ … }}` expressions substituted, workflow,
//! job and step `env:` layered), with the test registry (`olmpack_testkit::registry::Registry`, with a
//! password, as GHCR takes the workflow token) standing in for GHCR.
//!
//! Steps that only `uses:` an action are emulated with the effect the following steps need,
//! and listed: `actions/checkout` (a copy of this working tree, at a stable path under
//! `~/.cache/olmpack/workflow-run/`), `dtolnay/rust-toolchain` (`rustup target add` of its `targets`),
//! `Swatinem/rust-cache` (a Cargo target directory kept across runs under
//! `~/.cache/olmpack/workflow-run/`), `actions/upload-artifact` (its `path`s must exist). Any other
//! action, or an expression this runner does not know, fails the test by name.
//!
//! Test values: `REGISTRY` is the test registry (host + owner) instead of `ghcr.io/<owner>`;
//! the release profile builds without optimisation (`CARGO_PROFILE_RELEASE_OPT_LEVEL=0`, the
//! same binaries' behaviour at a test's build time) and incrementally. The first run builds
//! olmpack and the operator for musl (minutes); later runs reuse the kept target directory
//! and recompile only what changed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use olmpack_testkit::{registry::Registry, registry::RegistryAuth};
use serde_json::Value;

const OWNER: &str = "olmpack";
const ACTOR: &str = "olmpack-release-bot";
const TOKEN: &str = "ghs_workflow-token-5e3c1a";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// Where the emulated runner keeps its checkout and Cargo target directory between runs:
/// outside the working tree (`$XDG_CACHE_HOME/olmpack/workflow-run`, default
/// `~/.cache/olmpack/workflow-run`), so that a fresh clone reuses the musl build of an
/// earlier run the way `Swatinem/rust-cache` restores it on GitHub.
fn runner_cache() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| workspace().join("target"));
    base.join("olmpack/workflow-run")
}

/// The value of one `${{ expression }}`, as Actions would give it on a tag push.
fn expression(expr: &str, env: &BTreeMap<String, String>) -> String {
    let expr = expr.trim();
    match expr {
        "github.repository_owner" => OWNER.to_owned(),
        "github.actor" => ACTOR.to_owned(),
        "secrets.GITHUB_TOKEN" | "github.token" => TOKEN.to_owned(),
        "runner.temp" => env["RUNNER_TEMP"].clone(),
        _ => match expr.strip_prefix("env.") {
            Some(name) => env
                .get(name)
                .cloned()
                .unwrap_or_else(|| panic!("${{{{ env.{name} }}}}: no such env variable")),
            None => panic!("the workflow uses ${{{{ {expr} }}}}, which this runner does not know"),
        },
    }
}

/// `text` with every `${{ … }}` replaced.
fn substitute(text: &str, env: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${{") {
        out.push_str(&rest[..start]);
        let end = rest[start..]
            .find("}}")
            .unwrap_or_else(|| panic!("unterminated expression in {text:?}"))
            + start;
        out.push_str(&expression(&rest[start + 3..end], env));
        rest = &rest[end + 2..];
    }
    out.push_str(rest);
    out
}

/// `env:` of a workflow, job or step, substituted, layered onto `into`.
fn layer_env(into: &mut BTreeMap<String, String>, env: &Value) {
    if let Some(map) = env.as_object() {
        for (key, value) in map {
            let text = match value {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            let value = substitute(&text, into);
            into.insert(key.clone(), value);
        }
    }
}

/// Copies the working tree's files (tracked and untracked, not ignored) to `to`, rewriting
/// only files whose bytes differ (so Cargo sees unchanged sources as unchanged), and removes
/// what an earlier run left that the tree no longer has (a real checkout is fresh: a file
/// moved to a directory module must not survive at its old path).
fn checkout(to: &Path) {
    let kept = copy_tree(to);
    prune(to, Path::new(""), &kept);
}

/// Removes files under `to` whose path relative to it is not in `kept`, and directories left
/// empty; true when `to.join(rel)` is empty afterwards.
fn prune(to: &Path, rel: &Path, kept: &std::collections::BTreeSet<PathBuf>) -> bool {
    let mut empty = true;
    for entry in std::fs::read_dir(to.join(rel)).unwrap() {
        let entry = entry.unwrap();
        let inner = rel.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            if prune(to, &inner, kept) {
                std::fs::remove_dir(to.join(&inner)).unwrap();
            } else {
                empty = false;
            }
        } else if kept.contains(&inner) {
            empty = false;
        } else {
            std::fs::remove_file(to.join(&inner)).unwrap();
        }
    }
    empty
}

/// The copying half of [`checkout`]; returns the relative paths copied.
fn copy_tree(to: &Path) -> std::collections::BTreeSet<PathBuf> {
    let mut kept = std::collections::BTreeSet::new();
    let listed = Command::new("git")
        .args(["ls-files", "-co", "--exclude-standard", "-z"])
        .current_dir(workspace())
        .output()
        .expect("git runs");
    assert!(listed.status.success());
    for file in listed.stdout.split(|b| *b == 0).filter(|f| !f.is_empty()) {
        let rel = PathBuf::from(String::from_utf8_lossy(file).into_owned());
        let from = workspace().join(&rel);
        let Ok(bytes) = std::fs::read(&from) else {
            continue; // listed but deleted in the working tree
        };
        let target = to.join(&rel);
        kept.insert(rel);
        if std::fs::read(&target).is_ok_and(|old| old == bytes) {
            continue;
        }
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::write(&target, bytes).unwrap();
        let mode = std::fs::metadata(&from).unwrap().permissions();
        std::fs::set_permissions(&target, mode).unwrap();
    }
    kept
}

/// What GitHub gives every step, plus this runner's test values.
struct Runner {
    checkout: PathBuf,
    temp: PathBuf,
    files: BTreeMap<&'static str, PathBuf>,
    path: Vec<PathBuf>,
    env: BTreeMap<String, String>,
    log: Vec<String>,
}

impl Runner {
    fn new(temp: &Path, registry: &str) -> Self {
        let root = runner_cache();
        let checkout = root.join("checkout");
        let mut files = BTreeMap::new();
        for (var, name) in [
            ("GITHUB_ENV", "env"),
            ("GITHUB_PATH", "path"),
            ("GITHUB_OUTPUT", "output"),
            ("GITHUB_STEP_SUMMARY", "step-summary.md"),
        ] {
            let file = temp.join(name);
            std::fs::write(&file, "").unwrap();
            files.insert(var, file);
        }
        let runner_temp = temp.join("runner-temp");
        std::fs::create_dir_all(&runner_temp).unwrap();
        let mut env = BTreeMap::new();
        for (key, value) in [
            ("CI", "true"),
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_REPOSITORY_OWNER", OWNER),
            ("GITHUB_ACTOR", ACTOR),
            ("GITHUB_REF_NAME", "v0.1.0"),
            ("GITHUB_REF", "refs/tags/v0.1.0"),
            ("RUNNER_OS", "Linux"),
            ("RUNNER_ARCH", "X64"),
        ] {
            env.insert(key.to_owned(), value.to_owned());
        }
        env.insert("GITHUB_WORKSPACE".into(), checkout.display().to_string());
        env.insert("RUNNER_TEMP".into(), runner_temp.display().to_string());
        for (var, file) in &files {
            env.insert((*var).to_owned(), file.display().to_string());
        }
        // Test values: the test registry instead of ghcr.io, an unoptimised release profile
        // built incrementally (the kept target directory then rebuilds only what changed).
        env.insert("TEST_REGISTRY".into(), registry.to_owned());
        for (key, value) in [
            ("CARGO_PROFILE_RELEASE_OPT_LEVEL", "0"),
            ("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "256"),
            ("CARGO_PROFILE_RELEASE_DEBUG", "false"),
            ("CARGO_PROFILE_RELEASE_INCREMENTAL", "true"),
        ] {
            env.insert(key.to_owned(), value.to_owned());
        }
        Self {
            checkout,
            temp: temp.to_owned(),
            files,
            path: Vec::new(),
            env,
            log: Vec::new(),
        }
    }

    /// Emulates an action's effect on the following steps; panics for an unknown action.
    fn uses(&mut self, action: &str, with: &Value, env: &BTreeMap<String, String>) -> bool {
        let name = action.split('@').next().unwrap_or(action);
        let input = |key: &str| {
            with.get(key)
                .and_then(Value::as_str)
                .map(|v| substitute(v, env))
        };
        match name {
            "actions/checkout" => {
                checkout(&self.checkout);
                self.log.push(format!(
                    "{action}: emulated (working tree copied to {})",
                    self.checkout.display()
                ));
            }
            "dtolnay/rust-toolchain" => {
                for target in input("targets").unwrap_or_default().split(',') {
                    let target = target.trim();
                    if !target.is_empty() {
                        let status = Command::new("rustup")
                            .args(["target", "add", target])
                            .status()
                            .expect("rustup runs");
                        assert!(status.success(), "rustup target add {target}");
                    }
                }
                self.log
                    .push(format!("{action}: emulated (rustup target add)"));
            }
            "Swatinem/rust-cache" => {
                let cache = runner_cache().join("cargo");
                self.env
                    .insert("CARGO_TARGET_DIR".into(), cache.display().to_string());
                self.log.push(format!(
                    "{action}: emulated (target directory kept in {})",
                    cache.display()
                ));
            }
            "actions/upload-artifact" => {
                let paths = input("path").unwrap_or_default();
                for path in paths.lines().map(str::trim).filter(|p| !p.is_empty()) {
                    let file = self.checkout.join(path);
                    if !file.exists() {
                        self.log.push(format!("{action}: {path} was not written"));
                        return false;
                    }
                    self.log.push(format!("{action}: emulated ({path} exists)"));
                }
            }
            other => panic!("the workflow uses {other}, which this runner does not emulate"),
        }
        true
    }

    /// Runs a `run:` script as Actions does (`bash -e {0}` without a `shell:`, `bash
    /// --noprofile --norc -eo pipefail {0}` with `shell: bash`), then applies GITHUB_ENV and
    /// GITHUB_PATH. Returns whether it succeeded, and its output.
    fn run(
        &mut self,
        name: &str,
        script: &str,
        shell: Option<&str>,
        env: &BTreeMap<String, String>,
    ) -> (bool, String) {
        let file = self.temp.join("step.sh");
        std::fs::write(&file, substitute(script, env)).unwrap();
        let mut path: Vec<PathBuf> = self.path.iter().rev().cloned().collect();
        path.extend(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ));
        let args: &[&str] = match shell {
            None => &["-e"],
            Some("bash") => &["--noprofile", "--norc", "-eo", "pipefail"],
            Some(other) => panic!("step {name}: shell {other:?} is not known to this runner"),
        };
        let mut command = Command::new("bash");
        command.args(args).arg(&file).current_dir(&self.checkout);
        // A runner's step has none of the settings of the test run around it; they would
        // also change the kept target directory's fingerprints and rebuild it all (`cargo
        // xtask test --timings` sets RUSTC_BOOTSTRAP, CI sets CARGO_INCREMENTAL, and cargo
        // gives this test CARGO_MANIFEST_DIR, which ring's build script watches: a clone in
        // another directory rebuilt ring and all that uses it).
        for var in ["RUSTC_BOOTSTRAP", "RUSTFLAGS"] {
            command.env_remove(var);
        }
        for (var, _) in std::env::vars_os() {
            let name = var.to_string_lossy();
            if name == "CARGO" || (name.starts_with("CARGO_") && name != "CARGO_HOME") {
                command.env_remove(&var);
            }
        }
        let output = command
            .envs(env)
            .env("PATH", std::env::join_paths(path).unwrap())
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        self.log.push(format!(
            "run: {name}: exit {}",
            output.status.code().unwrap_or(-1)
        ));
        self.apply_files();
        (output.status.success(), text)
    }

    fn apply_files(&mut self) {
        let env_file = std::fs::read_to_string(&self.files["GITHUB_ENV"]).unwrap();
        for line in env_file.lines() {
            if let Some((key, value)) = line.split_once('=') {
                self.env.insert(key.to_owned(), value.to_owned());
            }
        }
        std::fs::write(&self.files["GITHUB_ENV"], "").unwrap();
        let path_file = std::fs::read_to_string(&self.files["GITHUB_PATH"]).unwrap();
        self.path.extend(
            path_file
                .lines()
                .filter(|l| !l.is_empty())
                .map(PathBuf::from),
        );
        std::fs::write(&self.files["GITHUB_PATH"], "").unwrap();
    }
}

/// The digest `reference` resolves to in the test registry (as the workflow's actor).
fn resolve(reference: &str) -> String {
    let resolved = Command::new(env!("CARGO_BIN_EXE_olmpack"))
        .args(["image", "resolve", reference])
        .env("OLMPACK_REGISTRY_USERNAME", ACTOR)
        .env("OLMPACK_REGISTRY_PASSWORD", TOKEN)
        .output()
        .unwrap();
    assert!(
        resolved.status.success(),
        "{reference}: {}",
        String::from_utf8_lossy(&resolved.stderr)
    );
    String::from_utf8_lossy(&resolved.stdout).trim().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn release_pipeline_workflow_runs() {
    let registry = Registry::start(RegistryAuth::Htpasswd {
        username: ACTOR.into(),
        password: TOKEN.into(),
    })
    .await
    .unwrap();
    let temp = tempfile::tempdir().unwrap();
    let test_registry = format!("{}/{OWNER}", registry.host());
    let mut runner = Runner::new(temp.path(), &test_registry);
    let text = std::fs::read_to_string(workspace().join(".github/workflows/release.yml")).unwrap();
    let workflow: Value = olmpack_model::yaml::from_str(&text).unwrap();
    let job = &workflow["jobs"]["publish"];

    let mut base = runner.env.clone();
    layer_env(&mut base, &workflow["env"]);
    // The test registry stands in for ghcr.io/<owner>.
    assert_eq!(base["REGISTRY"], format!("ghcr.io/{OWNER}"));
    base.insert("REGISTRY".into(), test_registry.clone());
    layer_env(&mut base, &job["env"]);
    runner.env = base;

    let mut ok = true;
    let mut outputs = String::new();
    for step in job["steps"].as_array().unwrap() {
        let condition = step["if"].as_str().unwrap_or("success()");
        let runs = match condition.trim() {
            "always()" => true,
            "success()" => ok,
            other => panic!("the workflow's condition {other:?} is not known to this runner"),
        };
        let mut env = runner.env.clone();
        layer_env(&mut env, &step["env"]);
        let name = step["name"]
            .as_str()
            .or(step["uses"].as_str())
            .unwrap_or("step")
            .to_owned();
        if !runs {
            runner
                .log
                .push(format!("{name}: skipped (an earlier step failed)"));
            continue;
        }
        if let Some(action) = step["uses"].as_str() {
            ok &= runner.uses(action, &step["with"], &env);
        } else if let Some(script) = step["run"].as_str() {
            let (success, text) = runner.run(&name, script, step["shell"].as_str(), &env);
            outputs.push_str(&text);
            if !success {
                runner.log.push(format!("{name} failed:\n{text}"));
            }
            ok &= success;
        }
    }
    // The other jobs run on GitHub's macOS and arm64 runners and upload to a GitHub release;
    // they are listed, not run.
    for (name, other) in workflow["jobs"].as_object().unwrap() {
        if name != "publish" {
            let steps: Vec<&str> = other["steps"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|s| s["name"].as_str().or(s["uses"].as_str()))
                .collect();
            runner.log.push(format!(
                "job {name}: not run here (GitHub-hosted matrix runners and the GitHub releases API): {}",
                steps.join(", ")
            ));
        }
    }
    let log = runner.log.join("\n");
    assert!(ok, "the workflow failed:\n{log}");
    eprintln!("{log}");
    assert!(
        !outputs.contains(TOKEN),
        "the workflow token leaked into a step's output"
    );

    // Every image the summary names was pushed to the registry, by digest.
    let summary: Value = serde_json::from_slice(
        &std::fs::read(runner.checkout.join("release-summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(summary["pushed"], true);
    let images: Vec<&Value> = std::iter::once(&summary["operator"])
        .chain(summary["bundles"].as_array().unwrap())
        .chain(std::iter::once(&summary["catalog"]))
        .collect();
    assert_eq!(images.len(), 7, "operator, 5 bundles, catalog");
    let step_summary = std::fs::read_to_string(&runner.files["GITHUB_STEP_SUMMARY"]).unwrap();
    for image in images {
        let pinned = image["pinned"].as_str().unwrap();
        assert!(pinned.starts_with(&test_registry), "{pinned}");
        assert_eq!(resolve(pinned), image["digest"].as_str().unwrap());
        let digest = image["digest"].as_str().unwrap();
        assert!(step_summary.contains(digest), "{digest} in\n{step_summary}");
    }
    // The tools image was pushed, and the job's output names it by digest.
    let outputs = std::fs::read_to_string(&runner.files["GITHUB_OUTPUT"]).unwrap();
    let tools = outputs
        .lines()
        .find_map(|l| l.strip_prefix("tools-image="))
        .unwrap_or_else(|| panic!("no tools-image output:\n{outputs}"));
    assert!(
        tools.starts_with(&format!("{test_registry}/olmpack-tools@sha256:")),
        "{tools}"
    );
    assert_eq!(Some(resolve(tools).as_str()), tools.split('@').nth(1));
    // The step summary carries the upgrade verdicts; the install manifests were written.
    assert!(
        step_summary.contains("## olmpack release"),
        "{step_summary}"
    );
    assert!(step_summary.contains("status: passed"), "{step_summary}");
    assert!(
        step_summary.contains("0 of 5 edges would be refused."),
        "{step_summary}"
    );
    assert!(runner.checkout.join("upgrade-report.md").is_file());
    let out = PathBuf::from(&runner.env["RUNNER_TEMP"]).join("release");
    for file in ["install/olm-v0.yaml", "install/olm-v1.yaml"] {
        assert!(out.join(file).is_file(), "{file} was not written");
    }
}
