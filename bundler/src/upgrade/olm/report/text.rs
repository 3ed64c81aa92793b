//! What `upgrade olm` says in text besides its table: one line per thing worth saying about
//! a case (`LEVEL[TAG]: CASE: TEXT`, on stderr), the closing count and the exit code.

use olmpack_model::upgrade::{self, Verdict};

use super::{CaseReport, blamed};

/// `LEVEL[TAG]: CASE: TEXT`, as every line about one case reads.
fn line(level: &str, tag: &str, case: &str, text: &str) -> String {
    format!("{level}[{tag}]: {case}: {text}")
}

/// Every line about the cases, in the order said: each failure (`error[…]`, tagged with who
/// is blamed), the checks not run of cases that did not fail (`warning[not-run]`), the
/// platform's gates (`warning[platform]`), what OLM was seen doing and the calls retried
/// (`note[olm]`, `note[retried]`), and the cases the test environment left unfinished
/// (`error[environment]`).
pub fn lines(reports: &[CaseReport]) -> Vec<String> {
    let outcomes: Vec<upgrade::Outcome> = reports.iter().map(CaseReport::outcome).collect();
    let mut out = Vec::new();
    for o in &outcomes {
        for f in &o.findings {
            out.push(line("error", blamed(f), &o.name, &f.message));
        }
    }
    for o in outcomes.iter().filter(|o| o.findings.is_empty()) {
        for why in &o.not_run {
            out.push(line("warning", "not-run", &o.name, why));
        }
    }
    for r in reports {
        for gate in &r.platform_gates {
            out.push(line("warning", "platform", &r.name(), gate));
        }
    }
    for r in reports {
        let steps = std::iter::once(&r.install).chain(r.upgrade.as_ref());
        for seen in steps.flat_map(|step| &step.observed) {
            out.push(line("note", "olm", &r.name(), seen));
        }
        for call in &r.retried {
            out.push(line("note", "retried", &r.name(), call));
        }
    }
    for o in outcomes.iter().filter(|o| o.verdict == Verdict::NotRun) {
        let why = o.error.as_deref().unwrap_or_default();
        let text = format!("not finished: {why}");
        out.push(line("error", "environment", &o.name, &text));
    }
    out
}

/// The closing count: how many cases passed, failed, passed with checks not run, and were
/// not finished.
pub fn summary(reports: &[CaseReport]) -> String {
    let verdicts: Vec<(Verdict, bool)> = reports
        .iter()
        .map(|r| (r.verdict(), r.not_run().is_empty()))
        .collect();
    let count = |keep: fn(&(Verdict, bool)) -> bool| verdicts.iter().filter(|v| keep(v)).count();
    let passed = count(|(v, all_ran)| *v == Verdict::Passed && *all_ran);
    let failing = count(|(v, _)| v.failed());
    let unfinished = count(|(v, _)| *v == Verdict::NotRun);
    format!(
        "{} case(s): {passed} passed, {failing} failed, {} passed with checks NOT RUN, {unfinished} not finished (the test environment failed)",
        reports.len(),
        reports.len() - passed - failing - unfinished,
    )
}

/// The exit code: 1 when a case failed, else 2 when the test environment left one
/// unfinished, else 0. A verdict about the operator (1) outweighs the environment failing
/// elsewhere (2).
pub fn exit_code(reports: &[CaseReport]) -> u8 {
    let failed = reports.iter().any(|r| !r.failures().is_empty());
    let unfinished = reports.iter().any(|r| r.verdict() == Verdict::NotRun);
    match (failed, unfinished) {
        (false, false) => 0,
        (false, true) => 2,
        (true, _) => 1,
    }
}
