//! The packed lock-free limiters against their mutex twins and against governor, on one
//! shared limiter at 1, 2, 4 and 8 threads, admit-heavy and refuse-heavy.
//!
//! Each case spawns its threads, releases them together, and times until the last has
//! made its share of calls. The time reported per iteration is wall time divided by the
//! calls of all threads: the inverse of throughput, so a limiter that scales shows a
//! falling number as threads are added (up to the core count) and a serializing one a
//! rising number.

use criterion::{BenchmarkId, Criterion};
use governor::{Quota, RateLimiter};
use paceline::{
    AtomicTokenBucket, Clock, Decision, FixedWindow, Limit, Limiter, MonotonicClock,
    PackedSlidingWindow, PackedSlidingWindow128, SlidingWindowCounter, TokenBucket,
};
use parking_lot::Mutex;
use std::num::NonZeroU32;
use std::sync::Barrier;
use std::time::{Duration, Instant};
use strength_reduce::StrengthReducedU64;

const THREADS: [usize; 4] = [1, 2, 4, 8];

/// Admit-heavy: 60 000 per 100 us (600 M/s), far above what two cores can ask.
fn admit() -> Limit {
    Limit::new(60_000, Duration::from_micros(100)).expect("valid")
}

/// Refuse-heavy: one permit an hour; every call after the first is refused.
fn refuse() -> Limit {
    Limit::new(1, Duration::from_secs(3600)).expect("valid")
}

/// Wall time for `threads` threads making `iters` calls each, divided by `threads`.
fn contended(op: &(dyn Fn() -> bool + Sync), threads: usize, iters: u64) -> Duration {
    let barrier = Barrier::new(threads + 1);
    let elapsed = std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                barrier.wait();
                for _ in 0..iters {
                    std::hint::black_box(op());
                }
                barrier.wait();
            });
        }
        barrier.wait();
        let start = Instant::now();
        barrier.wait();
        start.elapsed()
    });
    elapsed / threads as u32
}

/// The fixed-window counter's mutex twin, for the benchmark only: window index and
/// count under a parking_lot mutex, the same decision as `FixedWindow` (and the same
/// divide-free window index).
struct MutexFixedWindow {
    limit: Limit,
    width: StrengthReducedU64,
    state: Mutex<(u64, u64)>,
    clock: MonotonicClock,
}

impl MutexFixedWindow {
    fn new(limit: Limit) -> Self {
        Self {
            limit,
            width: StrengthReducedU64::new(limit.window_nanos()),
            state: Mutex::new((0, 0)),
            clock: MonotonicClock::new(),
        }
    }
}

impl Limiter for MutexFixedWindow {
    fn try_acquire(&self, n: u32) -> Decision {
        let width = self.limit.window_nanos();
        let window = self.clock.now() / self.width;
        let mut s = self.state.lock();
        if window > s.0 {
            *s = (window, 0);
        }
        if s.1 + u64::from(n) <= u64::from(self.limit.permits()) {
            s.1 += u64::from(n);
            Decision::Admitted
        } else {
            Decision::Refused {
                earliest: (s.0 + 1) * width,
            }
        }
    }
}

type Make = fn(Limit) -> Box<dyn Limiter>;

fn group(c: &mut Criterion, name: &str, impls: &[(&str, Make)]) {
    for (mode, limit) in [("admit", admit()), ("refuse", refuse())] {
        let mut g = c.benchmark_group(format!("limiters/{name}/{mode}"));
        g.warm_up_time(Duration::from_millis(300));
        g.measurement_time(Duration::from_secs(1));
        g.sample_size(10);
        for &(imp, make) in impls {
            for threads in THREADS {
                let limiter = make(limit);
                let op = || limiter.try_acquire(1).is_admitted();
                g.bench_with_input(BenchmarkId::new(imp, threads), &threads, |b, &t| {
                    b.iter_custom(|iters| contended(&op, t, iters))
                });
            }
        }
        g.finish();
    }
}

/// Token bucket: the packed 40/24-bit word against the mutex bucket.
pub fn token_bucket(c: &mut Criterion) {
    group(
        c,
        "token_bucket",
        &[
            ("atomic", |l| {
                Box::new(AtomicTokenBucket::new(l).expect("fits"))
            }),
            ("mutex", |l| Box::new(TokenBucket::new(l))),
        ],
    );
}

/// Fixed window: the packed 32/32-bit word against a mutex twin.
pub fn fixed_window(c: &mut Criterion) {
    group(
        c,
        "fixed_window",
        &[
            ("atomic", |l| Box::new(FixedWindow::new(l).expect("fits"))),
            ("mutex", |l| Box::new(MutexFixedWindow::new(l))),
        ],
    );
}

/// Sliding window counter: the 64-bit and 128-bit words against the mutex counter.
pub fn sliding_window(c: &mut Criterion) {
    group(
        c,
        "sliding_window",
        &[
            ("packed64", |l| {
                Box::new(PackedSlidingWindow::new(l).expect("fits"))
            }),
            ("packed128", |l| {
                Box::new(PackedSlidingWindow128::new(l).expect("fits"))
            }),
            ("mutex", |l| Box::new(SlidingWindowCounter::new(l))),
        ],
    );
}

/// governor's direct limiter (GCRA in one AtomicU64) under the same two loads.
pub fn governor(c: &mut Criterion) {
    for (mode, quota) in [
        (
            "admit",
            Quota::per_second(NonZeroU32::new(1_000_000_000).expect("non-zero")),
        ),
        ("refuse", Quota::per_hour(NonZeroU32::MIN)),
    ] {
        let mut g = c.benchmark_group(format!("limiters/governor/{mode}"));
        g.warm_up_time(Duration::from_millis(300));
        g.measurement_time(Duration::from_secs(1));
        g.sample_size(10);
        for threads in THREADS {
            let limiter = RateLimiter::direct(quota);
            let op = || limiter.check().is_ok();
            g.bench_with_input(BenchmarkId::new("gcra", threads), &threads, |b, &t| {
                b.iter_custom(|iters| contended(&op, t, iters))
            });
        }
        g.finish();
    }
}
