//! Hostile input, issue 44's exit codes and words: each case a row with the command, the exit
//! code README documents (1: the input or plan is refused; 2: the environment failed) and the
//! exact message, which names the file or plan field and says who refuses, in olmpack's words.

mod hostile_support;

use std::path::Path;

use hostile_support::*;

/// One row: what is set up in a temp dir, the command, its exit code and exact message.
struct Row {
    name: &'static str,
    setup: fn(&Path),
    args: &'static [&'static str],
    code: i32,
    message: &'static str,
}

/// The example plan with release 1.0.0 replacing 1.1.1, which (through the computed chain)
/// replaces 1.1.0, which replaces 1.0.0.
fn replaces_cycle(d: &Path) {
    example_into(d);
    let plan = d.join("olmpack.yaml");
    let text = std::fs::read_to_string(&plan).unwrap().replace(
        "    manifests: deploy/1.0.0\n",
        "    manifests: deploy/1.0.0\n    replaces: guestbook-operator.v1.1.1\n",
    );
    write(&plan, text);
}

/// A catalog directory holding a FIFO next to a valid catalog file.
fn catalog_with_a_fifo(d: &Path) {
    write(&d.join("c/catalog.yaml"), CATALOG);
    mkfifo(&d.join("c/pipe.json"));
}

/// A catalog with a number beyond a 64-bit float's range.
fn catalog_with_1e400(d: &Path) {
    write(
        &d.join("c/catalog.yaml"),
        format!("{CATALOG}extra: 1e400\n"),
    );
}

/// A catalog with a key given twice (which opm reads, the last value winning) and, after it,
/// a number beyond a 64-bit float's range (the real refusal).
fn catalog_with_a_duplicate_key_then_1e400(d: &Path) {
    let text = CATALOG.replace("name: demo\n", "name: demo\nname: demo\nextra: 1e400\n");
    write(&d.join("c/catalog.yaml"), text);
}

/// A JSON catalog with bytes that are not UTF-8 in a string.
fn json_catalog_with_invalid_utf8(d: &Path) {
    write(
        &d.join("c/catalog.json"),
        b"{\"schema\":\"olm.package\",\"name\":\"demo\xff\"}\n",
    );
}

const CYCLE: &str = "error[plan/replaces-cycle] olmpack.yaml: releases[0].replaces: guestbook-operator.v1.0.0 replaces guestbook-operator.v1.1.1, which is not older: the replaces chain guestbook-operator.v1.0.0 -> guestbook-operator.v1.1.1 -> guestbook-operator.v1.1.0 -> guestbook-operator.v1.0.0 is a cycle in channels candidate, stable, so no entry is the channel's head (the one nothing replaces, which OLM installs)\n";

const ROWS: &[Row] = &[
    Row {
        name: "a replaces cycle in the plan: generate",
        setup: replaces_cycle,
        args: &["generate"],
        code: 1,
        message: CYCLE,
    },
    Row {
        name: "a replaces cycle in the plan: release",
        setup: replaces_cycle,
        args: &["release", "--out", "out"],
        code: 1,
        message: CYCLE,
    },
    Row {
        name: "a replaces cycle in the plan: catalog generate",
        setup: replaces_cycle,
        args: &["catalog", "generate", "--out", "catalog"],
        code: 1,
        message: CYCLE,
    },
    Row {
        name: "image build --as-is on a catalog holding a FIFO",
        setup: catalog_with_a_fifo,
        args: &["image", "build", "catalog", "c", "--layout", "l", "--as-is"],
        code: 1,
        message: "error: failed to build the layer for /configs\n  caused by: c/pipe.json is a FIFO (named pipe); image layers hold only regular files and directories\n",
    },
    Row {
        name: "a YAML number beyond a float's range",
        setup: catalog_with_1e400,
        args: &["catalog", "validate", "c"],
        code: 1,
        message: "error[catalog/load] catalog.yaml: invalid YAML: line 19 column 8: the number `1e400` is beyond a 64-bit float's range (it would read as infinity, which JSON cannot hold)\n",
    },
    Row {
        name: "a duplicate key, then 1e400: the number is the refusal",
        setup: catalog_with_a_duplicate_key_then_1e400,
        args: &["catalog", "validate", "c"],
        code: 1,
        message: "error[catalog/load] catalog.yaml: invalid YAML: line 5 column 8: the number `1e400` is beyond a 64-bit float's range (it would read as infinity, which JSON cannot hold)\n",
    },
    Row {
        name: "bytes that are not UTF-8 in a JSON string",
        setup: json_catalog_with_invalid_utf8,
        args: &["catalog", "validate", "c"],
        code: 1,
        message: "error[catalog/load] catalog.json: invalid JSON: line 1 column 37: a string holds bytes that are not UTF-8 text\n",
    },
];

#[test]
fn hostile_exit_codes_and_words_of_issue_44() {
    for row in ROWS {
        let dir = temp();
        let d = dir.path();
        (row.setup)(d);
        let before = snapshot(d);
        let out = run(d, row.args);
        out.expect(row.code, row.name).in_our_words();
        assert!(
            out.all().contains(row.message),
            "{}: output lacks {:?}:\n{}",
            row.name,
            row.message,
            out.all()
        );
        assert_eq!(snapshot(d), before, "{}: files were written", row.name);
    }
}
