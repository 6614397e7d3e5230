//! Plain-text reports: interval lines, event lines and the progress line, written
//! while the run goes on; the end-of-run summary table is in `text/summary.rs`.

mod summary;
#[cfg(test)]
mod tests;

use super::ActivityInfo;
use super::units;
use paceline::{Event, Nanos, Snapshot, TimelineEntry, Verdict};
use std::fmt::Write as _;

pub use summary::{LEGEND, summary_table};

/// One interval line for one activity: the time (seconds since `origin`, the
/// activity's first slot as the reporter passes it),
/// ops and achieved rate, service / wait / response p50, p99, p99.9 and max, errors
/// and missed slots; and the time paused, when the activity was paused in the
/// interval (paused time is not missed slots).
///
/// `12.000s a: 9990 ops 9.99K/s | service p50 12.3µs p99 45.6µs p99.9 78.9µs max 1.23ms | wait … | response … | errors 0 | missed 0`
pub fn interval_line(origin: Nanos, info: &ActivityInfo, snap: &Snapshot) -> String {
    let mut s = format!(
        "{}s {}: {}",
        units::seconds(snap.end().saturating_sub(origin)),
        info.alias,
        ops_and_rate(snap)
    );
    for (name, l) in [
        ("service", snap.service()),
        ("wait", snap.wait()),
        ("response", snap.response()),
    ] {
        // An empty distribution (no ops in the interval) has no figures.
        if l.count() == 0 {
            let _ = write!(s, " | {name} -");
            continue;
        }
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

/// An interval's ops and their rate: `120 ops 1.00K/s`; one op is no rate
/// (`1 op`: one completion over a short interval read as thousands per
/// second, audit L3).
fn ops_and_rate(snap: &Snapshot) -> String {
    match snap.ops() {
        1 => "1 op".to_string(),
        n => format!("{n} ops {}/s", units::rate(snap.rate())),
    }
}

/// The interval line for a terminal, within 100 columns for aliases of up to
/// about ten characters: the time, ops and rate, the p99 of service, wait and
/// response, errors and missed slots (and the paused time, when any). The full [`interval_line`] goes to a
/// console that is not a terminal (a file, a pipe), and every percentile to the
/// CSV and HDR logs.
///
/// `12.000s kv-get: 99990 ops 9.99K/s | p99 svc 45.6µs wait 1.23ms resp 1.30ms | errors 0 missed 0`
pub fn compact_interval_line(origin: Nanos, info: &ActivityInfo, snap: &Snapshot) -> String {
    format!(
        "{}s {}: {} | p99 svc {} wait {} resp {} | errors {} missed {}{}",
        units::seconds(snap.end().saturating_sub(origin)),
        info.alias,
        ops_and_rate(snap),
        p99(snap.service()),
        p99(snap.wait()),
        p99(snap.response()),
        snap.error_count(),
        snap.missed(),
        paused(snap, " paused ")
    )
}

/// The paused time `snap` held after `label`, or nothing when it held none:
/// every interval line shows it, so that the lines sum to the summary.
fn paused(snap: &Snapshot, label: &str) -> String {
    match snap.paused_nanos() {
        0 => String::new(),
        p => format!("{label}{}", units::duration(p)),
    }
}

/// The p99 of `l`, or `-` when it is empty.
fn p99(l: &paceline::Latencies) -> String {
    units::figure(l.count(), l.p99())
}

/// The line of a partial interval ([`super::is_partial`]): its end, its length
/// and its counts, but no rate or percentiles (a few ops make neither), and a
/// word that its ops are in the totals.
///
/// `12.003s a: partial interval (3.00ms): 2 ops | errors 0 | missed 0 (no rate or percentiles; in the totals)`
pub fn partial_interval_line(origin: Nanos, info: &ActivityInfo, snap: &Snapshot) -> String {
    format!(
        "{}s {}: partial interval ({}): {} ops | errors {} | missed {}{} (no rate or \
         percentiles; in the totals)",
        units::seconds(snap.end().saturating_sub(origin)),
        info.alias,
        units::duration(snap.elapsed_nanos()),
        snap.ops(),
        snap.error_count(),
        snap.missed(),
        paused(snap, " | paused ")
    )
}

/// One timeline event as a line: `12.500s a: threads 4 -> 8`.
pub fn event_line(origin: Nanos, alias: &str, entry: &TimelineEntry) -> String {
    format!(
        "{}s {alias}: {}",
        units::seconds_since(entry.at, origin),
        event_text(&entry.event)
    )
}

/// An event in the units of every other console line: rates as `12.0K/s`,
/// durations as `30.0s` (`rate 12.0K/s -> 0/s`), not raw floats. The files
/// (CSV, JSON, HDR comments) keep the event's full-precision form.
pub fn event_text(event: &Event) -> String {
    match event {
        Event::Rate { from, to } => {
            // An unpaced schedule's rate is infinite (audit L9: `rate 0/s -> 100/s`).
            let shown = |r: f64| match r.is_infinite() {
                true => "unpaced".to_string(),
                false => format!("{}/s", units::rate(r)),
            };
            format!("rate {} -> {}", shown(*from), shown(*to))
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

/// The line an interval adds when its verdict differs from the previous
/// interval's: `12.000s a: verdict system-bound: ops take …`.
pub fn verdict_line(origin: Nanos, info: &ActivityInfo, end: Nanos, v: &Verdict) -> String {
    format!(
        "{}s {}: verdict {v}",
        units::seconds(end.saturating_sub(origin)),
        info.alias
    )
}
