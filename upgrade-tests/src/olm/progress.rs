//! What OLM is doing while a step waits, told to the caller as it changes: one summary of
//! the InstallPlan, the CSV and the pods whenever it differs from the last, a reminder of
//! what is awaited when nothing changed for [`HEARTBEAT`], and each InstallPlan step whose
//! kind the apiserver does not serve. This crate never prints: an [`Observer`] decides
//! where the news goes.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::resources::{InstallPlanStatus, InstallPlanStep};

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
    not_served: BTreeSet<(String, String)>,
}

impl<'a> Tracker<'a> {
    /// A wait of a step that began at `started`.
    pub(crate) fn new(observer: &'a Observer, started: Instant) -> Self {
        Self {
            observer,
            started,
            last: None,
            told_at: started,
            not_served: BTreeSet::new(),
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

    /// Tells once of each step of InstallPlan `plan` whose kind is not served.
    pub(super) fn not_served(&mut self, plan: &str, steps: &[&InstallPlanStep], now: Instant) {
        for step in steps {
            let r = &step.resource;
            if self.not_served.insert((r.group.clone(), r.kind.clone())) {
                let event = Event::NotServed {
                    plan: plan.to_owned(),
                    group: r.group.clone(),
                    version: r.version.clone(),
                    kind: r.kind.clone(),
                    name: r.name.clone(),
                };
                self.observer.tell(now.duration_since(self.started), event);
                self.told_at = now;
            }
        }
    }
}

/// `InstallPlan NAME: PHASE (N/M steps Created, K WaitingForApi)`: the plan's phase and how
/// many of its steps are in each status, the most common first.
pub(super) fn plan_summary(name: &str, plan: &InstallPlanStatus) -> String {
    let phase = match plan.phase.as_str() {
        "" => "no phase yet",
        phase => phase,
    };
    if plan.plan.is_empty() {
        return format!("InstallPlan {name}: {phase}");
    }
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for step in &plan.plan {
        let status = match step.status.as_str() {
            "" => "Unknown",
            status => status,
        };
        *counts.entry(status).or_default() += 1;
    }
    let mut counts: Vec<(&str, usize)> = counts.into_iter().collect();
    counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let parts: Vec<String> = counts
        .iter()
        .enumerate()
        .map(|(i, (status, n))| match i {
            0 => format!("{n}/{} steps {status}", plan.plan.len()),
            _ => format!("{n} {status}"),
        })
        .collect();
    format!("InstallPlan {name}: {phase} ({})", parts.join(", "))
}

/// `ClusterServiceVersion NAME: PHASE (REASON: MESSAGE)`, or that OLM has not made it yet.
pub(super) fn csv_summary(name: &str, phase: &str, reason: &str, message: &str) -> String {
    match (phase, reason, message) {
        ("", _, _) => format!("ClusterServiceVersion {name}: not created yet"),
        (phase, "", "") => format!("ClusterServiceVersion {name}: {phase}"),
        (phase, reason, "") => format!("ClusterServiceVersion {name}: {phase} ({reason})"),
        (phase, reason, message) => {
            format!("ClusterServiceVersion {name}: {phase} ({reason}: {message})")
        }
    }
}

/// `; pods waiting: P1: WHY; P2: WHY`, or nothing when no pod is refused.
pub(super) fn pods_summary(pods: &[String]) -> String {
    match pods {
        [] => String::new(),
        pods => format!("; pods waiting: {}", pods.join("; ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Mutex;

    #[test]
    fn an_install_plan_is_summarised_by_the_statuses_of_its_steps() {
        let status = |steps: serde_json::Value| -> InstallPlanStatus {
            serde_json::from_value(json!({"phase": "Installing", "plan": steps})).unwrap()
        };
        let step = |kind: &str, s: &str| {
            json!({"resolving": "x.v1", "status": s,
                   "resource": {"group": "", "version": "v1", "kind": kind, "name": "n"}})
        };
        let cases = [
            (json!([]), "InstallPlan install-abc: Installing"),
            (
                json!([
                    step("CustomResourceDefinition", "Created"),
                    step("ServiceMonitor", "WaitingForApi"),
                    step("ServiceAccount", "Created"),
                    step("ClusterServiceVersion", "Present"),
                    step("Service", ""),
                ]),
                "InstallPlan install-abc: Installing (2/5 steps Created, 1 Present, 1 Unknown, 1 WaitingForApi)",
            ),
        ];
        for (steps, want) in cases {
            assert_eq!(plan_summary("install-abc", &status(steps)), want);
        }
    }

    #[test]
    fn a_csv_is_summarised_by_phase_reason_and_message() {
        let cases = [
            (("", "", ""), "ClusterServiceVersion x.v1: not created yet"),
            (("Pending", "", ""), "ClusterServiceVersion x.v1: Pending"),
            (
                ("Installing", "InstallWaiting", "waiting for deployment x"),
                "ClusterServiceVersion x.v1: Installing (InstallWaiting: waiting for deployment x)",
            ),
        ];
        for ((phase, reason, message), want) in cases {
            assert_eq!(csv_summary("x.v1", phase, reason, message), want);
        }
    }

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
