//! What olmpack's three upgrade answers say about one upgrade: `upgrade check` (static, per
//! edge), `upgrade test` (live, per edge on a real apiserver) and `upgrade olm` (per case
//! under the real OLM v0) each give one [`Verdict`] per edge or case, in the same words; who
//! refuses is named by the [`Finding`](crate::report::Finding)s behind it (their
//! [`Consumer`](crate::report::Consumer)). Every answer names the upgrade it judges with the
//! one [`Edge`].

use std::collections::BTreeSet;

use serde::Serialize;

/// How an edge is in the graph.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Via {
    /// The target's `replaces` names the source.
    Replaces,
    /// The target's `skips` lists the source.
    Skips,
    /// The source's version is in the target's `skipRange`.
    SkipRange,
    /// From a channel head of the previously published catalog to the new head.
    NextHead,
}

impl Via {
    /// The edge kind as the report prints it, e.g. `skipRange`.
    pub fn as_str(self) -> &'static str {
        match self {
            Via::Replaces => "replaces",
            Via::Skips => "skips",
            Via::SkipRange => "skipRange",
            Via::NextHead => "next head",
        }
    }
}

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
    pub via: BTreeSet<Via>,
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
}
