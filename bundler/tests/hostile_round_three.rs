//! Hostile input, round three (issue 44): nothing a plan or a catalog holds becomes an
//! instruction in `bundle.Dockerfile` or a forged line of output; secret and key files read as
//! bounded regular files.

mod hostile_support;

use hostile_support::*;

// --- 1. injection: bundleLabels and untrusted names in findings ---

#[test]
fn hostile_bundle_label_that_would_inject_a_dockerfile_line_is_a_plan_error() {
    let cases = [
        (
            "a newline in a key",
            "  \"a\\nRUN id\": v\n",
            "olmpack.yaml: bundleLabels: key \"a\\nRUN id\" is not a label key (letters, digits, '.', '-', '_' and '/', starting and ending with a letter or digit, at most 253 characters)",
        ),
        (
            "a key with '=' and a space",
            "  \"k=v RUN\": v\n",
            "olmpack.yaml: bundleLabels: key \"k=v RUN\" is not a label key",
        ),
        (
            "a newline in a value",
            "  com.example.note: \"v\\nRUN id\"\n",
            "olmpack.yaml: bundleLabels.com.example.note: \"v\\nRUN id\" holds a control character, which a bundle.Dockerfile LABEL cannot carry",
        ),
    ];
    for (what, label, message) in cases {
        let (dir, plan) = example();
        let d = dir.path();
        let text = std::fs::read_to_string(&plan).unwrap();
        let text = text.replace("bundleLabels:\n", &format!("bundleLabels:\n{label}"));
        write(&plan, text);
        let before = snapshot(d);
        for args in [&["generate"][..], &["bundle", "generate", "--out", "b"]] {
            run(d, args).expect(1, what).says(message).in_our_words();
            assert_eq!(snapshot(d), before, "{what}: {args:?} wrote files");
        }
    }
}

#[test]
fn hostile_catalog_name_with_a_newline_cannot_forge_a_line_or_a_workflow_command() {
    let dir = temp();
    let d = dir.path();
    let catalog = CATALOG.replace(
        "name: demo.v1.0.0\nimage",
        "name: \"demo.v1.0.0\\n::error::forged\"\nimage",
    );
    write(&d.join("c/catalog.yaml"), catalog);
    let text = run(d, &["catalog", "validate", "c"]);
    text.expect(1, "an entry naming no bundle").in_our_words();
    assert!(
        text.all()
            .lines()
            .all(|l| !l.trim_start().starts_with("::")),
        "a line starts a workflow command:\n{}",
        text.all()
    );
    text.says("demo.v1.0.0<U+000A>::error::forged");
    let md = run(d, &["catalog", "validate", "c", "--output", "markdown"]);
    md.expect(1, "markdown");
    assert!(
        md.all().lines().all(|l| !l.trim_start().starts_with("::")),
        "{}",
        md.all()
    );
    md.says("demo.v1.0.0<br>::error::forged");
}
