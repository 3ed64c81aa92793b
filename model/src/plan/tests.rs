use super::*;

const BASE: &str = "package: op\ndefaultChannel: stable\nchannels: [stable]\ncsv: {displayName: Op, description: d, provider: {name: p}}\n";

fn parse_str(text: &str) -> Result<LoadedPlan, PlanError> {
    parse(Path::new("dir/olmpack.yaml"), text)
}

#[test]
fn a_minimal_plan_parses_and_resolves_paths() {
    let plan = parse_str(&format!(
        "{BASE}releases:\n- {{version: 1.0.0, manifests: deploy}}\n"
    ))
    .unwrap();
    assert_eq!(
        plan.resolve(Path::new("deploy")),
        PathBuf::from("dir/deploy")
    );
    assert_eq!(plan.bundle_name("1.0.0"), "op.v1.0.0");
    assert_eq!(
        plan.channels_of(&plan.plan.releases[0]),
        ["stable".to_owned()]
    );
}

#[test]
fn bad_plans_name_file_and_field() {
    let cases: &[(&str, String, &str)] = &[
        (
            "unknown key in a release",
            format!("{BASE}releases:\n- {{version: 1.0.0, manifests: m, chanels: [x]}}\n"),
            "dir/olmpack.yaml: releases[0].chanels: unknown field `chanels`, expected one of",
        ),
        (
            "a newline in a bundleLabels key",
            format!("{BASE}bundleLabels: {{\"a\\nRUN id\": v}}\nreleases:\n- {{version: 1.0.0, manifests: m}}\n"),
            "dir/olmpack.yaml: bundleLabels: key \"a\\nRUN id\" is not a label key (letters, digits, '.', '-', '_' and '/', starting and ending with a letter or digit, at most 253 characters)",
        ),
        (
            "a space and '=' in a bundleLabels key",
            format!("{BASE}bundleLabels: {{\"a=b c\": v}}\nreleases:\n- {{version: 1.0.0, manifests: m}}\n"),
            "dir/olmpack.yaml: bundleLabels: key \"a=b c\" is not a label key",
        ),
        (
            "a newline in a bundleLabels value",
            format!("{BASE}bundleLabels: {{com.example.x: \"v\\nRUN id\"}}\nreleases:\n- {{version: 1.0.0, manifests: m}}\n"),
            "dir/olmpack.yaml: bundleLabels.com.example.x: \"v\\nRUN id\" holds a control character, which a bundle.Dockerfile LABEL cannot carry",
        ),
        (
            "unknown top-level key",
            format!("{BASE}pakage: x\nreleases: []\n"),
            "dir/olmpack.yaml: pakage: unknown field `pakage`",
        ),
        (
            "bad version",
            format!("{BASE}releases:\n- {{version: v1.0, manifests: m}}\n"),
            "dir/olmpack.yaml: releases[0].version: \"v1.0\" is not a semantic version",
        ),
        (
            "duplicate version",
            format!("{BASE}releases:\n- {{version: 1.0.0, manifests: m}}\n- {{version: 1.0.0, manifests: other}}\n"),
            "dir/olmpack.yaml: releases[1].version: version 1.0.0 is also releases[0]",
        ),
        (
            "versions that differ only in build metadata",
            format!("{BASE}releases:\n- {{version: 1.0.0+a, manifests: m}}\n- {{version: 1.0.0+b, manifests: other}}\n"),
            "dir/olmpack.yaml: releases[1].version: version 1.0.0+b equals releases[0].version 1.0.0+a but for build metadata, which OLM ignores when it orders bundles",
        ),
        (
            "no releases",
            format!("{BASE}releases: []\n"),
            "dir/olmpack.yaml: releases: at least one release is required",
        ),
        (
            "package not a DNS label",
            "package: My_Op\ndefaultChannel: s\nchannels: [s]\ncsv: {displayName: O, description: d, provider: {name: p}}\nreleases:\n- {version: 1.0.0, manifests: m}\n".to_owned(),
            "dir/olmpack.yaml: package: \"My_Op\" is not a DNS-1123 label",
        ),
        (
            "default channel without a release",
            "package: op\ndefaultChannel: fast\nchannels: [stable]\ncsv: {displayName: O, description: d, provider: {name: p}}\nreleases:\n- {version: 1.0.0, manifests: m}\n".to_owned(),
            "dir/olmpack.yaml: defaultChannel: channel \"fast\" has no release",
        ),
        (
            "release without channels",
            "package: op\ndefaultChannel: s\ncsv: {displayName: O, description: d, provider: {name: p}}\nreleases:\n- {version: 1.0.0, manifests: m}\n".to_owned(),
            "dir/olmpack.yaml: releases[0].channels: no channels",
        ),
        (
            "missing required CSV field",
            "package: op\ndefaultChannel: s\nchannels: [s]\ncsv: {description: d, provider: {name: p}}\nreleases:\n- {version: 1.0.0, manifests: m}\n".to_owned(),
            "dir/olmpack.yaml: csv: missing field `displayName`",
        ),
        (
            "wrong type",
            format!("{BASE}releases:\n- {{version: 1.0.0, manifests: m, broken: sometimes}}\n"),
            "dir/olmpack.yaml: releases[0].broken: wrong type: string \"sometimes\", expected a boolean",
        ),
        (
            "bad install mode",
            "package: op\ndefaultChannel: s\nchannels: [s]\ncsv: {displayName: O, description: d, provider: {name: p}, installModes: [AllNamespace]}\nreleases:\n- {version: 1.0.0, manifests: m}\n".to_owned(),
            "dir/olmpack.yaml: csv.installModes[0]: unknown variant `AllNamespace`",
        ),
        (
            "plan createdAt not a timestamp",
            format!("{BASE}createdAt: yesterday\nreleases:\n- {{version: 1.0.0, manifests: m}}\n"),
            "dir/olmpack.yaml: createdAt: \"yesterday\" is not an RFC 3339 timestamp (",
        ),
        (
            "release createdAt not a timestamp",
            format!("{BASE}releases:\n- {{version: 1.0.0, manifests: m, createdAt: '2026-13-01T00:00:00Z'}}\n"),
            "dir/olmpack.yaml: releases[0].createdAt: \"2026-13-01T00:00:00Z\" is not an RFC 3339 timestamp (",
        ),
        (
            "malformed YAML",
            "package: [op\n".to_owned(),
            "dir/olmpack.yaml: invalid YAML: ",
        ),
    ];
    assert_refused(cases);
}

/// Each case refused with a message starting with its expected prefix.
fn assert_refused(cases: &[(&str, String, &str)]) {
    for (name, text, expected) in cases {
        let err = parse_str(text).expect_err(name).to_string();
        assert!(
            err.starts_with(expected),
            "{name}: got {err:?}, want prefix {expected:?}"
        );
    }
}

#[test]
fn image_names_that_are_no_image_reference_name_the_field() {
    let cases: &[(&str, String, &str)] = &[
        (
            "bundle image template that is no image reference",
            format!(
                "{BASE}bundleImage: Quay.io/Op:v{{version}}\nreleases:\n- {{version: 1.0.0, manifests: m}}\n"
            ),
            "dir/olmpack.yaml: bundleImage: for release 1.0.0 names \"Quay.io/Op:v1.0.0\", which is not an image reference: ",
        ),
        (
            "operator image too long",
            format!(
                "{BASE}operatorImage: {}\nreleases:\n- {{version: 1.0.0, manifests: m}}\n",
                "h".repeat(300)
            ),
            "dir/olmpack.yaml: operatorImage: \"hhhh",
        ),
        (
            "empty catalog image",
            format!("{BASE}catalogImage: ''\nreleases:\n- {{version: 1.0.0, manifests: m}}\n"),
            "dir/olmpack.yaml: catalogImage: \"\", which is not an image reference: must not be empty",
        ),
    ];
    assert_refused(cases);
}

/// Tags that are not tags (a space, a newline, 200 characters) in every image the plan names,
/// the base images included: refused when the plan is read, naming the field.
#[test]
fn image_tags_that_are_no_tags_are_refused_at_plan_read() {
    let long = "t".repeat(200);
    let tags = [
        ("a space", "bad tag".to_owned(), "bad tag"),
        // YAML's `\n` in the double-quoted value: a newline, shown escaped.
        ("a newline", "a\\nRUN".to_owned(), "a\\nRUN"),
        ("200 characters", long.clone(), long.as_str()),
    ];
    let mut cases: Vec<(String, String, String)> = Vec::new();
    for (what, tag, shown) in &tags {
        let releases = "releases:\n- {version: 1.0.0, manifests: m}\n";
        for field in ["bundleImage", "operatorImage", "catalogImage"] {
            let text = format!("{BASE}{field}: \"quay.io/o/x:{tag}\"\n{releases}");
            let message = format!(
                "dir/olmpack.yaml: {field}: \"quay.io/o/x:{shown}\", which is not an image reference: invalid reference format"
            );
            cases.push((format!("{field} with {what}"), text, message));
        }
        for (field, key) in [
            ("images.operatorBase", "operatorBase"),
            ("images.catalogBase", "catalogBase"),
        ] {
            let text = format!("{BASE}images: {{{key}: \"quay.io/o/x:{tag}\"}}\n{releases}");
            let message = format!(
                "dir/olmpack.yaml: {field}: \"quay.io/o/x:{shown}\", which is not an image reference: invalid reference format"
            );
            cases.push((format!("{field} with {what}"), text, message));
        }
    }
    for (name, text, expected) in &cases {
        let err = parse_str(text).expect_err(name).to_string();
        assert_eq!(&err, expected, "{name}");
    }
}

#[test]
fn every_refused_value_of_a_plan_is_reported_at_once() {
    let text = "package: Op\ndefaultChannel: stable\nchannels: [stable]\n\
        csv: {displayName: Op, description: d, provider: {name: p}}\n\
        bundleImage: Quay.io/Op:v{version}\n\
        releases:\n- {version: v1, manifests: m}\n- {version: 1.0.0, manifests: m, channels: ['a,b']}\n";
    let err = parse_str(text).unwrap_err();
    let PlanError::Several { problems, .. } = &err else {
        panic!("expected several problems, got {err}");
    };
    let fields: Vec<&str> = problems.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        fields,
        [
            "package",
            "releases[0].version",
            "releases[1].channels[0]",
            "bundleImage",
        ]
    );
    let text = err.to_string();
    assert_eq!(text.lines().count(), 4, "{text}");
    assert!(
        text.lines().all(|l| l.starts_with("dir/olmpack.yaml: ")),
        "{text}"
    );
    assert!(
        text.contains("dir/olmpack.yaml: releases[0].version: \"v1\" is not a semantic version"),
        "{text}"
    );
}

#[test]
fn a_plan_without_releases_says_so_once() {
    let err = parse_str(&format!("{BASE}releases: []\n")).unwrap_err();
    assert_eq!(
        err.to_string(),
        "dir/olmpack.yaml: releases: at least one release is required"
    );
}

#[test]
fn the_published_schema_is_current() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../olmpack.schema.json");
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == schema::json_schema(),
        "{} is stale: run `cargo run -p olmpack -- plan schema > olmpack.schema.json`",
        path.display()
    );
}

#[test]
fn output_directories_default_resolve_and_stay_apart() {
    let release = "releases:\n- {version: 1.0.0, manifests: m}\n";
    let plan = parse_str(&format!("{BASE}{release}")).unwrap();
    assert_eq!(plan.bundles_dir(), PathBuf::from("dir/bundle"));
    assert_eq!(plan.catalog_dir(), PathBuf::from("dir/catalog"));
    let plan = parse_str(&format!("{BASE}output: {{bundles: olm/b}}\n{release}")).unwrap();
    assert_eq!(plan.bundles_dir(), PathBuf::from("dir/olm/b"));
    assert_eq!(plan.catalog_dir(), PathBuf::from("dir/catalog"));
    let cases = [
        (
            "output: {bundles: ../b}\n",
            "dir/olmpack.yaml: output.bundles: \"../b\" is not a directory under the plan's: give a relative path without `.` or `..`",
        ),
        (
            "output: {catalog: /tmp/c}\n",
            "dir/olmpack.yaml: output.catalog: \"/tmp/c\" is not a directory under the plan's: give a relative path without `.` or `..`",
        ),
        (
            "output: {bundles: '', catalog: c}\n",
            "dir/olmpack.yaml: output.bundles: \"\" is not a directory under the plan's: give a relative path without `.` or `..`",
        ),
        (
            "output: {bundles: out, catalog: out/catalog}\n",
            "dir/olmpack.yaml: output: bundles \"out\" and catalog \"out/catalog\" overlap: generate replaces each directory whole, so give two apart",
        ),
    ];
    for (output, want) in cases {
        let err = parse_str(&format!("{BASE}{output}{release}")).unwrap_err();
        assert_eq!(err.to_string(), want, "{output}");
    }
}
