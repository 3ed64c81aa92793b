//! What OLM is doing while a step waits, told to the caller as it changes, under either OLM:
//! one summary of OLM's state whenever it differs from the last (OLM v0: the InstallPlan,
//! the CSV and the pods; OLM v1: the ClusterExtension's conditions), a reminder of what is
//! awaited when nothing changed for [`HEARTBEAT`], and (OLM v0) each InstallPlan step whose
//! kind the apiserver does not serve. This crate never prints: an [`Observer`] decides
//! where the news goes.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a wait goes without news before the observer is reminded what is awaited.
pub const HEARTBEAT: Duration = Duration::from_secs(20);

/// One piece of news about a step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// OLM's state changed: how it is now.
    Changed(String),
    /// Nothing changed for [`HEARTBEAT`] or longer: what is awaited, and the state.
    Unchanged(String),
    /// InstallPlan `plan` has a step creating an object of a kind the apiserver does not
    /// serve: OLM retries the plan until its retry timeout, then fails it.
    NotServed {
        /// The InstallPlan.
        plan: String,
        /// The kind's API group.
        group: String,
        /// The kind's version.
        version: String,
        /// The kind.
        kind: String,
        /// The object the step creates.
        name: String,
    },
}

/// News about a step, and how long the step has run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Time since the step began.
    pub elapsed: Duration,
    /// What happened.
    pub event: Event,
}

/// Who is told about a step's progress (the command line prints it on stderr).
#[derive(Clone)]
pub struct Observer(Arc<dyn Fn(&Progress) + Send + Sync>);

impl Observer {
    /// Each piece of news passed to `f`.
    pub fn new(f: impl Fn(&Progress) + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    /// Nobody is told.
    pub fn silent() -> Self {
        Self::new(|_| {})
    }

    fn tell(&self, elapsed: Duration, event: Event) {
        (self.0)(&Progress { elapsed, event });
    }
}

impl std::fmt::Debug for Observer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Observer")
    }
}

/// Follows one wait: tells the observer when the state changes, or reminds it when it has
/// not for [`HEARTBEAT`].
pub(crate) struct Tracker<'a> {
    observer: &'a Observer,
    started: Instant,
    last: Option<String>,
    told_at: Instant,
    told_once: BTreeSet<(String, String)>,
}

impl<'a> Tracker<'a> {
    /// A wait of a step that began at `started`.
    pub(crate) fn new(observer: &'a Observer, started: Instant) -> Self {
        Self {
            observer,
            started,
            last: None,
            told_at: started,
            told_once: BTreeSet::new(),
        }
    }

    /// The state seen at `now`, and what the wait is for.
    pub(crate) fn saw(&mut self, state: String, awaited: &str, now: Instant) {
        let elapsed = now.duration_since(self.started);
        if self.last.as_deref() != Some(state.as_str()) {
            self.observer.tell(elapsed, Event::Changed(state.clone()));
            self.last = Some(state);
            self.told_at = now;
        } else if now.duration_since(self.told_at) >= HEARTBEAT {
            let waited = now.duration_since(self.told_at).as_secs_f64();
            let line = format!("still waiting for {awaited}; unchanged for {waited:.0} s: {state}");
            self.observer.tell(elapsed, Event::Unchanged(line));
            self.told_at = now;
        }
    }

    /// Tells `event` unless one of the same `key` was told before in this wait: news worth
    /// telling once (under OLM v0, each kind an InstallPlan step needs that is not served).
    pub(crate) fn tell_once(&mut self, key: (String, String), event: Event, now: Instant) {
        if self.told_once.insert(key) {
            self.observer.tell(now.duration_since(self.started), event);
            self.told_at = now;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn the_observer_hears_changes_and_a_reminder_after_a_quiet_spell() {
        let heard = Arc::new(Mutex::new(Vec::new()));
        let sink = heard.clone();
        let observer = Observer::new(move |p| sink.lock().unwrap().push(p.clone()));
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut tracker = Tracker::new(&observer, t0);
        tracker.saw("A".into(), "x", at(1));
        tracker.saw("A".into(), "x", at(10));
        tracker.saw("B".into(), "x", at(12));
        tracker.saw("B".into(), "x", at(31));
        tracker.saw("B".into(), "x", at(32));
        tracker.saw("B".into(), "x", at(52));
        let got: Vec<(u64, Event)> = heard
            .lock()
            .unwrap()
            .iter()
            .map(|p| (p.elapsed.as_secs(), p.event.clone()))
            .collect();
        assert_eq!(
            got,
            [
                (1, Event::Changed("A".into())),
                (12, Event::Changed("B".into())),
                (
                    32,
                    Event::Unchanged("still waiting for x; unchanged for 20 s: B".into())
                ),
                (
                    52,
                    Event::Unchanged("still waiting for x; unchanged for 20 s: B".into())
                ),
            ]
        );
    }
}
