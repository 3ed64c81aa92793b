//! The one run loop of `upgrade olm`, over the [`Driver`] interface that each OLM implements
//! ([`super::v0`], [`super::v1`]): what a case does is decided here once — install the
//! starting release, create its examples, upgrade to the successor, read the examples back,
//! hold the last release — and each OLM only says how it does each step and what it said.

use futures::StreamExt;

use olmpack_envtest::olm::{Example, InstallStep, Installed, Observer, Outcome, StillSucceeded};
use olmpack_model::upgrade::Verdict;

use super::log::CaseLog;
use super::platform::Platform;
use super::{Case, CaseReport, OlmRunError, RunOptions, blamed, describe};

/// One OLM that runs the cases of a run: what every case shares (the catalog served to it,
/// its environments) and how a case gets an environment of its own ([`Session`]).
pub(super) trait Driver: Sized {
    /// One case's hold on an environment.
    type Session: Session;

    /// Why this OLM cannot run `case` at all (reported as not run), if so.
    fn cannot_run(case: &Case) -> Option<String>;

    /// What every case shares, made ready: the catalog served, environments started.
    async fn up(catalog: &std::path::Path, options: &RunOptions) -> Result<Self, OlmRunError>;

    /// Cases run at once.
    fn jobs(&self) -> usize;

    /// The environment of `case`, number `number` of the run, ready to install.
    async fn session(
        &self,
        case: &Case,
        number: usize,
        log: &CaseLog,
    ) -> Result<Self::Session, OlmRunError>;
}

/// What one case asks of its OLM. Every error is the test environment's; what OLM did with
/// the operator is in the returned steps.
pub(super) trait Session {
    /// Installs the case's starting release; the step, and the seconds the install took as
    /// this OLM counts them.
    async fn install(
        &mut self,
        case: &Case,
        observer: &Observer,
    ) -> Result<(InstallStep, f64), OlmRunError>;

    /// Upgrades to `to`, OLM's successor.
    async fn upgrade(
        &mut self,
        case: &Case,
        to: &str,
        observer: &Observer,
    ) -> Result<InstallStep, OlmRunError>;

    /// The operator's CRDs and Deployments in the cluster now.
    async fn installed(&self) -> Result<Installed, OlmRunError>;

    /// How many `alm-examples` objects the installed release `csv` has.
    async fn example_count(&self, csv: &str) -> Result<usize, OlmRunError>;

    /// Creates the examples of `csv` as a user of the install would.
    async fn create_examples(&self, csv: &str) -> Result<Vec<Example>, OlmRunError>;

    /// Reads each example back (`Err(message)` when the apiserver refuses).
    async fn read_examples(&self, examples: &[Example]) -> Vec<Result<(), String>>;

    /// Whether the webhooks of `csv` that the examples need are served (`conversion_only`:
    /// reading back needs only a conversion webhook): `Ok(Err(why))` when the checks that
    /// need them cannot run.
    async fn webhooks_served(
        &self,
        csv: &str,
        conversion_only: bool,
    ) -> Result<Result<(), String>, OlmRunError>;

    /// Whether the last release `csv` stays installed once its step is done.
    async fn hold(&self, csv: &str, log: &CaseLog) -> Result<StillSucceeded, OlmRunError>;

    /// Ends the case (`ran`: its steps ran to the end): what the environment saw, and
    /// whether it was left clean for another case.
    async fn end(self, ran: bool) -> Ended;
}

/// What an environment saw of a case when it ended.
#[derive(Debug)]
pub(super) struct Ended {
    /// The operator's pods that would crash-loop ([`CaseReport::crash_loops`]).
    pub crash_loops: Vec<String>,
    /// Calls retried after transient failures ([`CaseReport::retried`]).
    pub retried: Vec<String>,
    /// Failure to uninstall the case or give its environment back.
    pub cleanup: Result<(), OlmRunError>,
}

/// Runs every case under driver `D`, up to [`Driver::jobs`] at once; reports in case order.
/// Every case runs to its end, even when another failed.
/// When no case can run, nothing is started.
pub(super) async fn run<D: Driver>(
    catalog: &std::path::Path,
    cases: &[Case],
    options: &RunOptions,
) -> Result<Vec<CaseReport>, OlmRunError> {
    if cases.iter().all(|c| D::cannot_run(c).is_some()) {
        let not_run = cases.iter().cloned().map(|case| {
            let log = CaseLog::new(&options.steps, &case);
            let why = D::cannot_run(&case).unwrap_or_default();
            not_finished(CaseReport::new(case), &why, &log)
        });
        return Ok(not_run.collect());
    }
    // Each future on the heap: a case's steps make a deep state machine, which overflows a
    // test thread's stack in debug builds when it is held there.
    let driver = Box::pin(D::up(catalog, options)).await?;
    // Cases run concurrently within this task (their processes are the environments'):
    // nothing here needs to be sent between threads.
    let runs = (1..).zip(cases.iter().cloned());
    let runs = futures::stream::iter(runs)
        .map(|(number, case)| Box::pin(run_case(&driver, case, number, options)));
    let reports: Vec<_> = runs.buffered(driver.jobs().max(1)).collect().await;
    reports.into_iter().collect()
}

/// One case in an environment of its own. When the test environment fails (it does not
/// start, or its apiserver cannot be reached even after retries), the report keeps what the
/// case found until then and says so ([`CaseReport::environment`]): every case gets a
/// report.
async fn run_case<D: Driver>(
    driver: &D,
    case: Case,
    number: usize,
    options: &RunOptions,
) -> Result<CaseReport, OlmRunError> {
    let log = CaseLog::new(&options.steps, &case);
    let mut report = CaseReport::new(case);
    if let Some(why) = D::cannot_run(&report.case) {
        return Ok(not_finished(report, &why, &log));
    }
    let mut session = match driver.session(&report.case, number, &log).await {
        Ok(session) => session,
        Err(err) => return unfinished(report, err, &log),
    };
    let ran = steps(&mut session, &mut report, &log).await;
    let ended = session.end(ran.is_ok()).await;
    report.crash_loops = ended.crash_loops;
    report.retried = ended.retried;
    report.platform_gates = platform_gates(&report, options.platform);
    match ran.and(ended.cleanup) {
        Ok(()) => {
            report.seconds = log.started().elapsed().as_secs_f64();
            log.step(format_args!("done: {}", verdict(&report)));
            Ok(report)
        }
        Err(err) => unfinished(report, err, &log),
    }
}

/// The case's steps, recorded in `report` as they end.
async fn steps<S: Session>(
    session: &mut S,
    report: &mut CaseReport,
    log: &CaseLog,
) -> Result<(), OlmRunError> {
    let case = report.case.clone();
    let (install, seconds) = session.install(&case, &log.observer("install")).await?;
    report.install = install;
    report.install_seconds = seconds;
    log.step(format_args!(
        "install: {}",
        describe(&report.install.outcome)
    ));
    let Outcome::Succeeded { csv } = report.install.outcome.clone() else {
        return Ok(());
    };
    report.installed = session.installed().await?;
    let creating = examples(session, &csv);
    let made = log.awaiting("the examples to be created", creating).await?;
    let made = examples_line(report.examples.insert(made));
    log.step(format_args!("examples: {made}"));
    let last = match case.to() {
        Some(to) => upgrade(session, report, to, log).await?,
        None => Some(csv),
    };
    if let Some(csv) = last {
        match session.hold(&csv, log).await? {
            StillSucceeded::Yes => {}
            StillSucceeded::Recovered(seen) => {
                let step = report.upgrade.as_mut().unwrap_or(&mut report.install);
                step.observed.push(seen);
            }
            StillSucceeded::Left(status) => report.left_succeeded = Some(status),
        }
    }
    Ok(())
}

/// The examples of `csv`, created once the webhooks they need are served; none to create
/// needs no webhook ([`CaseReport::examples`]).
async fn examples<S: Session>(
    session: &S,
    csv: &str,
) -> Result<Result<Vec<Example>, String>, OlmRunError> {
    if session.example_count(csv).await? == 0 {
        return Ok(Ok(Vec::new()));
    }
    Ok(match session.webhooks_served(csv, false).await? {
        Ok(()) => Ok(session.create_examples(csv).await?),
        Err(why) => Err(why),
    })
}

/// The upgrade to `to`, then the examples read back; the release that ended installed, if any.
async fn upgrade<S: Session>(
    session: &mut S,
    report: &mut CaseReport,
    to: &str,
    log: &CaseLog,
) -> Result<Option<String>, OlmRunError> {
    // Unfinished until OLM's verdict is in (see [`unfinished`]).
    report.upgrade = Some(InstallStep::unfinished());
    let observer = log.observer("upgrade");
    let step = session.upgrade(&report.case, to, &observer).await?;
    log.step(format_args!("upgrade: {}", describe(&step.outcome)));
    let done = match &step.outcome {
        Outcome::Succeeded { csv } => Some(csv.clone()),
        _ => None,
    };
    report.upgrade = Some(step);
    if let Some(csv) = &done {
        read_back(session, report, csv, log).await?;
        report.installed = session.installed().await?;
    }
    Ok(done)
}

/// Reads the examples back after the upgrade to `csv` (not run when `csv` converts them with
/// a webhook no process serves).
async fn read_back<S: Session>(
    session: &S,
    report: &mut CaseReport,
    csv: &str,
    log: &CaseLog,
) -> Result<(), OlmRunError> {
    let Some(Ok(examples)) = &report.examples else {
        return Ok(());
    };
    if examples.is_empty() {
        return Ok(());
    }
    let serving = session.webhooks_served(csv, true);
    let what = "the conversion webhook the examples need";
    if let Err(why) = log.awaiting(what, serving).await? {
        report.reads_not_run = Some(why);
        return Ok(());
    }
    let reading = session.read_examples(examples);
    report.examples_after = log.awaiting("the examples to be read back", reading).await;
    let line = read_back_line(&report.examples_after);
    log.step(format_args!("examples after: {line}"));
    Ok(())
}

/// What `platform`'s OLM does about each bundle the case installed (see
/// [`Platform::upgrade_gate`]).
fn platform_gates(report: &CaseReport, platform: Platform) -> Vec<String> {
    let steps = std::iter::once(&report.install).chain(report.upgrade.as_ref());
    steps
        .filter_map(|step| match &step.outcome {
            Outcome::Succeeded { csv } => {
                let values = report.case.max_openshift_versions.get(csv)?;
                platform.upgrade_gate(csv, values)
            }
            _ => None,
        })
        .collect()
}

/// `report` of a case whose test environment failed with `err` (an `Err` for a failure that
/// is not one case's: the catalog, the images served): see [`not_finished`].
fn unfinished(
    report: CaseReport,
    err: OlmRunError,
    log: &CaseLog,
) -> Result<CaseReport, OlmRunError> {
    if !err.is_one_case() {
        return Err(err);
    }
    let why = olmpack_model::report::error_chain(&err);
    Ok(not_finished(report, &why, log))
}

/// `report` of a case that could not be finished (or run), for `why`: the step under way is
/// unfinished, and [`CaseReport::environment`] says why in one line (it goes into table
/// cells; a process's last output may span several).
fn not_finished(mut report: CaseReport, why: &str, log: &CaseLog) -> CaseReport {
    let why = why.split_whitespace().collect::<Vec<_>>().join(" ");
    let steps = std::iter::once(&mut report.install).chain(report.upgrade.as_mut());
    for step in steps.filter(|s| matches!(s.outcome, Outcome::Unfinished { .. })) {
        step.outcome = Outcome::Unfinished { why: why.clone() };
    }
    report.environment = Some(why);
    report.seconds = log.started().elapsed().as_secs_f64();
    log.step(format_args!("done: {}", verdict(&report)));
    report
}

/// `N/M read back`: the examples created before the upgrade that the apiserver served after it.
fn read_back_line(reads: &[Result<(), String>]) -> String {
    let read = reads.iter().filter(|r| r.is_ok()).count();
    format!("{read}/{} read back", reads.len())
}

fn examples_line(examples: &Result<Vec<Example>, String>) -> String {
    match examples {
        Err(why) => format!("not run: {why}"),
        Ok(list) if list.is_empty() => "none (alm-examples is empty)".to_owned(),
        Ok(list) => {
            let created = list.iter().filter(|e| e.refused.is_none()).count();
            format!("{created}/{} created", list.len())
        }
    }
}

/// The case's verdict in one line, as the progress lines end it.
fn verdict(report: &CaseReport) -> String {
    let failures = report.failures();
    let not_run = report.not_run();
    match (report.verdict(), failures.first(), not_run.first()) {
        (_, Some(f), _) => format!("FAIL ({}: {})", blamed(f), f.message),
        (Verdict::NotRun, None, _) => {
            format!("not finished ({})", report.error().unwrap_or_default())
        }
        (_, None, Some(why)) => format!("pass, checks not run ({why})"),
        (_, None, None) => "pass".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A crash loop fails the case, blamed on the pod, whatever OLM said of its steps.
    #[test]
    fn a_crash_loop_fails_the_case() {
        let case = Case {
            package: "op".into(),
            channels: vec!["stable".into()],
            from: "op.v1".into(),
            upgrade: None,
            install_mode: olmpack_model::plan::InstallModeType::AllNamespaces,
            max_openshift_versions: Default::default(),
            olm: Default::default(),
        };
        let mut report = CaseReport::new(case);
        report.install.outcome = Outcome::Succeeded {
            csv: "op.v1".into(),
        };
        assert_eq!(report.verdict(), Verdict::Passed);
        let words = "Deployment op: container manager of op exited (exit status: 1) — the pod would crash-loop";
        report.crash_loops = vec![words.to_owned()];
        assert_eq!(report.verdict(), Verdict::Failed);
        let failures = report.failures();
        assert_eq!(failures.len(), 1);
        assert_eq!(failures[0].rule, super::super::report::CRASH_LOOP_RULE);
        assert_eq!(
            failures[0].consumer,
            Some(olmpack_model::report::Consumer::PodCannotStart)
        );
        assert_eq!(verdict(&report), format!("FAIL (pod: {words})"));
    }

    #[test]
    fn platform_gates_judge_only_the_bundles_installed() {
        use olmpack_envtest::olm::InstallStep;
        let case = Case {
            package: "op".into(),
            channels: vec!["stable".into()],
            from: "op.v1".into(),
            upgrade: Some(olmpack_model::upgrade::Edge::new("op", "op.v1", "op.v2")),
            install_mode: olmpack_model::plan::InstallModeType::AllNamespaces,
            max_openshift_versions: [
                ("op.v1".to_owned(), vec![serde_json::json!("4.8")]),
                ("op.v2".to_owned(), vec![serde_json::json!("4.8")]),
            ]
            .into(),
            olm: Default::default(),
        };
        let succeeded = |csv: &str| InstallStep {
            csv: Some(csv.into()),
            outcome: Outcome::Succeeded { csv: csv.into() },
            ..InstallStep::unfinished()
        };
        let mut report = CaseReport::new(case);
        report.install = succeeded("op.v1");
        let on = Platform::OpenShift { minor: 9 };
        let line = |csv: &str| {
            format!(
                "OLM on OpenShift 4.9 blocks upgrades of the cluster to 4.10 while {csv} is installed: its olm.maxOpenShiftVersion is 4.8"
            )
        };
        assert_eq!(platform_gates(&report, on), [line("op.v1")]);
        report.upgrade = Some(succeeded("op.v2"));
        assert_eq!(platform_gates(&report, on), [line("op.v1"), line("op.v2")]);
        assert!(platform_gates(&report, Platform::kubernetes()).is_empty());
        assert!(platform_gates(&report, Platform::OpenShift { minor: 7 }).is_empty());
        report.install = InstallStep::unfinished();
        report.upgrade = None;
        assert!(platform_gates(&report, on).is_empty());
    }

    #[test]
    fn examples_never_attempted_or_none_are_not_counted_as_created() {
        let example = |refused: Option<&str>| Example {
            api_version: "example.com/v1".into(),
            kind: "Widget".into(),
            name: "a-v1".into(),
            declared: "a".into(),
            refused: refused.map(str::to_owned),
        };
        let cases = [
            (Ok(vec![]), "none (alm-examples is empty)"),
            (
                Err("no webhook command was given".into()),
                "not run: no webhook command was given",
            ),
            (
                Ok(vec![example(None), example(Some("denied"))]),
                "1/2 created",
            ),
        ];
        for (examples, want) in cases {
            assert_eq!(examples_line(&examples), want);
        }
    }
}
