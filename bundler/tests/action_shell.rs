//! The GitHub Action's `Run olmpack` step (`action.yml` at the repository root), run as GitHub
//! runs it: its `run:` script taken from the file, executed by `bash --noprofile --norc -eo
//! pipefail` with the inputs in the environment variables the step maps them to, and `olmpack`
//! on `PATH` a stub that records its arguments.
//!
//! - `inputs_reach_olmpack_as_a_shell_would_split_them`: multi-line and quoted `command` and
//!   `args` arrive word for word (nothing dropped after the first line, quotes honoured,
//!   nothing expanded or run); an empty `command` or an unclosed quote stops the step with
//!   exit 1 and a message naming the input, before olmpack runs; the `olm` input reaches
//!   `upgrade olm` as `--olm`, and any other command refuses it.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

/// The `run:` script of the step with `id: run`.
fn run_script() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../action.yml");
    let text = std::fs::read_to_string(path).unwrap();
    let action = olmpack_model::yaml::value_from_str(&text).unwrap();
    let steps = action["runs"]["steps"].as_array().unwrap();
    let step = steps.iter().find(|s| s["id"] == "run").unwrap();
    step["run"].as_str().unwrap().to_owned()
}

/// One run of the step: its inputs, and what olmpack receives or the step prints.
struct Case {
    name: &'static str,
    command: &'static str,
    args: &'static str,
    webhook: &'static str,
    olm: &'static str,
    code: i32,
    argv: &'static [&'static str],
    stderr: &'static str,
}

const CASES: &[Case] = &[
    Case {
        name: "multi-line args, every line kept",
        command: "release",
        args: "--binary target/release/manager\n--registry ghcr.io/acme\n--sign-key cosign.key\n",
        webhook: "",
        olm: "",
        code: 0,
        argv: &[
            "release",
            "--plan",
            "olmpack.yaml",
            "--output",
            "json",
            "--binary",
            "target/release/manager",
            "--registry",
            "ghcr.io/acme",
            "--sign-key",
            "cosign.key",
        ],
        stderr: "",
    },
    Case {
        name: "quotes, escapes and comments as a shell reads them, nothing expanded or run",
        command: "release",
        args: "--label 'team=a b' --label \"note=say \\\"hi\\\" \\$x\" # why\n--registry ghcr.io/acme\\ x $HOME $(touch pwned) `id` \\\n--dry-run 'it''s' a#b",
        webhook: "",
        olm: "",
        code: 0,
        argv: &[
            "release",
            "--plan",
            "olmpack.yaml",
            "--output",
            "json",
            "--label",
            "team=a b",
            "--label",
            "note=say \"hi\" $x",
            "--registry",
            "ghcr.io/acme x",
            "$HOME",
            "$(touch",
            "pwned)",
            "`id`",
            "--dry-run",
            "its",
            "a#b",
        ],
        stderr: "",
    },
    Case {
        name: "a quoted argument spanning lines",
        command: "generate\n--check",
        args: "--out \"a\nb\"",
        webhook: "",
        olm: "",
        code: 0,
        argv: &[
            "generate",
            "--check",
            "--plan",
            "olmpack.yaml",
            "--out",
            "a\nb",
        ],
        stderr: "",
    },
    Case {
        name: "upgrade test with the webhook command as one argument",
        command: "  upgrade   test  ",
        args: "",
        webhook: "mgr --port \"$OLMPACK_WEBHOOK_PORT\"",
        olm: "",
        code: 0,
        argv: &[
            "upgrade",
            "test",
            "--plan",
            "olmpack.yaml",
            "--output",
            "markdown",
            "--webhook-command",
            "mgr --port \"$OLMPACK_WEBHOOK_PORT\"",
        ],
        stderr: "",
    },
    Case {
        name: "upgrade olm with the olm input passed as --olm",
        command: "upgrade olm",
        args: "--shard 1/2",
        webhook: "",
        olm: "v1",
        code: 0,
        argv: &[
            "upgrade",
            "olm",
            "--plan",
            "olmpack.yaml",
            "--markdown",
            "RUNNER_TEMP/olmpack-upgrade-olm.md",
            "--shard",
            "1/2",
            "--olm",
            "v1",
        ],
        stderr: "",
    },
    Case {
        name: "the olm input with another command",
        command: "upgrade test",
        args: "",
        webhook: "",
        olm: "v1",
        code: 1,
        argv: &[],
        stderr: "olmpack action: input `olm` is for `upgrade olm` only, not `upgrade test`; nothing was run\n",
    },
    Case {
        name: "empty command",
        command: " \n ",
        args: "--dry-run",
        webhook: "",
        olm: "",
        code: 1,
        argv: &[],
        stderr: "olmpack action: input `command` is empty; give the olmpack command to run, e.g. `release` or `generate --check`\n",
    },
    Case {
        name: "unclosed double quote",
        command: "release",
        args: "--label \"oops\n--sign-key cosign.key",
        webhook: "",
        olm: "",
        code: 1,
        argv: &[],
        stderr: "olmpack action: input `args` has a \" quote that is never closed; nothing was run\n",
    },
    Case {
        name: "unclosed single quote",
        command: "release 'x",
        args: "",
        webhook: "",
        olm: "",
        code: 1,
        argv: &[],
        stderr: "olmpack action: input `command` has a ' quote that is never closed; nothing was run\n",
    },
];

/// Runs the step for `case` in `dir`; returns (exit code, olmpack's argv, stderr).
fn run_step(dir: &Path, script: &str, case: &Case) -> (i32, Vec<String>, String) {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let stub = bin.join("olmpack");
    std::fs::write(&stub, "#!/bin/sh\nprintf '%s\\0' \"$@\" > \"$STUB_ARGV\"\n").unwrap();
    std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
    let argv_file = dir.join("argv");
    let _ = std::fs::remove_file(&argv_file);
    let script_file = dir.join("run.sh");
    std::fs::write(&script_file, script).unwrap();
    let path = format!("{}:/usr/bin:/bin", bin.display());
    let out = Command::new("bash")
        .args(["--noprofile", "--norc", "-eo", "pipefail"])
        .arg(&script_file)
        .current_dir(dir)
        .env_clear()
        .env("PATH", path)
        .env("HOME", dir)
        .env("STUB_ARGV", &argv_file)
        .env("RUNNER_TEMP", dir)
        .env("GITHUB_OUTPUT", dir.join("output"))
        .env("GITHUB_STEP_SUMMARY", dir.join("summary"))
        .env("OLMPACK_PLAN", "olmpack.yaml")
        .env("OLMPACK_COMMAND", case.command)
        .env("OLMPACK_PUSH", "false")
        .env("OLMPACK_ARGS", case.args)
        .env("OLMPACK_TOOLS_IMAGE", "")
        .env("OLMPACK_ACTION_WEBHOOK_COMMAND", case.webhook)
        .env("OLMPACK_ACTION_OLM", case.olm)
        .output()
        .unwrap();
    let argv = std::fs::read(&argv_file).unwrap_or_default();
    let argv = argv
        .split(|b| *b == 0)
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect::<Vec<_>>();
    let argv = argv[..argv.len().saturating_sub(1)].to_vec();
    (
        out.status.code().unwrap_or(-1),
        argv,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn inputs_reach_olmpack_as_a_shell_would_split_them() {
    let script = run_script();
    for case in CASES {
        let dir = tempfile::tempdir().unwrap();
        let (code, argv, stderr) = run_step(dir.path(), &script, case);
        assert_eq!(
            (code, stderr.as_str()),
            (case.code, case.stderr),
            "{}",
            case.name
        );
        // `RUNNER_TEMP` in an expected word stands for the runner's temp directory.
        let temp = dir.path().display().to_string();
        let want: Vec<String> = case
            .argv
            .iter()
            .map(|w| w.replace("RUNNER_TEMP", &temp))
            .collect();
        assert_eq!(argv, want, "{}", case.name);
        assert!(!dir.path().join("pwned").exists(), "{}", case.name);
    }
}

/// 100 KB of `args` (5000 words) split in well under the step's patience: the splitter reads
/// its input once. Indexing the text character by character took 43 s for 50 KB (bash
/// counts from the start for every ${text:i:1}), four times that for twice the text.
#[test]
fn long_args_split_in_linear_time() {
    let script = run_script();
    let words: Vec<String> = (0..5000)
        .map(|i| format!("--w{i:05}=\"a b\"x'#'"))
        .collect();
    let args: &'static str = Box::leak(words.join(" \\\n  ").into_boxed_str());
    assert!(args.len() > 100_000);
    let case = Case {
        name: "100 KB of args",
        command: "generate",
        args,
        webhook: "",
        olm: "",
        code: 0,
        argv: &[],
        stderr: "",
    };
    let dir = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let (code, argv, stderr) = run_step(dir.path(), &script, &case);
    let took = started.elapsed();
    assert_eq!((code, stderr.as_str()), (0, ""));
    let want: Vec<String> = (0..5000).map(|i| format!("--w{i:05}=a bx#")).collect();
    assert!(argv.ends_with(&want), "{:?}", &argv[..argv.len().min(6)]);
    assert!(
        took < std::time::Duration::from_secs(20),
        "100 KB of args took {took:?}"
    );
}
