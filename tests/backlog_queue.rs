//! The async runner's split of a backlog's waits on the manual clock: a slot
//! already due when room came at the cap waited for room (`queue`), never for
//! the generator (`dispatch`), however many slots the backlog holds; a slot
//! due after room came that the worker takes late is the worker's own lateness.

#[path = "support/naps.rs"]
mod naps;

use naps::Naps;
use paceline::{ActivityConfig, Engine, ManualClock, RateSpec, Snapshot};
use std::time::Duration;

const MS: u64 = 1_000_000;

/// Within HdrHistogram's 3 significant digits of `want`.
fn near(got: f64, want: f64) -> bool {
    (got - want).abs() <= want / 1000.0 + 1.0
}

/// One thread at 1000/s (slots 1 ms apart, every slot kept in order), at most
/// 4 in flight, `cycles` ops of `w`; on `clock`.
fn run(clock: &ManualClock, cycles: u64, w: &Naps) -> Snapshot {
    let engine = Engine::with_clock(clock.clone());
    let run = engine
        .start(
            ActivityConfig::new("a")
                .cycles(0..cycles)
                .rate(RateSpec::new(1000.0).strictness(0.0))
                .concurrency(4),
            w.clone(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(run.is_async());
    run.wait();
    run.snapshot()
}

/// Cycles 0-3 (slots 0-3 ms) fill the cap and all end at 10 ms.
fn end_together(cycle: u64) -> Option<Duration> {
    (cycle < 4).then(|| Duration::from_millis(10 - cycle))
}

#[test]
fn regression_h2_a_backlog_started_when_room_came_is_all_queueing() {
    // Regression (session 16's audit, H2: "generator-bound: each op costs the
    // generator 73.4 ms", 0.02 cores used): cycles 0-3 fill the cap and end
    // together at 10 ms; cycles 4-9, due at 4-9 ms, all start then, in a row,
    // each waiting 6 down to 1 ms for room, and cycles 10-19 start on their
    // slots. Only cycle 4 read its wait as queueing: the worker's `call` was
    // zeroed after each start, so cycles 5-9 read theirs as dispatch (the
    // generator's own lateness), though the worker was never late on its own.
    let clock = ManualClock::new();
    let w = Naps::new(|c| end_together(c).unwrap_or(Duration::ZERO));
    let t = run(&clock, 20, &w);
    let starts = w.starts();
    let want: Vec<(u64, u64)> = (0..20)
        .map(|c| {
            (
                c,
                if (4..10).contains(&c) {
                    10 * MS
                } else {
                    c * MS
                },
            )
        })
        .collect();
    assert_eq!(starts, want, "the backlog starts when room came, in order");
    assert_eq!(t.ops(), 20);
    assert_eq!(t.in_flight_max(), 4);
    assert_eq!(
        t.dispatch().max(),
        0,
        "the worker was never late on its own"
    );
    assert!(
        near(t.queue().max() as f64, 6e6),
        "cycle 4 waited 6 ms for room: {:?}",
        t.queue()
    );
    // 6+5+4+3+2+1 = 21 ms of waits over 20 ops, every one of them queueing.
    assert!(near(t.wait().mean(), 21e6 / 20.0), "{:?}", t.wait());
    assert!(near(t.queue().mean(), t.wait().mean()), "{:?}", t.queue());
}

#[test]
fn regression_h2_a_backlog_that_fills_the_cap_again_is_all_queueing() {
    // As above, but each op of the backlog takes 2 ms: cycles 4-7 start at 10 ms
    // and fill the cap again, 8-11 start at 12 ms when they end, 12-14 at 14
    // ms, and from cycle 15 (15 ms) every op is on its slot. Every late start
    // waited for room, nothing else: queue is the whole wait, dispatch 0.
    let clock = ManualClock::new();
    let w = Naps::new(|c| end_together(c).unwrap_or(Duration::from_millis(2)));
    let t = run(&clock, 24, &w);
    let starts = w.starts();
    let at = |c: u64| match c {
        0..=3 => c * MS,
        4..=7 => 10 * MS,
        8..=11 => 12 * MS,
        12..=14 => 14 * MS,
        _ => c * MS,
    };
    let want: Vec<(u64, u64)> = (0..24).map(|c| (c, at(c))).collect();
    assert_eq!(
        starts, want,
        "each round of the backlog starts when room came"
    );
    assert_eq!(t.ops(), 24);
    assert_eq!(
        t.dispatch().max(),
        0,
        "the worker was never late on its own"
    );
    // Waits: 6+5+4+3 (cycles 4-7), 4+3+2+1 (8-11), 2+1+0 (12-14): 31 ms.
    assert!(near(t.queue().max() as f64, 6e6), "{:?}", t.queue());
    assert!(near(t.wait().mean(), 31e6 / 24.0), "{:?}", t.wait());
    assert!(near(t.queue().mean(), t.wait().mean()), "{:?}", t.queue());
}

#[test]
fn after_a_backlog_a_worker_late_on_its_own_under_its_cap_is_dispatch() {
    // The rule issue 21's done-when run set (and `tests/async_runner.rs`'s
    // `regression_issue21_a_late_worker_under_its_cap_is_dispatch_not_queueing`
    // pins with no backlog) holds after one too: room came at 10 ms for the
    // backlog of cycles 4-9; later, starting cycle 12 keeps the worker busy 3
    // ms (its own work), so cycles 13 and 14, due at 13 and 14 ms, start at
    // 15 ms. They were due after room came: their lateness is dispatch, none of
    // it queueing.
    let clock = ManualClock::new();
    let busy = clock.clone();
    let w = Naps::new(|c| end_together(c).unwrap_or(Duration::ZERO)).hook(move |c| {
        if c == 12 {
            busy.advance(Duration::from_millis(3));
        }
    });
    let t = run(&clock, 20, &w);
    let starts = w.starts();
    assert_eq!(starts[9], (9, 10 * MS), "the backlog ends at 10 ms");
    assert_eq!(starts[12], (12, 12 * MS));
    assert_eq!(
        starts[13],
        (13, 15 * MS),
        "cycle 13 waits for the busy worker"
    );
    assert_eq!(starts[14], (14, 15 * MS), "cycle 14 too");
    assert_eq!(starts[15], (15, 15 * MS), "and cycle 15, due then");
    assert_eq!(t.ops(), 20);
    assert!(
        near(t.queue().max() as f64, 6e6),
        "the backlog's waits are queueing: {:?}",
        t.queue()
    );
    assert!(
        near(t.dispatch().max() as f64, 2e6),
        "cycle 13's 2 ms are the worker's: {:?}",
        t.dispatch()
    );
    // Waits: 21 ms of queueing (cycles 4-9) and 2+1 ms of dispatch (13, 14).
    assert!(near(t.queue().mean(), 21e6 / 20.0), "{:?}", t.queue());
    assert!(near(t.dispatch().mean(), 3e6 / 20.0), "{:?}", t.dispatch());
}
