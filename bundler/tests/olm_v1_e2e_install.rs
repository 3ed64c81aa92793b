//! The real OLM v1 (catalogd and operator-controller at the version `tools.toml` pins) installs
//! what `olmpack release` ships: the reference operator's catalog image and bundle images,
//! pushed to a registry on 127.0.0.1, applied by the release's own `install/olm-v1.yaml`
//! (ClusterCatalog, installer ServiceAccount and RBAC, ClusterExtension), reach
//! `Installed=True`, then upgrade along the catalog's edges by version pinning. Static vs live:
//! a CRD change crdify refuses (a lowered `maximum`) is refused by the live OLM v1's CRD
//! upgrade-safety preflight and by `olmpack upgrade check --consumer olm-v1`; one it accepts
//! (a new optional field) upgrades under both. Verdicts quote OLM v1's own conditions.
//! Without OLM v1's binaries the tests say NOT RUN (a failure in CI).

mod release_support;

use std::path::Path;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
use kube::api::{Api, ListParams, PostParams};
use olmpack_envtest::olm::v1::extension::{OWNER_KIND_LABEL, OWNER_NAME_LABEL};
use olmpack_envtest::olm::v1::{Condition, ExtensionSpec, OlmV1Env, StepEnd, UpgradePolicy};
use olmpack_testkit::registry::{Registry, RegistryAuth};
use release_support::{example_project, ok, olmpack, operator_binary};
use serde_json::{Value, json};

/// How long OLM v1 may take for one install or upgrade.
const STEP_TIMEOUT: Duration = Duration::from_secs(60);

/// Whether OLM v1's binaries and the registry are installed; "NOT RUN" when not (a failure
/// in CI).
fn olm_v1_installed() -> bool {
    olmpack_testkit::tools::require(&olmpack_testkit::tools::OLM_V1, "OLM v1")
}

/// `olmpack release --push` of the example operator to `registry`; returns the output dir.
fn release(work: &Path, registry: &str) -> std::path::PathBuf {
    let plan = example_project(&work.join("project"));
    let binary = operator_binary(work);
    let out = work.join("out");
    ok(olmpack()
        .args(["release", "--push", "--output", "json"])
        .arg("--plan")
        .arg(&plan)
        .arg("--out")
        .arg(&out)
        .arg("--binary")
        .arg(&binary)
        .args(["--registry", &format!("{registry}/acme")])
        .output()
        .unwrap());
    out
}

fn documents(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    olmpack_model::yaml::from_multi_str(&text)
        .unwrap()
        .into_iter()
        .filter(|d| !d.is_null())
        .collect()
}

fn shown(conditions: &[Condition]) -> String {
    conditions
        .iter()
        .map(|c| format!("{c}\n"))
        .collect::<String>()
}

/// What the release's ClusterExtension installs, resolved from the ClusterCatalog named
/// `catalog` under `policy`.
fn spec(manifests: &[Value], catalog: &str, policy: UpgradePolicy) -> ExtensionSpec {
    let extension = kind(manifests, "ClusterExtension");
    let text = |v: &Value| v.as_str().unwrap().to_owned();
    let source = &extension["spec"]["source"]["catalog"];
    ExtensionSpec {
        name: text(&extension["metadata"]["name"]),
        package: text(&source["packageName"]),
        channels: source["channels"]
            .as_array()
            .map(|c| c.iter().map(text).collect())
            .unwrap_or_default(),
        namespace: text(&extension["spec"]["namespace"]),
        service_account: text(&extension["spec"]["serviceAccount"]["name"]),
        catalog: catalog.to_owned(),
        policy,
        watch_namespace: None,
    }
}

/// The release's ClusterCatalog's name.
fn released_catalog(manifests: &[Value]) -> String {
    kind(manifests, "ClusterCatalog")["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Pins the ClusterExtension of `spec` to `version`, applies it and waits until OLM v1 says
/// it installed that version (olmpack's own step, as `upgrade olm --olm v1` takes it);
/// returns OLM v1's conditions.
async fn install_version(
    olm: &mut OlmV1Env,
    spec: &ExtensionSpec,
    version: &str,
) -> Vec<Condition> {
    let end = olm
        .install_version(spec, version, STEP_TIMEOUT)
        .await
        .unwrap();
    let StepEnd::Installed { bundle, conditions } = end else {
        panic!("{} {version}: {end:?}\n{}", spec.name, olm.log_tails());
    };
    assert!(
        conditions.iter().any(|c| c.type_ == "Installed"
            && c.reason == "Succeeded"
            && c.message.starts_with("Installed bundle ")
            && c.message.ends_with(" successfully")),
        "{}",
        shown(&conditions)
    );
    eprintln!("olm v1: {} at {bundle}:\n{}", spec.name, shown(&conditions));
    conditions
}

/// The pushed release, OLM v1 running with its ClusterCatalog serving (ClusterExtension not
/// yet applied); returns the environment, the release's install manifests and the output dir.
async fn released_and_served(
    registry: &Registry,
    work: &Path,
) -> (OlmV1Env, Vec<Value>, std::path::PathBuf, Duration) {
    let out = release(work, &registry.host());
    let manifests = documents(&out.join("install/olm-v1.yaml"));
    let started = Instant::now();
    let mut olm = OlmV1Env::start(&[registry.host()]).await.unwrap();
    let up = started.elapsed();
    for object in manifests.iter().filter(|d| d["kind"] != "ClusterExtension") {
        olm.apply(object).await.unwrap();
    }
    let catalog = kind(&manifests, "ClusterCatalog");
    let name = catalog["metadata"]["name"].as_str().unwrap();
    let image = catalog["spec"]["source"]["image"]["ref"].as_str().unwrap();
    let served = olm.serve_catalog(name, image, STEP_TIMEOUT).await.unwrap();
    eprintln!("olm v1: {name}:\n{}", shown(&served));
    (olm, manifests, out, up)
}

fn kind<'a>(documents: &'a [Value], kind: &str) -> &'a Value {
    documents
        .iter()
        .find(|d| d["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} in install/olm-v1.yaml"))
}

#[tokio::test(flavor = "multi_thread")]
async fn olm_v1_e2e_install_the_reference_operator_installs_and_upgrades_along_its_edges() {
    if !olm_v1_installed() {
        return;
    }
    let registry = Registry::start(RegistryAuth::Anonymous).await.unwrap();
    let work = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let (mut olm, manifests, _, up) = released_and_served(&registry, work.path()).await;
    let image = kind(&manifests, "ClusterCatalog")["spec"]["source"]["image"]["ref"]
        .as_str()
        .unwrap();
    assert!(
        image.starts_with(&format!("{}/acme/", registry.host())),
        "install/olm-v1.yaml names the pushed catalog: {image}"
    );
    let spec = spec(
        &manifests,
        &released_catalog(&manifests),
        UpgradePolicy::CatalogProvided,
    );
    // The catalog's channel: 1.0.0 → 1.1.0 → 1.1.1 (replaces), each pinned in turn.
    for version in ["1.0.0", "1.1.0", "1.1.1"] {
        let step = Instant::now();
        install_version(&mut olm, &spec, version).await;
        eprintln!("olm v1: {version} in {:.1?}", step.elapsed());
    }
    eprintln!(
        "olm v1: environment up in {up:.1?}; release, environment and installs in {:.1?}",
        started.elapsed()
    );
    uninstall_leaves_nothing_labelled(&mut olm, &spec).await;
}

/// Uninstalling deletes what operator-controller labelled as the ClusterExtension's even when
/// the garbage collector has not (yet) seen it: a ConfigMap with the labels and no owner —
/// as an object the collector has not caught up with looks — is gone afterwards, and so are
/// the operator's ServiceAccount and CRDs.
async fn uninstall_leaves_nothing_labelled(olm: &mut OlmV1Env, spec: &ExtensionSpec) {
    let configmaps: Api<ConfigMap> = Api::namespaced(olm.client(), &spec.namespace);
    let straggler: ConfigMap = serde_json::from_value(json!({"metadata": {
        "name": "straggler",
        "labels": {OWNER_KIND_LABEL: "ClusterExtension", OWNER_NAME_LABEL: spec.name},
    }}))
    .unwrap();
    configmaps
        .create(&PostParams::default(), &straggler)
        .await
        .unwrap();
    let crds = olm.operator_crds().await.unwrap();
    assert!(
        !crds.is_empty(),
        "the reference operator's CRDs are installed"
    );
    olm.uninstall(&spec.name, &crds, STEP_TIMEOUT)
        .await
        .unwrap();
    assert!(configmaps.get_opt("straggler").await.unwrap().is_none());
    let accounts: Api<ServiceAccount> = Api::namespaced(olm.client(), &spec.namespace);
    let left: Vec<String> = accounts
        .list_metadata(&ListParams::default())
        .await
        .unwrap()
        .into_iter()
        .filter_map(|a| a.metadata.name)
        .filter(|name| *name != spec.service_account && name != "default")
        .collect();
    assert_eq!(
        left,
        Vec::<String>::new(),
        "ServiceAccounts left but the installer's"
    );
    assert_eq!(olm.operator_crds().await.unwrap(), Vec::<String>::new());
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The 1.1.1 CRD of the release's bundles, in the variant `dir`.
fn crd_of_1_1_1(dir: &Path) -> std::path::PathBuf {
    dir.join("bundle/1.1.1/manifests/demo.olmpack.dev_guestbooks.yaml")
}

/// The release's bundle/ and catalog/ copied to `dir`, 1.1.1's CRD changed by `edit`.
fn variant(out: &Path, dir: &Path, edit: impl Fn(&str) -> String) {
    copy_tree(&out.join("bundle"), &dir.join("bundle"));
    copy_tree(&out.join("catalog"), &dir.join("catalog"));
    let crd = crd_of_1_1_1(dir);
    let text = std::fs::read_to_string(&crd).unwrap();
    let edited = edit(&text);
    assert_ne!(edited, text, "the edit changed nothing");
    std::fs::write(&crd, edited).unwrap();
}

/// `olmpack upgrade check --consumer olm-v1` of the variant: exit code and output.
fn static_verdict(dir: &Path) -> (i32, String) {
    let run = olmpack()
        .args(["upgrade", "check", "--consumer", "olm-v1", "--catalog"])
        .arg(dir.join("catalog"))
        .arg("--bundles")
        .arg(dir.join("bundle"))
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    (run.status.code().unwrap_or(-1), text)
}

/// Builds and pushes `layout`'s image from `dir` (`bundle` or `catalog`) as `repo:tag`;
/// returns the pushed reference by digest.
fn build_and_push(what: &str, dir: &Path, registry: &str, repo: &str, tag: &str) -> String {
    let layout = dir.with_extension("layout");
    ok(olmpack()
        .args(["image", "build", what, "--layout"])
        .arg(&layout)
        .arg(dir)
        .output()
        .unwrap());
    let target = format!("{registry}/acme/{repo}");
    let pushed = ok(olmpack()
        .args(["image", "push"])
        .arg(&layout)
        .arg(format!("{target}:{tag}"))
        .output()
        .unwrap());
    let digest = String::from_utf8_lossy(&pushed.stdout).trim().to_owned();
    assert!(digest.starts_with("sha256:"), "{digest}");
    format!("{target}@{digest}")
}

/// Pushes the variant's 1.1.1 bundle and a catalog naming it instead of the released one;
/// returns the bundle's and the catalog's references by digest.
fn push_variant(dir: &Path, registry: &str, tag: &str) -> (String, String) {
    let bundle = build_and_push(
        "bundle",
        &dir.join("bundle/1.1.1"),
        registry,
        "guestbook-operator-bundle",
        tag,
    );
    let catalog_json = dir.join("catalog/guestbook-operator/catalog.json");
    let text = std::fs::read_to_string(&catalog_json).unwrap();
    let released = serde_json::Deserializer::from_str(&text)
        .into_iter::<Value>()
        .map(Result::unwrap)
        .find(|d| d["schema"] == "olm.bundle" && d["name"] == "guestbook-operator.v1.1.1")
        .expect("the catalog has 1.1.1")["image"]
        .as_str()
        .unwrap()
        .to_owned();
    std::fs::write(&catalog_json, text.replace(&released, &bundle)).unwrap();
    let catalog = build_and_push(
        "catalog",
        &dir.join("catalog"),
        registry,
        "guestbook-operator-catalog",
        tag,
    );
    (bundle, catalog)
}

#[tokio::test(flavor = "multi_thread")]
async fn olm_v1_e2e_install_a_crd_change_crdify_refuses_is_refused_live_and_statically() {
    if !olm_v1_installed() {
        return;
    }
    let registry = Registry::start(RegistryAuth::Anonymous).await.unwrap();
    let work = tempfile::tempdir().unwrap();
    let (mut olm, manifests, out, _) = released_and_served(&registry, work.path()).await;
    let released = spec(
        &manifests,
        &released_catalog(&manifests),
        UpgradePolicy::CatalogProvided,
    );
    install_version(&mut olm, &released, "1.1.0").await;

    // Refused: 1.1.1 lowers `maximum` of spec.replicas (v1) and spec.size (v1alpha1).
    let refused = work.path().join("refused");
    variant(&out, &refused, |crd| {
        crd.replace(
            "                maximum: 10\n",
            "                maximum: 5\n",
        )
    });
    let (code, text) = static_verdict(&refused);
    assert_eq!(code, 1, "{text}");
    let (bundle, image) = push_variant(&refused, &registry.host(), "refused");
    let catalog = case_catalog(&mut olm, &manifests, 0, &image).await;
    let words = live_verdict(&mut olm, &manifests, &catalog, &bundle)
        .await
        .expect_err("OLM v1 installed a lowered maximum");
    eprintln!("olm v1 refused 1.1.1: {words}");
    // OLM v1's preflight words (its problems sorted: it prints them in another order on each
    // reconcile), and the same two properties in olmpack's findings.
    assert_eq!(
        words,
        "Progressing=True (Retrying): error for resolved bundle \"guestbook-operator.v1.1.1\" with version \"1.1.1\": validating upgrade for CRD \"guestbooks.demo.olmpack.dev\": v1: ^.spec.replicas: maximum: maximum decreased : 10 -> 5\nv1alpha1: ^.spec.size: maximum: maximum decreased : 10 -> 5"
    );
    for (version, property) in [("v1alpha1", "size"), ("v1", "replicas")] {
        let finding = format!(
            "error[crd-upgrade/maximum] guestbook-operator.v1.1.0 -> guestbook-operator.v1.1.1: CustomResourceDefinition/guestbooks.demo.olmpack.dev: {version}:^.spec.{property}: maximum decreased: 10 -> 5; refused by OLM v1"
        );
        assert!(text.contains(&finding), "{finding}\n{text}");
    }
    let (_, body) = olm
        .read("ClusterExtension", &released.name)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(body["status"]["install"]["bundle"]["version"], "1.1.0");
    back_to_1_1_0(&mut olm, &manifests, false).await;

    // Accepted: 1.1.1 adds an optional field to the v1 schema.
    let accepted = work.path().join("accepted");
    variant(&out, &accepted, |crd| {
        crd.replacen(FIELD_ADDED.from, FIELD_ADDED.to, 1)
    });
    let (code, text) = static_verdict(&accepted);
    assert_eq!(code, 0, "{text}");
    let (bundle, image) = push_variant(&accepted, &registry.host(), "accepted");
    let catalog = case_catalog(&mut olm, &manifests, 1, &image).await;
    let live = live_verdict(&mut olm, &manifests, &catalog, &bundle).await;
    assert_eq!(live, Ok(()), "OLM v1 refused an added optional field");
}

/// An optional field added to the v1 schema (crdify accepts it).
const FIELD_ADDED: Change = Change {
    name: "optional field added",
    from: "              replicas:\n                description: Number of pods.\n",
    to: "              greeting:\n                type: string\n              replicas:\n                description: Number of pods.\n",
};

/// A CRD change of 1.1.1 (1.1.0 installed): what the live OLM v1 does with it must be what
/// `upgrade check --consumer olm-v1` says.
struct Change {
    name: &'static str,
    from: &'static str,
    to: &'static str,
}

/// Changes of the reference operator's v1 schema, each of one crdify check (and CEL rules,
/// which crdify leaves unhandled and OLM v1 fails closed on).
const CHANGES: [Change; 10] = [
    Change {
        name: "maximum lowered",
        from: "                maximum: 10\n                minimum: 1\n                type: integer\n            required:\n            - replicas\n",
        to: "                maximum: 5\n                minimum: 1\n                type: integer\n            required:\n            - replicas\n",
    },
    Change {
        name: "enum value removed",
        from: "                    - light\n                    - dark\n",
        to: "                    - light\n",
    },
    Change {
        name: "default added",
        from: "                minimum: 1\n                type: integer\n            required:\n            - replicas\n",
        to: "                minimum: 1\n                default: 1\n                type: integer\n            required:\n            - replicas\n",
    },
    Change {
        name: "required field added",
        from: "            required:\n            - replicas\n",
        to: "            required:\n            - replicas\n            - page\n",
    },
    Change {
        name: "type changed",
        from: "                  title:\n                    maxLength: 64\n                    type: string\n                type: object\n",
        to: "                  title:\n                    maxLength: 64\n                    type: integer\n                type: object\n",
    },
    Change {
        name: "field removed",
        from: "                  title:\n                    maxLength: 64\n                    type: string\n                type: object\n",
        to: "                type: object\n",
    },
    Change {
        name: "CEL rule added",
        from: "              rule: \"!has(self.page) || !has(self.page.theme) || self.replicas >= 1\"\n",
        to: "              rule: \"!has(self.page) || !has(self.page.theme) || self.replicas >= 1\"\n            - message: at most nine replicas\n              rule: \"self.replicas <= 9\"\n",
    },
    Change {
        name: "CEL rule changed",
        from: "self.replicas >= 1\"",
        to: "self.replicas >= 2\"",
    },
    Change {
        name: "description changed",
        from: "                description: Number of pods.\n                maximum: 10\n                minimum: 1\n                type: integer\n            required:\n            - replicas\n",
        to: "                description: How many pods.\n                maximum: 10\n                minimum: 1\n                type: integer\n            required:\n            - replicas\n",
    },
    // Last: going back from it removes the field, which the preflight refuses.
    FIELD_ADDED,
];

/// A ClusterCatalog of its own for one change (the released one renamed), serving `image`;
/// returns its name. (One catalog per change: a ClusterExtension selecting it can never
/// resolve against an earlier change's content.)
async fn case_catalog(olm: &mut OlmV1Env, manifests: &[Value], case: usize, image: &str) -> String {
    let name = format!("{}-change-{case}", released_catalog(manifests));
    olm.serve_catalog(&name, image, STEP_TIMEOUT).await.unwrap();
    name
}

/// OLM v1's verdict on 1.1.1 from `catalog`, whose 1.1.1 is `bundle`: `Ok(())` when it
/// installed that bundle, else the refusal's words.
async fn live_verdict(
    olm: &mut OlmV1Env,
    manifests: &[Value],
    catalog: &str,
    bundle: &str,
) -> Result<(), String> {
    let spec = spec(manifests, catalog, UpgradePolicy::CatalogProvided);
    match olm
        .install_version(&spec, "1.1.1", STEP_TIMEOUT)
        .await
        .unwrap()
    {
        StepEnd::Installed { conditions, .. } => {
            assert!(
                conditions
                    .iter()
                    .any(|c| c.type_ == "Installed" && c.message.contains(bundle)),
                "{}",
                shown(&conditions)
            );
            Ok(())
        }
        StepEnd::Refused { progressing, .. } => Err(progressing.to_string()),
        StepEnd::TimedOut { conditions } => panic!("1.1.1 from {catalog}: {}", shown(&conditions)),
    }
}

/// Back to 1.1.0 from the released catalog: pinned again when 1.1.1 was refused; after an
/// install of 1.1.1, downgraded (`upgradeConstraintPolicy: SelfCertified`, the one policy
/// that allows it; the preflight still checks the CRD going back).
async fn back_to_1_1_0(olm: &mut OlmV1Env, manifests: &[Value], installed_1_1_1: bool) {
    let policy = match installed_1_1_1 {
        true => UpgradePolicy::SelfCertified,
        false => UpgradePolicy::CatalogProvided,
    };
    let spec = spec(manifests, &released_catalog(manifests), policy);
    install_version(olm, &spec, "1.1.0").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn olm_v1_e2e_install_static_and_live_verdicts_agree_on_every_crd_change() {
    if !olm_v1_installed() {
        return;
    }
    let registry = Registry::start(RegistryAuth::Anonymous).await.unwrap();
    let work = tempfile::tempdir().unwrap();
    let (mut olm, manifests, out, _) = released_and_served(&registry, work.path()).await;
    let released = spec(
        &manifests,
        &released_catalog(&manifests),
        UpgradePolicy::CatalogProvided,
    );
    install_version(&mut olm, &released, "1.1.0").await;
    let mut table = vec![
        "| change | upgrade check (olm-v1) | live OLM v1 |".to_owned(),
        "|---|---|---|".to_owned(),
    ];
    let mut differ = Vec::new();
    for (i, change) in CHANGES.iter().enumerate() {
        let dir = work.path().join(format!("change-{i}"));
        variant(&out, &dir, |crd| crd.replacen(change.from, change.to, 1));
        let (code, text) = static_verdict(&dir);
        let (bundle, image) = push_variant(&dir, &registry.host(), &format!("change-{i}"));
        let catalog = case_catalog(&mut olm, &manifests, i, &image).await;
        let live = live_verdict(&mut olm, &manifests, &catalog, &bundle).await;
        let static_refuses = code == 1;
        table.push(format!(
            "| {} | {} | {} |",
            change.name,
            if static_refuses { "refuses" } else { "accepts" },
            live.as_ref()
                .err()
                .map_or("installs".to_owned(), |w| format!(
                    "refuses: {}",
                    w.replace('\n', " / ")
                ))
        ));
        if static_refuses != live.is_err() {
            differ.push(format!(
                "{}: upgrade check exit {code}\n{text}",
                change.name
            ));
        }
        if i + 1 < CHANGES.len() {
            back_to_1_1_0(&mut olm, &manifests, live.is_ok()).await;
        }
    }
    eprintln!("{}", table.join("\n"));
    assert!(
        differ.is_empty(),
        "static and live differ:\n{}",
        differ.join("\n")
    );
}
