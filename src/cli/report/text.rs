//! Plain-text reports: interval lines, the progress line and the summary table.

use super::units;
use super::{ActivityInfo, ActivityReport};
use paceline::{Event, Nanos, Snapshot, Summary, TimelineEntry, Verdict};
use std::fmt::Write as _;

/// One interval line for one activity: the time (seconds since the run's origin),
/// ops and achieved rate, service / wait / response p50, p99, p99.9 and max, errors
/// and missed slots; and the time paused, when the activity was paused in the
/// interval (paused time is not missed slots).
///
/// `12.000s a: 9990 ops 9.99K/s | service p50 12.3µs p99 45.6µs p99.9 78.9µs max 1.23ms | wait … | response … | errors 0 | missed 0`
pub fn interval_line(origin: Nanos, info: &ActivityInfo, snap: &Snapshot) -> String {
    let mut s = format!(
        "{}s {}: {} ops {}/s",
        units::seconds(snap.end().saturating_sub(origin)),
        info.alias,
        snap.ops(),
        units::rate(snap.rate())
    );
    for (name, l) in [
        ("service", snap.service()),
        ("wait", snap.wait()),
        ("response", snap.response()),
    ] {
        let _ = write!(
            s,
            " | {name} p50 {} p99 {} p99.9 {} max {}",
            units::duration(l.p50()),
            units::duration(l.p99()),
            units::duration(l.p999()),
            units::duration(l.max())
        );
    }
    let _ = write!(
        s,
        " | errors {} | missed {}",
        snap.error_count(),
        snap.missed()
    );
    if snap.paused_nanos() > 0 {
        let _ = write!(s, " | paused {}", units::duration(snap.paused_nanos()));
    }
    if let Some(cap) = snap.concurrency_cap() {
        let _ = write!(s, " | in flight max {} of {cap}", snap.in_flight_max());
        if let Some(full) = snap.cap_full_share() {
            let _ = write!(s, ", at cap {:.0}%", full * 100.0);
        }
    }
    s
}

/// The interval line for a terminal, within 100 columns for aliases of up to
/// about ten characters: the time, ops and rate, the p99 of service, wait and
/// response, errors and missed slots. The full [`interval_line`] goes to a
/// console that is not a terminal (a file, a pipe), and every percentile to the
/// CSV and HDR logs.
///
/// `12.000s kv-get: 99990 ops 9.99K/s | p99 svc 45.6µs wait 1.23ms resp 1.30ms | errors 0 missed 0`
pub fn compact_interval_line(origin: Nanos, info: &ActivityInfo, snap: &Snapshot) -> String {
    format!(
        "{}s {}: {} ops {}/s | p99 svc {} wait {} resp {} | errors {} missed {}",
        units::seconds(snap.end().saturating_sub(origin)),
        info.alias,
        snap.ops(),
        units::rate(snap.rate()),
        units::duration(snap.service().p99()),
        units::duration(snap.wait().p99()),
        units::duration(snap.response().p99()),
        snap.error_count(),
        snap.missed()
    )
}

/// The line of a partial interval ([`super::is_partial`]): its end, its length
/// and its counts, but no rate or percentiles (a few ops make neither), and a
/// word that its ops are in the totals.
///
/// `12.003s a: partial interval (3.00ms): 2 ops | errors 0 | missed 0 (no rate or percentiles; in the totals)`
pub fn partial_interval_line(origin: Nanos, info: &ActivityInfo, snap: &Snapshot) -> String {
    format!(
        "{}s {}: partial interval ({}): {} ops | errors {} | missed {} (no rate or \
         percentiles; in the totals)",
        units::seconds(snap.end().saturating_sub(origin)),
        info.alias,
        units::duration(snap.elapsed_nanos()),
        snap.ops(),
        snap.error_count(),
        snap.missed()
    )
}

/// The summary's one-line legend, after the tables: what the columns and missed
/// slots mean.
pub const LEGEND: &str = "service = the op itself; wait = how late it started after its slot; \
response = wait + service; missed slots = slots no op was ready to take";

/// One timeline event as a line: `12.500s a: threads 4 -> 8`.
pub fn event_line(origin: Nanos, alias: &str, entry: &TimelineEntry) -> String {
    format!(
        "{}s {alias}: {}",
        units::seconds(entry.at.saturating_sub(origin)),
        event_text(&entry.event)
    )
}

/// An event in the units of every other console line: rates as `12.0K/s`,
/// durations as `30.0s` (`rate 12.0K/s -> 0/s`), not raw floats. The files
/// (CSV, JSON, HDR comments) keep the event's full-precision form.
pub fn event_text(event: &Event) -> String {
    match event {
        Event::Rate { from, to } => {
            format!("rate {}/s -> {}/s", units::rate(*from), units::rate(*to))
        }
        Event::Ramp { to, over } => {
            format!(
                "ramp to {}/s over {}",
                units::rate(*to),
                units::duration(*over)
            )
        }
        other => other.to_string(),
    }
}

/// What a progress line shows for one activity; see [`progress_line`].
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Progress {
    /// Cycles completed so far.
    pub done: u64,
    /// The recent achieved rate, ops per second.
    pub rate: f64,
    /// The latest interval's wait p99, nanoseconds; `None` before the first
    /// interval (a `wait p99 0ns` there said what nothing measured).
    pub wait_p99: Option<Nanos>,
    /// Errors so far.
    pub errors: u64,
}

impl Progress {
    /// Progress from the totals so far (cycles done, errors) and the latest interval
    /// (rate and wait p99).
    #[cfg(test)]
    pub fn from_snapshots(totals: &Snapshot, recent: &Snapshot) -> Self {
        Self {
            done: totals.ops(),
            rate: recent.rate(),
            wait_p99: Some(recent.wait().p99()),
            errors: totals.error_count(),
        }
    }
}

/// The progress line for one activity, a pure function of its inputs:
///
/// `a 45000/100000 (45%) 9.98K/s of 10.0K/s | wait p99 1.23ms | errors 0 | ETA 5.5s`
///
/// The ETA uses the recent rate, or the target when nothing ran recently; it is
/// `?` when neither is known and left out when no cycle count was requested.
pub fn progress_line(info: &ActivityInfo, p: &Progress) -> String {
    let mut s = String::new();
    let pct =
        (p.done.min(info.cycles_requested).saturating_mul(100)).checked_div(info.cycles_requested);
    if let Some(pct) = pct {
        let _ = write!(
            s,
            "{} {}/{} ({pct}%)",
            info.alias, p.done, info.cycles_requested
        );
    } else {
        let _ = write!(s, "{} {}", info.alias, p.done);
    }
    let _ = write!(s, " {}/s", units::rate(p.rate));
    match info.target_rate {
        Some(t) => {
            let _ = write!(s, " of {}/s", units::rate(t));
        }
        None => s.push_str(" unpaced"),
    }
    if let Some(w) = p.wait_p99 {
        let _ = write!(s, " | wait p99 {}", units::duration(w));
    }
    let _ = write!(s, " | errors {}", p.errors);
    if info.cycles_requested > 0 {
        let left = info.cycles_requested.saturating_sub(p.done);
        let rate = if p.rate > 0.0 {
            Some(p.rate)
        } else {
            info.target_rate.filter(|&t| t > 0.0)
        };
        match rate {
            _ if left == 0 => s.push_str(" | ETA 0s"),
            Some(r) => {
                let eta = (left as f64 / r * 1e9).min(u64::MAX as f64) as Nanos;
                let _ = write!(s, " | ETA {}", units::eta(eta));
            }
            None => s.push_str(" | ETA ?"),
        }
    }
    s
}

/// One row of the summary table: a figure of a distribution.
type Figure = fn(&Summary) -> Nanos;

/// The end-of-run summary for one activity: a headline, the counters, and a table
/// with service, wait and response side by side.
pub fn summary_table(r: &ActivityReport<'_>) -> String {
    let (info, t) = (r.info, r.snapshot);
    let mut s = format!(
        "{} ({}, {} thread{}): ",
        info.alias,
        info.driver,
        info.threads,
        if info.threads == 1 { "" } else { "s" }
    );
    if info.cycles_requested > 0 {
        let _ = write!(s, "{} of {} cycles", t.ops(), info.cycles_requested);
    } else {
        let _ = write!(s, "{} cycles", t.ops());
    }
    let _ = write!(
        s,
        " in {}s, {}/s",
        units::seconds(t.elapsed_nanos()),
        units::rate(r.achieved())
    );
    // A process on a shared schedule runs its share of a rate that is the total of
    // every process's: "of" would read as falling short.
    #[cfg(feature = "redis")]
    let of = if info.coordinated.is_some() {
        ", its share of a shared"
    } else {
        " of"
    };
    #[cfg(not(feature = "redis"))]
    let of = " of";
    // The achieved rate is set against the mean target, as the verdict judges
    // it; a schedule that changed says where it ended (issue 24, item 8: a ramp's
    // headline read `1.66K/s of 3.00K/s`, a shortfall that was not there).
    match info.target_rate {
        Some(last) => {
            let mean = info.judged_target().unwrap_or(last);
            let _ = write!(s, "{of} {}/s", units::rate(mean));
            let (shown_mean, shown_last) = (units::rate(mean), units::rate(last));
            if shown_mean != shown_last {
                let _ = write!(s, " mean target ({shown_last}/s at the end)");
            }
            if let Some(st) = info.strictness {
                let _ = write!(s, " (strictness {st})");
            }
        }
        None => s.push_str(" (unpaced)"),
    }
    if let Some(ended) = info.ended.as_deref().filter(|e| *e == "ran its duration") {
        let _ = write!(s, "; it {ended}");
    }
    let _ = write!(
        s,
        "\n  errors {}, retries {}, missed slots {}",
        t.error_count(),
        t.retries(),
        t.missed()
    );
    if t.paused_nanos() > 0 {
        let _ = write!(s, ", paused {}", units::duration(t.paused_nanos()));
    }
    if let Some(cap) = t.concurrency_cap() {
        let _ = write!(
            s,
            "\n  in flight: at most {} of concurrency {cap}",
            t.in_flight_max()
        );
        if let Some(full) = t.cap_full_share() {
            let _ = write!(s, ", the cap full {:.1} % of the time", full * 100.0);
        }
    }
    s.push('\n');
    #[cfg(feature = "redis")]
    if let Some(c) = &info.coordinated {
        s.push_str(&super::shared::summary_lines(c));
    }
    // Paced ops split their wait into queueing and dispatch: shown beside it.
    let split = t.queue().count() > 0;
    let mut cols: Vec<(&str, Summary)> = vec![
        ("service", t.service().summary()),
        ("wait", t.wait().summary()),
    ];
    if split {
        cols.push(("queue", t.queue().summary()));
        cols.push(("dispatch", t.dispatch().summary()));
    }
    cols.push(("response", t.response().summary()));
    let _ = write!(s, "  {:<8}", "");
    for (name, _) in &cols {
        let _ = write!(s, "{name:>10}");
    }
    s.push('\n');
    let rows: [(&str, Figure); 8] = [
        ("min", |s| s.min),
        ("mean", |s| s.mean.round() as Nanos),
        ("p50", |s| s.p50),
        ("p90", |s| s.p90),
        ("p99", |s| s.p99),
        ("p99.9", |s| s.p999),
        ("p99.99", |s| s.p9999),
        ("max", |s| s.max),
    ];
    for (name, f) in rows {
        let _ = write!(s, "  {name:<8}");
        for (_, l) in &cols {
            let _ = write!(s, "{:>10}", units::duration(f(l)));
        }
        s.push('\n');
    }
    s.push_str(&super::by_op::lines(t));
    let kinds: Vec<String> = t.errors().map(|(k, n)| format!("{k} {n}")).collect();
    if !kinds.is_empty() {
        let _ = writeln!(s, "  errors by kind: {}", kinds.join(", "));
    }
    for (kind, message) in &info.first_errors {
        let _ = writeln!(s, "    first {kind}: {message}");
    }
    if t.error_count() > 0 {
        let n = t.error_count();
        let _ = writeln!(
            s,
            "  the times above include the {n} failed op{}",
            if n == 1 { "" } else { "s" }
        );
    }
    if let Some(v) = &info.verdict {
        let _ = writeln!(s, "  verdict: {v}");
        let _ = writeln!(s, "    {}", verdict_figures(v));
    }
    s
}

/// A verdict's figures on one line: the generator's CPU and the concurrency
/// needed against the threads.
///
/// `generator cpu 0.31 of 2 cores, concurrency needed 1.96 of 2 threads`
pub fn verdict_figures(v: &Verdict) -> String {
    let cpu = match v.generator_cpu_cores {
        Some(c) => format!("{c:.2} of {} cores", v.machine_cores),
        None => "unknown".to_string(),
    };
    let mut s = match v.concurrency {
        Some(cap) => format!(
            "generator cpu {cpu}, concurrency needed {:.2} of {cap} in flight on {} thread{}",
            v.concurrency_needed,
            v.threads,
            if v.threads == 1 { "" } else { "s" }
        ),
        None => format!(
            "generator cpu {cpu}, concurrency needed {:.2} of {} thread{}",
            v.concurrency_needed,
            v.threads,
            if v.threads == 1 { "" } else { "s" }
        ),
    };
    if let Some(d) = v.scheduling_delay_per_op {
        let _ = write!(
            s,
            ", run-queue delay {} per op",
            units::duration(d as Nanos)
        );
    }
    s
}

/// The line an interval adds when its verdict differs from the previous
/// interval's: `12.000s a: verdict system-bound: ops take …`.
pub fn verdict_line(origin: Nanos, info: &ActivityInfo, end: Nanos, v: &Verdict) -> String {
    format!(
        "{}s {}: verdict {v}",
        units::seconds(end.saturating_sub(origin)),
        info.alias
    )
}

#[cfg(test)]
mod tests {
    use super::super::tests::{info, snapshot};
    use super::*;
    use paceline::Event;

    #[test]
    fn interval_line_shows_everything_in_human_units() {
        let snap = snapshot(10_000_000_000, 11_000_000_000);
        let line = interval_line(1_000_000_000, &info("a"), &snap);
        assert_eq!(
            line,
            "10.000s a: 1000 ops 1.00K/s \
             | service p50 500µs p99 990µs p99.9 999µs max 1.00ms \
             | wait p50 5.00µs p99 9.90µs p99.9 9.99µs max 10.0µs \
             | response p50 505µs p99 1.00ms p99.9 1.01ms max 1.01ms \
             | errors 3 | missed 2"
        );
    }

    /// Issue 17.2.3: paused time shows as paused, apart from missed slots.
    #[test]
    fn paused_time_shows_as_paused_in_the_line_and_the_summary() {
        let metrics = paceline::Metrics::new(0);
        let mut rec = metrics.recorder();
        rec.record(0, 1_000);
        rec.paused(4_500_000_000);
        let snap = metrics.snapshot(5_000_000_000);
        let line = interval_line(0, &info("a"), &snap);
        assert!(
            line.ends_with("| errors 0 | missed 0 | paused 4.50s"),
            "{line}"
        );
        let i = info("a");
        let table = summary_table(&ActivityReport {
            info: &i,
            snapshot: &snap,
            events: &[],
        });
        assert!(
            table.contains("errors 0, retries 0, missed slots 0, paused 4.50s\n"),
            "{table}"
        );
    }

    #[test]
    fn the_compact_interval_line_fits_100_columns() {
        // Regression (issue 17): interval lines were about 330 characters wide.
        let snap = snapshot(10_000_000_000, 11_000_000_000);
        let mut i = info("kv-reads");
        let line = compact_interval_line(1_000_000_000, &i, &snap);
        assert!(
            line.chars().count() <= 100,
            "{} {line}",
            line.chars().count()
        );
        assert!(
            line.starts_with("10.000s kv-reads: 1000 ops 1.00K/s | p99 svc 990µs "),
            "{line}"
        );
        assert!(line.ends_with("| errors 3 missed 2"), "{line}");
        i.alias = "a".into();
        assert!(
            interval_line(0, &i, &snap).chars().count() > 100,
            "the full form stays"
        );
    }

    #[test]
    fn the_legend_is_one_line() {
        // Issue 17: the summary never said what service, wait, response and missed
        // slots mean.
        assert!(!LEGEND.contains('\n'));
        for word in ["service", "wait", "response", "missed slots"] {
            assert!(LEGEND.contains(word), "{word}");
        }
    }

    #[test]
    fn event_lines_show_rates_in_report_units() {
        // Regression (issue 17): `rate 12016.034348261594 -> 0`.
        let e = TimelineEntry {
            at: 2_000_000_000,
            event: Event::Rate {
                from: 12016.034348261594,
                to: 0.0,
            },
        };
        assert_eq!(event_line(0, "a", &e), "2.000s a: rate 12.0K/s -> 0/s");
        let ramp = Event::Ramp {
            to: 50_000.0,
            over: 30_000_000_000,
        };
        assert_eq!(event_text(&ramp), "ramp to 50.0K/s over 30.0s");
    }

    #[test]
    fn event_line_is_relative_to_origin() {
        let e = TimelineEntry {
            at: 3_500_000_000,
            event: Event::Threads { from: 4, to: 8 },
        };
        assert_eq!(
            event_line(1_000_000_000, "a", &e),
            "2.500s a: threads 4 -> 8"
        );
    }

    #[test]
    fn progress_line_with_target_and_eta() {
        let p = Progress {
            done: 45_000,
            rate: 9_980.0,
            wait_p99: Some(1_230_000),
            errors: 2,
        };
        assert_eq!(
            progress_line(&info("a"), &p),
            "a 45000/100000 (45%) 9.98K/s of 10.0K/s | wait p99 1.23ms | errors 2 | ETA 5.51s"
        );
    }

    #[test]
    fn progress_line_falls_back_to_target_then_unknown() {
        let p = Progress {
            done: 0,
            ..Progress::default()
        };
        let mut i = info("a");
        assert!(progress_line(&i, &p).ends_with("| ETA 10.0s"));
        i.target_rate = None;
        assert_eq!(
            progress_line(&i, &p),
            "a 0/100000 (0%) 0/s unpaced | errors 0 | ETA ?"
        );
        i.cycles_requested = 0;
        assert_eq!(progress_line(&i, &p), "a 0 0/s unpaced | errors 0");
        i.cycles_requested = 10;
        let done = Progress {
            done: 10,
            ..Progress::default()
        };
        assert!(progress_line(&i, &done).ends_with("(100%) 0/s unpaced | errors 0 | ETA 0s"));
    }

    /// Regression (issue 24, item 17): before the first interval the line said
    /// `wait p99 0ns`, which nothing had measured; and a far ETA read
    /// `ETA 10087565s`.
    #[test]
    fn progress_line_has_no_wait_before_the_first_interval_and_a_human_eta() {
        let mut i = info("a");
        i.cycles_requested = 10_087_565;
        i.target_rate = Some(1.0);
        let p = Progress {
            done: 0,
            rate: 0.0,
            wait_p99: None,
            errors: 0,
        };
        assert_eq!(
            progress_line(&i, &p),
            "a 0/10087565 (0%) 0/s of 1.00/s | errors 0 | ETA 116d 18h"
        );
        assert_eq!(units::eta(45_200_000_000), "45.2s");
        assert_eq!(units::eta(750_000_000_000), "12m 30s");
        assert_eq!(units::eta(10_080_000_000_000), "2h 48m");
    }

    /// Issue 24, item 17: a verdict of 250 characters is wrapped at words on a
    /// terminal, its later lines indented.
    #[test]
    fn long_lines_wrap_at_words_and_cut_with_an_ellipsis() {
        let text = "12.000s a: verdict generator-bound: each op costs the generator 45.0 µs";
        let wrapped = super::super::console::wrap(text, 30, "    ");
        assert_eq!(
            wrapped,
            "12.000s a: verdict\n    generator-bound: each op\n    costs the generator 45.0\n    µs"
        );
        assert!(
            wrapped.lines().all(|l| l.chars().count() <= 30),
            "{wrapped}"
        );
        use super::super::console::fit;
        assert_eq!(fit("abcdef", 80), "abcdef");
        assert_eq!(fit("abcdefghij", 6), "abcd…");
    }

    #[test]
    fn progress_from_snapshots_takes_counts_from_totals_and_rates_from_recent() {
        let recent = snapshot(10_000_000_000, 11_000_000_000);
        let mut totals = snapshot(0, 1);
        totals.merge(&recent);
        let p = Progress::from_snapshots(&totals, &recent);
        assert_eq!((p.done, p.errors, p.rate), (2000, 6, 1000.0));
        assert_eq!(p.wait_p99, Some(recent.wait().p99()));
    }

    #[test]
    fn summary_table_puts_service_wait_and_response_side_by_side() {
        let snap = snapshot(0, 1_000_000_000);
        let i = info("a");
        let r = ActivityReport {
            info: &i,
            snapshot: &snap,
            events: &[],
        };
        let want = "\
a (diag, 4 threads): 1000 of 100000 cycles in 1.000s, 1.00K/s of 10.0K/s (strictness 1.1)
  errors 3, retries 1, missed slots 2
             service      wait  response
  min         1.00µs      10ns    1.01µs
  mean         501µs    5.01µs     506µs
  p50          500µs    5.00µs     505µs
  p90          900µs    9.01µs     909µs
  p99          990µs    9.90µs    1.00ms
  p99.9        999µs    9.99µs    1.01ms
  p99.99      1.00ms    10.0µs    1.01ms
  max         1.00ms    10.0µs    1.01ms
  errors by kind: refused 1, timeout 2
  the times above include the 3 failed ops
";
        assert_eq!(summary_table(&r), want);
    }

    /// Regression (issue 24, item 3): 5 ops at 50/s over 85 ms read `58.6/s of
    /// 50.0/s` (n ops over n - 1 gaps). Over the schedule's span a run that held
    /// its schedule never reports more than its rate.
    #[test]
    fn a_short_run_that_held_its_schedule_reports_its_rate() {
        let metrics = paceline::Metrics::new(0);
        let mut rec = metrics.recorder();
        for _ in 0..5 {
            rec.record(10_000, 1_000_000);
        }
        let snap = metrics.snapshot(85_300_000);
        let mut i = info("a");
        i.cycles_requested = 5;
        i.target_rate = Some(50.0);
        i.mean_target = Some(50.0);
        let table = summary_table(&ActivityReport {
            info: &i,
            snapshot: &snap,
            events: &[],
        });
        let head = table.lines().next().unwrap_or_default();
        assert!(
            head.ends_with("in 0.085s, 50.0/s of 50.0/s (strictness 1.1)"),
            "{head}"
        );
    }

    /// Issue 24, item 8: the headline sets the achieved rate against the mean
    /// target (a ramp's read `1.66K/s of 3.00K/s`), and says where it ended.
    #[test]
    fn the_headline_shows_the_mean_target_and_where_it_ended() {
        let snap = snapshot(0, 1_000_000_000);
        let mut i = info("a");
        i.target_rate = Some(3_000.0);
        i.mean_target = Some(1_000.0);
        let table = summary_table(&ActivityReport {
            info: &i,
            snapshot: &snap,
            events: &[],
        });
        let head = table.lines().next().unwrap_or_default();
        assert!(
            head.ends_with("1.00K/s of 1.00K/s mean target (3.00K/s at the end) (strictness 1.1)"),
            "{head}"
        );
    }

    #[test]
    fn summary_table_shows_the_first_message_of_each_error_kind() {
        let snap = snapshot(0, 1_000_000_000);
        let mut i = info("a");
        i.first_errors = vec![
            ("refused".into(), "http://h:1/x: connection refused".into()),
            (
                "timeout".into(),
                "http://h/y: no complete answer within the timeout".into(),
            ),
        ];
        let r = ActivityReport {
            info: &i,
            snapshot: &snap,
            events: &[],
        };
        let table = summary_table(&r);
        let tail: Vec<&str> = table.lines().rev().take(4).collect();
        assert_eq!(
            tail,
            [
                "  the times above include the 3 failed ops",
                "    first timeout: http://h/y: no complete answer within the timeout",
                "    first refused: http://h:1/x: connection refused",
                "  errors by kind: refused 1, timeout 2",
            ]
        );
    }

    #[test]
    fn summary_table_for_an_unpaced_single_thread_activity() {
        let snap = Snapshot::empty(0, 2_000_000_000);
        let mut i = info("b");
        i.threads = 1;
        i.target_rate = None;
        i.strictness = None;
        let r = ActivityReport {
            info: &i,
            snapshot: &snap,
            events: &[],
        };
        let first = summary_table(&r).lines().next().unwrap_or("").to_string();
        assert_eq!(
            first,
            "b (diag, 1 thread): 0 of 100000 cycles in 2.000s, 0/s (unpaced)"
        );
    }
}
