//! While a run goes: the activities it reports on, each interval's snapshot
//! and verdict, and what the reports are handed.

use super::report::{ActivityInfo, ActivityReport, Reporter, units};
use super::target::Intervals;
use paceline::{
    Control, Engine, Figures, Outcome, Snapshot, Spread, TimelineEntry, Verdict, machine_cores,
};
use std::time::Instant;

/// One activity the run reports on.
pub(super) struct Tracked {
    pub(super) control: Control,
    pub(super) info: ActivityInfo,
    pub(super) seen_events: usize,
    /// Wait p99 of the latest interval, and errors so far, for the progress line.
    pub(super) last_wait_p99: Option<u64>,
    pub(super) errors: u64,
    pub(super) last_done: u64,
    /// When it was first seen stopping.
    pub(super) stopping_since: Option<Instant>,
    /// Stopping for longer than the stop timeout: no longer waited for.
    pub(super) stuck: bool,
}

pub(super) fn info_of(c: &Control) -> ActivityInfo {
    let s = c.status();
    let first_slot = c.metrics().first_slot();
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
        // In thread scope every thread's schedule runs at the spec's rate:
        // the target is their total, as the achieved rate counts every thread.
        target_rate: s.rate.map(|r| paceline::total_rate(&r, s.threads)),
        mean_target: None,
        strictness: s.rate.map(|r| r.strictness_value()),
        per_thread: s
            .rate
            .is_some_and(|r| r.scope_value() == paceline::Scope::Thread),
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
        schedule_start: Some(first_slot.unwrap_or_else(|| c.metrics().window_start())),
        schedule_begun: first_slot.is_some(),
    }
}

/// Where the row of `snap` counts from and whether it is a set-up row, as the
/// snapshot says (`Snapshot::is_set_up`), not as `info` (read after it) does:
/// the schedule may have begun in between (session 14 review, finding 2).
pub(super) fn row_info(
    metrics: &paceline::Metrics,
    info: &ActivityInfo,
    snap: &Snapshot,
) -> RowBase {
    if snap.is_set_up() && info.schedule_begun {
        // The window has moved since: the activity's start is its first slot
        // less the set-up.
        let t = metrics.totals();
        let start = t.start().saturating_sub(t.setup_nanos());
        return RowBase {
            schedule_start: Some(start),
            schedule_begun: false,
        };
    }
    RowBase {
        schedule_start: info.schedule_start,
        schedule_begun: info.schedule_begun,
    }
}

/// A row's base and set-up mark ([`row_info`]).
pub(super) struct RowBase {
    pub(super) schedule_start: Option<paceline::Nanos>,
    pub(super) schedule_begun: bool,
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
pub(super) fn verdict_of(
    info: &ActivityInfo,
    snap: &Snapshot,
    cpu_cores: Option<f64>,
    whole_run: bool,
) -> Verdict {
    verdict_on(
        info,
        snap,
        cpu_cores,
        whole_run.then_some((paceline::Arrivals::Uniform, paceline::Scope::Activity)),
    )
}

/// [`verdict_of`] with the whole run's arrivals (`run`; `None` for an
/// interval): for Poisson arrivals the whole run's achieved rate is judged
/// against its drawn slots' own rate (`paceline::Figures::of_scoped_run`).
pub(super) fn verdict_on(
    info: &ActivityInfo,
    snap: &Snapshot,
    cpu_cores: Option<f64>,
    run: Option<(paceline::Arrivals, paceline::Scope)>,
) -> Verdict {
    let v = judged_on(info, snap, cpu_cores, run);
    // Before the schedule's first slot no op was ever in flight: whatever the
    // window's figures say (no op finished in it), it was set-up, not a stall
    // of the system under test (audit p16, H9).
    let set_up = match run {
        Some(_) => !info.schedule_begun,
        None => snap.is_set_up(),
    };
    if !set_up || snap.ops() > 0 {
        return v;
    }
    let setup = match run {
        // The whole run's totals hold their set-up once judged as never begun
        // (`Snapshot::before_first_slot`); a paused launch's, its window.
        Some(_) => snap.setup_nanos().max(snap.elapsed_nanos()),
        None => snap
            .end()
            .saturating_sub(info.schedule_start.unwrap_or(snap.start())),
    };
    let paused = (info.target_rate == Some(0.0)).then_some(match run {
        Some(_) => "launched paused (rate 0), no rate was set to start it",
        None => "launched paused (rate 0)",
    });
    // What the set-up had done: the first slot comes when a worker is ready,
    // so no worker had finished its start (for a driver with connections,
    // opening them).
    let set_up = run.map(|_| set_up_left(info));
    let what = paused.or(set_up.as_deref());
    // A duration counts from the first slot: one that ended the run before it
    // ran out counting from the launch.
    let ended = run.map(|_| match info.ended.as_deref() {
        Some("ran its duration") if paused.is_some() => "its time was up",
        Some("ran its duration") => "its time was up: the set-up outlasted its duration",
        Some(e) => e,
        None => "still setting up",
    });
    let mut v = v.not_started(setup, ended, what);
    if run.is_some() && info.had_no_cycles() {
        // Not "stopped during set-up": nothing was due (audit p17, L5).
        v.reason = "no cycles to run: its cycle range is empty (`cycles=0`, or `A..B` with \
                    A = B), so no slot came and no op ran; give it cycles, such as \
                    `cycles=1..2` for one"
            .to_string();
    }
    v
}

/// What a run stopped before its first slot (not launched paused) had done:
/// the schedule's first slot comes when the first worker is ready, so none
/// was. A driver with connections (`postgres`, `jdbc`, `redis`, `http`) was
/// still opening them, and some may have been opened.
pub(super) fn set_up_left(info: &ActivityInfo) -> String {
    let none = match info.threads {
        1 => "its worker had not".to_string(),
        n => format!("none of its {n} workers had"),
    };
    match info.driver.as_str() {
        "postgres" | "jdbc" | "redis" | "http" => format!(
            "{none} finished opening its connections to the server (some may have been \
             opened)"
        ),
        _ => format!("{none} finished starting"),
    }
}

/// [`verdict_on`]'s verdict on the window's figures alone.
fn judged_on(
    info: &ActivityInfo,
    snap: &Snapshot,
    cpu_cores: Option<f64>,
    run: Option<(paceline::Arrivals, paceline::Scope)>,
) -> Verdict {
    #[cfg(feature = "redis")]
    if info.coordinated.is_some() && info.target_rate.is_some_and(|t| t > 0.0) {
        let secs = snap.elapsed_nanos() as f64 / 1e9;
        let own = (secs > 0.0).then(|| snap.rate() + snap.missed() as f64 / secs);
        return Verdict::of(snap, own.or(info.target_rate), info.threads, cpu_cores);
    }
    let target = info.judged_target();
    let f = match run {
        Some((arrivals, scope)) => Figures::of_scoped_run(
            snap,
            target,
            arrivals,
            scope,
            info.threads,
            cpu_cores,
            machine_cores(),
        ),
        None => Figures::of(snap, target, info.threads, cpu_cores, machine_cores()),
    };
    Verdict::from_figures(&f, Spread::of(snap.queue()), Spread::of(snap.dispatch()))
}

/// The mean target rate of `c`'s schedule over `[start, end]`
/// (`paceline::mean_target_rate`): its first rate, then every change, ramp and
/// pause of its timeline, weighted by time. `None` when unpaced.
///
/// The timeline's rates are the spec's: per thread in thread scope, where the
/// target is their total over the threads (`paceline::total_rate`). The factor
/// (the thread count in thread scope, 1 in activity scope) is integrated with
/// the rate: each stretch between two `threads` or scope events counts at the
/// factor in force over it, not at the one in force at the end (audit p16,
/// H7: `threads 1 -> 3` at 1 s of 4 read a mean target of 1500/s for 1245/s).
pub(super) fn mean_target(c: &Control, info: &ActivityInfo, start: u64, end: u64) -> Option<f64> {
    let last = info.target_rate?;
    let timeline = c.timeline();
    let thread_scope = c.status().rate.map(|r| r.scope_value()) == Some(paceline::Scope::Thread);
    let factors = factors(&timeline, info.threads, thread_scope);
    let end_factor = factors.last().map_or(1.0, |&(_, f)| f);
    let initial = c
        .config()
        .rate_spec()
        .map_or(last / end_factor, |r| r.rate());
    // Launched unpaced, the schedule had no target before its first rate: the
    // mean is over the paced span only (audit L9: the unpaced span counted at
    // the new rate).
    let start = match c.config().rate_spec() {
        Some(_) => start,
        None => paced_from(&timeline).map_or(start, |at| at.clamp(start, end)),
    };
    Some(integrate_factors(initial, &timeline, &factors, start, end))
}

/// When a schedule launched unpaced was first given a rate: its first rate
/// event to a finite rate above 0 (`unpaced -> 100`, or `0 -> 100` after
/// `unpaced -> 0`: review A, p17 L3). Every rate before it is unpaced or 0,
/// which give no target. `None` when there is none, or when the first rate
/// event is not from unpaced (a schedule launched with a rate).
pub(super) fn paced_from(timeline: &[TimelineEntry]) -> Option<u64> {
    let mut launched_unpaced = None;
    for e in timeline {
        if let paceline::Event::Rate { from, to } = e.event {
            if !*launched_unpaced.get_or_insert(from.is_infinite()) {
                return None;
            }
            if to.is_finite() && to > 0.0 {
                return Some(e.at);
            }
        }
    }
    None
}

/// The note the engine marks when a rate change moves the schedule to another
/// scope (`scope activity -> thread`): the word after the arrow is the scope
/// in force after it.
fn scope_after(note: &str) -> Option<bool> {
    match note.strip_prefix("scope ")?.split(" -> ").nth(1)? {
        "thread" => Some(true),
        "activity" => Some(false),
        _ => None,
    }
}

/// The per-spec factor over the timeline: `(from, factor)` in time order, the
/// first from 0. The state at the start is read back from the first event of
/// each kind (its `from`), or is the state at the end (`threads`, `thread_scope`)
/// when there is none.
fn factors(timeline: &[TimelineEntry], threads: usize, thread_scope: bool) -> Vec<(u64, f64)> {
    use paceline::Event;
    let first_threads = timeline.iter().find_map(|e| match e.event {
        Event::Threads { from, .. } => Some(from),
        _ => None,
    });
    let first_scope = timeline.iter().find_map(|e| match &e.event {
        Event::Note(n) => scope_after(n).map(|after| !after),
        _ => None,
    });
    let (mut n, mut per_thread) = (
        first_threads.unwrap_or(threads),
        first_scope.unwrap_or(thread_scope),
    );
    let factor = |n: usize, per_thread: bool| if per_thread { n.max(1) as f64 } else { 1.0 };
    let mut out = vec![(0, factor(n, per_thread))];
    for e in timeline {
        match &e.event {
            Event::Threads { to, .. } => n = *to,
            Event::Note(note) => match scope_after(note) {
                Some(after) => per_thread = after,
                None => continue,
            },
            _ => continue,
        }
        out.push((e.at, factor(n, per_thread)));
    }
    out
}

/// The mean of rate x factor over `[start, end]`: the spec's mean rate over
/// each stretch of constant factor (`paceline::mean_target_rate`, which reads
/// the rate's state at a stretch's start from the events before it), weighted
/// by its length and factor.
fn integrate_factors(
    initial: f64,
    timeline: &[TimelineEntry],
    factors: &[(u64, f64)],
    start: u64,
    end: u64,
) -> f64 {
    let end_factor = factors.last().map_or(1.0, |&(_, f)| f);
    if end <= start {
        return end_factor * paceline::mean_target_rate(initial, timeline, start, end);
    }
    let mut total = 0.0;
    for (i, &(from, factor)) in factors.iter().enumerate() {
        let to = factors.get(i + 1).map_or(end, |&(at, _)| at);
        let (a, b) = (from.clamp(start, end), to.clamp(start, end));
        if b > a {
            let mean = paceline::mean_target_rate(initial, timeline, a, b);
            total += mean * (b - a) as f64 * factor;
        }
    }
    total / (end - start) as f64
}

/// One activity's data for a report: who, the numbers, the events.
pub(super) type ReportData = (ActivityInfo, Snapshot, Vec<TimelineEntry>);

/// Borrowed views of `data` for the reporter.
pub(super) fn as_reports(data: &[ReportData]) -> Vec<ActivityReport<'_>> {
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
pub(super) fn paused_note(alias: &str, control: Option<&str>) -> String {
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
pub(super) fn track(engine: &Engine, tracked: &mut Vec<Tracked>, control: Option<&str>) {
    for c in engine.activities() {
        if !tracked.iter().any(|t| t.control.same_run(&c)) {
            if c.status().rate.is_some_and(|r| r.is_paused()) && !c.is_finished() {
                eprintln!("{}", paused_note(c.alias(), control));
            }
            tracked.push(Tracked {
                info: info_of(&c),
                control: c,
                seen_events: 0,
                last_wait_p99: None,
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
pub(super) fn interval(
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
        // The snapshot says whether it was taken before the first slot: one
        // that came between it and `info_of` must not make a set-up row a
        // window row (labelled, and counted from, the first slot).
        let row_info = row_info(t.control.metrics(), &t.info, &snap);
        // Each interval is judged against the mean target over it (issue 24,
        // item 8: the target at its end contradicted the summary on a ramp).
        t.info.mean_target = mean_target(&t.control, &t.info, snap.start(), snap.end());
        let verdict = verdict_of(&t.info, &snap, cpu_cores, false);
        let partial =
            reporter.is_partial(&t.info.alias, snap.elapsed_nanos(), t.info.ended.is_some());
        if let Some(Ok(mut m)) = intervals.map(|i| i.lock()) {
            // From the schedule's first slot, as the interval lines.
            let base = row_info.schedule_start.unwrap_or(0);
            m.insert(
                t.info.alias.clone(),
                serde_json::json!({
                    "start_seconds": units::seconds_f64_since(snap.start(), base),
                    "end_seconds": units::seconds_f64_since(snap.end(), base),
                    // Before the schedule began its times count from the
                    // activity's start, as the console's `set-up +` lines.
                    "set_up": !row_info.schedule_begun,
                    "ops": snap.ops(),
                    // A partial interval: its counts, no rate (`report::is_partial`).
                    "partial": partial,
                    "rate": (!partial).then(|| snap.rate()),
                    "mean_target": t.info.mean_target,
                    // A shared schedule's `mean_target` is every process's
                    // together: this process's share beside it (audit p17 M5).
                    "shared": shared_interval(&t.info),
                    "errors": snap.error_count(),
                    "missed_slots": snap.missed(),
                    "wait_p99_ns": (!partial && snap.wait().count() > 0).then(|| snap.wait().p99()),
                    // No ops, no percentile: null, not 0.
                    "response_p99_ns": (!partial && snap.response().count() > 0)
                        .then(|| snap.response().p99()),
                    "verdict": super::report::json::verdict_json(&verdict),
                    // The async runner's cap (as set now) and ops in flight, as
                    // in the summary JSON; null on the sync runner.
                    "in_flight": snap.concurrency_cap().map(|cap| serde_json::json!({
                        "concurrency": cap,
                        "max": snap.in_flight_max(),
                        "cap_full_share": snap.cap_full_share(),
                    })),
                }),
            );
        }
        // No ops, no percentile: the progress line leaves it out, not `0ns`.
        t.last_wait_p99 = (snap.wait().count() > 0).then(|| snap.wait().p99());
        t.errors += snap.error_count();
        t.info.verdict = Some(verdict);
        let info = ActivityInfo {
            schedule_start: row_info.schedule_start,
            schedule_begun: row_info.schedule_begun,
            ..t.info.clone()
        };
        data.push((info, snap, events));
    }
    let reports = as_reports(&data);
    if reports.is_empty() {
        return Ok(());
    }
    reporter.interval(&reports)
}

/// A coordinated activity's interval on its shared schedule, for the control
/// endpoint's `current_interval` (audit p17 M5: `mean_target` is the whole
/// schedule's, every process together, as the summary's "its share of a
/// shared 400/s"; set against this process's `rate` it read 50 % on a healthy
/// run of two): the same `mean_target`, labelled, the processes live, this
/// process's even share of it (`share_target`: `mean_target / processes_live`,
/// the figure to set `rate` against), and the schedule's achieved rate, every
/// process together (`global_rate`, the status's `coordinated.global_achieved`:
/// the figure to set `mean_target` against). Null for an activity that paces
/// alone.
fn shared_interval(info: &ActivityInfo) -> serde_json::Value {
    #[cfg(feature = "redis")]
    if let Some(c) = &info.coordinated {
        let live = c.processes_live.max(1) as f64;
        return serde_json::json!({
            "mean_target": info.mean_target,
            "processes_live": c.processes_live,
            "share_target": info.mean_target.map(|m| m / live),
            "global_rate": c.global_achieved,
        });
    }
    let _ = info;
    serde_json::Value::Null
}

/// The `http` driver's counters for an activity it ran.
pub(super) fn http_stats(info: &ActivityInfo) -> Option<paceline::HttpStats> {
    (info.driver == "http")
        .then(|| paceline::Http::stats(&info.alias))
        .flatten()
}

/// The `postgres` driver's row counts for an activity it ran (also as `jdbc`,
/// NB5's adapter, which runs on it and fills the same board).
pub(super) fn pg_stats(info: &ActivityInfo) -> Option<paceline::PgStats> {
    matches!(info.driver.as_str(), "postgres" | "jdbc")
        .then(|| paceline::Postgres::stats(&info.alias))
        .flatten()
}

#[cfg(test)]
#[path = "tracked_tests.rs"]
mod tests;

#[cfg(all(test, feature = "redis"))]
#[path = "tracked_shared_tests.rs"]
mod shared_tests;

#[cfg(test)]
#[path = "tracked_h9_tests.rs"]
mod h9_tests;
