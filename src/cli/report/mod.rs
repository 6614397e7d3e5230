//! Reporters fed by metrics snapshots: interval lines and a progress line on the
//! console, the end-of-run summary table, and the `--summary-json`, `--csv`,
//! `--hdr-log` and `--html` files.
//!
//! The run loop owns one [`Reporter`]. Every report interval it takes each
//! activity's [`Snapshot`] and the timeline entries since the
//! last call and hands them over as [`ActivityReport`]s to [`Reporter::interval`];
//! at the end it hands the totals and whole timelines to [`Reporter::finish`].
//! Between intervals it may redraw a progress line with [`Reporter::progress`].
//!
//! Times on the console and in the files are seconds from each activity's
//! schedule's first slot (`ActivityInfo::schedule_start`; set-up before it is
//! negative), the same number in every format: the console, the CSV, the summary
//! JSON's timeline, the HDR log (its offsets count from a `#[BaseTime]` line
//! that is the first slot's wall time, see [`hdr`]) and the HTML report.

pub mod belongs;
pub mod by_op;
pub mod command;
mod console;
pub mod csv;
pub mod findmax_page;
pub mod hdr;
pub mod html;
#[cfg(test)]
mod html_tests;
pub mod json;
pub mod merge;
#[cfg(test)]
mod merge_tests;
pub mod model;
pub mod plots;
pub mod read;
mod reporter;
#[cfg(feature = "redis")]
pub mod shared;
#[cfg(test)]
pub(crate) mod tests;
#[cfg(test)]
mod tests_console;
pub mod text;
#[cfg(test)]
mod time_axis_tests;
pub mod units;

use paceline::{Nanos, Snapshot, TimelineEntry};
use std::error::Error;
use std::fmt;
use std::io::{self, Write};
use std::path::PathBuf;

pub use console::Console;
pub use reporter::{Failed, Reporter};
pub use text::{Progress, progress_line};

/// What the reports say about an activity besides its measurements.
#[derive(Debug, Clone, PartialEq)]
pub struct ActivityInfo {
    /// The activity's alias, unique in the run.
    pub alias: String,
    /// The driver that runs its ops, such as `diag`.
    pub driver: String,
    /// Worker threads (now).
    pub threads: usize,
    /// Cycles the activity was asked to run; 0 when unbounded.
    pub cycles_requested: u64,
    /// The target rate in ops per second; `None` when unpaced.
    pub target_rate: Option<f64>,
    /// The mean target rate over the interval (over the whole run, for the
    /// totals): ramps, rate changes and pauses weighted by how long they lasted
    /// (`paceline::mean_target_rate`). The verdict judges the achieved rate
    /// against it, and the reports show it beside the achieved rate; `None` when
    /// unpaced or not known (then [`target_rate`](Self::target_rate) stands in).
    pub mean_target: Option<f64>,
    /// The pacer's strictness; `None` when unpaced.
    pub strictness: Option<f64>,
    /// Whether the rate spec is each thread's (thread scope, where
    /// [`target_rate`](Self::target_rate) is the total over the threads): the
    /// console's rate events, in the spec's rates, say `per thread`.
    pub per_thread: bool,
    /// The driver's own counters (the `http` driver's requests, connections and
    /// statuses), for the summary JSON; `None` when the driver has none.
    pub driver_stats: Option<serde_json::Value>,
    /// The first message of each error kind, `(kind, message)`
    /// (`Metrics::first_errors`), for the summary.
    pub first_errors: Vec<(String, String)>,
    /// The verdict on the interval (or on the whole run, for the totals):
    /// `paceline::Verdict`; `None` where none was made.
    pub verdict: Option<paceline::Verdict>,
    /// Where this process stands in the activity's shared schedule, with the
    /// schedule's global numbers (`paceline::Control::coordinated`); `None` when
    /// the activity paces alone. See [`shared`].
    #[cfg(feature = "redis")]
    pub coordinated: Option<paceline::Coordinated>,
    /// How the activity ended (`completed`, `ran its duration`, `stopped`,
    /// `failed: …`); `None` while it runs.
    pub ended: Option<String>,
    /// Where its interval lines count their time from, on the activities' clock:
    /// the schedule's first slot, where its metrics' window (and so every rate)
    /// and its `duration` start (`paceline::Metrics::window_start`; the
    /// activity's start until the schedule begins). `None`: the run's origin.
    pub schedule_start: Option<Nanos>,
    /// Whether the schedule has begun (`paceline::Metrics::first_slot`): before,
    /// `schedule_start` is the activity's start, not its first slot, so the
    /// console labels its lines `set-up +…` (time since the activity's start) and the
    /// CSV marks its rows `set_up`, counted the same way.
    pub schedule_begun: bool,
}

/// One activity's data for one report: an interval (or the totals) and the
/// timeline entries that go with it.
#[derive(Debug, Clone, Copy)]
pub struct ActivityReport<'a> {
    /// Who.
    pub info: &'a ActivityInfo,
    /// For [`Reporter::interval`], the interval's snapshot (`Metrics::snapshot`); for
    /// [`Reporter::finish`], the totals (`Metrics::totals`).
    pub snapshot: &'a Snapshot,
    /// For [`Reporter::interval`], the entries since the previous call
    /// (`Metrics::timeline_since`); for [`Reporter::finish`], the whole timeline
    /// (`Metrics::timeline`).
    pub events: &'a [TimelineEntry],
}

impl ActivityInfo {
    /// Whether it completed before its first slot with no cycle bound to count:
    /// its cycle range was empty (`cycles=0`, `cycles=1..1`), so nothing was ever
    /// due. Not a shared schedule's member, whose cycles others may have taken.
    pub fn had_no_cycles(&self) -> bool {
        #[cfg(feature = "redis")]
        if self.coordinated.is_some() {
            return false;
        }
        !self.schedule_begun
            && self.cycles_requested == 0
            && self.ended.as_deref() == Some("completed")
    }

    /// The target the numbers are judged against: the mean target when known,
    /// else the target rate at the end.
    pub fn judged_target(&self) -> Option<f64> {
        self.mean_target.or(self.target_rate)
    }

    /// Its ops that a planned end cut (audit p18, M9): the `cancelled` errors
    /// of `totals` when the activity ended as asked (`completed`: a cycle
    /// bound; `ran its duration`: its `duration` or `--duration`; `stopped`: a
    /// scenario's `stop` or its end), else 0 (still running, an error-policy
    /// stop, `stopped by abort_on_fail`, `stopped by control`, `stopped by
    /// interrupt`). The summary shows them on their own line and the `errors`
    /// thresholds and `compare`'s `errors` row leave them out; they remain
    /// starts.
    pub fn cut_at_end(&self, totals: &Snapshot) -> u64 {
        match self.ended.as_deref() {
            Some("completed" | "ran its duration" | "stopped") => totals.errors_of("cancelled"),
            _ => 0,
        }
    }
}

impl ActivityReport<'_> {
    /// The achieved rate of the totals (`paceline::achieved_rate`): paced, the
    /// ops started over the span from the first slot to the last start (the
    /// drain after it is no part of the schedule), never above the mean
    /// target (for Poisson arrivals, than the drawn slots' own rate the verdict
    /// judged it against: `paceline::Verdict::drawn_rate`); unpaced, ops over
    /// the run's time.
    pub fn achieved(&self) -> f64 {
        let drawn = self.info.verdict.as_ref().and_then(|v| v.drawn_rate);
        paceline::achieved_rate(self.snapshot, drawn.or(self.info.judged_target()))
    }

    /// Whether the activity's ops have slots, so that their waits split into
    /// queueing and dispatch (`Snapshot::queue`, `Snapshot::dispatch`): it has a
    /// target rate, or some op of the snapshot was split. The CSV log, the HDR log
    /// and the HTML report carry the split for these activities only.
    pub fn paced(&self) -> bool {
        self.info.target_rate.is_some() || self.snapshot.queue().count() > 0
    }
}

/// Whether an interval of `elapsed` nanoseconds is *partial*: shorter than half
/// the report interval `every` (`None`: every interval is whole). The last
/// interval of an activity that ended a few ms after a report (or the first of
/// one a scenario started just before a report) holds a handful of ops: a rate
/// or a percentile of them would read as a whole interval's (issue 24, item 4:
/// `2 ops 100/s ... p99 21.4ms`). Every report says the same of it: the console
/// line and the CSV row mark it partial with its length and its counts (ops,
/// errors, missed slots) but no rate or percentiles, the HDR log keeps its
/// histograms (so the log still sums to the totals) behind a `#[Partial ...]`
/// comment, it has no verdict line, and the HTML plots leave it out. Its ops are
/// in the totals everywhere.
pub fn is_partial(elapsed: Nanos, every: Option<Nanos>) -> bool {
    every.is_some_and(|e| elapsed.saturating_mul(2) < e)
}

/// Why a report could not be written.
#[derive(Debug)]
pub enum ReportError {
    /// A report file could not be created. Check that its directory exists and is
    /// writable, or pass another path.
    Create {
        /// The file.
        path: PathBuf,
        /// The OS's reason.
        source: io::Error,
    },
    /// Writing a report failed (a full disk, a closed pipe on a file). Free space or
    /// pass another path.
    Write {
        /// The file, or `stdout`.
        path: PathBuf,
        /// The OS's reason.
        source: io::Error,
    },
}

impl fmt::Display for ReportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Create { path, source } => write!(
                f,
                "cannot create report file {}: {source} (check that the directory exists and \
                 is writable, or pass another path)",
                path.display()
            ),
            Self::Write { path, source } => {
                write!(f, "cannot write report to {}: {source}", path.display())
            }
        }
    }
}

impl Error for ReportError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            Self::Create { source, .. } | Self::Write { source, .. } => Some(source),
        }
    }
}

/// A boxed writer, so sinks can be files, stdout or test buffers alike.
pub type Sink = Box<dyn Write + Send>;

/// Where the reports go, from the command line; see [`Reporter::open`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReportOptions {
    /// `--summary-json PATH`.
    pub summary_json: Option<PathBuf>,
    /// `--csv PATH`.
    pub csv: Option<PathBuf>,
    /// `--hdr-log PATH`.
    pub hdr_log: Option<PathBuf>,
    /// `--html PATH`.
    pub html: Option<PathBuf>,
    /// Whether to show a progress line (`--progress` / `--no-progress`); `None`
    /// means only when the console is a terminal.
    pub progress: Option<bool>,
    /// Report on standard error instead of standard output (when ops write to
    /// standard output).
    pub console_stderr: bool,
}
