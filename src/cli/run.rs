//! `paceline run`: load, start (one activity or a scenario), report, exit.

use super::args::{EXIT_BAD_INPUT, EXIT_OK, EXIT_RUN_FAILED, RunArgs};
use super::bundled;
use super::control::{Access, ControlServer};
use super::report::text::Progress;
use super::report::{ActivityInfo, ActivityReport, ReportOptions, Reporter};
use super::target::{EngineTarget, Intervals};
use paceline::{
    Activity, ActivityError, Control, CpuMeter, Drivers, Engine, Outcome, ParamOverrides, RunState,
    Scenario, Signal, Snapshot, Step, TimelineEntry, Verdict, run_scenario,
};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// Prints an activity's problems, one per line, and returns exit code 2.
pub fn bad_activity(e: &ActivityError) -> u8 {
    match e.problems() {
        [] => eprintln!("paceline: {e}"),
        problems => {
            for p in problems {
                if p.source == paceline::COMMAND_LINE {
                    let msg = match &p.help {
                        Some(h) => format!("{}; {h}", p.message),
                        None => p.message.clone(),
                    };
                    eprintln!("paceline: param {}: {msg}", p.line);
                } else {
                    eprintln!("{p}");
                }
            }
        }
    }
    EXIT_BAD_INPUT
}

/// Loads the activity a command line names: a file, a bundled activity's name,
/// or params alone. Returns the activity, the overrides and the scenario asked
/// for (the word after the file, `SCENARIO` or `SCENARIO.STEP`, or
/// `scenario=NAME`), cut to one step for `SCENARIO.STEP`.
///
/// `driver=NAME` names the driver that runs, whatever the file says, and the
/// file's params are checked against it; pairs named like one of the file's
/// template variables (`<<name:default>>`, `TEMPLATE(name,default)`) set it and
/// are not params.
pub fn load(
    drivers: &Drivers,
    file: Option<&Path>,
    scenario_word: Option<&str>,
    params: &[(String, String)],
) -> Result<(Activity, ParamOverrides, Option<Scenario>), u8> {
    let mut loader = drivers.loader();
    let scenario = params
        .iter()
        .rev()
        .find(|(k, _)| k == "scenario")
        .map(|(_, v)| v.clone())
        .or(scenario_word.map(str::to_string));
    let pairs: Vec<(String, String)> = params
        .iter()
        .filter(|(k, _)| k != "scenario")
        .cloned()
        .collect();
    let (activity, overrides) = match file {
        Some(path) => {
            if let Some((_, d)) = pairs.iter().rev().find(|(k, _)| k == "driver") {
                loader = loader.run_driver(d);
            }
            loader = loader.template_vars(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            let loaded = if !path.exists() {
                match bundled::find(&path.display().to_string()) {
                    Some((name, text)) => loader.from_str(text, &format!("{name}.yaml")),
                    None => {
                        let word = path.display().to_string();
                        if let Some(near) = bundled::closest(&word) {
                            eprintln!(
                                "paceline: no file or bundled activity `{word}`; did you mean \
                                 `{near}`? (`paceline list` shows the bundled ones)"
                            );
                            return Err(EXIT_BAD_INPUT);
                        }
                        loader.load(path)
                    }
                }
            } else {
                loader.load(path)
            };
            let a = loaded.map_err(|e| bad_activity(&e))?;
            // Template variables are set by their pairs, which are not params.
            let rest: Vec<(String, String)> = pairs
                .iter()
                .filter(|(k, _)| !a.template_vars().contains(k))
                .cloned()
                .collect();
            let o = loader
                .overrides(&rest, Some(&a.params().driver))
                .map_err(|e| bad_activity(&e))?;
            (a, o)
        }
        None => loader.from_params(&pairs).map_err(|e| bad_activity(&e))?,
    };
    let Some(name) = scenario else {
        return Ok((activity, overrides, None));
    };
    let found = activity.scenario(&name).cloned().or_else(|| {
        let (sc, step) = name.rsplit_once('.')?;
        activity.scenario(sc)?.step(step)
    });
    match found {
        Some(sc) => Ok((activity, overrides, Some(sc))),
        None => {
            let known: Vec<String> = activity
                .scenarios()
                .iter()
                .flat_map(|s| {
                    std::iter::once(format!("`{}`", s.name)).chain(
                        s.step_names
                            .iter()
                            .filter(|n| n.parse::<usize>().is_err())
                            .map(move |n| format!("`{}.{n}`", s.name)),
                    )
                })
                .collect();
            eprintln!(
                "paceline: no scenario `{name}` in {}; {}",
                activity.source(),
                if known.is_empty() {
                    "it has no scenarios: leave the scenario out".to_string()
                } else {
                    format!("its scenarios and steps: {}", known.join(", "))
                }
            );
            Err(EXIT_BAD_INPUT)
        }
    }
}

/// Says, for each step of `scenario` that locks a param with `===`, that the
/// command line's value for it does not apply there.
fn report_locks(scenario: &Scenario, overrides: &ParamOverrides) {
    for (step, name) in scenario.steps.iter().zip(&scenario.step_names) {
        if let Step::Run(o) | Step::Start(o) = step {
            for key in o.overridden_locks(overrides) {
                eprintln!(
                    "paceline: scenario `{}` step `{name}` locks `{key}` (`===`): the command \
                     line's `{key}` does not apply to that step",
                    scenario.name
                );
            }
        }
    }
}

/// Whether the run's ops write to standard output (the `stdout` driver without a
/// `filename`, or with `-`), in the activity itself or any scenario step.
fn writes_to_stdout(activity: &Activity, overrides: &ParamOverrides) -> bool {
    activity.runs(overrides).iter().any(|(_, o)| {
        let p = activity.params().with(o);
        p.driver == "stdout"
            && p.driver_params
                .get("filename")
                .and_then(|v| v.as_str())
                .is_none_or(|f| f == "-")
    })
}

/// One activity the run reports on.
struct Tracked {
    control: Control,
    info: ActivityInfo,
    seen_events: usize,
    /// Wait p99 of the latest interval, and errors so far, for the progress line.
    last_wait_p99: u64,
    errors: u64,
    last_done: u64,
    /// When it was first seen stopping.
    stopping_since: Option<Instant>,
    /// Stopping for longer than the stop timeout: no longer waited for.
    stuck: bool,
}

fn info_of(c: &Control) -> ActivityInfo {
    let s = c.status();
    ActivityInfo {
        alias: s.alias,
        driver: s.driver,
        threads: s.threads,
        cycles_requested: s.cycles.end - s.cycles.start,
        target_rate: s.rate.map(|r| r.rate()),
        strictness: s.rate.map(|r| r.strictness_value()),
        driver_stats: None,
        first_errors: c.metrics().first_errors(),
        verdict: None,
        #[cfg(feature = "redis")]
        coordinated: c.coordinated(),
    }
}

/// The verdict on `snap` of the run `info` describes, whose process used
/// `cpu_cores` over the same window.
///
/// A process on a shared schedule is judged on its own tickets: its target is
/// what it ran plus the slots it forfeited, so its verdict rests on its waits.
/// Whether the processes together kept the schedule's rate is the shared line's
/// global rate.
fn verdict_of(info: &ActivityInfo, snap: &Snapshot, cpu_cores: Option<f64>) -> Verdict {
    #[cfg(feature = "redis")]
    if info.coordinated.is_some() && info.target_rate.is_some_and(|t| t > 0.0) {
        let secs = snap.elapsed_nanos() as f64 / 1e9;
        let own = (secs > 0.0).then(|| snap.rate() + snap.missed() as f64 / secs);
        return Verdict::of(snap, own.or(info.target_rate), info.threads, cpu_cores);
    }
    Verdict::of(snap, info.target_rate, info.threads, cpu_cores)
}

/// Prepares every run `activity` describes (the activity itself and each
/// scenario's run/start steps), so a driver's complaint shows before anything
/// runs: `FILE: WHAT: why` for the first that fails.
pub fn prepare_all(
    drivers: &Drivers,
    activity: &Activity,
    overrides: &ParamOverrides,
) -> Result<(), String> {
    for (what, o) in activity.runs(overrides) {
        drivers.prepare(activity, &o).map_err(|e| {
            // A driver's complaint about an op's field or a param points at it.
            let at = match &e {
                paceline::StartError::Driver(d) => activity.position_of(d),
                _ => None,
            };
            match at {
                Some((line, column)) => {
                    format!("{}:{line}:{column}: {what}: {e}", activity.source())
                }
                None => format!("{}: {what}: {e}", activity.source()),
            }
        })?;
    }
    Ok(())
}

/// `paceline run`.
pub fn run(args: RunArgs) -> u8 {
    let inputs = match args.inputs() {
        Ok(i) => i,
        Err(e) => {
            eprintln!("paceline: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let drivers = Drivers::builtin();
    let (activity, overrides, scenario) = match load(
        &drivers,
        inputs.file.as_deref(),
        inputs.scenario.as_deref(),
        &inputs.params,
    ) {
        Ok(x) => x,
        Err(code) => return code,
    };
    let scenario = scenario.or_else(|| activity.scenario("default").cloned());
    if let Some(sc) = &scenario {
        report_locks(sc, &overrides);
    }
    // Every activity the run would start must prepare cleanly before anything runs.
    if let Err(m) = prepare_all(&drivers, &activity, &overrides) {
        eprintln!("paceline: {m}");
        return EXIT_BAD_INPUT;
    }
    // And every shared schedule's server must answer.
    #[cfg(feature = "redis")]
    if let Err(m) = super::shared::reach_all(&activity, &overrides) {
        eprintln!("paceline: {m}");
        return EXIT_BAD_INPUT;
    }

    let engine = Engine::new();
    if let Some(w) = args.waiting {
        engine.set_waiting(w);
    }
    let origin = engine.clock().now();
    let opts = ReportOptions {
        summary_json: args.summary_json.clone(),
        csv: args.csv.clone(),
        hdr_log: args.hdr_log.clone(),
        html: args.html.clone(),
        progress: args.progress(),
        console_stderr: writes_to_stdout(&activity, &overrides),
    };
    let mut reporter = match Reporter::open(&opts, origin, SystemTime::now()) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("paceline: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    // The last interval of each activity, for the endpoints only.
    let served = args.control.is_some() || args.metrics.is_some();
    let intervals: Option<Intervals> = served.then(Arc::default);
    let target = intervals
        .as_ref()
        .map(|i| Arc::new(EngineTarget::new(engine.clone(), i.clone())));
    let mut servers: Vec<ControlServer> = Vec::new();
    if let Some(target) = &target {
        let endpoints = [
            (args.control, Access::Full, "control endpoint", ""),
            (
                args.metrics,
                Access::ReadOnly,
                "metrics endpoint (read-only)",
                "/metrics",
            ),
        ];
        for (addr, access, what, path) in endpoints {
            let Some(addr) = addr else { continue };
            let started = match access {
                Access::Full => {
                    ControlServer::start(addr, args.control_allow_remote, target.clone())
                }
                Access::ReadOnly => ControlServer::start_read_only(addr, target.clone()),
            };
            match started {
                Ok(s) => {
                    eprintln!("paceline: {what} on http://{}{path}", s.local_addr());
                    servers.push(s);
                }
                Err(e) => {
                    eprintln!("paceline: {e}");
                    return EXIT_BAD_INPUT;
                }
            }
        }
    }

    // `stop` ends the scenario and every wait on it (an interrupt, a report that
    // cannot be written, a control `stop`); `interrupted` says whether the
    // user or the OS asked for it.
    let stop = Signal::new();
    let interrupted = Signal::new();
    {
        let (stop, interrupted, engine) = (stop.clone(), interrupted.clone(), engine.clone());
        let count = std::sync::atomic::AtomicUsize::new(0);
        let stop_timeout = args.stop_timeout;
        if let Err(e) = ctrlc::set_handler(move || {
            if count.fetch_add(1, std::sync::atomic::Ordering::Relaxed) > 0 {
                eprintln!("\npaceline: interrupted again; exiting without the reports");
                std::process::exit(i32::from(EXIT_RUN_FAILED));
            }
            eprintln!(
                "\npaceline: interrupted; stopping and writing the reports (within {}; \
                 interrupt again to exit at once)",
                super::report::units::duration(paceline::nanos::from_duration(stop_timeout))
            );
            interrupted.stop();
            stop.stop();
            // Closed, not only stopped: an activity a scenario is starting right
            // now is refused instead of running to its end.
            engine.close();
        }) {
            eprintln!("paceline: cannot catch Ctrl-C ({e}); an interrupt will lose the reports");
        }
    }

    // Start: one activity, or the scenario on its own thread.
    let scenario_thread = match scenario {
        None => {
            if let Err(e) = drivers.start(&engine, &activity, &overrides) {
                if interrupted.is_stopped() {
                    return EXIT_RUN_FAILED;
                }
                eprintln!("paceline: {e}");
                return EXIT_BAD_INPUT;
            }
            #[cfg(feature = "redis")]
            for c in engine.activities() {
                joined_note(&c);
            }
            None
        }
        Some(sc) => {
            if let Some(t) = &target {
                // A control `stop` ends the scenario at once.
                t.stop_scenario_with(stop.clone());
            }
            let (drivers, engine, activity, overrides, stop) = (
                drivers.clone(),
                engine.clone(),
                activity.clone(),
                overrides.clone(),
                stop.clone(),
            );
            Some(std::thread::spawn(move || {
                run_scenario(&drivers, &engine, &activity, &sc, &overrides, &stop)
            }))
        }
    };

    let code = drive(
        &engine,
        &mut reporter,
        intervals.as_ref(),
        Timing {
            every: args.report_interval,
            stop_timeout: args.stop_timeout,
        },
        scenario_thread,
        (&stop, &interrupted),
    );
    for s in servers {
        s.shutdown();
    }
    code
}

/// Says which shared schedule an activity joined, as which member, and at which
/// rate: a process that joins a running schedule takes its spec, whatever its own
/// `rate` said.
#[cfg(feature = "redis")]
fn joined_note(c: &paceline::Control) {
    let Some(shared) = c.coordinated() else {
        return;
    };
    let rate = c.status().rate.map_or("unpaced".to_string(), |r| {
        format!("{}/s in total", super::report::units::rate(r.rate()))
    });
    let own = c.config().rate_spec().map(|r| r.rate());
    let taken = match (own, c.status().rate) {
        (Some(a), Some(b)) if a != b.rate() => " (the schedule's, not this run's `rate`)",
        _ => "",
    };
    eprintln!(
        "paceline: activity `{}` joined the shared schedule {} as member {}: {rate}{taken}",
        c.alias(),
        shared.url,
        shared.member
    );
}

/// The report loop's clocks.
struct Timing {
    /// How often to report an interval.
    every: Duration,
    /// How long a stop may take before the reports are written without waiting.
    stop_timeout: Duration,
}

/// The report loop: intervals and progress until every activity has finished;
/// then the final interval, the summary, and the exit code. Once something is
/// stopping (an interrupt, a failure, a control `stop`), it waits at most
/// `stop_timeout` for ops in flight, then reports without them.
fn drive(
    engine: &Engine,
    reporter: &mut Reporter,
    intervals: Option<&Intervals>,
    timing: Timing,
    scenario: Option<std::thread::JoinHandle<Result<(), paceline::ScenarioError>>>,
    (stop, interrupted): (&Signal, &Signal),
) -> u8 {
    let every = timing.every;
    let mut tracked: Vec<Tracked> = Vec::new();
    let tick = every.min(Duration::from_millis(250));
    let mut next_interval = Instant::now() + every;
    let mut last_tick = Instant::now();
    let mut scenario = scenario;
    let mut scenario_result = Ok(());
    // A step whose shared schedule could not be joined: bad input, exit 2.
    let mut cannot_join = false;
    let mut write_failed = false;
    let mut stuck = false;
    // The process's CPU over the whole run, and over each interval.
    let run_cpu = CpuMeter::start();
    let mut interval_cpu = CpuMeter::start();
    loop {
        track(engine, &mut tracked);
        let scenario_done = scenario.as_ref().is_none_or(|h| h.is_finished());
        if scenario_done && let Some(h) = scenario.take() {
            scenario_result = match h.join() {
                Ok(Err(e)) if stop.is_stopped() && ended_by_stop(&e) => Ok(()),
                Ok(Err(e)) if joins_no_schedule(&e) => {
                    cannot_join = true;
                    Err(e.to_string())
                }
                Ok(r) => r.map_err(|e| e.to_string()),
                Err(_) => Err("the scenario thread panicked".to_string()),
            };
            // What the scenario started last, before its thread ended.
            track(engine, &mut tracked);
        }
        let pause = tick.min(next_interval.saturating_duration_since(Instant::now()));
        match tracked
            .iter()
            .find(|t| !t.control.is_finished() && !t.stuck)
        {
            // Nothing left to start: wait on a running activity, which wakes as
            // soon as it ends rather than at the next tick.
            Some(t) if scenario_done => {
                t.control.wait_timeout(pause);
            }
            None if scenario_done => break,
            _ => std::thread::sleep(pause),
        }
        let now = Instant::now();
        // An activity that has been stopping for longer than the stop timeout has
        // an op stuck in its driver: report without it, and end the scenario,
        // which could only wait for it.
        for t in tracked.iter_mut().filter(|t| !t.stuck) {
            if t.control.status().state != RunState::Stopping {
                continue;
            }
            let since = *t.stopping_since.get_or_insert(now);
            if now.duration_since(since) >= timing.stop_timeout {
                t.stuck = true;
                stuck = true;
                stop.stop();
                eprintln!(
                    "paceline: activity `{}` did not stop within {} (an op is stuck in its \
                     driver); writing the reports without waiting for it",
                    t.control.alias(),
                    super::report::units::duration(paceline::nanos::from_duration(
                        timing.stop_timeout
                    ))
                );
            }
        }
        if now >= next_interval {
            next_interval += every;
            if let Err(e) = interval(reporter, &mut tracked, intervals, interval_cpu.lap()) {
                eprintln!("paceline: {e}");
                write_failed = true;
                stop.stop();
                engine.stop_all();
            }
        }
        let secs = now.duration_since(last_tick).as_secs_f64().max(1e-9);
        last_tick = now;
        if reporter.shows_progress() {
            let mut progress: Vec<(&ActivityInfo, Progress)> = Vec::new();
            for t in tracked.iter_mut().filter(|t| !t.control.is_finished()) {
                let done = t.control.status().completed;
                let rate = (done - t.last_done.min(done)) as f64 / secs;
                t.last_done = done;
                let p = Progress {
                    done,
                    rate,
                    wait_p99: t.last_wait_p99,
                    errors: t.errors,
                };
                progress.push((&t.info, p));
            }
            let _ = reporter.progress(&progress);
        }
    }
    // The last (partial) interval, then the totals.
    if let Err(e) = interval(reporter, &mut tracked, intervals, interval_cpu.lap()) {
        eprintln!("paceline: {e}");
        write_failed = true;
    }
    let mut http = Vec::new();
    let mut rows = Vec::new();
    let totals: Vec<ReportData> = tracked
        .iter()
        .map(|t| {
            let mut info = info_of(&t.control);
            let stats = http_stats(&info);
            info.driver_stats = stats.as_ref().map(|h| {
                serde_json::json!({
                    "requests": h.requests,
                    "responses": h.responses,
                    "connections": h.connections,
                    "requests_per_connection": h.requests_per_connection(),
                    "bytes_received": h.bytes_received,
                    "statuses": h.statuses.iter().map(|(s, n)| (s.to_string(), *n)).collect::<std::collections::BTreeMap<_, _>>(),
                })
            });
            http.push(stats);
            let pg = pg_stats(&info);
            if let Some(p) = &pg {
                info.driver_stats = Some(serde_json::json!({
                    "ops": p.ops,
                    "rows": p.rows,
                    "rows_per_op": p.rows_per_op(),
                }));
            }
            rows.push(pg);
            let totals = t.control.totals();
            // The whole run is judged against the mean rate its schedule asked for
            // (ramps, rate changes and pauses weighted by time), not the final rate.
            let mut judged = info.clone();
            let initial = t.control.config().rate_spec().map(|r| r.rate());
            judged.target_rate = info.target_rate.map(|last| {
                paceline::mean_target_rate(
                    initial.unwrap_or(last),
                    &t.control.timeline(),
                    totals.start(),
                    totals.end(),
                )
            });
            info.verdict = Some(verdict_of(&judged, &totals, run_cpu.cores()));
            (info, totals, t.control.timeline())
        })
        .collect();
    if let Err(e) = reporter.finish(&as_reports(&totals)) {
        eprintln!("paceline: {e}");
        write_failed = true;
    }
    for ((info, _, _), stats) in totals.iter().zip(&http) {
        if let Some(h) = stats {
            reporter.note(&format!("{} (http): {h}", info.alias));
        }
    }
    for ((info, _, _), stats) in totals.iter().zip(&rows) {
        if let Some(p) = stats {
            reporter.note(&format!("{} (postgres): {p}", info.alias));
        }
    }
    let mut code = EXIT_OK;
    if let Err(e) = scenario_result {
        eprintln!("paceline: scenario stopped: {e}");
        code = EXIT_RUN_FAILED;
    }
    for t in &tracked {
        if let Some(Outcome::Failed(why)) = t.control.outcome() {
            // A reader that closed our stdout (`| head`) ended the run: not an error.
            if t.control.failure_kind().as_deref() == Some("closed") {
                continue;
            }
            eprintln!("paceline: activity `{}` failed: {why}", t.control.alias());
            code = EXIT_RUN_FAILED;
        }
    }
    if interrupted.is_stopped() || write_failed || stuck {
        code = EXIT_RUN_FAILED;
    }
    // The reports above keep what the steps before it ran; the exit code says
    // that the input (the URL, the server, the cycles) has to change.
    if cannot_join {
        code = EXIT_BAD_INPUT;
    }
    code
}

/// Whether a scenario stopped because a step's activity could not join its
/// shared schedule (`coordinate`: the store unreachable, another cycle range).
fn joins_no_schedule(e: &paceline::ScenarioError) -> bool {
    use paceline::{EngineError, ScenarioError, StartError};
    matches!(
        e,
        ScenarioError::Start {
            error: StartError::Engine(EngineError::Coordinate { .. }),
            ..
        }
    )
}

/// Whether a scenario's error only says that a stop got there first: a step on an
/// activity that a control `stop` (or an interrupt) already ended, or a start the
/// closed engine refused.
fn ended_by_stop(e: &paceline::ScenarioError) -> bool {
    use paceline::{ControlError, EngineError, ScenarioError, StartError};
    matches!(
        e,
        ScenarioError::Control {
            error: ControlError::Finished { .. },
            ..
        } | ScenarioError::Start {
            error: StartError::Engine(EngineError::Closed { .. }),
            ..
        }
    )
}

/// The `http` driver's counters for an activity it ran.
fn http_stats(info: &ActivityInfo) -> Option<paceline::HttpStats> {
    (info.driver == "http")
        .then(|| paceline::Http::stats(&info.alias))
        .flatten()
}

/// The `postgres` driver's row counts for an activity it ran.
fn pg_stats(info: &ActivityInfo) -> Option<paceline::PgStats> {
    (info.driver == "postgres")
        .then(|| paceline::Postgres::stats(&info.alias))
        .flatten()
}

/// One activity's data for a report: who, the numbers, the events.
type ReportData = (ActivityInfo, Snapshot, Vec<TimelineEntry>);

/// Borrowed views of `data` for the reporter.
fn as_reports(data: &[ReportData]) -> Vec<ActivityReport<'_>> {
    data.iter()
        .map(|(info, snapshot, events)| ActivityReport {
            info,
            snapshot,
            events,
        })
        .collect()
}

/// Adds activities the engine started since the last look.
fn track(engine: &Engine, tracked: &mut Vec<Tracked>) {
    for c in engine.activities() {
        if !tracked.iter().any(|t| t.control.same_run(&c)) {
            tracked.push(Tracked {
                info: info_of(&c),
                control: c,
                seen_events: 0,
                last_wait_p99: 0,
                errors: 0,
                last_done: 0,
                stopping_since: None,
                stuck: false,
            });
        }
    }
}

/// Takes one interval snapshot of every tracked activity that has not been fully
/// reported, and reports them.
fn interval(
    reporter: &mut Reporter,
    tracked: &mut [Tracked],
    intervals: Option<&Intervals>,
    cpu_cores: Option<f64>,
) -> Result<(), super::report::ReportError> {
    let mut data: Vec<ReportData> = Vec::new();
    for t in tracked.iter_mut() {
        let finished_before = t.control.is_finished();
        let snap = t.control.snapshot();
        let events = t.control.metrics().timeline_since(t.seen_events);
        t.seen_events += events.len();
        t.info = info_of(&t.control);
        if finished_before && snap.ops() == 0 && events.is_empty() {
            continue;
        }
        let verdict = verdict_of(&t.info, &snap, cpu_cores);
        if let Some(Ok(mut m)) = intervals.map(|i| i.lock()) {
            m.insert(
                t.info.alias.clone(),
                serde_json::json!({
                    "start_seconds": snap.start() as f64 / 1e9,
                    "end_seconds": snap.end() as f64 / 1e9,
                    "ops": snap.ops(),
                    "rate": snap.rate(),
                    "errors": snap.error_count(),
                    "missed_slots": snap.missed(),
                    "wait_p99_ns": snap.wait().p99(),
                    "response_p99_ns": snap.response().p99(),
                    "verdict": super::report::json::verdict_json(&verdict),
                }),
            );
        }
        t.last_wait_p99 = snap.wait().p99();
        t.errors += snap.error_count();
        t.info.verdict = Some(verdict);
        data.push((t.info.clone(), snap, events));
    }
    let reports = as_reports(&data);
    if reports.is_empty() {
        return Ok(());
    }
    reporter.interval(&reports)
}

#[cfg(test)]
mod tests {
    use super::*;
    use paceline::{EngineError, ScenarioError, StartError};

    #[test]
    fn only_a_step_that_cannot_join_its_schedule_is_bad_input() {
        let step = |error| ScenarioError::Start { step: 2, error };
        let coordinate = EngineError::Coordinate {
            alias: "a".into(),
            message: "cannot reach redis at redis://127.0.0.1:1".into(),
        };
        assert!(joins_no_schedule(&step(StartError::Engine(coordinate))));
        let closed = EngineError::Closed { alias: "a".into() };
        assert!(!joins_no_schedule(&step(StartError::Engine(closed))));
        let not_started = ScenarioError::NotStarted {
            step: 1,
            alias: "a".into(),
        };
        assert!(!joins_no_schedule(&not_started));
    }
}
