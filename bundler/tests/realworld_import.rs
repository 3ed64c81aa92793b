//! operator-sdk bundles as the generator's input, over every bundle-format directory of the
//! community-operators corpus: a minimal plan (package from `metadata/annotations.yaml`,
//! version from the CSV, nothing else) points `manifests:` at the bundle's `manifests/`, the
//! generator imports the CSV and builds a new one, in process, and the two must mean the same
//! on: deployments (spec), permissions, clusterPermissions, installModes, owned CRD
//! names/versions/kinds, webhook definitions, and spec/status descriptors.
//!
//! Asserted: every bundle that does not round-trip is explained by a finding the generator
//! reported (an error that refused it, or a warning/info of a rule that changes that aspect);
//! no silent difference. Also counted: how many pass the full `generate` (with the validation
//! of the generated bundle against today's Kubernetes). Counts go to
//! `target/tmp/realworld-import-counts.md`.
//!
//! Run: `cargo xtask conformance realworld_import` (unpacks the corpus once).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use olmpack::bundle::csv::{self, ReleaseSpec};
use olmpack::bundle::generate::{GenerateError, GenerateOptions, generate};
use olmpack::bundle::{load, manifests, operator_sdk};
use olmpack::json::str_at;
use olmpack_model::report::{Finding, Severity};
use serde_json::{Value, json};

/// The aspects compared, and the rules whose findings explain a difference in each.
const ASPECTS: &[(&str, &[&str])] = &[
    (
        "deployments",
        &[
            "input/webhook-cert-volume-dropped",
            "import/watch-namespace-rewired",
        ],
    ),
    ("permissions", &["import/permissions-unused"]),
    ("clusterPermissions", &["import/permissions-unused"]),
    (
        "installModes",
        &["plan/install-modes-forced", "import/install-mode"],
    ),
    ("owned", &["import/owned-crds-differ"]),
    (
        "webhookdefinitions",
        &[
            "import/webhook-deployment",
            "import/webhook-selector-ambiguous",
            "import/conversion-crd-missing",
            "import/webhook-defaults",
            "import/conversion-added",
        ],
    ),
    (
        "descriptors",
        &["import/descriptor-fields", "import/owned-crds-differ"],
    ),
];

#[derive(Default)]
struct Tally {
    dirs: usize,
    round_trip: usize,
    /// Refused by the import or the build: per error rule, directories.
    refused: BTreeMap<String, usize>,
    refused_dirs: usize,
    /// Differences explained by a finding: per aspect, directories.
    explained: BTreeMap<String, usize>,
    /// Full `generate` (validation included) succeeded.
    generated: usize,
    generate_errors: BTreeMap<String, usize>,
    unexplained: Vec<String>,
    skipped: Vec<String>,
}

fn plan_text(package: &str, version: &str) -> String {
    format!(
        "package: {package}\ndefaultChannel: stable\nchannels: [stable]\n\
         csv: {{displayName: \"\", description: \"\", provider: {{name: \"\"}}}}\n\
         releases:\n- {{version: {version}, manifests: manifests}}\n"
    )
}

/// The CSV aspects compared, in a form where equal means "means the same".
fn meaning(csv: &Value) -> BTreeMap<&'static str, Value> {
    let strategy = &csv["spec"]["install"]["spec"];
    let deployments: BTreeMap<String, Value> = list(&strategy["deployments"])
        .map(|d| (str_at(d, "/name").to_owned(), d["spec"].clone()))
        .collect();
    let rbac = |key: &str| {
        let mut pairs: Vec<String> = list(&strategy[key])
            .flat_map(|p| {
                let account = str_at(p, "/serviceAccountName").to_owned();
                list(&p["rules"]).map(move |r| format!("{account} {r}"))
            })
            .collect();
        pairs.sort();
        json!(pairs)
    };
    let modes: BTreeSet<&str> = list(&csv["spec"]["installModes"])
        .filter(|m| m["supported"] == json!(true))
        .map(|m| str_at(m, "/type"))
        .collect();
    let owned = operator_sdk::owned_of(&olmpack_model::csv::ClusterServiceVersion::read(csv).0);
    BTreeMap::from([
        ("deployments", json!(deployments)),
        ("permissions", rbac("permissions")),
        ("clusterPermissions", rbac("clusterPermissions")),
        ("installModes", json!(modes)),
        ("owned", json!(owned)),
        ("webhookdefinitions", webhooks(csv)),
        ("descriptors", descriptors(csv)),
    ])
}

fn list(value: &Value) -> impl Iterator<Item = &Value> {
    value.as_array().into_iter().flatten()
}

/// Admission webhooks by their fields (defaults applied as OLM applies them); conversion
/// webhooks as one entry per CRD and endpoint (the generator names them after their CRDs).
fn webhooks(csv: &Value) -> Value {
    let mut out = BTreeSet::new();
    for def in list(&csv["spec"]["webhookdefinitions"]) {
        let mut d = def.clone();
        if d.get("containerPort").is_none() {
            d["containerPort"] = json!(443);
        }
        if str_at(def, "/type") == "ConversionWebhook" {
            for crd in list(&def["conversionCRDs"]) {
                let mut one = d.clone();
                one.as_object_mut().unwrap().remove("generateName");
                one.as_object_mut().unwrap().remove("sideEffects");
                one["conversionCRDs"] = json!([crd]);
                out.insert(one.to_string());
            }
        } else {
            if str_at(def, "/type") != "MutatingAdmissionWebhook" {
                d.as_object_mut().unwrap().remove("reinvocationPolicy");
            }
            out.insert(sorted(&d).to_string());
        }
    }
    json!(out)
}

/// A value with object keys sorted, for set comparison.
fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let sorted: BTreeMap<&String, Value> =
                map.iter().map(|(k, v)| (k, self::sorted(v))).collect();
            json!(sorted)
        }
        Value::Array(items) => Value::Array(items.iter().map(self::sorted).collect()),
        other => other.clone(),
    }
}

/// Descriptors of each owned (name, version), as the plan's descriptor type can hold them.
fn descriptors(csv: &Value) -> Value {
    let mut out = BTreeMap::new();
    for entry in list(&csv["spec"]["customresourcedefinitions"]["owned"]) {
        let norm = |key: &str| -> Vec<Value> {
            list(&entry[key])
                .map(|d| {
                    json!([
                        str_at(d, "/path"),
                        str_at(d, "/displayName"),
                        str_at(d, "/description"),
                        list(&d["x-descriptors"])
                            .filter_map(Value::as_str)
                            .collect::<Vec<_>>(),
                    ])
                })
                .collect()
        };
        out.insert(
            format!("{} {}", str_at(entry, "/name"), str_at(entry, "/version")),
            json!([norm("specDescriptors"), norm("statusDescriptors")]),
        );
    }
    json!(out)
}

/// Descriptors are compared on the (name, version) pairs both CSVs own.
fn same_descriptors(a: &Value, b: &Value) -> bool {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return a == b;
    };
    a.iter()
        .filter(|(k, _)| b.contains_key(*k))
        .all(|(k, v)| b[k] == *v)
}

/// Imports and builds in process: the CSV built, or the error findings.
fn build(
    dir: &Path,
    package: &str,
    version: &semver::Version,
) -> Result<(Value, Vec<Finding>), Vec<Finding>> {
    let plan = olmpack_model::plan::parse(
        &dir.join("olmpack.yaml"),
        &plan_text(package, &version.to_string()),
    )
    .map_err(|e| vec![Finding::error("plan/invalid", e.to_string())])?;
    let mut inputs = manifests::read_dir(
        &dir.join("manifests"),
        None,
        manifests::ImportChoices::of(&plan.plan),
        &Default::default(),
    )?;
    let metadata = operator_sdk::fill(&plan.plan.csv, &mut inputs);
    let spec = ReleaseSpec {
        package,
        version,
        csv: &metadata,
        icon: operator_sdk::icon_of(&plan.plan.csv, &inputs),
        edges: Default::default(),
        created_at: None,
        samples: &[],
        release_samples: &[],
    };
    let built = csv::build(&spec, &inputs)?;
    Ok((built.csv.to_value(), built.notes))
}

fn run_one(tally: &Mutex<Tally>, corpus: &Path, dir: &Path) {
    let rel = dir.strip_prefix(corpus).unwrap().display().to_string();
    let bundle = match load::load_dir(dir) {
        Ok(b) => b,
        Err(e) => return tally.lock().unwrap().skipped.push(format!("{rel}: {e}")),
    };
    let Some(original) = bundle.csv().map(|c| c.value.clone()) else {
        return tally
            .lock()
            .unwrap()
            .skipped
            .push(format!("{rel}: no single CSV"));
    };
    let package = bundle
        .annotations
        .as_ref()
        .and_then(|a| a.get("operators.operatorframework.io.bundle.package.v1"))
        .cloned()
        .unwrap_or_default();
    let Ok(version) = semver::Version::parse(str_at(&original, "/spec/version")) else {
        return tally
            .lock()
            .unwrap()
            .skipped
            .push(format!("{rel}: CSV version is not semver"));
    };
    let outcome = build(dir, &package, &version);
    let full = olmpack_model::plan::parse(
        &dir.join("olmpack.yaml"),
        &plan_text(&package, &version.to_string()),
    )
    .ok()
    .map(|plan| generate(&plan, &GenerateOptions::default()));
    let mut t = tally.lock().unwrap();
    t.dirs += 1;
    match full {
        Some(Ok(_)) => t.generated += 1,
        Some(Err(GenerateError::Invalid(found))) => {
            let rules: BTreeSet<String> = found
                .iter()
                .filter(|f| f.severity == Severity::Error)
                .map(|f| f.rule.clone())
                .collect();
            for rule in rules {
                *t.generate_errors.entry(rule).or_default() += 1;
            }
        }
        Some(Err(e)) => t.unexplained.push(format!("{rel}: generate failed: {e}")),
        None => {}
    }
    let (generated, notes) = match outcome {
        Ok(built) => built,
        Err(found) => {
            let rules: BTreeSet<String> = found
                .iter()
                .filter(|f| f.severity == Severity::Error)
                .map(|f| f.rule.clone())
                .collect();
            if rules.is_empty() {
                t.unexplained
                    .push(format!("{rel}: refused without an error finding"));
            }
            t.refused_dirs += 1;
            for rule in rules {
                *t.refused.entry(rule).or_default() += 1;
            }
            return;
        }
    };
    let (want, got) = (meaning(&original), meaning(&generated));
    let mut same = true;
    for (aspect, explainers) in ASPECTS {
        let equal = if *aspect == "descriptors" {
            same_descriptors(&want[aspect], &got[aspect])
        } else {
            want[aspect] == got[aspect]
        };
        if equal {
            continue;
        }
        same = false;
        if notes.iter().any(|n| explainers.contains(&n.rule.as_str())) {
            *t.explained.entry((*aspect).to_owned()).or_default() += 1;
        } else {
            t.unexplained.push(format!(
                "{rel}: {aspect} differs without a finding:\n  original:  {}\n  generated: {}",
                want[aspect], got[aspect]
            ));
        }
    }
    if same {
        t.round_trip += 1;
    }
}

fn table(t: &Tally, total: usize) -> String {
    let mut out = format!(
        "# operator-sdk bundles as `generate` input (community-operators)\n\n\
         {total} bundle-format directories; {} imported; **{} round-trip in meaning**; \
         {} refused by the import/build; {} pass the full `generate` (validation included).\n\n\
         | refused by (import/build) | dirs |\n|---|---:|\n",
        t.dirs, t.round_trip, t.refused_dirs, t.generated
    );
    for (rule, n) in &t.refused {
        out += &format!("| {rule} | {n} |\n");
    }
    out += "\n| differs, explained by a finding | dirs |\n|---|---:|\n";
    for (aspect, n) in &t.explained {
        out += &format!("| {aspect} | {n} |\n");
    }
    out += "\n| full generate refused by | dirs |\n|---|---:|\n";
    for (rule, n) in &t.generate_errors {
        out += &format!("| {rule} | {n} |\n");
    }
    if !t.skipped.is_empty() {
        out += &format!("\nNot imported ({}):\n", t.skipped.len());
        for s in &t.skipped {
            out += &format!("- {s}\n");
        }
    }
    out
}

#[test]
fn realworld_import_operator_sdk_bundles_round_trip() {
    let Some(corpus) = olmpack_testkit::corpus::require(
        olmpack_testkit::corpus::COMMUNITY_OPERATORS,
        "realworld_import_operator_sdk_bundles_round_trip",
    ) else {
        return;
    };
    let dirs: Vec<_> = olmpack_testkit::corpus::version_dirs(&corpus)
        .into_iter()
        .filter(|(_, bundle)| *bundle)
        .map(|(dir, _)| dir)
        .collect();
    assert!(dirs.len() > 500, "corpus looks incomplete: {}", dirs.len());
    let next = AtomicUsize::new(0);
    let result = Mutex::new(Tally::default());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                while let Some(dir) = dirs.get(next.fetch_add(1, Ordering::Relaxed)) {
                    run_one(&result, &corpus, dir);
                }
            });
        }
    });
    let t = result.into_inner().unwrap();
    let text = table(&t, dirs.len());
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("realworld-import-counts.md");
    std::fs::write(&path, &text).unwrap();
    println!("{text}\nwritten to {}", path.display());
    assert!(
        t.unexplained.is_empty(),
        "{} silent difference(s):\n{}",
        t.unexplained.len(),
        t.unexplained.join("\n")
    );
    assert!(t.round_trip > 0, "no bundle round-trips");
}
