//! Each upgrade edge's verdict per consumer: which OLM takes it, which refuses it, and
//! whether it breaks clusters whoever installs it — as the closing text of `upgrade check`,
//! as JSON (the findings report with an `edges` list) and as JUnit (one test case per edge
//! and selected consumer).

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::graph::EdgeResult;
use super::{Consumers, UPGRADE_CONSUMERS};
use olmpack_model::report::{Consumer, Finding, OutputFormat, Report, Severity};
use olmpack_model::upgrade::Verdict;
use olmpack_model::upgrade::outcome::{self, Outcome, Quote};

/// One line per edge that anyone refuses, then the count for the selected consumers with
/// each consumer's own count.
pub fn text(results: &[EdgeResult], consumers: Consumers) -> String {
    let mut out = String::new();
    for r in results.iter().filter(|r| r.refused()) {
        let _ = writeln!(out, "{}: {}", r.edge.label(), consumers_say(r));
    }
    let failing = results.iter().filter(|r| r.fails(consumers)).count();
    let per: Vec<String> = UPGRADE_CONSUMERS
        .iter()
        .map(|c| {
            let n = results.iter().filter(|r| r.refused_by_consumer(*c)).count();
            format!("{} refuses {n}", c.as_str())
        })
        .collect();
    let broken = results.iter().filter(|r| r.breaks_clusters()).count();
    let _ = writeln!(
        out,
        "{failing} of {} upgrade edge(s) would be refused{} ({}; {broken} break clusters without a refusal)",
        results.len(),
        consumers.scope(),
        per.join(", ")
    );
    out
}

/// Every consumer's verdict on the edge, in words: `OLM v0 takes it, OLM v1 refuses it`,
/// and whether it breaks clusters without a refusal.
pub fn consumers_say(r: &EdgeResult) -> String {
    let mut parts: Vec<String> = UPGRADE_CONSUMERS
        .iter()
        .map(|c| {
            let word = if r.refused_by_consumer(*c) {
                "refuses it"
            } else {
                "takes it"
            };
            format!("{} {word}", c.as_str())
        })
        .collect();
    if r.breaks_clusters() {
        parts.push("it breaks clusters that take it (kube-apiserver refuses requests afterwards, or data is lost)".to_owned());
    }
    parts.join(", ")
}

/// The report as JSON with `edges`: per edge its ends, channels, ways, each consumer's
/// verdict (`takes` or `refuses`), whether it breaks clusters, and whether it fails the
/// check for the selected consumers.
pub fn json(report: &Report, results: &[EdgeResult], consumers: Consumers) -> String {
    let mut value: Value = serde_json::from_str(&report.format(OutputFormat::Json))
        .expect("a formatted report is JSON");
    let edges: Vec<Value> = results
        .iter()
        .map(|r| {
            let verdicts: serde_json::Map<String, Value> = UPGRADE_CONSUMERS
                .iter()
                .map(|c| {
                    let word = if r.refused_by_consumer(*c) {
                        "refuses"
                    } else {
                        "takes"
                    };
                    (c.id().to_owned(), json!(word))
                })
                .collect();
            json!({
                "package": r.edge.package,
                "from": r.edge.from,
                "to": r.edge.to,
                "channels": r.edge.channels,
                "via": r.edge.via.iter().map(|v| v.as_str()).collect::<Vec<_>>(),
                "verdicts": verdicts,
                "breaksClusters": r.breaks_clusters(),
                "fails": r.fails(consumers),
            })
        })
        .collect();
    value["edges"] = json!(edges);
    let mut s = serde_json::to_string_pretty(&value).expect("JSON values serialize");
    s.push('\n');
    s
}

/// The edge's outcomes: one per selected consumer (failed when it refuses the edge) and one
/// for the clusters (failed when the edge breaks them without a refusal); each failure holds
/// the edge's error findings.
pub fn outcomes(r: &EdgeResult, consumers: Consumers) -> Vec<Outcome> {
    let errors: Vec<Finding> = r
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .cloned()
        .collect();
    let refused = |failed: bool, how: Verdict| if failed { how } else { Verdict::Passed };
    let clusters = match r.refused_by_consumer(Consumer::KubeApiserver) {
        true => Verdict::Refused,
        false => Verdict::DataLost,
    };
    let mut checks: Vec<(String, Verdict)> = consumers
        .list()
        .iter()
        .map(|c| {
            let verdict = refused(r.refused_by_consumer(*c), Verdict::Refused);
            (c.as_str().to_owned(), verdict)
        })
        .collect();
    checks.push((
        "clusters".to_owned(),
        refused(r.breaks_clusters(), clusters),
    ));
    checks
        .into_iter()
        .map(|(who, verdict)| Outcome {
            group: r.edge.package.clone(),
            name: format!("{} ({who})", r.edge.label()),
            edge: Some(r.edge.clone()),
            verdict,
            findings: match verdict.failed() {
                true => errors.clone(),
                false => Vec::new(),
            },
            quote: Quote::RuleAndField,
            blamed: "crd-upgrade".to_owned(),
            not_run: Vec::new(),
            error: None,
            time: None,
        })
        .collect()
}

/// JUnit: per edge, its [`outcomes`]: one test case per selected consumer and one for the
/// clusters; each failure lists the error findings.
pub fn junit(subject: &str, results: &[EdgeResult], consumers: Consumers) -> String {
    let outcomes: Vec<Outcome> = results
        .iter()
        .flat_map(|r| outcomes(r, consumers))
        .collect();
    outcome::junit_suite(format!("olmpack upgrade check: {subject}"), &outcomes).to_xml()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upgrade::check::RefusedBy;
    use olmpack_model::report::Consumer;
    use olmpack_model::upgrade::Edge;

    #[test]
    fn junit_fails_the_consumer_that_refuses_with_the_edges_errors() {
        let result = EdgeResult {
            edge: Edge::new("op", "op.v1", "op.v2"),
            crds: vec!["a.b.c".to_owned()],
            findings: vec![
                olmpack_model::report::Finding::error("crd-upgrade/enum", "value removed")
                    .field("^.spec.x"),
                olmpack_model::report::Finding::warning("crd-upgrade/w", "not quoted"),
            ],
            refused_by: [RefusedBy::only(Consumer::OlmV1)].into(),
        };
        assert_eq!(
            junit("s", &[result], Consumers::All),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <testsuites><testsuite name=\"olmpack upgrade check: s\" tests=\"3\" failures=\"1\" errors=\"0\" skipped=\"0\">\n\
             <testcase classname=\"op\" name=\"op.v1 -&gt; op.v2 (OLM v0)\"/>\n\
             <testcase classname=\"op\" name=\"op.v1 -&gt; op.v2 (OLM v1)\"><failure message=\"crd-upgrade/enum ^.spec.x: value removed\" type=\"crd-upgrade\"/></testcase>\n\
             <testcase classname=\"op\" name=\"op.v1 -&gt; op.v2 (clusters)\"/>\n\
             </testsuite></testsuites>\n"
        );
    }
}
