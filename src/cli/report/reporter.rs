//! The [`Reporter`]: one run's console and report files, fed every interval and
//! at the end.

use super::{
    ActivityInfo, ActivityReport, Console, Progress, ReportError, ReportOptions, Sink, csv, hdr,
    html, json, model, progress_line, text,
};
use paceline::{Nanos, TimelineEntry};
use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

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
    /// The run's metadata and threshold results, for the top level of the summary
    /// JSON and the HTML report ([`set_run`](Self::set_run)).
    run: serde_json::Map<String, serde_json::Value>,
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
            run: serde_json::Map::new(),
        }
    }

    /// The run's metadata (`version`, `started_at`, …) and `thresholds` results:
    /// written at the top level of the summary JSON, and shown by the HTML report,
    /// at [`finish`](Self::finish). By default, none.
    pub fn set_run(&mut self, run: serde_json::Map<String, serde_json::Value>) {
        self.run = run;
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
            #[cfg(feature = "redis")]
            if let Some(c) = &r.info.coordinated {
                let end = r.snapshot.end();
                let line = if self.console.is_terminal() {
                    super::shared::compact_interval_line(self.origin, &r.info.alias, end, c)
                } else {
                    super::shared::interval_line(self.origin, &r.info.alias, end, c)
                };
                self.console.line(&line)?;
            }
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
            let mut doc = json::SummaryJson::new(self.origin, totals);
            doc.run = self.run.clone();
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
            if !self.run.is_empty() {
                log.set_run(serde_json::Value::Object(self.run.clone()));
            }
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
