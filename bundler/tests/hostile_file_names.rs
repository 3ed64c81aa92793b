//! Hostile names (issue 55): text read from a catalog or a bundle's manifests never becomes a
//! path. A table of names — absolute, `..`, `/`, NUL, newline, 300 characters, Unicode
//! look-alikes of `.` and `/` — runs through every command that writes per-bundle or
//! per-package files: the catalog OLM v0 is served, a catalog image's layout, the shards of
//! `upgrade olm`, `bundle generate` and `release`. Each either refuses the input naming it
//! or writes only inside its own directory; nothing lands beside it or outside the work
//! directory. (OLM v1's staging of the same names is `upgrade::olm::v1::serve`'s unit test;
//! `catalog generate`'s package directories are `catalog_generate`'s.)

mod hostile_support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use hostile_support::*;

/// `(what, name)`: the hostile names, `outside` the directory an absolute name points into.
fn names(outside: &Path) -> Vec<(&'static str, String)> {
    vec![
        (
            "an absolute path",
            outside.join("abs").display().to_string(),
        ),
        ("a climb out", "../../outside/x".to_owned()),
        ("a separator", "a/b".to_owned()),
        ("a NUL", "nul\0name".to_owned()),
        ("a newline", "new\nline".to_owned()),
        ("300 characters", "n".repeat(300)),
        ("fullwidth dots", "\u{ff0e}\u{ff0e}".to_owned()),
        ("a division slash", "a\u{2215}b".to_owned()),
    ]
}

/// The work directory `work` and, beside it, `outside` (empty), in one temp root.
struct Root {
    dir: tempfile::TempDir,
}

impl Root {
    fn new() -> Self {
        let dir = temp();
        std::fs::create_dir(dir.path().join("work")).unwrap();
        std::fs::create_dir(dir.path().join("outside")).unwrap();
        Root { dir }
    }

    fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    fn outside(&self) -> PathBuf {
        self.dir.path().join("outside")
    }

    /// Asserts the run wrote nothing outside `work/<own>` (`own` empty: nothing at all),
    /// given the work directory's snapshot before it.
    fn wrote_only_into(&self, own: &str, before: &BTreeMap<PathBuf, Entry>, what: &str) {
        let mut top: Vec<String> = std::fs::read_dir(self.dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        top.sort();
        assert_eq!(
            top,
            ["outside", "work"],
            "{what}: wrote beside the work dir"
        );
        let outside = snapshot(&self.outside());
        assert!(outside.is_empty(), "{what}: wrote {:?}", outside.keys());
        let not_own = |files: &BTreeMap<PathBuf, Entry>| -> Vec<(PathBuf, String)> {
            (files.iter())
                .filter(|(path, _)| own.is_empty() || !path.starts_with(own))
                .map(|(path, entry)| (path.clone(), format!("{entry:?}")))
                .collect()
        };
        let after = snapshot(&self.work());
        assert!(
            not_own(&after) == not_own(before),
            "{what}: wrote outside {own:?}"
        );
    }
}

/// A catalog of one package `package` with one bundle `bundle` carrying one ConfigMap
/// named `bundle` as an `olm.bundle.object` (what OLM v0 and v1 install inline).
fn catalog(package: &str, bundle: &str) -> String {
    let object = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": bundle}});
    let data = base64::engine::general_purpose::STANDARD.encode(object.to_string());
    let blobs = [
        serde_json::json!({"schema": "olm.package", "name": package, "defaultChannel": "stable"}),
        serde_json::json!({"schema": "olm.channel", "package": package, "name": "stable",
            "entries": [{"name": bundle}]}),
        serde_json::json!({"schema": "olm.bundle", "package": package, "name": bundle,
            "image": "quay.io/demo/bundle:v1", "properties": [
            {"type": "olm.package", "value": {"packageName": package, "version": "1.0.0"}},
            {"type": "olm.bundle.object", "value": {"data": data}},
        ]}),
    ];
    blobs.iter().map(|b| format!("{b}\n")).collect()
}

/// Catalog names through the commands that write files for a catalog's packages and
/// bundles: OLM v0's served catalog is one `catalog.json` whatever the names; a catalog
/// image's layout holds blobs named by digest; `upgrade olm --list`, sharded or not, writes
/// nothing.
#[test]
fn hostile_catalog_names_stay_inside_each_commands_directory() {
    let root = Root::new();
    let work = root.work();
    for (what, name) in names(&root.outside()) {
        for (package, bundle) in [("demo", name.as_str()), (name.as_str(), "demo.v1.0.0")] {
            let what = format!(
                "{what} as the {}",
                if package == "demo" {
                    "bundle"
                } else {
                    "package"
                }
            );
            let _ = std::fs::remove_dir_all(work.join("c"));
            let _ = std::fs::remove_dir_all(work.join("l"));
            write(&work.join("c/catalog.json"), catalog(package, bundle));
            let before = snapshot(&work);
            let served = olmpack::upgrade::olm::inline_catalog(
                &work.join("c"),
                &olmpack_oci::input::Limits::default(),
            );
            let served = served.unwrap_or_else(|e| panic!("{what}: OLM v0's served catalog: {e}"));
            let files: Vec<String> = snapshot(served.path())
                .keys()
                .map(|p| p.display().to_string())
                .collect();
            assert_eq!(files, ["catalog.json"], "{what}: OLM v0's served catalog");
            root.wrote_only_into("", &before, &format!("{what}: OLM v0's served catalog"));
            let built = run(&work, &["image", "build", "catalog", "c", "--layout", "l"]);
            built
                .expect(0, &format!("{what}: image build catalog"))
                .in_our_words();
            root.wrote_only_into("l", &before, &format!("{what}: image build catalog"));
            for path in snapshot(&work.join("l")).keys() {
                let text = path.display().to_string();
                assert!(!text.contains(&name), "{what}: {text} holds the name");
            }
            std::fs::remove_dir_all(work.join("l")).ok();
            let before = snapshot(&work);
            for shard in [&[][..], &["--shard", "1/2"], &["--shard", "2/2"]] {
                let mut args = vec!["upgrade", "olm", "--catalog", "c", "--list"];
                args.extend_from_slice(shard);
                let listed = run(&work, &args);
                listed.in_our_words();
                if package == "demo" {
                    listed.expect(0, &format!("{what}: {args:?}"));
                } else {
                    // opm refuses a package name that is no DNS-1123 label: invalid input.
                    (listed.expect(1, &format!("{what}: {args:?}")))
                        .says("the catalog c is invalid (invalid package name");
                }
                root.wrote_only_into("", &before, &format!("{what}: {args:?}"));
            }
        }
    }
}

/// Object names of a release's manifests through `bundle generate` and `release`: a name
/// kube-apiserver refuses is refused naming the object, and no file is named after it.
#[test]
fn hostile_object_names_in_the_manifests_stay_inside_the_bundle() {
    let root = Root::new();
    let work = root.work();
    example_into(&work);
    let manifests = work.join("deploy/1.0.0/manifests.yaml");
    let original = std::fs::read_to_string(&manifests).unwrap();
    for (what, name) in names(&root.outside()) {
        let quoted = serde_json::to_string(&name).unwrap();
        write(
            &manifests,
            format!(
                "{original}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {quoted}\n  namespace: guestbook-system\ndata: {{a: b}}\n"
            ),
        );
        let before = snapshot(&work);
        for (own, args) in [
            ("b", &["bundle", "generate", "--out", "b"][..]),
            ("out", &["release", "--out", "out"]),
        ] {
            let out = run_with(&work, args, std::time::Duration::from_secs(300));
            out.in_our_words();
            out.expect(1, &format!("{what}: {args:?}"))
                .says("error[bundle/object-name]");
            if name.len() < 100 {
                // Longer names are shortened in the output, the start and end kept.
                out.says(&format!("metadata.name: {name:?} "));
            }
            root.wrote_only_into(own, &before, &format!("{what}: {args:?}"));
            assert!(!work.join(own).exists(), "{what}: {args:?} wrote {own}");
        }
    }
}
