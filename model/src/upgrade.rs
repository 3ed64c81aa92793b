//! What olmpack's three upgrade answers say about one upgrade: `upgrade check` (static, per
//! edge), `upgrade test` (live, per edge on a real apiserver) and `upgrade olm` (per case
//! under OLM v0 or OLM v1) each give one [`Verdict`] per edge or case, in the same words; who
//! refuses is named by the [`Finding`](crate::report::Finding)s behind it (their
//! [`Consumer`](crate::report::Consumer)), and who refuses one change is a set of consumers
//! ([`RefusedBy`]). Every answer names the upgrade it judges with the one [`Edge`], and
//! gives its word on each edge or case as the one [`Outcome`] (edge, verdict, findings), which
//! one JUnit mapping writes ([`outcome`]).

pub mod outcome;

use std::collections::BTreeSet;

use serde::Serialize;

use crate::report::{Consumer, Severity};
use crate::upgrade_graph::EdgeKind;

pub use outcome::{Outcome, Quote};

/// One upgrade: from an installed bundle to the next, as every upgrade answer names it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Edge {
    /// The package both bundles belong to.
    pub package: String,
    /// The installed bundle.
    pub from: String,
    /// The bundle it upgrades to.
    pub to: String,
    /// The channels in which this upgrade is offered.
    pub channels: BTreeSet<String>,
    /// Every way the edge is in the graph (a pair can be joined several ways).
    pub via: BTreeSet<EdgeKind>,
}

impl Edge {
    /// An edge of `package` from `from` to `to`, in no channel yet and by no way yet.
    pub fn new(package: impl Into<String>, from: impl Into<String>, to: impl Into<String>) -> Self {
        Self {
            package: package.into(),
            from: from.into(),
            to: to.into(),
            channels: BTreeSet::new(),
            via: BTreeSet::new(),
        }
    }

    /// `from -> to`, as findings locate an object of the upgrade.
    pub fn label(&self) -> String {
        format!("{} -> {}", self.from, self.to)
    }

    /// `from → to`, as reports title the upgrade.
    pub fn title(&self) -> String {
        format!("{} → {}", self.from, self.to)
    }
}

/// Who refuses one change: a set of [`Consumer`]s. Empty when nobody refuses it: it is only
/// information, or it breaks clusters although nobody refuses it (data lost on conversion).
/// A change no OLM refuses breaks the clusters that take it ([`Self::breaks_clusters`]).
///
/// Ordered as tables list refusals: an OLM's first (the fewer OLMs the earlier, OLM v1
/// before OLM v0), then kube-apiserver's, nobody last.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RefusedBy {
    /// One bit per consumer, by [`CONSUMERS`]' order.
    bits: u8,
}

/// Every consumer, in [`Consumer`]'s order: bit `i` of a [`RefusedBy`] is `CONSUMERS[i]`.
const CONSUMERS: [Consumer; 6] = [
    Consumer::KubeApiserver,
    Consumer::OlmV0,
    Consumer::OlmV1,
    Consumer::Opm,
    Consumer::PodCannotStart,
    Consumer::OperatorHub,
];

impl RefusedBy {
    /// Nobody refuses it.
    pub const NOBODY: RefusedBy = RefusedBy { bits: 0 };

    /// OLM v0 and OLM v1 refuse it.
    pub const BOTH_OLMS: RefusedBy = RefusedBy::only(Consumer::OlmV0).and(Consumer::OlmV1);

    /// `consumer` alone refuses it.
    pub const fn only(consumer: Consumer) -> Self {
        RefusedBy::NOBODY.and(consumer)
    }

    /// These refusers and `consumer`.
    pub const fn and(self, consumer: Consumer) -> Self {
        let bit = match consumer {
            Consumer::KubeApiserver => 0,
            Consumer::OlmV0 => 1,
            Consumer::OlmV1 => 2,
            Consumer::Opm => 3,
            Consumer::PodCannotStart => 4,
            Consumer::OperatorHub => 5,
        };
        RefusedBy {
            bits: self.bits | 1 << bit,
        }
    }

    /// Whether `consumer` refuses it.
    pub fn contains(self, consumer: Consumer) -> bool {
        self == self.and(consumer)
    }

    /// Whether nobody refuses it.
    pub fn is_nobody(self) -> bool {
        self.bits == 0
    }

    /// The consumers that refuse it, in [`Consumer`]'s order.
    pub fn iter(self) -> impl Iterator<Item = Consumer> {
        CONSUMERS.into_iter().filter(move |c| self.contains(*c))
    }

    /// Whether it breaks clusters that take it although no OLM refuses it (kube-apiserver
    /// refuses requests clients make afterwards, or nobody refuses and data is lost).
    pub fn breaks_clusters(self) -> bool {
        !self.contains(Consumer::OlmV0) && !self.contains(Consumer::OlmV1)
    }

    /// Short form for tables: `v1`, `v0`, `both` (OLM v0 and OLM v1), `apiserver`, `none`;
    /// other sets as their consumers' ids joined by `+`.
    pub fn short(self) -> String {
        let word = |c: Consumer| match c {
            Consumer::OlmV0 => "v0",
            Consumer::OlmV1 => "v1",
            Consumer::KubeApiserver => "apiserver",
            other => other.id(),
        };
        match self {
            RefusedBy::NOBODY => "none".to_owned(),
            RefusedBy::BOTH_OLMS => "both".to_owned(),
            _ => self.iter().map(word).collect::<Vec<_>>().join("+"),
        }
    }

    /// The set as JSON writes it: `nobody`, `olm-v0`, `olm-v1`, `both-olms`, `apiserver`;
    /// other sets as their consumers' ids joined by `+`.
    pub fn id(self) -> String {
        match self {
            RefusedBy::NOBODY => "nobody".to_owned(),
            RefusedBy::BOTH_OLMS => "both-olms".to_owned(),
            _ if self == RefusedBy::only(Consumer::KubeApiserver) => "apiserver".to_owned(),
            _ => self.iter().map(Consumer::id).collect::<Vec<_>>().join("+"),
        }
    }

    /// The key of the table order (type docs).
    fn rank(self) -> (bool, bool, u32, bool, u8) {
        (
            self.breaks_clusters(),
            self.is_nobody(),
            self.bits.count_ones(),
            !self.contains(Consumer::OlmV1),
            self.bits,
        )
    }
}

impl Ord for RefusedBy {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.rank().cmp(&other.rank())
    }
}

impl PartialOrd for RefusedBy {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl From<Consumer> for RefusedBy {
    fn from(consumer: Consumer) -> Self {
        RefusedBy::only(consumer)
    }
}

impl std::fmt::Display for RefusedBy {
    /// As a finding's message ends: `refused by OLM v0 and OLM v1`, `refused by
    /// kube-apiserver (not by OLM)`, `refused by nobody`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_nobody() {
            return f.write_str("refused by nobody");
        }
        let names: Vec<&str> = self.iter().map(Consumer::as_str).collect();
        write!(f, "refused by {}", names.join(" and "))?;
        if *self == RefusedBy::only(Consumer::KubeApiserver) {
            f.write_str(" (not by OLM)")?;
        }
        Ok(())
    }
}

impl Serialize for RefusedBy {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.id())
    }
}

/// The verdict on one upgrade edge or case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Every check passed.
    Passed,
    /// A consumer (kube-apiserver, OLM v0, OLM v1) refused the upgrade; the error findings
    /// name it.
    Refused,
    /// The upgrade went through but an object lost data.
    DataLost,
    /// It failed another way (an error finding that is neither a refusal nor a loss).
    Failed,
    /// It could not be judged: the test environment failed before the verdict was known.
    NotRun,
}

impl Verdict {
    /// The verdict in words: `passed`, `refused`, `data lost`, `failed`, `not run`.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Passed => "passed",
            Verdict::Refused => "refused",
            Verdict::DataLost => "data lost",
            Verdict::Failed => "failed",
            Verdict::NotRun => "not run",
        }
    }

    /// Whether the upgrade failed: refused, data lost or failed (not [`Verdict::NotRun`],
    /// which says nothing about the release).
    pub fn failed(self) -> bool {
        matches!(self, Verdict::Refused | Verdict::DataLost | Verdict::Failed)
    }
}

/// How a rule the static and the live answer share judges what it sees: how bad it is, who
/// refuses (or, for a warning, who refuses later), and the consequence in words, which both
/// answers append to their own description of the object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Judgement {
    /// Error: the upgrade is refused; warning: it goes through but hurts later.
    pub severity: Severity,
    /// Who refuses.
    pub refused_by: Consumer,
    /// What follows, e.g. `OLM v0 fails the InstallPlan when such an object exists (…)`.
    pub consequence: &'static str,
}

/// A rule `upgrade check` (on the installed release's examples) and `upgrade test` (on the
/// objects a real apiserver holds) both apply: one judgement for one observation.
#[derive(Clone, Copy, Debug)]
pub struct SharedRule {
    /// The rule's name, after the answer's family (`crd-upgrade/…`, `live/…`).
    pub name: &'static str,
    /// The judgement, given whether the new CRD converts through a webhook.
    pub judge: fn(converts_through_webhook: bool) -> Judgement,
}

/// `existing-object-invalid`: an object that exists before the upgrade is invalid under the
/// new CRD's schema. OLM v0 validates every existing object against the new schema and fails
/// the InstallPlan — unless the new CRD converts through a webhook, when it only warns (it
/// trusts the webhook to convert them) and kube-apiserver refuses every later update of the
/// object.
pub const EXISTING_OBJECT_INVALID: SharedRule = SharedRule {
    name: "existing-object-invalid",
    judge: existing_object_invalid,
};

/// Every rule the static and the live answer share.
pub const SHARED_RULES: &[SharedRule] = &[EXISTING_OBJECT_INVALID];

fn existing_object_invalid(converts_through_webhook: bool) -> Judgement {
    if converts_through_webhook {
        Judgement {
            severity: Severity::Warning,
            refused_by: Consumer::KubeApiserver,
            consequence: "OLM v0 only warns because the new CRD converts through a webhook, but kube-apiserver refuses every update of such an object",
        }
    } else {
        Judgement {
            severity: Severity::Error,
            refused_by: Consumer::OlmV0,
            consequence: "OLM v0 fails the InstallPlan when such an object exists (\"updated validation is too restrictive\")",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_json_names() {
        let all = [
            Verdict::Passed,
            Verdict::Refused,
            Verdict::DataLost,
            Verdict::Failed,
            Verdict::NotRun,
        ];
        let words: Vec<&str> = all.iter().map(|v| v.word()).collect();
        assert_eq!(
            words,
            ["passed", "refused", "data lost", "failed", "not run"]
        );
        assert_eq!(
            serde_json::to_string(&all).unwrap(),
            r#"["passed","refused","data-lost","failed","not-run"]"#
        );
        let failed: Vec<bool> = all.iter().map(|v| v.failed()).collect();
        assert_eq!(failed, [false, true, true, true, false]);
    }

    #[test]
    fn who_refuses_reads_and_sorts_as_the_tables_write_it() {
        let api = RefusedBy::only(Consumer::KubeApiserver);
        let v0 = RefusedBy::only(Consumer::OlmV0);
        let v1 = RefusedBy::from(Consumer::OlmV1);
        let mut all = [RefusedBy::NOBODY, api, RefusedBy::BOTH_OLMS, v0, v1];
        all.sort();
        assert_eq!(all, [v1, v0, RefusedBy::BOTH_OLMS, api, RefusedBy::NOBODY]);
        let short: Vec<String> = all.iter().map(|r| r.short()).collect();
        assert_eq!(short, ["v1", "v0", "both", "apiserver", "none"]);
        let said: Vec<String> = all.iter().map(|r| r.to_string()).collect();
        assert_eq!(
            said,
            [
                "refused by OLM v1",
                "refused by OLM v0",
                "refused by OLM v0 and OLM v1",
                "refused by kube-apiserver (not by OLM)",
                "refused by nobody",
            ]
        );
        assert_eq!(
            serde_json::to_string(&all).unwrap(),
            r#"["olm-v1","olm-v0","both-olms","apiserver","nobody"]"#
        );
        let breaks: Vec<bool> = all.iter().map(|r| r.breaks_clusters()).collect();
        assert_eq!(breaks, [false, false, false, true, true]);
        assert!(RefusedBy::BOTH_OLMS.contains(Consumer::OlmV1));
        assert!(!v0.contains(Consumer::OlmV1));
    }

    #[test]
    fn an_invalid_existing_object_is_refused_by_olm_v0_unless_a_webhook_converts() {
        let table = [
            (false, Severity::Error, Consumer::OlmV0),
            (true, Severity::Warning, Consumer::KubeApiserver),
        ];
        for (webhook, severity, refused_by) in table {
            let judged = (EXISTING_OBJECT_INVALID.judge)(webhook);
            assert_eq!((judged.severity, judged.refused_by), (severity, refused_by));
        }
        let names: Vec<&str> = SHARED_RULES.iter().map(|r| r.name).collect();
        assert_eq!(names, ["existing-object-invalid"]);
    }
}
