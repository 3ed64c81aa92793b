//! The one outcome type of the three upgrade answers — `upgrade check` gives one per edge and
//! consumer, `upgrade test` one per edge, `upgrade olm` one per case — and its one JUnit
//! mapping: a failure quotes the findings that fail it, the test environment's error is an
//! `<error>`, checks that could not run make a pass `<skipped>`.

use super::{Edge, Verdict};
use crate::report::{Finding, junit};

/// What one upgrade answer says about one edge or case.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// Where it belongs, as JUnit's `classname` writes it: the package, or the answer
    /// (`upgrade`).
    pub group: String,
    /// What was judged, as reports name it: the edge (`a.v1 → a.v2`), the case.
    pub name: String,
    /// The upgrade judged, when there is one (a case that installs a channel head has none).
    pub edge: Option<Edge>,
    /// The answer's verdict.
    pub verdict: Verdict,
    /// The error findings that fail it; empty when it did not fail.
    pub findings: Vec<Finding>,
    /// How a failure quotes each of [`Self::findings`].
    pub quote: Quote,
    /// What a failure is blamed on, as JUnit's failure `type` writes it.
    pub blamed: String,
    /// The checks that could not run, each with the reason.
    pub not_run: Vec<String>,
    /// Why it was not finished: the test environment failed (no word on the release).
    pub error: Option<String>,
    /// How long it took, as JUnit's `time` attribute writes it (`1.5`).
    pub time: Option<String>,
}

/// How a failure quotes one finding: each answer's own words, kept as its users read them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quote {
    /// `rule field: message` (`upgrade check`).
    RuleAndField,
    /// `[rule] refused by …: object: version: field: message` ([`describe`]; `upgrade test`).
    Described,
    /// `[family] message` ([`family`]: who is blamed, then OLM's or kube-apiserver's words;
    /// `upgrade olm`).
    Family,
}

impl Quote {
    /// `finding` in these words.
    pub fn quote(self, finding: &Finding) -> String {
        match self {
            Quote::RuleAndField => {
                let field = finding
                    .field
                    .as_deref()
                    .map(|p| format!(" {p}"))
                    .unwrap_or_default();
                format!("{}{field}: {}", finding.rule, finding.message)
            }
            Quote::Described => format!("[{}] {}", finding.rule, describe(finding)),
            Quote::Family => format!("[{}] {}", family(finding), finding.message),
        }
    }
}

/// `refused by …: object: version: field: message`, the parts that are known.
pub fn describe(finding: &Finding) -> String {
    let mut parts = Vec::new();
    if let Some(by) = finding.consumer {
        parts.push(by.outcome());
    }
    parts.extend(finding.object.clone());
    parts.extend(finding.version.clone());
    parts.extend(finding.field.clone());
    parts.push(finding.message.clone());
    parts.join(": ")
}

/// The finding's rule family (`olm` of `olm/install-failed`): whom it blames.
pub fn family(finding: &Finding) -> &str {
    finding
        .rule
        .split_once('/')
        .map_or(finding.rule.as_str(), |(family, _)| family)
}

impl Outcome {
    /// Its JUnit outcome: failed when findings fail it (each quoted, typed by
    /// [`Self::blamed`]), an error when the test environment failed, skipped when checks
    /// could not run, else passed.
    pub fn junit_outcome(&self) -> junit::Outcome {
        if !self.findings.is_empty() {
            let quoted: Vec<String> = self.findings.iter().map(|f| self.quote.quote(f)).collect();
            return junit::Outcome::Failed {
                message: quoted.join("; "),
                kind: self.blamed.clone(),
            };
        }
        if let Some(error) = &self.error {
            return junit::Outcome::Error {
                message: error.clone(),
                kind: "environment".to_owned(),
            };
        }
        match self.not_run.is_empty() {
            true => junit::Outcome::Passed,
            false => junit::Outcome::Skipped(self.not_run.join("; ")),
        }
    }

    /// Its JUnit test case.
    pub fn junit_case(&self) -> junit::TestCase {
        let case = junit::TestCase::new(&self.group, &self.name, self.junit_outcome());
        match &self.time {
            Some(time) => case.time(time),
            None => case,
        }
    }
}

/// A JUnit suite named `name` of one test case per outcome, in order.
pub fn junit_suite(name: impl Into<String>, outcomes: &[Outcome]) -> junit::Suite {
    let mut suite = junit::Suite::new(name);
    suite.cases = outcomes.iter().map(Outcome::junit_case).collect();
    suite
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Consumer;

    fn outcome(findings: Vec<Finding>, not_run: Vec<String>, error: Option<&str>) -> Outcome {
        Outcome {
            group: "op".to_owned(),
            name: "op.v1 → op.v2".to_owned(),
            edge: Some(Edge::new("op", "op.v1", "op.v2")),
            verdict: Verdict::Passed,
            findings,
            quote: Quote::Family,
            blamed: "olm".to_owned(),
            not_run,
            error: error.map(str::to_owned),
            time: Some("1.0".to_owned()),
        }
    }

    #[test]
    fn findings_fail_before_the_environment_errs_and_checks_not_run_skip() {
        let failed = Finding::error("olm/install-failed", "no");
        let table = [
            (
                outcome(vec![failed], vec!["x".into()], Some("gone")),
                junit::Outcome::Failed {
                    message: "[olm] no".into(),
                    kind: "olm".into(),
                },
            ),
            (
                outcome(vec![], vec!["x".into()], Some("gone")),
                junit::Outcome::Error {
                    message: "gone".into(),
                    kind: "environment".into(),
                },
            ),
            (
                outcome(vec![], vec!["x".into(), "y".into()], None),
                junit::Outcome::Skipped("x; y".into()),
            ),
            (outcome(vec![], vec![], None), junit::Outcome::Passed),
        ];
        for (outcome, want) in table {
            assert_eq!(outcome.junit_outcome(), want);
        }
    }

    #[test]
    fn each_answer_quotes_a_finding_in_its_own_words() {
        let f = Finding::error("crd-upgrade/enum", "removed")
            .object("CRD/a")
            .field("^.spec.x")
            .consumer(Consumer::OlmV1);
        let quoted: Vec<String> = [Quote::RuleAndField, Quote::Described, Quote::Family]
            .iter()
            .map(|q| q.quote(&f))
            .collect();
        assert_eq!(
            quoted,
            [
                "crd-upgrade/enum ^.spec.x: removed",
                "[crd-upgrade/enum] refused by OLM v1: CRD/a: ^.spec.x: removed",
                "[crd-upgrade] removed",
            ]
        );
    }
}
