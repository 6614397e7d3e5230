//! A run's life in the engine: stop latency, bad configs and control values,
//! several activities side by side, aliases reused once a run finished, and a
//! closed engine that starts nothing more.

use crate::workloads::{LONG, Recording, Takes};
use paceline::{ActivityConfig, ControlError, Engine, EngineError, ManualClock, Outcome, RateSpec};
use std::time::{Duration, Instant};

#[test]
fn stop_is_prompt_even_when_every_worker_waits_for_a_far_slot() {
    let run = Engine::new()
        .start(
            ActivityConfig::new("slow")
                .cycles(0..100)
                .threads(4)
                .rate(RateSpec::new(0.5)),
            Recording::default(),
        )
        .unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let t0 = Instant::now();
    run.stop();
    assert_eq!(
        run.wait_timeout(Duration::from_secs(5)),
        Some(Outcome::Stopped)
    );
    assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
    assert_eq!(
        run.set_rate(RateSpec::new(5.0)),
        Err(ControlError::Finished {
            alias: "slow".into()
        })
    );
}

#[test]
fn stop_latency_is_one_op_not_one_stride() {
    let work = Recording::default();
    let (reached, go) = work.hook(10);
    let run = Engine::new()
        .start(
            ActivityConfig::new("stride")
                .cycles(0..1_000_000)
                .stride(100_000),
            work.clone(),
        )
        .unwrap();
    reached.recv_timeout(LONG).unwrap();
    run.stop();
    go.send(()).unwrap();
    assert_eq!(run.wait(), Outcome::Stopped);
    assert_eq!(work.sorted(), (0..=10).collect::<Vec<u64>>());
}

#[test]
fn bad_configs_and_control_values_say_what_to_do() {
    let e = Engine::with_clock(ManualClock::new());
    let err = e
        .start(ActivityConfig::new("a").threads(0), Recording::default())
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "activity `a`: bad threads: 0 threads: use 1 to 4096 (pause an activity instead of giving it 0 threads)"
    );
    let err = e
        .start(
            ActivityConfig::new("a").cycles(std::ops::Range { start: 9, end: 3 }),
            Recording::default(),
        )
        .unwrap_err();
    assert!(
        err.to_string().contains("9..3 ends before it starts"),
        "{err}"
    );
    assert!(matches!(
        e.start(ActivityConfig::new(" "), Recording::default()),
        Err(EngineError::BadConfig { .. })
    ));

    let work = Recording::default();
    let (reached, go) = work.hook(0);
    let run = e
        .start(ActivityConfig::new("a").cycles(0..2), work)
        .unwrap();
    reached.recv_timeout(LONG).unwrap();
    assert_eq!(
        e.start(ActivityConfig::new("a"), Recording::default())
            .unwrap_err()
            .to_string(),
        "an activity called `a` is already running: give the new one another alias"
    );
    assert!(matches!(
        run.set_threads(0),
        Err(ControlError::BadValue { .. })
    ));
    assert!(
        run.ramp_to(RateSpec::paused(), Duration::from_secs(1))
            .is_err()
    );
    go.send(()).unwrap();
    run.wait();
    // Once finished, the alias can be reused.
    let again = e
        .start(ActivityConfig::new("a"), Recording::default())
        .unwrap();
    assert_eq!(again.wait(), Outcome::Completed);
}

#[test]
fn several_activities_run_side_by_side() {
    let engine = Engine::with_clock(ManualClock::new());
    let a = Recording::default();
    let b = Recording::default();
    engine
        .start(
            ActivityConfig::new("a")
                .cycles(0..1000)
                .threads(3)
                .stride(10),
            a.clone(),
        )
        .unwrap();
    engine
        .start(
            ActivityConfig::new("b").cycles(0..500).threads(2),
            b.clone(),
        )
        .unwrap();
    let ends = engine.wait_all();
    assert!(ends.iter().all(|(_, o)| *o == Outcome::Completed));
    assert_eq!(a.sorted().len(), 1000);
    assert_eq!(b.sorted().len(), 500);
    assert_eq!(engine.get("b").unwrap().status().completed, 500);
}

/// Issue 18.5: reusing an alias keeps the finished run in the engine's list.
#[test]
fn reusing_an_alias_keeps_the_finished_run_listed() {
    let engine = Engine::with_clock(ManualClock::new());
    let first = engine
        .start(
            ActivityConfig::new("a").cycles(0..1000),
            Takes(Duration::ZERO),
        )
        .unwrap();
    first.wait();
    let second = engine
        .start(ActivityConfig::new("a").cycles(0..5), Takes(Duration::ZERO))
        .unwrap();
    second.wait();
    let all = engine.activities();
    assert_eq!(all.len(), 2);
    assert!(all[0].same_run(&first) && all[1].same_run(&second));
    assert!(engine.get("a").unwrap().same_run(&second));
    assert_eq!(all[0].snapshot().ops(), 1000);
}

/// Issue 18.8: a closed engine starts nothing more, so an interrupt reaches an
/// activity that is being started.
#[test]
fn a_closed_engine_refuses_to_start() {
    let engine = Engine::with_clock(ManualClock::new());
    let running = engine
        .start(
            ActivityConfig::new("a")
                .cycles(0..1_000_000)
                .rate(RateSpec::new(1.0)),
            Takes(Duration::ZERO),
        )
        .unwrap();
    engine.close();
    assert_eq!(running.wait(), Outcome::Stopped);
    let e = engine
        .start(ActivityConfig::new("b"), Takes(Duration::ZERO))
        .unwrap_err();
    assert!(matches!(e, EngineError::Closed { .. }), "{e}");
}
