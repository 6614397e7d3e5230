//! The async acquire on a real executor (tokio's multi-threaded runtime) and the real
//! clock: the timer thread wakes tasks, slots stay exact and shared, cancellation
//! (a timeout) leaks no slot, stop and pause wake every waiting task. Wall-clock
//! bounds are tolerant; the exact behaviour is pinned on the manual clock in
//! `src/pace/future_tests.rs`.

use paceline::{RateLimiter, RateSpec};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .enable_time()
        .build()
        .unwrap()
}

#[test]
fn tasks_on_tokio_take_every_slot_once_at_the_rate() {
    const TASKS: usize = 500;
    const EACH: usize = 4;
    let limiter = Arc::new(RateLimiter::new(RateSpec::parse("20K,0").unwrap()));
    let started = Instant::now();
    let grants = runtime().block_on(async {
        let mut handles = Vec::new();
        for _ in 0..TASKS {
            let limiter = Arc::clone(&limiter);
            handles.push(tokio::spawn(async move {
                let mut mine = Vec::new();
                for _ in 0..EACH {
                    let g = limiter.acquire_async().await;
                    mine.push((g.scheduled_nanos(), g.wait_nanos()));
                }
                mine
            }));
        }
        let mut all = Vec::new();
        for h in handles {
            all.extend(h.await.unwrap());
        }
        all
    });
    let elapsed = started.elapsed();
    let mut slots: Vec<u64> = grants.iter().map(|g| g.0).collect();
    slots.sort();
    // the schedule is anchored at the first acquire
    let first = slots[0];
    let expected: Vec<u64> = (0..(TASKS * EACH) as u64)
        .map(|k| first + k * 50_000)
        .collect();
    assert_eq!(slots, expected, "every slot once, 50 us apart");
    // 2000 slots at 20K/s: the last is at 99.95 ms, released at most 50 us early
    assert!(elapsed >= Duration::from_micros(99_900), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(5), "{elapsed:?}");
    let mut waits: Vec<u64> = grants.iter().map(|g| g.1).collect();
    waits.sort();
    let p50 = waits[waits.len() / 2];
    assert!(p50 < 20_000_000, "median wait {p50} ns on a busy machine");
    assert_eq!(limiter.stats().grants, (TASKS * EACH) as u64);
}

#[test]
fn a_timeout_cancels_the_acquire_and_leaks_no_slot() {
    let limiter = Arc::new(RateLimiter::new(RateSpec::parse("100,0").unwrap()));
    let first = limiter.acquire().scheduled_nanos();
    let completed = runtime().block_on(async {
        let mut handles = Vec::new();
        for _ in 0..20 {
            let limiter = Arc::clone(&limiter);
            handles.push(tokio::spawn(async move {
                tokio::time::timeout(Duration::from_millis(25), limiter.acquire_async())
                    .await
                    .is_ok()
            }));
        }
        let mut n = 0u64;
        for h in handles {
            n += u64::from(h.await.unwrap());
        }
        n
    });
    // 20 tasks at 100/s with a 25 ms timeout: the first few complete, the rest are
    // dropped while waiting
    assert!((1..20).contains(&completed), "{completed} completed");
    let s = limiter.stats();
    assert_eq!(
        s.grants,
        1 + completed,
        "a dropped acquire is not a grant: {s:?}"
    );
    // whatever was not given back is counted missed (idle), and the next slot follows
    let missed = s.missed_slots.round() as u64;
    assert_eq!(s.idle_nanos, missed * 10_000_000, "{s:?}");
    let next = limiter.acquire();
    assert_eq!(
        next.scheduled_nanos() - first,
        (1 + completed + missed) * 10_000_000,
        "{s:?}"
    );
}

#[test]
fn a_stop_wakes_every_waiting_task() {
    let limiter = Arc::new(RateLimiter::new(RateSpec::parse("1,0").unwrap()));
    limiter.acquire(); // the next slot is a second away
    let rt = runtime();
    let started = Instant::now();
    let stopped = rt.block_on(async {
        let mut handles = Vec::new();
        for _ in 0..10 {
            let limiter = Arc::clone(&limiter);
            handles.push(tokio::spawn(async move {
                limiter.acquire_async().await.is_stopped()
            }));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        limiter.stop();
        let mut all = true;
        for h in handles {
            all &= h.await.unwrap();
        }
        all
    });
    assert!(stopped);
    assert!(
        started.elapsed() < Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(limiter.stats().grants, 1, "held slots were forfeited");
}

#[test]
fn a_paused_task_resumes_with_the_rate() {
    let limiter = Arc::new(RateLimiter::new(RateSpec::parse("0,0").unwrap()));
    let rt = runtime();
    let done = rt.block_on(async {
        let l = Arc::clone(&limiter);
        let h = tokio::spawn(async move { l.acquire_async().await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!h.is_finished(), "paused: no slot");
        limiter.set_spec(RateSpec::new(1000.0));
        tokio::time::timeout(Duration::from_secs(2), h).await
    });
    let g = done.expect("resumed within 2 s").unwrap();
    assert!(!g.is_stopped());
}
