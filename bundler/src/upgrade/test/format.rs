//! The reports as text, JSON, JUnit and Markdown (for `$GITHUB_STEP_SUMMARY`): each edge's
//! live run and `upgrade check`'s answer on it, and what each judged. Pure and deterministic
//! except for the measured seconds, which text and Markdown round.

use std::fmt::Write as _;

use super::answer::EdgeAnswer;
use olmpack_envtest::live::Rollback;
use olmpack_model::report::{Finding, OutputFormat, Severity, markdown_escape};
use olmpack_model::upgrade::Verdict;
use olmpack_model::upgrade::outcome::{self, describe};

/// The reports in `format`.
pub fn format(reports: &[EdgeAnswer], format: OutputFormat) -> String {
    match format {
        OutputFormat::Text => text(reports),
        OutputFormat::Json => {
            let mut s = serde_json::to_string_pretty(reports).unwrap_or_else(|_| "[]".to_owned());
            s.push('\n');
            s
        }
        OutputFormat::Junit => junit(reports),
        OutputFormat::Markdown => markdown(reports),
    }
}

fn rollback(r: &Rollback) -> String {
    match r {
        Rollback::NotRun => "not run".to_owned(),
        Rollback::Refused(message) => format!("refused by kube-apiserver ({message})"),
        Rollback::Intact => "data intact".to_owned(),
        Rollback::DataLost => "data lost".to_owned(),
    }
}

fn text(reports: &[EdgeAnswer]) -> String {
    let mut out = String::new();
    for r in reports {
        let _ = writeln!(
            out,
            "{}: {} ({} objects, {:.1} s); rollback: {}",
            r.edge.title(),
            r.verdict.word(),
            r.objects,
            r.seconds,
            rollback(&r.rollback)
        );
        let _ = writeln!(out, "  {}", r.summary());
        if let Some(platform) = &r.platform {
            let _ = writeln!(out, "  platform: {platform}");
        }
        for step in &r.steps {
            let _ = writeln!(
                out,
                "  {} ({:.1} s): {}",
                step.step, step.seconds, step.outcome
            );
        }
        for f in &r.findings {
            let _ = writeln!(out, "  {}[{}] {}", f.severity.as_str(), f.rule, describe(f));
        }
        for f in r.check.iter().flat_map(|c| c.findings.iter()) {
            let _ = writeln!(
                out,
                "  upgrade check: {}[{}] {}",
                f.severity.as_str(),
                f.rule,
                describe(f)
            );
        }
        for (i, p) in r.processes.iter().enumerate() {
            let _ = writeln!(
                out,
                "  output of webhook process {} ({}), last lines:",
                i + 1,
                p.release
            );
            for line in p.tail.lines() {
                let _ = writeln!(out, "    | {line}");
            }
        }
    }
    let passed = reports
        .iter()
        .filter(|r| r.verdict == Verdict::Passed)
        .count();
    let _ = writeln!(out, "{passed} of {} edge(s) passed", reports.len());
    out
}

/// One JUnit test case per edge ([`EdgeAnswer::outcome`]): failed when either answer found
/// an error, typed by the edge's verdict.
fn junit(reports: &[EdgeAnswer]) -> String {
    let outcomes: Vec<_> = reports.iter().map(EdgeAnswer::outcome).collect();
    outcome::junit_suite("olmpack upgrade test", &outcomes).to_xml()
}

fn markdown(reports: &[EdgeAnswer]) -> String {
    let mut out = String::from(
        "| from | to | result | live | upgrade check | objects | rollback | seconds |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for r in reports {
        let rollback = match &r.rollback {
            Rollback::Refused(_) => "refused by kube-apiserver".to_owned(),
            other => rollback(other),
        };
        let check = r.check_said().unwrap_or_else(|| "not asked".to_owned());
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {:.1} |",
            markdown_escape(&r.edge.from),
            markdown_escape(&r.edge.to),
            r.verdict.word(),
            r.verdicts.live.word(),
            markdown_escape(&check),
            r.objects,
            markdown_escape(&rollback),
            r.seconds
        );
    }
    let _ = writeln!(
        out,
        "\nlive: {}; upgrade check: {}.",
        super::answer::LIVE_JUDGES,
        super::answer::CHECK_JUDGES
    );
    if let Some(platform) = reports.iter().find_map(|r| r.platform.as_deref()) {
        let _ = writeln!(out, "platform: {}.", markdown_escape(platform));
    }
    let findings: Vec<(&EdgeAnswer, &Finding)> = reports
        .iter()
        .flat_map(|r| {
            let check = r.check.iter().flat_map(|c| c.findings.iter());
            r.findings
                .iter()
                .chain(check)
                .filter(|f| f.severity != Severity::Info)
                .map(move |f| (r, f))
        })
        .collect();
    if !findings.is_empty() {
        out.push_str("\n| edge | rule | finding |\n| --- | --- | --- |\n");
        for (r, f) in findings {
            let _ = writeln!(
                out,
                "| {} | `{}` | {} |",
                markdown_escape(&r.edge.title()),
                f.rule,
                markdown_escape(&describe(f))
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use olmpack_envtest::live::EdgeReport;

    #[test]
    fn a_markdown_cell_keeps_line_breaks_and_pipes_inside_its_row() {
        let report = EdgeReport {
            edge: olmpack_model::upgrade::Edge::new("op", "op.v1", "op.v2"),
            verdict: Verdict::Refused,
            objects: 1,
            steps: Vec::new(),
            findings: vec![Finding::error("live/refused", "line one\nsplit | here")],
            rollback: Rollback::Refused("no\nway | back".into()),
            seconds: 1.0,
            processes: Vec::new(),
        };
        let md = markdown(&[EdgeAnswer::from(report)]);
        let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| op.v1")).collect();
        assert_eq!(
            rows,
            [
                "| op.v1 | op.v2 | refused | refused | not asked | 1 | refused by kube-apiserver | 1.0 |",
                "| op.v1 → op.v2 | `live/refused` | line one<br>split \\| here |",
            ],
            "{md}"
        );
    }

    #[test]
    fn junit_fails_an_edge_on_either_answers_errors_typed_by_its_verdict() {
        let report = EdgeReport {
            edge: olmpack_model::upgrade::Edge::new("op", "op.v1", "op.v2"),
            verdict: Verdict::DataLost,
            objects: 1,
            steps: Vec::new(),
            findings: vec![
                Finding::error("live/data-lost", "gone")
                    .object("Widget/a")
                    .version("v1")
                    .field("spec.x"),
                Finding::warning("live/w", "not quoted"),
            ],
            rollback: Rollback::Intact,
            seconds: 1.5,
            processes: Vec::new(),
        };
        let passed = EdgeReport {
            verdict: Verdict::Passed,
            findings: Vec::new(),
            ..report.clone()
        };
        let xml = junit(&[EdgeAnswer::from(report), EdgeAnswer::from(passed)]);
        assert_eq!(
            xml,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <testsuites><testsuite name=\"olmpack upgrade test\" tests=\"2\" failures=\"1\" errors=\"0\" skipped=\"0\">\n\
             <testcase classname=\"upgrade\" name=\"op.v1 → op.v2\" time=\"1.500\"><failure message=\"[live/data-lost] Widget/a: v1: spec.x: gone\" type=\"data lost\"/></testcase>\n\
             <testcase classname=\"upgrade\" name=\"op.v1 → op.v2\" time=\"1.500\"/>\n\
             </testsuite></testsuites>\n"
        );
    }
}
