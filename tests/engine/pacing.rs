//! Slots and waits on the manual clock: every op starts at its slot when the
//! caller keeps up, waits grow by the shortfall when it cannot, strict pacing
//! counts missed slots, waits are measured from the engine's own reading, and
//! rate changes and ramps apply from the next op.

use crate::workloads::{LONG, Recording, Script, Takes};
use paceline::{
    ActivityConfig, Clock, ControlError, Engine, Event, ManualClock, Outcome, RateSpec,
};
use std::time::{Duration, Instant};

#[test]
fn manual_clock_a_caller_that_keeps_up_starts_every_op_at_its_slot() {
    let clock = ManualClock::new();
    let engine = Engine::with_clock(clock.clone());
    let run = engine
        .start(
            ActivityConfig::new("a")
                .cycles(0..1000)
                .rate(RateSpec::new(1000.0)),
            Takes(Duration::from_micros(300)),
        )
        .unwrap();
    assert_eq!(run.wait(), Outcome::Completed);
    let t = run.snapshot();
    assert_eq!(t.ops(), 1000);
    assert_eq!(t.wait().max(), 0);
    assert_eq!(t.service().count(), 1000);
    assert!((299_700..300_300).contains(&t.service().min()));
    // Slots 0..999 ms; the last op ends 300 µs after its slot.
    assert_eq!(clock.now(), 999_300_000);
    assert_eq!(t.missed(), 0);
}

#[test]
fn manual_clock_an_overloaded_average_pacer_shows_wait_growing_by_the_shortfall() {
    // Rate 1000/s (1 ms slots), ops take 2 ms, average mode: op k starts at 2k ms
    // for slot k ms, so its wait is exactly k ms; service stays 2 ms.
    let clock = ManualClock::new();
    let run = Engine::with_clock(clock.clone())
        .start(
            ActivityConfig::new("over")
                .cycles(0..101)
                .rate(RateSpec::new(1000.0).strictness(0.0)),
            Takes(Duration::from_millis(2)),
        )
        .unwrap();
    run.wait();
    let t = run.snapshot();
    assert_eq!(t.wait().min(), 0);
    assert!((100_000_000..100_100_000).contains(&t.wait().max()));
    assert!((2_000_000..2_002_000).contains(&t.service().max()));
    assert!((102_000_000..102_100_000).contains(&t.response().max()));
    assert_eq!(clock.now(), 202_000_000);
}

#[test]
fn manual_clock_strict_pacer_counts_missed_slots() {
    // Strict (s = 1): lateness is forfeited. Ops take 2.5 ms at 1 ms slots. Op k
    // (k >= 1) starts at 2.5k ms, 1.5 ms after its slot (the previous start plus a
    // slice); the schedule then skips to now, and the skipped time is missed slots.
    let run = Engine::with_clock(ManualClock::new())
        .start(
            ActivityConfig::new("strict")
                .cycles(0..10)
                .rate(RateSpec::new(1000.0).strictness(1.0)),
            Takes(Duration::from_micros(2_500)),
        )
        .unwrap();
    run.wait();
    let stats = run.pacer_stats().unwrap();
    let t = run.snapshot();
    assert_eq!(t.missed(), stats.missed_slots.floor() as u64);
    assert!(t.missed() >= 9, "{stats:?}");
    assert_eq!(t.wait().min(), 0);
    assert!((1_499_000..1_501_000).contains(&t.wait().max()));
}

/// Issue 12.3: the wait is the engine's own service-start reading minus the slot,
/// so a grant handed out with an old start cannot hide a stall.
#[test]
fn manual_clock_wait_is_measured_from_the_engines_own_reading() {
    let clock = ManualClock::new();
    // 10M/s in average mode: slots 100 ns apart. Op 0 takes 1.5 µs, op 1 a whole
    // second; op 2's slot is 200 ns, and it starts at 1.0000015 s.
    let work = Script::new(|ctx, cycle| {
        match cycle {
            0 => ctx.sleep(Duration::from_nanos(1_500)),
            1 => ctx.sleep(Duration::from_secs(1)),
            _ => 0,
        };
        Ok(())
    });
    let run = Engine::with_clock(clock.clone())
        .start(
            ActivityConfig::new("stall")
                .cycles(0..3)
                .rate(RateSpec::new(1e7).strictness(0.0)),
            work,
        )
        .unwrap();
    run.wait();
    let t = run.snapshot();
    let late = 1_000_001_500 - 200;
    assert!(
        (late - late / 1000..=late + late / 1000).contains(&t.wait().max()),
        "wait max {} ns, expected about {late}",
        t.wait().max()
    );
    assert!(t.response().max() >= t.wait().max());
}

#[test]
fn rate_changes_apply_to_the_next_op_and_land_in_the_timeline() {
    // One thread on the manual clock; at cycle 5 the op holds while the test moves
    // the rate from 100/s to 1000/s (configure keeps the schedule's state).
    let clock = ManualClock::new();
    let work = Recording::default();
    let (reached, go) = work.hook(5);
    let run = Engine::with_clock(clock.clone())
        .start(
            ActivityConfig::new("r")
                .cycles(0..10)
                .rate(RateSpec::new(100.0)),
            work,
        )
        .unwrap();
    reached.recv_timeout(LONG).unwrap();
    assert_eq!(clock.now(), 50_000_000); // slot 5 of 10 ms
    run.set_rate(RateSpec::new(1000.0)).unwrap();
    go.send(()).unwrap();
    run.wait();
    // Slot 6 was not granted before the change: the raise cuts the schedule, 10 ms
    // ahead of now, at the new slice (docs/pacing.md, "Rate raised from far ahead";
    // before session 17 slot 6 kept slot 5's old slice, at 60 ms), so 6..9 follow
    // slot 5 1 ms apart.
    assert_eq!(clock.now(), 54_000_000);
    let tl = run.timeline();
    assert_eq!(tl[1].at, 50_000_000);
    assert_eq!(
        tl[1].event,
        Event::Rate {
            from: 100.0,
            to: 1000.0
        }
    );
}

#[test]
fn an_unpaced_run_becomes_paced_by_set_rate() {
    let clock = ManualClock::new();
    let work = Recording::default();
    let (reached, go) = work.hook(2);
    let run = Engine::with_clock(clock.clone())
        .start(ActivityConfig::new("u").cycles(0..6), work)
        .unwrap();
    reached.recv_timeout(LONG).unwrap();
    assert_eq!(clock.now(), 0);
    assert_eq!(run.status().rate, None);
    run.set_rate(RateSpec::new(10.0)).unwrap();
    go.send(()).unwrap();
    run.wait();
    // Cycles 3, 4, 5 paced from now: slots at 0, 100 ms and 200 ms.
    assert_eq!(clock.now(), 200_000_000);
}

#[test]
fn ramp_reaches_its_target_and_is_cancelled_by_set_rate() {
    let run = Engine::new()
        .start(
            ActivityConfig::new("ramp")
                .cycles(0..10_000_000)
                .rate(RateSpec::new(100.0)),
            Recording::default(),
        )
        .unwrap();
    run.ramp_to(RateSpec::new(5000.0), Duration::from_millis(30))
        .unwrap();
    let t0 = Instant::now();
    while run.status().rate.unwrap().rate() != 5000.0 && t0.elapsed() < LONG {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(run.status().rate.unwrap().rate(), 5000.0);
    run.ramp_to(RateSpec::new(100_000.0), Duration::from_secs(60))
        .unwrap();
    std::thread::sleep(Duration::from_millis(20));
    run.set_rate(RateSpec::new(200.0)).unwrap();
    std::thread::sleep(Duration::from_millis(150));
    assert_eq!(run.status().rate.unwrap().rate(), 200.0);
    run.stop();
    run.wait();
    let events: Vec<String> = run.timeline().iter().map(|e| e.event.to_string()).collect();
    assert_eq!(events[1], "ramp to 5000 over 0.030s");
    // Issue 24, item 15: the end is "ramp done", once, not a rate change from the
    // last step's raw float (`rate 19966.125139163058 -> 20000`).
    assert_eq!(events[2], "ramp done", "{events:?}");
    assert_eq!(
        events.iter().filter(|e| e.starts_with("rate ")).count(),
        1,
        "only the set_rate: {events:?}"
    );
}

/// Issue 18.4: a ramp whose end cannot be represented is refused, not run.
#[test]
fn a_ramp_too_long_to_time_is_refused() {
    let run = Engine::with_clock(ManualClock::new())
        .start(
            ActivityConfig::new("r")
                .cycles(0..1)
                .rate(RateSpec::new(10.0)),
            Takes(Duration::ZERO),
        )
        .unwrap();
    let e = run
        .ramp_to(RateSpec::new(5000.0), Duration::from_secs(6_000_000 * 3600))
        .unwrap_err();
    assert!(matches!(e, ControlError::BadValue { .. }), "{e}");
    assert!(e.to_string().contains("at most 100 years"), "{e}");
    run.wait();
}
