//! Hostile text that would become something else (issues 23 and 44): nothing a plan or a
//! catalog holds becomes an instruction in `bundle.Dockerfile`, a forged line of output or a
//! workflow command, or a broken node of a graph — keys refused, names escaped, graph ids
//! distinct.

mod hostile_support;

use hostile_support::*;

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

// --- graph ids injective, names escaped ---

#[test]
fn hostile_graph_ids_are_distinct_and_names_escaped() {
    let dir = temp();
    let d = dir.path();
    let bundle = |name: &str, version: &str| {
        serde_json::json!({"schema":"olm.bundle","package":"p","name":name,"image":format!("quay.io/p/b:{version}"),
            "properties":[{"type":"olm.package","value":{"packageName":"p","version":version}}]})
        .to_string()
    };
    let channel = "sta\"ble";
    let evil = "p.v1.2.0\u{1b}[31m\nred";
    let text = [
        serde_json::json!({"schema":"olm.package","name":"p","defaultChannel":channel}).to_string(),
        serde_json::json!({"schema":"olm.channel","package":"p","name":channel,"entries":[
            {"name":"p.v1.0.0"},{"name":"p-v1-0-0","replaces":"p.v1.0.0"},
            {"name":evil,"replaces":"p-v1-0-0"},{"name":"end","replaces":evil}]})
        .to_string(),
        bundle("p.v1.0.0", "1.0.0"),
        bundle("p-v1-0-0", "1.1.0"),
        bundle(evil, "1.2.0"),
        bundle("end", "1.3.0"),
    ]
    .join("\n");
    write(&d.join("c/catalog.json"), text);
    run(d, &["catalog", "validate", "c"]).expect(0, "the catalog is valid");
    let mermaid = run(d, &["catalog", "graph", "c"]);
    mermaid.expect(0, "mermaid");
    let dot = run(d, &["catalog", "graph", "c", "--format", "dot"]);
    dot.expect(0, "dot");
    for (what, text, shown) in [
        (
            "mermaid",
            &mermaid.stdout,
            "#60;U+001B#62;[31m#60;U+000A#62;red",
        ),
        ("dot", &dot.stdout, "<U+001B>[31m<U+000A>red"),
    ] {
        assert!(!text.contains('\u{1b}'), "{what}: raw ESC\n{text}");
        assert!(text.contains(shown), "{what}: ESC not shown\n{text}");
        assert!(!text.contains("[31m\nred"), "{what}: raw newline\n{text}");
    }
    // Four nodes, four ids, each declared once.
    let ids: Vec<&str> = mermaid
        .stdout
        .lines()
        .filter_map(|l| l.trim().strip_prefix("class "))
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!((ids.len(), unique.len()), (4, 4), "{}", mermaid.stdout);
    assert!(!ids.contains(&"end"), "mermaid's keyword as an id: {ids:?}");
    // Every label is one quoted string: no raw quote inside mermaid's ["…"].
    for line in mermaid.stdout.lines().filter(|l| l.contains("[\"")) {
        let inner = &line[line.find("[\"").unwrap() + 2..line.rfind("\"]").unwrap()];
        assert!(!inner.contains('"'), "raw quote in {line}");
    }
    assert!(
        mermaid.stdout.contains("channel sta#34;ble"),
        "{}",
        mermaid.stdout
    );
    // dot: quotes escaped, so every line has an even number of unescaped quotes.
    for line in dot.stdout.lines() {
        let unescaped = line.replace("\\\\", "").replace("\\\"", "");
        assert_eq!(unescaped.matches('"').count() % 2, 0, "{line}");
    }
    assert!(
        dot.stdout.contains("label=\"channel sta\\\"ble"),
        "{}",
        dot.stdout
    );
    let node_ids: Vec<&str> = dot
        .stdout
        .lines()
        .filter(|l| l.contains(" [label=") && !l.contains("->"))
        .map(|l| l.trim().split("\" [").next().unwrap())
        .collect();
    let mut unique = node_ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!((node_ids.len(), unique.len()), (4, 4), "{}", dot.stdout);
}
