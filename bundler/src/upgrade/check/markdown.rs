//! A Markdown summary of an upgrade check, for `$GITHUB_STEP_SUMMARY`: one row per edge with
//! its verdict and who refuses it, then the error findings of each refused edge.

use std::fmt::Write as _;

use super::graph::EdgeResult;
use super::{Consumer, Consumers};
use olmpack_model::report::{Severity, markdown_escape as escape};

/// The summary of `results` (edges in their order), titled with `subject`: each edge's
/// verdict for the selected `consumers` and every consumer's own.
pub fn format(subject: &str, results: &[EdgeResult], consumers: Consumers) -> String {
    let failing = results.iter().filter(|r| r.fails(consumers)).count();
    let mut out = String::new();
    let _ = writeln!(out, "## CRD upgrade check: {}\n", escape(subject));
    let _ = writeln!(
        out,
        "{} of {} edges would be refused{}.\n",
        failing,
        results.len(),
        consumers.scope()
    );
    out.push_str(
        "| Upgrade | Channels | Via | CRDs | Verdict | OLM v0 | OLM v1 | Refused by | Errors | Warnings |\n",
    );
    out.push_str("|---|---|---|---|---|---|---|---|---|---|\n");
    for r in results {
        let count = |s: Severity| r.findings.iter().filter(|f| f.severity == s).count();
        let verdict = if r.fails(consumers) {
            "❌ refused"
        } else {
            "✅ safe"
        };
        let olm = |c: Consumer| {
            if r.refused_by_consumer(c) {
                "refuses"
            } else {
                "takes"
            }
        };
        let by: Vec<String> = r.refused_by.iter().map(|b| b.short()).collect();
        let via: Vec<&str> = r.edge.via.iter().map(|v| v.as_str()).collect();
        let channels: Vec<&str> = r.edge.channels.iter().map(String::as_str).collect();
        let _ = writeln!(
            out,
            "| `{}` → `{}` | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.edge.from,
            r.edge.to,
            escape(&channels.join(", ")),
            via.join(", "),
            r.crds.len(),
            verdict,
            olm(Consumer::OlmV0),
            olm(Consumer::OlmV1),
            if by.is_empty() {
                "—".to_owned()
            } else {
                by.join(", ")
            },
            count(Severity::Error),
            count(Severity::Warning),
        );
    }
    for r in results.iter().filter(|r| r.refused()) {
        let _ = writeln!(out, "\n### `{}` → `{}`\n", r.edge.from, r.edge.to);
        for f in r.findings.iter().filter(|f| f.severity == Severity::Error) {
            let field = f
                .field
                .as_deref()
                .map(|p| format!(" `{p}`"))
                .unwrap_or_default();
            let _ = writeln!(out, "- `{}`{}: {}", f.rule, field, escape(&f.message));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upgrade::check::RefusedBy;
    use olmpack_model::report::Finding;
    use olmpack_model::upgrade::Edge;

    #[test]
    fn a_message_with_line_breaks_and_pipes_stays_in_its_table_row_and_list_item() {
        let mut edge = Edge::new("op", "op.v1", "op.v2");
        edge.channels.insert("stable|fast".to_owned());
        let result = EdgeResult {
            edge,
            crds: vec!["a.b.c".to_owned()],
            findings: vec![Finding::error(
                "crd-upgrade/type",
                "validating upgrade for CRD \"a.b.c\": v1: a\nv1alpha1: b | c",
            )],
            refused_by: [RefusedBy::only(Consumer::OlmV1)].into(),
        };
        let md = format("subject|x", &[result], Consumers::All);
        let lines: Vec<&str> = md.lines().collect();
        let want = [
            "## CRD upgrade check: subject\\|x",
            "| `op.v1` → `op.v2` | stable\\|fast |  | 1 | ❌ refused | takes | refuses | v1 | 1 | 0 |",
            "- `crd-upgrade/type`: validating upgrade for CRD \"a.b.c\": v1: a<br>v1alpha1: b \\| c",
        ];
        for line in want {
            assert!(lines.contains(&line), "{line}\n{md}");
        }
    }
}
