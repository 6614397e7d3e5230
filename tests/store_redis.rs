//! `RedisKeyedLimiter` against a real redis-server on a loopback port.
//!
//! Each test starts its own server (`tests/support/redis.rs`); without redis-server
//! installed, each prints `skipping: redis-server not installed (...)` and passes.
//!
//! Redis time cannot be faked, so the tests pick windows that make the answers
//! deterministic (a limit of N in a 10 s window: the first N pass and the next fails,
//! whatever the phase of the window), or replay what the server decided through a
//! model at the server's own times (the verdicts carry them).
#![cfg(feature = "redis")]

mod support;

use paceline::{
    Algorithm, Decision, FailMode, Limit, Limiter, RedisKeyedLimiter, StoreError, StoreVerdict,
};
use std::net::TcpListener;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use support::redis::server;

fn ten_s(permits: u32) -> Limit {
    Limit::new(permits, Duration::from_secs(10)).expect("valid")
}

/// A window so long that no test run straddles two of them (a straddling run would see
/// the same decisions but different counts in the current window).
fn hour(permits: u32) -> Limit {
    Limit::new(permits, Duration::from_secs(3600)).expect("valid")
}

fn admitted(ds: &[Decision]) -> Vec<bool> {
    ds.iter().map(|d| d.is_admitted()).collect()
}

#[test]
fn the_first_n_pass_and_the_next_is_refused_until_the_window_frees_room() {
    let Some(redis) = server() else { return };
    let limiter = RedisKeyedLimiter::connect(&redis.url(), ten_s(5)).expect("connects");
    // Five admissions within 2 s of each other weigh more than 4 in any 10 s window,
    // whatever the phase of the window: the sixth is refused.
    let v: Vec<StoreVerdict> = (0..6)
        .map(|_| limiter.check("user:241531", 1).expect("decides"))
        .collect();
    let d: Vec<Decision> = v.iter().map(StoreVerdict::decision).collect();
    assert_eq!(admitted(&d), [true, true, true, true, true, false]);
    assert_eq!(
        v.iter().map(StoreVerdict::counted).collect::<Vec<_>>()[..5],
        [1, 2, 3, 4, 5]
    );
    let retry = v[5].retry_after().expect("refused, not never");
    assert!(
        retry > Duration::ZERO && retry <= Duration::from_secs(20),
        "{retry:?}"
    );
    // The server's clock is the wall clock of this machine.
    let wall = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let server = Duration::from_nanos(v[5].server_time());
    assert!(
        wall.abs_diff(server) < Duration::from_secs(5),
        "{wall:?} {server:?}"
    );
    // Another key is not affected; more than the limit at once never passes.
    assert!(limiter.try_acquire("user:7", 5).is_admitted());
    assert_eq!(
        limiter.try_acquire("user:8", 6),
        Decision::Refused {
            earliest: Decision::NEVER
        }
    );
    // n = 0 passes without a count.
    assert!(limiter.try_acquire("user:241531", 0).is_admitted());
}

/// The model of the approximate sliding window, written apart from the library:
/// estimate = prev × (w − e)/w + cur, admit if estimate + n ≤ limit; a refusal's retry
/// is the first microsecond at which the same request would pass.
struct Model {
    w: u64,
    limit: u64,
    index: u64,
    cur: u64,
    prev: u64,
}

impl Model {
    fn counts_at(&self, now: u64) -> (u64, u64, u64) {
        let index = now / self.w;
        let (cur, prev) = if index == self.index {
            (self.cur, self.prev)
        } else if index == self.index + 1 {
            (0, self.cur)
        } else {
            (0, 0)
        };
        (index, cur, prev)
    }

    fn passes(&self, now: u64, n: u64) -> bool {
        let (_, cur, prev) = self.counts_at(now);
        let e = now % self.w;
        // in exact rationals: prev × (w − e)/w + cur + n ≤ limit
        prev * (self.w - e) + (cur + n) * self.w <= self.limit * self.w
    }

    fn decide(&mut self, now: u64, n: u64) -> (bool, Option<u64>) {
        if n > self.limit {
            return (false, None);
        }
        if self.passes(now, n) {
            let (index, cur, prev) = self.counts_at(now);
            (self.index, self.cur, self.prev) = (index, cur + n, prev);
            return (true, None);
        }
        // search: the window end and the next one bound the answer
        let (mut lo, mut hi) = (now, now + 2 * self.w);
        while lo + 1 < hi {
            let mid = (lo + hi) / 2;
            if self.passes(mid, n) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        (false, Some(hi - now))
    }
}

#[test]
fn the_servers_decisions_replay_exactly_through_the_model_at_the_servers_times() {
    let Some(redis) = server() else { return };
    let window = Duration::from_millis(120);
    let limit = 4;
    let limiter = RedisKeyedLimiter::connect(&redis.url(), Limit::new(limit, window).unwrap())
        .expect("connects");
    // Gaps and sizes from a fixed pseudo-random sequence: the weighting, the window
    // roll-over and the skip of a whole window all happen.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut verdicts = Vec::new();
    for _ in 0..120 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let n = (x % 3 + 1) as u32;
        let gap = match x % 10 {
            0 => 250, // past the next window: nothing counts any more
            1..=3 => 0,
            _ => (x >> 8) % 60,
        };
        std::thread::sleep(Duration::from_millis(gap));
        let n = if x % 41 == 0 { limit + 1 } else { n };
        verdicts.push((n, limiter.check("replayed", n).expect("decides")));
    }
    let mut model = Model {
        w: 120_000,
        limit: u64::from(limit),
        index: 0,
        cur: 0,
        prev: 0,
    };
    let (mut passed, mut refused, mut weighted) = (0, 0, 0);
    for (i, (n, v)) in verdicts.iter().enumerate() {
        let now = v.server_time() / 1000;
        let (_, _, prev) = model.counts_at(now);
        let (ok, retry) = model.decide(now, u64::from(*n));
        let want = if ok {
            Decision::Admitted
        } else {
            Decision::Refused {
                earliest: retry.map_or(Decision::NEVER, |r| (now + r) * 1000),
            }
        };
        assert_eq!(v.decision(), want, "request {i} (n = {n}) at {now} µs");
        if ok {
            passed += 1;
            if prev > 0 {
                weighted += 1;
            }
        } else {
            refused += 1;
        }
    }
    // the sequence exercised both answers and the weighting
    assert!(
        passed > 10 && refused > 10 && weighted > 5,
        "{passed} {refused} {weighted}"
    );
}

#[test]
fn each_key_has_its_own_limit_or_the_default() {
    let Some(redis) = server() else { return };
    let limiter = RedisKeyedLimiter::connect(&redis.url(), hour(2)).expect("connects");
    limiter.set_config("vip", hour(5)).unwrap();
    let drain = |key: &str| {
        (0..10)
            .filter(|_| limiter.try_acquire(key, 1).is_admitted())
            .count()
    };
    assert_eq!(drain("vip"), 5);
    assert_eq!(drain("plain"), 2);
    assert_eq!(limiter.config("vip").permits(), 5);
    limiter.remove_config("vip");
    assert_eq!(limiter.config("vip").permits(), 2);
    // a per-key limit the store cannot count is refused, naming the key
    let e = limiter
        .set_config("odd", Limit::new(1, Duration::from_nanos(1_500)).unwrap())
        .unwrap_err();
    assert!(matches!(e, StoreError::BadLimit { .. }));
    assert!(e.to_string().contains("key `odd`"), "{e}");
}

#[test]
fn one_key_is_a_limiter() {
    let Some(redis) = server() else { return };
    let limiter = RedisKeyedLimiter::connect(&redis.url(), ten_s(3)).expect("connects");
    fn drain(l: &dyn Limiter) -> usize {
        (0..10).filter(|_| l.try_acquire(1).is_admitted()).count()
    }
    assert_eq!(drain(&limiter.key("a")), 3);
    assert_eq!(drain(&limiter.key("b")), 3);
}

#[test]
fn state_is_one_hash_tagged_key_with_a_ttl_and_idle_keys_vanish() {
    let Some(redis) = server() else { return };
    let limiter = RedisKeyedLimiter::builder(&redis.url(), ten_s(3))
        .prefix("rl")
        .build()
        .expect("connects");
    assert!(limiter.try_acquire("user:1", 1).is_admitted());
    let key = limiter.store_key("user:1");
    assert_eq!(key, "{rl:user:1}");
    let pttl = redis.integer(&["PTTL", &key]);
    // the end of the next window: more than one window ahead when set (less a moment
    // for the reading), at most two
    assert!(pttl > 9_000 && pttl <= 20_000, "PTTL {pttl}");
    assert_eq!(redis.integer(&["DBSIZE"]), 1);
    // A refusal writes nothing, so it cannot extend a key's life either.
    let before = redis.integer(&["PTTL", &key]);
    assert!(limiter.try_acquire("user:1", 3).earliest().is_some());
    assert!(redis.integer(&["PTTL", &key]) <= before);

    // Many keys on a short window: all gone two windows later.
    let short = RedisKeyedLimiter::builder(
        &redis.url(),
        Limit::new(1, Duration::from_millis(250)).unwrap(),
    )
    .prefix("short")
    .build()
    .expect("connects");
    let keys: Vec<(String, u32)> = (0..500).map(|i| (format!("k{i}"), 1)).collect();
    assert!(
        short
            .try_acquire_many(&keys)
            .iter()
            .all(|d| d.is_admitted())
    );
    // each lives at least one window (250 ms) from its write
    assert_eq!(redis.integer(&["DBSIZE"]), 501);
    std::thread::sleep(Duration::from_millis(600));
    // expired keys are gone for every reader at once; DBSIZE may still count some not
    // yet reclaimed, so ask for each
    let live = (0..500)
        .filter(|i| redis.integer(&["EXISTS", &short.store_key(&format!("k{i}"))]) == 1)
        .count();
    assert_eq!(live, 0);
}

#[test]
fn a_batch_answers_as_the_same_calls_one_by_one() {
    let Some(redis) = server() else { return };
    // Within a run this short, GCRA pays nothing off (one permit takes 20 minutes) and
    // answers as the window does.
    for algorithm in [Algorithm::SlidingWindow, Algorithm::Gcra] {
        let build = |prefix: &str| {
            let l = RedisKeyedLimiter::builder(&redis.url(), hour(3))
                .prefix(&format!("{prefix}-{algorithm:?}"))
                .algorithm(algorithm)
                .build()
                .expect("connects");
            l.set_config("big", hour(7)).unwrap();
            l
        };
        let (one, batch) = (build("one"), build("batch"));
        let requests: Vec<(&str, u32)> = vec![
            ("a", 1),
            ("b", 2),
            ("a", 1),
            ("big", 4),
            ("c", 0),
            ("a", 1),
            ("b", 2),
            ("a", 1),
            ("big", 3),
            ("c", 4),
            ("big", 1),
            ("b", 1),
        ];
        let singly: Vec<StoreVerdict> = requests
            .iter()
            .map(|&(k, n)| one.check(k, n).expect("decides"))
            .collect();
        let together = batch.check_many(&requests).expect("decides");
        let shape = |v: &[StoreVerdict]| {
            v.iter()
                .map(|v| {
                    (
                        v.decision().is_admitted(),
                        v.decision().earliest() == Some(Decision::NEVER),
                        v.counted(),
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(shape(&singly), shape(&together), "{algorithm:?}");
        assert_eq!(
            admitted(
                &together
                    .iter()
                    .map(StoreVerdict::decision)
                    .collect::<Vec<_>>()
            ),
            [
                true, true, true, true, true, true, false, false, true, false, false, true
            ],
            "{algorithm:?}"
        );
        // n = 0 was answered without asking: it has no server time
        assert_eq!(together.iter().filter(|v| v.server_time() > 0).count(), 11);
    }
}

#[test]
fn gcra_admits_the_burst_then_one_permit_per_interval() {
    let Some(redis) = server() else { return };
    // 5 per 10 s, burst 5: one permit is paid off every 2 s
    let limiter = RedisKeyedLimiter::builder(&redis.url(), ten_s(5))
        .algorithm(Algorithm::Gcra)
        .build()
        .expect("connects");
    let v: Vec<StoreVerdict> = (0..6)
        .map(|_| limiter.check("g", 1).expect("decides"))
        .collect();
    let d: Vec<Decision> = v.iter().map(StoreVerdict::decision).collect();
    assert_eq!(admitted(&d), [true, true, true, true, true, false]);
    let retry = v[5].retry_after().expect("refused, not never");
    let spent = Duration::from_nanos(v[5].server_time() - v[0].server_time());
    assert!(
        retry <= Duration::from_secs(2) && retry + spent >= Duration::from_secs(2),
        "{retry:?} after {spent:?}"
    );
    assert_eq!(v[4].counted(), 5);
    // one number per key (in a hash), expiring when the burst is paid off
    let pttl = redis.integer(&["PTTL", &limiter.store_key("g")]);
    assert!(pttl > 8_000 && pttl <= 10_002, "PTTL {pttl}");
    // a smaller burst for one key
    limiter
        .set_config("small", ten_s(5).with_burst(2).unwrap())
        .unwrap();
    assert_eq!(
        admitted(&limiter.try_acquire_many(&[("small", 1), ("small", 1), ("small", 1)])),
        [true, true, false]
    );
    assert_eq!(
        limiter.try_acquire("small", 3).earliest(),
        Some(Decision::NEVER)
    );
}

#[test]
fn gcras_decisions_replay_exactly_through_the_model_at_the_servers_times() {
    let Some(redis) = server() else { return };
    // 4 per 100 ms (T = 25 ms), burst 3
    let (w, p, b) = (100_000u128, 4u128, 3u128);
    let limit = Limit::new(4, Duration::from_millis(100))
        .unwrap()
        .with_burst(3)
        .unwrap();
    let limiter = RedisKeyedLimiter::builder(&redis.url(), limit)
        .algorithm(Algorithm::Gcra)
        .build()
        .expect("connects");
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut verdicts = Vec::new();
    for _ in 0..120 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let n = if x % 37 == 0 { 4 } else { (x % 2 + 1) as u32 };
        let gap = match x % 10 {
            0 => 150,
            1..=3 => 0,
            _ => (x >> 8) % 40,
        };
        std::thread::sleep(Duration::from_millis(gap));
        verdicts.push((n, limiter.check("replayed", n).expect("decides")));
    }
    // The model in exact integers: times scaled by p (µs × p), TAT likewise.
    let mut tat: u128 = 0;
    let (mut passed, mut refused) = (0, 0);
    for (i, (n, v)) in verdicts.iter().enumerate() {
        let now = u128::from(v.server_time() / 1000);
        let n = u128::from(*n);
        let want = if n > b {
            Decision::Refused {
                earliest: Decision::NEVER,
            }
        } else {
            let next = tat.max(now * p) + n * w;
            if next - now * p <= b * w {
                tat = next;
                passed += 1;
                Decision::Admitted
            } else {
                refused += 1;
                let retry = (next - now * p - b * w).div_ceil(p);
                Decision::Refused {
                    earliest: u64::try_from((now + retry) * 1000).unwrap(),
                }
            }
        };
        assert_eq!(v.decision(), want, "request {i} (n = {n}) at {now} µs");
    }
    assert!(passed > 20 && refused > 10, "{passed} {refused}");
}

#[test]
fn a_flushed_script_cache_is_reloaded_for_single_calls_and_batches() {
    let Some(redis) = server() else { return };
    let limiter = RedisKeyedLimiter::connect(&redis.url(), ten_s(2)).expect("connects");
    assert!(
        redis
            .command(&["SCRIPT", "FLUSH"])
            .unwrap()
            .starts_with("+OK")
    );
    assert!(limiter.try_acquire("a", 1).is_admitted());
    assert!(
        redis
            .command(&["SCRIPT", "FLUSH"])
            .unwrap()
            .starts_with("+OK")
    );
    let d = limiter
        .check_many(&[("a", 1), ("a", 1), ("b", 2)])
        .expect("decides");
    assert_eq!(
        d.iter()
            .map(|v| v.decision().is_admitted())
            .collect::<Vec<_>>(),
        [true, false, true]
    );
    assert_eq!(limiter.store_errors(), 0);
}

#[test]
fn two_limiters_on_one_store_never_admit_more_than_the_limit_together() {
    let Some(redis) = server() else { return };
    let a = RedisKeyedLimiter::connect(&redis.url(), hour(100)).expect("connects");
    let b = RedisKeyedLimiter::builder(&redis.url(), hour(100))
        .connections(std::num::NonZeroUsize::new(2).unwrap())
        .build()
        .expect("connects");
    let total: usize = std::thread::scope(|s| {
        let hs: Vec<_> = [&a, &b, &a, &b]
            .into_iter()
            .map(|l| {
                s.spawn(move || {
                    (0..60)
                        .filter(|_| l.try_acquire("shared", 1).is_admitted())
                        .count()
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).sum()
    });
    assert_eq!(total, 100);
}

#[test]
fn a_stopped_server_fails_closed_by_default_and_open_when_asked() {
    let Some(mut redis) = server() else { return };
    let closed = RedisKeyedLimiter::builder(&redis.url(), ten_s(1))
        .retry_after(Duration::from_millis(250))
        .build()
        .expect("connects");
    let open = RedisKeyedLimiter::builder(&redis.url(), ten_s(1))
        .fail_mode(FailMode::Open)
        .build()
        .expect("connects");
    assert!(closed.try_acquire("k", 1).is_admitted());
    assert!(!closed.try_acquire("k", 1).is_admitted());
    assert!(
        open.try_acquire("k", 1).earliest().is_some(),
        "same key, same store"
    );
    redis.stop();

    let before = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let d = closed.try_acquire("fresh", 1);
    let earliest = Duration::from_nanos(d.earliest().expect("fails closed"));
    assert!(
        earliest >= before + Duration::from_millis(250),
        "{earliest:?} {before:?}"
    );
    assert!(
        earliest < before + Duration::from_secs(3),
        "{earliest:?} {before:?}"
    );
    assert!(
        closed
            .try_acquire_many(&[("x", 1), ("y", 1)])
            .iter()
            .all(|d| !d.is_admitted())
    );
    assert_eq!(closed.store_errors(), 3);

    assert!(open.try_acquire("k", 1).is_admitted(), "fails open");
    assert!(
        open.try_acquire_many(&[("k", 1), ("k", 1)])
            .iter()
            .all(|d| d.is_admitted())
    );
    assert_eq!(open.store_errors(), 3);

    // `check` says why, and how to fix it
    let e = closed.check("k", 1).unwrap_err();
    assert!(
        matches!(e, StoreError::Unreachable { .. } | StoreError::Lost { .. }),
        "{e}"
    );
    assert!(e.to_string().contains(&redis.url()), "{e}");
}

#[test]
fn a_restarted_server_is_reconnected_and_counts_afresh() {
    let Some(mut redis) = server() else { return };
    let limiter = RedisKeyedLimiter::builder(&redis.url(), ten_s(2))
        .retry_after(Duration::from_millis(20))
        .build()
        .expect("connects");
    assert_eq!(
        admitted(&limiter.try_acquire_many(&[("k", 1), ("k", 1), ("k", 1)])),
        [true, true, false]
    );
    redis.start_again().expect("restarts on the same port");
    // The kept connection died with the old server: the first call finds that out,
    // reconnects and decides (the new server is empty: no persistence).
    let v = limiter.check("k", 1).expect("reconnects by itself");
    assert!(v.decision().is_admitted());
    assert_eq!(v.counted(), 1);

    // Down for a while: calls fail (closed) until it is back, then decide again.
    redis.stop();
    assert!(!limiter.try_acquire("k", 1).is_admitted());
    assert!(limiter.check("k", 1).is_err());
    redis.start_again().expect("restarts on the same port");
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let v = loop {
        match limiter.check("k", 1) {
            Ok(v) => break v,
            Err(e) if std::time::Instant::now() > deadline => panic!("no reconnect: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    };
    assert_eq!((v.decision().is_admitted(), v.counted()), (true, 1));
    assert!(limiter.try_acquire("k", 1).is_admitted());
    assert!(!limiter.try_acquire("k", 1).is_admitted());
}

#[test]
fn an_unreachable_server_is_a_clear_error_at_connect() {
    // no server needed: a port nobody listens on
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap();
    let url = format!("redis://127.0.0.1:{port}/0");
    let e = RedisKeyedLimiter::connect(&url, ten_s(1)).unwrap_err();
    assert!(matches!(e, StoreError::Unreachable { .. }), "{e}");
    let s = e.to_string();
    assert!(
        s.starts_with(&format!("cannot reach redis at {url}: ")),
        "{s}"
    );
    assert!(
        s.ends_with("start redis-server there or fix the URL"),
        "{s}"
    );
}
