//! Progress lines of a run: [`StepLog`] is where they go, [`CaseLog`] writes one case's
//! lines, each prefixed with the case and the seconds since it began.

use std::sync::Arc;
use std::time::Instant;

use olmpack_envtest::olm::progress;
use olmpack_envtest::olm::{Event, Observer};

use super::Case;

/// Where progress lines go: one line per step of a case, prefixed with the case.
#[derive(Clone)]
pub struct StepLog(Arc<dyn Fn(&str) + Send + Sync>);

impl StepLog {
    /// Each step line passed to `f`.
    pub fn new(f: impl Fn(&str) + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    /// No progress lines.
    pub fn silent() -> Self {
        Self::new(|_| {})
    }

    /// A line about the run as a whole (not one case's step).
    pub(super) fn line(&self, text: &str) {
        (self.0)(text);
    }
}

impl std::fmt::Debug for StepLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StepLog")
    }
}

/// The progress lines of one case: `[PACKAGE FROM → TO, MODE] SECONDS s  WHAT`.
#[derive(Clone)]
pub(super) struct CaseLog {
    log: StepLog,
    label: String,
    started: Instant,
}

impl CaseLog {
    /// The lines of `case`, its seconds counted from now.
    pub(super) fn new(log: &StepLog, case: &Case) -> Self {
        let label = format!("{} {}", case.package, case.title());
        Self {
            log: log.clone(),
            label: format!("{label}, {}", case.install_mode),
            started: Instant::now(),
        }
    }

    /// When the case began.
    pub(super) fn started(&self) -> Instant {
        self.started
    }

    /// One line saying `what`.
    pub(super) fn step(&self, what: std::fmt::Arguments<'_>) {
        let seconds = self.started.elapsed().as_secs_f64();
        self.log
            .line(&format!("[{}] {seconds:>5.1} s  {what}", self.label));
    }

    /// Who is told what OLM does during step `step` (`install`, `upgrade`): each piece of
    /// news becomes a line, with the seconds since the step began.
    pub(super) fn observer(&self, step: &'static str) -> Observer {
        let log = self.clone();
        Observer::new(move |progress| {
            let into = progress.elapsed.as_secs_f64();
            let news = progress_line(&progress.event);
            log.step(format_args!("{step}, {into:.0} s into the step: {news}"));
        })
    }

    /// `fut`'s output, with a line saying `what` is awaited whenever
    /// [`progress::HEARTBEAT`] passes without it.
    pub(super) async fn awaiting<T>(
        &self,
        what: &str,
        fut: impl std::future::Future<Output = T>,
    ) -> T {
        let since = Instant::now();
        let mut fut = std::pin::pin!(fut);
        loop {
            tokio::select! {
                out = &mut fut => return out,
                () = tokio::time::sleep(progress::HEARTBEAT) => {
                    let waited = since.elapsed().as_secs_f64();
                    self.step(format_args!("still waiting for {what} ({waited:.0} s)"));
                }
            }
        }
    }
}

/// A piece of news about a step in one line; a kind the cluster does not serve names the
/// `--cluster-crd` that gives it one.
pub(super) fn progress_line(event: &Event) -> String {
    match event {
        Event::Changed(state) => state.clone(),
        Event::Unchanged(line) => line.clone(),
        Event::NotServed {
            plan,
            group,
            version,
            kind,
            name,
        } => {
            let known = crate::cluster_crds::WELL_KNOWN
                .iter()
                .find(|w| w.group == group && w.kind == kind);
            let flag = match known {
                Some(w) => format!("--cluster-crd {} ({}'s)", w.name, w.owner),
                None => format!("--cluster-crd FILE with the CRD of {kind}"),
            };
            format!(
                "InstallPlan {plan} creates {kind} {name}, but the cluster does not serve \
                 {kind} {group}/{version}: OLM retries the InstallPlan until its retry \
                 timeout, then fails it; give the cluster the CRD with {flag}"
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kind_not_served_names_the_cluster_crd_that_serves_it() {
        let not_served = |group: &str, kind: &str| Event::NotServed {
            plan: "install-abc".into(),
            group: group.into(),
            version: "v1".into(),
            kind: kind.into(),
            name: "op-metrics".into(),
        };
        let cases = [
            (
                not_served("monitoring.coreos.com", "ServiceMonitor"),
                "InstallPlan install-abc creates ServiceMonitor op-metrics, but the cluster does not serve ServiceMonitor monitoring.coreos.com/v1: OLM retries the InstallPlan until its retry timeout, then fails it; give the cluster the CRD with --cluster-crd servicemonitors.monitoring.coreos.com (prometheus-operator's)",
            ),
            (
                not_served("example.com", "Widget"),
                "InstallPlan install-abc creates Widget op-metrics, but the cluster does not serve Widget example.com/v1: OLM retries the InstallPlan until its retry timeout, then fails it; give the cluster the CRD with --cluster-crd FILE with the CRD of Widget",
            ),
            (
                Event::Changed("InstallPlan install-abc: Installing".into()),
                "InstallPlan install-abc: Installing",
            ),
        ];
        for (event, want) in cases {
            assert_eq!(progress_line(&event), want);
        }
    }

    #[test]
    fn case_lines_name_the_case_its_mode_and_the_seconds() {
        let lines = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = lines.clone();
        let log = StepLog::new(move |l| sink.lock().unwrap().push(l.to_owned()));
        let case = Case {
            package: "op".into(),
            channels: vec!["stable".into()],
            from: "op.v1".into(),
            upgrade: Some(olmpack_model::upgrade::Edge::new("op", "op.v1", "op.v2")),
            install_mode: olmpack_model::plan::InstallModeType::OwnNamespace,
            max_openshift_versions: Default::default(),
            olm: Default::default(),
        };
        CaseLog::new(&log, &case).step(format_args!("install: done"));
        let lines = lines.lock().unwrap();
        assert_eq!(lines.len(), 1);
        assert!(
            lines[0].starts_with("[op op.v1 → op.v2, OwnNamespace]   0.0 s  install: done"),
            "{}",
            lines[0]
        );
    }
}
