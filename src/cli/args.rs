//! The command line: clap definitions for `run`, `check`, `list`, `calibrate` and
//! `report` (`findmax`'s are in `findmax.rs`), and the checks clap cannot do alone
//! (parameters, the control address).
//!
//! Exit codes: [`EXIT_OK`] (0) on success, [`EXIT_RUN_FAILED`] (1) when a run
//! started but failed, [`EXIT_BAD_INPUT`] (2) for bad input: clap's own usage
//! errors already exit 2 and print once.

use super::metrics::BucketScheme;
use clap::{Args, Parser, Subcommand};
use paceline::Waiting;
use paceline::nanos::parse_duration_or_seconds;
use std::net::{Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

/// Exit code: everything went well.
pub const EXIT_OK: u8 = 0;
/// Exit code: the run started but failed (an activity errored out, a report could
/// not be written).
pub const EXIT_RUN_FAILED: u8 = 1;
/// Exit code: bad input (usage, a bad file, a bad parameter); nothing ran.
pub const EXIT_BAD_INPUT: u8 = 2;
/// Exit code: the run went well but a threshold failed (`--threshold`, a file's
/// `thresholds:`), or `compare --fail-if` found a regression.
pub const EXIT_THRESHOLDS: u8 = 3;

const TOP_EXAMPLES: &str = "\
Examples:
  paceline run workload.yaml                  run the activities in a file
  paceline run workload.yaml rate=5000 threads=8
  paceline findmax workload.yaml --step 5s    the highest rate the system sustains
  paceline check workload.yaml                validate a file without running it
  paceline list                               list the drivers and their ops
  paceline calibrate                          measure this machine's timers
  paceline report run.hlog -o report.html     an HTML report from a run's files
  paceline compare base.json run.json         two runs side by side, a regression gate

Exit codes: 0 success, 1 run failed, 2 bad input, 3 a threshold failed.";

const RUN_EXAMPLES: &str = "\
Examples:
  paceline run workload.yaml
  paceline run workload.yaml cycles=1M rate=10K,1.0 threads=4
  paceline run nb5-workload.yaml default driver=stdout    a scenario (NB5 form)
  paceline run nb5-workload.yaml default.rampup rampup-cycles=10   one step of it
  paceline run driver=diag cycles=100000 rate=10000
  paceline run workload.yaml --report-interval 1s --summary-json out.json
  paceline run workload.yaml --csv intervals.csv --hdr-log latencies.hlog
  paceline run workload.yaml --html report.html   plots and summary in one page
  paceline run workload.yaml --control 127.0.0.1:7878
      then: curl -X PUT -d '20000 over 30s' localhost:7878/activities/a/rate
  paceline run workload.yaml --metrics 9464       Prometheus scrapes localhost:9464/metrics
  paceline run driver=diag rate=1000 duration=3s  ends by itself after 3 s
  paceline run workload.yaml --duration 10m --threshold 'response.p99<50ms' \\
      --threshold 'errors<1%' --junit junit.xml   a CI gate: exit 3 when one fails

Parameters (NAME=VALUE) override the file's params in the order given.";

const FINDMAX_EXAMPLES: &str = "\
Examples:
  paceline findmax workload.yaml                      10s steps from the file's rate
  paceline findmax workload.yaml --slo-p99 50ms       a step also fails over 50ms p99
  paceline findmax workload.yaml --html steps.html    the steps plotted on one page
  paceline findmax driver=diag latency=2ms threads=2 rate=250 --step 2s --settle 500ms
  paceline findmax workload.yaml errors=count --max-error-rate 0.001 --summary-json max.json

A step passes when the achieved rate is within 1 % of its target, response p99 is
under --slo-p99 (if given) and at most --max-error-rate of its ops fail. The result
names what limited it: the system, the SLO, or the generator (then the system's own
limit is higher than this run can show).";

const CHECK_EXAMPLES: &str = "\
Examples:
  paceline check workload.yaml
  paceline check workload.yaml cycles=1M      check with overrides applied

Exit code 0 when the file is valid, 2 with every problem listed when it is not.";

const REPORT_EXAMPLES: &str = "\
Examples:
  paceline run workload.yaml --hdr-log run.hlog --summary-json run.json
  paceline report run.hlog --summary-json run.json -o report.html

Exit code 0 when the report is written, 2 when a file cannot be read (the message
names it, and the line).";

const COMPARE_EXAMPLES: &str = "\
Examples:
  paceline compare baseline.json run.json
  paceline compare baseline.json run.json --fail-if 'response.p99>+10%' --fail-if 'rate<-5%'
  paceline compare base.json run.json --hdr-logs base.hlog run.hlog --fail-if 'response.p99>+10%'

With both runs' HDR logs, every latency row says whether its change is significant
(95% order-statistic intervals, corrected for drift between intervals) and a
latency gate trips only on a significant change. Exit code 0, 3 when a gate trips,
2 when a file cannot be read or a gate is malformed.";

const LIST_EXAMPLES: &str = "\
Examples:
  paceline list";

const CALIBRATE_EXAMPLES: &str = "\
Examples:
  paceline calibrate

Takes about two seconds: clock read cost, sleep overshoot, spin-sleep accuracy,
the finest spacing the pacer holds here, and a recommended waiting strategy.";

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
    /// Build the HTML report of a run from its HDR log (and summary JSON).
    #[command(after_help = REPORT_EXAMPLES)]
    Report(ReportArgs),
    /// Compare two runs' summaries side by side, with the change in percent;
    /// `--fail-if` gates a regression (exit 3).
    #[command(after_help = COMPARE_EXAMPLES)]
    Compare(super::compare::CompareArgs),
}

/// `paceline report LOG.hlog [--summary-json S.json] -o REPORT.html`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The HDR interval log the run wrote (`paceline run --hdr-log`).
    #[arg(value_name = "LOG.hlog")]
    pub hdr_log: PathBuf,

    /// The run's summary JSON (`paceline run --summary-json`), for the summary
    /// table's counts and rates.
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
                        p.display()
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
                        p.display()
                    ));
                }
                RunInput::Param(k, v) => out.params.push((k.clone(), v.clone())),
            }
        }
        Ok(out)
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

/// A `run` input: `NAME=VALUE` is a parameter, anything else a file.
pub fn parse_run_input(text: &str) -> Result<RunInput, String> {
    if text.contains('=') {
        let (k, v) = parse_param(text)?;
        Ok(RunInput::Param(k, v))
    } else {
        Ok(RunInput::File(PathBuf::from(text)))
    }
}

/// Parses `NAME=VALUE`: the name is letters, digits, `_`, `-` and `.`; the value
/// is everything after the first `=` (it may be empty or hold more `=`).
pub fn parse_param(text: &str) -> Result<(String, String), String> {
    let Some((name, value)) = text.split_once('=') else {
        return Err(format!(
            "malformed parameter `{text}`: write NAME=VALUE, such as cycles=1000"
        ));
    };
    let name = name.trim();
    if name.is_empty() {
        return Err(format!(
            "malformed parameter `{text}`: the name before `=` is empty; write NAME=VALUE, \
             such as cycles=1000"
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        return Err(format!(
            "malformed parameter `{text}`: the name may not contain `{c}`; names are letters, \
             digits, `_`, `-` and `.`"
        ));
    }
    Ok((name.to_string(), value.to_string()))
}

/// A report interval: a duration of at least 1 ms; a bare number is seconds, as
/// in a scenario's `wait: 1`.
fn parse_interval(text: &str) -> Result<Duration, String> {
    let d = parse_duration_or_seconds(text).map_err(|e| e.to_string())?;
    if d < Duration::from_millis(1) {
        return Err(format!(
            "report interval `{text}` is too short: use at least 1ms, such as 1s or 10s"
        ));
    }
    Ok(d)
}

/// A run's duration: more than 0; a bare number is seconds.
fn parse_run_duration(text: &str) -> Result<Duration, String> {
    let d = parse_duration_or_seconds(text).map_err(|e| e.to_string())?;
    if d.is_zero() {
        return Err(format!(
            "duration `{text}` would end the run before it starts: give more than 0, such as \
             30s or 10m"
        ));
    }
    Ok(d)
}

/// `--stop-timeout`'s default, the engine's own stop grace
/// ([`paceline::DEFAULT_STOP_GRACE`]; a test pins that they agree).
pub const STOP_TIMEOUT_DEFAULT: &str = "10s";

/// The engine's stop grace for a `--stop-timeout` of `timeout`: a little less
/// (a tenth, at most 250 ms), so that the async runner's ops in flight are
/// cancelled and counted before the report loop stops waiting for them, and the
/// process still exits within `timeout`. One setting bounds a stop (issue 21).
pub fn stop_grace_for(timeout: Duration) -> Duration {
    timeout.saturating_sub((timeout / 10).min(Duration::from_millis(250)))
}

/// A stop timeout: a duration, 0 allowed (write the reports at once).
fn parse_stop_timeout(text: &str) -> Result<Duration, String> {
    paceline::nanos::parse_duration_or_seconds(text).map_err(|e| e.to_string())
}

/// The waiting presets, by the names `--waiting` takes.
pub const WAITING: &[(&str, Waiting)] = &[
    ("adaptive", Waiting::adaptive()),
    ("sleep", Waiting::sleep()),
    ("spin_sleep", Waiting::spin_sleep()),
    ("spin", Waiting::spin()),
];

/// A waiting preset by name.
fn parse_waiting(text: &str) -> Result<Waiting, String> {
    WAITING
        .iter()
        .find(|(n, _)| *n == text.trim())
        .map(|(_, w)| *w)
        .ok_or_else(|| {
            format!(
                "unknown waiting strategy `{text}`: use `adaptive`, `sleep`, `spin_sleep` or `spin`"
            )
        })
}

/// A control address: `PORT` (loopback), `localhost:PORT`, `IP:PORT` or `HOST:PORT`.
pub fn parse_control_addr(text: &str) -> Result<SocketAddr, String> {
    let t = text.trim();
    let how = "write PORT, IP:PORT or HOST:PORT, such as 7878 or 127.0.0.1:7878";
    if let Ok(port) = t.trim_start_matches(':').parse::<u16>() {
        return Ok(SocketAddr::from((Ipv4Addr::LOCALHOST, port)));
    }
    if let Ok(addr) = t.parse::<SocketAddr>() {
        return Ok(addr);
    }
    if let Some(port) = t.strip_prefix("localhost:") {
        let port: u16 = port
            .parse()
            .map_err(|_| format!("`{text}` is not an address: {how}"))?;
        return Ok(SocketAddr::from((Ipv4Addr::LOCALHOST, port)));
    }
    if !t.contains(':') {
        return Err(format!("`{text}` is not an address: {how}"));
    }
    t.to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| format!("cannot resolve `{text}`: {how}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("paceline").chain(args.iter().copied()))
    }

    fn run(args: &[&str]) -> RunArgs {
        match parse(args).map(|c| c.command) {
            Ok(Command::Run(r)) => r,
            other => panic!("not a run: {other:?}"),
        }
    }

    /// Issue 21: `--stop-timeout` and the engine's stop grace were two settings,
    /// each 10 s by default; the grace now comes from the timeout.
    #[test]
    fn the_stop_timeout_sets_the_stop_grace_just_under_it() {
        let default = run(&["run", "driver=diag"]).stop_timeout;
        assert_eq!(default, paceline::DEFAULT_STOP_GRACE);
        assert_eq!(
            stop_grace_for(Duration::from_secs(1)),
            Duration::from_millis(900)
        );
        assert_eq!(
            stop_grace_for(Duration::from_secs(10)),
            Duration::from_millis(9750)
        );
        assert_eq!(stop_grace_for(Duration::ZERO), Duration::ZERO);
        let two = run(&["run", "driver=diag", "--stop-timeout", "2s"]).stop_timeout;
        assert_eq!(stop_grace_for(two), Duration::from_millis(1800));
    }

    #[test]
    fn the_definitions_are_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn run_with_a_file_and_ordered_parameters() {
        let r = run(&["run", "w.yaml", "rate=5000,1.0", "threads=8", "rate=6000"]);
        let inputs = r.inputs().unwrap_or_default();
        assert_eq!(inputs.file, Some(PathBuf::from("w.yaml")));
        assert_eq!(
            inputs.params,
            [
                ("rate".to_string(), "5000,1.0".to_string()),
                ("threads".to_string(), "8".to_string()),
                ("rate".to_string(), "6000".to_string()),
            ]
        );
        assert_eq!(r.report_interval, Duration::from_secs(10));
        assert_eq!(r.progress(), None);
        assert_eq!(
            (&r.summary_json, &r.csv, &r.hdr_log, &r.control),
            (&None, &None, &None, &None)
        );
    }

    #[test]
    fn run_without_a_file() {
        let r = run(&["run", "driver=diag", "cycles=10", "op=a=b"]);
        let inputs = r.inputs().unwrap_or_default();
        assert_eq!(inputs.file, None);
        assert_eq!(inputs.params[2], ("op".to_string(), "a=b".to_string()));
    }

    #[test]
    fn run_with_every_option() {
        let r = run(&[
            "run",
            "w.yaml",
            "--report-interval",
            "500ms",
            "--summary-json",
            "s.json",
            "--csv",
            "i.csv",
            "--hdr-log",
            "l.hlog",
            "--html",
            "r.html",
            "--control",
            "0.0.0.0:7878",
            "--control-allow-remote",
            "--metrics",
            "9464",
            "--no-progress",
        ]);
        assert_eq!(r.report_interval, Duration::from_millis(500));
        assert_eq!(r.summary_json, Some(PathBuf::from("s.json")));
        assert_eq!(r.csv, Some(PathBuf::from("i.csv")));
        assert_eq!(r.hdr_log, Some(PathBuf::from("l.hlog")));
        assert_eq!(r.html, Some(PathBuf::from("r.html")));
        assert_eq!(r.control, "0.0.0.0:7878".parse().ok());
        assert!(r.control_allow_remote);
        assert_eq!(r.metrics, "127.0.0.1:9464".parse().ok());
        assert_eq!(r.progress(), Some(false));
    }

    #[test]
    fn report_takes_a_log_an_optional_summary_and_an_output() {
        let cli = Cli::try_parse_from([
            "paceline",
            "report",
            "run.hlog",
            "--summary-json",
            "s.json",
            "-o",
            "r.html",
        ]);
        match cli.map(|c| c.command) {
            Ok(Command::Report(r)) => {
                assert_eq!(r.hdr_log, PathBuf::from("run.hlog"));
                assert_eq!(r.summary_json, Some(PathBuf::from("s.json")));
                assert_eq!(r.output, PathBuf::from("r.html"));
            }
            other => panic!("{other:?}"),
        }
        assert!(Cli::try_parse_from(["paceline", "report", "run.hlog"]).is_err());
    }

    #[test]
    fn every_preset_calibrate_recommends_is_a_waiting_flag() {
        // Regression (issue 17): calibrate recommended `waiting=spin`, which no
        // option selected.
        for name in ["adaptive", "spin_sleep", "spin", "sleep"] {
            assert!(run(&["run", "--waiting", name]).waiting.is_some(), "{name}");
        }
        assert!(parse(&["run", "--waiting", "fast"]).is_err());
    }

    #[test]
    fn a_bare_report_interval_is_seconds() {
        // Regression (issue 17): `--report-interval 1` was refused while `wait: 1`
        // means one second.
        assert_eq!(
            run(&["run", "--report-interval", "1"]).report_interval,
            Duration::from_secs(1)
        );
        assert_eq!(
            run(&["run", "--report-interval", "0.5"]).report_interval,
            Duration::from_millis(500)
        );
    }

    #[test]
    fn the_last_progress_flag_wins() {
        assert_eq!(
            run(&["run", "--no-progress", "--progress"]).progress(),
            Some(true)
        );
        assert_eq!(
            run(&["run", "--progress", "--no-progress"]).progress(),
            Some(false)
        );
    }

    #[test]
    fn a_file_after_parameters_is_refused_with_a_fix() {
        let r = run(&["run", "cycles=10", "w.yaml"]);
        let err = r.inputs().err().unwrap_or_default();
        assert_eq!(
            err,
            "`w.yaml` is not a parameter: after the file (and a scenario name), give \
             parameters as NAME=VALUE (such as cycles=1000); the file, if any, comes first"
        );
        let r = run(&["run", "w.yaml", "main", "extra"]);
        assert!(r.inputs().is_err());
    }

    #[test]
    fn the_word_after_the_file_is_a_scenario() {
        let r = run(&["run", "w.yaml", "default.rampup", "cycles=5"]);
        let inputs = r.inputs().unwrap_or_default();
        assert_eq!(inputs.file, Some(PathBuf::from("w.yaml")));
        assert_eq!(inputs.scenario.as_deref(), Some("default.rampup"));
        assert_eq!(inputs.params, [("cycles".to_string(), "5".to_string())]);
    }

    #[test]
    fn malformed_parameters_are_usage_errors() {
        for (arg, says) in [
            ("=5", "the name before `=` is empty"),
            ("cy cles=5", "the name may not contain ` `"),
        ] {
            let err = parse(&["run", arg])
                .err()
                .map(|e| (e.exit_code(), e.to_string()));
            let (code, text) = err.unwrap_or_default();
            assert_eq!(code, 2, "{arg}");
            assert!(text.contains(says), "{arg}: {text}");
        }
        assert_eq!(
            parse_param("cycles"),
            Err("malformed parameter `cycles`: write NAME=VALUE, such as cycles=1000".into())
        );
        assert_eq!(parse_param(" a =b"), Ok(("a".into(), "b".into())));
        assert_eq!(parse_param("a="), Ok(("a".into(), String::new())));
    }

    #[test]
    fn usage_errors_exit_2_and_help_exits_0() {
        let code = |args: &[&str]| parse(args).err().map(|e| e.exit_code());
        assert_eq!(code(&["run", "--bogus"]), Some(2));
        assert_eq!(code(&["frobnicate"]), Some(2));
        assert_eq!(code(&[]), Some(2));
        assert_eq!(code(&["check"]), Some(2));
        assert_eq!(code(&["run", "--report-interval", "ten"]), Some(2));
        assert_eq!(code(&["run", "--report-interval", "0s"]), Some(2));
        assert_eq!(code(&["run", "--control-allow-remote"]), Some(2));
        assert_eq!(code(&["run", "--control", "nowhere"]), Some(2));
        assert_eq!(code(&["run", "--metrics", "nowhere"]), Some(2));
        assert_eq!(code(&["--help"]), Some(0));
        assert_eq!(code(&["run", "--help"]), Some(0));
        assert_eq!(code(&["--version"]), Some(0));
    }

    #[test]
    fn check_list_and_calibrate() {
        match parse(&["check", "w.yaml", "cycles=5"]).map(|c| c.command) {
            Ok(Command::Check(c)) => {
                let i = c.file_and_params().unwrap_or_default();
                assert_eq!(i.file, Some(PathBuf::from("w.yaml")));
                assert_eq!(i.params, [("cycles".to_string(), "5".to_string())]);
            }
            other => panic!("{other:?}"),
        }
        // Issue 24 item 16: params alone, as `run` takes them.
        match parse(&["check", "driver=diag", "cycles=5"]).map(|c| c.command) {
            Ok(Command::Check(c)) => {
                let i = c.file_and_params().unwrap_or_default();
                assert_eq!(i.file, None);
                assert_eq!(i.params.len(), 2);
            }
            other => panic!("{other:?}"),
        }
        match parse(&["check", "a.yaml", "b.yaml"]).map(|c| c.command) {
            Ok(Command::Check(c)) => {
                let e = c.file_and_params().unwrap_err();
                assert!(e.contains("`b.yaml` is not a parameter"), "{e}");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            parse(&["list"]).map(|c| c.command),
            Ok(Command::List)
        ));
        assert!(matches!(
            parse(&["calibrate"]).map(|c| c.command),
            Ok(Command::Calibrate)
        ));
    }

    #[test]
    fn every_command_has_examples_in_its_help() {
        let mut cmd = Cli::command();
        assert!(cmd.render_long_help().to_string().contains("Examples:"));
        for sub in ["run", "check", "list", "calibrate"] {
            let help = cmd
                .find_subcommand_mut(sub)
                .map(|c| c.render_long_help().to_string())
                .unwrap_or_default();
            assert!(help.contains("Examples:"), "{sub}: {help}");
            assert!(help.contains(&format!("paceline {sub}")), "{sub}");
        }
    }

    #[test]
    fn control_addresses() {
        let local = |p: u16| Ok(SocketAddr::from((Ipv4Addr::LOCALHOST, p)));
        assert_eq!(parse_control_addr("7878"), local(7878));
        assert_eq!(parse_control_addr(":7878"), local(7878));
        assert_eq!(parse_control_addr("localhost:7878"), local(7878));
        assert_eq!(parse_control_addr("127.0.0.1:0"), local(0));
        assert_eq!(
            parse_control_addr("[::1]:80"),
            Ok("[::1]:80".parse().unwrap_or(SocketAddr::from(([0; 4], 0))))
        );
        assert!(parse_control_addr("nowhere").is_err());
        assert!(parse_control_addr("localhost:x").is_err());
    }
}
