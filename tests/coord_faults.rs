//! The shared schedule under store faults (issue 23), driven through the fault
//! proxy of `tests/support/proxy.rs` in front of a real redis-server: a stall, a
//! reply lost after its request ran, a cut connection. Several engines in this
//! process join one schedule, as separate processes would.
//!
//! Without redis-server installed, each test prints `skipping: ...` and passes.
//! The times checked are wall-clock, with margins for a busy machine.
#![cfg(feature = "redis")]

mod support;

use paceline::{ActivityConfig, Control, Coordinate, Engine, Outcome, RateSpec};
use std::time::{Duration, Instant};
use support::coord::{Count, at};
use support::proxy::redis_behind_proxy as server;

/// Average mode (strictness 0): nothing is forfeited, so `global_missed` must be 0.
fn config(c: &Coordinate, cycles: u64, rate: f64) -> ActivityConfig {
    ActivityConfig::new("faults")
        .threads(2)
        .cycles(0..cycles)
        .rate(RateSpec::new(rate).strictness(0.0))
        .coordinate(c.clone())
}

fn two(c: &Coordinate, cycles: u64, rate: f64, work: &Count) -> Vec<Control> {
    (0..2)
        .map(|_| {
            Engine::new()
                .start(config(c, cycles, rate), work.clone())
                .expect("joins")
        })
        .collect()
}

/// Issue 23, item 1 (the done-when run): a 2.5 s store stall, shorter than the
/// grace, ran scripts twice when the server resumed (BEAT's counts added twice,
/// a CLAIM's chunk orphaned, a LEASE's tickets lost) and pruned live members.
/// Now: every cycle once, the global counts exact, nothing missed, completed.
#[test]
fn a_stall_shorter_than_the_grace_is_ridden_out_with_every_count_exact() {
    let Some((_redis, proxy)) = server() else {
        return;
    };
    let c = at(&proxy.url(), "stall");
    let n = 60_000;
    let work = Count::new(n);
    let runs = two(&c, n, 20_000.0, &work);
    std::thread::sleep(Duration::from_millis(800));
    proxy.stall();
    std::thread::sleep(Duration::from_millis(2500));
    proxy.resume();
    for r in &runs {
        assert_eq!(
            r.wait_timeout(Duration::from_secs(60)),
            Some(Outcome::Completed)
        );
    }
    assert_eq!(work.wrong(), (0, 0), "(never run, run twice)");
    let st = runs[0].coordinated().expect("coordinated");
    assert_eq!(st.global_completed, n, "{st:?}");
    assert_eq!(st.global_missed, 0, "average mode forfeits nothing: {st:?}");
    assert_eq!(st.rerun_cycles, 0, "no member was pruned: {st:?}");
    assert_eq!(st.processes_seen, 2, "{st:?}");
    // Each process's books balance through the stall: every ticket it leased
    // was granted (an op ran on it), missed, given back or voided.
    for r in &runs {
        let st = r.coordinated().expect("coordinated");
        let t = st.tickets;
        assert_eq!(
            st.tickets_leased,
            t.granted + t.missed + t.given_back + t.voided,
            "{st:?}"
        );
        assert_eq!(t.granted, r.snapshot().ops(), "{st:?}");
    }
}

/// Issue 23, item 1: replies lost after their requests ran (the client sends each
/// again on a new connection): each script must count once.
#[test]
fn replies_lost_after_their_requests_ran_count_once() {
    let Some((_redis, proxy)) = server() else {
        return;
    };
    let c = at(&proxy.url(), "dropped");
    let n = 20_000;
    let work = Count::new(n);
    let runs = two(&c, n, 10_000.0, &work);
    for _ in 0..3 {
        std::thread::sleep(Duration::from_millis(300));
        proxy.drop_replies();
        std::thread::sleep(Duration::from_millis(400));
        proxy.resume();
    }
    for r in &runs {
        assert_eq!(
            r.wait_timeout(Duration::from_secs(60)),
            Some(Outcome::Completed)
        );
    }
    assert_eq!(work.wrong(), (0, 0), "(never run, run twice)");
    let st = runs[0].coordinated().expect("coordinated");
    assert_eq!(st.global_completed, n, "{st:?}");
    assert_eq!(st.global_missed, 0, "{st:?}");
    assert_eq!(st.rerun_cycles, 0, "{st:?}");
}

/// Connections cut under the members: they reconnect, nothing counts twice.
#[test]
fn cut_connections_are_made_again_and_count_once() {
    let Some((_redis, proxy)) = server() else {
        return;
    };
    let c = at(&proxy.url(), "cut");
    let n = 10_000;
    let work = Count::new(n);
    let runs = two(&c, n, 10_000.0, &work);
    for _ in 0..4 {
        std::thread::sleep(Duration::from_millis(150));
        proxy.cut();
    }
    for r in &runs {
        assert_eq!(
            r.wait_timeout(Duration::from_secs(60)),
            Some(Outcome::Completed)
        );
    }
    assert_eq!(work.wrong(), (0, 0), "(never run, run twice)");
    let st = runs[0].coordinated().expect("coordinated");
    assert_eq!(st.global_completed, n, "{st:?}");
    assert_eq!(st.global_missed, 0, "{st:?}");
}

/// Issue 23, item 2: a stall longer than the grace was ridden through silently
/// (5 s) or found late (8 s, at 7.3 s), with a message about a server that cannot
/// be reached. Now the run fails about 3 s into the stall, saying the store does
/// not answer.
#[test]
fn a_stall_longer_than_the_grace_fails_the_run_within_the_grace_saying_so() {
    let Some((_redis, proxy)) = server() else {
        return;
    };
    let c = at(&proxy.url(), "long-stall");
    let work = Count::new(1_000_000);
    let runs = two(&c, 1_000_000, 2_000.0, &work);
    std::thread::sleep(Duration::from_millis(500));
    let t0 = Instant::now();
    proxy.stall();
    let mut took = Vec::new();
    for r in &runs {
        let out = r.wait_timeout(Duration::from_secs(10)).expect("it ends");
        took.push(t0.elapsed());
        let Outcome::Failed(why) = out else {
            panic!("{out:?}")
        };
        assert!(why.contains("does not answer"), "{why}");
        assert!(!why.contains("cannot be reached"), "{why}");
        assert!(why.contains(&proxy.url()), "names the store: {why}");
    }
    proxy.resume();
    // 3 s of grace; 3.5 s is the promise, with room for a busy machine.
    for t in &took {
        assert!(
            (Duration::from_millis(2900)..Duration::from_millis(4500)).contains(t),
            "failed {t:?} into the stall (grace 3 s): {took:?}"
        );
    }
}

fn ops(r: &Control) -> u64 {
    r.snapshot();
    r.totals().ops()
}

/// Issue 23, item 3: `rate=0` on a shared schedule ran unpaced at full speed while
/// reporting itself paused. It pauses, as it does alone, until a rate is set.
#[test]
fn rate_zero_on_a_shared_schedule_pauses_until_a_rate_is_set() {
    let Some((_redis, proxy)) = server() else {
        return;
    };
    let c = at(&proxy.url(), "zero");
    let work = Count::new(1_000_000);
    let run = Engine::new()
        .start(
            ActivityConfig::new("zero")
                .threads(2)
                .cycles(0..1_000_000)
                .rate(RateSpec::paused())
                .coordinate(c),
            work,
        )
        .expect("joins");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(ops(&run), 0, "ran while the shared rate was 0");
    run.set_rate(RateSpec::new(1000.0)).expect("running");
    std::thread::sleep(Duration::from_millis(500));
    let n = ops(&run);
    assert!((200..900).contains(&n), "{n} ops in 0.5 s at 1000/s");
    run.stop();
    run.wait();
}

/// Issue 23, item 4: tickets leased before a pause were granted after it with
/// their old slots (a 1 s pause made 1000 ms waits, released as a burst). They
/// are dropped: after the resume, waits are short.
#[test]
fn tickets_leased_before_a_pause_are_not_granted_on_their_old_slots() {
    let Some((_redis, proxy)) = server() else {
        return;
    };
    let c = at(&proxy.url(), "pause-tickets");
    let run = Engine::new()
        .start(config(&c, 1_000_000, 2000.0), Count::new(1_000_000))
        .expect("joins");
    std::thread::sleep(Duration::from_millis(300));
    run.pause().expect("running");
    std::thread::sleep(Duration::from_millis(1000));
    let _ = run.snapshot();
    run.resume().expect("paused");
    std::thread::sleep(Duration::from_millis(300));
    let after = run.snapshot();
    run.stop();
    run.wait();
    assert!(after.ops() > 100, "{} ops after the resume", after.ops());
    let w = after.wait().max();
    assert!(
        w < 300_000_000,
        "worst wait after a 1 s pause: {} ms (an old slot)",
        w / 1_000_000
    );
}

/// Issue 23, item 5 (shared schedule): a worker already waiting toward its slot
/// when the run paused started its op during the pause.
#[test]
fn a_worker_waiting_toward_its_slot_does_not_start_during_a_pause() {
    let Some((_redis, proxy)) = server() else {
        return;
    };
    let c = at(&proxy.url(), "pause-sleeper");
    let run = Engine::new()
        .start(
            ActivityConfig::new("slow")
                .threads(1)
                .cycles(0..1000)
                .rate(RateSpec::new(2.0))
                .coordinate(c),
            Count::new(1000),
        )
        .expect("joins");
    // The first op runs at once; the worker then waits 500 ms toward the second.
    let t0 = Instant::now();
    while ops(&run) < 1 {
        assert!(t0.elapsed() < Duration::from_secs(5), "no first op");
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(100));
    run.pause().expect("running");
    std::thread::sleep(Duration::from_millis(1000));
    let during = ops(&run);
    run.stop();
    run.wait();
    assert_eq!(during, 1, "an op started during the pause");
}

/// Issue 23, item 10: a store out of memory (noeviction) was reported with the
/// keyed limiter's hint about key prefixes. It gets its own message.
#[test]
fn a_store_out_of_memory_says_so() {
    let Some((redis, proxy)) = server() else {
        return;
    };
    redis
        .command(&["CONFIG", "SET", "maxmemory-policy", "noeviction"])
        .expect("config");
    redis
        .command(&["CONFIG", "SET", "maxmemory", "1"])
        .expect("config");
    // The join or the first write after it is refused; either way the message.
    let msg = match Engine::new().start(
        config(&at(&proxy.url(), "oom"), 100, 100.0),
        Count::new(100),
    ) {
        Err(e) => e.to_string(),
        Ok(run) => match run.wait_timeout(Duration::from_secs(10)) {
            Some(Outcome::Failed(why)) => why,
            other => panic!("{other:?}: {:?}", redis.command(&["INFO", "memory"])),
        },
    };
    assert!(msg.contains("out of memory"), "{msg}");
    assert!(msg.contains("maxmemory"), "{msg}");
    assert!(!msg.contains("prefix"), "{msg}");
}

/// Issue 23, item 9: claims a member released as it left cleanly (an interrupt
/// here) were counted as re-run when another took them; re-run means run again.
#[test]
fn claims_released_by_a_clean_leave_are_not_counted_rerun() {
    let Some((_redis, proxy)) = server() else {
        return;
    };
    let c = at(&proxy.url(), "released");
    let n = 6000;
    let work = Count::new(n);
    let ea = Engine::new();
    let a = ea
        .start(config(&c, n, 3000.0), work.clone())
        .expect("joins");
    let b = Engine::new()
        .start(config(&c, n, 3000.0), work.clone())
        .expect("joins");
    std::thread::sleep(Duration::from_millis(500));
    ea.close();
    assert_eq!(a.wait(), Outcome::Stopped);
    assert_eq!(
        b.wait_timeout(Duration::from_secs(30)),
        Some(Outcome::Completed)
    );
    assert_eq!(work.wrong(), (0, 0), "(never run, run twice)");
    let st = b.coordinated().expect("coordinated");
    assert_eq!(st.global_completed, n, "{st:?}");
    assert_eq!(st.rerun_cycles, 0, "nothing ran twice: {st:?}");
}

/// Issue 23, item 2: during a store outage a process runs no op and misses no
/// slot, so its interval verdict read "on-schedule: paused: no op was due". The
/// snapshot carries the outage, and the verdict names the store.
#[test]
fn the_interval_verdict_during_a_store_outage_names_the_store() {
    let Some((_redis, proxy)) = server() else {
        return;
    };
    let c = at(&proxy.url(), "outage-verdict");
    let run = Engine::new()
        .start(config(&c, 1_000_000, 1000.0), Count::new(1_000_000))
        .expect("joins");
    std::thread::sleep(Duration::from_millis(400));
    let before = run.snapshot();
    assert_eq!(before.source_outage_nanos(), Some(0), "no outage yet");
    proxy.stall();
    std::thread::sleep(Duration::from_millis(1800));
    let during = run.snapshot();
    proxy.resume();
    run.stop();
    run.wait();
    let out = during.source_outage_nanos().expect("a shared schedule");
    // The outage counts from the send of its first failed request (a read timeout
    // of 250 ms after the stall began, at the latest).
    assert!(
        (1_000_000_000..=during.elapsed_nanos()).contains(&out),
        "outage {out} ns in a window of {} ns",
        during.elapsed_nanos()
    );
    // As the command line judges a process on a shared schedule: its own tickets.
    let secs = during.elapsed_nanos() as f64 / 1e9;
    let own = during.rate() + during.missed() as f64 / secs;
    let v = paceline::Verdict::of(&during, Some(own), 2, None);
    assert_eq!(v.kind, paceline::VerdictKind::GeneratorBound, "{v}");
    assert!(
        v.reason
            .starts_with("the shared schedule's store did not answer for"),
        "{v}"
    );
    assert!(!v.reason.contains("no op was due"), "{v}");
}
