//! Leader election across a change of the operator's process.
//!
//! An operator that elects a leader (kubebuilder's `--leader-elect`) holds a Lease in its
//! namespace while its controllers run. A stopped process does not give it back (a kubelet's
//! kill does not either, unless the manager releases it on cancel), so the next release's
//! process waits until the Lease has expired before its controllers run — up to
//! `leaseDurationSeconds`, 15 s for kubebuilder. A cluster waits just as long during a rolling
//! update. The live test waits too: the windows in which it watches the new release's
//! controllers must start after they run, or it would judge an edge whose controllers never
//! ran and call a lossy release green.
//!
//! Before a process starts, [`held`] lists the Leases of the namespace that a stopped process
//! still holds (a holder and a renewal less than a lease's duration ago); after it started,
//! [`await_takeover`] waits until another holder has each one, or until it has been expired
//! for [`GRACE`] without one (the new release does not elect with that Lease).

use std::time::{Duration, Instant};

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;
use kube::Client;
use kube::api::{Api, ListParams};

/// How long after a Lease expired a new process has to take it: a candidate retries every
/// 2 s (controller-runtime's `RetryPeriod`), so one that has not taken it by then does not use it.
pub const GRACE: Duration = Duration::from_secs(5);
/// How often the Leases are read while waiting.
const POLL: Duration = Duration::from_millis(250);
/// The longest lease duration waited out, however long a Lease says it is.
const LONGEST: Duration = Duration::from_secs(120);

/// A Lease a stopped process holds, and when it expires.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    /// The Lease's name.
    pub name: String,
    /// Its holder's identity when the process stopped.
    pub holder: String,
    /// When it expires if nobody renews it.
    pub expires: Instant,
}

/// What became of a [`Held`] Lease once the next process started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Takeover {
    /// Another holder took it, this long after the process started.
    Taken { lease: String, after: Duration },
    /// It was deleted or given back before anyone took it.
    Released { lease: String },
    /// It expired and nobody took it within [`GRACE`]: the new release does not elect with it.
    NotTaken { lease: String, waited: Duration },
    /// It could not be read: the apiserver's words.
    Unread { lease: String, error: String },
}

/// The Leases of `namespace` held by a holder that renewed them less than their duration ago.
/// Called when no operator process runs, so every holder is a stopped process. A failed list
/// is no Lease (the wait is an optimisation of what is compared, never a verdict).
pub async fn held(client: &Client, namespace: &str) -> Vec<Held> {
    let api: Api<Lease> = Api::namespaced(client.clone(), namespace);
    let Ok(list) = api.list(&ListParams::default()).await else {
        return Vec::new();
    };
    let now = Timestamp::now();
    let started = Instant::now();
    list.items
        .iter()
        .filter_map(|lease| {
            let remaining = remaining(lease, now)?;
            Some(Held {
                name: lease.metadata.name.clone()?,
                holder: lease.spec.as_ref()?.holder_identity.clone()?,
                expires: started + remaining,
            })
        })
        .collect()
}

/// How long `lease` is still held at `now`: `None` when it has no holder or has expired.
fn remaining(lease: &Lease, now: Timestamp) -> Option<Duration> {
    let spec = lease.spec.as_ref()?;
    if spec
        .holder_identity
        .as_deref()
        .unwrap_or_default()
        .is_empty()
    {
        return None;
    }
    let renewed = spec.renew_time.as_ref().or(spec.acquire_time.as_ref())?.0;
    let duration = Duration::from_secs(u64::try_from(spec.lease_duration_seconds?).ok()?);
    let since = Duration::try_from(now.duration_since(renewed)).unwrap_or_default();
    duration
        .min(LONGEST)
        .checked_sub(since)
        .filter(|d| !d.is_zero())
}

/// Waits until each of `held` has a new holder, was released, or stayed untaken [`GRACE`]
/// past its expiry; one [`Takeover`] each, in the order given.
pub async fn await_takeover(client: &Client, namespace: &str, held: &[Held]) -> Vec<Takeover> {
    let api: Api<Lease> = Api::namespaced(client.clone(), namespace);
    let started = Instant::now();
    let mut outcomes: Vec<Option<Takeover>> = vec![None; held.len()];
    while outcomes.iter().any(Option::is_none) {
        for (lease, outcome) in held.iter().zip(outcomes.iter_mut()) {
            if outcome.is_none() {
                *outcome = observe(&api, lease, started).await;
            }
        }
        if outcomes.iter().any(Option::is_none) {
            tokio::time::sleep(POLL).await;
        }
    }
    outcomes.into_iter().flatten().collect()
}

/// One read of `lease`: its outcome if it has one yet.
async fn observe(api: &Api<Lease>, lease: &Held, started: Instant) -> Option<Takeover> {
    let name = lease.name.clone();
    let current = match api.get_opt(&lease.name).await {
        Ok(current) => current,
        Err(err) => {
            return Some(Takeover::Unread {
                lease: name,
                error: err.to_string(),
            });
        }
    };
    let holder = current
        .and_then(|l| l.spec)
        .and_then(|s| s.holder_identity)
        .unwrap_or_default();
    if holder.is_empty() {
        Some(Takeover::Released { lease: name })
    } else if holder != lease.holder {
        Some(Takeover::Taken {
            lease: name,
            after: started.elapsed(),
        })
    } else if Instant::now() > lease.expires + GRACE {
        Some(Takeover::NotTaken {
            lease: name,
            waited: started.elapsed(),
        })
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::coordination::v1::LeaseSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;

    fn lease(now: Timestamp, holder: Option<&str>, ago: i64, duration: Option<i32>) -> Lease {
        Lease {
            spec: Some(LeaseSpec {
                holder_identity: holder.map(str::to_owned),
                renew_time: Some(MicroTime(
                    now - k8s_openapi::jiff::SignedDuration::from_secs(ago),
                )),
                lease_duration_seconds: duration,
                ..LeaseSpec::default()
            }),
            ..Lease::default()
        }
    }

    #[test]
    fn a_lease_is_held_for_what_is_left_of_its_duration() {
        let now = Timestamp::now();
        // (holder, renewed seconds ago, duration, seconds left)
        type Row = (Option<&'static str>, i64, Option<i32>, Option<u64>);
        let table: &[Row] = &[
            (Some("a"), 5, Some(15), Some(10)),
            (Some("a"), 20, Some(15), None),
            (Some("a"), 15, Some(15), None),
            (Some(""), 0, Some(15), None),
            (None, 0, Some(15), None),
            (Some("a"), 0, None, None),
            (Some("a"), 0, Some(-1), None),
            (Some("a"), 0, Some(100_000), Some(LONGEST.as_secs())),
        ];
        for &(holder, ago, duration, want) in table {
            let got = remaining(&lease(now, holder, ago, duration), now).map(|d| d.as_secs_f64());
            match (got, want) {
                (None, None) => {}
                (Some(got), Some(want)) => assert!(
                    (got - want as f64).abs() < 1.0,
                    "{holder:?} {ago} {duration:?}: {got} s, want {want} s"
                ),
                _ => panic!("{holder:?} {ago} {duration:?}: {got:?}, want {want:?}"),
            }
        }
    }
}
