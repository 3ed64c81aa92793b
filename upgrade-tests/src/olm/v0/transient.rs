//! Transient transport errors between olmpack and the test control plane's apiserver, retried
//! within a bound and remembered, so a report can say which calls were retried and why.
//!
//! Under load the apiserver may close a connection before its answer is complete, a
//! connection may be reset or end early, the apiserver may answer 5xx for a moment (etcd
//! slow, a webhook's certificate not yet trusted after OLM rotated it), and none of these is
//! a refusal: the same call a moment later succeeds. Only calls that are safe to repeat go
//! through [`retrying`] (reads, patches that set a value, and creations whose "already
//! exists" after a cut-off attempt is that attempt's success).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use olmpack_model::report::error_chain;

use super::OlmError;

/// How long one call is retried while it fails transiently; longer is an environment
/// failure ([`super::OlmError::Unreachable`]).
pub const RETRY_FOR: Duration = Duration::from_secs(30);
/// The first pause between attempts (doubling up to two seconds).
pub const FIRST_PAUSE: Duration = Duration::from_millis(250);
const MAX_PAUSE: Duration = Duration::from_secs(2);

/// Why a failed call is worth repeating, in olmpack's words; `None` when the apiserver
/// refused it (or the failure is not one that heals by itself).
pub fn transient(err: &kube::Error) -> Option<String> {
    if let kube::Error::Api(status) = err {
        if status.message.contains("x509: ") {
            return Some(format!(
                "the apiserver did not yet trust a webhook's certificate (HTTP {})",
                status.code
            ));
        }
        return (status.code >= 500).then(|| {
            format!(
                "the apiserver answered HTTP {} {} for a moment",
                status.code, status.reason
            )
        });
    }
    let chain = error_chain(err).to_ascii_lowercase();
    let said = [
        (
            "connection closed before message completed",
            "the apiserver closed the connection before its answer was complete",
        ),
        (
            "connection reset",
            "the connection to the apiserver was reset",
        ),
        ("broken pipe", "the connection to the apiserver broke"),
        ("incomplete message", "the apiserver's answer ended early"),
        ("eof", "the connection to the apiserver ended early (EOF)"),
        (
            "close_notify",
            "the connection to the apiserver ended early (EOF)",
        ),
        ("x509: ", "a certificate was not yet trusted"),
    ];
    said.iter()
        .find(|(library, _)| chain.contains(library))
        .map(|(_, ours)| (*ours).to_owned())
}

impl super::OlmEnv {
    /// [`retrying`] with this environment's record of retries ([`super::OlmEnv::retried`]).
    pub(super) async fn call<T, F, Fut>(
        &self,
        action: impl Into<String>,
        call: F,
    ) -> Result<T, OlmError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, kube::Error>>,
    {
        retrying(self.retries(), action, call).await
    }
}

/// `call` (a read, or a write that is safe to repeat), repeated while it fails transiently
/// ([`transient`]) for up to [`RETRY_FOR`]; each retry is noted in `retried` under
/// `action`. A refusal is [`OlmError::Api`] at once; a transient failure that lasts is
/// [`OlmError::Unreachable`].
pub async fn retrying<T, F, Fut>(
    retried: &Retried,
    action: impl Into<String>,
    mut call: F,
) -> Result<T, OlmError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, kube::Error>>,
{
    let action = action.into();
    let started = std::time::Instant::now();
    let mut pause = FIRST_PAUSE;
    loop {
        let source = match call().await {
            Ok(value) => return Ok(value),
            Err(source) => source,
        };
        let Some(cause) = transient(&source) else {
            return Err(OlmError::Api { action, source });
        };
        if started.elapsed() >= RETRY_FOR {
            let waited = started.elapsed();
            return Err(OlmError::Unreachable {
                action,
                cause,
                waited,
            });
        }
        retried.note(&action, &cause);
        tokio::time::sleep(pause).await;
        pause = next_pause(pause);
    }
}

/// The pause after `pause`.
pub fn next_pause(pause: Duration) -> Duration {
    (pause * 2).min(MAX_PAUSE)
}

/// The calls retried since the last [`Retried::take`]: per call and cause, how many times.
#[derive(Debug, Default)]
pub struct Retried(Mutex<BTreeMap<(String, String), u32>>);

impl Retried {
    /// Remembers that `action` was retried because of `cause`.
    pub fn note(&self, action: &str, cause: &str) {
        let mut seen = self.0.lock().unwrap_or_else(|p| p.into_inner());
        *seen
            .entry((action.to_owned(), cause.to_owned()))
            .or_default() += 1;
    }

    /// What was retried, one line per call and cause (`ACTION: CAUSE (retried N×)`), and
    /// forgets it.
    pub fn take(&self) -> Vec<String> {
        let mut seen = self.0.lock().unwrap_or_else(|p| p.into_inner());
        std::mem::take(&mut *seen)
            .into_iter()
            .map(|((action, cause), n)| format!("{action}: {cause} (retried {n}×)"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api(code: u16, reason: &str, message: &str) -> kube::Error {
        let mut status = kube::core::Status::failure(message, reason);
        status.code = code;
        kube::Error::Api(Box::new(status))
    }

    #[test]
    fn only_what_heals_by_itself_is_transient() {
        let cases = [
            (
                api(503, "ServiceUnavailable", "etcdserver: leader changed"),
                Some("the apiserver answered HTTP 503 ServiceUnavailable for a moment"),
            ),
            (
                api(
                    500,
                    "InternalError",
                    "conversion webhook for fleet.example.com/v2, Kind=FirstMate failed: Post \"https://10.0.0.1:443/convert\": tls: failed to verify certificate: x509: certificate signed by unknown authority",
                ),
                Some("the apiserver did not yet trust a webhook's certificate (HTTP 500)"),
            ),
            (api(404, "NotFound", "installplans \"x\" not found"), None),
            (api(422, "Invalid", "spec: Required value"), None),
            (
                kube::Error::Service(
                    std::io::Error::other("connection closed before message completed").into(),
                ),
                Some("the apiserver closed the connection before its answer was complete"),
            ),
            (
                kube::Error::Service(
                    std::io::Error::new(
                        std::io::ErrorKind::ConnectionReset,
                        "Connection reset by peer (os error 104)",
                    )
                    .into(),
                ),
                Some("the connection to the apiserver was reset"),
            ),
            (
                kube::Error::Service(std::io::Error::other("unexpected EOF").into()),
                Some("the connection to the apiserver ended early (EOF)"),
            ),
            (
                kube::Error::Service(std::io::Error::other("dns error: no such host").into()),
                None,
            ),
        ];
        for (err, want) in cases {
            assert_eq!(transient(&err).as_deref(), want, "{err}");
        }
    }

    #[test]
    fn retried_calls_are_counted_per_call_and_cause_then_forgotten() {
        let retried = Retried::default();
        retried.note("read InstallPlan install-1", "the connection was reset");
        retried.note("read InstallPlan install-1", "the connection was reset");
        retried.note("read Subscription a", "the apiserver answered HTTP 503");
        assert_eq!(
            retried.take(),
            [
                "read InstallPlan install-1: the connection was reset (retried 2×)",
                "read Subscription a: the apiserver answered HTTP 503 (retried 1×)",
            ]
        );
        assert!(retried.take().is_empty());
    }

    #[test]
    fn pauses_double_up_to_two_seconds() {
        let mut pause = FIRST_PAUSE;
        let mut seen = Vec::new();
        for _ in 0..5 {
            seen.push(pause.as_millis());
            pause = next_pause(pause);
        }
        assert_eq!(seen, [250, 500, 1000, 2000, 2000]);
    }
}
