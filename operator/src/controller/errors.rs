//! Reconcile errors and how each class is retried.
//!
//! | class | cause | retry |
//! |---|---|---|
//! | [`ErrorClass::Conflict`] | 409, or a JSON-patch precondition that no longer holds | re-read from the cache and recompute almost at once |
//! | [`ErrorClass::Transient`] | anything else from the API (5xx, timeouts, 429, 403) | exponential backoff with jitter, per object |
//!
//! An invalid spec is not an error: the reconcile reports it in the status and waits for a
//! spec change (no retry storm).

use std::time::Duration;

/// Failure of one reconcile step; the message names the step and the object.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error("failed to {step} for WebApp {key}")]
    Api {
        step: &'static str,
        key: String,
        #[source]
        source: kube::Error,
    },
    /// The finalizer helper found no name on the object (never the case for one read from
    /// the API).
    #[error("WebApp {key} has no name, so its finalizer cannot be managed")]
    Unnamed { key: String },
    /// A watch ended before its store held the initial list (the controller is stopping).
    #[error("the watch caches closed before WebApp {key} could be reconciled")]
    CachesClosed { key: String },
}

/// How an error is retried.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorClass {
    Conflict,
    Transient,
}

impl ReconcileError {
    /// Wraps an API error of `step` for `key`.
    pub fn api<'a>(step: &'static str, key: &'a str) -> impl FnOnce(kube::Error) -> Self + 'a {
        move |source| ReconcileError::Api {
            step,
            key: key.to_owned(),
            source,
        }
    }

    /// The retry class.
    pub fn class(&self) -> ErrorClass {
        match self {
            ReconcileError::Api { source, .. } => match source {
                kube::Error::Api(status) if status.code == 409 => ErrorClass::Conflict,
                // A failed JSON-patch `test` (our precondition) is a conflict too.
                kube::Error::Api(status)
                    if status.code == 422 && status.message.contains("test operation") =>
                {
                    ErrorClass::Conflict
                }
                _ => ErrorClass::Transient,
            },
            ReconcileError::Unnamed { .. } | ReconcileError::CachesClosed { .. } => {
                ErrorClass::Transient
            }
        }
    }

    /// A stable machine-readable reason for metrics and conditions.
    pub fn reason(&self) -> &'static str {
        match (self.class(), self) {
            (ErrorClass::Conflict, _) => "Conflict",
            (ErrorClass::Transient, ReconcileError::Api { source, .. }) => match source {
                kube::Error::Api(s) if s.code == 403 => "Forbidden",
                kube::Error::Api(s) if s.code == 429 => "Throttled",
                kube::Error::Api(s) if s.code >= 500 => "ServerError",
                _ => "ApiUnavailable",
            },
            (ErrorClass::Transient, ReconcileError::Unnamed { .. }) => "Unnamed",
            (ErrorClass::Transient, ReconcileError::CachesClosed { .. }) => "CachesClosed",
        }
    }
}

/// Delay before retrying a conflict.
pub const CONFLICT_DELAY: Duration = Duration::from_millis(100);
/// First transient-error delay; doubles per consecutive failure.
pub const BACKOFF_BASE: Duration = Duration::from_millis(500);
/// Longest transient-error delay.
pub const BACKOFF_MAX: Duration = Duration::from_secs(300);

/// The delay before attempt `failures + 1` after `failures` consecutive transient errors,
/// with ±50 % jitter derived from `seed` so that objects failing together spread out.
pub fn backoff(failures: u32, seed: u64) -> Duration {
    let exp = BACKOFF_BASE
        .saturating_mul(1u32 << failures.min(20))
        .min(BACKOFF_MAX);
    // splitmix64: a well-distributed value from the seed.
    let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    let factor = 0.5 + (z % 1000) as f64 / 1000.0;
    exp.mul_f64(factor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_is_capped_and_jittered() {
        let first = backoff(0, 1);
        assert!(first >= BACKOFF_BASE / 2 && first <= BACKOFF_BASE * 3 / 2);
        assert!(backoff(30, 1) <= BACKOFF_MAX * 3 / 2);
        let spread: std::collections::BTreeSet<_> = (0..20).map(|s| backoff(3, s)).collect();
        assert!(spread.len() > 10, "jitter spreads retries: {spread:?}");
    }

    fn api_error(code: u16, message: &str) -> ReconcileError {
        ReconcileError::Api {
            step: "apply the Deployment",
            key: "ns/app".to_owned(),
            source: kube::Error::Api(Box::new(
                kube::core::Status::failure(message, "x").with_code(code),
            )),
        }
    }

    #[test]
    fn errors_are_classified() {
        assert_eq!(api_error(409, "conflict").class(), ErrorClass::Conflict);
        assert_eq!(
            api_error(422, "the server rejected our request due to an error in our request: test operation failed").class(),
            ErrorClass::Conflict
        );
        assert_eq!(api_error(500, "boom").class(), ErrorClass::Transient);
        assert_eq!(api_error(403, "no").reason(), "Forbidden");
        assert_eq!(
            api_error(503, "x").to_string(),
            "failed to apply the Deployment for WebApp ns/app"
        );
    }
}
