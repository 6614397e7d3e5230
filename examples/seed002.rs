//! Seed 002's experiment, rerun on every limiter on the manual clock.
//!
//! A driver sends requests at 1, 2, 5, 10, 20, 25, 50 and 100 per second (10, 20, 50,
//! 100, 200, 250, 500 and 1000 requests, so about ten seconds a phase) against a limit
//! of 10 per second. As in the seed, each request retries every 10 ms until admitted,
//! and a phase lasts until its last request is admitted (at least as long as its
//! sending takes). The achieved rate of a phase is requests / duration.
//!
//! The run is a discrete-event simulation on a `ManualClock`, so it takes seconds of
//! wall time for 235 s of simulated time and prints the same table every time:
//!
//! ```sh
//! cargo run --example seed002
//! ```

use paceline::{
    AtomicTokenBucket, Clock, Decision, FixedWindow, KeyConfig, KeyedLimiter, LeakyBucket, Limit,
    Limiter, ManualClock, PackedSlidingWindow, PackedSlidingWindow128, RefillTokenBucket,
    SlidingWindowCounter, SlidingWindowLog, TokenBucket, TokenPool,
};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::Arc;
use std::time::Duration;

const MS: u64 = 1_000_000;
const RETRY: u64 = 10 * MS;
const PHASES: [(u64, u64); 8] = [
    (10, 1),
    (20, 2),
    (50, 5),
    (100, 10),
    (200, 20),
    (250, 25),
    (500, 50),
    (1000, 100),
];
/// Seed 002's own token-bucket figures (refill thread, real clock).
const SEED: [f64; 8] = [0.996, 1.986, 4.913, 9.655, 10.238, 9.970, 9.960, 9.964];

/// One key of a keyed limiter, as a plain limiter.
struct OneKey(KeyedLimiter<u8, ManualClock>);

impl Limiter for OneKey {
    fn try_acquire(&self, n: u32) -> Decision {
        self.0.try_acquire(&0, n)
    }
}

/// A limiter under test, and what to do after each clock step (let a refill thread
/// catch up).
struct Subject {
    name: &'static str,
    limiter: Box<dyn Limiter>,
    settle: Box<dyn Fn()>,
}

/// The `i`th limiter under test, on `clock`; `None` past the last.
fn subject(i: usize, clock: &ManualClock) -> Result<Option<Subject>, paceline::LimitError> {
    let limit = Limit::per_second(10)?;
    let c = clock.clone();
    let plain = |name, limiter: Box<dyn Limiter>| Subject {
        name,
        limiter,
        settle: Box::new(|| {}),
    };
    let s = Duration::from_secs(1);
    Ok(Some(match i {
        0 => plain(
            "TokenBucket (lazy refill)",
            Box::new(TokenBucket::with_clock(limit, c)),
        ),
        1 => plain(
            "AtomicTokenBucket",
            Box::new(AtomicTokenBucket::with_clock(limit, c)?),
        ),
        2 => {
            let bucket = Arc::new(RefillTokenBucket::with_clock(limit, c));
            let waiter = bucket.clone();
            Subject {
                name: "RefillTokenBucket (the seed's)",
                limiter: Box::new(bucket),
                settle: Box::new(move || {
                    while !waiter.caught_up() {
                        std::thread::yield_now();
                    }
                }),
            }
        }
        3 => plain(
            "LeakyBucket, burst 1 (the seed's)",
            Box::new(LeakyBucket::with_clock(limit.with_burst(1)?, c)),
        ),
        4 => plain(
            "LeakyBucket, burst 10",
            Box::new(LeakyBucket::with_clock(limit, c)),
        ),
        5 => plain("FixedWindow", Box::new(FixedWindow::with_clock(limit, c)?)),
        6 => plain(
            "SlidingWindowLog",
            Box::new(SlidingWindowLog::with_clock(limit, c)?),
        ),
        7 => plain(
            "SlidingWindowCounter",
            Box::new(SlidingWindowCounter::with_clock(limit, c)),
        ),
        8 => plain(
            "PackedSlidingWindow",
            Box::new(PackedSlidingWindow::with_clock(limit, c)?),
        ),
        9 => plain(
            "PackedSlidingWindow128",
            Box::new(PackedSlidingWindow128::with_clock(limit, c)?),
        ),
        10 => plain(
            "TokenPool, backfill 0.25",
            Box::new(TokenPool::with_clock(limit, 0.25, c)?),
        ),
        11 => plain(
            "KeyedLimiter, 100 ms buckets",
            Box::new(OneKey(
                KeyedLimiter::builder(KeyConfig::new(10, s, s / 10)?).build_with_clock(c),
            )),
        ),
        _ => return Ok(None),
    }))
}

/// Runs one phase from the clock's current reading; returns the achieved rate.
fn phase(subject: &Subject, clock: &ManualClock, total: u64, per_sec: u64) -> f64 {
    let start = clock.now();
    let interval = 1_000 * MS / per_sec;
    // Events: (time, sequence): a request's first try at its arrival, then its retries.
    let mut events: BinaryHeap<Reverse<(u64, u64)>> = (0..total)
        .map(|i| Reverse((start + i * interval, i)))
        .collect();
    let mut seq = total;
    let mut last_done = start;
    while let Some(Reverse((t, _))) = events.pop() {
        clock.set(t);
        (subject.settle)();
        if subject.limiter.try_acquire(1).is_admitted() {
            last_done = t;
        } else {
            events.push(Reverse((t + RETRY, seq)));
            seq += 1;
        }
    }
    let end = last_done.max(start + total * interval);
    clock.set(end);
    total as f64 / ((end - start) as f64 / 1e9)
}

fn main() -> Result<(), paceline::LimitError> {
    print!("| limiter (limit 10/s) |");
    for (_, r) in PHASES {
        print!(" {r}/s |");
    }
    println!();
    println!("|---|{}", "---:|".repeat(PHASES.len()));
    print!("| seed 002's token bucket (real clock) |");
    for r in SEED {
        print!(" {r:.2} |");
    }
    println!();
    // Each limiter runs alone, on its own clock, through all eight phases in turn.
    for i in 0.. {
        let clock = ManualClock::new();
        let Some(subject) = subject(i, &clock)? else {
            break;
        };
        print!("| {} |", subject.name);
        for (total, per_sec) in PHASES {
            print!(" {:.2} |", phase(&subject, &clock, total, per_sec));
        }
        println!();
    }
    Ok(())
}
