//! Tests of `run`: the report loop, the gate, the start.

use super::*;
use crate::cli::report::ActivityInfo;
use crate::cli::report::tests::info as diag_activity;
use crate::cli::tracked::{paused_note, row_info, verdict_of};
use paceline::{EngineError, ScenarioError, StartError};

/// Issue 25, item 4: an interrupt that lands while the activity starts
/// (the engine closed under the start) still ends in complete reports.
#[test]
fn item4_an_interrupt_while_the_activity_starts_still_writes_complete_reports() {
    let drivers = Drivers::builtin();
    let pairs = [("driver", "diag"), ("cycles", "10")].map(|(k, v)| (k.into(), v.into()));
    let Ok((activity, overrides, _)) = load(&drivers, None, None, &pairs) else {
        panic!("the params load");
    };
    let engine = Engine::new();
    let (stop, interrupted) = (Signal::new(), Signal::new());
    // What the signal handler does, just before the start.
    interrupted.stop();
    stop.stop();
    engine.close();
    assert_eq!(
        start_alone(&drivers, &engine, &activity, &overrides, &interrupted),
        Ok(())
    );
    let dir = std::env::temp_dir().join(format!("paceline-item4-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    let (json, html) = (dir.join("s.json"), dir.join("r.html"));
    let opts = ReportOptions {
        summary_json: Some(json.clone()),
        html: Some(html.clone()),
        progress: Some(false),
        ..ReportOptions::default()
    };
    let mut reporter = Reporter::open(&opts, engine.clock().now(), SystemTime::now())
        .unwrap_or_else(|e| panic!("{e}"));
    let timing = Timing {
        every: Duration::from_secs(1),
        stop_timeout: Duration::from_secs(1),
        duration: None,
        control: None,
    };
    let code = drive(
        &engine,
        &mut reporter,
        None,
        timing,
        None,
        (&stop, &interrupted),
        Gate {
            thresholds: &[],
            meta: serde_json::Map::new(),
            junit: None,
        },
    );
    assert_eq!(code, EXIT_RUN_FAILED);
    let doc = std::fs::read_to_string(&json).unwrap_or_default();
    let doc: serde_json::Value =
        serde_json::from_str(&doc).unwrap_or_else(|e| panic!("{e}: {doc:?}"));
    assert_eq!(doc["activities"], serde_json::json!([]), "{doc}");
    let page = std::fs::read_to_string(&html).unwrap_or_default();
    assert!(page.trim_end().ends_with("</html>"), "{page:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 24, item 1: an activity started at `rate=0` says it is paused and how
/// to start it, with the control endpoint's address when there is one.
#[test]
fn an_activity_started_paused_says_how_to_start_it() {
    let with = paused_note("main", Some("127.0.0.1:7878"));
    assert!(with.contains("`main` starts paused (rate 0)"), "{with}");
    assert!(
        with.contains("curl -X PUT -d 1000 127.0.0.1:7878/activities/main/rate"),
        "{with}"
    );
    let without = paused_note("main", None);
    assert!(without.contains("--control"), "{without}");
}

/// Regression (issue 24, item 8): an interval of a ramp was judged against
/// the target at its end ("generator-bound (achieved 107/s of 300/s)") while
/// the summary, on the same ops, said "on-schedule: 107/s of 108/s". Every
/// interval is judged against the mean target over it.
#[test]
fn an_interval_is_judged_against_its_mean_target() {
    let metrics = paceline::Metrics::new(0);
    let mut rec = metrics.recorder();
    for _ in 0..107 {
        rec.record_split(0, 20_000, 100_000);
    }
    let snap = metrics.snapshot(1_000_000_000);
    let mut info = ActivityInfo {
        threads: 2,
        cycles_requested: 0,
        target_rate: Some(300.0),
        mean_target: Some(108.0),
        ..diag_activity("a")
    };
    let v = verdict_of(&info, &snap, Some(0.1), false);
    assert_eq!(v.kind, paceline::VerdictKind::OnSchedule, "{v}");
    assert!(v.reason.starts_with("achieved 107/s of 108/s"), "{v}");
    info.mean_target = None;
    let end = verdict_of(&info, &snap, Some(0.1), false);
    assert_ne!(end.kind, paceline::VerdictKind::OnSchedule, "{end}");
}

/// Issue 24, item 3: the whole run's verdict takes the achieved rate over the
/// schedule's span, as the summary shows it (5 ops at 50/s in 85 ms).
#[test]
fn the_whole_run_is_judged_over_the_schedules_span() {
    let metrics = paceline::Metrics::new(0);
    let mut rec = metrics.recorder();
    for _ in 0..5 {
        rec.record_split(0, 20_000, 100_000);
    }
    let snap = metrics.snapshot(85_000_000);
    let info = ActivityInfo {
        threads: 1,
        cycles_requested: 5,
        target_rate: Some(50.0),
        mean_target: Some(50.0),
        ..diag_activity("a")
    };
    let v = verdict_of(&info, &snap, None, true);
    assert!(v.reason.starts_with("achieved 50/s of 50/s"), "{v}");
}

#[test]
fn a_step_refused_at_its_start_is_bad_input() {
    let step = |error| ScenarioError::Start { step: 2, error };
    let coordinate = EngineError::Coordinate {
        alias: "a".into(),
        message: "cannot reach redis at redis://127.0.0.1:1".into(),
    };
    assert!(refused_at_start(&step(StartError::Engine(coordinate))));
    // Audit p16, M9: a driver that cannot get ready (a server unreachable, a
    // statement refused) is bad input in a scenario as for one activity.
    let refused = paceline::DriverError::new("redis", "cannot reach Redis at redis://127.0.0.1:1");
    assert!(refused_at_start(&step(StartError::Driver(refused))));
    let closed = EngineError::Closed { alias: "a".into() };
    assert!(!refused_at_start(&step(StartError::Engine(closed))));
    let not_started = ScenarioError::NotStarted {
        step: 1,
        alias: "a".into(),
    };
    assert!(!refused_at_start(&not_started));
}

/// Regression (session 14 review, finding 2): a row taken before the first
/// slot was marked `set_up` 0 when the first slot came between its snapshot
/// and the activity's info read after it: its time counted from the first slot
/// (negative), its console line had no `set-up +` label, and its paused time,
/// which the totals drop, sat among the window's rows. The snapshot says
/// whether it was taken before the first slot, and the row follows it.
#[test]
fn a_set_up_row_whose_first_slot_came_before_the_info_stays_a_set_up_row() {
    let metrics = paceline::Metrics::new(100);
    let snap = metrics.snapshot(1_000_000_100);
    // The first slot comes now, before the reporter reads the activity's info.
    metrics.schedule_started(1_000_500_100);
    let info = ActivityInfo {
        threads: 1,
        cycles_requested: 0,
        target_rate: Some(100.0),
        schedule_start: metrics.first_slot(),
        schedule_begun: metrics.first_slot().is_some(),
        ..diag_activity("a")
    };
    let row = row_info(&metrics, &info, &snap);
    assert_eq!((row.schedule_begun, row.schedule_start), (false, Some(100)));
    // The next row is the window's, from the first slot.
    let next = metrics.snapshot(2_000_000_100);
    let row = row_info(&metrics, &info, &next);
    assert_eq!(
        (row.schedule_begun, row.schedule_start),
        (true, Some(1_000_500_100))
    );
}
