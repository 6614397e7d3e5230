//! After a run: the final interval, each activity's judged totals, the summary
//! and the gate's reports, and the exit code.

use super::args::{EXIT_BAD_INPUT, EXIT_OK, EXIT_RUN_FAILED, EXIT_THRESHOLDS};
use super::gate::{self, judged_totals, junit_case, subjects};
use super::report::Reporter;
use super::target::Intervals;
use super::tracked::{ReportData, Tracked, as_reports, http_stats, interval, pg_stats};
use paceline::Outcome;
use std::time::SystemTime;

/// What the run is gated on, and where the gate's reports go.
pub(super) struct Gate<'a> {
    /// The thresholds, with where each came from.
    pub(super) thresholds: &'a [gate::Sourced],
    /// The run's metadata (`cli::meta`); `ended_at` is set at the end.
    pub(super) meta: serde_json::Map<String, serde_json::Value>,
    /// `--junit`: the path and the file, created before the run.
    pub(super) junit: Option<(std::path::PathBuf, std::fs::File)>,
}

/// Where the report loop left the run.
pub(super) struct Ended<'a> {
    /// The activities it reported on.
    pub(super) tracked: Vec<Tracked>,
    /// The endpoints' copy of each activity's last interval.
    pub(super) intervals: Option<&'a Intervals>,
    /// Cores the process used over the last interval, and over the run.
    pub(super) interval_cores: Option<f64>,
    pub(super) run_cores: Option<f64>,
    /// A threshold with `abort_on_fail` that failed at an interval.
    pub(super) aborted: Option<gate::Outcome>,
    /// How the scenario ended (`Ok` without one), as the message to print.
    pub(super) scenario_result: Result<(), String>,
    /// A step was refused at its start (its driver could not get ready, or it
    /// could not join its shared schedule): bad input, as for one activity.
    pub(super) refused_start: bool,
    /// A report could not be written during the run.
    pub(super) write_failed: bool,
    /// The run failed without a message of its own here: an activity stuck in
    /// its driver, or an interrupt.
    pub(super) stuck: bool,
    /// Ctrl-C or SIGTERM asked the run to stop.
    pub(super) interrupted: bool,
}

/// The last (partial) interval, the totals, every report, and the exit code.
pub(super) fn finish(reporter: &mut Reporter, ended: Ended<'_>, gate: Gate<'_>) -> u8 {
    let Ended {
        mut tracked,
        intervals,
        interval_cores,
        run_cores,
        aborted,
        scenario_result,
        mut refused_start,
        mut write_failed,
        stuck,
        interrupted,
    } = ended;
    let Gate {
        thresholds,
        mut meta,
        junit,
    } = gate;
    // The last (partial) interval, then the totals.
    if let Err(failed) = interval(reporter, &mut tracked, intervals, interval_cores) {
        report_failed(&failed);
        write_failed = true;
    }
    let mut http = Vec::new();
    let mut means = Vec::new();
    let mut rows = Vec::new();
    let mut totals: Vec<ReportData> = tracked
        .iter()
        .map(|t| {
            let (mut info, totals, timeline, mean) = judged_totals(&t.control, run_cores);
            means.push(mean);
            let stats = http_stats(&info);
            info.driver_stats = stats.as_ref().map(|h| {
                serde_json::json!({
                    "requests": h.requests,
                    "responses": h.responses,
                    "connections": h.connections,
                    "requests_per_connection": h.requests_per_connection(),
                    // Opening connections (TCP and TLS), out of the ops' service
                    // time for those opened before the first op.
                    "connect_ms_mean": h.connect_mean().map(|d| d.as_secs_f64() * 1e3),
                    "connections_before_start": h.connections_before_start,
                    "bytes_received": h.bytes_received,
                    "statuses": h.statuses.iter().map(|(s, n)| (s.to_string(), *n)).collect::<std::collections::BTreeMap<_, _>>(),
                })
            });
            http.push(stats);
            let pg = pg_stats(&info);
            if let Some(p) = &pg {
                // Each op once, at its last try, when it was answered; no
                // answered op, no figure per op: null, not 0.
                info.driver_stats = Some(serde_json::json!({
                    "answered_ops": p.answered_ops,
                    "rows": p.rows,
                    "rows_per_op": p.rows_per_op(),
                }));
            }
            rows.push(pg);
            (info, totals, timeline)
        })
        .collect();
    // Who stopped each activity, before the thresholds read it: the ops a
    // planned end cut are no errors of theirs (audit p18, M9), those a stop
    // asked for are.
    for (info, _, timeline) in &mut totals {
        info.ended = stopped_by(
            info.ended.take(),
            timeline,
            Asked {
                aborted: aborted.is_some(),
                interrupted,
            },
        );
    }
    let mut results = gate::check_final(thresholds, &subjects(&totals, &means));
    if let Some(a) = &aborted {
        merge_aborted(&mut results, a);
    }
    // What ended the run and its exit code, known before any report is
    // written: the summary JSON and the JUnit XML say it too. Each reason with
    // whether it is printed here (the others were printed as they happened).
    let mut failures: Vec<(String, bool)> = Vec::new();
    if let Err(e) = &scenario_result {
        failures.push((format!("scenario stopped: {e}"), true));
    }
    for (t, (info, _, timeline)) in tracked.iter().zip(&totals) {
        if let Some(Outcome::Failed(why)) = t.control.outcome() {
            // A reader that closed our stdout (`| head`) ended the run: not an error.
            if t.control.failure_kind().as_deref() == Some("closed") {
                continue;
            }
            // A launch worker whose driver could not get ready before any op
            // started (a server with no connection slot left, audit L10) is
            // refused at its start, as the driver's check at load would be: bad
            // input, exit 2. Decided from the failing worker and the schedule's
            // start, not from completed ops, which race with the other workers
            // (review A, p17 M2).
            let launch = launch_threads(timeline, info.threads);
            if refused_at_start(&why, launch, info.schedule_begun) {
                refused_start = true;
                failures.push((
                    format!(
                        "activity `{}` was refused at its start, before any op ran: {why}",
                        t.control.alias()
                    ),
                    true,
                ));
                continue;
            }
            failures.push((
                format!("activity `{}` failed: {why}", t.control.alias()),
                true,
            ));
        }
    }
    // A run whose `duration` ran out during its set-up ran no op: no CI gate
    // should read that as a pass (exit 1). A launch at rate 0 never raised, a
    // control `stop` or Ctrl-C are what was asked, and exit as such.
    for (info, snap, _) in &totals {
        if !info.schedule_begun
            && info.target_rate != Some(0.0)
            && info.ended.as_deref() == Some("ran its duration")
        {
            failures.push((
                format!(
                    "activity `{}` never started: its `duration` ran out during its set-up, \
                     {} after its launch, before the first slot: {}; no op ran. Give the set-up \
                     more time (a `duration` counts from the launch until the schedule begins), \
                     or open fewer connections (`concurrency`, `threads`)",
                    info.alias,
                    super::report::units::duration(snap.setup_nanos()),
                    super::tracked::set_up_left(info)
                ),
                true,
            ));
        }
    }
    for t in tracked.iter().filter(|t| t.stuck) {
        failures.push((
            format!(
                "activity `{}` did not stop within the stop timeout (an op is stuck in its \
                 driver)",
                t.control.alias()
            ),
            false,
        ));
    }
    if interrupted {
        failures.push(("interrupted (Ctrl-C or SIGTERM)".to_string(), false));
    }
    if write_failed {
        failures.push(("a report could not be written".to_string(), false));
    }
    let failed_thresholds = aborted.is_some() || results.iter().any(|r| !r.pass);
    let run_end = RunEnd::of(
        refused_start,
        !failures.is_empty() || stuck,
        interrupted,
        failed_thresholds,
    );
    super::meta::finish(&mut meta, SystemTime::now());
    let mut run_doc = meta;
    if !thresholds.is_empty() {
        run_doc.insert(
            "thresholds".into(),
            results.iter().map(gate::Outcome::to_json).collect(),
        );
    }
    let why = (!failures.is_empty()).then(|| {
        failures
            .iter()
            .map(|(f, _)| f.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    });
    run_doc.insert("outcome".into(), run_end.kind().into());
    run_doc.insert("failure".into(), why.clone().into());
    run_doc.insert("exit_code".into(), run_end.code().into());
    reporter.set_run(run_doc.clone());
    if refused_start && tracked.is_empty() {
        // Refused at its first start: nothing ran, no report file is left behind.
        reporter.abandon();
    } else if let Err(failed) = reporter.finish(&as_reports(&totals)) {
        report_failed(&failed);
        write_failed = true;
    }
    for ((info, _, _), stats) in totals.iter().zip(&http) {
        if let Some(h) = stats {
            reporter.note(&format!("{} (http): {h}", info.alias));
        }
    }
    for ((info, snap, _), stats) in totals.iter().zip(&rows) {
        if let Some(p) = stats {
            // `jdbc` runs the postgres driver; the line names what the file said.
            reporter.note(&format!(
                "{} ({}): {}",
                info.alias,
                info.driver,
                p.line(snap.ops())
            ));
        }
    }
    if !results.is_empty() {
        reporter.note(&gate::console_block(&results));
    }
    if let Some((path, mut file)) = junit {
        let cases: Vec<gate::CaseOf> = totals
            .iter()
            .zip(&tracked)
            .map(|((info, snap, _), t)| junit_case(info, snap, &t.control))
            .collect();
        let run_case = why.as_ref().map(|w| gate::RunCase {
            outcome: run_end.kind().to_string(),
            message: w.clone(),
        });
        let xml = gate::junit(&cases, &results, run_case.as_ref(), &run_doc);
        use std::io::Write as _;
        if let Err(e) = file.write_all(xml.as_bytes()).and_then(|()| file.flush()) {
            eprintln!("paceline: cannot write report to {}: {e}", path.display());
            write_failed = true;
        }
    }
    for (f, _) in failures.iter().filter(|(_, print)| *print) {
        eprintln!("paceline: {f}");
    }
    let mut code = run_end.code();
    if write_failed && code != EXIT_BAD_INPUT {
        code = EXIT_RUN_FAILED;
    }
    // A run that went well but failed a threshold: the gate's own exit code.
    if code == EXIT_THRESHOLDS {
        for r in results.iter().filter(|r| !r.pass) {
            eprintln!(
                "paceline: threshold `{}` failed{}: {} (from {})",
                r.expr,
                r.activity
                    .as_deref()
                    .map(|a| format!(" on `{a}`"))
                    .unwrap_or_default(),
                r.value,
                r.from
            );
        }
    }
    code
}

/// An `abort_on_fail` threshold that stopped the run at an interval, among the
/// final results: one result per threshold and activity, failed with the
/// interval's value, the one that stopped the run (audit p17, H4: a final
/// value beside FAIL read as a pass).
/// The stops that were asked for rather than planned, as the run loop saw them.
#[derive(Debug, Clone, Copy)]
struct Asked {
    /// An `abort_on_fail` threshold failed at an interval.
    aborted: bool,
    /// Ctrl-C or SIGTERM.
    interrupted: bool,
}

/// What an activity's `ended` says in the reports (audit p18, H1): a `stopped`
/// that an `abort_on_fail` threshold, a control `stop` or an interrupt caused
/// says so (`stopped by abort_on_fail`, `stopped by control`, `stopped by
/// interrupt`), so that `compare` refuses the run as cut short and its
/// `cancelled` ops stay errors (audit p18, M9); a scenario's planned `stop` (or
/// its end) stays `stopped`.
fn stopped_by(
    ended: Option<String>,
    timeline: &[paceline::TimelineEntry],
    asked: Asked,
) -> Option<String> {
    if ended.as_deref() != Some("stopped") {
        return ended;
    }
    let by_control = timeline
        .iter()
        .any(|e| matches!(&e.event, paceline::Event::Note(n) if n == super::target::CONTROL_STOP));
    Some(if asked.aborted {
        "stopped by abort_on_fail".to_string()
    } else if by_control {
        "stopped by control".to_string()
    } else if asked.interrupted {
        "stopped by interrupt".to_string()
    } else {
        "stopped".to_string()
    })
}

fn merge_aborted(results: &mut Vec<gate::Outcome>, aborted: &gate::Outcome) {
    match results.iter_mut().find(|r| {
        r.expr == aborted.expr && r.from == aborted.from && r.activity == aborted.activity
    }) {
        Some(r) => {
            r.pass = false;
            r.value = aborted.value.clone();
        }
        None => results.push(aborted.clone()),
    }
}

/// Whether an activity that failed with `why` was refused at its start: one of
/// the launch's `launch` workers (indices `0..launch`; a worker added later has
/// a higher one) could not get its driver ready (the engine's `worker N could
/// not start: ...`) and no op had started on any worker (`op_started`: the
/// schedule's start, `ActivityInfo::schedule_begun`). A worker added mid-run,
/// or one that fails after another worker's first op started, is a run that
/// failed (exit 1), whatever the ops completed: the same input gives the same
/// code (review A, p17 M2).
fn refused_at_start(why: &str, launch: usize, op_started: bool) -> bool {
    if op_started {
        return false;
    }
    why.strip_prefix("worker ")
        .and_then(|rest| rest.split_once(" could not start: "))
        .and_then(|(index, _)| index.parse::<usize>().ok())
        .is_some_and(|index| index < launch)
}

/// The activity's threads at its launch: the `from` of its first `threads`
/// event, or `now` (its threads at the end) when there was none.
fn launch_threads(timeline: &[paceline::TimelineEntry], now: usize) -> usize {
    timeline
        .iter()
        .find_map(|e| match e.event {
            paceline::Event::Threads { from, .. } => Some(from),
            _ => None,
        })
        .unwrap_or(now)
}

/// How the run ended, for the summary JSON's `outcome` and the exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RunEnd {
    /// Everything ran and every threshold held: exit 0.
    Completed,
    /// Everything ran; a threshold failed: exit 3.
    ThresholdsFailed,
    /// An error stopped it (an activity, a scenario step, a stuck op): exit 1.
    Failed,
    /// Ctrl-C or SIGTERM: exit 1.
    Interrupted,
    /// A step was refused at its start (bad input): exit 2.
    BadInput,
}

impl RunEnd {
    /// Bad input first, then an interrupt, then a failure, then the thresholds.
    fn of(bad_input: bool, failed: bool, interrupted: bool, thresholds_failed: bool) -> Self {
        if bad_input {
            Self::BadInput
        } else if interrupted {
            Self::Interrupted
        } else if failed {
            Self::Failed
        } else if thresholds_failed {
            Self::ThresholdsFailed
        } else {
            Self::Completed
        }
    }

    /// The summary JSON's `outcome`.
    fn kind(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::ThresholdsFailed => "thresholds failed",
            Self::Failed => "failed",
            Self::Interrupted => "interrupted",
            Self::BadInput => "bad input",
        }
    }

    /// The exit code.
    fn code(self) -> u8 {
        match self {
            Self::Completed => EXIT_OK,
            Self::ThresholdsFailed => EXIT_THRESHOLDS,
            Self::Failed | Self::Interrupted => EXIT_RUN_FAILED,
            Self::BadInput => EXIT_BAD_INPUT,
        }
    }
}

/// Names each report that could not be written, one line each.
pub(super) fn report_failed(failed: &super::report::Failed) {
    for e in &failed.0 {
        eprintln!("paceline: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use paceline::thresholds::Observed;

    /// Regression (audit p18, H1): what stopped an activity, which `compare`
    /// reads: an abort, a control `stop` (its timeline note), or a planned
    /// `stop` (a scenario's), which keeps `stopped`.
    #[test]
    fn a_stop_says_who_stopped_it() {
        use paceline::{Event, TimelineEntry};
        let stopped = || Some("stopped".to_string());
        let note = [TimelineEntry {
            at: 600_000_000,
            event: Event::Note(super::super::target::CONTROL_STOP.to_string()),
        }];
        let asked = |aborted, interrupted| Asked {
            aborted,
            interrupted,
        };
        assert_eq!(
            stopped_by(stopped(), &[], asked(true, false)).as_deref(),
            Some("stopped by abort_on_fail")
        );
        assert_eq!(
            stopped_by(stopped(), &note, asked(false, false)).as_deref(),
            Some("stopped by control")
        );
        assert_eq!(
            stopped_by(stopped(), &[], asked(false, true)).as_deref(),
            Some("stopped by interrupt")
        );
        assert_eq!(stopped_by(stopped(), &[], asked(false, false)), stopped());
        let elapsed = Some("ran its duration".to_string());
        assert_eq!(
            stopped_by(elapsed.clone(), &note, asked(true, true)),
            elapsed
        );
    }

    fn outcome(value: f64, pass: bool) -> gate::Outcome {
        gate::Outcome {
            expr: "response.p99<1ms abort_on_fail".into(),
            from: "--threshold #1".into(),
            activity: Some("diag".into()),
            value: Observed::Nanos(value as u64),
            pass,
        }
    }

    /// Regression (audit p16, M1): the interval's result of the `abort_on_fail`
    /// threshold that stopped the run was appended beside the final one when
    /// their values differed: "0 of 2 passed" for one threshold. And (audit
    /// p17, H4) the one result shows the interval's value, the one that
    /// failed: "FAIL errors<1% (diag): 0%" read as a pass.
    #[test]
    fn an_aborting_threshold_is_one_result_with_the_intervals_value() {
        let mut results = vec![outcome(86e6, false)];
        merge_aborted(&mut results, &outcome(79.2e6, false));
        assert_eq!(results, [outcome(79.2e6, false)]);
        // Passed at the end (the run was cut short): still failed, one result.
        let mut results = vec![outcome(0.5e6, true)];
        merge_aborted(&mut results, &outcome(79.2e6, false));
        assert_eq!(results, [outcome(79.2e6, false)]);
        // No final result for it (its activity is gone): the interval's.
        let mut results = Vec::new();
        merge_aborted(&mut results, &outcome(79.2e6, false));
        assert_eq!(results, [outcome(79.2e6, false)]);
    }

    /// Regression (review A, p17 M2): exit 2 was picked when the activity had
    /// completed no op, which races with the other workers (one input exited 1
    /// or 2) and took a worker added mid-run (an activity held at `rate=0`,
    /// then given a thread whose connect failed) for a refused launch. The
    /// rule now reads the failing worker and whether any op had started.
    #[test]
    fn review_p17_m2_refused_at_start_is_a_launch_worker_before_any_op_started() {
        let why = |i: usize| format!("worker {i} could not start: connect: SQLSTATE 53300");
        // A launch worker, no op started: refused.
        assert!(refused_at_start(&why(0), 2, false));
        assert!(refused_at_start(&why(1), 2, false));
        // Another worker's op had started (completed or not): failed.
        assert!(!refused_at_start(&why(1), 2, true));
        // A worker added mid-run (index 1 of a launch with 1), even with no
        // op started yet (held at rate 0): failed, not bad input.
        assert!(!refused_at_start(&why(1), 1, false));
        // Any other failure: failed.
        assert!(!refused_at_start("op o: timeout", 2, false));
        assert!(!refused_at_start("worker x could not start: y", 2, false));
        // The launch's threads come from the first `threads` event.
        let threads = |at, from, to| paceline::TimelineEntry {
            at,
            event: paceline::Event::Threads { from, to },
        };
        assert_eq!(launch_threads(&[], 3), 3);
        assert_eq!(launch_threads(&[threads(5, 1, 2), threads(9, 2, 4)], 4), 1);
    }

    #[test]
    fn the_run_end_orders_bad_input_over_failure_over_thresholds() {
        assert_eq!(RunEnd::of(false, false, false, false).code(), EXIT_OK);
        assert_eq!(
            RunEnd::of(false, false, false, true).code(),
            EXIT_THRESHOLDS
        );
        assert_eq!(RunEnd::of(false, true, false, true).kind(), "failed");
        assert_eq!(RunEnd::of(false, true, true, true).kind(), "interrupted");
        assert_eq!(RunEnd::of(true, true, true, true).code(), EXIT_BAD_INPUT);
    }
}
