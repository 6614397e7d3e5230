//! The [`Reporter`]: one run's console and report files, fed every interval and
//! at the end.

use super::{
    ActivityInfo, ActivityReport, Console, Progress, ReportError, Sink, csv, hdr, html, json,
    model, progress_line, text,
};
use paceline::{Nanos, TimelineEntry};
use std::collections::HashMap;
use std::fmt;
use std::io::{self, Write};
use std::path::PathBuf;

#[path = "reporter_files.rs"]
mod files;

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

/// Runs `write` on the sink in `slot`; on failure records the error in `failed`
/// and drops the sink, so one report that cannot be written never stops the
/// others (and fails only once).
fn guard<T>(
    slot: &mut Option<Named<T>>,
    failed: &mut Vec<ReportError>,
    write: impl FnOnce(&mut T) -> io::Result<()>,
) {
    if let Some(n) = slot
        && let Err(e) = write(&mut n.inner)
    {
        failed.push(n.write_err(e));
        *slot = None;
    }
}

/// The reports that failed in one call, each named; every other report was
/// written.
#[derive(Debug)]
pub struct Failed(pub Vec<ReportError>);

impl fmt::Display for Failed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Failed {}

/// `Ok` when nothing failed.
fn outcome(failed: Vec<ReportError>) -> Result<(), Failed> {
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Failed(failed))
    }
}

/// Every report of one run; see the module docs for the calling pattern.
///
/// A report that cannot be written (a full disk, a closed file) is named in the
/// [`Failed`] of the call that found it and dropped; every other report goes on
/// being written to the end.
pub struct Reporter {
    origin: Nanos,
    console: Option<Console>,
    show_progress: bool,
    csv: Option<Named<csv::CsvLog<Sink>>>,
    hdr: Option<Named<hdr::HdrLog<Sink>>>,
    summary_json: Option<Named<Sink>>,
    html: Option<Named<(Sink, model::HtmlLog)>>,
    /// Files named but not created yet.
    unopened: Option<files::Unopened>,
    /// Failures found while creating files, handed out by the next call.
    deferred: Vec<ReportError>,
    /// Events received but not yet written: those after the latest interval's end
    /// wait for the next interval, so the files stay in time order.
    pending: Vec<(String, TimelineEntry)>,
    /// How many timeline entries each alias has handed over through `interval`.
    seen: HashMap<String, usize>,
    /// The verdict kind of each activity's last interval, to print a verdict
    /// line only when it changes.
    verdicts: HashMap<String, paceline::VerdictKind>,
    /// The run's metadata and threshold results, for the top level of the summary
    /// JSON and the HTML report ([`set_run`](Self::set_run)).
    run: serde_json::Map<String, serde_json::Value>,
    /// The report interval, for what is partial ([`super::is_partial`]).
    every: Option<Nanos>,
    /// The aliases that have had an interval reported.
    reported: std::collections::HashSet<String>,
    /// Where each activity's lines count their time from (its schedule's first
    /// slot, `ActivityInfo::schedule_start`), as last reported.
    bases: HashMap<String, Nanos>,
    /// The aliases whose schedule has not begun as last reported
    /// (`ActivityInfo::schedule_begun`): their console lines are labelled
    /// set-up and their CSV rows marked `set_up`.
    in_set_up: std::collections::HashSet<String>,
    /// The aliases whose rate spec is each thread's as last reported
    /// (`ActivityInfo::per_thread`): their console rate events say so.
    per_thread: std::collections::HashSet<String>,
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
            .field("unopened", &self.unopened)
            .finish()
    }
}

impl Reporter {
    /// A reporter writing only to `console`; `origin` is the run's start on the
    /// activities' clock. By default no progress line and no files.
    pub fn new(origin: Nanos, console: Console) -> Self {
        Self {
            origin,
            console: Some(console),
            show_progress: false,
            csv: None,
            hdr: None,
            summary_json: None,
            html: None,
            unopened: None,
            deferred: Vec::new(),
            pending: Vec::new(),
            seen: HashMap::new(),
            verdicts: HashMap::new(),
            run: serde_json::Map::new(),
            every: None,
            reported: Default::default(),
            bases: HashMap::new(),
            in_set_up: Default::default(),
            per_thread: Default::default(),
        }
    }

    /// The report interval: an interval shorter than half of it is partial
    /// ([`super::is_partial`]). By default none is.
    pub fn report_interval(mut self, every: std::time::Duration) -> Self {
        self.every = Some(paceline::nanos::from_duration(every));
        self
    }

    /// The run's metadata (`version`, `started_at`, …) and `thresholds` results:
    /// written at the top level of the summary JSON, and shown by the HTML report,
    /// at [`finish`](Self::finish). By default, none.
    pub fn set_run(&mut self, run: serde_json::Map<String, serde_json::Value>) {
        self.run = run;
    }

    /// Writes `line` on the console; a console that fails is recorded and dropped.
    fn console_line(&mut self, line: &str, failed: &mut Vec<ReportError>) {
        if let Some(c) = &mut self.console
            && let Err(e) = c.line(line)
        {
            failed.push(e);
            self.console = None;
        }
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

    /// Whether the console redraws in place (false once it has failed).
    fn tty(&self) -> bool {
        self.console.as_ref().is_some_and(Console::is_terminal)
    }

    /// Reports one interval: event lines and one interval line per activity on the
    /// console (and a verdict line when an activity's verdict kind differs from
    /// its previous interval's), rows in the CSV log, histograms and event
    /// comments in the HDR log. The report files are created at the first
    /// interval with an activity in it.
    ///
    /// Rows go out in the order of their intervals' ends, each after the events
    /// up to its end, so that every report reads in time order across the
    /// activities of a scenario (issue 24, item 14: `15.069s main` came before
    /// `10.052s warmup`, an activity that had ended since the last report). A
    /// partial interval ([`super::is_partial`]) is marked so, without a rate,
    /// percentiles or a verdict line.
    ///
    /// Each report's `events` are the timeline entries since the previous call;
    /// entries later than the latest interval end are held for the next call.
    pub fn interval(&mut self, reports: &[ActivityReport<'_>]) -> Result<(), Failed> {
        if !reports.is_empty() {
            self.open_files();
        }
        let mut failed = std::mem::take(&mut self.deferred);
        for r in reports {
            *self.seen.entry(r.info.alias.clone()).or_insert(0) += r.events.len();
            self.note_base(r.info);
            self.pending
                .extend(r.events.iter().map(|e| (r.info.alias.clone(), e.clone())));
        }
        let mut ordered: Vec<&ActivityReport<'_>> = reports.iter().collect();
        // Stable: rows that end together keep the run's order.
        ordered.sort_by_key(|r| r.snapshot.end());
        for r in ordered {
            self.write_events(Some(r.snapshot.end()), &mut failed);
            self.interval_row(r, &mut failed);
        }
        outcome(failed)
    }

    /// Records where `info`'s activity counts from and whether its schedule has
    /// begun.
    fn note_base(&mut self, info: &super::ActivityInfo) {
        if let Some(at) = info.schedule_start {
            self.bases.insert(info.alias.clone(), at);
        }
        if info.per_thread {
            self.per_thread.insert(info.alias.clone());
        } else {
            self.per_thread.remove(&info.alias);
        }
        if info.schedule_begun {
            self.in_set_up.remove(&info.alias);
        } else {
            self.in_set_up.insert(info.alias.clone());
        }
    }

    /// Where the lines of the activity `info` describes count their time from: its
    /// schedule's first slot, where its rates and its `duration` start, else the
    /// run's origin.
    fn base_of(&self, info: &super::ActivityInfo) -> Nanos {
        info.schedule_start.unwrap_or(self.origin)
    }

    /// Whether the next interval of `alias`, `elapsed` nanoseconds long, is
    /// partial ([`super::is_partial`]). An activity's only interval (it had
    /// none reported and has `ended`) is its whole run, which its summary shows
    /// in full: not partial, however short.
    pub fn is_partial(&self, alias: &str, elapsed: Nanos, ended: bool) -> bool {
        (!ended || self.reported.contains(alias)) && super::is_partial(elapsed, self.every)
    }

    /// One activity's interval in every report (its events are written apart).
    fn interval_row(&mut self, r: &ActivityReport<'_>, failed: &mut Vec<ReportError>) {
        let partial = self.is_partial(
            &r.info.alias,
            r.snapshot.elapsed_nanos(),
            r.info.ended.is_some(),
        );
        self.reported.insert(r.info.alias.clone());
        let base = self.base_of(r.info);
        let set_up = !r.info.schedule_begun;
        // A terminal gets the line that fits its width; a file the full one.
        let line = if partial {
            text::partial_interval_line(base, r.info, r.snapshot)
        } else if self.tty() {
            text::compact_interval_line(base, r.info, r.snapshot)
        } else {
            text::interval_line(base, r.info, r.snapshot)
        };
        self.console_line(&set_up_label(line, set_up), failed);
        #[cfg(feature = "redis")]
        if let Some(c) = &r.info.coordinated {
            let end = r.snapshot.end();
            let line = if self.tty() {
                super::shared::compact_interval_line(base, &r.info.alias, end, c)
            } else {
                super::shared::interval_line(base, &r.info.alias, end, c)
            };
            self.console_line(&set_up_label(line, set_up), failed);
        }
        if let Some(v) = &r.info.verdict
            && !partial
            && self.verdicts.insert(r.info.alias.clone(), v.kind) != Some(v.kind)
        {
            let end = r.snapshot.end();
            let line = set_up_label(text::verdict_line(base, r.info, end, v), set_up);
            let line = match &self.console {
                Some(c) if c.is_terminal() => super::console::wrap(&line, c.width(), "    "),
                _ => line,
            };
            self.console_line(&line, failed);
        }
        let one = std::slice::from_ref(r);
        guard(&mut self.csv, failed, |c| {
            c.row(r, partial)?;
            c.flush()
        });
        guard(&mut self.hdr, failed, |h| {
            h.interval_marked(one, |_| partial)?;
            h.flush()
        });
        if let Some(h) = &mut self.html {
            h.inner.1.interval(one);
        }
    }

    /// Redraws the progress line, one [`progress_line`] per activity joined by
    /// `  ·  `; does nothing unless progress is enabled.
    pub fn progress(&mut self, activities: &[(&ActivityInfo, Progress)]) -> Result<(), Failed> {
        if !self.show_progress || activities.is_empty() {
            return Ok(());
        }
        let line: Vec<String> = activities
            .iter()
            .map(|(info, p)| progress_line(info, p))
            .collect();
        let mut failed = Vec::new();
        if let Some(c) = &mut self.console
            && let Err(e) = c.progress(&line.join("  ·  "))
        {
            failed.push(e);
            self.console = None;
        }
        outcome(failed)
    }

    /// Ends the run: writes any events not yet written, the summary table per
    /// activity on the console, and the summary JSON; flushes every file. Every
    /// report that can be written is written, even when another failed; the
    /// files are created now if no interval created them (with no activity in
    /// them when none ran).
    ///
    /// Each report's `snapshot` is the activity's totals and `events` its whole
    /// timeline (entries already handed to [`interval`](Self::interval) are not
    /// written twice).
    pub fn finish(&mut self, totals: &[ActivityReport<'_>]) -> Result<(), Failed> {
        self.open_files();
        let mut failed = std::mem::take(&mut self.deferred);
        for r in totals {
            // The events left count from the first slot as the totals know it.
            self.note_base(r.info);
            let seen = self.seen.get(&r.info.alias).copied().unwrap_or(0);
            let fresh = r.events.get(seen..).unwrap_or_default();
            self.pending
                .extend(fresh.iter().map(|e| (r.info.alias.clone(), e.clone())));
        }
        self.write_events(None, &mut failed);
        if let Some(c) = &mut self.console
            && let Err(e) = c.clear_progress()
        {
            failed.push(e);
            self.console = None;
        }
        for r in totals {
            self.console_line(&text::summary_table(r), &mut failed);
        }
        if !totals.is_empty() {
            self.console_line(&format!("({})", text::LEGEND), &mut failed);
        }
        let origin = self.origin;
        let run = self.run.clone();
        guard(&mut self.summary_json, &mut failed, |out| {
            let mut doc = json::SummaryJson::new(origin, totals);
            doc.run = run.clone();
            serde_json::to_writer_pretty(&mut *out, &doc).map_err(io::Error::other)?;
            writeln!(out)?;
            out.flush()
        });
        guard(&mut self.csv, &mut failed, |c| c.flush());
        guard(&mut self.hdr, &mut failed, |h| h.flush());
        guard(&mut self.html, &mut failed, |(out, log)| {
            if !run.is_empty() {
                log.set_run(serde_json::Value::Object(run.clone()));
            }
            let page = html::render(log.finish(totals));
            out.write_all(page.as_bytes())?;
            out.flush()
        });
        outcome(failed)
    }

    /// A free line on the console (after the summary), such as a driver's own
    /// counters. A console that cannot be written is ignored here: the reports
    /// that matter were already written.
    pub fn note(&mut self, text: &str) {
        if let Some(c) = &mut self.console {
            let _ = c.line(text);
        }
    }

    /// Writes the pending events at or before `until` (all of them for `None`), in
    /// time order, to the console and the logs.
    fn write_events(&mut self, until: Option<Nanos>, failed: &mut Vec<ReportError>) {
        // Stable: events at the same time keep the order they were received in.
        self.pending.sort_by_key(|(_, e)| e.at);
        let split = match until {
            Some(t) => self.pending.partition_point(|(_, e)| e.at <= t),
            None => self.pending.len(),
        };
        let due: Vec<_> = self.pending.drain(..split).collect();
        for (alias, e) in &due {
            let base = self.bases.get(alias).copied().unwrap_or(self.origin);
            let set_up = self.in_set_up.contains(alias);
            let mut line = text::event_line(base, alias, e);
            // The spec's rates: each thread's in thread scope.
            if self.per_thread.contains(alias)
                && matches!(
                    e.event,
                    paceline::Event::Rate { .. } | paceline::Event::Ramp { .. }
                )
            {
                line.push_str(" per thread");
            }
            self.console_line(&set_up_label(line, set_up), failed);
            guard(&mut self.csv, failed, |c| c.event(base, set_up, alias, e));
            guard(&mut self.hdr, failed, |h| h.event(base, alias, e));
            if let Some(h) = &mut self.html {
                h.inner.1.event(base, alias, e);
            }
        }
    }
}

/// `line` (`2.000s a: …`, its time since the activity's start) labelled as set-up,
/// `set-up +2.000s a: …`, when `set_up`: the activity's schedule has not begun,
/// so its first slot, from which its other lines count, is not known yet.
fn set_up_label(line: String, set_up: bool) -> String {
    if set_up {
        format!("set-up +{line}")
    } else {
        line
    }
}
