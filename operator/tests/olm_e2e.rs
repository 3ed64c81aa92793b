//! The real OLM v0 installs every release of the reference operator's catalog (catalog/ at the
//! repository root) by Subscription and upgrades along every edge OLM takes to each channel
//! head, with the operator binary itself serving the webhooks OLM wired (conversion and
//! admission, `failurePolicy: Fail`), as the process of its pods. olmpack's static checks
//! (`bundle validate` of every bundle, `upgrade check` of every catalog edge) predicted it:
//! no error anywhere.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::olm::operator_command;
use olmpack::bundle::{load, validate};
use olmpack::catalog::{load as catalog_load, model::Model};
use olmpack::upgrade::check::graph;
use olmpack::upgrade::olm::{self, RunOptions};
use olmpack_envtest::olm::Outcome;
use olmpack_model::report::Severity;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The error findings of olmpack's static checks on the reference operator, as
/// `olmpack bundle validate bundle/` and `olmpack upgrade check --catalog catalog --bundles
/// bundle` compute them: `bundle: rule: message` lines, and the number of edges checked.
fn static_errors() -> (Vec<String>, usize) {
    let mut errors = Vec::new();
    let mut releases = BTreeMap::new();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root().join("bundle"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|dir| dir.join("manifests").is_dir())
        .collect();
    dirs.sort();
    assert_eq!(dirs.len(), 5, "{dirs:#?}");
    for dir in dirs {
        let bundle = load::load_dir(&dir).unwrap();
        let report = validate::validate(&bundle, &validate::Options::default());
        errors.extend(
            report
                .findings
                .iter()
                .filter(|f| f.severity == Severity::Error)
                .map(|f| format!("{}: {}: {}", dir.display(), f.rule, f.message)),
        );
        let release = graph::InstalledBundle::from_bundle(&bundle).unwrap();
        releases.insert(release.name.clone(), release);
    }
    let catalog = catalog_load::load_dir(&root().join("catalog")).unwrap();
    assert!(catalog.problems.is_empty());
    let (model, _) = Model::from_config(catalog.config);
    let results = graph::check_edges(&graph::edges(&model), &releases);
    for result in &results {
        errors.extend(
            result
                .findings
                .iter()
                .filter(|f| f.severity == Severity::Error)
                .map(|f| format!("{}: {}: {}", result.edge.to, f.rule, f.message)),
        );
    }
    (errors, results.len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn olm_e2e_reference_operator_installs_and_upgrades_along_every_edge() {
    // Same verdict both ways: the static checks find no error, and OLM installs every
    // release and takes every edge (asserted below).
    let (errors, edges) = static_errors();
    assert_eq!(errors, Vec::<String>::new());
    assert!(edges >= 4, "{edges} edges checked");
    let catalog = root().join("catalog");
    let cases = olm::load_cases(&catalog, Some("webapp-operator")).unwrap();
    // Every release is installed; every release but the head has an upgrade to check.
    let releases = ["0.1.0", "0.2.0", "0.3.0", "1.0.0", "1.0.1"];
    assert_eq!(cases.len(), releases.len(), "{cases:#?}");
    // Two environments for five cases: three cases run in one an earlier case used, reset.
    let steps = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let seen = steps.clone();
    let options = RunOptions {
        webhook_command: Some(operator_command()),
        jobs: 2,
        envs: Some(olm::EnvPool::default()),
        steps: olm::StepLog::new(move |line| {
            eprintln!("{line}");
            seen.lock().unwrap().push(line.to_owned());
        }),
        ..RunOptions::default()
    };
    let reports = olm::run(&catalog, &cases, &options).await.unwrap();
    let steps = steps.lock().unwrap().clone();
    let reused = steps
        .iter()
        .filter(|l| l.contains("OLM environment reused"))
        .count();
    let fresh = steps
        .iter()
        .filter(|l| l.contains("OLM environment up"))
        .count();
    assert_eq!((reused, fresh), (3, 2), "{steps:#?}");
    let table = olm::markdown(&reports);
    eprintln!("{table}");
    for report in &reports {
        assert!(
            report.failures().is_empty(),
            "{}: {:#?}\n{table}",
            report.case.from,
            report.failures()
        );
        assert!(matches!(report.install.outcome, Outcome::Succeeded { .. }));
        let examples = report
            .examples
            .as_ref()
            .and_then(|e| e.as_ref().ok())
            .expect("webhooks were served");
        assert!(
            !examples.is_empty(),
            "{} has alm-examples",
            report.case.from
        );
    }
    // OLM takes the skipRange head directly from 0.3.0 and 1.0.0.
    let to = |from: &str| {
        reports
            .iter()
            .find(|r| r.case.from == format!("webapp-operator.v{from}"))
            .and_then(|r| r.upgrade.as_ref())
            .and_then(|s| s.csv.clone())
    };
    assert_eq!(to("0.3.0").as_deref(), Some("webapp-operator.v1.0.1"));
    assert_eq!(to("1.0.0").as_deref(), Some("webapp-operator.v1.0.1"));
    assert_eq!(to("0.1.0").as_deref(), Some("webapp-operator.v0.2.0"));
    assert_eq!(to("1.0.1"), None);
}

/// OLM installs a CSV again by itself when it finds the Secret of the certificate it made for
/// the webhooks gone, as it may after an upgrade: the CSV leaves `Succeeded` (`Pending`, reason
/// `NeedsCertRotation` or `NeedsReinstall`, whichever of OLM's checks sees the Secret missing
/// first), installs again and comes back. A look taken only once OLM is already installing
/// again (as after a long examples phase) still recognises this from OLM's record of phases
/// and follows it back to `Succeeded` instead of failing the case.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn olm_e2e_a_certificate_refresh_seen_late_is_followed_back_to_succeeded() {
    use k8s_openapi::api::core::v1::Secret;
    use kube::api::{Api, DeleteParams};
    use olmpack_envtest::olm::StillSucceeded;
    use olmpack_envtest::olm::v0::resources::{self, Csv};
    use olmpack_envtest::olm::v0::{OlmEnv, OlmEnvOptions};

    let env = OlmEnv::start_with(OlmEnvOptions {
        webhook_command: Some(operator_command()),
        ..OlmEnvOptions::default()
    })
    .await
    .unwrap();
    let served = olm::inline_catalog(
        &root().join("catalog"),
        &olmpack_oci::input::Limits::default(),
    )
    .unwrap();
    let head = "webapp-operator.v1.0.1";
    let _catalog = install(&env, served.path(), head).await;

    // OLM's certificate Secret for the webhook Deployment, named after its Service.
    let secrets: Api<Secret> = Api::namespaced(env.client(), env.operator_namespace());
    secrets
        .delete("webapp-operator-service-cert", &DeleteParams::default())
        .await
        .unwrap();
    // Wait until OLM has moved past the first phase of its new install, so that the CSV's
    // current status no longer says why it left.
    let csvs: Api<Csv> =
        Api::namespaced_with(env.client(), env.operator_namespace(), &resources::csv());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut seen = Vec::new();
    let late = loop {
        let status = csvs.get(head).await.unwrap().status.unwrap_or_default();
        let now = (status.phase.clone(), status.reason.clone());
        if seen.last() != Some(&now) {
            seen.push(now);
        }
        let left = seen.iter().any(|(phase, _)| phase != "Succeeded");
        if left && status.phase != "Succeeded" && status.phase != "Pending" {
            break status;
        }
        assert!(
            !(left && status.phase == "Succeeded"),
            "the new install ended before a later phase was seen (polled every 50 ms): {seen:?}"
        );
        assert!(
            std::time::Instant::now() < deadline,
            "OLM did not start installing again within 60 s of the Secret's deletion: {seen:?}\n{}",
            env.olm_log_tail()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    eprintln!("phases seen after the Secret's deletion: {seen:?}");
    let began = late.departure();
    assert_eq!(began.phase, "Pending", "{late:#?}");
    assert!(
        ["NeedsCertRotation", "NeedsReinstall"].contains(&began.reason.as_str()),
        "{late:#?}"
    );

    match env
        .left_succeeded(head, std::time::Duration::from_secs(90))
        .await
        .unwrap()
    {
        StillSucceeded::Recovered(seen) => assert!(
            seen.starts_with(&format!(
                "ClusterServiceVersion {head} left Succeeded after its step was done: phase \
                 Pending, reason {}: {}; OLM installed it again and the CSV was Succeeded again ",
                began.reason, began.message
            )),
            "{seen}"
        ),
        other => panic!("{other:?}\n{}", env.olm_log_tail()),
    }
}

/// An environment reset after an install holds none of what that install left: the
/// operator's CRDs (whose objects the running operator gave finalizers), its webhook
/// configurations, its Deployment and namespace objects; and OLM installs the operator
/// again in it as in a fresh one.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn olm_e2e_a_reset_environment_keeps_nothing_of_the_last_install() {
    use k8s_openapi::api::admissionregistration::v1::{
        MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
    };
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::Namespace;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::api::{Api, ListParams};
    use olmpack_envtest::olm::v0::{OlmEnv, OlmEnvOptions};
    use olmpack_model::plan::InstallModeType;

    let mut env = OlmEnv::start_with(OlmEnvOptions {
        webhook_command: Some(operator_command()),
        ..OlmEnvOptions::default()
    })
    .await
    .unwrap();
    let client = env.client();
    let crd_names = || async {
        let all = names::<CustomResourceDefinition>(&client).await;
        all.into_iter()
            .filter(|n| n == "webapps.apps.olmpack.dev")
            .collect::<Vec<_>>()
    };
    let webhooks = || async {
        let mut all = names::<ValidatingWebhookConfiguration>(&client).await;
        all.extend(names::<MutatingWebhookConfiguration>(&client).await);
        all
    };
    let served = olm::inline_catalog(
        &root().join("catalog"),
        &olmpack_oci::input::Limits::default(),
    )
    .unwrap();
    let catalog = install_head(&env, served.path()).await;
    let (before_crds, before_webhooks) = (crd_names().await, webhooks().await);
    assert!(
        !before_crds.is_empty() && !before_webhooks.is_empty(),
        "{before_crds:?} {before_webhooks:?}"
    );
    let first = env.operator_namespace().to_owned();
    drop(catalog);
    env.reset(InstallModeType::AllNamespaces).await.unwrap();
    assert_eq!(crd_names().await, Vec::<String>::new());
    assert_eq!(webhooks().await, Vec::<String>::new());
    // The next install has a namespace of its own; the last one's is on its way out.
    assert_eq!(
        (first.as_str(), env.operator_namespace()),
        ("operators", "operators-2")
    );
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let old = namespaces.get_opt(&first).await.unwrap();
    assert!(old.is_none_or(|ns| ns.metadata.deletion_timestamp.is_some()));
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), env.operator_namespace());
    let fresh = deployments
        .list_metadata(&ListParams::default())
        .await
        .unwrap();
    assert!(fresh.items.is_empty(), "{fresh:?}");
    assert_eq!(env.resets(), 1);

    let _catalog = install_head(&env, served.path()).await;
    assert_eq!(crd_names().await, before_crds);
    assert_eq!(webhooks().await.len(), before_webhooks.len());
}

/// The reference operator's head installed by OLM in `env` from the catalog `served`, its
/// webhooks served and its examples created; the catalog is served until dropped.
async fn install_head(
    env: &olmpack_envtest::olm::v0::OlmEnv,
    served: &Path,
) -> olmpack_envtest::olm::v0::Catalog {
    let head = "webapp-operator.v1.0.1";
    let catalog = install(env, served, head).await;
    env.wait_for_webhooks(head, std::time::Duration::from_secs(90))
        .await
        .unwrap();
    let examples = env.create_examples(head).await.unwrap();
    assert!(
        !examples.is_empty() && examples.iter().all(|e| e.refused.is_none()),
        "{examples:#?}"
    );
    catalog
}

/// The names of every object of the cluster-scoped kind `K`.
async fn names<K>(client: &kube::Client) -> Vec<String>
where
    K: kube::Resource<DynamicType = ()> + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let api: kube::Api<K> = kube::Api::all(client.clone());
    let list = api.list_metadata(&Default::default()).await.unwrap();
    list.items
        .into_iter()
        .filter_map(|o| o.metadata.name)
        .collect()
}

/// The reference operator's release `csv` installed by OLM in `env` from the catalog
/// `served` (channel `stable`); the catalog is served until dropped.
async fn install(
    env: &olmpack_envtest::olm::v0::OlmEnv,
    served: &Path,
    csv: &str,
) -> olmpack_envtest::olm::v0::Catalog {
    let catalog = env.serve_catalog("olmpack", served).await.unwrap();
    env.subscribe(&catalog, "webapp-operator", "stable", csv)
        .await
        .unwrap();
    let step = env
        .next_step("webapp-operator", olmpack_envtest::olm::Timeouts::default())
        .await
        .unwrap();
    assert!(
        matches!(step.outcome, Outcome::Succeeded { .. }),
        "{:?}\n{}",
        step.outcome,
        env.olm_log_tail()
    );
    catalog
}
