//! The [`Reporter`]'s files: checked when the run is set up, created when the
//! first interval (or the end) has something for them, removed again when the
//! run is refused before anything ran; and the test-only builders that write a
//! report to a buffer.

use super::super::{Console, ReportOptions};
use super::{Named, ReportError, Reporter, Sink, csv, hdr, model};
use paceline::Nanos;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// The report files the command line names, checked but not yet created: each
/// is created (emptied) when the first interval or the end of the run has
/// something to put in it, so a run refused at its start leaves no empty or
/// header-only file behind ([`Reporter::abandon`]).
#[derive(Debug, Default)]
pub(super) struct Unopened {
    csv: Option<PathBuf>,
    hdr_log: Option<PathBuf>,
    summary_json: Option<PathBuf>,
    html: Option<PathBuf>,
    /// The wall-clock time of the origin, for the HDR log's StartTime.
    started_at: Option<SystemTime>,
    /// The files the check created (they did not exist): removed by `abandon`.
    created: Vec<PathBuf>,
}

fn create(path: &Path) -> Result<Sink, ReportError> {
    File::create(path)
        .map(|f| Box::new(BufWriter::new(f)) as Sink)
        .map_err(|source| ReportError::Create {
            path: path.to_path_buf(),
            source,
        })
}

/// Checks that `path` can be written without emptying it: opened for writing,
/// created if missing. Returns whether it was created.
fn check(path: &Path) -> Result<bool, ReportError> {
    let existed = path.exists();
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map(|_| !existed)
        .map_err(|source| ReportError::Create {
            path: path.to_path_buf(),
            source,
        })
}

impl Reporter {
    /// The reporter the command line asks for: stdout plus the files in `opts`.
    /// Each file is checked now (opened for writing, not emptied), so a bad path
    /// fails before the run starts; it is created when the first interval or
    /// the end of the run has something for it. `started_at` is the wall-clock
    /// time of `origin` (for the HDR log's StartTime).
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
        let mut files = Unopened {
            started_at: Some(started_at),
            ..Unopened::default()
        };
        for (path, slot) in [
            (&opts.csv, &mut files.csv),
            (&opts.hdr_log, &mut files.hdr_log),
            (&opts.summary_json, &mut files.summary_json),
            (&opts.html, &mut files.html),
        ] {
            let Some(p) = path else { continue };
            match check(p) {
                Ok(created) => {
                    if created {
                        files.created.push(p.clone());
                    }
                    *slot = Some(p.clone());
                }
                Err(e) => {
                    Self::remove_created(&files.created);
                    return Err(e);
                }
            }
        }
        r.unopened = Some(files);
        Ok(r)
    }

    /// Ends a run that was refused before anything ran: the report files the
    /// check created are removed and existing ones are left as they were, so no
    /// empty or header-only report is left behind. Does nothing for files
    /// already written.
    pub fn abandon(&mut self) {
        if let Some(files) = self.unopened.take() {
            Self::remove_created(&files.created);
        }
    }

    fn remove_created(paths: &[PathBuf]) {
        for p in paths {
            // Only an empty file is ours to remove.
            if std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.len() == 0) {
                let _ = std::fs::remove_file(p);
            }
        }
    }

    /// Creates the files not created yet; a file that cannot be created is
    /// recorded as failed and the others are created.
    pub(super) fn open_files(&mut self) {
        let Some(files) = self.unopened.take() else {
            return;
        };
        let started_at = files.started_at.unwrap_or_else(SystemTime::now);
        let (origin, every) = (self.origin, self.every);
        if let Some(p) = &files.csv {
            match create(p).and_then(|out| {
                csv::CsvLog::new(out, origin).map_err(|source| ReportError::Write {
                    path: p.clone(),
                    source,
                })
            }) {
                Ok(log) => {
                    self.csv = Some(Named {
                        path: p.clone(),
                        inner: log,
                    })
                }
                Err(e) => self.deferred.push(e),
            }
        }
        if let Some(p) = &files.hdr_log {
            match create(p).and_then(|out| {
                hdr::HdrLog::new(out, origin, started_at)
                    .map(|l| l.report_interval(every))
                    .map_err(|source| ReportError::Write {
                        path: p.clone(),
                        source,
                    })
            }) {
                Ok(log) => {
                    self.hdr = Some(Named {
                        path: p.clone(),
                        inner: log,
                    })
                }
                Err(e) => self.deferred.push(e),
            }
        }
        if let Some(p) = &files.summary_json {
            match create(p) {
                Ok(out) => {
                    self.summary_json = Some(Named {
                        path: p.clone(),
                        inner: out,
                    })
                }
                Err(e) => self.deferred.push(e),
            }
        }
        if let Some(p) = &files.html {
            match create(p) {
                Ok(out) => {
                    self.html = Some(Named {
                        path: p.clone(),
                        inner: (out, model::HtmlLog::new(origin)),
                    })
                }
                Err(e) => self.deferred.push(e),
            }
        }
    }

    /// Also write the CSV log to `out` (named `path` in errors); writes its header now.
    #[cfg(test)]
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
    #[cfg(test)]
    pub fn hdr_log_to(
        mut self,
        path: &Path,
        out: Sink,
        started_at: SystemTime,
    ) -> Result<Self, ReportError> {
        let every = self.every;
        let log = hdr::HdrLog::new(out, self.origin, started_at)
            .map(|l| l.report_interval(every))
            .map_err(|source| ReportError::Write {
                path: path.to_path_buf(),
                source,
            })?;
        self.hdr = Some(Named {
            path: path.to_path_buf(),
            inner: log,
        });
        Ok(self)
    }

    /// Also write the summary JSON to `out` at [`finish`](Self::finish).
    #[cfg(test)]
    pub fn summary_json_to(mut self, path: &Path, out: Sink) -> Self {
        self.summary_json = Some(Named {
            path: path.to_path_buf(),
            inner: out,
        });
        self
    }

    /// Also write the HTML report to `out` at [`finish`](Self::finish); until then
    /// it gathers each interval's figures (a few numbers per activity).
    #[cfg(test)]
    pub fn html_to(mut self, path: &Path, out: Sink) -> Self {
        self.html = Some(Named {
            path: path.to_path_buf(),
            inner: (out, model::HtmlLog::new(self.origin)),
        });
        self
    }

    /// The HTML report's data gathered so far (`None` without `--html`).
    #[cfg(test)]
    pub fn html_data(&self) -> Option<&model::RunData> {
        self.html.as_ref().map(|h| h.inner.1.data())
    }
}
