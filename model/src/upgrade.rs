//! What olmpack's three upgrade answers say about one upgrade: `upgrade check` (static, per
//! edge), `upgrade test` (live, per edge on a real apiserver) and `upgrade olm` (per case
//! under the real OLM v0) each give one [`Verdict`] per edge or case, in the same words; who
//! refuses is named by the [`Finding`](crate::report::Finding)s behind it (their
//! [`Consumer`](crate::report::Consumer)). Every answer names the upgrade it judges with the
//! one [`Edge`].

use std::collections::BTreeSet;

use serde::Serialize;

use crate::report::{Consumer, Severity};
use crate::upgrade_graph::EdgeKind;

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

    /// `from -> to`.
    pub fn label(&self) -> String {
        format!("{} -> {}", self.from, self.to)
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
