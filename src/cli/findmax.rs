//! `paceline findmax`: the highest rate the system sustains.
//!
//! One activity runs for the whole search, in this process: between steps only
//! its rate changes (through its control handle, as a restart of the schedule,
//! so a failed step's backlog does not spill into the next), and its threads and
//! connections stay warm. Each step settles for a while that is not counted,
//! then measures for `--step`. A step passes when the achieved rate is within
//! 1 % of its target (above it counts: that is a backlog from before the step
//! being paid off; ops still queued at the step's end that finish in a tail as
//! long as the settle period, beyond what the tail is due, count for the step) (or
//! the ops in flight at the step's edges plus one over the step, if more, counted
//! as the verdict counts them: `paceline::Figures::edge_ops`,
//! `paceline::rate_tolerance`; see [`step_tolerance`]),
//! response p99 is under `--slo-p99` if one is given, and the error rate is at
//! most `--max-error-rate` (0 by default).
//!
//! In thread scope (`rate=1000,thread`: each thread's schedule runs at the
//! rate) the search steps the activity's total, as the reports show it
//! (`paceline::total_rate`) and as the achieved rate counts its ops: each
//! step's spec is its total over the threads, `--start` is a total, and every
//! rate findmax prints is one.
//!
//! A step that fails is run once more, and fails only if it fails again (one
//! stall on a busy machine does not end the growth for good).
//!
//! The search ([`Search`]) doubles the rate from the start until a step fails
//! (or halves it until one passes, no lower than a rate that gives a step 20
//! ops), then bisects between the highest pass and
//! the lowest fail until they are within 2 %. The step that bounds the result
//! from above says what limited it: the SLO, the generator (its verdict is
//! `generator-bound`: then the system's own limit is higher than this run can
//! show, and findmax says so), or the system.

use super::args::{
    EXIT_BAD_INPUT, EXIT_OK, EXIT_RUN_FAILED, EXIT_THRESHOLDS, RunInput, parse_run_input,
};
use super::load::{load, prepare_all};
use super::report::units;
use clap::Args;
use paceline::nanos::parse_duration_or_seconds;
use paceline::{
    Control, CpuMeter, Cycles, Drivers, Engine, Figures, MAX_CYCLE, MAX_RATE, RateSpec, Scope,
    Verb, Verdict, rate_tolerance,
};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The bisection stops when the highest pass and the lowest fail are this close.
pub const PRECISION: f64 = 0.02;

/// The rate a search starts from when neither `--start` nor the activity gives one.
pub const DEFAULT_START: f64 = 100.0;

/// The most steps a search takes (doubling from 0.01/s to the pacer's maximum
/// takes 37, bisecting to 2 % about 6 more).
const MAX_STEPS: usize = 64;

/// The lowest rate tried before a search gives up finding a passing one.
const MIN_TRIED: f64 = 0.01;

/// The fewest ops a step must be due to measure a rate and a p99: the halving
/// stops above the rate that gives a step fewer.
pub const MIN_STEP_OPS: f64 = 20.0;

/// `paceline findmax [FILE | BUNDLED] [NAME=VALUE]...` and its options.
#[derive(Debug, Args)]
pub struct FindmaxArgs {
    /// The workload file or a bundled activity (optional when the parameters say
    /// everything), then parameters as NAME=VALUE.
    #[arg(value_name = "FILE.yaml | BUNDLED | NAME=VALUE", value_parser = parse_run_input)]
    pub inputs: Vec<RunInput>,

    /// A step fails when its response p99 is above this (such as 50ms).
    #[arg(long, value_name = "DURATION", value_parser = parse_slo)]
    pub slo_p99: Option<Duration>,

    /// How long each step measures, after its settle period.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_step)]
    pub step: Duration,

    /// How long each step runs at its rate before it measures (by default a fifth
    /// of the step, at most 2s).
    #[arg(long, value_name = "DURATION", value_parser = parse_settle)]
    pub settle: Option<Duration>,

    /// The first rate tried (by default the activity's rate, else 100/s); in
    /// thread scope the total over the threads, as every rate findmax shows.
    #[arg(long, value_name = "RATE", value_parser = parse_start)]
    pub start: Option<f64>,

    /// The largest share of ops that may fail in a passing step, 0 to 1.
    #[arg(long, value_name = "FRACTION", default_value = "0", value_parser = parse_error_rate)]
    pub max_error_rate: f64,

    /// Write the steps and the result as JSON to PATH.
    #[arg(long, value_name = "PATH")]
    pub summary_json: Option<PathBuf>,

    /// Write the steps and the result as one self-contained HTML page to PATH
    /// (plots of the rates and response p99 per step, and the steps' table).
    #[arg(long, value_name = "PATH")]
    pub html: Option<PathBuf>,
}

fn parse_slo(text: &str) -> Result<Duration, String> {
    let d = parse_duration_or_seconds(text).map_err(|e| format!("--slo-p99: {e}"))?;
    if d.is_zero() {
        return Err(format!(
            "--slo-p99 `{text}`: no response is that fast; give a bound above 0, such as 50ms"
        ));
    }
    Ok(d)
}

fn parse_step(text: &str) -> Result<Duration, String> {
    let d = parse_duration_or_seconds(text).map_err(|e| format!("--step: {e}"))?;
    if d < Duration::from_millis(10) {
        return Err(format!(
            "--step `{text}` is too short to measure a rate: use at least 10ms, such as 10s"
        ));
    }
    Ok(d)
}

fn parse_settle(text: &str) -> Result<Duration, String> {
    parse_duration_or_seconds(text).map_err(|e| format!("--settle: {e}"))
}

fn parse_start(text: &str) -> Result<f64, String> {
    let spec = RateSpec::parse(text).map_err(|e| format!("--start `{text}`: {e}"))?;
    if spec.rate() <= 0.0 {
        return Err(format!(
            "--start `{text}`: a search starts from a rate above 0, such as 1000"
        ));
    }
    Ok(spec.rate())
}

fn parse_error_rate(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(format!(
            "--max-error-rate `{text}`: give a share of ops from 0 to 1, such as 0.01 for 1 %"
        )),
    }
}

/// The search for the highest passing rate: a pure state machine. Ask
/// [`next`](Self::next) for the rate to try, tell [`record`](Self::record)
/// whether it passed; `None` from `next` ends the search.
#[derive(Debug, Clone, PartialEq)]
pub struct Search {
    /// The highest rate that passed.
    pub pass: Option<f64>,
    /// The lowest rate that failed.
    pub fail: Option<f64>,
    next: Option<f64>,
    /// The lowest rate the halving tries.
    floor: f64,
}

impl Search {
    /// A search whose first step is `start`, halving no lower than `floor`
    /// (at least 0.01/s).
    pub fn new(start: f64, floor: f64) -> Self {
        let floor = floor.max(MIN_TRIED);
        Self {
            pass: None,
            fail: None,
            next: Some(start.clamp(floor, MAX_RATE)),
            floor,
        }
    }

    /// The rate to try next; `None` once the bounds are within [`PRECISION`], no
    /// rate down to the floor passed, or the pacer's maximum passed.
    pub fn next(&self) -> Option<f64> {
        self.next
    }

    /// Records that `rate` passed or failed, and decides the next rate.
    pub fn record(&mut self, rate: f64, passed: bool) {
        if passed {
            self.pass = Some(self.pass.map_or(rate, |p| p.max(rate)));
        } else {
            self.fail = Some(self.fail.map_or(rate, |f| f.min(rate)));
        }
        self.next = match (self.pass, self.fail) {
            (Some(p), None) => (p < MAX_RATE).then(|| (p * 2.0).min(MAX_RATE)),
            (None, Some(f)) => (f / 2.0 >= self.floor).then_some(f / 2.0),
            (Some(p), Some(f)) if f > p * (1.0 + PRECISION) => Some((p + f) / 2.0),
            _ => None,
        };
    }
}

/// One measured step.
#[derive(Debug, Clone)]
struct StepResult {
    target: f64,
    achieved: f64,
    response_p99: u64,
    errors: u64,
    ops: u64,
    verdict: Verdict,
    /// Why it failed (`None` when it passed), and whether the SLO alone failed it.
    failed: Option<String>,
    slo_only: bool,
    /// The second run of a step whose first run failed.
    retry: bool,
}

/// `paceline findmax`.
pub fn findmax(args: FindmaxArgs) -> u8 {
    let mut file = None;
    let mut params = Vec::new();
    for (i, input) in args.inputs.iter().enumerate() {
        match input {
            RunInput::File(p) if i == 0 => file = Some(p.clone()),
            RunInput::File(p) => {
                eprintln!(
                    "paceline: `{}` is not a parameter: findmax takes one file (or bundled \
                     activity) first, then parameters as NAME=VALUE",
                    super::args::shown_word(&p.display().to_string())
                );
                return EXIT_BAD_INPUT;
            }
            RunInput::Param(k, v) => params.push((k.clone(), v.clone())),
        }
    }
    // The search runs until it ends, whatever cycle count the activity has,
    // from the first cycle given (audit L6: a given `cycles=` was replaced
    // without a word).
    let given = params.iter().rposition(|(k, _)| k == "cycles").map(|i| {
        (
            format!("`cycles={}` (param {})", params[i].1, i + 1),
            &params[i].1,
        )
    });
    let first_cycle = given
        .as_ref()
        .and_then(|(_, v)| Cycles::parse(v).ok())
        .map_or(0, |c| c.start());
    let given = given.map(|(place, _)| place);
    params.push(("cycles".to_string(), format!("{first_cycle}..{MAX_CYCLE}")));
    let drivers = Drivers::builtin();
    let (activity, mut overrides, _) = match load(&drivers, file.as_deref(), None, &params) {
        Ok(x) => x,
        Err(code) => return code,
    };
    // The file's own `cycles` (a command line's comes after it and wins; one
    // that reads `cycles=` as its template variable already has the search's).
    let own = activity.params().cycles;
    let on_command_line = given.is_some();
    let given = given.or_else(|| {
        (file.is_some() && activity.params().cycles_given && own.end() != MAX_CYCLE).then(|| {
            format!(
                "`cycles: {own}` of {}",
                super::args::shown_word(activity.source())
            )
        })
    });
    if !on_command_line && own.start() > 0 && own.end() != MAX_CYCLE {
        // A file's cycle range keeps its first cycle too.
        overrides.cycles = Cycles::new(own.start(), MAX_CYCLE)
            .ok()
            .or(overrides.cycles);
    }
    if let Some(place) = &given {
        let from = activity.params().with(&overrides).cycles.start();
        eprintln!(
            "paceline: findmax: {place} is not used: a search runs its steps for as many \
             cycles as they take, from cycle {from} with no end; {}",
            if on_command_line {
                "leave `cycles` out of findmax's params"
            } else {
                "the file's `cycles` still bounds `paceline run`"
            }
        );
    }
    #[cfg(feature = "redis")]
    if let Some(c) = activity.params().with(&overrides).coordinate {
        eprintln!(
            "paceline: findmax steps the rate of this one process, so it cannot search the shared \
             schedule {c}, whose rate is the sum over every process in it: leave `coordinate` out \
             to find one process's maximum, or run the shared activity with `paceline run ... \
             --control ADDR` and change its rate with PUT /activities/ALIAS/rate"
        );
        return EXIT_BAD_INPUT;
    }
    let base = activity
        .params()
        .with(&overrides)
        .rate
        .unwrap_or(RateSpec::new(DEFAULT_START));
    // The search's rates are the activity's totals: in thread scope each of
    // its threads' schedules runs at the total's share (issue: a step of 20/s
    // on 2 threads ran 40/s and was judged against 20/s).
    let share = match base.scope_value() {
        Scope::Thread => activity.params().with(&overrides).threads.max(1) as f64,
        Scope::Activity => 1.0,
    };
    let start = args.start.unwrap_or(base.rate() * share);
    let Ok(first) = base.with_rate(start / share) else {
        eprintln!("paceline: findmax: cannot start at {start}/s");
        return EXIT_BAD_INPUT;
    };
    overrides.rate = Some(first);
    if let Err(m) = prepare_all(&drivers, &activity, &overrides, &params) {
        eprintln!("paceline: {m}");
        return EXIT_BAD_INPUT;
    }
    // A page that cannot be written is known before the search, not after it.
    let mut page_file = match args.html.as_deref().map(html::create).transpose() {
        Ok(f) => f,
        Err(code) => return code,
    };
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        if let Err(e) = ctrlc::set_handler(move || stop.store(true, Ordering::Relaxed)) {
            eprintln!("paceline: cannot catch Ctrl-C ({e})");
        }
    }
    let engine = Engine::new();
    let control = match drivers.start(&engine, &activity, &overrides) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("paceline: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let settle = args
        .settle
        .unwrap_or((args.step / 5).min(Duration::from_secs(2)));
    // A stdout that is gone (`| head -1`, a full disk) ends the search when
    // nothing else records it; with a summary or a page, it goes on for them.
    let mut out = super::out::Stdout::new();
    let files = args.summary_json.is_some() || args.html.is_some();
    out.line(&format!(
        "findmax {}: steps of {} after {} to settle, from {}/s{}{}",
        control.alias(),
        units::duration(paceline::nanos::from_duration(args.step)),
        units::duration(paceline::nanos::from_duration(settle)),
        units::rate(start),
        if share > 1.0 {
            format!(" in total (thread scope: each of {share} threads at its share)")
        } else {
            String::new()
        },
        args.slo_p99.map_or(String::new(), |s| format!(
            ", response p99 SLO {}",
            units::duration(paceline::nanos::from_duration(s))
        ))
    ));
    // A step must be due enough ops to measure.
    let floor = MIN_STEP_OPS / args.step.as_secs_f64();
    let mut search = Search::new(start, floor);
    let mut steps: Vec<StepResult> = Vec::new();
    let mut failure = None;
    // The step being run (or next, between steps), for a search stopped early.
    let mut running = 1;
    while let Some(rate) = search.next() {
        if steps.len() >= MAX_STEPS || stop.load(Ordering::Relaxed) || (out.is_gone() && !files) {
            running = step_number(&steps);
            break;
        }
        let spec = match base.with_rate(rate / share) {
            Ok(s) => s.verb(Verb::Restart),
            Err(e) => {
                failure = Some(format!("rate {rate}: {e}"));
                break;
            }
        };
        // Numbered as the table numbers them: a step's retry keeps its number.
        let n = step_number(&steps);
        running = n;
        let mut step = match measure(&control, spec, rate, settle, args.step, &stop, &args) {
            Ok(s) => s,
            Err(why) => {
                failure = Some(why);
                break;
            }
        };
        out.line(&step_line(n, &step));
        // A failure is confirmed by running the step again: one stall on a busy
        // machine must not end the growth for good.
        if step.failed.is_some() {
            steps.push(step);
            step = match measure(&control, spec, rate, settle, args.step, &stop, &args) {
                Ok(s) => StepResult { retry: true, ..s },
                Err(why) => {
                    failure = Some(why);
                    break;
                }
            };
            out.line(&step_line(n, &step));
        }
        search.record(rate, step.failed.is_none());
        steps.push(step);
    }
    control.stop();
    control.wait();
    let interrupted = stop.load(Ordering::Relaxed);
    let stopped = if interrupted {
        Some("interrupted (Ctrl-C)".to_string())
    } else if out.is_gone() && !files {
        Some("stdout is gone".to_string())
    } else if steps.len() >= MAX_STEPS && search.next().is_some() {
        Some(format!("{MAX_STEPS} steps run"))
    } else {
        failure.clone()
    };
    let found = conclude(
        &search,
        &steps,
        stopped.as_deref().map(|why| (why, running)),
    );
    out.line(&format!("\n{}", table(&steps)));
    out.line(&found.line());
    if let Some(path) = &args.summary_json {
        let doc = summary_json(&found, &steps, &args, settle);
        let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
        if let Err(e) = std::fs::write(path, text + "\n") {
            eprintln!(
                "paceline: cannot write {}: {e} (check that the directory exists and is \
                 writable)",
                path.display()
            );
            return out.exit(EXIT_RUN_FAILED);
        }
    }
    if let (Some(path), Some(f)) = (&args.html, page_file.as_mut()) {
        let data = html::page_data(control.alias(), &args, &steps, &found);
        if let Err(code) = html::write(path, f, &data) {
            return out.exit(code);
        }
    }
    if let Some(why) = failure {
        eprintln!("paceline: findmax stopped: {why}");
        return out.exit(EXIT_RUN_FAILED);
    }
    if interrupted {
        eprintln!("paceline: findmax interrupted; the result covers the steps so far");
        return out.exit(EXIT_RUN_FAILED);
    }
    // A gate must not pass on a search that found nothing (audit L6): exit 3,
    // as a failed threshold does.
    if found.max.is_none() && stopped.is_none() {
        let lowest = steps.iter().map(|s| s.target).fold(f64::INFINITY, f64::min);
        let step = units::duration(paceline::nanos::from_duration(args.step));
        eprintln!(
            "paceline: {}",
            found.no_pass_message(lowest, &step, MIN_STEP_OPS as u64)
        );
        return out.exit(EXIT_THRESHOLDS);
    }
    out.exit(EXIT_OK)
}

/// How far a step's achieved rate may fall short of its target and still pass:
/// 1 % of it, or the ops in flight at the step's edges plus one over the step, as
/// the verdict counts them ([`Figures::edge_ops`]: up to `concurrency` on the
/// async runner, where `threads` held 10K/s x 50 ms on 2 threads to 100/s).
pub(super) fn step_tolerance(f: &Figures) -> f64 {
    rate_tolerance(f.target_rate.unwrap_or(0.0), f.elapsed_nanos, f.edge_ops())
}

/// Runs one step: the rate (a restart of the schedule; `target` is the total
/// its threads' schedules ask for, the spec's rate in activity scope), the settle period
/// (taken as its own snapshot and dropped), the measured step, and a tail as
/// long as the settle period in which the step's queued ops may finish.
fn measure(
    control: &Control,
    spec: RateSpec,
    target: f64,
    settle: Duration,
    step: Duration,
    stop: &AtomicBool,
    args: &FindmaxArgs,
) -> Result<StepResult, String> {
    control.set_rate(spec).map_err(|e| ended(control, &e))?;
    nap(control, settle, stop)?;
    control.snapshot();
    let mut cpu = CpuMeter::start();
    nap(control, step, stop)?;
    let snap = control.snapshot();
    let threads = control.status().threads;
    let verdict = Verdict::of(&snap, Some(target), threads, cpu.lap());
    // The tail: ops of the step still queued at its end (behind a stall near
    // the end) that finish in the next settle period, beyond what that period is
    // due, count for the step. An unsustainable rate has no such surplus.
    nap(control, settle, stop)?;
    let tail = control.snapshot();
    let due = target * tail.elapsed_nanos() as f64 / 1e9;
    let drained = (tail.ops() as f64 - due).max(0.0);
    let achieved = if snap.elapsed_nanos() > 0 {
        (snap.ops() as f64 + drained) * 1e9 / snap.elapsed_nanos() as f64
    } else {
        0.0
    };
    let (ops, errors) = (snap.ops(), snap.error_count());
    let response_p99 = snap.response().p99();
    let tolerance = step_tolerance(&Figures::of(&snap, Some(target), threads, None, 0));
    let error_rate = if ops == 0 {
        if errors > 0 { 1.0 } else { 0.0 }
    } else {
        errors as f64 / ops as f64
    };
    let mut why = Vec::new();
    // Above the target is a backlog from before the step being paid off.
    if achieved < target - tolerance {
        let by = if tolerance > 0.01 * target {
            format!(
                "{}/s, the ops in flight at its edges,",
                units::rate(tolerance)
            )
        } else {
            "1 %".into()
        };
        why.push(format!(
            "achieved {}/s, more than {by} short of {}/s",
            units::rate(achieved),
            units::rate(target)
        ));
    }
    if error_rate > args.max_error_rate {
        why.push(format!(
            "{errors} of {ops} ops failed ({:.2} %, at most {:.2} % allowed)",
            error_rate * 100.0,
            args.max_error_rate * 100.0
        ));
    }
    let over_slo = args
        .slo_p99
        .is_some_and(|s| response_p99 > paceline::nanos::from_duration(s));
    if let Some(slo) = args.slo_p99.filter(|_| over_slo) {
        why.push(format!(
            "response p99 {} over the {} SLO",
            units::duration(response_p99),
            units::duration(paceline::nanos::from_duration(slo))
        ));
    }
    Ok(StepResult {
        target,
        achieved,
        response_p99,
        errors,
        ops,
        slo_only: over_slo && why.len() == 1,
        retry: false,
        failed: (!why.is_empty()).then(|| why.join("; ")),
        verdict,
    })
}

/// Sleeps `d` in short naps; an error if the activity ended or Ctrl-C came.
fn nap(control: &Control, d: Duration, stop: &AtomicBool) -> Result<(), String> {
    let until = Instant::now() + d;
    loop {
        if stop.load(Ordering::Relaxed) {
            return Err("interrupted".to_string());
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        if let Some(outcome) = control.wait_timeout(left.min(Duration::from_millis(50))) {
            return Err(format!(
                "the activity ended ({outcome}); with errors, run it with `errors=count` so a \
                 failed op does not stop the search"
            ));
        }
    }
}

fn ended(control: &Control, e: &paceline::ControlError) -> String {
    match control.outcome() {
        Some(o) => format!("the activity ended ({o})"),
        None => e.to_string(),
    }
}

#[path = "findmax_html.rs"]
mod html;

#[path = "findmax_found.rs"]
mod found;
use found::{Found, conclude, step_number};

#[path = "findmax_output.rs"]
mod output;
use output::{step_line, summary_json, table};

#[cfg(test)]
#[path = "findmax_tests.rs"]
mod tests;
