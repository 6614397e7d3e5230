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
//! Times on the console and in the files are seconds since the run's origin (the
//! activities' clock reading when the run began), so they line up across formats.

pub mod command;
pub mod csv;
pub mod hdr;
pub mod html;
#[cfg(test)]
mod html_tests;
pub mod json;
pub mod model;
pub mod plots;
pub mod read;
pub mod text;
pub mod units;

use paceline::{Nanos, Snapshot, TimelineEntry};
use std::collections::HashMap;
use std::error::Error;
use std::fmt;
use std::fs::File;
use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

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
    /// The pacer's strictness; `None` when unpaced.
    pub strictness: Option<f64>,
    /// The driver's own counters (the `http` driver's requests, connections and
    /// statuses), for the summary JSON; `None` when the driver has none.
    pub driver_stats: Option<serde_json::Value>,
    /// The first message of each error kind, `(kind, message)`
    /// (`Metrics::first_errors`), for the summary.
    pub first_errors: Vec<(String, String)>,
    /// The verdict on the interval (or on the whole run, for the totals):
    /// `paceline::Verdict`; `None` where none was made.
    pub verdict: Option<paceline::Verdict>,
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

/// The console: interval lines, events, the summary and the progress line.
///
/// On a terminal the progress line is redrawn in place (`\r` and clear-line) and
/// cleared before any other line; elsewhere each progress line is a plain line. A
/// broken pipe (`paceline run … | head`) is not an error: output stops quietly.
pub struct Console {
    out: Sink,
    tty: bool,
    /// A progress line is on screen (terminal only) and must be cleared first.
    progress_shown: bool,
    /// The reader went away; everything further is dropped.
    closed: bool,
}

impl fmt::Debug for Console {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Console")
            .field("tty", &self.tty)
            .field("closed", &self.closed)
            .finish()
    }
}

/// Clears the current terminal line.
const CLEAR_LINE: &str = "\r\x1b[2K";

impl Console {
    /// Standard output; redraws in place when it is a terminal.
    pub fn stdout() -> Self {
        Self::new(Box::new(io::stdout()), io::stdout().is_terminal())
    }

    /// Standard error, for runs whose ops write to standard output (the `stdout`
    /// driver): the reports then stay out of the op stream.
    pub fn stderr() -> Self {
        Self::new(Box::new(io::stderr()), io::stderr().is_terminal())
    }

    /// Any writer; `tty` says whether to redraw the progress line in place.
    pub fn new(out: Sink, tty: bool) -> Self {
        Self {
            out,
            tty,
            progress_shown: false,
            closed: false,
        }
    }

    /// Whether this console redraws in place.
    pub fn is_terminal(&self) -> bool {
        self.tty
    }

    /// Writes `text` followed by a newline (clearing a progress line first).
    pub fn line(&mut self, text: &str) -> Result<(), ReportError> {
        let clear = std::mem::take(&mut self.progress_shown);
        let mut buf = String::with_capacity(text.len() + 8);
        if clear {
            buf.push_str(CLEAR_LINE);
        }
        buf.push_str(text);
        buf.push('\n');
        self.write(&buf)
    }

    /// Draws the progress line: in place on a terminal, as a plain line elsewhere.
    pub fn progress(&mut self, text: &str) -> Result<(), ReportError> {
        if self.tty {
            self.progress_shown = true;
            self.write(&format!("{CLEAR_LINE}{text}"))
        } else {
            self.write(&format!("{text}\n"))
        }
    }

    /// Clears the progress line, if one is shown.
    pub fn clear_progress(&mut self) -> Result<(), ReportError> {
        if std::mem::take(&mut self.progress_shown) {
            self.write(CLEAR_LINE)
        } else {
            Ok(())
        }
    }

    fn write(&mut self, text: &str) -> Result<(), ReportError> {
        if self.closed {
            return Ok(());
        }
        match self
            .out
            .write_all(text.as_bytes())
            .and_then(|()| self.out.flush())
        {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(())
            }
            Err(source) => Err(ReportError::Write {
                path: PathBuf::from("stdout"),
                source,
            }),
        }
    }
}

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

/// A named sink, so errors can say which file failed.
struct Named<T> {
    path: PathBuf,
    inner: T,
}

impl<T> Named<T> {
    fn write_err(&self, source: io::Error) -> ReportError {
        ReportError::Write {
            path: self.path.clone(),
            source,
        }
    }
}

/// Every report of one run; see the module docs for the calling pattern.
pub struct Reporter {
    origin: Nanos,
    console: Console,
    show_progress: bool,
    csv: Option<Named<csv::CsvLog<Sink>>>,
    hdr: Option<Named<hdr::HdrLog<Sink>>>,
    summary_json: Option<Named<Sink>>,
    html: Option<Named<(Sink, model::HtmlLog)>>,
    /// Events received but not yet written: those after the latest interval's end
    /// wait for the next interval, so the files stay in time order.
    pending: Vec<(String, TimelineEntry)>,
    /// How many timeline entries each alias has handed over through `interval`.
    seen: HashMap<String, usize>,
    /// The verdict kind of each activity's last interval, to print a verdict
    /// line only when it changes.
    verdicts: HashMap<String, paceline::VerdictKind>,
}

impl fmt::Debug for Reporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reporter")
            .field("origin", &self.origin)
            .field("console", &self.console)
            .field("csv", &self.csv.as_ref().map(|c| &c.path))
            .field("hdr", &self.hdr.as_ref().map(|c| &c.path))
            .field("summary_json", &self.summary_json.as_ref().map(|c| &c.path))
            .field("html", &self.html.as_ref().map(|c| &c.path))
            .finish()
    }
}

fn create(path: &Path) -> Result<Sink, ReportError> {
    File::create(path)
        .map(|f| Box::new(BufWriter::new(f)) as Sink)
        .map_err(|source| ReportError::Create {
            path: path.to_path_buf(),
            source,
        })
}

impl Reporter {
    /// A reporter writing only to `console`; `origin` is the run's start on the
    /// activities' clock. By default no progress line and no files.
    pub fn new(origin: Nanos, console: Console) -> Self {
        Self {
            origin,
            console,
            show_progress: false,
            csv: None,
            hdr: None,
            summary_json: None,
            html: None,
            pending: Vec::new(),
            seen: HashMap::new(),
            verdicts: HashMap::new(),
        }
    }

    /// The reporter the command line asks for: stdout plus the files in `opts`,
    /// created now so that a bad path fails before the run starts. `started_at` is
    /// the wall-clock time of `origin` (for the HDR log's StartTime).
    pub fn open(
        opts: &ReportOptions,
        origin: Nanos,
        started_at: SystemTime,
    ) -> Result<Self, ReportError> {
        let console = if opts.console_stderr {
            Console::stderr()
        } else {
            Console::stdout()
        };
        let progress = opts.progress.unwrap_or(console.is_terminal());
        let mut r = Self::new(origin, console).progress_enabled(progress);
        if let Some(p) = &opts.csv {
            r = r.csv_to(p, create(p)?)?;
        }
        if let Some(p) = &opts.hdr_log {
            r = r.hdr_log_to(p, create(p)?, started_at)?;
        }
        if let Some(p) = &opts.summary_json {
            r = r.summary_json_to(p, create(p)?);
        }
        if let Some(p) = &opts.html {
            r = r.html_to(p, create(p)?);
        }
        Ok(r)
    }

    /// Whether [`progress`](Self::progress) draws anything. By default, false.
    pub fn progress_enabled(mut self, on: bool) -> Self {
        self.show_progress = on;
        self
    }

    /// Whether a progress line is shown (so callers can skip gathering it).
    pub fn shows_progress(&self) -> bool {
        self.show_progress
    }

    /// Also write the CSV log to `out` (named `path` in errors); writes its header now.
    pub fn csv_to(mut self, path: &Path, out: Sink) -> Result<Self, ReportError> {
        let log = csv::CsvLog::new(out, self.origin).map_err(|source| ReportError::Write {
            path: path.to_path_buf(),
            source,
        })?;
        self.csv = Some(Named {
            path: path.to_path_buf(),
            inner: log,
        });
        Ok(self)
    }

    /// Also write the HDR interval log to `out`; writes its header now.
    pub fn hdr_log_to(
        mut self,
        path: &Path,
        out: Sink,
        started_at: SystemTime,
    ) -> Result<Self, ReportError> {
        let log = hdr::HdrLog::new(out, self.origin, started_at).map_err(|source| {
            ReportError::Write {
                path: path.to_path_buf(),
                source,
            }
        })?;
        self.hdr = Some(Named {
            path: path.to_path_buf(),
            inner: log,
        });
        Ok(self)
    }

    /// Also write the summary JSON to `out` at [`finish`](Self::finish).
    pub fn summary_json_to(mut self, path: &Path, out: Sink) -> Self {
        self.summary_json = Some(Named {
            path: path.to_path_buf(),
            inner: out,
        });
        self
    }

    /// Also write the HTML report to `out` at [`finish`](Self::finish); until then
    /// it gathers each interval's figures (a few numbers per activity).
    pub fn html_to(mut self, path: &Path, out: Sink) -> Self {
        self.html = Some(Named {
            path: path.to_path_buf(),
            inner: (out, model::HtmlLog::new(self.origin)),
        });
        self
    }

    /// Reports one interval: event lines and one interval line per activity on the
    /// console (and a verdict line when an activity's verdict kind differs from
    /// its previous interval's), rows in the CSV log, histograms and event
    /// comments in the HDR log.
    ///
    /// Each report's `events` are the timeline entries since the previous call;
    /// entries later than the latest interval end are held for the next call.
    pub fn interval(&mut self, reports: &[ActivityReport<'_>]) -> Result<(), ReportError> {
        for r in reports {
            *self.seen.entry(r.info.alias.clone()).or_insert(0) += r.events.len();
            self.pending
                .extend(r.events.iter().map(|e| (r.info.alias.clone(), e.clone())));
        }
        let end = reports.iter().map(|r| r.snapshot.end()).max();
        self.write_events(end)?;
        for r in reports {
            // A terminal gets the line that fits its width; a file the full one.
            let line = if self.console.is_terminal() {
                text::compact_interval_line(self.origin, r.info, r.snapshot)
            } else {
                text::interval_line(self.origin, r.info, r.snapshot)
            };
            self.console.line(&line)?;
            if let Some(v) = &r.info.verdict
                && self.verdicts.insert(r.info.alias.clone(), v.kind) != Some(v.kind)
            {
                let end = r.snapshot.end();
                self.console
                    .line(&text::verdict_line(self.origin, r.info, end, v))?;
            }
        }
        if let Some(c) = &mut self.csv {
            c.inner.interval(reports).map_err(|e| c.write_err(e))?;
            c.inner.flush().map_err(|e| c.write_err(e))?;
        }
        if let Some(h) = &mut self.hdr {
            h.inner.interval(reports).map_err(|e| h.write_err(e))?;
            h.inner.flush().map_err(|e| h.write_err(e))?;
        }
        if let Some(h) = &mut self.html {
            h.inner.1.interval(reports);
        }
        Ok(())
    }

    /// Redraws the progress line, one [`progress_line`] per activity joined by
    /// `  ·  `; does nothing unless progress is enabled.
    pub fn progress(
        &mut self,
        activities: &[(&ActivityInfo, Progress)],
    ) -> Result<(), ReportError> {
        if !self.show_progress || activities.is_empty() {
            return Ok(());
        }
        let line: Vec<String> = activities
            .iter()
            .map(|(info, p)| progress_line(info, p))
            .collect();
        self.console.progress(&line.join("  ·  "))
    }

    /// Ends the run: writes any events not yet written, the summary table per
    /// activity on the console, and the summary JSON; flushes every file.
    ///
    /// Each report's `snapshot` is the activity's totals and `events` its whole
    /// timeline (entries already handed to [`interval`](Self::interval) are not
    /// written twice).
    pub fn finish(&mut self, totals: &[ActivityReport<'_>]) -> Result<(), ReportError> {
        for r in totals {
            let seen = self.seen.get(&r.info.alias).copied().unwrap_or(0);
            let fresh = r.events.get(seen..).unwrap_or_default();
            self.pending
                .extend(fresh.iter().map(|e| (r.info.alias.clone(), e.clone())));
        }
        self.write_events(None)?;
        self.console.clear_progress()?;
        for r in totals {
            self.console.line(&text::summary_table(r))?;
        }
        if !totals.is_empty() {
            self.console.line(&format!("({})", text::LEGEND))?;
        }
        if let Some(j) = &mut self.summary_json {
            let doc = json::SummaryJson::new(self.origin, totals);
            serde_json::to_writer_pretty(&mut j.inner, &doc)
                .map_err(io::Error::other)
                .and_then(|()| writeln!(j.inner))
                .and_then(|()| j.inner.flush())
                .map_err(|e| j.write_err(e))?;
        }
        if let Some(c) = &mut self.csv {
            c.inner.flush().map_err(|e| c.write_err(e))?;
        }
        if let Some(h) = &mut self.hdr {
            h.inner.flush().map_err(|e| h.write_err(e))?;
        }
        if let Some(h) = &mut self.html {
            let (out, log) = &mut h.inner;
            let page = html::render(log.finish(totals));
            out.write_all(page.as_bytes())
                .and_then(|()| out.flush())
                .map_err(|e| h.write_err(e))?;
        }
        Ok(())
    }

    /// A free line on the console (after the summary), such as a driver's own
    /// counters. A console that cannot be written is ignored here: the reports
    /// that matter were already written.
    pub fn note(&mut self, text: &str) {
        let _ = self.console.line(text);
    }

    /// Writes the pending events at or before `until` (all of them for `None`), in
    /// time order, to the console and the logs.
    fn write_events(&mut self, until: Option<Nanos>) -> Result<(), ReportError> {
        // Stable: events at the same time keep the order they were received in.
        self.pending.sort_by_key(|(_, e)| e.at);
        let split = match until {
            Some(t) => self.pending.partition_point(|(_, e)| e.at <= t),
            None => self.pending.len(),
        };
        let due: Vec<_> = self.pending.drain(..split).collect();
        for (alias, e) in &due {
            self.console
                .line(&text::event_line(self.origin, alias, e))?;
            if let Some(c) = &mut self.csv {
                c.inner.event(alias, e).map_err(|err| c.write_err(err))?;
            }
            if let Some(h) = &mut self.hdr {
                h.inner.event(alias, e).map_err(|err| h.write_err(err))?;
            }
            if let Some(h) = &mut self.html {
                h.inner.1.event(alias, e);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use paceline::{Event, Metrics};
    use std::sync::{Arc, Mutex};

    /// An activity `alias` on the diag driver: 4 threads, 100 000 cycles at 10 000/s,
    /// strictness 1.1.
    pub fn info(alias: &str) -> ActivityInfo {
        ActivityInfo {
            alias: alias.to_string(),
            driver: "diag".to_string(),
            threads: 4,
            cycles_requested: 100_000,
            target_rate: Some(10_000.0),
            strictness: Some(1.1),
            driver_stats: None,
            first_errors: Vec::new(),
            verdict: None,
        }
    }

    /// A snapshot from `start` to `end`: 1000 ops with service i µs and wait i×10 ns
    /// for i in 1..=1000, errors timeout ×2 and refused ×1, 1 retry, 2 missed slots.
    pub fn snapshot(start: Nanos, end: Nanos) -> Snapshot {
        let metrics = Metrics::new(start);
        let mut rec = metrics.recorder();
        for i in 1..=1000 {
            rec.record(i * 10, i * 1000);
        }
        rec.error_named("timeout");
        rec.error_named("timeout");
        rec.error_named("refused");
        rec.retry();
        rec.missed(2);
        metrics.snapshot(end)
    }

    /// A writer whose bytes the test can read afterwards.
    #[derive(Clone, Default)]
    pub struct SharedBuf(Arc<Mutex<Vec<u8>>>);

    impl SharedBuf {
        pub fn text(&self) -> String {
            let bytes = self.0.lock().map(|b| b.clone()).unwrap_or_default();
            String::from_utf8(bytes).unwrap_or_default()
        }
    }

    impl Write for SharedBuf {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if let Ok(mut b) = self.0.lock() {
                b.extend_from_slice(buf);
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A writer whose reader has gone away.
    struct BrokenPipe;

    impl Write for BrokenPipe {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Err(io::ErrorKind::BrokenPipe.into())
        }
    }

    fn ev(at: Nanos, event: Event) -> TimelineEntry {
        TimelineEntry { at, event }
    }

    #[test]
    fn console_redraws_progress_in_place_on_a_terminal() {
        let buf = SharedBuf::default();
        let mut c = Console::new(Box::new(buf.clone()), true);
        c.progress("one").unwrap_or_else(|e| panic!("{e}"));
        c.progress("two").unwrap_or_else(|e| panic!("{e}"));
        c.line("interval").unwrap_or_else(|e| panic!("{e}"));
        c.line("next").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            buf.text(),
            "\r\x1b[2Kone\r\x1b[2Ktwo\r\x1b[2Kinterval\nnext\n"
        );
    }

    #[test]
    fn console_prints_plain_progress_lines_elsewhere() {
        let buf = SharedBuf::default();
        let mut c = Console::new(Box::new(buf.clone()), false);
        c.progress("one").unwrap_or_else(|e| panic!("{e}"));
        c.line("interval").unwrap_or_else(|e| panic!("{e}"));
        c.clear_progress().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(buf.text(), "one\ninterval\n");
    }

    #[test]
    fn a_broken_pipe_on_the_console_is_not_an_error() {
        let mut c = Console::new(Box::new(BrokenPipe), false);
        assert!(c.line("x").is_ok());
        assert!(c.line("y").is_ok());
        let mut r = Reporter::new(0, Console::new(Box::new(BrokenPipe), true));
        let snap = snapshot(0, 1_000_000_000);
        let i = info("a");
        let rep = ActivityReport {
            info: &i,
            snapshot: &snap,
            events: &[],
        };
        assert!(r.interval(&[rep]).is_ok());
        assert!(r.finish(&[rep]).is_ok());
    }

    #[test]
    fn a_missing_directory_is_a_create_error_that_names_the_file() {
        let opts = ReportOptions {
            csv: Some(PathBuf::from("/nonexistent-dir-paceline/x.csv")),
            progress: Some(false),
            ..ReportOptions::default()
        };
        let err = Reporter::open(&opts, 0, SystemTime::now())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.starts_with("cannot create report file /nonexistent-dir-paceline/x.csv: "),
            "{err}"
        );
        assert!(err.ends_with("or pass another path)"), "{err}");
    }

    #[test]
    fn the_reporter_keeps_every_output_in_time_order() {
        let (console, csv, hdr, json) = (
            SharedBuf::default(),
            SharedBuf::default(),
            SharedBuf::default(),
            SharedBuf::default(),
        );
        let origin = 1_000_000_000;
        let mut r = Reporter::new(origin, Console::new(Box::new(console.clone()), false))
            .progress_enabled(true)
            .csv_to(Path::new("x.csv"), Box::new(csv.clone()))
            .and_then(|r| {
                r.hdr_log_to(
                    Path::new("x.hlog"),
                    Box::new(hdr.clone()),
                    SystemTime::UNIX_EPOCH,
                )
            })
            .map(|r| r.summary_json_to(Path::new("x.json"), Box::new(json.clone())))
            .unwrap_or_else(|e| panic!("{e}"));

        let i = info("a");
        let first = snapshot(origin, 2_000_000_000);
        // The second event happened after the first interval's end: it waits.
        let events = [
            ev(origin, Event::Started),
            ev(2_500_000_000, Event::Threads { from: 4, to: 8 }),
        ];
        r.interval(&[ActivityReport {
            info: &i,
            snapshot: &first,
            events: &events,
        }])
        .unwrap_or_else(|e| panic!("{e}"));
        r.progress(&[(&i, Progress::from_snapshots(&first, &first))])
            .unwrap_or_else(|e| panic!("{e}"));
        let second = snapshot(2_000_000_000, 3_000_000_000);
        r.interval(&[ActivityReport {
            info: &i,
            snapshot: &second,
            events: &[],
        }])
        .unwrap_or_else(|e| panic!("{e}"));
        let mut totals = first.clone();
        totals.merge(&second);
        let all = [
            events[0].clone(),
            events[1].clone(),
            ev(3_000_000_000, Event::Stopped),
        ];
        r.finish(&[ActivityReport {
            info: &i,
            snapshot: &totals,
            events: &all,
        }])
        .unwrap_or_else(|e| panic!("{e}"));

        let text = console.text();
        let firsts: Vec<&str> = text
            .lines()
            .map(|l| l.split(" |").next().unwrap_or(""))
            .collect();
        assert_eq!(
            &firsts[..7],
            &[
                "0.000s a: started",
                "1.000s a: 1000 ops 1.00K/s",
                "a 1000/100000 (1%) 1.00K/s of 10.0K/s",
                "1.500s a: threads 4 -> 8",
                "2.000s a: 1000 ops 1.00K/s",
                "2.000s a: stopped",
                "a (diag, 4 threads): 2000 of 100000 cycles in 2.000s, 1.00K/s of 10.0K/s (strictness 1.1)",
            ]
        );

        let csv_rows: Vec<String> = csv
            .text()
            .lines()
            .skip(1)
            .map(|l| {
                let f: Vec<&str> = l.split(',').collect();
                format!("{} {} {}", f[0], f[2], f[f.len() - 1])
            })
            .collect();
        assert_eq!(
            csv_rows,
            [
                "0.000  started",
                "1.000 1000 ",
                "1.500  threads 4 -> 8",
                "2.000 1000 ",
                "2.000  stopped"
            ]
        );

        let hdr_text = hdr.text();
        let hdr_lines: Vec<String> = hdr_text
            .lines()
            .skip(5)
            .map(|l| l.split(",HIST").next().unwrap_or("").to_string())
            .collect();
        assert_eq!(
            hdr_lines,
            [
                "#[Event 0.000 a: started]",
                "#[Target a: 10000]",
                "Tag=a.service,0.000,1.000,1000447.000",
                "Tag=a.wait,0.000,1.000,10007.000",
                "Tag=a.response,0.000,1.000,1010175.000",
                "#[Event 1.500 a: threads 4 -> 8]",
                "#[Target a: 10000]",
                "Tag=a.service,1.000,1.000,1000447.000",
                "Tag=a.wait,1.000,1.000,10007.000",
                "Tag=a.response,1.000,1.000,1010175.000",
                "#[Event 2.000 a: stopped]",
            ]
        );

        let doc: serde_json::Value =
            serde_json::from_str(&json.text()).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(doc["activities"][0]["cycles"]["completed"], 2000);
        assert_eq!(
            doc["activities"][0]["timeline"][2],
            serde_json::json!({"at_seconds": 2.0, "event": "stopped"})
        );
    }
}
