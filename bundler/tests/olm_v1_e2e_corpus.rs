//! Real operators we did not write, under the real OLM v1 (catalogd and operator-controller,
//! `upgrade olm --olm v1`): the 22 community-operators corpus packages of the OLM v0 corpus
//! suite (`olm_e2e_corpus`), their newest two bundle directories each made into one catalog the
//! same way, every case installed by ClusterExtension and upgraded to OLM v1's successor.
//!
//! `fixtures/olm_v1_e2e_corpus/verdicts.tsv` holds, per case, the verdict OLM v1 gave, a piece
//! of its own words, and why; the test fails when olmpack's verdict or OLM v1's words differ,
//! and when a case the table lacks is run. It also holds the static answer to the live one:
//! on every upgrade OLM v1 ran, `upgrade check --consumer olm-v1` refuses exactly the edges the
//! live OLM v1 refused. docs/upgrade-olm.md's table of OLM v0's and OLM v1's verdicts side by side is
//! checked against both tables.

mod corpus_catalog;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use corpus_catalog::{PACKAGES, render_package};
use olmpack::upgrade::olm::{self, CaseReport, OlmVersion, RunOptions, StepLog};
use olmpack_envtest::olm::Outcome;
use olmpack_testkit::corpus::{COMMUNITY_OPERATORS, require};

const TABLE: &str = include_str!("fixtures/olm_v1_e2e_corpus/verdicts.tsv");
const V0_TABLE: &str = include_str!("fixtures/olm_e2e_corpus/verdicts.tsv");

/// The rows of a table (lines starting with `#` skipped), split at tabs.
fn rows(table: &'static str) -> Vec<Vec<&'static str>> {
    table
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|line| line.split('\t').collect())
        .collect()
}

/// This table: (package directory, case name without " on OLM v1") → (verdict, quote, why).
fn table() -> BTreeMap<(String, String), (String, String, String)> {
    rows(TABLE)
        .into_iter()
        .map(|cols| {
            assert_eq!(
                cols.len(),
                5,
                "verdicts.tsv: a row needs 5 columns: {cols:?}"
            );
            assert!(
                cols[2] == "pass" || !cols[4].trim().is_empty(),
                "verdicts.tsv: every non-pass needs its explanation: {cols:?}"
            );
            let key = (cols[0].to_owned(), cols[1].to_owned());
            (
                key,
                (cols[2].to_owned(), cols[3].to_owned(), cols[4].to_owned()),
            )
        })
        .collect()
}

/// The verdict of a report in the table's words (`pass`, `pass-not-run`, `not-run`, `fail`)
/// and the words that go with it.
fn verdict(report: &CaseReport) -> (String, String) {
    let failures = report.failures();
    let not_run = report.not_run();
    if let Some(f) = failures.first() {
        let all: Vec<String> = failures.iter().map(|f| f.message.clone()).collect();
        return (format!("fail-{}", olm::blamed(f)), all.join("; "));
    }
    let install_ran = !matches!(report.install.outcome, Outcome::Unfinished { .. });
    match (install_ran, not_run.is_empty()) {
        (false, _) => (
            "not-run".into(),
            report.error().unwrap_or_default().to_owned(),
        ),
        (true, false) => ("pass-not-run".into(), not_run.join("; ")),
        // What OLM v1 said of the install (the gate an OwnNamespace install went through).
        (true, true) => ("pass".into(), report.install.observed.join("; ")),
    }
}

/// One catalog of every corpus package (the OLM v0 suite's catalogs, side by side), and a
/// directory of links to their bundle directories (what `upgrade check --bundles` reads);
/// returns the catalog directory and each package's corpus directory by package name.
fn catalog(corpus: &Path, work: &Path) -> (std::path::PathBuf, BTreeMap<String, String>) {
    let (dir, bundles) = (work.join("catalog"), work.join("bundles"));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(&bundles).unwrap();
    let mut package_dirs = BTreeMap::new();
    for (i, package) in PACKAGES.iter().enumerate() {
        let name = render_package(&corpus.join(package), 2, work, &dir);
        package_dirs.insert(name, package.to_string());
        for entry in std::fs::read_dir(corpus.join(package)).unwrap() {
            let path = entry.unwrap().path();
            if path.join("manifests").is_dir() {
                let link = format!("{i}-{}", path.file_name().unwrap().to_string_lossy());
                std::os::unix::fs::symlink(&path, bundles.join(link)).unwrap();
            }
        }
    }
    (dir, package_dirs)
}

/// `(from, to)` → whether `upgrade check --consumer olm-v1` says OLM v1 refuses the edge.
fn static_verdicts(catalog: &Path) -> BTreeMap<(String, String), bool> {
    let out = Command::new(env!("CARGO_BIN_EXE_olmpack"))
        .args([
            "upgrade",
            "check",
            "--consumer",
            "olm-v1",
            "--output",
            "json",
            "--catalog",
        ])
        .arg(catalog)
        .arg("--bundles")
        .arg(catalog.with_file_name("bundles"))
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "upgrade check: no JSON report ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let edges = report["edges"].as_array().cloned().unwrap_or_default();
    edges
        .iter()
        .map(|e| {
            let key = (
                e["from"].as_str().unwrap_or_default().to_owned(),
                e["to"].as_str().unwrap_or_default().to_owned(),
            );
            (key, e["verdicts"]["olm-v1"] == "refuses")
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn olm_v1_e2e_corpus_verdicts_are_olm_v1s_and_upgrade_check_agrees() {
    let test = "olm_v1_e2e_corpus_verdicts_are_olm_v1s_and_upgrade_check_agrees";
    let Some(corpus) = require(COMMUNITY_OPERATORS, test) else {
        return;
    };
    let work = tempfile::Builder::new()
        .prefix("olmpack-olmv1-corpus-")
        .tempdir()
        .unwrap();
    let (catalog, package_dirs) = catalog(&corpus, work.path());
    let limits = olmpack_oci::input::Limits::default();
    let cases = olm::load_cases_of(OlmVersion::V1, &catalog, None, &[], &limits).unwrap();
    let options = RunOptions {
        olm: OlmVersion::V1,
        steps: StepLog::new(|line| eprintln!("{line}")),
        ..RunOptions::default()
    };
    let reports = olm::run(&catalog, &cases, &options).await.unwrap();
    let expected = table();
    for report in &reports {
        let (got, words) = verdict(report);
        let package = &package_dirs[&report.case.package];
        eprintln!("{package}\t{}\t{got}\t{words}", report.name());
    }
    let statics = static_verdicts(&catalog);
    // Bundles OLM v1 refuses to install on their own (APIs the cluster does not serve, a
    // dependency it does not support): an upgrade into one is refused for the bundle, not for
    // the upgrade, which is what `upgrade check` judges; `bundle validate` says why.
    let uninstallable: Vec<&str> = reports
        .iter()
        .filter(|r| matches!(r.install.outcome, Outcome::Refused { .. }))
        .map(|r| r.case.from.as_str())
        .collect();
    let mut problems = Vec::new();
    let mut seen = 0;
    let mut compared = 0;
    for report in &reports {
        let package = package_dirs[&report.case.package].clone();
        let name = report.name().trim_end_matches(" on OLM v1").to_owned();
        let (got, words) = verdict(report);
        let line = format!("{package}\t{name}\t{got}\t{words}");
        match expected.get(&(package.clone(), name.clone())) {
            None => problems.push(format!("not in verdicts.tsv: {line}")),
            Some((want, quote, _)) => {
                seen += 1;
                let quoted = quote == "-" || words.contains(quote.as_str());
                if *want != got || !quoted {
                    problems.push(format!("expected {want} with {quote:?}, got: {line}"));
                }
            }
        }
        // Static = live wherever OLM v1 ran the upgrade.
        let (Some(to), Some(upgrade)) = (report.case.to(), &report.upgrade) else {
            continue;
        };
        if uninstallable.contains(&to) {
            eprintln!(
                "not compared: {} → {to}: OLM v1 does not install {to} on its own",
                report.case.from
            );
            continue;
        }
        let live = match &upgrade.outcome {
            Outcome::Succeeded { .. } => false,
            Outcome::Refused { .. } => true,
            _ => continue,
        };
        compared += 1;
        let edge = (report.case.from.clone(), to.to_owned());
        match statics.get(&edge) {
            Some(predicted) if *predicted == live => {}
            other => problems.push(format!(
                "{} → {to}: OLM v1 {} it, upgrade check --consumer olm-v1 says {other:?} (refuses?)",
                report.case.from,
                if live { "refused" } else { "took" }
            )),
        }
    }
    eprintln!(
        "olm v1 corpus: {} cases, {compared} upgrades compared with upgrade check",
        reports.len()
    );
    assert_eq!(
        seen,
        expected.len(),
        "every row of verdicts.tsv must run: {problems:#?}"
    );
    assert!(
        compared > 0,
        "no upgrade ran under OLM v1: nothing held static = live"
    );
    assert!(problems.is_empty(), "{problems:#?}");
}

/// docs/upgrade-olm.md's table of OLM v0's and OLM v1's verdicts (between its `olm-v0-v1` markers): every
/// case of this table beside the same case of the OLM v0 suite on Kubernetes.
fn readme_table() -> String {
    let v0: BTreeMap<(&str, &str), &str> = rows(V0_TABLE)
        .into_iter()
        .map(|cols| ((cols[0], cols[1]), cols[3]))
        .collect();
    let mut out = String::from(
        "| package | case | OLM v0 | OLM v1 | why (OLM v1) |\n| --- | --- | --- | --- | --- |\n",
    );
    for cols in rows(TABLE) {
        let package = cols[0].rsplit('/').next().unwrap_or(cols[0]);
        let v0 = v0
            .get(&(cols[0], cols[1]))
            .copied()
            .unwrap_or("(no v0 case)");
        let why = cols[4].replace('|', "\\|");
        out.push_str(&format!(
            "| {package} | {} | {v0} | {} | {why} |\n",
            cols[1], cols[2]
        ));
    }
    out
}

#[test]
fn olm_v1_e2e_corpus_docs_show_v0_beside_v1() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/upgrade-olm.md");
    let readme = std::fs::read_to_string(&path).unwrap();
    let (begin, end) = ("<!-- olm-v0-v1:begin -->\n", "<!-- olm-v0-v1:end -->");
    let shown = readme
        .split_once(begin)
        .and_then(|(_, rest)| rest.split_once(end))
        .map(|(table, _)| table)
        .expect("docs/upgrade-olm.md has the olm-v0-v1 markers");
    let want = readme_table();
    assert!(
        shown == want,
        "docs/upgrade-olm.md's OLM v0/v1 table differs from the verdict tables; between the markers it should read:\n{want}"
    );
}
