//! What olmpack's three upgrade answers say about one upgrade: `upgrade check` (static, per
//! edge), `upgrade test` (live, per edge on a real apiserver) and `upgrade olm` (per case
//! under the real OLM v0) each give one [`Verdict`] per edge or case, in the same words; who
//! refuses is named by the [`Finding`](crate::report::Finding)s behind it (their
//! [`Consumer`](crate::report::Consumer)).

use serde::Serialize;

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
