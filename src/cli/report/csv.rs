//! The `--csv` log: one row per activity per interval, and one row per event.
//!
//! Layout (chosen so that a spreadsheet or pandas reads it with no help):
//!
//! - the header comes once, first;
//! - an **interval row** has `time_s` = the interval's end, in seconds since the
//!   activity's schedule began (its first slot: where its rates and its
//!   `duration` count from, so the set-up before it is in no row), every metric
//!   column filled and an empty `event`;
//! - an **event row** (a rate change, a ramp, a thread change, start, stop) has
//!   `time_s` = when the event happened, the alias, empty metric columns and the
//!   event's text in `event` (such as `threads 4 -> 8`).
//!
//! Rows come in time order: the events of an interval precede its interval rows,
//! and every row is written as its interval ends, nothing held back. The rows
//! of an activity whose schedule had not begun when they were taken
//! (`paceline::Snapshot::is_set_up`, carried as `ActivityInfo::
//! schedule_begun`: its set-up, such as a launch at `rate=0` or connections
//! being opened) cannot know its first slot: they have `set_up` = `1` and
//! their `time_s` counts from the activity's start, as the console's `set-up
//! +…` lines do (less the summary's `setup_seconds`, it is the time from the
//! first slot that the HDR log and the HTML report show, negative). From the
//! first slot on, rows have `set_up` = `0`. An activity's `time_s` never
//! decreases among the rows of one `set_up` value (an activity whose schedule
//! never began has only set-up rows: its window counts from its start).
//! Latencies are whole nanoseconds; `rate` is ops per second with 3 decimals;
//! `missed` counts slots forfeited while running, and `paused_s` the seconds the
//! activity spent paused in the interval (a pause is not missed slots).
//!
//! Columns, in order: `time_s`, `alias`, `ops`, `rate`, `errors`, `missed`,
//! `paused_s`; p50, p99, p99.9 and max of `service`, `wait` and `response`; the
//! same four of `queue` and `dispatch` (the two parts of a paced op's wait,
//! `docs/engine.md` "Queueing and dispatch"); `global_ops` and `global_rate`;
//! `target_rate`; `interval_s`, `partial`; `set_up`; `event`. The later
//! columns come after the older ones, so that a script that reads columns by
//! position still finds them, and `event` stays last.
//!
//! - `queue_*` and `dispatch_*` are empty for an unpaced activity, whose ops have
//!   no slot (and so no split of their wait);
//! - `global_ops` and `global_rate` are a coordinated activity's shared schedule
//!   at the interval's end: every process's completed ops together, and the
//!   schedule's achieved rate (ops/s, 3 decimals): its start rate from the first
//!   slot to the latest start reported (`paceline::Coordinated::global_achieved`);
//!   empty for an activity that paces alone;
//! - `target_rate` is the mean rate the schedule asked for over the interval
//!   (ops/s, 3 decimals: a rate change or a ramp inside it weighted by time,
//!   `paceline::mean_target_rate`), to plot against `rate`; empty when unpaced;
//! - `interval_s` is the interval's length in seconds, and `partial` is `1` for an
//!   interval shorter than half the report interval (`0` otherwise): the last of
//!   an activity that ended a few ms after a report, say. A partial row keeps its
//!   counts (`ops`, `errors`, `missed`, `paused_s`: the rows still sum to the
//!   totals) and leaves `rate`, the latency columns and `target_rate` empty: a
//!   rate or a percentile of a few ops is no interval's.

use super::ActivityReport;
use super::units;
use paceline::{Latencies, Nanos, TimelineEntry};
use std::io::{self, Write};

/// The header line, without its newline.
pub const HEADER: &str = "time_s,alias,ops,rate,errors,missed,paused_s,\
service_p50_ns,service_p99_ns,service_p999_ns,service_max_ns,\
wait_p50_ns,wait_p99_ns,wait_p999_ns,wait_max_ns,\
response_p50_ns,response_p99_ns,response_p999_ns,response_max_ns,\
queue_p50_ns,queue_p99_ns,queue_p999_ns,queue_max_ns,\
dispatch_p50_ns,dispatch_p99_ns,dispatch_p999_ns,dispatch_max_ns,\
global_ops,global_rate,in_flight_max,concurrency,cap_full_share,target_rate,\
interval_s,partial,set_up,event";

/// Metric columns between `alias` and `event`, left empty on event rows.
const METRIC_COLUMNS: usize = 33;

/// Writes the CSV log to any writer.
#[derive(Debug)]
pub struct CsvLog<W: Write> {
    out: W,
    origin: Nanos,
}

impl<W: Write> CsvLog<W> {
    /// Writes the header and returns the log; `origin` is the run's start on the
    /// activities' clock.
    pub fn new(mut out: W, origin: Nanos) -> io::Result<Self> {
        writeln!(out, "{HEADER}")?;
        Ok(Self { out, origin })
    }

    /// Writes one event row, its time counted from `base`: the activity's first
    /// slot, or its start while `set_up` (its schedule has not begun).
    pub fn event(
        &mut self,
        base: Nanos,
        set_up: bool,
        alias: &str,
        entry: &TimelineEntry,
    ) -> io::Result<()> {
        writeln!(
            self.out,
            "{},{}{},{},{}",
            units::seconds_since(entry.at, base),
            quote(alias),
            ",".repeat(METRIC_COLUMNS),
            u8::from(set_up),
            quote(&entry.event.to_string())
        )
    }

    /// Writes one whole (not partial) interval row per activity (their events
    /// are not written here).
    #[cfg(test)]
    pub fn interval(&mut self, reports: &[ActivityReport<'_>]) -> io::Result<()> {
        for r in reports {
            self.row(r, false)?;
        }
        Ok(())
    }

    /// Writes one interval row, marked `partial` or not, its time counted from
    /// the activity's first slot (`ActivityInfo::schedule_start`: its start
    /// while its schedule has not begun, a `set_up` row; the log's origin when
    /// unknown).
    pub fn row(&mut self, r: &ActivityReport<'_>, partial: bool) -> io::Result<()> {
        let base = r.info.schedule_start.unwrap_or(self.origin);
        write!(self.out, "{}", units::seconds_since(r.snapshot.end(), base))?;
        write_row(&mut self.out, r, partial)
    }

    /// Flushes the writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// The writer back.
    #[cfg(test)]
    pub fn into_inner(self) -> W {
        self.out
    }
}

/// One interval row after its `time_s`, with its newline.
fn write_row<W: Write>(out: &mut W, r: &ActivityReport<'_>, partial: bool) -> io::Result<()> {
    let s = r.snapshot;
    let rate = if partial {
        String::new()
    } else {
        format!("{:.3}", s.rate())
    };
    write!(
        out,
        ",{},{},{rate},{},{},{}",
        quote(&r.info.alias),
        s.ops(),
        s.error_count(),
        s.missed(),
        units::seconds(s.paused_nanos())
    )?;
    let split = [s.queue(), s.dispatch()];
    let split = if r.paced() { &split[..] } else { &[] };
    for l in [s.service(), s.wait(), s.response()].iter().chain(split) {
        if partial {
            write!(out, ",,,,")?;
        } else {
            write_latencies(out, l)?;
        }
    }
    if !r.paced() {
        write!(out, "{}", ",".repeat(8))?;
    }
    match global(r) {
        Some((ops, rate)) => write!(out, ",{ops},{rate:.3}")?,
        None => write!(out, ",,")?,
    }
    match (s.concurrency_cap(), s.cap_full_share()) {
        (Some(cap), full) => write!(
            out,
            ",{},{cap},{}",
            s.in_flight_max(),
            full.map_or(String::new(), |f| format!("{f:.4}"))
        )?,
        (None, _) => write!(out, ",,,")?,
    }
    match r.info.mean_target.filter(|_| !partial) {
        Some(t) => write!(out, ",{t:.3}")?,
        None => write!(out, ",")?,
    }
    write!(
        out,
        ",{},{}",
        units::seconds(s.elapsed_nanos()),
        u8::from(partial)
    )?;
    writeln!(out, ",{},", u8::from(!r.info.schedule_begun))?;
    Ok(())
}

/// A coordinated activity's global completed ops and achieved rate.
fn global(r: &ActivityReport<'_>) -> Option<(u64, f64)> {
    #[cfg(feature = "redis")]
    if let Some(c) = &r.info.coordinated {
        return Some((c.global_completed, c.global_achieved));
    }
    let _ = r;
    None
}

fn write_latencies<W: Write>(out: &mut W, l: &Latencies) -> io::Result<()> {
    // No ops, no percentiles: empty fields, as a partial row's (a 0 would read
    // as ops that took no time).
    if l.count() == 0 {
        return write!(out, ",,,,");
    }
    write!(out, ",{},{},{},{}", l.p50(), l.p99(), l.p999(), l.max())
}

/// `field` as a CSV field: quoted (with quotes doubled) when it holds a comma, a
/// quote or a line break.
fn quote(field: &str) -> String {
    if field.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::super::ActivityInfo;
    use super::super::tests::{info, snapshot, split_snapshot};
    use super::*;
    use paceline::Event;

    #[test]
    fn header_then_event_rows_then_interval_rows() {
        let mut log = CsvLog::new(Vec::new(), 1_000_000_000).unwrap_or_else(|e| panic!("{e}"));
        let snap = snapshot(1_000_000_000, 11_000_000_000);
        let i = info("a");
        let rate = TimelineEntry {
            at: 3_500_000_000,
            event: Event::Rate {
                from: 1000.0,
                to: 5000.0,
            },
        };
        log.event(1_000_000_000, false, "a", &rate)
            .unwrap_or_else(|e| panic!("{e}"));
        log.interval(&[ActivityReport {
            info: &i,
            snapshot: &snap,
            events: &[],
        }])
        .unwrap_or_else(|e| panic!("{e}"));
        let text = String::from_utf8(log.into_inner()).unwrap_or_default();
        let want = format!(
            "{HEADER}\n\
             2.500,a,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,0,rate 1000 -> 5000\n\
             10.000,a,1000,100.000,3,2,0.000,500223,990207,999423,1000447,\
             5003,9903,9991,10007,505087,999935,1009151,1010175,\
             ,,,,,,,,,,,,,,10.000,0,0,\n"
        );
        assert_eq!(text, want);
        // Every row has as many fields as the header.
        let width = HEADER.split(',').count();
        for line in text.lines() {
            assert_eq!(line.split(',').count(), width, "{line}");
        }
    }

    #[test]
    fn queue_dispatch_and_global_columns() {
        let mut log = CsvLog::new(Vec::new(), 0).unwrap_or_else(|e| panic!("{e}"));
        let paced = split_snapshot(0, 2_000_000_000);
        let mut shared = info("a");
        shared.mean_target = Some(1234.5);
        #[cfg(feature = "redis")]
        {
            shared.coordinated = Some(super::super::shared::tests::three());
        }
        let free = ActivityInfo {
            target_rate: None,
            mean_target: None,
            strictness: None,
            ..info("b")
        };
        let unsplit = snapshot(0, 2_000_000_000);
        log.interval(&[
            ActivityReport {
                info: &shared,
                snapshot: &paced,
                events: &[],
            },
            ActivityReport {
                info: &free,
                snapshot: &unsplit,
                events: &[],
            },
        ])
        .unwrap_or_else(|e| panic!("{e}"));
        let text = String::from_utf8(log.into_inner()).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        // The coordinated activity's global numbers, from its `Coordinated`.
        let global = if cfg!(feature = "redis") {
            "120000,29950.000"
        } else {
            ","
        };
        assert_eq!(
            lines[1],
            format!(
                "2.000,a,1000,500.000,0,0,0.000,10,10,10,10,1501,1991,2000,2001,\
                 1511,2001,2010,2011,500,990,999,1000,1000,1980,1998,2000,{global},,,,1234.500,\
                 2.000,0,0,"
            )
        );
        // Unpaced and alone: no split, no global numbers.
        assert_eq!(
            lines[2],
            "2.000,b,1000,500.000,3,2,0.000,500223,990207,999423,1000447,\
             5003,9903,9991,10007,505087,999935,1009151,1010175,,,,,,,,,,,,,,,2.000,0,0,"
        );
        let header: Vec<&str> = HEADER.split(',').collect();
        let at = |name: &str| header.iter().position(|h| *h == name);
        assert_eq!(header.len(), 2 + METRIC_COLUMNS + 2);
        assert_eq!(at("queue_p50_ns"), Some(19));
        assert_eq!(at("dispatch_max_ns"), Some(26));
        assert_eq!(at("global_ops"), Some(27));
        assert_eq!(at("target_rate"), Some(32));
        assert_eq!(at("global_rate"), Some(28));
        assert_eq!(at("in_flight_max"), Some(29));
        assert_eq!(at("cap_full_share"), Some(31));
        assert_eq!((at("interval_s"), at("partial")), (Some(33), Some(34)));
        assert_eq!(at("set_up"), Some(35));
        assert_eq!(header.last(), Some(&"event"));
        for line in &lines {
            assert_eq!(line.split(',').count(), header.len(), "{line}");
        }
    }

    #[test]
    fn fields_with_commas_or_quotes_are_quoted() {
        assert_eq!(quote("plain"), "plain");
        assert_eq!(quote("a,b"), "\"a,b\"");
        assert_eq!(quote("say \"hi\""), "\"say \"\"hi\"\"\"");
    }
}
