//! One answer per edge: the live run and `upgrade check`'s static answer on the same edge,
//! in one report. The live run judges the CRD data on a real apiserver (objects created,
//! upgraded, read back, rolled back); the static answer judges what OLM v0 and OLM v1
//! refuse by their own rules (CRD upgrade checks, an immutable Deployment selector, the
//! bundle's install problems). An edge either refuses is never passed.

use serde::Serialize;

use crate::upgrade::check::graph::EdgeResult;
use crate::upgrade::check::{Consumers, UPGRADE_CONSUMERS};
use olmpack_envtest::live::EdgeReport;
use olmpack_model::report::{Consumer, Finding, Severity};
use olmpack_model::upgrade::{Outcome, Quote, Verdict};

/// What the live run judges, for the report's summary.
pub const LIVE_JUDGES: &str = "the CRD data, live on kube-apiserver";

/// What the static answer judges, for the report's summary.
pub const CHECK_JUDGES: &str = "OLM v0's and OLM v1's upgrade rules, statically (`upgrade check`)";

/// One edge: the live report (its `verdict` the edge's, both answers' worst) with each
/// answer's own verdict and the static answer's findings.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EdgeAnswer {
    /// The live run; its `verdict` is the edge's (see [`combine`]).
    #[serde(flatten)]
    pub live: EdgeReport,
    /// Each answer's own verdict.
    pub verdicts: Verdicts,
    /// `upgrade check`'s answer for the same edge (`None`: not asked, as for one edge run
    /// on its own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub check: Option<StaticAnswer>,
    /// The platform the live run ran on, when olmpack started it (`Kubernetes 1.27
    /// (kube-apiserver v1.27.16)`); `None` on a given cluster.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
}

impl std::ops::Deref for EdgeAnswer {
    type Target = EdgeReport;

    fn deref(&self) -> &EdgeReport {
        &self.live
    }
}

impl From<EdgeReport> for EdgeAnswer {
    /// The live report alone (no static answer asked): its verdict is the edge's.
    fn from(live: EdgeReport) -> Self {
        let verdicts = Verdicts {
            live: live.verdict,
            check: Verdict::NotRun,
        };
        Self {
            live,
            verdicts,
            check: None,
            platform: None,
        }
    }
}

/// The verdict of each answer on one edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Verdicts {
    /// The live run's, on the CRD data.
    pub live: Verdict,
    /// `upgrade check`'s, by OLM v0's and OLM v1's rules.
    pub check: Verdict,
}

/// `upgrade check`'s answer on one edge.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StaticAnswer {
    /// Who refuses the edge (OLM v0, OLM v1; kube-apiserver for requests clients make
    /// afterwards), in order.
    pub refused_by: Vec<Consumer>,
    /// Its findings (errors and warnings; its information is left to `upgrade check`).
    pub findings: Vec<Finding>,
}

/// The edge's verdict from both answers: passed only when both passed; a refusal wins.
pub fn combine(live: Verdict, check: Verdict) -> Verdict {
    match (live, check) {
        (Verdict::Passed, other) | (other, Verdict::Passed) => other,
        (Verdict::Refused, _) | (_, Verdict::Refused) => Verdict::Refused,
        (live, _) => live,
    }
}

/// The live report of an edge joined with `upgrade check`'s result for the same edge.
pub fn join(mut live: EdgeReport, check: &EdgeResult) -> EdgeAnswer {
    let refused_by: Vec<Consumer> = UPGRADE_CONSUMERS
        .iter()
        .chain([&Consumer::KubeApiserver])
        .filter(|c| check.refused_by_consumer(**c))
        .copied()
        .collect();
    let findings = check
        .findings
        .iter()
        .filter(|f| f.severity != Severity::Info)
        .cloned()
        .collect();
    let verdicts = Verdicts {
        live: live.verdict,
        check: check.verdict(Consumers::All),
    };
    live.verdict = combine(verdicts.live, verdicts.check);
    EdgeAnswer {
        live,
        verdicts,
        check: Some(StaticAnswer {
            refused_by,
            findings,
        }),
        platform: None,
    }
}

impl EdgeAnswer {
    /// Every error of the edge: the live run's, then `upgrade check`'s.
    pub fn all_errors(&self) -> impl Iterator<Item = &Finding> {
        let check = self.check.iter().flat_map(|c| c.findings.iter());
        self.errors()
            .chain(check.filter(|f| f.severity == Severity::Error))
    }

    /// The edge as the upgrade answers' one outcome: failed when either answer found an
    /// error (whatever its verdict), each quoted with where it is and who refuses it.
    pub fn outcome(&self) -> Outcome {
        Outcome {
            group: "upgrade".to_owned(),
            name: self.edge.title(),
            edge: Some(self.edge.clone()),
            verdict: self.verdict,
            findings: self.all_errors().cloned().collect(),
            quote: Quote::Described,
            blamed: self.verdict.word().to_owned(),
            not_run: Vec::new(),
            error: None,
            time: Some(format!("{:.3}", self.seconds)),
        }
    }

    /// The summary: what each answer judged and what it said, e.g. `live (the CRD data,
    /// live on kube-apiserver): passed; upgrade check (…): refused by OLM v0 and OLM v1`.
    pub fn summary(&self) -> String {
        let live = format!("live ({LIVE_JUDGES}): {}", self.verdicts.live.word());
        match self.check_said() {
            Some(said) => format!("{live}; upgrade check ({CHECK_JUDGES}): {said}"),
            None => live,
        }
    }

    /// What `upgrade check` said of the edge: its verdict and who refuses it (`refused by
    /// OLM v0 and OLM v1`); `None` when it was not asked.
    pub fn check_said(&self) -> Option<String> {
        let check = self.check.as_ref()?;
        let word = self.verdicts.check.word();
        Some(match check.refused_by.as_slice() {
            [] => word.to_owned(),
            by => {
                let names: Vec<&str> = by.iter().map(|c| c.as_str()).collect();
                format!("{word} by {}", names.join(" and "))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use olmpack_envtest::live::Rollback;
    use olmpack_model::upgrade::Edge;

    fn live(verdict: Verdict) -> EdgeReport {
        EdgeReport {
            edge: Edge::new("a", "a.v1", "a.v2"),
            verdict,
            objects: 1,
            steps: Vec::new(),
            findings: Vec::new(),
            rollback: Rollback::Intact,
            seconds: 1.0,
            processes: Vec::new(),
        }
    }

    #[test]
    fn an_edge_both_olms_refuse_is_refused_although_its_data_passed() {
        let check = EdgeResult {
            edge: Edge::new("a", "a.v1", "a.v2"),
            crds: Vec::new(),
            findings: vec![
                Finding::error("upgrade/deployment-selector", "selector changed"),
                Finding::info("crd-upgrade/cel-not-evaluated", "not asked"),
            ],
            refused_by: [crate::upgrade::check::RefusedBy::BOTH_OLMS].into(),
        };
        let answer = join(live(Verdict::Passed), &check);
        assert_eq!(answer.verdict, Verdict::Refused);
        assert_eq!(
            answer.verdicts,
            Verdicts {
                live: Verdict::Passed,
                check: Verdict::Refused
            }
        );
        let check = answer.check.as_ref().unwrap();
        assert_eq!(check.refused_by, [Consumer::OlmV0, Consumer::OlmV1]);
        let rules: Vec<&str> = check.findings.iter().map(|f| f.rule.as_str()).collect();
        assert_eq!(rules, ["upgrade/deployment-selector"]);
        assert_eq!(
            answer.summary(),
            "live (the CRD data, live on kube-apiserver): passed; upgrade check (OLM v0's and OLM v1's upgrade rules, statically (`upgrade check`)): refused by OLM v0 and OLM v1"
        );
        let json = serde_json::to_value(&answer).unwrap();
        assert_eq!(json["verdict"], "refused");
        assert_eq!(
            json["verdicts"],
            serde_json::json!({"live": "passed", "check": "refused"})
        );
        assert_eq!(
            json["check"]["refusedBy"],
            serde_json::json!(["OLM v0", "OLM v1"])
        );
        assert_eq!(json["from"], "a.v1");
    }

    #[test]
    fn a_report_writes_its_edge_as_its_ends_first() {
        let mut report = live(Verdict::Passed);
        report.edge.channels.insert("stable".to_owned());
        let json = serde_json::to_string(&EdgeAnswer::from(report)).unwrap();
        assert!(
            json.starts_with(r#"{"from":"a.v1","to":"a.v2","verdict":"passed","objects":1,"#),
            "{json}"
        );
        assert!(
            !json.contains("stable") && !json.contains("package"),
            "{json}"
        );
    }

    #[test]
    fn a_live_report_alone_keeps_its_verdict_and_says_only_what_it_judged() {
        let answer = EdgeAnswer::from(live(Verdict::DataLost));
        assert_eq!(answer.verdict, Verdict::DataLost);
        assert_eq!(
            answer.summary(),
            "live (the CRD data, live on kube-apiserver): data lost"
        );
        assert!(
            serde_json::to_value(&answer)
                .unwrap()
                .get("check")
                .is_none()
        );
    }

    #[test]
    fn an_edge_is_passed_only_when_both_answers_pass() {
        use Verdict::*;
        let table = [
            (Passed, Passed, Passed),
            (Passed, Refused, Refused),
            (Refused, Passed, Refused),
            (DataLost, Passed, DataLost),
            (Passed, DataLost, DataLost),
            (DataLost, Refused, Refused),
            (Failed, DataLost, Failed),
        ];
        for (live, check, want) in table {
            assert_eq!(combine(live, check), want, "{live:?} + {check:?}");
        }
    }
}
