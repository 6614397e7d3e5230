//! The shared schedule (`ActivityConfig::coordinate`) against a real redis-server:
//! several engines in this process join one schedule, as separate processes would
//! (each join is its own member with its own connections and threads).
//!
//! Without redis-server installed, each test prints `skipping: ...` and passes.
//! Rates here are wall-clock and checked with tolerance; exactness of the slot
//! arithmetic is pinned by the unit tests of `src/store/coord/`.
#![cfg(feature = "redis")]

mod support;

use paceline::{
    ActivityConfig, Coordinate, Engine, EngineError, OpError, OpRunner, Outcome, RateSpec,
    RunState, WorkerContext, Workload,
};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::coord::at;
use support::redis::{RedisServer, server};

/// Records every cycle it runs.
#[derive(Clone, Default)]
struct Record(Arc<Mutex<Vec<u64>>>);

struct RecordRunner(Arc<Mutex<Vec<u64>>>);

impl Workload for Record {
    fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
        Ok(Box::new(RecordRunner(self.0.clone())))
    }
}

impl OpRunner for RecordRunner {
    fn run(&mut self, cycle: u64) -> Result<(), OpError> {
        self.0.lock().unwrap().push(cycle);
        Ok(())
    }
}

/// `rate` in average mode (strictness 0): on a machine busy with other tests a
/// late start is caught up at once, so the durations checked here hold.
fn config(c: &Coordinate, cycles: u64, rate: f64) -> ActivityConfig {
    ActivityConfig::new("shared")
        .threads(2)
        .cycles(0..cycles)
        .rate(RateSpec::new(rate).strictness(0.0))
        .coordinate(c.clone())
}

fn wait_for(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !f() {
        assert!(t0.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn three_members_run_every_cycle_once_at_the_aggregate_rate() {
    let Some(redis) = server() else { return };
    let c = at(&redis.url(), "once");
    let rec = Record::default();
    let t0 = Instant::now();
    let runs: Vec<_> = (0..3)
        .map(|_| {
            Engine::new()
                .start(config(&c, 6000, 4000.0), rec.clone())
                .expect("joins")
        })
        .collect();
    for r in &runs {
        assert_eq!(r.wait(), Outcome::Completed);
    }
    let took = t0.elapsed().as_secs_f64();
    let mut all = rec.0.lock().unwrap().clone();
    all.sort_unstable();
    assert_eq!(
        all,
        (0..6000).collect::<Vec<_>>(),
        "every cycle exactly once"
    );
    // 6000 ops at 4000/s in total: 1.5 s, not 0.5 s (a rate per process) nor 4.5 s.
    assert!((1.3..2.5).contains(&took), "took {took:.2} s");
    let shares: Vec<u64> = runs.iter().map(|r| r.snapshot().ops()).collect();
    assert_eq!(shares.iter().sum::<u64>(), 6000, "{shares:?}");
    let st = runs[0].coordinated().expect("coordinated");
    assert_eq!(st.processes_seen, 3, "{st:?}");
    assert_eq!(st.global_completed, 6000, "{st:?}");
    assert_eq!(st.rerun_cycles, 0, "{st:?}");
    assert!(st.round_trips > 0 && st.tickets_leased > 0, "{st:?}");
    assert!(st.time_error_nanos < 5_000_000, "{st:?}");
}

#[test]
fn a_rate_change_pause_resume_and_stop_reach_every_member() {
    let Some(redis) = server() else { return };
    let c = at(&redis.url(), "live");
    let a = Engine::new()
        .start(config(&c, 1_000_000, 500.0), Record::default())
        .expect("joins");
    let b = Engine::new()
        .start(config(&c, 1_000_000, 500.0), Record::default())
        .expect("joins");
    a.set_rate(RateSpec::new(2000.0)).expect("running");
    wait_for("b to see 2000/s", Duration::from_millis(500), || {
        b.status().rate.map(|s| s.rate()) == Some(2000.0)
    });
    b.pause().expect("running");
    wait_for("a to pause", Duration::from_millis(500), || {
        a.status().state == RunState::Paused
    });
    // Snapshots are intervals: the first ends before the pause settles.
    std::thread::sleep(Duration::from_millis(20));
    let _ = (a.snapshot(), b.snapshot());
    std::thread::sleep(Duration::from_millis(200));
    let during = a.snapshot().ops() + b.snapshot().ops();
    assert_eq!(during, 0, "ops ran while paused");
    a.resume().expect("paused");
    wait_for("b to resume", Duration::from_millis(500), || {
        b.status().state == RunState::Running
    });
    b.stop();
    assert_eq!(
        a.wait_timeout(Duration::from_secs(2)),
        Some(Outcome::Stopped)
    );
    assert_eq!(b.wait(), Outcome::Stopped);
}

#[test]
fn an_unreachable_server_refuses_the_start_at_once() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a port");
    let c: Coordinate = format!("redis://127.0.0.1:{port}/x")
        .parse()
        .expect("valid");
    let t0 = Instant::now();
    let err = Engine::new()
        .start(config(&c, 10, 10.0), Record::default())
        .expect_err("nothing listens there");
    assert!(t0.elapsed() < Duration::from_secs(3));
    assert!(matches!(err, EngineError::Coordinate { .. }), "{err:?}");
    assert!(err.to_string().contains("cannot reach redis"), "{err}");
}

#[test]
fn a_shared_schedule_refuses_the_manual_clock() {
    let c: Coordinate = "redis://127.0.0.1:1/x".parse().expect("valid");
    let err = Engine::with_clock(paceline::ManualClock::new())
        .start(config(&c, 10, 10.0), Record::default())
        .expect_err("the store's time cannot be faked");
    assert!(err.to_string().contains("real clock"), "{err}");
}

#[test]
fn a_member_with_another_cycle_range_is_refused() {
    let Some(redis) = server() else { return };
    let c = at(&redis.url(), "mismatch");
    let a = Engine::new()
        .start(config(&c, 1_000_000, 100.0), Record::default())
        .expect("joins");
    let err = Engine::new()
        .start(config(&c, 500, 100.0), Record::default())
        .expect_err("another range");
    assert!(
        err.to_string().contains("cycles 0..1000000, not 0..500"),
        "{err}"
    );
    a.stop();
    a.wait();
}

#[test]
fn a_redis_restart_with_persistence_loses_no_cycle() {
    let Some(_) = server() else { return };
    let mut redis = RedisServer::start_persistent().expect("starts");
    let c = at(&redis.url(), "restart");
    let rec = Record::default();
    let runs: Vec<_> = (0..2)
        .map(|_| {
            Engine::new()
                .start(config(&c, 3000, 2000.0), rec.clone())
                .expect("joins")
        })
        .collect();
    std::thread::sleep(Duration::from_millis(400));
    redis.start_again().expect("restarts on the same port");
    for r in &runs {
        assert_eq!(r.wait(), Outcome::Completed);
    }
    let mut all = rec.0.lock().unwrap().clone();
    all.sort_unstable();
    let ran = all.len() as u64;
    all.dedup();
    assert_eq!(
        all,
        (0..3000).collect::<Vec<_>>(),
        "every cycle at least once"
    );
    // A claim whose reply the restart cut off is run again once it expires, and
    // counted: nothing runs twice uncounted.
    let st = runs[0].coordinated().expect("coordinated");
    assert!(ran - 3000 <= st.rerun_cycles, "{ran} ops, {st:?}");
}

#[test]
fn a_lost_store_stops_pacing_and_fails_the_run() {
    let Some(mut redis) = server() else { return };
    let c = at(&redis.url(), "lost");
    let run = Engine::new()
        .start(config(&c, 1_000_000, 1000.0), Record::default())
        .expect("joins");
    std::thread::sleep(Duration::from_millis(300));
    redis.stop();
    let t0 = Instant::now();
    let out = run.wait_timeout(Duration::from_secs(10)).expect("it ends");
    let Outcome::Failed(why) = out else {
        panic!("{out:?}")
    };
    assert!(why.contains("lost the shared schedule"), "{why}");
    assert!(why.contains("no local fallback"), "{why}");
    // A stopped server refuses connections: it cannot be reached (issue 23, item 2:
    // told apart from a server that does not answer).
    assert!(why.contains("cannot be reached"), "{why}");
    assert!(!why.contains("does not answer"), "{why}");
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    // No local schedule took over: about 300 ms of ops at 1000/s, then none.
    let ops = run.snapshot().ops();
    assert!((150..500).contains(&ops), "{ops} ops");
    assert_eq!(run.failure_kind().as_deref(), Some("shared-schedule"));
}

#[test]
fn a_schedule_erased_by_a_restart_without_persistence_fails_the_run() {
    let Some(mut redis) = server() else { return };
    let c = at(&redis.url(), "erased");
    let run = Engine::new()
        .start(config(&c, 1_000_000, 1000.0), Record::default())
        .expect("joins");
    std::thread::sleep(Duration::from_millis(200));
    redis.start_again().expect("restarts empty");
    let out = run.wait_timeout(Duration::from_secs(10)).expect("it ends");
    let Outcome::Failed(why) = out else {
        panic!("{out:?}")
    };
    assert!(why.contains("vanished from the store"), "{why}");
}

#[test]
fn a_member_that_joins_late_takes_a_share_and_the_sum_holds() {
    let Some(redis) = server() else { return };
    let c = at(&redis.url(), "late");
    let rec = Record::default();
    let t0 = Instant::now();
    let first = Engine::new()
        .start(config(&c, 4000, 2000.0), rec.clone())
        .expect("joins");
    std::thread::sleep(Duration::from_millis(800));
    // The late one asks for another rate: the schedule's spec is kept.
    let late = Engine::new()
        .start(
            config(&c, 4000, 2000.0).rate(RateSpec::new(50_000.0)),
            rec.clone(),
        )
        .expect("joins");
    assert_eq!(late.status().rate.map(|s| s.rate()), Some(2000.0));
    assert_eq!(first.wait(), Outcome::Completed);
    assert_eq!(late.wait(), Outcome::Completed);
    let took = t0.elapsed().as_secs_f64();
    // 4000 ops at 2000/s in total: 2 s whoever runs them.
    assert!((1.8..3.0).contains(&took), "took {took:.2} s");
    let (a, b) = (first.snapshot().ops(), late.snapshot().ops());
    assert_eq!(a + b, 4000);
    assert!(b > 500, "the late member ran {b} of 4000");
    let mut all = rec.0.lock().unwrap().clone();
    all.sort_unstable();
    assert_eq!(all, (0..4000).collect::<Vec<_>>());
}

/// Takes 2 ms per op.
struct Slow;
struct SlowRunner;

impl Workload for Slow {
    fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
        Ok(Box::new(SlowRunner))
    }
}

impl OpRunner for SlowRunner {
    fn run(&mut self, _: u64) -> Result<(), OpError> {
        std::thread::sleep(Duration::from_millis(2));
        Ok(())
    }
}

#[test]
fn strict_mode_forfeits_lateness_through_the_store_and_average_mode_keeps_it() {
    let Some(redis) = server() else { return };
    // One thread of 2 ms ops cannot keep 1000/s: about half the slots are late.
    let run = |name: &str, strictness: f64| {
        let c = at(&redis.url(), name);
        let cfg = ActivityConfig::new("slow")
            .cycles(0..300)
            .rate(RateSpec::new(1000.0).strictness(strictness))
            .coordinate(c);
        let r = Engine::new().start(cfg, Slow).expect("joins");
        assert_eq!(r.wait(), Outcome::Completed);
        (r.snapshot(), r.coordinated().expect("coordinated"))
    };
    let (strict, shared) = run("strict", 1.0);
    // Strict: a late lease moves the shared counter past the late tickets (counted
    // missed), so waits stay within about an op, never a growing backlog.
    assert!(shared.global_missed > 100, "{shared:?}");
    // Alone on the schedule, the process's own missed slots are the global ones:
    // each forfeit counted once (a lease's forfeits were once counted twice).
    assert_eq!(strict.missed(), shared.global_missed, "{shared:?}");
    // Within about an op, plus what a busy machine's scheduler adds: a 2-core
    // machine shared by builds once saw 47 ms (issue 25), so the bound is wide
    // and the contrast with average mode, below, is the real check.
    let strict_p99 = strict.wait().p99();
    assert!(strict_p99 < 150_000_000, "p99 {strict_p99}");
    let (average, shared) = run("average", 0.0);
    // Average: nothing is forfeited; the backlog grows to hundreds of ms.
    assert_eq!(shared.global_missed, 0, "{shared:?}");
    let average_max = average.wait().max();
    assert!(average_max > 200_000_000, "max {average_max}");
    assert!(
        strict_p99 * 2 < average_max,
        "strict p99 {strict_p99}, average max {average_max}"
    );
}

/// Stalls 300 ms at cycle 100, else takes no time.
struct Stall;
struct StallRunner;

impl Workload for Stall {
    fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
        Ok(Box::new(StallRunner))
    }
}

impl OpRunner for StallRunner {
    fn run(&mut self, cycle: u64) -> Result<(), OpError> {
        if cycle == 100 {
            std::thread::sleep(Duration::from_millis(300));
        }
        Ok(())
    }
}

#[test]
fn burst_allowance_releases_a_backlog_at_s_times_the_rate_through_the_store() {
    let Some(redis) = server() else { return };
    let run = |name: &str, strictness: f64| {
        let cfg = ActivityConfig::new("stall")
            .cycles(0..600)
            .rate(RateSpec::new(1000.0).strictness(strictness))
            .coordinate(at(&redis.url(), name));
        let r = Engine::new().start(cfg, Stall).expect("joins");
        assert_eq!(r.wait(), Outcome::Completed);
        r.snapshot().elapsed_nanos() as f64 / 1e9
    };
    // Slots 0..600 ms; a 300 ms stall at 100 ms leaves a 300 ms backlog at 400 ms.
    // Average mode runs it at once: done at the last slot, about 0.6 s.
    let average = run("burst-average", 0.0);
    assert!(
        (0.55..0.75).contains(&average),
        "average mode took {average:.3} s"
    );
    // Burst allowance 1.25: the backlog goes at 1250/s in total (the lease script
    // moves the anchor), so the 500 ops after the stall take 0.4 s: about 0.8 s.
    let burst = run("burst-1.25", 1.25);
    assert!(
        burst > 0.75,
        "burst 1.25 took {burst:.3} s: the backlog was not spaced"
    );
    // A sanity bound only (strictness 1, the backlog never caught up, would be
    // about 0.9 s): a busy machine makes each slot of 1000/s a little late.
    assert!(burst < 2.5, "burst 1.25 took {burst:.3} s");
}

#[test]
fn a_dead_members_leased_and_unused_tickets_are_counted_missed_when_it_expires() {
    let Some(redis) = server() else { return };
    let c = at(&redis.url(), "ledger");
    let run = Engine::new()
        .start(config(&c, 1_000_000, 500.0), Record::default())
        .expect("joins");
    // A member that leased 50 tickets, had used 20 at its last call, and died: its
    // membership expired long ago (expiry 1 µs after the epoch).
    let prefix = "{paceline:sched:ledger}";
    let m = format!("{prefix}:m");
    let l = format!("{prefix}:l");
    assert_eq!(redis.integer(&["HSET", &m, "99", "1"]), 1);
    assert_eq!(redis.integer(&["HSET", &l, "99", "50:20"]), 1);
    // The next heartbeat prunes it and counts the 30 it never used.
    wait_for("the dead member's tickets", Duration::from_secs(2), || {
        run.coordinated().is_some_and(|s| s.global_missed == 30)
    });
    assert_eq!(redis.integer(&["HEXISTS", &l, "99"]), 0);
    // The live member's own ledger is there, and is not counted.
    assert_eq!(redis.integer(&["HEXISTS", &l, "1"]), 1);
    run.stop();
    run.wait();
    // Leaving, it gives its unused tickets back (or counts them) by range, and its
    // ledger goes: nothing is counted twice.
    assert_eq!(redis.integer(&["HEXISTS", &l, "1"]), 0);
}

#[test]
fn joining_a_stopped_schedule_whose_processes_are_finishing_is_refused() {
    let Some(redis) = server() else { return };
    let c = at(&redis.url(), "stopped");
    let a = Engine::new()
        .start(config(&c, 1_000_000, 100.0), Record::default())
        .expect("joins");
    // Stopped everywhere, as a control `stop` does, while `a` is still a member.
    let s = "{paceline:sched:stopped}:s";
    assert_eq!(redis.integer(&["HSET", s, "stopped", "1"]), 0);
    let err = Engine::new()
        .start(config(&c, 1_000_000, 100.0), Record::default())
        .expect_err("a stopped schedule");
    assert!(err.to_string().contains("was stopped"), "{err}");
    a.stop();
    a.wait();
}

#[test]
fn a_ramp_reaches_the_other_members_as_its_end_not_as_its_steps() {
    let Some(redis) = server() else { return };
    let c = at(&redis.url(), "ramp");
    let a = Engine::new()
        .start(config(&c, 1_000_000, 200.0), Record::default())
        .expect("joins");
    let b = Engine::new()
        .start(config(&c, 1_000_000, 200.0), Record::default())
        .expect("joins");
    a.ramp_to(RateSpec::new(1000.0), Duration::from_millis(400))
        .expect("running");
    wait_for("b to reach the ramp's end", Duration::from_secs(3), || {
        b.status().rate.map(|s| s.rate()) == Some(1000.0)
    });
    std::thread::sleep(Duration::from_millis(100));
    let rates = b
        .timeline()
        .iter()
        .filter(|e| matches!(e.event, paceline::Event::Rate { .. }))
        .count();
    // The ramp's steps (every 2 ms here) change b's rate but are not events on
    // its timeline; the end is.
    assert_eq!(rates, 1, "{:?}", b.timeline());
    a.stop();
    a.wait();
    b.wait();
}

#[test]
fn the_numbers_read_once_a_run_has_finished_are_the_final_ones() {
    let Some(redis) = server() else { return };
    let c = at(&redis.url(), "final");
    let run = Engine::new()
        .start(config(&c, 300, 3000.0), Record::default())
        .expect("joins");
    // A report loop sees the run finished, then reads the shared numbers at once
    // (without `wait`): they include this process's last counts, written by the
    // heartbeat it sends as it leaves (they once lagged until the watcher left).
    while !run.is_finished() {
        std::thread::sleep(Duration::from_millis(1));
    }
    let st = run.coordinated().expect("coordinated");
    assert_eq!(st.global_completed, 300, "{st:?}");
}
