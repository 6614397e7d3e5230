//! The shared schedule on the async runner (issue 21): every cycle runs once
//! across the members, waits are measured from the shared slots, and a slow
//! store (a lease's round trip) never stalls the ops in flight on the worker
//! that is leasing. A real redis-server behind the fault proxy of
//! `tests/support/proxy.rs`; several engines in this process join one schedule,
//! as separate processes would.
//!
//! Without redis-server installed, each test prints `skipping: ...` and passes.
//! The times checked are wall-clock, with margins for a busy machine.
#![cfg(feature = "redis")]

mod support;

#[path = "support/naps.rs"]
mod naps;

use naps::Naps;
use paceline::{ActivityConfig, Control, Coordinate, Engine, Outcome, RateSpec};
use std::time::Duration;
use support::coord::{Count, at};
use support::proxy::redis_behind_proxy as server;

/// Async ops that count the runs of every cycle (`0..n`) and take `latency`
/// on the engine's timer (the worker's timerfd): an op ends on time only if its
/// worker keeps driving it. The workload, and its counts.
fn sleepy(n: u64, latency: Duration) -> (Naps, Count) {
    let runs = Count::new(n);
    let counted = runs.clone();
    (
        Naps::new(move |_| latency).hook(move |c| counted.add(c)),
        runs,
    )
}

/// Average mode (strictness 0): nothing is forfeited, so every late slot is
/// kept and its wait shows the backlog.
fn config(c: &Coordinate, cycles: u64, rate: f64, concurrency: usize) -> ActivityConfig {
    ActivityConfig::new("async-shared")
        .threads(2)
        .concurrency(concurrency)
        .cycles(0..cycles)
        .rate(RateSpec::new(rate).strictness(0.0))
        .coordinate(c.clone())
}

fn finish(runs: &[Control]) {
    for r in runs {
        assert!(r.is_async());
        let end = r.wait_timeout(Duration::from_secs(90));
        assert_eq!(
            end,
            Some(Outcome::Completed),
            "{:?}, {} ops, {:?}",
            r.status(),
            r.snapshot().ops(),
            r.coordinated()
        );
    }
}

/// Two members on the async runner share one schedule: every cycle runs
/// exactly once, the global counts are exact, and with room under the cap the
/// ops start near their shared slots.
#[test]
fn every_cycle_runs_once_across_async_members() {
    let Some((_redis, proxy)) = server() else {
        return;
    };
    let c = at(&proxy.url(), "async-once");
    let n = 6_000;
    let (work, counts) = sleepy(n, Duration::from_millis(5));
    let runs: Vec<Control> = (0..2)
        .map(|_| {
            Engine::new()
                .start(config(&c, n, 3_000.0, 64), work.clone())
                .expect("joins")
        })
        .collect();
    finish(&runs);
    assert_eq!(counts.wrong(), (0, 0), "(never run, run twice)");
    let st = runs[0].coordinated().expect("coordinated");
    assert_eq!(st.global_completed, n, "{st:?}");
    assert_eq!(st.global_missed, 0, "average mode forfeits nothing: {st:?}");
    assert_eq!(st.processes_seen, 2, "{st:?}");
    let ops: u64 = runs.iter().map(|r| r.snapshot().ops()).sum();
    assert_eq!(ops, n);
    // 3000/s of 5 ms ops is 15 in flight, far under 2 x 64: the median op
    // starts at its slot, give or take a busy machine.
    for r in &runs {
        let w = r.snapshot().wait().quantile(0.5);
        assert!(w < 20_000_000, "wait p50 {w} ns");
    }
}

/// The waits come from the shared slots: a cap that holds 200 ops/s under a
/// shared schedule of 1000/s keeps the late slots, in order, and the last ops
/// wait about the whole backlog (0.3 s of slots run in 1.5 s), which a wait
/// measured from when the worker got room would not show.
#[test]
fn waits_on_the_async_runner_are_measured_from_the_shared_slots() {
    let Some((_redis, proxy)) = server() else {
        return;
    };
    let c = at(&proxy.url(), "async-waits");
    let n = 300;
    // 2 threads x 2 in flight x (1 / 20 ms) = 200/s.
    let (work, counts) = sleepy(n, Duration::from_millis(20));
    let run = Engine::new()
        .start(config(&c, n, 1_000.0, 4), work.clone())
        .expect("joins");
    finish(std::slice::from_ref(&run));
    assert_eq!(counts.wrong(), (0, 0), "(never run, run twice)");
    let t = run.snapshot();
    assert_eq!(t.ops(), n);
    // The last op's slot is at 0.3 s and it starts at about 1.5 s.
    let max = t.wait().max();
    assert!(max > 800_000_000, "wait max {max} ns");
    assert!(t.in_flight_max() <= 4, "{}", t.in_flight_max());
    assert!(
        t.cap_full_share().unwrap_or(0.0) > 0.5,
        "{:?}",
        t.cap_full_share()
    );
}

/// A lease that takes 140 ms (the store behind 70 ms of latency each way)
/// does not stall the ops in flight on the worker that leases: each still ends
/// about 5 ms after it started. Before, the worker's thread sat in the round
/// trip and its ops' ends (and their IO) waited for it.
#[test]
fn ops_in_flight_keep_completing_while_a_lease_is_slow() {
    let Some((_redis, proxy)) = server() else {
        return;
    };
    let c = at(&proxy.url(), "async-slow-lease");
    let n = 150;
    let (work, counts) = sleepy(n, Duration::from_millis(5));
    // 200/s: one ticket per lease, so nearly every op is followed by a lease
    // while it is in flight.
    let run = Engine::new()
        .start(config(&c, n, 200.0, 32).threads(1), work.clone())
        .expect("joins");
    proxy.latency(Duration::from_millis(70));
    finish(std::slice::from_ref(&run));
    assert_eq!(counts.wrong(), (0, 0), "(never run, run twice)");
    let t = run.snapshot();
    assert_eq!(t.ops(), n);
    let st = run.coordinated().expect("coordinated");
    assert!(st.round_trips > 10, "{st:?}");
    // A 5 ms op, on a busy machine: far under one lease's 140 ms.
    let max = t.service().max();
    assert!(max < 80_000_000, "service max {max} ns");
    // The slots did wait for the slow leases (the schedule is honest about it).
    assert!(t.wait().max() > 100_000_000, "wait max {}", t.wait().max());
}
