//! `olmpack catalog validate` against the invalid-catalog corpus and against the real opm.
//!
//! - `corpus_findings_are_exact`: every catalog under `fixtures/catalog/invalid/` has one
//!   defect and fails with its rule id and exact message (opm-equivalent defects by default,
//!   upgrade-graph defects opm accepts only with `--strict`).
//! - `opm_and_olmpack_agree_on_pass_fail`: for every catalog in `fixtures/catalog/{valid,invalid}`
//!   `opm validate` and `olmpack catalog validate` both pass or both fail.

use std::path::{Path, PathBuf};
use std::process::Command;

use olmpack::catalog::load::load_dir;
use olmpack::catalog::model::Model;
use olmpack::catalog::validate::{ValidateOptions, validate_dir};
use olmpack_model::report::Severity;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/catalog")
}

/// (catalog, rule, exact message, only with --strict)
const CORPUS: &[(&str, &str, &str, bool)] = &[
    (
        "two-heads",
        "catalog/multiple-channel-heads",
        "invalid package \"pkg\": invalid channel \"stable\": multiple channel heads found in graph: pkg.v1.1.0, pkg.v1.2.0",
        false,
    ),
    (
        "no-head-cycle",
        "catalog/no-channel-head",
        "invalid package \"pkg\": invalid channel \"stable\": no channel head found in graph",
        false,
    ),
    (
        "cycle-below-head",
        "catalog/replaces-cycle",
        "invalid package \"pkg\": invalid channel \"stable\": detected cycle in replaces chain of upgrade graph: pkg.v1.1.0 -> pkg.v1.0.0 -> pkg.v1.1.0",
        false,
    ),
    (
        "stranded-bundle",
        "catalog/stranded-bundles",
        "invalid package \"pkg\": invalid channel \"stable\": channel contains one or more stranded bundles: pkg.v1.0.0",
        false,
    ),
    (
        "dangling-default-channel",
        "catalog/default-channel-missing",
        "invalid package \"pkg\": default channel \"beta\" not found in channels list",
        false,
    ),
    (
        "missing-default-channel",
        "catalog/default-channel-unset",
        "invalid package \"pkg\": default channel must be set",
        false,
    ),
    (
        "duplicate-versions",
        "catalog/duplicate-versions",
        "invalid package \"pkg\": duplicate versions found in bundles: [{1.0.0: [pkg.v1.0.0, pkg.v1.0.0-rebuild]}]",
        false,
    ),
    (
        "duplicate-package",
        "catalog/duplicate-package",
        "duplicate package \"pkg\"",
        false,
    ),
    (
        "duplicate-channel",
        "catalog/duplicate-channel",
        "package \"pkg\" has duplicate channel \"stable\"",
        false,
    ),
    (
        "duplicate-bundle",
        "catalog/duplicate-bundle",
        "package \"pkg\" has duplicate bundle \"pkg.v1.0.0\"",
        false,
    ),
    (
        "duplicate-entry",
        "catalog/duplicate-entry",
        "invalid package \"pkg\", channel \"stable\": duplicate entry \"pkg.v1.0.0\"",
        false,
    ),
    (
        "bundle-in-no-channel",
        "catalog/bundle-not-in-channel",
        "package \"pkg\", bundle \"pkg.v1.1.0\" not found in any channel entries",
        false,
    ),
    (
        "entry-without-bundle",
        "catalog/entry-without-bundle",
        "no olm.bundle blobs found in package \"pkg\" for olm.channel entries [pkg.v1.1.0]",
        false,
    ),
    (
        "channel-unknown-package",
        "catalog/unknown-package",
        "unknown package \"other\" for channel \"stable\"",
        false,
    ),
    (
        "bundle-unknown-package",
        "catalog/unknown-package",
        "unknown package \"other\" for bundle \"other.v1.0.0\"",
        false,
    ),
    (
        "missing-schema",
        "catalog/load",
        "object is missing root schema field",
        false,
    ),
    (
        "invalid-package-name",
        "catalog/invalid-package-name",
        "invalid package name \"My_Pkg\": [a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')]",
        false,
    ),
    (
        "two-package-properties",
        "catalog/package-property-count",
        "package \"pkg\" bundle \"pkg.v1.0.0\" must have exactly 1 \"olm.package\" property, found 2",
        false,
    ),
    (
        "no-package-property",
        "catalog/package-property-count",
        "package \"pkg\" bundle \"pkg.v1.0.0\" must have exactly 1 \"olm.package\" property, found 0",
        false,
    ),
    (
        "package-property-mismatch",
        "catalog/package-property-mismatch",
        "package \"pkg\" does not match \"olm.package\" property \"other\"",
        false,
    ),
    (
        "invalid-version",
        "catalog/invalid-version",
        "error parsing bundle \"pkg.v1.0\" version \"1.0\": No Major.Minor.Patch elements found",
        false,
    ),
    (
        "invalid-image",
        "catalog/invalid-image",
        "package \"pkg\" bundle \"pkg.v1.0.0\" image: invalid image pull spec \"Quay.io/Example/PKG:v1\": invalid reference format: repository name must be lowercase",
        false,
    ),
    (
        "invalid-related-image",
        "catalog/invalid-image",
        "package \"pkg\" bundle \"pkg.v1.0.0\" relatedImages[0].image: invalid image pull spec \"quay.io/example/op@sha256:1234\": invalid reference format",
        false,
    ),
    (
        "invalid-skiprange",
        "catalog/invalid-skip-range",
        "invalid package \"pkg\": invalid channel \"stable\": invalid bundle \"pkg.v1.2.0\": invalid skipRange \">=1.0 <1.2.0\": Could not parse Range \">=1.0\": Could not parse version \"1.0\" in \">=1.0\": No Major.Minor.Patch elements found",
        false,
    ),
    (
        "empty-skip",
        "catalog/empty-skip",
        "invalid package \"pkg\": invalid channel \"stable\": invalid bundle \"pkg.v1.2.0\": skip[0] is empty",
        false,
    ),
    (
        "bundle-without-image",
        "catalog/bundle-image-unset",
        "invalid package \"pkg\": invalid channel \"stable\": invalid bundle \"pkg.v1.0.0\": bundle image must be set",
        false,
    ),
    (
        "empty-channel",
        "catalog/empty-channel",
        "invalid package \"pkg\": invalid channel \"fast\": channel must contain at least one bundle",
        false,
    ),
    (
        "deprecate-unknown-bundle",
        "catalog/deprecation-unknown-bundle",
        "cannot deprecate bundle \"pkg.v9.9.9\" for package \"pkg\": bundle not found",
        false,
    ),
    (
        "deprecate-unknown-channel",
        "catalog/deprecation-unknown-channel",
        "cannot deprecate channel \"beta\" for package \"pkg\": channel not found",
        false,
    ),
    (
        "deprecations-unknown-package",
        "catalog/deprecation-unknown-package",
        "cannot apply deprecations to an unknown package \"other\"",
        false,
    ),
    (
        "two-deprecations",
        "catalog/duplicate-deprecations",
        "expected a maximum of one deprecation per package: \"pkg\"",
        false,
    ),
    (
        "deprecation-unknown-schema",
        "catalog/deprecation-unknown-schema",
        "cannot deprecate object {schema: \"olm.thing\", name: \"x\"} referenced by entry 0 for package \"pkg\": object schema unknown",
        false,
    ),
    (
        "deprecation-package-with-name",
        "catalog/deprecation-package-name",
        "package name must be empty for deprecated package \"pkg\" (specified \"pkg\")",
        false,
    ),
    (
        "deprecation-empty-message",
        "catalog/deprecation-message",
        "invalid package \"pkg\": invalid channel \"stable\": invalid bundle \"pkg.v1.0.0\": invalid deprecation: message must be set",
        false,
    ),
    (
        "duplicate-keys-by-case",
        "catalog/load",
        "duplicate keys for key \"schema\": [\"Schema\", \"schema\"]",
        false,
    ),
    (
        "bundle-object-not-base64",
        "catalog/invalid-property",
        "parse properties for bundle \"p.v1.1.0\": parse property[1] of type \"olm.bundle.object\": illegal base64 data at input byte 2: ' ' is not a base64 character here",
        false,
    ),
    (
        "property-wrong-shape",
        "catalog/invalid-property",
        "parse properties for bundle \"pkg.v1.0.0\": parse property[1] of type \"olm.gvk\": json: cannot unmarshal string into Go value of type property.GVK",
        false,
    ),
    (
        "bundle-without-package-field",
        "catalog/bundle-no-package",
        "package name must be set for bundle \"pkg.v1.0.0\"",
        false,
    ),
    (
        "invalid-release",
        "catalog/invalid-release",
        "error parsing bundle \"pkg-v1.0.0-01\" release version \"01\": invalid release \"01\": segment 0: Numeric PreRelease version must not contain leading zeroes \"01\"",
        false,
    ),
    (
        "release-name-not-normalized",
        "catalog/bundle-name-not-normalized",
        "invalid package \"pkg\": invalid channel \"stable\": invalid bundle \"pkg.v1.0.0-2\": name \"pkg.v1.0.0-2\" does not match normalized name \"pkg-v1.0.0-2\"",
        false,
    ),
    (
        "skiprange-not-on-head",
        "catalog/skiprange-not-on-head",
        "skipRange \">=1.0.0 <1.1.0\" of bundle \"pkg.v1.1.0\" in channel \"stable\" is not on the channel head: OLM v0 ignores it, OLM v1 honours it, so the two upgrade differently",
        true,
    ),
    (
        "skiprange-covers-nothing",
        "catalog/skiprange-covers-nothing",
        "skipRange \">=2.0.0 <3.0.0\" of bundle \"pkg.v1.2.0\" (1.2.0) covers no version older than the bundle",
        true,
    ),
    (
        "skiprange-covers-newer",
        "catalog/skiprange-covers-newer",
        "skipRange \">=1.0.0 <1.3.0\" of bundle \"pkg.v1.1.0\" (1.1.0) covers newer or equal versions: pkg.v1.2.0 (1.2.0); OLM would offer a downgrade to them",
        true,
    ),
    (
        "skiprange-prunes-live-version",
        "catalog/skiprange-prunes-live-version",
        "bundle \"pkg.v1.2.0\" has skipRange \">=1.0.0 <1.2.0\" but no `replaces`: OLM v0 prunes pkg.v1.0.0, pkg.v1.1.0 from channel \"stable\" (no longer installable, no replaces chain through them) although they are not deprecated",
        true,
    ),
    (
        "no-upgrade-into",
        "catalog/no-upgrade-into",
        "no older version in channel \"stable\" can upgrade to bundle \"pkg.v1.1.0\" (1.1.0): it has no replaces, skips or skipRange edge from pkg.v1.0.0",
        true,
    ),
    (
        "replaces-newer-version",
        "catalog/replaces-newer-version",
        "bundle \"pkg.v1.1.0\" (1.1.0) replaces \"pkg.v1.2.0\" (1.2.0), which is not older: OLM would offer a downgrade",
        true,
    ),
    (
        "bom-json-stream",
        "catalog/default-channel-missing",
        "invalid package \"pkg\": default channel \"stable\" not found in channels list",
        false,
    ),
    (
        "bom-json-escape",
        "catalog/load",
        "the file begins with a UTF-8 byte-order mark, so opm reads it as YAML, and refuses it: line 1: \\/ is a JSON escape that Go's YAML decoder does not know",
        false,
    ),
    (
        "syntax-error",
        "catalog/load",
        "invalid JSON: EOF while parsing a value at line 2 column 26",
        false,
    ),
    (
        "unignored-readme",
        "catalog/load",
        "object is not a mapping",
        false,
    ),
];

#[test]
fn corpus_findings_are_exact() {
    let dir = fixtures().join("invalid");
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = CORPUS.iter().map(|c| c.0.to_owned()).collect();
    listed.sort();
    assert_eq!(on_disk, listed, "every corpus catalog has a table row");
    assert!(CORPUS.len() >= 30);
    for (name, rule, message, strict_only) in CORPUS {
        let path = dir.join(name);
        let default = validate_dir(&path, ValidateOptions::default()).unwrap();
        let strict = validate_dir(
            &path,
            ValidateOptions {
                strict: true,
                ..ValidateOptions::default()
            },
        )
        .unwrap();
        let found = strict
            .findings
            .iter()
            .find(|f| f.rule == *rule)
            .unwrap_or_else(|| panic!("{name}: no {rule} finding in {:#?}", strict.findings));
        assert_eq!(found.message, *message, "{name}");
        assert_eq!(found.severity, Severity::Error, "{name}");
        assert!(found.file.is_some(), "{name}: {found:?}");
        assert!(
            found.object.is_some() || found.rule == "catalog/load",
            "{name}: {found:?}"
        );
        assert!(strict.has_errors(), "{name} fails with --strict");
        assert_eq!(
            default.has_errors(),
            !strict_only,
            "{name}: default pass/fail"
        );
        if *strict_only {
            let warning = default.findings.iter().find(|f| f.rule == *rule).unwrap();
            assert_eq!(warning.severity, Severity::Warning, "{name}");
        }
    }
}

fn catalogs() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for kind in ["valid", "invalid"] {
        for e in std::fs::read_dir(fixtures().join(kind)).unwrap() {
            out.push(e.unwrap().path());
        }
    }
    out.sort();
    out
}

#[test]
fn opm_and_olmpack_agree_on_pass_fail() {
    let opm = olmpack_envtest::binaries::Tool::Opm
        .path()
        .expect("opm is required for this test");
    let mut disagreements = Vec::new();
    let mut counts = (0, 0);
    for path in catalogs() {
        let opm_ok = Command::new(&opm)
            .arg("validate")
            .arg(&path)
            .output()
            .unwrap()
            .status
            .success();
        let report = validate_dir(&path, ValidateOptions::default()).unwrap();
        let ours_ok = !report.has_errors();
        if opm_ok {
            counts.0 += 1;
        } else {
            counts.1 += 1;
        }
        if opm_ok != ours_ok {
            disagreements.push(format!(
                "{}: opm {} olmpack {}\n{}",
                path.display(),
                opm_ok,
                ours_ok,
                report.format(olmpack_model::report::OutputFormat::Text)
            ));
        }
        if path.parent().unwrap().ends_with("valid") {
            assert!(opm_ok, "{} is meant to be valid", path.display());
        }
    }
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
    eprintln!(
        "agreement: {} passing, {} failing catalogs",
        counts.0, counts.1
    );
    assert!(counts.0 >= 10 && counts.1 >= 30);
}

#[test]
fn the_cli_exit_codes_and_formats() {
    let bin = env!("CARGO_BIN_EXE_olmpack");
    let run = |args: &[&str]| Command::new(bin).args(args).output().unwrap();
    let valid = fixtures().join("valid/linear-chain");
    let out = run(&["catalog", "validate", valid.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    let invalid = fixtures().join("invalid/two-heads");
    let out = run(&[
        "catalog",
        "validate",
        "-o",
        "json",
        invalid.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        json["findings"][0]["rule"],
        "catalog/multiple-channel-heads"
    );
    let out = run(&[
        "catalog",
        "validate",
        "-o",
        "junit",
        invalid.to_str().unwrap(),
    ]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("<failure"));
    let warn = fixtures().join("invalid/skiprange-not-on-head");
    assert_eq!(
        run(&["catalog", "validate", warn.to_str().unwrap()])
            .status
            .code(),
        Some(0)
    );
    assert_eq!(
        run(&["catalog", "validate", "--strict", warn.to_str().unwrap()])
            .status
            .code(),
        Some(1)
    );
    let out = run(&["catalog", "validate", "/nonexistent/catalog"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn lean_loading_validates_exactly_like_full_loading() {
    use olmpack::catalog::validate::validate_loaded;
    for path in catalogs() {
        for strict in [false, true] {
            let options = ValidateOptions {
                strict,
                upgrade_paths: true,
                ..Default::default()
            };
            let lean = validate_dir(&path, options).unwrap();
            let full = load_dir(&path).unwrap();
            let full = validate_loaded(&path.display().to_string(), full, options);
            assert_eq!(lean, full, "{}", path.display());
        }
    }
}

/// A catalog with keys given twice is read as opm reads it (the last value wins), with a
/// warning per key. Its first `defaultChannel` names a channel that does not exist: read the
/// other way, the catalog would be invalid. `catalog validate` passes it (as `opm validate` does, checked by
/// `opm_and_olmpack_agree_on_pass_fail`) and `catalog render` prints opm's bytes.
#[test]
fn duplicate_keys_are_read_as_opm_reads_them() {
    let path = fixtures().join("valid/duplicate-keys");
    let report = validate_dir(&path, ValidateOptions::default()).unwrap();
    assert!(!report.has_errors(), "{:#?}", report.findings);
    let lenient: Vec<(&str, Severity)> = report
        .findings
        .iter()
        .filter(|f| f.rule == "catalog/lenient-yaml")
        .map(|f| (f.message.as_str(), f.severity))
        .collect();
    assert_eq!(
        lenient,
        [
            (
                "line 5: key \"defaultChannel\" is given twice (lines 3 and 5); the last value is used, as Go's YAML decoder does",
                Severity::Warning
            ),
            (
                "line 13: key \"replaces\" is given twice (lines 12 and 13); the last value is used, as Go's YAML decoder does",
                Severity::Warning
            ),
            (
                "line 19: key \"image\" is given twice (lines 18 and 19); the last value is used, as Go's YAML decoder does",
                Severity::Warning
            ),
            (
                "line 25: key \"version\" is given twice (lines 24 and 25); the last value is used, as Go's YAML decoder does",
                Severity::Warning
            ),
        ]
    );
    let model = Model::from_config(load_dir(&path).unwrap().config).0;
    assert_eq!(model.packages["pkg"].default_channel, "stable");

    let opm = olmpack_envtest::binaries::Tool::Opm
        .path()
        .expect("opm is required for this test");
    for format in ["json", "yaml"] {
        let theirs = Command::new(&opm)
            .args(["render", "-o", format])
            .arg(&path)
            .output()
            .unwrap();
        assert!(theirs.status.success());
        let ours = Command::new(env!("CARGO_BIN_EXE_olmpack"))
            .args(["catalog", "render", "-o", format])
            .arg(&path)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&ours.stderr);
        assert!(ours.status.success(), "{stderr}");
        assert!(
            stderr.contains("key \"defaultChannel\" is given twice"),
            "{stderr}"
        );
        assert_eq!(
            String::from_utf8(ours.stdout).unwrap(),
            String::from_utf8(theirs.stdout).unwrap(),
            "{format}"
        );
    }
}

/// A JSON catalog file that begins with a UTF-8 byte-order mark is read as opm reads it: as
/// YAML, of which Go's decoder keeps the first object of each document. The ignored objects
/// are a warning naming the file (here a second package object that would make the catalog
/// invalid if it were read); `catalog render` prints opm's bytes and `catalog validate` opm's
/// verdict (also checked by `opm_and_olmpack_agree_on_pass_fail`, as for the `bom-*` corpus
/// catalogs). YAML behind a mark reads as without it.
#[test]
fn a_byte_order_mark_is_read_as_opm_reads_it() {
    let opm = olmpack_envtest::binaries::Tool::Opm
        .path()
        .expect("opm is required for this test");
    let warning = "warning[catalog/lenient-yaml] package.json: the file begins with a UTF-8 byte-order mark, so opm reads it as YAML and keeps only the first object of each document: 1 of its 2 objects is ignored, here as by opm (remove the mark to have them read)\n";
    for (name, expected) in [("bom-json-first-object-only", warning), ("bom-yaml", "")] {
        let path = fixtures().join("valid").join(name);
        let out = Command::new(env!("CARGO_BIN_EXE_olmpack"))
            .args(["catalog", "validate"])
            .arg(&path)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{name}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let findings: String = stdout
            .lines()
            .filter(|l| l.contains('['))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(findings, expected, "{name}");
        for format in ["json", "yaml"] {
            let theirs = Command::new(&opm)
                .args(["render", "-o", format])
                .arg(&path)
                .output()
                .unwrap();
            assert!(theirs.status.success(), "{name}");
            let ours = Command::new(env!("CARGO_BIN_EXE_olmpack"))
                .args(["catalog", "render", "-o", format])
                .arg(&path)
                .output()
                .unwrap();
            assert!(ours.status.success(), "{name}");
            assert_eq!(
                String::from_utf8(ours.stdout).unwrap(),
                String::from_utf8(theirs.stdout).unwrap(),
                "{name} {format}"
            );
        }
    }
}

/// `skiprange-prunes-live-version` counts what it does not list, the same whether the range
/// is one interval (counted from a prefix sum) or several (listed one by one); deprecated
/// bundles are never counted.
#[test]
fn pruned_versions_are_counted_past_the_listed_ones() {
    let cases = [
        (
            "<1.24.0",
            "p.v1.0.0, p.v1.1.0, p.v1.2.0, p.v1.3.0, p.v1.4.0, p.v1.5.0, p.v1.6.0, p.v1.7.0, p.v1.8.0, p.v1.9.0, p.v1.10.0, p.v1.11.0, p.v1.12.0, p.v1.13.0, p.v1.14.0, p.v1.15.0, p.v1.16.0, p.v1.17.0, p.v1.18.0, p.v1.19.0 and 3 more",
        ),
        (
            "<1.2.0 || >=1.20.0 <1.24.0",
            "p.v1.0.0, p.v1.1.0, p.v1.20.0, p.v1.22.0, p.v1.23.0",
        ),
    ];
    for (range, pruned) in cases {
        let dir = tempfile::tempdir().unwrap();
        let version = |i: usize| format!("1.{i}.0");
        let mut entries: Vec<serde_json::Value> = (0..24)
            .map(|i| serde_json::json!({"name": format!("p.v{}", version(i)), "replaces": if i > 0 { format!("p.v{}", version(i - 1)) } else { String::new() }}))
            .collect();
        entries.push(serde_json::json!({"name": "p.v1.24.0", "skipRange": range}));
        let mut text = String::from(
            "{\"schema\":\"olm.package\",\"name\":\"p\",\"defaultChannel\":\"stable\"}\n",
        );
        text.push_str(&serde_json::json!({"schema": "olm.channel", "package": "p", "name": "stable", "entries": entries}).to_string());
        text.push('\n');
        text.push_str(&serde_json::json!({"schema": "olm.deprecations", "package": "p", "entries": [{"reference": {"schema": "olm.bundle", "name": "p.v1.21.0"}, "message": "gone"}]}).to_string());
        text.push('\n');
        for i in 0..25 {
            let v = version(i);
            text.push_str(&format!("{{\"schema\":\"olm.bundle\",\"package\":\"p\",\"name\":\"p.v{v}\",\"image\":\"quay.io/p/b:v{v}\",\"properties\":[{{\"type\":\"olm.package\",\"value\":{{\"packageName\":\"p\",\"version\":\"{v}\"}}}}]}}\n"));
        }
        std::fs::write(dir.path().join("catalog.json"), text).unwrap();
        let report = validate_dir(dir.path(), ValidateOptions::default()).unwrap();
        let found: Vec<&str> = report
            .findings
            .iter()
            .filter(|f| f.rule == "catalog/skiprange-prunes-live-version")
            .map(|f| f.message.as_str())
            .collect();
        let expected = format!(
            "bundle \"p.v1.24.0\" has skipRange {range:?} but no `replaces`: OLM v0 prunes {pruned} from channel \"stable\" (no longer installable, no replaces chain through them) although they are not deprecated"
        );
        assert_eq!(found, [expected.as_str()], "{range}");
    }
}

/// A catalog is built and checked one package at a time (issue 44: memory bounded by the
/// largest package): packages come in name order, each with its own findings only, objects of
/// no or an unknown package in their own groups; and the report is the same, finding for
/// finding, as a model of the whole catalog gives (deprecation items keep their place among
/// all the catalog's `olm.deprecations` blobs).
#[test]
fn packages_are_built_and_checked_one_at_a_time() {
    use olmpack::catalog::model::for_each_package;
    let path = fixtures().join("many-packages");
    let mut seen = Vec::new();
    for_each_package(load_dir(&path).unwrap().config, |pkg, findings| {
        let name = pkg.map(|p| p.name);
        let objects: Vec<String> = findings.into_iter().filter_map(|f| f.object).collect();
        seen.push((name, objects));
    });
    let expected: [(Option<&str>, &[&str]); 6] = [
        (
            None,
            &[
                "olm.package/",
                "orphan",
                "olm.deprecations/",
                "olm.deprecations/",
            ],
        ),
        (Some("a-b"), &["a-b", "a-b", "olm.deprecations/a-b", "a-b"]),
        (Some("a_b"), &["a_b", "olm.deprecations/a_b"]),
        (Some("end"), &[]),
        (None, &["ghost/c"]),
        (None, &["zzz/z"]),
    ];
    let expected: Vec<(Option<String>, Vec<String>)> = expected
        .iter()
        .map(|(name, objects)| {
            let objects = objects.iter().map(|o| (*o).to_owned()).collect();
            (name.map(str::to_owned), objects)
        })
        .collect();
    assert_eq!(seen, expected);
    let report = validate_dir(&path, ValidateOptions::default()).unwrap();
    let lines: Vec<String> = report
        .format(Default::default())
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(
        lines,
        [
            "error[catalog/deprecation-message] a/one.yaml: a-b: invalid package \"a-b\": invalid deprecation: message must be set",
            "error[catalog/entry-without-bundle] a/one.yaml: a-b: no olm.bundle blobs found in package \"a-b\" for olm.channel entries [x.v1.1.0]",
            "error[catalog/unknown-package] a/one.yaml: ghost/c: unknown package \"ghost\" for channel \"c\"",
            "error[catalog/deprecation-no-package] a/one.yaml: olm.deprecations/: package name must be set for deprecation item 0",
            "error[catalog/deprecation-unknown-bundle] a/one.yaml: olm.deprecations/a_b: entries[0]: cannot deprecate bundle \"nope\" for package \"a_b\": bundle not found",
            "error[catalog/package-no-name] a/one.yaml: olm.package/: config contains package with no name",
            "error[catalog/duplicate-package] b/two.json: a-b: duplicate package \"a-b\"",
            "error[catalog/invalid-package-name] b/two.json: a_b: invalid package name \"a_b\": [a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')]",
            "error[catalog/deprecation-no-package] b/two.json: olm.deprecations/: package name must be set for deprecation item 2",
            "error[catalog/duplicate-deprecations] b/two.json: olm.deprecations/a-b: expected a maximum of one deprecation per package: \"a-b\"",
            "error[catalog/bundle-no-package] b/two.json: orphan: package name must be set for bundle \"orphan\"",
            "error[catalog/unknown-package] b/two.json: zzz/z: unknown package \"zzz\" for bundle \"z\"",
            &format!("{}: 12 error(s), 0 warning(s), 0 info", path.display()),
        ]
    );
}
