//! Audit p16, H9: a run stopped before its schedule's first slot (its workers
//! still opening their connections) was judged "system-bound: no op finished in
//! 1.39 s ... the system under test stalled", with `setup_seconds` 0 and its
//! whole set-up counted as the run's time. On the manual clock.

use super::*;
use crate::cli::gate::judged_totals;
use crate::cli::report::json::SummaryJson;
use crate::cli::report::tests::info as diag_activity;
use paceline::{
    ActivityConfig, Engine, MAX_CYCLE, ManualClock, OpError, OpRunner, Outcome, RateSpec,
    VerdictKind, WorkerContext, Workload,
};
use std::time::Duration;

const MS: u64 = 1_000_000;

/// Each worker's set-up (opening its connections) takes `0` of the engine's
/// clock: its `runner` blocks that long before the first op can start.
struct SlowSetUp(Duration);

struct Instant0;

impl OpRunner for Instant0 {
    fn run(&mut self, _: u64) -> Result<(), OpError> {
        Ok(())
    }
}

impl Workload for SlowSetUp {
    fn runner(&self, ctx: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
        ctx.sleep(self.0);
        Ok(Box::new(Instant0))
    }
}

/// The final verdict and totals of a 100/s run with `duration` whose set-up
/// takes `setup`, as the summary and its JSON get them.
fn run_with_setup(duration: Duration, setup: Duration) -> (ActivityInfo, Snapshot) {
    let clock = ManualClock::new();
    let engine = Engine::with_clock(clock);
    let config = ActivityConfig::new("pg")
        .cycles(0..MAX_CYCLE)
        .rate(RateSpec::new(100.0))
        .duration(duration);
    let c = engine.start(config, SlowSetUp(setup)).unwrap();
    assert_eq!(
        c.wait_timeout(Duration::from_secs(30)),
        Some(Outcome::Elapsed)
    );
    // The last interval, as `finish` takes it before the totals.
    let _ = c.snapshot();
    let (info, totals, _, _) = judged_totals(&c, None);
    (info, totals)
}

#[test]
fn regression_h9_a_run_stopped_during_set_up_is_not_started_not_system_bound() {
    // 300 ms of duration, 1 s of set-up: the run's time is up at 300 ms of its
    // launch, and it ends when its worker comes out of its set-up (1 s), with
    // no op ever in flight (the audit's run: 1.39 s for `--duration 300ms`).
    let (info, totals) = run_with_setup(Duration::from_millis(300), Duration::from_secs(1));
    assert!(!info.schedule_begun);
    assert_eq!(totals.ops(), 0);
    // All of it was set-up, none of it the run's window.
    assert_eq!(
        (totals.setup_nanos(), totals.elapsed_nanos()),
        (1000 * MS, 0)
    );
    let v = info.verdict.as_ref().unwrap();
    assert_eq!(v.kind, VerdictKind::NotStarted, "{v}");
    assert!(
        v.reason.starts_with(
            "the run stopped during set-up, before its first slot, 1.00 s after its launch \
             (its time was up: the set-up outlasted its duration)"
        ),
        "{v}"
    );
    assert!(!v.reason.contains("stalled"), "{v}");
    // Session 17: what the set-up had done (no worker was ready).
    assert!(
        v.reason.contains(
            "(its time was up: the set-up outlasted its duration): its worker had not \
             finished starting; no op ran"
        ),
        "{v}"
    );
    // The summary JSON says so too.
    let data = [(info, totals, Vec::new())];
    let json = serde_json::to_value(SummaryJson::new(0, &as_reports(&data))).unwrap();
    let a = &json["activities"][0];
    assert_eq!(a["setup_seconds"], 1.0, "{a}");
    assert_eq!(a["elapsed_seconds"], 0.0, "{a}");
    assert_eq!(a["verdict"]["kind"], "not-started", "{a}");
    // And the summary's headline.
    let text = crate::cli::report::text::summary_table(&as_reports(&data)[0]);
    assert!(
        text.contains("; it never started: stopped during set-up, ")
            && text.contains(" after its launch, before the first slot"),
        "{text}"
    );
    assert!(!text.contains("it ran its duration"), "{text}");
}

#[test]
fn a_run_whose_schedule_began_keeps_its_verdict_and_set_up() {
    // 100 ms of set-up, then 1 s of schedule at 100/s: on schedule.
    let (info, totals) = run_with_setup(Duration::from_secs(1), Duration::from_millis(100));
    assert!(info.schedule_begun);
    assert_eq!((totals.setup_nanos(), totals.ops()), (100 * MS, 100));
    let v = info.verdict.as_ref().unwrap();
    assert_ne!(v.kind, VerdictKind::NotStarted, "{v}");
}

#[test]
fn regression_h9_an_interval_before_the_first_slot_is_not_started() {
    let metrics = paceline::Metrics::new(0);
    let snap = metrics.snapshot(1_390 * MS);
    assert!(snap.is_set_up());
    let info = ActivityInfo {
        driver: "postgres".into(),
        threads: 1,
        cycles_requested: 2000,
        target_rate: Some(100.0),
        mean_target: Some(100.0),
        schedule_start: Some(0),
        schedule_begun: false,
        ..diag_activity("pg")
    };
    let v = verdict_of(&info, &snap, None, false);
    assert_eq!(v.kind, VerdictKind::NotStarted, "{v}");
    assert_eq!(
        v.reason, "setting up, 1.39 s since the launch: no slot yet",
        "{v}"
    );
}
