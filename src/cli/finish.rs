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
    /// A step could not join its shared schedule: bad input.
    pub(super) cannot_join: bool,
    /// A report could not be written during the run.
    pub(super) write_failed: bool,
    /// The run failed without a message of its own here: an activity stuck in
    /// its driver, or an interrupt.
    pub(super) stuck: bool,
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
        cannot_join,
        mut write_failed,
        stuck,
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
    let totals: Vec<ReportData> = tracked
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
    let mut results = gate::check(thresholds, &subjects(&totals, &means));
    if let Some(a) = &aborted
        && !results.contains(a)
    {
        results.push(a.clone());
    }
    super::meta::finish(&mut meta, SystemTime::now());
    let mut run_doc = meta;
    if !thresholds.is_empty() {
        run_doc.insert(
            "thresholds".into(),
            results.iter().map(gate::Outcome::to_json).collect(),
        );
    }
    reporter.set_run(run_doc.clone());
    if cannot_join && tracked.is_empty() {
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
        let xml = gate::junit(&cases, &results, &run_doc);
        use std::io::Write as _;
        if let Err(e) = file.write_all(xml.as_bytes()).and_then(|()| file.flush()) {
            eprintln!("paceline: cannot write report to {}: {e}", path.display());
            write_failed = true;
        }
    }
    let mut code = EXIT_OK;
    if let Err(e) = scenario_result {
        eprintln!("paceline: scenario stopped: {e}");
        code = EXIT_RUN_FAILED;
    }
    for t in &tracked {
        if let Some(Outcome::Failed(why)) = t.control.outcome() {
            // A reader that closed our stdout (`| head`) ended the run: not an error.
            if t.control.failure_kind().as_deref() == Some("closed") {
                continue;
            }
            eprintln!("paceline: activity `{}` failed: {why}", t.control.alias());
            code = EXIT_RUN_FAILED;
        }
    }
    if write_failed || stuck {
        code = EXIT_RUN_FAILED;
    }
    // The reports above keep what the steps before it ran; the exit code says
    // that the input (the URL, the server, the cycles) has to change.
    if cannot_join {
        code = EXIT_BAD_INPUT;
    }
    // A run that went well but failed a threshold: the gate's own exit code.
    if code == EXIT_OK && (aborted.is_some() || results.iter().any(|r| !r.pass)) {
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
        code = EXIT_THRESHOLDS;
    }
    code
}

/// Names each report that could not be written, one line each.
pub(super) fn report_failed(failed: &super::report::Failed) {
    for e in &failed.0 {
        eprintln!("paceline: {e}");
    }
}
