//! Real operators we did not write, under the real OLM v0: packages of the community-operators
//! corpus (`../shared/corpus`, bundle format), chosen for variety (install modes, namespaced
//! examples, extra objects, webhooks, skipRange, v1beta1 CRDs, ServiceMonitors). Each package's
//! newest two bundle directories become a catalog the way a user makes one
//! (`olmpack catalog template` with an `olm.template.basic` template: the newer replaces the
//! older, with the `olm.skipRange` its CSV declares), and `upgrade olm` installs each and takes
//! the upgrade between them. A package that requires another's API has that package in its
//! catalog too ([`PROVIDERS`]), so OLM's resolver can install it.
//!
//! Every case runs twice: on plain Kubernetes and on the OpenShift profile (`--platform
//! openshift`: OpenShift's API kinds, service-ca, a single-node OpenShift's node roles).
//!
//! `fixtures/olm_e2e_corpus/verdicts.tsv` holds, per case and platform, the verdict OLM gave,
//! who a failure is blamed on, a piece of OLM's (or the apiserver's) own words, and why. The
//! test fails when olmpack's verdict differs, when a failure is blamed on another party, or
//! when the quoted words are missing; a case olmpack runs that the table lacks fails it too.

mod corpus_catalog;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use corpus_catalog::{PACKAGES, render_package};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use olmpack::upgrade::olm::platform::Platform;
use olmpack::upgrade::olm::{self, CaseReport, EnvPool, RunOptions, StepLog};
use olmpack_envtest::olm::Timeouts;
use olmpack_testkit::corpus::{COMMUNITY_OPERATORS, require};

const TABLE: &str = include_str!("fixtures/olm_e2e_corpus/verdicts.tsv");

/// Packages whose bundles need another package's API (OLM's resolver installs the provider
/// from the same catalog): that package goes into the catalog too, as it would in any real
/// catalog; its own cases run under its own entry of [`PACKAGES`].
const PROVIDERS: [(&str, &str); 1] = [(
    "community-operators/node-healthcheck-operator",
    "community-operators/poison-pill-operator",
)];

/// One expectation of the table: a case on one platform.
#[derive(Debug)]
struct Expected {
    verdict: String,
    party: String,
    quote: String,
}

/// The platforms every case runs on, in the table's column order.
fn platforms() -> [Platform; 2] {
    [Platform::kubernetes(), Platform::openshift()]
}

/// The rows of the table (lines starting with `#` skipped), each checked to have its nine
/// columns (package, case, why, then verdict, party and quote per platform) and, unless it
/// passes on both, its explanation.
fn rows() -> Vec<Vec<&'static str>> {
    TABLE
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|line| {
            let cols: Vec<&str> = line.split('\t').collect();
            assert_eq!(cols.len(), 9, "verdicts.tsv: a row needs 9 columns: {line}");
            assert!(
                (cols[3] == "pass" && cols[6] == "pass") || !cols[2].trim().is_empty(),
                "verdicts.tsv: every non-pass needs its explanation: {line}"
            );
            cols
        })
        .collect()
}

/// The table: (platform, package directory) → case name → expectation.
fn table() -> BTreeMap<(String, String), BTreeMap<String, Expected>> {
    let mut out: BTreeMap<(String, String), BTreeMap<String, Expected>> = BTreeMap::new();
    for cols in rows() {
        for (i, platform) in platforms().iter().enumerate() {
            let at = 3 + 3 * i;
            out.entry((platform.to_string(), cols[0].to_owned()))
                .or_default()
                .insert(
                    cols[1].to_owned(),
                    Expected {
                        verdict: cols[at].to_owned(),
                        party: cols[at + 1].to_owned(),
                        quote: cols[at + 2].to_owned(),
                    },
                );
        }
    }
    out
}

/// The catalog of a package directory (and of the packages providing APIs it requires,
/// [`PROVIDERS`]); returns the catalog directory and the package name.
fn catalog(corpus: &Path, package: &str, out: &Path) -> (PathBuf, String) {
    let dir = out.join("catalog");
    std::fs::create_dir_all(&dir).unwrap();
    for (_, provider) in PROVIDERS.iter().filter(|(p, _)| *p == package) {
        render_package(&corpus.join(provider), 2, out, &dir);
    }
    let name = render_package(&corpus.join(package), 2, out, &dir);
    (dir, name)
}

/// Kinds the packages ship whose CRDs come from another operator (prometheus-operator): the
/// cluster has them before OLM runs, as `--cluster-crd NAME` gives them.
fn monitoring_crds() -> Vec<CustomResourceDefinition> {
    [
        "servicemonitors.monitoring.coreos.com",
        "prometheusrules.monitoring.coreos.com",
    ]
    .into_iter()
    .map(|name| olmpack::cluster_crds::by_name(name).expect("olmpack carries it"))
    .collect()
}

/// The verdict of a report in the table's words: `pass`, `pass-not-run` or `fail`, and the
/// party of the first failure.
fn verdict(report: &CaseReport) -> (String, String, String) {
    let failures = report.failures();
    match failures.first() {
        Some(f) => {
            let all: Vec<String> = failures.iter().map(|f| f.message.clone()).collect();
            ("fail".into(), olm::blamed(f).into(), all.join("; "))
        }
        None if !report.not_run().is_empty() => (
            "pass-not-run".into(),
            "-".into(),
            report.not_run().join("; "),
        ),
        None => ("pass".into(), "-".into(), String::new()),
    }
}

/// How cases run on `platform`: the kinds another operator would have installed (Kubernetes:
/// prometheus-operator's; OpenShift: its own and its monitoring stack's), service-ca and node
/// roles as the CLI's `--platform` sets them.
fn options(platform: Platform, envs: &EnvPool) -> RunOptions {
    let cluster_crds = match platform {
        Platform::Kubernetes { .. } => monitoring_crds(),
        Platform::OpenShift { .. } => platform
            .cluster_crds(&olmpack_oci::input::Limits::default())
            .expect("the OpenShift CRDs are installed (cargo xtask setup)"),
    };
    RunOptions {
        timeouts: Timeouts {
            // The slowest step that succeeds takes about 50 s here, three cases at once, but
            // 70 s in CI beside three other test binaries: a verdict must not depend on the
            // load. Cases whose pods never start (a node selector no node has, a Secret only
            // OpenShift creates) end as stuck after `stuck`, not at this timeout.
            step: Duration::from_secs(240),
            // OLM refuses with the same words after 20 s of retries as after its default
            // minute (every API is served from the start here); eight cases fail that way.
            install_plan_retry: Duration::from_secs(20),
            ..Timeouts::default()
        },
        cluster_crds,
        platform,
        steps: StepLog::new(|line| eprintln!("{line}")),
        // Each environment serves one case after another, reset in between: the verdicts
        // below are those of fresh environments (the table was recorded with one per case).
        envs: Some(envs.clone()),
        ..RunOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn olm_e2e_corpus_verdicts_are_olms() {
    let Some(corpus) = require(COMMUNITY_OPERATORS, "olm_e2e_corpus_verdicts_are_olms") else {
        return;
    };
    let expected = table();
    let work = tempfile::Builder::new()
        .prefix("olmpack-olm-corpus-")
        .tempdir()
        .unwrap();
    let mut cases = Vec::new();
    for (i, package) in PACKAGES.iter().enumerate() {
        let out = work.path().join(i.to_string());
        std::fs::create_dir_all(&out).unwrap();
        let (dir, name) = catalog(&corpus, package, &out);
        for case in olm::load_cases(&dir, Some(&name)).unwrap() {
            cases.push((package.to_string(), dir.clone(), case));
        }
    }
    let envs = EnvPool::default();
    // Three cases at once on two cores: most of a case is waiting on OLM (a third of them
    // until the step timeout); the slowest step that succeeds took 50 s so (37 s two at a time).
    let semaphore = std::sync::Arc::new(tokio::sync::Semaphore::new(3));
    let mut tasks = Vec::new();
    for platform in platforms() {
        let options = options(platform, &envs);
        for (package, dir, case) in cases.clone() {
            let (semaphore, options) = (semaphore.clone(), options.clone());
            tasks.push(tokio::spawn(async move {
                let _permit = semaphore.acquire_owned().await;
                let report = olm::v0::run_case(&dir, case, &options).await.unwrap();
                (platform, package, report)
            }));
        }
    }
    let mut problems = Vec::new();
    let mut seen = 0;
    let mut gates = Vec::new();
    for task in tasks {
        let (platform, package, report) = task.await.unwrap();
        gates.extend(
            report
                .platform_gates
                .iter()
                .map(|g| format!("{platform}: {g}")),
        );
        let (got, party, words) = verdict(&report);
        let name = report.name();
        let line = format!("{platform}\t{package}\t{name}\t{got}\t{party}\t{words}");
        eprintln!("{line}");
        let Some(want) = expected
            .get(&(platform.to_string(), package.clone()))
            .and_then(|p| p.get(&name))
        else {
            problems.push(format!("not in verdicts.tsv: {line}"));
            continue;
        };
        seen += 1;
        let quoted = want.quote == "-" || words.contains(&want.quote);
        if want.verdict != got || want.party != party || !quoted {
            problems.push(format!("expected {want:?}, got: {line}"));
        }
    }
    let cells: usize = expected.values().map(BTreeMap::len).sum();
    assert_eq!(
        seen, cells,
        "every row of verdicts.tsv must be run on every platform: {problems:#?}"
    );
    assert!(problems.is_empty(), "{problems:#?}");
    // Of the bundles installed, only volume-expander-operator 0.1.9 declares an
    // olm.maxOpenShiftVersion (4.8, set by the community pipeline for APIs Kubernetes 1.22
    // removed): OpenShift's OLM would block the cluster's next minor upgrade while it is
    // installed; on Kubernetes nothing reads it.
    let Platform::OpenShift { minor } = Platform::openshift() else {
        unreachable!()
    };
    let os = Platform::openshift();
    assert_eq!(
        gates,
        [format!(
            "{os}: OLM on {os} blocks upgrades of the cluster to 4.{} while volume-expander-operator.v0.1.9 is installed: its olm.maxOpenShiftVersion is 4.8",
            minor + 1
        )]
    );
}

/// The table as docs/upgrade-olm.md shows it (between its `olm-corpus` markers).
fn readme_table() -> String {
    let mut out = String::from(
        "| package | case | Kubernetes | OpenShift | why |\n| --- | --- | --- | --- | --- |\n",
    );
    let shown = |verdict: &str, party: &str| {
        let verdict = match verdict {
            "pass-not-run" => "pass, webhook checks not run",
            other => other,
        };
        match party {
            "-" => verdict.to_owned(),
            party => format!("{verdict} ({party})"),
        }
    };
    for cols in rows() {
        let package = cols[0].rsplit('/').next().unwrap_or(cols[0]);
        let why = cols[2].replace('|', "\\|");
        out.push_str(&format!(
            "| {package} | {} | {} | {} | {why} |\n",
            cols[1],
            shown(cols[3], cols[4]),
            shown(cols[6], cols[7]),
        ));
    }
    out
}

#[test]
fn olm_e2e_corpus_docs_show_the_table() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/upgrade-olm.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let (begin, end) = ("<!-- olm-corpus:begin -->\n", "<!-- olm-corpus:end -->");
    let shown = readme
        .split_once(begin)
        .and_then(|(_, rest)| rest.split_once(end))
        .map(|(table, _)| table)
        .expect("docs/upgrade-olm.md has the olm-corpus markers");
    let want = readme_table();
    assert!(
        shown == want,
        "docs/upgrade-olm.md's corpus table differs from verdicts.tsv; between the markers it should read:\n{want}"
    );
}
