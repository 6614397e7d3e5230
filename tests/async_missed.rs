//! Missed slots on the async runner (audit of issue 21, gap 10): under a strict
//! schedule, the lateness of an op that waited for room under the cap is
//! forfeited and counted as missed slots, as on the sync runner; under the
//! average schedule nothing is forfeited and the waits grow instead. On the
//! manual clock, exact.

#[path = "support/naps.rs"]
mod naps;

use naps::Naps;
use paceline::{ActivityConfig, Engine, ManualClock, RateSpec};
use std::time::Duration;

/// 1000/s asked of 5 ms ops, at most 2 in flight, one thread, with
/// `strictness`: the starts, the missed slots (the snapshot's and the
/// pacer's) and the longest wait.
fn run(strictness: f64) -> (Vec<(u64, u64)>, u64, f64, u64) {
    let w = Naps::new(|_| Duration::from_millis(5));
    let run = Engine::with_clock(ManualClock::new())
        .start(
            ActivityConfig::new("a")
                .cycles(0..40)
                .rate(RateSpec::new(1000.0).strictness(strictness))
                .concurrency(2),
            w.clone(),
        )
        .unwrap();
    assert!(run.is_async());
    run.wait();
    let t = run.snapshot();
    assert_eq!(t.ops(), 40);
    let stats = run.pacer_stats().unwrap();
    let starts = w.starts();
    (starts, t.missed(), stats.missed_slots, t.wait().max())
}

/// Two ops start at 0 and 1 ms, then each pair 5 ms after the one before, as
/// room comes under the cap (both schedules: the cap decides the starts).
fn expected_start(i: u64) -> u64 {
    (i / 2) * 5_000_000 + (i % 2) * 1_000_000
}

#[test]
fn a_strict_schedule_on_the_async_runner_forfeits_the_cap_s_lateness_as_missed_slots() {
    // Op 2's slot is 2 ms; room comes at 5 ms: a wait of 3 ms, forfeited, so
    // the next slot is 6 ms (op 3 starts on it as op 1 ends) and the 3 slices
    // in between are missed. Each pair after the first misses 3: 19 x 3.
    let (starts, missed, pacer_missed, wait_max) = run(1.0);
    for (i, &(cycle, at)) in starts.iter().enumerate() {
        assert_eq!(cycle, i as u64, "cycles start in order");
        assert_eq!(at, expected_start(i as u64), "cycle {cycle}");
    }
    assert_eq!(missed, 57, "pacer: {pacer_missed}");
    assert_eq!(missed, pacer_missed.floor() as u64);
    // Each late op keeps its slot and reports its wait: 3 ms, never more (to
    // the histogram's precision).
    assert!((2_999_000..3_001_000).contains(&wait_max), "{wait_max}");
}

#[test]
fn the_average_schedule_on_the_async_runner_misses_nothing_and_its_waits_grow() {
    let (starts, missed, pacer_missed, wait_max) = run(0.0);
    for (i, &(cycle, at)) in starts.iter().enumerate() {
        assert_eq!((cycle, at), (i as u64, expected_start(i as u64)));
    }
    assert_eq!((missed, pacer_missed), (0, 0.0));
    // The last op's slot is 39 ms; it starts at 96 ms.
    assert!((56_900_000..57_100_000).contains(&wait_max), "{wait_max}");
}
