//! `paceline run`: load, start (one activity or a scenario), report, exit.

use super::args::{EXIT_BAD_INPUT, EXIT_OK, EXIT_RUN_FAILED, EXIT_THRESHOLDS, RunArgs};
use super::bundled;
use super::control::{Access, ControlServer};
use super::gate;
use super::report::text::Progress;
use super::report::{ActivityInfo, ActivityReport, ReportOptions, Reporter};
use super::target::{EngineTarget, Intervals};
use paceline::{
    Activity, ActivityError, Control, CpuMeter, Drivers, Engine, Figures, Outcome, ParamOverrides,
    RunState, Scenario, Signal, Snapshot, Spread, Step, TimelineEntry, Verdict, machine_cores,
    run_scenario,
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
    load_focused(drivers, file, scenario_word, params, true)
}

/// [`load`], validating the whole file when `focused` is false, or else (as
/// NB5 resolves a step) only what the scenario or step asked for uses (the
/// scenario `default` when none is asked for).
pub fn load_focused(
    drivers: &Drivers,
    file: Option<&Path>,
    scenario_word: Option<&str>,
    params: &[(String, String)],
    focused: bool,
) -> Result<(Activity, ParamOverrides, Option<Scenario>), u8> {
    let mut loader = drivers.loader();
    let scenario = params
        .iter()
        .rev()
        .find(|(k, _)| k == "scenario")
        .map(|(_, v)| v.clone())
        .or(scenario_word.map(str::to_string));
    // Each pair keeps its place on the command line (1-based), so a problem
    // with one says `param N` of what the user wrote.
    let numbered: Vec<(usize, (String, String))> = params
        .iter()
        .cloned()
        .enumerate()
        .filter(|(_, (k, _))| k != "scenario")
        .map(|(i, kv)| (i + 1, kv))
        .collect();
    let pairs: Vec<(String, String)> = numbered.iter().map(|(_, kv)| kv.clone()).collect();
    let renumber = |e: ActivityError, places: &[usize]| match e {
        ActivityError::Invalid { mut problems } => {
            for p in problems
                .iter_mut()
                .filter(|p| p.source == paceline::COMMAND_LINE)
            {
                if let Some(&n) = places.get(p.line.wrapping_sub(1)) {
                    p.line = n;
                }
            }
            ActivityError::Invalid { problems }
        }
        other => other,
    };
    let places: Vec<usize> = numbered.iter().map(|(n, _)| *n).collect();
    let (activity, overrides) = match file {
        Some(path) => {
            if let Some((n, (_, d))) = numbered.iter().rev().find(|(_, (k, _))| k == "driver") {
                if drivers.get(d).is_none() {
                    let known: Vec<String> = drivers.names().map(|n| format!("`{n}`")).collect();
                    eprintln!(
                        "paceline: param {n}: unknown driver `{d}`; known drivers: {}",
                        known.join(", ")
                    );
                    return Err(EXIT_BAD_INPUT);
                }
                loader = loader.run_driver(d);
            }
            loader = loader.template_vars(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
            // Validate as NB5 resolves a step: only what the step (or the
            // default scenario, when the file has one) uses.
            if focused {
                loader = loader.focus(scenario.as_deref().unwrap_or("default"));
            }
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
                        // Issue 24 item 16: not a raw "No such file" OS error.
                        eprintln!("paceline: {}", bundled::no_such(&word));
                        return Err(EXIT_BAD_INPUT);
                    }
                }
            } else {
                loader.load(path)
            };
            let a = loaded.map_err(|e| bad_activity(&e))?;
            // Template variables are set by their pairs, which are not params.
            let (rest_places, rest): (Vec<usize>, Vec<(String, String)>) = numbered
                .iter()
                .filter(|(_, (k, _))| !a.template_vars().contains(k))
                .cloned()
                .unzip();
            let o = loader
                .overrides(&rest, Some(&a.params().driver))
                .map_err(|e| bad_activity(&renumber(e, &rest_places)))?;
            (a, o)
        }
        None => loader
            .from_params(&pairs)
            .map_err(|e| bad_activity(&renumber(e, &places)))?,
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
            // Named by `scenario=NAME`: that param is the place.
            let place = params
                .iter()
                .rposition(|(k, _)| k == "scenario")
                .map_or(String::new(), |i| format!("param {}: ", i + 1));
            let source = if activity.source() == paceline::COMMAND_LINE {
                "the activity the params make".to_string()
            } else {
                activity.source().to_string()
            };
            eprintln!(
                "paceline: {place}no scenario `{name}` in {source}; {}",
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
        // A duration's unbounded cycles are no count to show.
        cycles_requested: if s.cycles.end >= paceline::UNBOUNDED_CYCLES {
            0
        } else {
            s.cycles.end - s.cycles.start
        },
        target_rate: s.rate.map(|r| r.rate()),
        mean_target: None,
        strictness: s.rate.map(|r| r.strictness_value()),
        driver_stats: None,
        first_errors: c.metrics().first_errors(),
        verdict: None,
        #[cfg(feature = "redis")]
        coordinated: c.coordinated(),
        ended: c.outcome().map(|o| match o {
            // The summary says what ended it; the failure itself is printed apart.
            Outcome::Failed(_) => "failed".to_string(),
            o => o.to_string(),
        }),
    }
}

/// The verdict on `snap` of the run `info` describes, whose process used
/// `cpu_cores` over the same window. The achieved rate is judged against the
/// mean target over the window (`info.mean_target`), as the reports show it;
/// for the whole run (`whole_run`) over the schedule's span
/// (`paceline::achieved_rate`), as the summary shows it.
///
/// A process on a shared schedule is judged on its own tickets: its target is
/// what it ran plus the slots it forfeited, so its verdict rests on its waits.
/// Whether the processes together kept the schedule's rate is the shared line's
/// global rate.
fn verdict_of(
    info: &ActivityInfo,
    snap: &Snapshot,
    cpu_cores: Option<f64>,
    whole_run: bool,
) -> Verdict {
    #[cfg(feature = "redis")]
    if info.coordinated.is_some() && info.target_rate.is_some_and(|t| t > 0.0) {
        let secs = snap.elapsed_nanos() as f64 / 1e9;
        let own = (secs > 0.0).then(|| snap.rate() + snap.missed() as f64 / secs);
        return Verdict::of(snap, own.or(info.target_rate), info.threads, cpu_cores);
    }
    let target = info.judged_target();
    let mut f = Figures::of(snap, target, info.threads, cpu_cores, machine_cores());
    if whole_run {
        f.achieved_rate = paceline::achieved_rate(snap.ops(), snap.elapsed_nanos(), target);
    }
    Verdict::from_figures(&f, Spread::of(snap.queue()), Spread::of(snap.dispatch()))
}

/// The mean target rate of `c`'s schedule over `[start, end]`
/// (`paceline::mean_target_rate`): its first rate, then every change, ramp and
/// pause of its timeline, weighted by time. `None` when unpaced.
fn mean_target(c: &Control, info: &ActivityInfo, start: u64, end: u64) -> Option<f64> {
    let last = info.target_rate?;
    let initial = c.config().rate_spec().map(|r| r.rate());
    Some(paceline::mean_target_rate(
        initial.unwrap_or(last),
        &c.timeline(),
        start,
        end,
    ))
}

/// Prepares every run `activity` describes (the activity itself and each
/// scenario's run/start steps), so a driver's complaint shows before anything
/// runs: `FILE:LINE:COLUMN: WHAT: why` for the first that fails, or `param N:
/// WHAT: why` when it is about the command line's pair N of `cmdline`.
pub fn prepare_all(
    drivers: &Drivers,
    activity: &Activity,
    overrides: &ParamOverrides,
    cmdline: &[(String, String)],
) -> Result<(), String> {
    prepare_runs(drivers, activity, activity.runs(overrides), cmdline)
}

/// Prepares what a run of `scenario` starts (its run/start steps), or the
/// activity itself when there is none: as NB5 resolves a step, another
/// scenario's steps do not stop this one.
fn prepare_chosen(
    drivers: &Drivers,
    activity: &Activity,
    overrides: &ParamOverrides,
    scenario: Option<&Scenario>,
    cmdline: &[(String, String)],
) -> Result<(), String> {
    let runs = match scenario {
        None => activity.runs(overrides).into_iter().take(1).collect(),
        Some(sc) => sc
            .steps
            .iter()
            .zip(&sc.step_names)
            .filter_map(|(step, name)| match step {
                Step::Run(o) | Step::Start(o) => Some((
                    format!("scenario `{}` step `{name}`", sc.name),
                    o.then(overrides),
                )),
                _ => None,
            })
            .collect(),
    };
    prepare_runs(drivers, activity, runs, cmdline)
}

fn prepare_runs(
    drivers: &Drivers,
    activity: &Activity,
    runs: Vec<(String, ParamOverrides)>,
    cmdline: &[(String, String)],
) -> Result<(), String> {
    for (what, o) in runs {
        drivers.prepare(activity, &o).map_err(|e| {
            // A driver's complaint about an op's field or a param points at it:
            // the command line's pair first (it overrides the file), then the file.
            let (at, param) = match &e {
                paceline::StartError::Driver(d) => (activity.position_of(d), param_named(d)),
                // A tag filter that selects nothing: the `tags` param's place.
                paceline::StartError::NoOps { .. } => {
                    let d = paceline::DriverError::new("", "param `tags`");
                    (activity.position_of(&d), Some("tags".to_string()))
                }
                _ => (None, None),
            };
            let given = param.and_then(|p| cmdline.iter().rposition(|(k, _)| *k == p));
            match (given, at) {
                (Some(i), _) => format!("param {}: {what}: {e}", i + 1),
                (None, Some((line, column))) => {
                    format!("{}:{line}:{column}: {what}: {e}", activity.source())
                }
                (None, None) => format!("{}: {what}: {e}", activity.source()),
            }
        })?;
    }
    Ok(())
}

/// The param a driver's message is about (`param `NAME`: ...`), if any.
fn param_named(e: &paceline::DriverError) -> Option<String> {
    let msg = e.message();
    let i = msg.find("param `")? + "param `".len();
    let len = msg[i..].find('`')?;
    Some(msg[i..i + len].to_string())
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
    for n in activity.notices() {
        eprintln!("paceline: note: {n}");
    }
    if let Some(sc) = &scenario {
        report_locks(sc, &overrides);
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
            duration: args.duration.map(|d| (origin, d)),
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
    /// `--duration`: the run's origin on the engine's clock, and how long it may
    /// last from there.
    duration: Option<(paceline::Nanos, Duration)>,
    /// The control endpoint's address (`host:port`), for the advice to an
    /// activity that starts paused; `None` when there is none.
    control: Option<String>,
}

/// What the run is gated on, and where the gate's reports go.
struct Gate<'a> {
    /// The thresholds, with where each came from.
    thresholds: &'a [gate::Sourced],
    /// The run's metadata (`cli::meta`); `ended_at` is set at the end.
    meta: serde_json::Map<String, serde_json::Value>,
    /// `--junit`: the path and the file, created before the run.
    junit: Option<(std::path::PathBuf, std::fs::File)>,
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
        mut meta,
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
    // A step whose shared schedule could not be joined: bad input, exit 2.
    let mut cannot_join = false;
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
                Ok(Err(e)) if joins_no_schedule(&e) => {
                    cannot_join = true;
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
                let failed = gate::check(&aborting, &subjects(&so_far, &means))
                    .into_iter()
                    .find(|r| !r.pass && r.activity.is_some());
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
    // The last (partial) interval, then the totals.
    if let Err(failed) = interval(reporter, &mut tracked, intervals, interval_cpu.lap()) {
        report_failed(&failed);
        write_failed = true;
    }
    let mut http = Vec::new();
    let mut means = Vec::new();
    let mut rows = Vec::new();
    let totals: Vec<ReportData> = tracked
        .iter()
        .map(|t| {
            let (mut info, totals, timeline, mean) = judged_totals(&t.control, run_cpu.cores());
            means.push(mean);
            let stats = http_stats(&info);
            info.driver_stats = stats.as_ref().map(|h| {
                serde_json::json!({
                    "requests": h.requests,
                    "responses": h.responses,
                    "connections": h.connections,
                    "requests_per_connection": h.requests_per_connection(),
                    // Opening connections (TCP and TLS), out of the ops' service
                    // time for those opened before the first op.
                    "connect_ms_mean": h.connect_mean().map(|d| d.as_secs_f64() * 1e3),
                    "connections_before_start": h.connections_before_start,
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
            (info, totals, timeline)
        })
        .collect();
    let mut results = gate::check(thresholds, &subjects(&totals, &means));
    if let Some(a) = &aborted
        && !results.contains(a)
    {
        results.push(a.clone());
    }
    super::meta::finish(&mut meta, SystemTime::now());
    let mut run_doc = meta;
    if !thresholds.is_empty() {
        run_doc.insert(
            "thresholds".into(),
            results.iter().map(gate::Outcome::to_json).collect(),
        );
    }
    reporter.set_run(run_doc.clone());
    if cannot_join && tracked.is_empty() {
        // Refused at its first start: nothing ran, no report file is left behind.
        reporter.abandon();
    } else if let Err(failed) = reporter.finish(&as_reports(&totals)) {
        report_failed(&failed);
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
    if !results.is_empty() {
        reporter.note(&gate::console_block(&results));
    }
    if let Some((path, mut file)) = junit {
        let cases: Vec<gate::CaseOf> = totals
            .iter()
            .zip(&tracked)
            .map(|((info, snap, _), t)| junit_case(info, snap, &t.control))
            .collect();
        let xml = gate::junit(&cases, &results, &run_doc);
        use std::io::Write as _;
        if let Err(e) = file.write_all(xml.as_bytes()).and_then(|()| file.flush()) {
            eprintln!("paceline: cannot write report to {}: {e}", path.display());
            write_failed = true;
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
    // A run that went well but failed a threshold: the gate's own exit code.
    if code == EXIT_OK && (aborted.is_some() || results.iter().any(|r| !r.pass)) {
        for r in results.iter().filter(|r| !r.pass) {
            eprintln!(
                "paceline: threshold `{}` failed{}: {} (from {})",
                r.expr,
                r.activity
                    .as_deref()
                    .map(|a| format!(" on `{a}`"))
                    .unwrap_or_default(),
                r.value,
                r.from
            );
        }
        code = EXIT_THRESHOLDS;
    }
    code
}

/// Names each report that could not be written, one line each.
fn report_failed(failed: &super::report::Failed) {
    for e in &failed.0 {
        eprintln!("paceline: {e}");
    }
}

/// An activity's totals so far (or at the end), with its info, judged against the
/// mean rate its schedule asked for over them (ramps, rate changes and pauses
/// weighted by time, not the final rate), its timeline, and that mean target
/// (`None` when unpaced).
fn judged_totals(
    c: &Control,
    cpu_cores: Option<f64>,
) -> (ActivityInfo, Snapshot, Vec<TimelineEntry>, Option<f64>) {
    let mut info = info_of(c);
    let totals = c.totals();
    let timeline = c.timeline();
    info.mean_target = mean_target(c, &info, totals.start(), totals.end());
    info.verdict = Some(verdict_of(&info, &totals, cpu_cores, true));
    let mean = info.mean_target;
    (info, totals, timeline, mean)
}

/// What the thresholds read of each activity's judged totals: `data` with the
/// mean target of each.
fn subjects<'a>(data: &'a [ReportData], means: &[Option<f64>]) -> Vec<gate::Subject<'a>> {
    data.iter()
        .zip(means)
        .map(|((info, snap, _), mean)| gate::Subject {
            alias: &info.alias,
            snapshot: snap,
            mean_target: *mean,
            verdict: info.verdict.as_ref(),
        })
        .collect()
}

/// An activity as a JUnit test case: failed when the activity failed.
fn junit_case(info: &ActivityInfo, snap: &Snapshot, c: &Control) -> gate::CaseOf {
    let outcome = c.outcome();
    let failure = match &outcome {
        Some(Outcome::Failed(why)) if c.failure_kind().as_deref() != Some("closed") => {
            Some(why.clone())
        }
        _ => None,
    };
    gate::CaseOf {
        alias: info.alias.clone(),
        seconds: snap.elapsed_nanos() as f64 / 1e9,
        outcome: outcome.map_or("running".to_string(), |o| o.to_string()),
        failure,
        detail: format!(
            "{} ops in {:.3}s, {:.1}/s, {} errors, response p99 {}",
            snap.ops(),
            snap.elapsed_nanos() as f64 / 1e9,
            snap.rate(),
            snap.error_count(),
            super::report::units::duration(snap.response().p99())
        ),
    }
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

/// What an activity that starts paused (`rate=0`) says: that no op runs, and how
/// to start them (issue 24, item 1: such a run used to say nothing at all).
fn paused_note(alias: &str, control: Option<&str>) -> String {
    let how = match control {
        Some(addr) => format!(
            "set a rate to start it: `curl -X PUT -d 1000 {addr}/activities/{alias}/rate` \
             (or `-d '1000 over 30s'` to ramp)"
        ),
        None => "there is no control endpoint to raise it: stop with Ctrl-C and run with \
                 `rate=N`, or add `--control 127.0.0.1:7878` to set the rate during the run"
            .to_string(),
    };
    format!(
        "paceline: activity `{alias}` starts paused (rate 0): no op runs until its rate is raised; {how}"
    )
}

/// Adds activities the engine started since the last look; says when one starts
/// paused (`control` is the control endpoint's address, for the advice).
fn track(engine: &Engine, tracked: &mut Vec<Tracked>, control: Option<&str>) {
    for c in engine.activities() {
        if !tracked.iter().any(|t| t.control.same_run(&c)) {
            if c.status().rate.is_some_and(|r| r.is_paused()) && !c.is_finished() {
                eprintln!("{}", paused_note(c.alias(), control));
            }
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
) -> Result<(), super::report::Failed> {
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
        // Each interval is judged against the mean target over it (issue 24,
        // item 8: the target at its end contradicted the summary on a ramp).
        t.info.mean_target = mean_target(&t.control, &t.info, snap.start(), snap.end());
        let verdict = verdict_of(&t.info, &snap, cpu_cores, false);
        if let Some(Ok(mut m)) = intervals.map(|i| i.lock()) {
            m.insert(
                t.info.alias.clone(),
                serde_json::json!({
                    "start_seconds": snap.start() as f64 / 1e9,
                    "end_seconds": snap.end() as f64 / 1e9,
                    "ops": snap.ops(),
                    "rate": snap.rate(),
                    "mean_target": t.info.mean_target,
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
#[path = "run_tests.rs"]
mod tests;
