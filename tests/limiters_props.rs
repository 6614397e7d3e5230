//! Properties of every limiter: over any window of the algorithm's own width,
//! admissions never exceed its documented bound, with several threads asking at random
//! times on the manual clock. Twins (mutex and lock-free) decide identically.
//!
//! Each case is a list of rounds: the clock jumps by a random gap, then every thread
//! makes its random requests at that same instant, concurrently (a barrier keeps the
//! clock still while they race). So every admission has an exact time, and the bound
//! is checked over every window that starts at an admission.

use paceline::{
    AtomicTokenBucket, FixedWindow, KeyConfig, KeyedLimiter, LeakyBucket, Limit, Limiter,
    ManualClock, PackedSlidingWindow, PackedSlidingWindow128, RefillTokenBucket,
    SlidingWindowCounter, SlidingWindowLog, TokenBucket, TokenPool,
};
use proptest::prelude::*;
use std::sync::Barrier;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const THREADS: usize = 3;

/// Builds a limiter on a clock.
type Make = Box<dyn Fn(ManualClock) -> Box<dyn Limiter>>;

/// One round: the gap before it, and each thread's requests (sizes).
type Round = (u64, Vec<Vec<u32>>);

fn rounds(width: u64, max_n: u32) -> impl Strategy<Value = Vec<Round>> {
    let gap = prop_oneof![
        2 => Just(0u64),
        4 => 0..width / 4,
        2 => 0..2 * width,
        1 => Just(width),
    ];
    let requests = prop::collection::vec(prop::collection::vec(1..=max_n, 0..3), THREADS);
    prop::collection::vec((gap, requests), 1..40)
}

/// Runs the rounds; returns (time, permits admitted) per round.
fn run(
    limiter: &dyn Limiter,
    clock: &ManualClock,
    rounds: &[Round],
    before_round: &dyn Fn(),
) -> Vec<(u64, u64)> {
    let barrier = Barrier::new(THREADS + 1);
    let admitted: Vec<AtomicU64> = rounds.iter().map(|_| AtomicU64::new(0)).collect();
    let mut times = Vec::with_capacity(rounds.len());
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (barrier, admitted) = (&barrier, &admitted);
            s.spawn(move || {
                for (i, (_, requests)) in rounds.iter().enumerate() {
                    barrier.wait();
                    for &n in &requests[t] {
                        if limiter.try_acquire(n).is_admitted() {
                            admitted[i].fetch_add(u64::from(n), Ordering::Relaxed);
                        }
                    }
                    barrier.wait();
                }
            });
        }
        for (gap, _) in rounds {
            clock.advance_nanos(*gap);
            times.push(paceline::Clock::now(clock));
            before_round();
            barrier.wait(); // go
            barrier.wait(); // done
        }
    });
    times
        .into_iter()
        .zip(admitted.iter().map(|a| a.load(Ordering::Relaxed)))
        .collect()
}

/// The most admitted in any window `[t, t + width)`.
fn max_in_window(events: &[(u64, u64)], width: u64) -> u64 {
    events
        .iter()
        .map(|&(start, _)| {
            events
                .iter()
                .filter(|&&(t, _)| t >= start && t - start < width)
                .map(|&(_, n)| n)
                .sum()
        })
        .max()
        .unwrap_or(0)
}

/// The most admitted in any aligned window `[k·width, (k+1)·width)`.
fn max_in_aligned(events: &[(u64, u64)], width: u64) -> u64 {
    let mut per = std::collections::BTreeMap::new();
    for &(t, n) in events {
        *per.entry(t / width).or_insert(0) += n;
    }
    per.into_values().max().unwrap_or(0)
}

fn limit(permits: u32, burst: u32, window_ms: u64) -> Limit {
    Limit::new(permits, Duration::from_millis(window_ms))
        .unwrap()
        .with_burst(burst)
        .unwrap()
}

fn bucket_case() -> impl Strategy<Value = (u32, u32, u64, Vec<Round>)> {
    (1..=6u32, 1..=6u32, 1..=1000u64)
        .prop_flat_map(|(p, b, w)| (Just(p), Just(b), Just(w), rounds(w * 1_000_000, b.min(3))))
}

fn window_case() -> impl Strategy<Value = (u32, u64, Vec<Round>)> {
    (1..=6u32, 1..=1000u64)
        .prop_flat_map(|(p, w)| (Just(p), Just(w), rounds(w * 1_000_000, p.min(3))))
}

fn no_op() {}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn token_bucket_admits_at_most_burst_plus_permits_per_window((p, b, w, rounds) in bucket_case()) {
        let clock = ManualClock::new();
        let l = TokenBucket::with_clock(limit(p, b, w), clock.clone());
        let events = run(&l, &clock, &rounds, &no_op);
        prop_assert!(max_in_window(&events, w * 1_000_000) <= u64::from(b + p));
    }

    #[test]
    fn atomic_token_bucket_admits_at_most_burst_plus_permits_per_window((p, b, w, rounds) in bucket_case()) {
        let clock = ManualClock::new();
        let l = AtomicTokenBucket::with_clock(limit(p, b, w), clock.clone()).unwrap();
        let events = run(&l, &clock, &rounds, &no_op);
        prop_assert!(max_in_window(&events, w * 1_000_000) <= u64::from(b + p));
    }

    #[test]
    fn refill_bucket_admits_at_most_burst_plus_permits_per_window((p, b, w, rounds) in bucket_case()) {
        let clock = ManualClock::new();
        let l = RefillTokenBucket::with_clock(limit(p, b, w), clock.clone());
        let caught_up = || while !l.caught_up() { std::thread::yield_now() };
        let events = run(&l, &clock, &rounds, &caught_up);
        prop_assert!(max_in_window(&events, w * 1_000_000) <= u64::from(b + p));
    }

    #[test]
    fn leaky_bucket_admits_at_most_burst_plus_permits_per_window((p, b, w, rounds) in bucket_case()) {
        let clock = ManualClock::new();
        let l = LeakyBucket::with_clock(limit(p, b, w), clock.clone());
        let events = run(&l, &clock, &rounds, &no_op);
        prop_assert!(max_in_window(&events, w * 1_000_000) <= u64::from(b + p));
    }

    #[test]
    fn token_pool_admits_at_most_its_bound_per_window((p, b, w, rounds) in bucket_case(), quarters in 0..=4u32) {
        let backfill = f64::from(quarters) / 4.0;
        let clock = ManualClock::new();
        let l = TokenPool::with_clock(limit(p, b, w), backfill, clock.clone()).unwrap();
        let events = run(&l, &clock, &rounds, &no_op);
        let bound = ((1.0 + backfill) * f64::from(b + p)).floor() as u64;
        prop_assert!(max_in_window(&events, w * 1_000_000) <= bound);
    }

    #[test]
    fn fixed_window_admits_permits_per_aligned_window((p, w, rounds) in window_case()) {
        let clock = ManualClock::new();
        let l = FixedWindow::with_clock(limit(p, p, w), clock.clone()).unwrap();
        let events = run(&l, &clock, &rounds, &no_op);
        let width = w * 1_000_000;
        prop_assert!(max_in_aligned(&events, width) <= u64::from(p));
        prop_assert!(max_in_window(&events, width) <= u64::from(2 * p));
    }

    #[test]
    fn sliding_log_admits_exactly_permits_per_window((p, w, rounds) in window_case()) {
        let clock = ManualClock::new();
        let l = SlidingWindowLog::with_clock(limit(p, p, w), clock.clone()).unwrap();
        let events = run(&l, &clock, &rounds, &no_op);
        prop_assert!(max_in_window(&events, w * 1_000_000) <= u64::from(p));
    }

    #[test]
    fn sliding_counters_admit_at_most_twice_permits_per_window((p, w, rounds) in window_case()) {
        let width = w * 1_000_000;
        let limiters: [(&str, Make); 3] = [
            ("mutex", Box::new(move |c| Box::new(SlidingWindowCounter::with_clock(limit(p, p, w), c)))),
            ("64", Box::new(move |c| Box::new(PackedSlidingWindow::with_clock(limit(p, p, w), c).unwrap()))),
            ("128", Box::new(move |c| Box::new(PackedSlidingWindow128::with_clock(limit(p, p, w), c).unwrap()))),
        ];
        for (name, make) in limiters {
            let clock = ManualClock::new();
            let l = make(clock.clone());
            let events = run(&*l, &clock, &rounds, &no_op);
            prop_assert!(max_in_aligned(&events, width) <= u64::from(p), "{}", name);
            prop_assert!(max_in_window(&events, width) <= u64::from(2 * p), "{}", name);
        }
    }

    #[test]
    fn keyed_admits_capacity_per_window_less_a_bucket(
        (p, _, rounds) in window_case(),
        buckets in prop::sample::select(vec![1u64, 2, 4, 5, 10]),
    ) {
        // Windows of 100 ms cut into `buckets`; the bound holds over `window - granularity`.
        let window = 100_000_000;
        let granularity = window / buckets;
        let config = KeyConfig::new(p, Duration::from_nanos(window), Duration::from_nanos(granularity)).unwrap();
        let clock = ManualClock::new();
        let keyed = KeyedLimiter::builder(config).build_with_clock(clock.clone());
        struct One<'a>(&'a KeyedLimiter<&'static str, ManualClock>);
        impl Limiter for One<'_> {
            fn try_acquire(&self, n: u32) -> paceline::Decision {
                self.0.try_acquire(&"key", n)
            }
        }
        let events = run(&One(&keyed), &clock, &rounds, &no_op);
        prop_assert!(max_in_window(&events, (window - granularity).max(1)) <= u64::from(p));
        prop_assert!(max_in_window(&events, window) <= u64::from(2 * p));
    }
}

/// A request: the gap before it, and its size.
fn sequence(width: u64, max_n: u32) -> impl Strategy<Value = Vec<(u64, u32)>> {
    let gap = prop_oneof![2 => Just(0u64), 4 => 0..width / 8, 1 => 0..2 * width];
    prop::collection::vec((gap, 1..=max_n), 1..200)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn token_bucket_twins_decide_identically(
        (p, b, w) in (1..=1000u32, 1..=1000u32, 1..=2000u64),
        seq in sequence(2_000_000_000, 5),
    ) {
        let limit = limit(p, b, w);
        let (c1, c2) = (ManualClock::new(), ManualClock::new());
        let mutex = TokenBucket::with_clock(limit, c1.clone());
        let atomic = AtomicTokenBucket::with_clock(limit, c2.clone()).unwrap();
        for (gap, n) in seq {
            c1.advance_nanos(gap);
            c2.advance_nanos(gap);
            prop_assert_eq!(mutex.try_acquire(n), atomic.try_acquire(n));
        }
    }

    #[test]
    fn sliding_window_twins_decide_identically(
        (p, w) in (1..=1000u32, 1..=2000u64),
        seq in sequence(2_000_000_000, 5),
    ) {
        let limit = limit(p, p, w);
        let clocks = [ManualClock::new(), ManualClock::new(), ManualClock::new()];
        let mutex = SlidingWindowCounter::with_clock(limit, clocks[0].clone());
        let packed = PackedSlidingWindow::with_clock(limit, clocks[1].clone()).unwrap();
        let wide = PackedSlidingWindow128::with_clock(limit, clocks[2].clone()).unwrap();
        for (gap, n) in seq {
            for c in &clocks {
                c.advance_nanos(gap);
            }
            let d = mutex.try_acquire(n);
            prop_assert_eq!(d, packed.try_acquire(n));
            prop_assert_eq!(d, wide.try_acquire(n));
        }
    }

    #[test]
    fn earliest_is_exact_when_alone(
        (p, b, w) in (1..=50u32, 1..=50u32, 1..=2000u64),
        seq in sequence(2_000_000_000, 3),
    ) {
        // Refused with `earliest`: replayed alone, the same request still fails a
        // nanosecond before it and passes at it.
        let limit = limit(p, b, w);
        let makers: Vec<(&str, Make)> = vec![
            ("TokenBucket", Box::new(move |c| Box::new(TokenBucket::with_clock(limit, c)))),
            ("AtomicTokenBucket", Box::new(move |c| Box::new(AtomicTokenBucket::with_clock(limit, c).unwrap()))),
            ("LeakyBucket", Box::new(move |c| Box::new(LeakyBucket::with_clock(limit, c)))),
            ("FixedWindow", Box::new(move |c| Box::new(FixedWindow::with_clock(limit, c).unwrap()))),
            ("SlidingWindowLog", Box::new(move |c| Box::new(SlidingWindowLog::with_clock(limit, c).unwrap()))),
            ("SlidingWindowCounter", Box::new(move |c| Box::new(SlidingWindowCounter::with_clock(limit, c)))),
            ("TokenPool", Box::new(move |c| Box::new(TokenPool::with_clock(limit, 0.25, c).unwrap()))),
        ];
        for (name, make) in &makers {
            let clock = ManualClock::new();
            let l = make(clock.clone());
            let mut checked = 0;
            for (k, &(gap, n)) in seq.iter().enumerate() {
                clock.advance_nanos(gap);
                let Some(at) = l.try_acquire(n).earliest() else { continue };
                if at == paceline::Decision::NEVER || checked == 3 {
                    continue;
                }
                checked += 1;
                for (probe, admitted) in [(at - 1, false), (at, true)] {
                    let replay_clock = ManualClock::new();
                    let replay = make(replay_clock.clone());
                    for &(gap, n) in &seq[..k] {
                        replay_clock.advance_nanos(gap);
                        let _ = replay.try_acquire(n);
                    }
                    replay_clock.set(probe);
                    prop_assert_eq!(replay.try_acquire(n).is_admitted(), admitted, "{} at {}", name, probe);
                }
            }
        }
    }
}
