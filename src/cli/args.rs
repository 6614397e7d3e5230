//! The command line: clap definitions for `run`, `check`, `list`, `calibrate` and
//! `report` (`findmax`'s are in `findmax.rs`), and the checks clap cannot do alone
//! (parameters, the control address).
//!
//! Exit codes: [`EXIT_OK`] (0) on success, [`EXIT_RUN_FAILED`] (1) when a run
//! started but failed, [`EXIT_BAD_INPUT`] (2) for bad input: clap's own usage
//! errors already exit 2 and print once.

//!
//! Where the pieces live: the structs clap derives from are here; their help
//! texts (the examples after each command's options) in `args/help.rs`; the
//! value parsers and the settings derived from them in `args/parse.rs`.

mod help;
mod parse;
#[cfg(test)]
mod tests;

use super::metrics::BucketScheme;
use clap::{Args, Parser, Subcommand};
use help::*;
use paceline::Waiting;
use parse::{parse_interval, parse_run_duration, parse_stop_timeout, parse_waiting};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use parse::{STOP_TIMEOUT_DEFAULT, parse_control_addr, parse_run_input, stop_grace_for};

/// Exit code: everything went well.
pub const EXIT_OK: u8 = 0;
/// Exit code: the run started but failed (an activity errored out, a report could
/// not be written).
pub const EXIT_RUN_FAILED: u8 = 1;
/// Exit code: bad input (usage, a bad file, a bad parameter); nothing ran.
pub const EXIT_BAD_INPUT: u8 = 2;
/// Exit code: the run went well but a threshold failed (`--threshold`, a file's
/// `thresholds:`), `compare --fail-if` found a regression, or `findmax` found no
/// passing step.
pub const EXIT_THRESHOLDS: u8 = 3;

/// paceline: a nanosecond time-slice pacer and load-testing engine.
#[derive(Debug, Parser)]
#[command(name = "paceline", version, after_help = TOP_EXAMPLES)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the activities of a workload file (or given as parameters).
    #[command(after_help = RUN_EXAMPLES)]
    Run(RunArgs),
    /// Find the highest rate the system sustains: steps that double the rate
    /// until one fails, then bisect to within 2 %.
    #[command(after_help = FINDMAX_EXAMPLES)]
    Findmax(super::findmax::FindmaxArgs),
    /// Validate a workload file without running it.
    #[command(after_help = CHECK_EXAMPLES)]
    Check(CheckArgs),
    /// List the drivers and what they can do.
    #[command(after_help = LIST_EXAMPLES)]
    List,
    /// Measure this machine's clock and sleep costs and recommend a waiting strategy.
    #[command(after_help = CALIBRATE_EXAMPLES)]
    Calibrate,
    /// Build the HTML report of a run from its HDR log (and summary JSON), or of
    /// a fleet from its processes' HDR logs merged.
    #[command(after_help = REPORT_EXAMPLES)]
    Report(ReportArgs),
    /// Compare two runs' summaries side by side, with the change in percent;
    /// `--fail-if` gates a regression (exit 3).
    #[command(after_help = COMPARE_EXAMPLES)]
    Compare(super::compare::CompareArgs),
}

/// `paceline report LOG.hlog... [--summary-json S.json] -o REPORT.html`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The HDR interval log the run wrote (`paceline run --hdr-log`); several
    /// logs (or a directory: its `*.hlog` files; or a quoted `dir/pod-*.hlog`),
    /// one per process of a fleet,
    /// give one report of the whole fleet, their intervals aligned by wall time.
    #[arg(value_name = "LOG.hlog", required = true, num_args = 1..)]
    pub hdr_logs: Vec<PathBuf>,

    /// The run's summary JSON (`paceline run --summary-json`), for the summary
    /// table's counts and rates (with one log only: a summary is one process's).
    #[arg(long, value_name = "PATH")]
    pub summary_json: Option<PathBuf>,

    /// Where to write the report.
    #[arg(short, long, value_name = "REPORT.html")]
    pub output: PathBuf,
}

/// `paceline run [FILE.yaml] [NAME=VALUE]...` and its options.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The workload file (optional when the parameters say everything), then
    /// optionally a scenario (SCENARIO or SCENARIO.STEP), then parameters as
    /// NAME=VALUE.
    #[arg(value_name = "FILE.yaml [SCENARIO[.STEP]] | NAME=VALUE", value_parser = parse_run_input)]
    pub inputs: Vec<RunInput>,

    /// How often to print interval lines and write CSV rows and HDR histograms.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_interval)]
    pub report_interval: Duration,

    /// Write the end-of-run summary as JSON to PATH.
    #[arg(long, value_name = "PATH")]
    pub summary_json: Option<PathBuf>,

    /// Write one CSV row per activity per interval (and one per event) to PATH.
    #[arg(long, value_name = "PATH")]
    pub csv: Option<PathBuf>,

    /// Write an HdrHistogram interval log (service, wait, response per activity, and queue
    /// and dispatch for a paced one) to PATH.
    #[arg(long, value_name = "PATH")]
    pub hdr_log: Option<PathBuf>,

    /// Write an HTML report (plots and summary, one self-contained page) to PATH at
    /// the end of the run.
    #[arg(long, value_name = "PATH")]
    pub html: Option<PathBuf>,

    /// Serve the HTTP control endpoint on ADDR (PORT, HOST:PORT or IP:PORT; loopback
    /// unless --control-allow-remote).
    #[arg(long, value_name = "ADDR", value_parser = parse_control_addr)]
    pub control: Option<SocketAddr>,

    /// Allow --control to listen on a non-loopback address. Anyone who can reach it
    /// can change rates and stop activities.
    #[arg(long, requires = "control")]
    pub control_allow_remote: bool,

    /// Serve a read-only endpoint on ADDR (PORT, HOST:PORT or IP:PORT; PORT alone
    /// is loopback): `GET /metrics` for Prometheus, and the `GET` status routes.
    #[arg(long, value_name = "ADDR", value_parser = parse_control_addr)]
    pub metrics: Option<SocketAddr>,

    /// The bounds of the `/metrics` latency histograms: `fine` (10 per decade,
    /// 1 µs to 10 s; the default), `coarse` (1, 2.5, 5 per decade: fewer
    /// series, quantiles off by up to half) or `native` (Prometheus native
    /// histograms, 4 buckets per power of two, served in protobuf to a scraper
    /// that asks for it; the fine buckets beside them and in the text).
    #[arg(long, value_name = "SCHEME", default_value = "fine", value_parser = BucketScheme::parse)]
    pub metrics_buckets: BucketScheme,

    /// How paced workers wait for their slots: `adaptive` (the default), `sleep`,
    /// `spin_sleep` or `spin` (`paceline calibrate` recommends one for this machine).
    #[arg(long, value_name = "STRATEGY", value_parser = parse_waiting)]
    pub waiting: Option<Waiting>,

    /// Show a progress line (the default when stdout is a terminal).
    #[arg(long, overrides_with = "no_progress")]
    pub progress: bool,

    /// Never show a progress line.
    #[arg(long, overrides_with = "progress")]
    pub no_progress: bool,

    /// After an interrupt (Ctrl-C, SIGTERM) or a failure, wait at most this long for
    /// ops in flight to end; then write the reports anyway and exit. Ops in flight
    /// on the async runner (`concurrency`) are cancelled just before it, each
    /// counted as `cancelled`. A second Ctrl-C exits at once.
    #[arg(long, value_name = "DURATION", default_value = STOP_TIMEOUT_DEFAULT, value_parser = parse_stop_timeout)]
    pub stop_timeout: Duration,

    /// After the run (its reports written), keep serving `--metrics` and
    /// `--control` for DURATION (such as 30s): `GET /metrics` and `GET /activities`
    /// answer with the final numbers, and `paceline_run_ended` reads 1, so that
    /// Prometheus scrapes the end of the run. Ctrl-C ends it at once. By
    /// default, none: the process exits when the reports are written.
    #[arg(long, value_name = "DURATION", value_parser = parse_stop_timeout)]
    pub linger: Option<Duration>,

    /// End the whole run after DURATION (such as 10m), with exit code 0: every
    /// activity still running ends as having run its duration, and a scenario
    /// stops where it is. With one activity and no scenario it is the activity's
    /// `duration` param. An activity without `cycles` runs until then.
    #[arg(long, value_name = "DURATION", value_parser = parse_run_duration)]
    pub duration: Option<Duration>,

    /// A pass/fail criterion, checked on every activity (or on one, with an
    /// `ALIAS:` prefix) at the end of the run: `response.p99<50ms`, `errors<1%`,
    /// `achieved>=99%`, `verdict==on-schedule`… Repeatable; a failing one makes
    /// the exit code 3. Add ` abort_on_fail` to check it at every interval and
    /// stop the run as soon as it fails.
    #[arg(long, value_name = "EXPR")]
    pub threshold: Vec<String>,

    /// Write a JUnit XML report to PATH: one test case per activity and per
    /// threshold, for a CI server's test view.
    #[arg(long, value_name = "PATH")]
    pub junit: Option<PathBuf>,
}

/// `paceline check [FILE.yaml] [NAME=VALUE]...`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The workload file or a bundled activity (optional when the parameters
    /// say everything, as for `run`), then parameters to apply before
    /// validating, as NAME=VALUE.
    #[arg(value_name = "FILE.yaml | NAME=VALUE", value_parser = parse_run_input, required = true)]
    pub inputs: Vec<RunInput>,
}

impl CheckArgs {
    /// The file, if any, and the parameters; an error (exit 2) when something
    /// that is not `NAME=VALUE` comes anywhere but first.
    pub fn file_and_params(&self) -> Result<RunInputs, String> {
        let mut out = RunInputs::default();
        for (i, input) in self.inputs.iter().enumerate() {
            match input {
                RunInput::File(p) if i == 0 => out.file = Some(p.clone()),
                RunInput::File(p) => {
                    return Err(format!(
                        "`{}` is not a parameter: check takes one file (or bundled activity) \
                         first, then parameters as NAME=VALUE (such as cycles=1000)",
                        shown_word(&p.display().to_string())
                    ));
                }
                RunInput::Param(k, v) => out.params.push((k.clone(), v.clone())),
            }
        }
        Ok(out)
    }
}

/// One positional input of `run`: a file or a parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunInput {
    /// A workload file.
    File(PathBuf),
    /// A `NAME=VALUE` parameter.
    Param(String, String),
}

/// The positional inputs of `run`, sorted out.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RunInputs {
    /// The workload file, if one was given.
    pub file: Option<PathBuf>,
    /// The scenario (`SCENARIO` or `SCENARIO.STEP`), the word after the file.
    pub scenario: Option<String>,
    /// The parameters, in the order given.
    pub params: Vec<(String, String)>,
}

impl RunArgs {
    /// The file and the parameters; an error (exit 2) when something that is not
    /// `NAME=VALUE` comes anywhere but first.
    pub fn inputs(&self) -> Result<RunInputs, String> {
        let mut out = RunInputs::default();
        for (i, input) in self.inputs.iter().enumerate() {
            match input {
                RunInput::File(p) if i == 0 => out.file = Some(p.clone()),
                // NB5's `run FILE SCENARIO` and `run FILE SCENARIO.STEP`.
                RunInput::File(p) if i == 1 && out.file.is_some() => {
                    out.scenario = Some(p.display().to_string())
                }
                RunInput::File(p) => {
                    return Err(format!(
                        "`{}` is not a parameter: after the file (and a scenario name), give \
                         parameters as NAME=VALUE (such as cycles=1000); the file, if any, \
                         comes first",
                        shown_word(&p.display().to_string())
                    ));
                }
                RunInput::Param(k, v) => out.params.push((k.clone(), v.clone())),
            }
        }
        Ok(out)
    }

    /// Refuses two report options that name one file (audit p17, M6): the
    /// second report would overwrite the first, silently. Paths are compared
    /// after resolving the directory (`./s.json` and `/tmp/x/s.json` are one
    /// file when run in `/tmp/x`); the message names both options.
    pub fn report_paths_clash(&self) -> Result<(), String> {
        let named = [
            ("--summary-json", &self.summary_json),
            ("--csv", &self.csv),
            ("--hdr-log", &self.hdr_log),
            ("--html", &self.html),
            ("--junit", &self.junit),
        ];
        let mut seen: Vec<(&str, &PathBuf, PathBuf)> = Vec::new();
        for (flag, path) in named {
            let Some(path) = path else { continue };
            let key = same_file_key(path);
            if let Some((first, first_path, _)) = seen.iter().find(|(_, _, k)| *k == key) {
                return Err(format!(
                    "{first} {} and {flag} {} name the same file: one report would overwrite \
                     the other; give each report its own path",
                    first_path.display(),
                    path.display()
                ));
            }
            seen.push((flag, path, key));
        }
        Ok(())
    }

    /// Whether to show the progress line: `Some` when a flag said so, `None` to
    /// decide by whether stdout is a terminal.
    pub fn progress(&self) -> Option<bool> {
        if self.progress {
            Some(true)
        } else if self.no_progress {
            Some(false)
        } else {
            None
        }
    }
}

/// `path` with its directory resolved (links, `.`, `..`), for telling whether
/// two paths name one file; as given (made absolute) when the directory does
/// not exist (the report's own check says so then).
fn same_file_key(path: &Path) -> PathBuf {
    let name = path.file_name().map(ToOwned::to_owned).unwrap_or_default();
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    match dir.canonicalize() {
        Ok(d) => {
            let full = d.join(&name);
            // A link to a file elsewhere names that file.
            full.canonicalize().unwrap_or(full)
        }
        Err(_) => std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()),
    }
}

/// A word of the command line as a message may echo it: a URL's password
/// (one given without `url=`) written `***`, as the recorded command line
/// writes it ([`paceline::mask_secrets`]).
pub(crate) fn shown_word(word: &str) -> String {
    paceline::mask_secrets(&[word]).remove(0)
}
