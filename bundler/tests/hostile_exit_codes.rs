//! One exit-code contract for every command: a table over every subcommand that reads input ×
//! every input class. valid → 0; invalid → 1; unreadable (missing) → 2; hostile (a FIFO where
//! a file is read) → 1. On failure the message names the file, and nothing is written.

mod hostile_support;

use std::path::Path;

use hostile_support::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Valid,
    Invalid,
    Unreadable,
    Hostile,
}

const CLASSES: [Class; 4] = [
    Class::Valid,
    Class::Invalid,
    Class::Unreadable,
    Class::Hostile,
];

fn expected_code(class: Class) -> i32 {
    match class {
        Class::Valid => 0,
        Class::Invalid | Class::Hostile => 1,
        Class::Unreadable => 2,
    }
}

/// Builds the input of `class` for a plan-driven command in `d`; returns the plan argument and
/// the file the message must name.
fn plan_input(d: &Path, class: Class) -> (String, &'static str) {
    example_into(d);
    let plan = d.join("olmpack.yaml");
    match class {
        Class::Valid => ("olmpack.yaml".into(), "olmpack.yaml"),
        Class::Invalid => {
            let text = std::fs::read_to_string(&plan).unwrap();
            write(&plan, text.replace("version: 1.1.0", "version: one"));
            ("olmpack.yaml".into(), "olmpack.yaml")
        }
        Class::Unreadable => ("absent.yaml".into(), "absent.yaml"),
        Class::Hostile => {
            std::fs::remove_file(d.join("deploy/1.1.0/manifests.yaml")).unwrap();
            mkfifo(&d.join("deploy/1.1.0/manifests.yaml"));
            ("olmpack.yaml".into(), "manifests.yaml")
        }
    }
}

/// Like [`plan_input`], for commands that read only the plan: the hostile plan is a FIFO.
fn plan_only_input(d: &Path, class: Class) -> (String, &'static str) {
    if class != Class::Hostile {
        return plan_input(d, class);
    }
    example_into(d);
    std::fs::remove_file(d.join("olmpack.yaml")).unwrap();
    mkfifo(&d.join("olmpack.yaml"));
    ("olmpack.yaml".into(), "olmpack.yaml")
}

/// A bundle directory `b` of `class` in `d`; returns the argument and the file to name.
fn bundle_input(d: &Path, class: Class) -> (String, &'static str) {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/bundles/sdk-memcached");
    for sub in ["manifests", "metadata"] {
        for entry in std::fs::read_dir(source.join(sub)).unwrap() {
            let path = entry.unwrap().path();
            write(
                &d.join("b").join(sub).join(path.file_name().unwrap()),
                std::fs::read(&path).unwrap(),
            );
        }
    }
    match class {
        Class::Valid => ("b".into(), "b"),
        Class::Invalid => {
            write(&d.join("b/manifests/broken.yaml"), "kind: [oops\n");
            ("b".into(), "broken.yaml")
        }
        Class::Unreadable => ("absent".into(), "absent"),
        Class::Hostile => {
            mkfifo(&d.join("b/manifests/pipe.yaml"));
            ("b".into(), "pipe.yaml")
        }
    }
}

/// A catalog directory `c` of `class` in `d`.
fn catalog_input(d: &Path, class: Class) -> (String, &'static str) {
    write(&d.join("c/demo/catalog.yaml"), CATALOG);
    match class {
        Class::Valid => ("c".into(), "c"),
        Class::Invalid => {
            write(&d.join("c/demo/broken.json"), "{\"schema\": ");
            ("c".into(), "broken.json")
        }
        Class::Unreadable => ("./absent".into(), "absent"),
        Class::Hostile => {
            mkfifo(&d.join("c/demo/pipe.yaml"));
            ("c".into(), "pipe.yaml")
        }
    }
}

/// A basic catalog template file `t.yaml` of `class` in `d`.
fn template_input(d: &Path, class: Class) -> (String, &'static str) {
    let valid = "schema: olm.template.basic\nentries:\n  - schema: olm.package\n    name: demo\n    defaultChannel: stable\n";
    match class {
        Class::Valid => write(&d.join("t.yaml"), valid),
        Class::Invalid => write(&d.join("t.yaml"), "schema: olm.template.bogus\n"),
        Class::Unreadable => return ("absent.yaml".into(), "absent.yaml"),
        Class::Hostile => mkfifo(&d.join("t.yaml")),
    }
    ("t.yaml".into(), "t.yaml")
}

/// A kubebuilder project directory `p` of `class` in `d` (its PROJECT file is the input).
fn project_input(d: &Path, class: Class) -> (String, &'static str) {
    write(
        &d.join("p/dist/install.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
    );
    let project = "projectName: demo\ndomain: example.com\nresources:\n- {group: apps, kind: Widget, version: v1}\n";
    match class {
        Class::Valid => write(&d.join("p/PROJECT"), project),
        Class::Invalid => write(&d.join("p/PROJECT"), "- a\n- b\n"),
        Class::Unreadable => {}
        Class::Hostile => mkfifo(&d.join("p/PROJECT")),
    }
    ("p".into(), "PROJECT")
}

type Build = fn(&Path, Class) -> (String, &'static str);

/// Every subcommand that reads input: its argument list (`{}` is the input) and its builder.
fn commands() -> Vec<(&'static [&'static str], Build)> {
    vec![
        (&["generate", "--plan", "{}"], plan_input),
        (
            &["bundle", "generate", "--plan", "{}", "--out", "out"],
            plan_input,
        ),
        (
            &["catalog", "generate", "--plan", "{}", "--out", "out"],
            plan_input,
        ),
        (&["plan", "edges", "--plan", "{}"], plan_only_input),
        (&["generate", "--plan", "{}"], plan_only_input),
        (&["bundle", "validate", "{}"], bundle_input),
        (&["catalog", "render", "{}"], bundle_input),
        (
            &["image", "build", "bundle", "{}", "--layout", "out"],
            bundle_input,
        ),
        (&["catalog", "validate", "{}"], catalog_input),
        (&["catalog", "render", "{}"], catalog_input),
        (&["catalog", "graph", "{}"], catalog_input),
        (&["catalog", "upgrade-paths", "{}"], catalog_input),
        (
            &["image", "build", "catalog", "{}", "--layout", "out"],
            catalog_input,
        ),
        (&["catalog", "template", "{}"], template_input),
        (&["plan", "init", "--project", "{}"], project_input),
    ]
}

#[test]
fn hostile_exit_code_table() {
    let mut failures = Vec::new();
    for (args, build) in commands() {
        for class in CLASSES {
            let dir = temp();
            let d = dir.path();
            let (input, named) = build(d, class);
            let args: Vec<String> = args.iter().map(|a| a.replace("{}", &input)).collect();
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let before = snapshot(d);
            let out = run(d, &args);
            out.in_our_words();
            // opm skips a manifest whose first document does not decode and renders the
            // rest; `catalog render` does the same (byte-identical output) and warns, naming
            // the file. `bundle validate` warns, naming the file, about a manifest that does
            // not parse (`bundle/unreadable-file`: no consumer is shown refusing it); a file
            // that cannot be read at all (a FIFO) is refused by every command alike.
            let opm_skips = named == "broken.yaml"
                && (args[..2] == ["catalog", "render"] || args[..2] == ["bundle", "validate"]);
            let want = if opm_skips { 0 } else { expected_code(class) };
            if out.code != want {
                failures.push(format!(
                    "{args:?} on {class:?} input: exit {} (want {want})\n{}",
                    out.code,
                    out.all()
                ));
                continue;
            }
            if class != Class::Valid {
                if !out.all().contains(named) {
                    failures.push(format!(
                        "{args:?} on {class:?} input: {named} not named\n{}",
                        out.all()
                    ));
                }
                if snapshot(d) != before {
                    failures.push(format!("{args:?} on {class:?} input: wrote files"));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Bad arguments exit 2 whatever the input, naming what is wrong, before anything is read or
/// any tool looked for: each subcommand with the combinations README's exit-code table calls
/// bad arguments.
#[test]
fn bad_arguments_exit_2() {
    let dir = temp();
    let d = dir.path();
    write(&d.join("c/demo/catalog.yaml"), CATALOG);
    let v1_openshift = [
        "upgrade",
        "olm",
        "--olm",
        "v1",
        "--catalog",
        "c",
        "--platform",
        "openshift",
    ];
    let openshift =
        "--platform openshift is for OLM v0 only; `upgrade olm --olm v1` does not take it";
    let same = "--catalog and --bundles both name c: the catalog and the directory of its bundle directories are two directories";
    let table: Vec<(Vec<&str>, String)> = vec![
        (v1_openshift.to_vec(), openshift.to_owned()),
        (
            [&v1_openshift[..], &["--list"]].concat(),
            openshift.to_owned(),
        ),
        (
            vec![
                "upgrade",
                "olm",
                "--catalog",
                "c",
                "--cluster-crd",
                "/nonexistent/crd.yaml",
            ],
            "--cluster-crd /nonexistent/crd.yaml: does not exist".to_owned(),
        ),
        (
            vec![
                "upgrade",
                "olm",
                "--catalog",
                "c",
                "--cluster-crd",
                "widgets.example.com",
            ],
            "--cluster-crd widgets.example.com: no such file, and not a CRD name".to_owned(),
        ),
        (
            vec![
                "upgrade",
                "olm",
                "--olm",
                "v1",
                "--catalog",
                "c",
                "--platform",
                "kubernetes-1.27",
            ],
            "--olm v1 on Kubernetes 1.27: OLM v1's CRDs call CEL's format library, which kube-apiserver accepts from Kubernetes 1.32 on (1.27 refuses them: \"undeclared reference to 'format'\"); choose a --platform of 1.32 or later".to_owned(),
        ),
        (
            vec!["upgrade", "check", "--catalog", "c", "--bundles", "c"],
            same.to_owned(),
        ),
        (
            vec!["upgrade", "check", "--catalog", "c", "--bundles", "./c/"],
            same.to_owned(),
        ),
        (
            vec!["upgrade", "test", "--catalog", "c", "--bundles", "c"],
            same.to_owned(),
        ),
        (
            vec!["catalog", "render", "/nonexistent"],
            "/nonexistent: does not exist".to_owned(),
        ),
        (
            vec!["catalog", "render", "./absent"],
            "./absent: does not exist".to_owned(),
        ),
    ];
    let mut failures = Vec::new();
    for (args, says) in table {
        let before = snapshot(d);
        let out = run(d, &args);
        if out.code != 2 || !out.stderr.contains(&says) || out.stderr.contains("pull") {
            failures.push(format!(
                "{args:?}: exit {} (want 2, saying {says:?})\n{}",
                out.code,
                out.all()
            ));
        }
        if snapshot(d) != before {
            failures.push(format!("{args:?}: wrote files"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A `--cluster-crd` file that is not a CRD (here /etc/passwd, reached by `..` from the
/// working directory) is invalid input: exit 1 naming it, before any environment starts.
#[test]
fn a_cluster_crd_that_is_no_crd_is_refused_before_the_environment() {
    let dir = temp();
    let d = dir.path();
    write(&d.join("c/demo/catalog.yaml"), CATALOG);
    let up = "../".repeat(d.components().count());
    let passwd = format!("{up}etc/passwd");
    let out = run(
        d,
        &["upgrade", "olm", "--catalog", "c", "--cluster-crd", &passwd],
    );
    out.expect(1, "a file that is no CRD").says(&format!(
        "{passwd}: a string is not an apiextensions.k8s.io/v1 CustomResourceDefinition"
    ));
}
