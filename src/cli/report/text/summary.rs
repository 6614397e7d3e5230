//! The end-of-run summary in text: the headline, the counters, the table of
//! service, wait and response side by side, and the verdict's figures.

use super::super::ActivityReport;
use super::super::units;
use paceline::{Nanos, Summary, Verdict};
use std::fmt::Write as _;

/// The summary's one-line legend, after the tables: what the columns and missed
/// slots mean.
pub const LEGEND: &str = "service = the op itself; wait = how late it started after its slot; \
response = wait + service; missed slots = slots no op was ready to take";

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
            // Poisson arrivals: the rate the drawn slots asked for over these
            // ops, which the verdict judges the achieved rate against.
            if let Some(d) = info.verdict.as_ref().and_then(|v| v.drawn_rate) {
                let _ = write!(s, " (drawn Poisson slots {}/s)", units::rate(d));
            }
            if let Some(st) = info.strictness {
                let _ = write!(s, " (strictness {st})");
            }
            // Launched unpaced, then given a rate (audit L9): the target is
            // the paced span's, and the achieved rate counts every op.
            if let Some(at) = crate::cli::tracked::paced_from(r.events)
                .filter(|&at| at > t.start() && at < t.end())
            {
                let _ = write!(
                    s,
                    " (unpaced for the first {}s: the target is over the {}s paced after it, \
                     the achieved rate counts the unpaced ops too)",
                    units::seconds(at - t.start()),
                    units::seconds(t.end() - at)
                );
            }
        }
        None => s.push_str(" (unpaced)"),
    }
    // Set-up (the connections opened before the first slot) is in no rate; a
    // run stopped before its first slot was all set-up (audit p16, H9).
    if info.had_no_cycles() {
        // Nothing stopped it: there was nothing to run (audit p17, L5).
        let _ = write!(s, "; no cycles to run: its cycle range is empty");
    } else if !info.schedule_begun && t.setup_nanos() == 0 {
        let _ = write!(s, "; it never started: launched paused, no slot came");
    } else if !info.schedule_begun {
        let _ = write!(
            s,
            "; it never started: stopped during set-up, {} after its launch, before the first slot",
            units::duration(t.setup_nanos())
        );
    } else if t.setup_nanos() > 0 {
        let _ = write!(
            s,
            "; set-up {} before the first slot",
            units::duration(t.setup_nanos())
        );
    }
    if let Some(ended) = info
        .ended
        .as_deref()
        .filter(|e| *e == "ran its duration" && info.schedule_begun)
    {
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
        s.push_str(&super::super::shared::summary_lines(c));
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
            let _ = write!(s, "{:>10}", units::figure(l.count, f(l)));
        }
        s.push('\n');
    }
    s.push_str(&super::super::by_op::lines(t));
    let kinds: Vec<String> = t.errors().map(|(k, n)| format!("{k} {n}")).collect();
    if !kinds.is_empty() {
        let _ = writeln!(s, "  errors by kind: {}", kinds.join(", "));
    }
    for (kind, message) in &info.first_errors {
        let _ = writeln!(s, "    first {kind}: {message}");
    }
    // A planned end's cut, apart from the system's errors (audit p18, M9).
    let cut = info.cut_at_end(t);
    if cut > 0 {
        let _ = writeln!(
            s,
            "  {cut} op{} cut at the run's end (cancelled): left out of `errors` thresholds",
            if cut == 1 { "" } else { "s" }
        );
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
    // The async runner's cap is what bounds ops in flight; the threads carry them.
    let needed_of = match v.concurrency {
        Some(cap) => format!("{cap} in flight on {}", v.threads),
        None => v.threads.to_string(),
    };
    let mut s = format!(
        "generator cpu {cpu}, concurrency needed {:.2} of {needed_of} thread{}",
        v.concurrency_needed,
        if v.threads == 1 { "" } else { "s" }
    );
    if let Some(d) = v.scheduling_delay_per_op {
        let _ = write!(
            s,
            ", run-queue delay {} per op",
            units::duration(d as Nanos)
        );
    }
    s
}
