//! What a case found, who is to blame for each failure, and the case reports as Markdown,
//! JUnit and text ([`text`]).

pub mod text;

use std::fmt::Write as _;

use olmpack_envtest::olm::{Example, InstallStep, Installed, Outcome};
use serde::Serialize;

use super::cases::{Case, OlmVersion};
use olmpack_model::report::{Consumer, Finding, markdown_escape};
use olmpack_model::upgrade::{self, Edge, Verdict};

/// What happened in one case.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CaseReport {
    /// The case that was run.
    pub case: Case,
    /// Outcome of the install of `from`.
    pub install: InstallStep,
    /// Seconds from `opm serve` start to the installed CSV's final phase.
    pub install_seconds: f64,
    /// The `alm-examples` objects created after the install (none when it has none);
    /// `Err(reason)` when the example checks could not run; `None` when they were never
    /// attempted (the install did not succeed, or the test environment failed first).
    pub examples: Option<Result<Vec<Example>, String>>,
    /// Outcome of the upgrade, when the case has one and the install succeeded.
    pub upgrade: Option<InstallStep>,
    /// Per example created before the upgrade: `Err(message)` when unreadable after it.
    pub examples_after: Vec<Result<(), String>>,
    /// Why the examples were not read back after the upgrade, when they could not be (the
    /// conversion webhook they need is not served).
    pub reads_not_run: Option<String>,
    /// OLM's status of the last CSV when it left `Succeeded` after its step was done.
    pub left_succeeded: Option<String>,
    /// The CRDs and Deployments in the cluster after the last step that succeeded.
    pub installed: Installed,
    /// Wall-clock seconds the whole case took.
    pub seconds: f64,
    /// Calls to the test control plane's apiserver that failed transiently and were
    /// retried: `ACTION: CAUSE (retried N×)`.
    pub retried: Vec<String>,
    /// What the platform's OLM does beyond the install about a bundle the case installed
    /// (on OpenShift: cluster upgrades blocked by its `olm.maxOpenShiftVersion`); warnings,
    /// not failures.
    pub platform_gates: Vec<String>,
    /// The operator's pods that would crash-loop: the webhook command, started as the
    /// Deployment's container, exited again after every restart (Deployment, container and
    /// its last output).
    pub crash_loops: Vec<String>,
    /// Why the case could not be finished: the test environment failed (it did not start,
    /// or its apiserver could not be reached even after retries). The steps it interrupted
    /// are [`Outcome::Unfinished`]; what was found before stands.
    pub environment: Option<String>,
}

/// The rule family of findings that blame OLM: it refused a step, did not finish it in time,
/// or proposed another upgrade; the message is OLM's (a status condition, phase or reason).
pub const OLM_RULES: &str = "olm";
/// The rule family of findings that blame an example object of the CSV's `alm-examples`: it
/// was refused (by the apiserver's schema or the operator's webhooks) or could not be read
/// back after the upgrade.
pub const EXAMPLE_RULES: &str = "examples";

/// The rule of a case whose operator pod would crash-loop (blames the bundle: its
/// Deployment's container cannot run).
pub const CRASH_LOOP_RULE: &str = "pod/crash-loop";

/// Who a finding of a case blames, as `error[…]` lines and JUnit failure types name it: its
/// rule's family, [`OLM_RULES`] or [`EXAMPLE_RULES`].
pub fn blamed(finding: &Finding) -> &str {
    upgrade::outcome::family(finding)
}

impl CaseReport {
    /// The report of `case` before anything ran: its install unfinished, nothing found.
    pub fn new(case: Case) -> Self {
        Self {
            case,
            install: InstallStep::unfinished(),
            install_seconds: 0.0,
            examples: None,
            upgrade: None,
            examples_after: Vec::new(),
            reads_not_run: None,
            left_succeeded: None,
            installed: Installed::default(),
            seconds: 0.0,
            retried: Vec::new(),
            platform_gates: Vec::new(),
            crash_loops: Vec::new(),
            environment: None,
        }
    }

    /// Why the case failed, as error findings naming who refuses (OLM v0 or v1 for
    /// [`OLM_RULES`], kube-apiserver for [`EXAMPLE_RULES`]); empty when it passed. A step the
    /// test environment interrupted ([`Self::environment`]) is no failure: its verdict is
    /// unknown.
    pub fn failures(&self) -> Vec<Finding> {
        let olm = |rule: &str, message: String| {
            Finding::error(format!("{OLM_RULES}/{rule}"), message)
                .consumer(self.case.olm.consumer())
        };
        let examples = |rule: &str, message: String| {
            Finding::error(format!("{EXAMPLE_RULES}/{rule}"), message)
                .consumer(Consumer::KubeApiserver)
        };
        let crashed = self.crash_loops.iter().map(|words| {
            Finding::error(CRASH_LOOP_RULE, words.clone()).consumer(Consumer::PodCannotStart)
        });
        if !self.crash_loops.is_empty() {
            return crashed.collect();
        }
        if matches!(self.install.outcome, Outcome::Unfinished { .. }) {
            return Vec::new();
        }
        if !matches!(self.install.outcome, Outcome::Succeeded { .. }) {
            let what = describe(&self.install.outcome);
            return vec![olm(
                "install-failed",
                format!("install of {}: {what}", self.case.from),
            )];
        }
        let mut out = Vec::new();
        if let Some(Ok(list)) = &self.examples {
            for e in list.iter().filter(|e| e.refused.is_some()) {
                out.push(examples(
                    "refused",
                    format!(
                        "example {} refused: {}",
                        e.label(),
                        e.refused.as_deref().unwrap_or_default()
                    ),
                ));
            }
        }
        match (self.case.to(), &self.upgrade) {
            (Some(to), Some(step)) => {
                if let Some(other) = self.other_upgrade(step, to) {
                    out.push(olm("other-upgrade", other));
                }
                if !matches!(
                    step.outcome,
                    Outcome::Succeeded { .. } | Outcome::Unfinished { .. }
                ) {
                    let what = describe(&step.outcome);
                    out.push(olm("upgrade-failed", format!("upgrade to {to}: {what}")));
                }
            }
            (Some(to), None) if self.environment.is_none() => {
                out.push(olm(
                    "upgrade-not-run",
                    format!("upgrade to {to} did not run"),
                ));
            }
            _ => {}
        }
        for e in self.examples_after.iter().filter_map(|r| r.as_ref().err()) {
            out.push(examples(
                "unreadable-after-upgrade",
                format!("example unreadable after the upgrade: {e}"),
            ));
        }
        if let Some(left) = &self.left_succeeded {
            out.push(olm("left-succeeded", left.clone()));
        }
        out
    }

    /// What OLM did in place of the upgrade to `to`, when `step` did not end at `to`. Under
    /// OLM v1 olmpack pins the version and OLM v1 proposes nothing: a step that installed no
    /// bundle is told by its outcome alone (what OLM v1 said), never as "no upgrade".
    fn other_upgrade(&self, step: &InstallStep, to: &str) -> Option<String> {
        match (self.case.olm, step.csv.as_deref()) {
            (_, Some(csv)) if csv == to => None,
            (OlmVersion::V1, None) => None,
            (OlmVersion::V1, Some(csv)) => Some(format!("OLM v1 installed {csv} instead of {to}")),
            (OlmVersion::V0, csv) => Some(format!(
                "OLM proposed {} instead of {to}",
                csv.unwrap_or("no upgrade")
            )),
        }
    }

    /// The case's verdict: refused when OLM refused a step or an example object was
    /// refused, failed for any other failure, not run when the test environment failed
    /// before anything failed, else passed (the checks that could not run are in
    /// [`Self::not_run`]).
    pub fn verdict(&self) -> Verdict {
        if self.failures().is_empty() {
            return match self.error() {
                Some(_) => Verdict::NotRun,
                None => Verdict::Passed,
            };
        }
        let refused = |step: &InstallStep| matches!(step.outcome, Outcome::Refused { .. });
        let example_refused =
            matches!(&self.examples, Some(Ok(list)) if list.iter().any(|e| e.refused.is_some()));
        if refused(&self.install) || self.upgrade.as_ref().is_some_and(refused) || example_refused {
            Verdict::Refused
        } else {
            Verdict::Failed
        }
    }

    /// The checks of this case that could not run, each with the reason.
    pub fn not_run(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(Err(why)) = &self.examples {
            out.push(format!("example checks: {why}"));
        }
        if let Some(why) = &self.reads_not_run {
            out.push(format!("examples read after the upgrade: {why}"));
        }
        out
    }

    /// Why the case was not finished, when the test environment failed (not a verdict).
    pub fn error(&self) -> Option<&str> {
        self.environment.as_deref()
    }

    /// The case's name in reports ([`super::Case::name`]).
    pub fn name(&self) -> String {
        self.case.name()
    }

    /// The case as the upgrade answers' one outcome: its failures (quoted by who is blamed,
    /// the first typing the failure), the test environment's error, the checks not run.
    pub fn outcome(&self) -> upgrade::Outcome {
        let findings = self.failures();
        upgrade::Outcome {
            group: self.case.package.clone(),
            name: self.name(),
            edge: self.case.upgrade.clone(),
            verdict: self.verdict(),
            blamed: findings.first().map_or(OLM_RULES, blamed).to_owned(),
            findings,
            quote: upgrade::Quote::Family,
            not_run: self.not_run(),
            error: self.error().map(str::to_owned),
            time: Some(format!("{:.1}", self.seconds)),
        }
    }
}

/// One line for an outcome, in OLM's words.
pub fn describe(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Succeeded { csv } => format!("{csv} Succeeded"),
        Outcome::Refused {
            by,
            reason,
            message,
        } => {
            format!("refused by {by}: {reason}: {message}")
        }
        Outcome::TimedOut {
            waiting_for,
            phase,
            reason,
            message,
            pods,
        } => {
            let mut s = format!("timed out waiting for {waiting_for}");
            if !phase.is_empty() {
                let _ = write!(s, ": phase {phase}");
            }
            if !reason.is_empty() {
                let _ = write!(s, ", reason {reason}");
            }
            if !message.is_empty() {
                let _ = write!(s, ": {message}");
            }
            for p in pods {
                let _ = write!(s, "; pod {p}");
            }
            s
        }
        Outcome::Unfinished { why } if why.is_empty() => "not finished".to_owned(),
        Outcome::Unfinished { why } => format!("not finished: {why}"),
    }
}

/// A Markdown table of the reports: one row per case, each cell escaped
/// ([`markdown_escape`]: OLM's words may hold line breaks and `|`).
pub fn markdown(reports: &[CaseReport]) -> String {
    let mut out = String::from(
        "| channels | install mode | install | upgrade (OLM's choice) | examples | result |\n| --- | --- | --- | --- | --- | --- |\n",
    );
    for r in reports {
        let install = match &r.install.outcome {
            Outcome::Succeeded { .. } => {
                format!("{} installed ({:.0} s)", r.case.from, r.install_seconds)
            }
            other => format!("{}: {}", r.case.from, describe(other)),
        };
        let cells = [
            r.case.channels.join(", "),
            r.case.install_mode.to_string(),
            install,
            upgrade_cell(r),
            examples_cell(r),
            result_cell(r).to_owned(),
        ];
        let cells: Vec<String> = cells.iter().map(|c| markdown_escape(c)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out
}

fn upgrade_cell(r: &CaseReport) -> String {
    match (&r.case.upgrade, &r.upgrade) {
        (None, _) => "— (channel head)".to_owned(),
        (Some(edge), None) => format!("→ {} ({}) not run", edge.to, edges(edge)),
        (Some(edge), Some(step)) => match &step.outcome {
            Outcome::Succeeded { csv } => format!("→ {csv} ({}) upgraded", edges(edge)),
            other => format!(
                "→ {} ({}): {}",
                step.csv.as_deref().unwrap_or("none"),
                edges(edge),
                describe(other)
            ),
        },
    }
}

fn examples_cell(r: &CaseReport) -> String {
    let list = match &r.examples {
        None if matches!(r.install.outcome, Outcome::Succeeded { .. }) => {
            return "not run (the test environment failed first)".to_owned();
        }
        None => return "not run (the install did not succeed)".to_owned(),
        Some(Err(why)) => return format!("not run: {why}"),
        Some(Ok(list)) if list.is_empty() => return "none (alm-examples is empty)".to_owned(),
        Some(Ok(list)) => list,
    };
    let created = list.iter().filter(|e| e.refused.is_none()).count();
    let made = format!("{created}/{} created", list.len());
    match (&r.upgrade, &r.reads_not_run) {
        (None, _) => made,
        (Some(_), Some(why)) => format!("{made}, read after not run: {why}"),
        (Some(_), None) => {
            let read = r.examples_after.iter().filter(|x| x.is_ok()).count();
            format!("{made}, {read}/{created} read after")
        }
    }
}

fn result_cell(r: &CaseReport) -> &'static str {
    match r.verdict() {
        Verdict::NotRun => "ERROR (test environment)",
        Verdict::Passed if !r.not_run().is_empty() => "pass (checks not run)",
        Verdict::Passed => "pass",
        Verdict::Refused | Verdict::DataLost | Verdict::Failed => "FAIL",
    }
}

/// `replaces, skipRange`: every way the upgrade leads to the successor.
fn edges(edge: &Edge) -> String {
    let names: Vec<&str> = edge.via.iter().map(|kind| kind.as_str()).collect();
    names.join(", ")
}

/// JUnit XML: one test case per case ([`CaseReport::outcome`]); failures name who is to
/// blame and quote them; a case that passed with checks not run is `<skipped>`, never a plain
/// pass. A shard's report says which shard it is ([`super::shard::SHARD_PROPERTY`]), for
/// `upgrade merge-shards`.
pub fn junit(reports: &[CaseReport], shard: Option<super::shard::Shard>) -> String {
    let outcomes: Vec<upgrade::Outcome> = reports.iter().map(CaseReport::outcome).collect();
    let mut suite = upgrade::outcome::junit_suite("olmpack upgrade olm", &outcomes);
    // Not `.sum()`: the sum of no f64 is -0.0, printed "-0.0".
    let total = reports.iter().fold(0.0, |sum, r| sum + r.seconds);
    suite.time = Some(format!("{total:.1}"));
    if let Some(shard) = shard {
        suite
            .properties
            .push((super::shard::SHARD_PROPERTY.to_owned(), shard.to_string()));
    }
    suite.to_xml()
}

#[cfg(test)]
mod tests {
    use super::*;
    use olmpack_model::plan::InstallModeType;
    use olmpack_model::report::junit;
    use olmpack_model::upgrade_graph::EdgeKind;

    fn case(expected: Option<Vec<EdgeKind>>) -> Case {
        Case {
            package: "op".into(),
            channels: vec!["stable".into()],
            from: "op.v1".into(),
            upgrade: expected.map(|via| Edge {
                via: via.into_iter().collect(),
                ..Edge::new("op", "op.v1", "op.v2")
            }),
            install_mode: InstallModeType::AllNamespaces,
            max_openshift_versions: Default::default(),
            olm: Default::default(),
        }
    }

    fn succeeded(csv: &str) -> InstallStep {
        InstallStep {
            csv: Some(csv.into()),
            outcome: Outcome::Succeeded { csv: csv.into() },
            ..InstallStep::unfinished()
        }
    }

    fn example(refused: Option<&str>) -> Example {
        Example {
            api_version: "example.com/v1".into(),
            kind: "Widget".into(),
            name: "sample-v1".into(),
            declared: "sample".into(),
            refused: refused.map(str::to_owned),
        }
    }

    #[test]
    fn the_examples_cell_tells_never_attempted_none_declared_and_run_apart() {
        let refused = InstallStep {
            csv: Some("op.v1".into()),
            outcome: Outcome::Refused {
                by: "InstallPlan install-abc".into(),
                reason: "InstallComponentFailed".into(),
                message: "m".into(),
            },
            ..InstallStep::unfinished()
        };
        type Examples = Option<Result<Vec<Example>, String>>;
        let cases: [(&str, InstallStep, Examples, &str, &str); 5] = [
            (
                "install refused: never attempted",
                refused,
                None,
                "not run (the install did not succeed)",
                "FAIL",
            ),
            (
                "installed, the environment failed before the examples",
                succeeded("op.v1"),
                None,
                "not run (the test environment failed first)",
                "pass",
            ),
            (
                "alm-examples is empty: a plain pass",
                succeeded("op.v1"),
                Some(Ok(vec![])),
                "none (alm-examples is empty)",
                "pass",
            ),
            (
                "webhooks not served",
                succeeded("op.v1"),
                Some(Err("no webhook command was given".into())),
                "not run: no webhook command was given",
                "pass (checks not run)",
            ),
            (
                "one created",
                succeeded("op.v1"),
                Some(Ok(vec![example(None)])),
                "1/1 created",
                "pass",
            ),
        ];
        for (what, install, examples, cell, result) in cases {
            let mut report = CaseReport::new(case(None));
            report.install = install;
            report.examples = examples;
            assert_eq!(examples_cell(&report), cell, "{what}");
            assert_eq!(result_cell(&report), result, "{what}");
        }
    }

    #[test]
    fn each_failure_is_an_error_finding_naming_who_refuses() {
        let refused = InstallStep {
            csv: Some("op.v1".into()),
            outcome: Outcome::Refused {
                by: "ClusterExtension olmpack-case-1".into(),
                reason: "Retrying".into(),
                message: "m".into(),
            },
            ..InstallStep::unfinished()
        };
        let mut v1 = CaseReport::new(Case {
            olm: super::super::OlmVersion::V1,
            ..case(None)
        });
        v1.install = refused;
        let mut example_refused = CaseReport::new(case(None));
        example_refused.install = succeeded("op.v1");
        example_refused.examples = Some(Ok(vec![example(Some("denied"))]));
        let mut not_upgraded = CaseReport::new(case(Some(vec![EdgeKind::Replaces])));
        not_upgraded.install = succeeded("op.v1");
        not_upgraded.upgrade = Some(succeeded("op.v3"));
        let cases = [
            (v1, "olm/install-failed", Consumer::OlmV1, OLM_RULES),
            (
                example_refused,
                "examples/refused",
                Consumer::KubeApiserver,
                EXAMPLE_RULES,
            ),
            (
                not_upgraded,
                "olm/other-upgrade",
                Consumer::OlmV0,
                OLM_RULES,
            ),
        ];
        for (report, rule, consumer, family) in cases {
            let failures = report.failures();
            let first = &failures[0];
            assert_eq!(first.rule, rule);
            assert_eq!(first.severity, olmpack_model::report::Severity::Error);
            assert_eq!(first.consumer, Some(consumer), "{rule}");
            assert_eq!(blamed(first), family);
        }
    }

    #[test]
    fn a_plain_pass_with_empty_alm_examples_is_no_skipped_junit_case() {
        let mut report = CaseReport::new(case(None));
        report.install = succeeded("op.v1");
        report.examples = Some(Ok(vec![]));
        assert_eq!(report.outcome().junit_outcome(), junit::Outcome::Passed);
    }

    #[test]
    fn a_refused_example_is_named_as_alm_examples_names_it() {
        let mut report = CaseReport::new(case(None));
        report.install = succeeded("op.v1");
        report.examples = Some(Ok(vec![example(Some("spec.size: Invalid value"))]));
        let messages: Vec<String> = report.failures().into_iter().map(|f| f.message).collect();
        assert_eq!(
            messages,
            [
                "example Widget sample (example.com/v1, created as sample-v1) refused: spec.size: Invalid value"
            ]
        );
    }

    #[test]
    fn an_upgrade_is_labelled_with_every_edge_that_holds() {
        let cases = [
            (vec![EdgeKind::SkipRange], "→ op.v2 (skipRange) upgraded"),
            (
                vec![EdgeKind::Replaces, EdgeKind::SkipRange],
                "→ op.v2 (replaces, skipRange) upgraded",
            ),
            (
                vec![EdgeKind::Replaces, EdgeKind::Skips, EdgeKind::SkipRange],
                "→ op.v2 (replaces, skips, skipRange) upgraded",
            ),
        ];
        for (via, want) in cases {
            let mut report = CaseReport::new(case(Some(via)));
            report.install = succeeded("op.v1");
            report.upgrade = Some(succeeded("op.v2"));
            assert_eq!(upgrade_cell(&report), want);
        }
    }

    /// A case of `olm` whose upgrade ended as `upgrade`.
    fn upgraded(olm: OlmVersion, upgrade: InstallStep) -> CaseReport {
        let mut report = CaseReport::new(Case {
            olm,
            ..case(Some(vec![EdgeKind::Replaces]))
        });
        report.install = succeeded("op.v1");
        report.examples = Some(Ok(vec![]));
        report.upgrade = Some(upgrade);
        report
    }

    #[test]
    fn a_timeout_says_what_olm_last_said_and_never_no_upgrade_under_olm_v1() {
        let progressing = olmpack_envtest::olm::v1::Condition {
            type_: "Progressing".into(),
            status: "True".into(),
            reason: "Retrying".into(),
            message: "no bundles found for package \"op\"".into(),
        };
        let v1_timeout = |said: &[olmpack_envtest::olm::v1::Condition]| InstallStep {
            csv: None,
            outcome: super::super::v1::timed_out("ClusterExtension ce", "op.v2", "2.0.0", said),
            ..InstallStep::unfinished()
        };
        let v0_timeout = InstallStep {
            csv: None,
            outcome: Outcome::TimedOut {
                waiting_for: "an InstallPlan".into(),
                phase: String::new(),
                reason: String::new(),
                message: String::new(),
                pods: Vec::new(),
            },
            ..InstallStep::unfinished()
        };
        let v1_other = succeeded("op.v3");
        let cases = [
            (
                "OLM v1 refusing until the timeout",
                upgraded(OlmVersion::V1, v1_timeout(&[progressing])),
                vec![
                    "upgrade to op.v2: timed out waiting for ClusterExtension ce to install op.v2 (version 2.0.0): Installed=True, Progressing=True (Succeeded): OLM v1 last said: Progressing=True (Retrying): no bundles found for package \"op\"",
                ],
            ),
            (
                "OLM v1 silent until the timeout",
                upgraded(OlmVersion::V1, v1_timeout(&[])),
                vec![
                    "upgrade to op.v2: timed out waiting for ClusterExtension ce to install op.v2 (version 2.0.0): Installed=True, Progressing=True (Succeeded): OLM v1 had not answered the step (no condition about its current spec)",
                ],
            ),
            (
                "OLM v1 installing another bundle",
                upgraded(OlmVersion::V1, v1_other),
                vec!["OLM v1 installed op.v3 instead of op.v2"],
            ),
            (
                "OLM v0 proposing nothing",
                upgraded(OlmVersion::V0, v0_timeout),
                vec![
                    "OLM proposed no upgrade instead of op.v2",
                    "upgrade to op.v2: timed out waiting for an InstallPlan",
                ],
            ),
        ];
        for (what, report, want) in cases {
            let got: Vec<String> = report.failures().into_iter().map(|f| f.message).collect();
            assert_eq!(got, want, "{what}");
        }
    }

    #[test]
    fn a_markdown_row_keeps_olms_line_breaks_and_pipes_in_its_cells() {
        let refused = InstallStep {
            csv: Some("op.v2".into()),
            outcome: Outcome::Refused {
                by: "ClusterExtension ce".into(),
                reason: "Progressing=True (Retrying)".into(),
                message: "validating upgrade for CRD \"a\": v1: x\nv1alpha1: y | z".into(),
            },
            ..InstallStep::unfinished()
        };
        let md = markdown(&[upgraded(OlmVersion::V1, refused)]);
        let lines: Vec<&str> = md.lines().collect();
        assert_eq!(
            lines,
            [
                "| channels | install mode | install | upgrade (OLM's choice) | examples | result |",
                "| --- | --- | --- | --- | --- | --- |",
                "| stable | AllNamespaces | op.v1 installed (0 s) | → op.v2 (replaces): refused by ClusterExtension ce: Progressing=True (Retrying): validating upgrade for CRD \"a\": v1: x<br>v1alpha1: y \\| z | none (alm-examples is empty) | FAIL |",
            ]
        );
    }

    #[test]
    fn the_text_says_each_failure_and_unfinished_case_then_counts_them() {
        let mut failed = CaseReport::new(case(None));
        failed.install = InstallStep {
            csv: Some("op.v1".into()),
            outcome: Outcome::Refused {
                by: "InstallPlan ip".into(),
                reason: "InstallComponentFailed".into(),
                message: "m".into(),
            },
            ..InstallStep::unfinished()
        };
        let mut skipped = CaseReport::new(case(None));
        skipped.install = succeeded("op.v1");
        skipped.examples = Some(Err("no webhook command was given".into()));
        skipped.retried = vec!["get CSV: reset (retried 1×)".into()];
        let mut unfinished = CaseReport::new(case(None));
        unfinished.environment = Some("apiserver gone".into());
        let reports = [failed, skipped, unfinished];
        let name = reports[0].name();
        let want: Vec<String> = [
            format!("error[olm]: {name}: install of op.v1: refused by InstallPlan ip: InstallComponentFailed: m"),
            format!("warning[not-run]: {name}: example checks: no webhook command was given"),
            format!("note[retried]: {name}: get CSV: reset (retried 1×)"),
            format!("error[environment]: {name}: not finished: apiserver gone"),
        ]
        .into();
        assert_eq!(text::lines(&reports), want);
        assert_eq!(
            text::summary(&reports),
            "3 case(s): 0 passed, 1 failed, 1 passed with checks NOT RUN, 1 not finished (the test environment failed)"
        );
        assert_eq!(text::exit_code(&reports), 1);
        assert_eq!(text::exit_code(&reports[1..]), 2);
        assert_eq!(text::exit_code(&reports[1..2]), 0);
    }

    #[test]
    fn junit_is_one_case_per_report_failed_in_error_skipped_or_passed() {
        let mut failed = CaseReport::new(case(None));
        failed.install = InstallStep {
            csv: Some("op.v1".into()),
            outcome: Outcome::Refused {
                by: "InstallPlan ip".into(),
                reason: "InstallComponentFailed".into(),
                message: "m".into(),
            },
            ..InstallStep::unfinished()
        };
        failed.seconds = 2.25;
        let mut skipped = CaseReport::new(case(None));
        skipped.install = succeeded("op.v1");
        skipped.examples = Some(Err("no webhook command".into()));
        let mut unfinished = CaseReport::new(case(None));
        unfinished.environment = Some("apiserver gone".into());
        let mut passed = CaseReport::new(case(None));
        passed.install = succeeded("op.v1");
        passed.examples = Some(Ok(vec![]));
        let name = failed.name();
        let xml = junit(&[failed, skipped, unfinished, passed], None);
        let want = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <testsuites><testsuite name=\"olmpack upgrade olm\" tests=\"4\" failures=\"1\" errors=\"1\" skipped=\"1\" time=\"2.2\">\n\
             <testcase classname=\"op\" name=\"{name}\" time=\"2.2\"><failure message=\"[olm] install of op.v1: refused by InstallPlan ip: InstallComponentFailed: m\" type=\"olm\"/></testcase>\n\
             <testcase classname=\"op\" name=\"{name}\" time=\"0.0\"><skipped message=\"example checks: no webhook command\"/></testcase>\n\
             <testcase classname=\"op\" name=\"{name}\" time=\"0.0\"><error message=\"apiserver gone\" type=\"environment\"/></testcase>\n\
             <testcase classname=\"op\" name=\"{name}\" time=\"0.0\"/>\n\
             </testsuite></testsuites>\n"
        );
        assert_eq!(xml, want);
    }

    #[test]
    fn an_empty_report_has_no_negative_time() {
        let xml = junit(&[], None);
        assert!(xml.contains("time=\"0.0\""), "{xml}");
        assert!(!xml.contains("-0.0"), "{xml}");
    }
}
