//! The pacer against its peers, unthrottled (the rate is so high that every caller is
//! late, so this measures the cost of granting), on one thread and two contending.
//!
//! Peers, each configured so that it always admits: governor's `check()` (GCRA, one
//! AtomicU64, reads its quanta clock every call), ratelimit's `try_wait()`, and a token
//! bucket behind a parking_lot mutex. paceline grants through its reservations and fast
//! path: no clock reading while an earlier reading shows the op is due; a grant's start
//! is then read when asked for. `paceline_average_wait` asks for every grant's wait (one
//! clock reading each), as a caller that records waits from the grant does.

use criterion::{BenchmarkId, Criterion, Throughput};
use governor::{Quota, RateLimiter as Governor};
use paceline::{RateLimiter, RateSpec};
use parking_lot::Mutex;
use std::hint::black_box;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A token bucket behind one mutex: the baseline every lock-free design must beat.
struct MutexBucket {
    clock: quanta::Clock,
    state: Mutex<(u64, f64)>,
    per_ns: f64,
    cap: f64,
}

impl MutexBucket {
    fn new(rate: f64, cap: f64) -> Self {
        let clock = quanta::Clock::new();
        let now = clock.raw();
        Self {
            clock,
            state: Mutex::new((now, cap)),
            per_ns: rate / 1e9,
            cap,
        }
    }
    fn try_take(&self) -> bool {
        let now = self.clock.raw();
        let mut s = self.state.lock();
        let elapsed = self.clock.delta_as_nanos(s.0, now) as f64;
        s.0 = now.max(s.0);
        s.1 = (s.1 + elapsed * self.per_ns).min(self.cap);
        if s.1 >= 1.0 {
            s.1 -= 1.0;
            true
        } else {
            false
        }
    }
}

trait Admit: Send + Sync + 'static {
    fn admit(&self) -> bool;
}
impl Admit for RateLimiter {
    #[inline]
    fn admit(&self) -> bool {
        !self.acquire().is_stopped()
    }
}
/// paceline, and the caller asks each grant for its wait.
struct AskWait(RateLimiter);
impl Admit for AskWait {
    #[inline]
    fn admit(&self) -> bool {
        let g = self.0.acquire();
        black_box(g.wait_nanos());
        !g.is_stopped()
    }
}
type Gov = Governor<
    governor::state::NotKeyed,
    governor::state::InMemoryState,
    governor::clock::DefaultClock,
>;
impl Admit for Gov {
    #[inline]
    fn admit(&self) -> bool {
        self.check().is_ok()
    }
}
impl Admit for ratelimit::Ratelimiter {
    #[inline]
    fn admit(&self) -> bool {
        self.try_wait().is_ok()
    }
}
impl Admit for MutexBucket {
    #[inline]
    fn admit(&self) -> bool {
        self.try_take()
    }
}

fn peers() -> Vec<(&'static str, Arc<dyn Admit>)> {
    // 1e9 per second: every check advances governor's state by 1 ns (a u32::MAX quota
    // would round its interval to 0 ns and never write, which measures nothing), and
    // callers at tens of ns per op never exceed it.
    let big = NonZeroU32::new(1_000_000_000).expect("nonzero");
    vec![
        (
            "paceline_burst1.1",
            Arc::new(RateLimiter::new(RateSpec::new(1e9))) as Arc<dyn Admit>,
        ),
        (
            "paceline_average",
            Arc::new(RateLimiter::new(RateSpec::new(1e9).strictness(0.0))),
        ),
        (
            // Poisson arrivals: the same paths, each ticket's slot a prefix sum of
            // random gaps (a hash and a logarithm per gap, per thread in turn).
            "paceline_average_poisson",
            Arc::new(
                RateLimiter::builder(RateSpec::new(1e9).strictness(0.0))
                    .arrivals(paceline::Arrivals::Poisson { seed: 1 })
                    .build(),
            ),
        ),
        (
            "paceline_average_wait",
            Arc::new(AskWait(RateLimiter::new(
                RateSpec::new(1e9).strictness(0.0),
            ))),
        ),
        (
            "governor",
            Arc::new(Governor::direct(Quota::per_second(big).allow_burst(big))),
        ),
        (
            "ratelimit",
            Arc::new(
                ratelimit::Ratelimiter::builder(1_000_000, Duration::from_micros(1))
                    .max_tokens(u64::MAX / 4)
                    .initial_available(u64::MAX / 4)
                    .build()
                    .expect("ratelimit config"),
            ),
        ),
        ("mutex_bucket", Arc::new(MutexBucket::new(1e12, 1e15))),
    ]
}

/// Runs `iters` admissions split over `threads` threads; returns the wall time.
fn contend(limiter: &Arc<dyn Admit>, threads: u64, iters: u64) -> Duration {
    let per = iters / threads;
    let barrier = Arc::new(std::sync::Barrier::new(threads as usize + 1));
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let l = Arc::clone(limiter);
            let b = Arc::clone(&barrier);
            std::thread::spawn(move || {
                b.wait();
                for _ in 0..per {
                    black_box(l.admit());
                }
            })
        })
        .collect();
    barrier.wait();
    let t = Instant::now();
    for h in handles {
        h.join().expect("bench thread");
    }
    t.elapsed()
}

/// Unthrottled acquire, one thread and two.
pub fn unthrottled(c: &mut Criterion) {
    let mut g = c.benchmark_group("unthrottled");
    g.measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500))
        .throughput(Throughput::Elements(1));
    for (name, l) in peers() {
        g.bench_function(BenchmarkId::new("1_thread", name), |b| {
            b.iter(|| black_box(l.admit()))
        });
    }
    for (name, l) in peers() {
        g.bench_function(BenchmarkId::new("2_threads", name), |b| {
            b.iter_custom(|iters| contend(&l, 2, iters.max(2)))
        });
    }
    g.finish();
}
