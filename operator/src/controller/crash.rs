//! Crash points for crash-safety tests: with `WEBAPP_OPERATOR_CRASH_AT=<point>` the process
//! exits with [`CRASH_EXIT_CODE`] the first time a reconcile reaches that point, as a kill
//! there would. Unset (the default), nothing happens.

use std::str::FromStr;

/// Environment variable that arms a crash point.
pub const CRASH_ENV: &str = "WEBAPP_OPERATOR_CRASH_AT";
/// Exit code of a deliberate crash.
pub const CRASH_EXIT_CODE: i32 = 86;

/// Where a reconcile can be made to crash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CrashPoint {
    BeforeDeploymentApply,
    AfterDeploymentApply,
    BeforeStatusWrite,
}

impl CrashPoint {
    /// Every crash point.
    pub const ALL: [CrashPoint; 3] = [
        CrashPoint::BeforeDeploymentApply,
        CrashPoint::AfterDeploymentApply,
        CrashPoint::BeforeStatusWrite,
    ];

    /// The value of [`CRASH_ENV`] that arms this point.
    pub fn name(self) -> &'static str {
        match self {
            CrashPoint::BeforeDeploymentApply => "before-deployment-apply",
            CrashPoint::AfterDeploymentApply => "after-deployment-apply",
            CrashPoint::BeforeStatusWrite => "before-status-write",
        }
    }
}

/// An unknown crash point name.
#[derive(Debug, thiserror::Error)]
#[error(
    "unknown crash point {0:?}; expected before-deployment-apply, after-deployment-apply or before-status-write"
)]
pub struct UnknownCrashPoint(String);

impl FromStr for CrashPoint {
    type Err = UnknownCrashPoint;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| UnknownCrashPoint(s.to_owned()))
    }
}

/// Exits the process if `armed` is `point`.
pub fn check(armed: Option<CrashPoint>, point: CrashPoint) {
    if armed == Some(point) {
        tracing::error!(point = point.name(), "crash point reached; exiting");
        std::process::exit(CRASH_EXIT_CODE);
    }
}
