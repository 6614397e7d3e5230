//! `paceline run`: load, start (one activity or a scenario), report, exit.

use super::args::{EXIT_BAD_INPUT, EXIT_RUN_FAILED, RunArgs};
use super::control::{Access, ControlServer};
use super::finish::{Ended, Gate, finish, report_failed};
use super::gate::{self, judged_totals, subjects};
use super::load::{load, prepare_chosen, refuse_locks, skipped_steps, writes_to_stdout};
use super::report::text::Progress;
use super::report::{ActivityInfo, ReportOptions, Reporter};
use super::target::{EngineTarget, Intervals};
use super::tracked::{ReportData, Tracked, interval, track};
use paceline::{
    Activity, CpuMeter, Drivers, Engine, ParamOverrides, RunState, Signal, run_scenario,
};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// `paceline run`.
pub fn run(args: RunArgs) -> u8 {
    let inputs = match args.inputs() {
        Ok(i) => i,
        Err(e) => {
            eprintln!("paceline: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    if let Err(e) = args.report_paths_clash() {
        eprintln!("paceline: {e}");
        return EXIT_BAD_INPUT;
    }
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
    for n in activity.notices() {
        eprintln!("paceline: note: {n}");
    }
    if let Some(sc) = &scenario {
        let raw = inputs
            .file
            .as_deref()
            .and_then(|f| std::fs::read_to_string(f).ok());
        if let Err(code) = refuse_locks(sc, &overrides, raw.as_deref(), &inputs.params) {
            return code;
        }
        if let Err(code) = skipped_steps(sc) {
            return code;
        }
    }
    // The thresholds: the command line's, then the file's.
    let mut thresholds: Vec<gate::Sourced> = Vec::new();
    for (i, text) in args.threshold.iter().enumerate() {
        match paceline::Threshold::parse(text) {
            Ok(t) => thresholds.push(gate::Sourced {
                threshold: t,
                from: format!("--threshold #{}", i + 1),
            }),
            Err(e) => {
                eprintln!(
                    "paceline: --threshold #{}: {e}\n  {}\n  {}^",
                    i + 1,
                    e.expr,
                    " ".repeat(e.at)
                );
                return EXIT_BAD_INPUT;
            }
        }
    }
    thresholds.extend(activity.thresholds().iter().map(|t| gate::Sourced {
        threshold: t.clone(),
        from: activity.source().to_string(),
    }));
    // A threshold on an activity the run does not start fails now, not at the end.
    let aliases: Vec<String> = match &scenario {
        None => vec![activity.params().with(&overrides).alias],
        Some(sc) => sc
            .steps
            .iter()
            .filter_map(|step| match step {
                paceline::Step::Run(o) | paceline::Step::Start(o) => {
                    Some(activity.params().with(&o.then(&overrides)).alias)
                }
                _ => None,
            })
            .collect(),
    };
    if let Err(m) = gate::unknown_aliases(&thresholds, &aliases) {
        eprintln!("paceline: {m}");
        return EXIT_BAD_INPUT;
    }
    // `--duration`: one activity runs with it as its `duration` (on the engine's
    // clock, and without cycles it runs until then); a scenario is cut at it.
    let mut overrides = overrides;
    if let (Some(d), None) = (args.duration, &scenario) {
        let own = activity.params().with(&overrides).duration;
        overrides.duration = Some(own.map_or(d, |o| o.min(d)));
    }
    // The JUnit file is created now, so that a bad path fails before the run.
    let junit = match &args.junit {
        Some(p) => match std::fs::File::create(p) {
            Ok(f) => Some((p.clone(), f)),
            Err(e) => {
                eprintln!(
                    "paceline: cannot create report file {}: {e} (check that the directory \
                     exists and is writable, or pass another path)",
                    p.display()
                );
                return EXIT_BAD_INPUT;
            }
        },
        None => None,
    };
    // Every activity the run would start must prepare cleanly before anything runs.
    if let Err(m) = prepare_chosen(
        &drivers,
        &activity,
        &overrides,
        scenario.as_ref(),
        &inputs.params,
    ) {
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
    // One setting bounds a stop: the async runner's grace comes from it.
    engine.set_stop_grace(super::args::stop_grace_for(args.stop_timeout));
    let origin = engine.clock().now();
    let meta = super::meta::start(SystemTime::now());
    let opts = ReportOptions {
        summary_json: args.summary_json.clone(),
        csv: args.csv.clone(),
        hdr_log: args.hdr_log.clone(),
        html: args.html.clone(),
        progress: args.progress(),
        console_stderr: writes_to_stdout(&activity, &overrides),
    };
    // `stop` ends the scenario and every wait on it (an interrupt, a report that
    // cannot be written, a control `stop`); `interrupted` says whether the
    // user or the OS asked for it.
    let stop = Signal::new();
    let interrupted = Signal::new();
    // `--linger`: set while the endpoints serve the final numbers; an interrupt
    // then ends the linger (and the process, with the run's exit code).
    let (lingering, done_lingering) = (Signal::new(), Signal::new());
    {
        let (stop, interrupted, engine) = (stop.clone(), interrupted.clone(), engine.clone());
        let (lingering, done_lingering) = (lingering.clone(), done_lingering.clone());
        let count = std::sync::atomic::AtomicUsize::new(0);
        let stop_timeout = args.stop_timeout;
        if let Err(e) = ctrlc::set_handler(move || {
            if lingering.is_stopped() {
                done_lingering.stop();
                return;
            }
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

    let mut reporter = match Reporter::open(&opts, origin, SystemTime::now()) {
        Ok(r) => r.report_interval(args.report_interval),
        Err(e) => {
            eprintln!("paceline: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    // The last interval of each activity, for the endpoints only.
    let served = args.control.is_some() || args.metrics.is_some();
    let intervals: Option<Intervals> = served.then(Arc::default);
    let target = intervals.as_ref().map(|i| {
        Arc::new(EngineTarget::new(engine.clone(), i.clone()).with_buckets(args.metrics_buckets))
    });
    let mut servers: Vec<ControlServer> = Vec::new();
    let mut control_addr = None;
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
                    if access == Access::Full {
                        control_addr = Some(s.local_addr().to_string());
                    }
                    servers.push(s);
                }
                Err(e) => {
                    eprintln!("paceline: {e}");
                    reporter.abandon();
                    return EXIT_BAD_INPUT;
                }
            }
        }
    }

    // `--duration` cuts a scenario from the origin; one activity runs it as its own
    // `duration`, which counts from its first slot, after its set-up.
    let whole_run = args.duration.filter(|_| scenario.is_some());
    // Start: one activity, or the scenario on its own thread.
    let scenario_thread = match scenario {
        None => {
            if let Err(m) = start_alone(&drivers, &engine, &activity, &overrides, &interrupted) {
                eprintln!("paceline: {m}");
                // Refused before anything ran: no report file is left behind.
                reporter.abandon();
                for s in servers {
                    s.shutdown();
                }
                return EXIT_BAD_INPUT;
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
            duration: whole_run.map(|d| (origin, d)),
            control: control_addr,
        },
        scenario_thread,
        (&stop, &interrupted),
        Gate {
            thresholds: &thresholds,
            meta,
            junit,
        },
    );
    if let (Some(linger), Some(target)) = (args.linger, &target)
        && !servers.is_empty()
        && !linger.is_zero()
    {
        target.run_ended();
        lingering.stop();
        eprintln!(
            "paceline: the run has ended; serving its final numbers for {} (--linger; \
             Ctrl-C to exit now)",
            super::report::units::duration(paceline::nanos::from_duration(linger))
        );
        let until = Instant::now() + linger;
        while !done_lingering.is_stopped() && Instant::now() < until {
            std::thread::sleep(
                Duration::from_millis(20).min(until.saturating_duration_since(Instant::now())),
            );
        }
    }
    for s in servers {
        s.shutdown();
    }
    code
}

/// Starts the activity of a run without a scenario. An interrupt that closed
/// the engine first is no error: nothing runs, and the reports are written with
/// nothing in them (issue 25, item 4). Any other refusal is the message to
/// print, for exit 2.
fn start_alone(
    drivers: &Drivers,
    engine: &Engine,
    activity: &Activity,
    overrides: &ParamOverrides,
    interrupted: &Signal,
) -> Result<(), String> {
    match drivers.start(engine, activity, overrides) {
        Ok(_c) => {
            #[cfg(feature = "redis")]
            joined_note(&_c);
            Ok(())
        }
        Err(_) if interrupted.is_stopped() => Ok(()),
        Err(e) => Err(e.to_string()),
    }
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
    /// `--duration` of a scenario: the run's origin on the engine's clock, and how
    /// long it may last from there (one activity gets it as its `duration`).
    duration: Option<(paceline::Nanos, Duration)>,
    /// The control endpoint's address (`host:port`), for the advice to an
    /// activity that starts paused; `None` when there is none.
    control: Option<String>,
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
    gate: Gate<'_>,
) -> u8 {
    let Gate {
        thresholds,
        meta,
        junit,
    } = gate;
    let aborting: Vec<gate::Sourced> = thresholds
        .iter()
        .filter(|t| t.threshold.abort_on_fail)
        .cloned()
        .collect();
    // A threshold with `abort_on_fail` that failed at an interval.
    let mut aborted: Option<gate::Outcome> = None;
    let mut expired = false;
    let every = timing.every;
    let mut tracked: Vec<Tracked> = Vec::new();
    let tick = every.min(Duration::from_millis(250));
    let mut next_interval = Instant::now() + every;
    let mut last_tick = Instant::now();
    let mut scenario = scenario;
    let mut scenario_result = Ok(());
    // A step refused at its start (its driver not ready, its shared schedule
    // not joined): bad input, exit 2, as for one activity.
    let mut refused_start = false;
    let mut write_failed = false;
    let mut stuck = false;
    // The process's CPU over the whole run, and over each interval.
    let run_cpu = CpuMeter::start();
    let mut interval_cpu = CpuMeter::start();
    loop {
        track(engine, &mut tracked, timing.control.as_deref());
        let scenario_done = scenario.as_ref().is_none_or(|h| h.is_finished());
        if scenario_done && let Some(h) = scenario.take() {
            scenario_result = match h.join() {
                Ok(Err(e)) if stop.is_stopped() && ended_by_stop(&e) => Ok(()),
                Ok(Err(e)) if refused_at_start(&e) => {
                    refused_start = true;
                    Err(e.to_string())
                }
                Ok(r) => r.map_err(|e| e.to_string()),
                Err(_) => Err("the scenario thread panicked".to_string()),
            };
            // What the scenario started last, before its thread ended.
            track(engine, &mut tracked, timing.control.as_deref());
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
        // `--duration`: the whole run's time is up.
        if let Some((origin, d)) = timing.duration
            && !expired
            && engine.clock().now().saturating_sub(origin) >= paceline::nanos::from_duration(d)
        {
            expired = true;
            for c in engine.activities() {
                c.expire();
            }
            // The scenario stops where it is, and starts nothing more.
            stop.stop();
            engine.close();
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
            let cores = interval_cpu.lap();
            if let Err(failed) = interval(reporter, &mut tracked, intervals, cores) {
                report_failed(&failed);
                write_failed = true;
                stop.stop();
                engine.stop_all();
            }
            if aborted.is_none() && !aborting.is_empty() {
                let (so_far, means): (Vec<ReportData>, Vec<Option<f64>>) = tracked
                    .iter()
                    .map(|t| {
                        let (i, s, e, m) = judged_totals(&t.control, run_cpu.cores());
                        ((i, s, e), m)
                    })
                    .unzip();
                let failed = gate::check_interval(&aborting, &subjects(&so_far, &means))
                    .into_iter()
                    .find(|r| !r.pass);
                if let Some(f) = failed {
                    eprintln!(
                        "paceline: threshold `{}` failed ({}: {}) with abort_on_fail: stopping \
                         the run",
                        f.expr,
                        f.activity.as_deref().unwrap_or("?"),
                        f.value
                    );
                    aborted = Some(f);
                    stop.stop();
                    engine.stop_all();
                }
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
            if let Err(failed) = reporter.progress(&progress) {
                report_failed(&failed);
                write_failed = true;
                stop.stop();
                engine.stop_all();
            }
        }
    }
    finish(
        reporter,
        Ended {
            tracked,
            intervals,
            interval_cores: interval_cpu.lap(),
            run_cores: run_cpu.cores(),
            aborted,
            scenario_result,
            refused_start,
            write_failed,
            stuck,
            interrupted: interrupted.is_stopped(),
        },
        Gate {
            thresholds,
            meta,
            junit,
        },
    )
}

/// Whether a scenario stopped because a step's activity was refused at its
/// start: its driver could not get ready (a server unreachable, a statement
/// refused) or it could not join its shared schedule (`coordinate`: the store
/// unreachable, another cycle range). One activity refused so exits 2; a step
/// does too. A start the closed engine refused is [`ended_by_stop`]'s.
fn refused_at_start(e: &paceline::ScenarioError) -> bool {
    use paceline::{EngineError, ScenarioError, StartError};
    matches!(e, ScenarioError::Start { error, .. }
        if !matches!(error, StartError::Engine(EngineError::Closed { .. })))
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

#[cfg(test)]
#[path = "run_tests.rs"]
mod tests;
