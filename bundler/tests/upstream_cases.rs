//! operator-framework/api's own validator cases, read from its test data as `cargo xtask setup`
//! copies it (the module version `tools.toml` pins), each held to olmpack's verdict.
//!
//! Upstream's validators (what `operator-sdk bundle validate` runs) call most of these cases
//! errors. olmpack reports every one of them, at the severity its consumer model gives: an error
//! where kube-apiserver, opm or OLM refuses the input (shown in `bundle_consumers.rs`), a
//! warning where upstream holds an opinion no consumer enforces. Where olmpack is stricter than
//! upstream (a `valid` upstream case that a consumer refuses), the case says who refuses.
//!
//! Upstream's test data is not all in bundle layout: single CSVs and CRDs are validated there on
//! their own. Here each case becomes a bundle: its files under `manifests/`, plus — for a CSV
//! that owns the etcd CRDs — the CRDs of upstream's `valid_bundle`, and an `annotations.yaml`
//! naming package `etcd` (olmpack's own, not upstream's).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use olmpack::bundle::{load, validate};
use olmpack_model::report::{Finding, Severity};

/// What olmpack must report on a case.
enum Expect {
    /// No error at all (warnings are fine).
    NoErrors,
    /// No finding of `rule` (what upstream's case checks is fine here).
    Not(&'static str),
    /// Findings of `rule` at `severity`, one per text, the n-th message containing the n-th text
    /// (in olmpack's order).
    Each {
        rule: &'static str,
        severity: Severity,
        texts: Vec<&'static str>,
    },
    /// Errors from exactly these rules (a case upstream calls valid that a consumer refuses).
    OnlyErrors(&'static [&'static str]),
}

/// Whose test data a case comes from.
#[derive(Clone, Copy)]
enum Source {
    /// operator-framework/api's validators (`operator-sdk bundle validate`).
    Api,
    /// operator-registry's bundle validation (opm).
    Registry,
}

struct Case {
    source: Source,
    /// Upstream's test description, shortened.
    upstream: &'static str,
    /// Files or directories under upstream's testdata/.
    files: &'static [&'static str],
    /// Add upstream valid_bundle's CRDs (for CSVs that own the etcd CRDs).
    etcd_crds: bool,
    kube: (u64, u64),
    expect: Expect,
}

const ETCD_CRDS: &[&str] = &[
    "valid_bundle/etcdbackups.etcd.database.coreos.com.crd.yaml",
    "valid_bundle/etcdclusters.etcd.database.coreos.com.crd.yaml",
    "valid_bundle/etcdrestores.etcd.database.coreos.com.crd.yaml",
];

const ERA: (u64, u64) = (1, 21);

/// `count` findings of `rule` at `severity`, each message containing `text`.
fn finding(rule: &'static str, severity: Severity, count: usize, text: &'static str) -> Expect {
    Expect::Each {
        rule,
        severity,
        texts: vec![text; count],
    }
}

fn case(upstream: &'static str, files: &'static [&'static str], expect: Expect) -> Case {
    Case {
        source: Source::Api,
        upstream,
        files,
        etcd_crds: false,
        kube: ERA,
        expect,
    }
}

fn with_etcd_crds(mut c: Case) -> Case {
    c.etcd_crds = true;
    c
}

fn from_registry(mut c: Case) -> Case {
    c.source = Source::Registry;
    c
}

fn at_kube(mut c: Case, kube: (u64, u64)) -> Case {
    c.kube = kube;
    c
}

fn bundle_cases() -> Vec<Case> {
    use Severity::{Error, Warning};
    vec![
        case("valid bundle", &["valid_bundle"], Expect::NoErrors),
        // Stricter, because consumers refuse it: opm looks the owned CRD up by the name the CSV
        // gives (`TestTwos.test.example.com`, the CRD is `testtwos`); kube-apiserver refuses an
        // apiextensions/v1 version without a schema, and a CSV without displayName or install
        // (OLM's CSV CRD requires both).
        case(
            "valid bundle with multiple versions in CRD",
            &["valid_bundle_2"],
            Expect::OnlyErrors(&[
                "crd/schema",
                "csv/missing-field",
                "csv/owned-crd-not-in-bundle",
            ]),
        ),
        case("valid v1 bundle", &["valid_bundle_v1"], Expect::NoErrors),
        case(
            "valid v1beta1 bundle",
            &["valid_bundle_v1beta1"],
            Expect::NoErrors,
        ),
        case(
            "owned CRD not in bundle",
            &["invalid_bundle"],
            finding(
                "csv/owned-crd-not-in-bundle",
                Error,
                1,
                "owned CRD etcdclusters.etcd.database.coreos.com v1beta2/EtcdCluster is not in the bundle",
            ),
        ),
        case(
            "CRD in bundle but not in CSV",
            &["invalid_bundle_2"],
            finding(
                "csv/crd-not-owned",
                Warning,
                1,
                "etcdclusters.etcd.database.coreos.com",
            ),
        ),
        case(
            "duplicate CRD in bundle",
            &["invalid_bundle_3"],
            finding(
                "crd/duplicate",
                Warning,
                1,
                "test.example.com/v1alpha1 Test is also defined",
            ),
        ),
        case(
            "service account in bundle is the CSV's",
            &["invalid_bundle_sa"],
            finding(
                "bundle/service-account-conflict",
                Warning,
                1,
                "etcd-operator",
            ),
        ),
    ]
}

fn csv_cases() -> Vec<Case> {
    use Severity::{Error, Warning};
    vec![
        with_etcd_crds(case("correct CSV", &["correct.csv.yaml"], Expect::NoErrors)),
        with_etcd_crds(case(
            "no install modes",
            &["noInstallMode.csv.yaml"],
            finding("csv/install-modes", Error, 1, "install modes not found"),
        )),
        with_etcd_crds(case(
            "conversionCRDs with AllNamespaces only",
            &["correct.csv.with.conversion.webhook.yaml"],
            Expect::Not("webhook/conversion-install-modes"),
        )),
        with_etcd_crds(case(
            "conversionCRDs with other install modes",
            &["incorrect.csv.with.conversion.webhook.yaml"],
            finding(
                "webhook/conversion-install-modes",
                Error,
                1,
                "must support AllNamespaces and no other install mode",
            ),
        )),
        with_etcd_crds(case(
            "annotation names in the wrong case",
            &["badAnnotationNames.csv.yaml"],
            finding("csv/annotation-case", Warning, 3, "uses the wrong case"),
        )),
        with_etcd_crds(case(
            "CSV name over 63 characters",
            &["badName.csv.yaml"],
            finding(
                "csv/name",
                Error,
                1,
                "must be a DNS-1123 subdomain of at most 63 characters",
            ),
        )),
        case(
            "alm-examples that is not JSON",
            &["invalid.alm-examples.csv.yaml"],
            finding("csv/examples", Warning, 1, "is not a JSON array of objects"),
        ),
        case(
            "minKubeVersion that is not a version",
            &["invalid_min_kube_version.csv.yaml"],
            finding(
                "csv/field-type",
                Error,
                1,
                "minKubeVersion is the number 1.21",
            ),
        ),
        // Upstream warns about the annotation, as olmpack does; the file also has no
        // displayName, which OLM's CSV CRD requires (kube-apiserver refuses the CSV).
        with_etcd_crds(case(
            "olm.properties annotation",
            &["correct.csv.olm.properties.annotation.yaml"],
            Expect::OnlyErrors(&["csv/missing-field"]),
        )),
        with_etcd_crds(case(
            "olm.properties annotation (the deprecation warning)",
            &["correct.csv.olm.properties.annotation.yaml"],
            finding(
                "csv/properties-annotation",
                Warning,
                1,
                "declare properties in metadata/properties.yaml",
            ),
        )),
    ]
}

fn crd_cases() -> Vec<Case> {
    use Severity::Error;
    vec![
        case(
            "valid v1beta1 CRD",
            &["v1beta1.crd.yaml"],
            Expect::Not("crd/"),
        ),
        case(
            "v1beta1 CRD with a duplicate version",
            &["duplicateVersions.crd.yaml"],
            finding("crd/versions", Error, 1, "version v1beta2 is listed twice"),
        ),
        // Stricter: the "valid" v1 CRD has a version without schema, which kube-apiserver refuses.
        case(
            "valid v1 CRD (a version without schema)",
            &["v1.crd.yaml"],
            finding("crd/schema", Error, 1, "has no schema.openAPIV3Schema"),
        ),
        case(
            "v1 CRD with v1beta1's spec.version",
            &["deprecatedVersion.crd.yaml"],
            finding("crd/versions", Error, 1, "the CRD has no versions"),
        ),
        case(
            "conversion webhook without conversionReviewVersions",
            &["noConversionReviewVersions.crd.yaml"],
            finding("crd/conversion", Error, 1, "conversionReviewVersions"),
        ),
    ]
}

fn object_cases() -> Vec<Case> {
    use Severity::Warning;
    let added = |upstream, file, expect| with_etcd_crds(case(upstream, file, expect));
    vec![
        added(
            "PDB with maxUnavailable 0",
            &[
                "valid_bundle/etcdoperator.v0.9.4.clusterserviceversion.yaml",
                "objects/invalid_pdb_maxUnavailable.yaml",
            ],
            finding(
                "objects/pdb-blocks-eviction",
                Warning,
                1,
                "maxUnavailable is 0",
            ),
        ),
        added(
            "PDB with minAvailable 100%",
            &[
                "valid_bundle/etcdoperator.v0.9.4.clusterserviceversion.yaml",
                "objects/invalid_pdb_minAvailable.yaml",
            ],
            finding(
                "objects/pdb-blocks-eviction",
                Warning,
                1,
                "minAvailable is 100%",
            ),
        ),
        added(
            "valid PDB",
            &[
                "valid_bundle/etcdoperator.v0.9.4.clusterserviceversion.yaml",
                "objects/valid_pdb.yaml",
            ],
            Expect::Not("objects/"),
        ),
        added(
            "PriorityClass as global default",
            &[
                "valid_bundle/etcdoperator.v0.9.4.clusterserviceversion.yaml",
                "objects/invalid_priorityclass.yaml",
            ],
            finding(
                "objects/priority-class-global-default",
                Warning,
                1,
                "globalDefault is true",
            ),
        ),
        added(
            "valid PriorityClass",
            &[
                "valid_bundle/etcdoperator.v0.9.4.clusterserviceversion.yaml",
                "objects/valid_priorityclass.yaml",
            ],
            Expect::Not("objects/"),
        ),
        added(
            "Role that creates PDBs",
            &[
                "valid_bundle/etcdoperator.v0.9.4.clusterserviceversion.yaml",
                "objects/invalid_role_create_pdb.yaml",
            ],
            finding("objects/rbac-pdb-write", Warning, 1, "PodDisruptionBudgets"),
        ),
        added(
            "Role that reads PDBs",
            &[
                "valid_bundle/etcdoperator.v0.9.4.clusterserviceversion.yaml",
                "objects/valid_role_get_pdb.yaml",
            ],
            Expect::Not("objects/"),
        ),
        added(
            "Role that changes a default SCC",
            &[
                "valid_bundle/etcdoperator.v0.9.4.clusterserviceversion.yaml",
                "objects/invalid_role_modify_scc.yaml",
            ],
            finding(
                "objects/rbac-default-scc",
                Warning,
                1,
                "default SecurityContextConstraints",
            ),
        ),
        added(
            "Role that reads SCCs",
            &[
                "valid_bundle/etcdoperator.v0.9.4.clusterserviceversion.yaml",
                "objects/valid_role_get_scc.yaml",
            ],
            Expect::Not("objects/"),
        ),
    ]
}

fn removed_api_cases() -> Vec<Case> {
    use Severity::{Error, Warning};
    let hpa_pdb = "was removed in Kubernetes 1.25";
    vec![
        at_kube(
            case(
                "APIs removed in 1.25, targeting 1.25",
                &["removed_api_1_25"],
                finding("deprecated-api/removed", Error, 2, hpa_pdb),
            ),
            (1, 25),
        ),
        at_kube(
            case(
                "APIs removed in 1.25, targeting 1.24",
                &["removed_api_1_25"],
                finding("deprecated-api/removed", Warning, 2, hpa_pdb),
            ),
            (1, 24),
        ),
        at_kube(
            case(
                "API removed in 1.26, targeting 1.26",
                &["removed_api_1_26"],
                finding(
                    "deprecated-api/removed",
                    Error,
                    1,
                    "was removed in Kubernetes 1.26",
                ),
            ),
            (1, 26),
        ),
        at_kube(
            case(
                "v1beta1 CRDs, targeting 1.22",
                &["valid_bundle_v1beta1"],
                finding(
                    "deprecated-api/removed",
                    Error,
                    3,
                    "was removed in Kubernetes 1.22",
                ),
            ),
            (1, 22),
        ),
    ]
}

/// operator-registry's cases: whole bundles (manifests/ and metadata/) or a manifests directory.
fn registry_cases() -> Vec<Case> {
    use Severity::{Error, Warning};
    let mut cases = vec![
        from_registry(case(
            "valid bundle with a ConfigMap, VPA, Secret, PriorityClass and PDB",
            &["valid_bundle"],
            Expect::NoErrors,
        )),
        // Stricter: a v1 CRD version without schema, which kube-apiserver refuses.
        from_registry(case(
            "valid bundle 2",
            &["valid_bundle_2"],
            Expect::OnlyErrors(&["crd/schema"]),
        )),
        from_registry(case(
            "CSV without install modes",
            &["invalid_manifests_bundle/invalid_csv"],
            finding("csv/install-modes", Error, 1, "install modes not found"),
        )),
        from_registry(case(
            "CRD with a version listed twice",
            &["invalid_manifests_bundle/invalid_crd"],
            finding("crd/versions", Error, 1, "is listed twice"),
        )),
        from_registry(case(
            "ServiceAccount whose namespace is a number",
            &["invalid_manifests_bundle/invalid_sa"],
            finding("bundle/object-metadata", Error, 1, "namespace"),
        )),
        // OLM v0's install plan fails on the kind (bundle_consumers.rs runs it).
        from_registry(case(
            "ResourceQuota in the bundle",
            &["invalid_manifests_bundle/invalid_type"],
            finding(
                "bundle/unsupported-kind",
                Error,
                1,
                "kind ResourceQuota is not among the kinds OLM v0 creates",
            ),
        )),
        from_registry(case(
            "owned CRD missing",
            &["invalid_manifests_bundle/invalid_bundle"],
            finding(
                "csv/owned-crd-not-in-bundle",
                Error,
                1,
                "etcdclusters.etcd.database.coreos.com",
            ),
        )),
        // opm calls it a warning too.
        from_registry(case(
            "CRD in the bundle the CSV does not own",
            &["invalid_manifests_bundle/invalid_bundle_2"],
            finding(
                "csv/crd-not-owned",
                Warning,
                1,
                "etcdclusters.etcd.database.coreos.com",
            ),
        )),
        from_registry(case(
            "annotation names in the wrong case",
            &["invalid_manifests_bundle/invalid_annotation_name"],
            finding("csv/annotation-case", Warning, 3, "uses the wrong case"),
        )),
    ];
    // opm renders and serves bundles with these dependency entries; OLM's resolver skips them.
    let dep = |name, dir: &'static [&'static str], texts: &[&'static str]| {
        let each = Expect::Each {
            rule: "bundle/dependency",
            severity: Warning,
            texts: texts.to_vec(),
        };
        from_registry(case(name, dir, each))
    };
    cases.extend([
        dep(
            "olm.gvk dependency without group, kind and version",
            &["invalid_dependencies_bundle/invalid_gvk_dependency"],
            &[
                "each entry needs `type` and `value`",
                "group is required",
                "kind is required",
                "version is required",
            ],
        ),
        dep(
            "package dependency without name, with a bad and an empty version",
            &["invalid_dependencies_bundle/invalid_package_dependency"],
            &[
                "packageName is required",
                "version \">!0.2.0\" is not a semver range",
                "version is required",
            ],
        ),
        dep(
            "dependency of an unknown type",
            &["invalid_dependencies_bundle/invalid_dependency_type"],
            &["unsupported dependency type \"olm.crd\""],
        ),
        dep(
            "label dependency without a label",
            &["invalid_dependencies_bundle/invalid_label_dependency"],
            &["label is required"],
        ),
    ]);
    cases
}

/// Upstream's test data, as setup copied it; the test fails (never passes silently) without it.
fn testdata(source: Source) -> PathBuf {
    let data = match source {
        Source::Api => olmpack_envtest::binaries::ToolData::UpstreamApiTestdata,
        Source::Registry => olmpack_envtest::binaries::ToolData::UpstreamRegistryTestdata,
    };
    data.path().unwrap_or_else(|e| panic!("{e}"))
}

/// The case's files as a bundle in memory: `manifests/<file name>` and an annotations.yaml.
fn bundle_files(testdata: &Path, case: &Case) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let extra = if case.etcd_crds { ETCD_CRDS } else { &[] };
    for entry in case.files.iter().chain(extra) {
        let path = testdata.join(entry);
        if path.join("manifests").is_dir() {
            let tree = olmpack_oci::input::read_tree(&path, &Default::default()).unwrap();
            assert!(
                tree.refused.is_empty(),
                "{}: {:?}",
                path.display(),
                tree.refused
            );
            files.extend(tree.files);
            continue;
        }
        let paths = if path.is_dir() {
            let mut inner: Vec<_> = std::fs::read_dir(&path)
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            inner.sort();
            inner
        } else {
            vec![path]
        };
        for file in paths {
            let name = file.file_name().unwrap().to_owned();
            let contents =
                std::fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            files.insert(Path::new("manifests").join(name), contents);
        }
    }
    if files.contains_key(Path::new("metadata/annotations.yaml")) {
        return files;
    }
    let annotations = "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  operators.operatorframework.io.bundle.manifests.v1: manifests/\n  operators.operatorframework.io.bundle.metadata.v1: metadata/\n  operators.operatorframework.io.bundle.package.v1: etcd\n  operators.operatorframework.io.bundle.channels.v1: stable\n";
    files.insert("metadata/annotations.yaml".into(), annotations.into());
    files
}

fn findings(testdata: &Path, case: &Case) -> Vec<Finding> {
    let files = bundle_files(testdata, case);
    let bundle = load::load_files(
        Path::new(case.upstream),
        files.iter().map(|(p, c)| (p.as_path(), c.as_slice())),
    );
    let options = validate::Options {
        kube_version: case.kube,
        ..validate::Options::default()
    };
    validate::validate(&bundle, &options).findings
}

/// What is wrong with olmpack's verdict on `case`, if anything.
fn verdict_problem(case: &Case, found: &[Finding]) -> Option<String> {
    let listed = || {
        found
            .iter()
            .map(|f| format!("  {:?}[{}] {}", f.severity, f.rule, f.message))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let ok = match &case.expect {
        Expect::NoErrors => found.iter().all(|f| f.severity != Severity::Error),
        Expect::Not(rule) => !found.iter().any(|f| f.rule.starts_with(rule)),
        Expect::Each {
            rule,
            severity,
            texts,
        } => {
            let matching: Vec<_> = found.iter().filter(|f| f.rule == *rule).collect();
            matching.len() == texts.len()
                && matching
                    .iter()
                    .zip(texts.iter())
                    .all(|(f, text)| f.severity == *severity && f.message.contains(text))
        }
        Expect::OnlyErrors(rules) => {
            let errors: std::collections::BTreeSet<&str> = found
                .iter()
                .filter(|f| f.severity == Severity::Error)
                .map(|f| f.rule.as_str())
                .collect();
            errors == rules.iter().copied().collect()
        }
    };
    (!ok).then(|| {
        format!(
            "{}: expected {}; olmpack said:\n{}",
            case.upstream,
            describe(&case.expect),
            listed()
        )
    })
}

fn describe(expect: &Expect) -> String {
    match expect {
        Expect::NoErrors => "no errors".into(),
        Expect::Not(rule) => format!("no {rule} finding"),
        Expect::OnlyErrors(rules) => format!("errors from exactly {rules:?}"),
        Expect::Each {
            rule,
            severity,
            texts,
        } => format!("{severity:?}[{rule}] containing, in order, {texts:?}"),
    }
}

fn run(cases: Vec<Case>) {
    let problems: Vec<String> = cases
        .iter()
        .filter_map(|case| verdict_problem(case, &findings(&testdata(case.source), case)))
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

#[test]
fn upstream_bundle_cases_get_the_meaning_upstream_gives_them() {
    run(bundle_cases());
}

#[test]
fn upstream_csv_cases_get_the_meaning_upstream_gives_them() {
    run(csv_cases());
}

#[test]
fn upstream_crd_cases_get_the_meaning_upstream_gives_them() {
    run(crd_cases());
}

#[test]
fn upstream_object_cases_are_warnings_no_consumer_refuses() {
    run(object_cases());
}

#[test]
fn upstream_removed_api_cases_are_errors_only_from_the_targeted_version_on() {
    run(removed_api_cases());
}

#[test]
fn upstream_opm_bundle_cases_get_the_meaning_upstream_gives_them() {
    run(registry_cases());
}
