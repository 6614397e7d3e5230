//! Instructions per grant, for a count that does not depend on the machine's load:
//! run it twice under callgrind with two op counts and divide the difference.
//!
//! ```sh
//! cargo build --release --example grant_cost
//! for n in 1000000 2000000; do
//!   valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/grant_cost paceline $n 2>&1 | grep refs
//! done
//! ```
//!
//! WHAT is `paceline` (acquire, unthrottled, average mode), `paceline-wait` (the same,
//! and each grant's wait asked for), `paceline-burst` (the default strictness 1.1) or
//! `governor` (`check()`, configured to admit every call). Under callgrind every op is
//! about 100 times slower, which changes what paceline's pace-sized reservations do:
//! the counts are for comparing builds, not for the cost on a real CPU.
//!
//! `grant_cost time ROUNDS N` times N calls of each in turn, ROUNDS times, in one
//! process (ns per call): ratios that a busy machine disturbs less than separate runs.
//! `grant_cost time2 ROUNDS N` does the same with two threads calling one limiter
//! (wall time over all calls of both); `grant_cost timen THREADS ROUNDS N` with THREADS
//! threads (a contention run for a machine with many cores).

use std::hint::black_box;
use std::num::NonZeroU32;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("time") {
        let rounds = args.get(1).and_then(|r| r.parse().ok()).unwrap_or(5);
        let n = args
            .get(2)
            .and_then(|r| r.parse().ok())
            .unwrap_or(20_000_000);
        return time(rounds, n);
    }
    if args.first().map(String::as_str) == Some("time2") {
        let rounds = args.get(1).and_then(|r| r.parse().ok()).unwrap_or(5);
        let n = args
            .get(2)
            .and_then(|r| r.parse().ok())
            .unwrap_or(20_000_000);
        return time_n(2, rounds, n);
    }
    if args.first().map(String::as_str) == Some("timen") {
        let threads = args.get(1).and_then(|r| r.parse().ok()).unwrap_or(2);
        let rounds = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(5);
        let n = args
            .get(3)
            .and_then(|r| r.parse().ok())
            .unwrap_or(20_000_000);
        return time_n(threads, rounds, n);
    }
    let (Some(what), Some(n)) = (
        args.first(),
        args.get(1).and_then(|n| n.parse::<u64>().ok()),
    ) else {
        eprintln!("usage: grant_cost paceline|paceline-wait|paceline-burst|governor N");
        std::process::exit(2);
    };
    match what.as_str() {
        "paceline" | "paceline-wait" | "paceline-burst" => {
            let s = if what == "paceline-burst" { 1.1 } else { 0.0 };
            let l = paceline::RateLimiter::new(paceline::RateSpec::new(1e9).strictness(s));
            let wait = what == "paceline-wait";
            for _ in 0..n {
                let g = l.acquire();
                if wait {
                    black_box(g.wait_nanos());
                }
                black_box(g);
            }
        }
        "governor" => {
            let big = NonZeroU32::new(1_000_000_000).expect("nonzero");
            let g =
                governor::RateLimiter::direct(governor::Quota::per_second(big).allow_burst(big));
            for _ in 0..n {
                black_box(g.check().is_ok());
            }
        }
        other => {
            eprintln!("unknown: {other}");
            std::process::exit(2);
        }
    }
}

/// ROUNDS rounds of N calls of each, alternating; ns per call.
fn time(rounds: u32, n: u64) {
    let big = NonZeroU32::new(1_000_000_000).expect("nonzero");
    let avg = paceline::RateLimiter::new(paceline::RateSpec::new(1e9).strictness(0.0));
    let burst = paceline::RateLimiter::new(paceline::RateSpec::new(1e9));
    let asked = paceline::RateLimiter::new(paceline::RateSpec::new(1e9).strictness(0.0));
    let gov = governor::RateLimiter::direct(governor::Quota::per_second(big).allow_burst(big));
    let per = |f: &dyn Fn()| {
        let t = std::time::Instant::now();
        for _ in 0..n {
            f();
        }
        t.elapsed().as_nanos() as f64 / n as f64
    };
    println!("round  paceline-avg  paceline-burst  paceline-wait  governor  avg/gov  burst/gov");
    for r in 0..rounds {
        let a = per(&|| {
            black_box(avg.acquire());
        });
        let b = per(&|| {
            black_box(burst.acquire());
        });
        let w = per(&|| {
            black_box(asked.acquire().wait_nanos());
        });
        let g = per(&|| {
            black_box(gov.check().is_ok());
        });
        println!(
            "{r:>5}  {a:>12.1}  {b:>14.1}  {w:>13.1}  {g:>8.1}  {:>7.2}  {:>9.2}",
            a / g,
            b / g
        );
    }
}

/// Wall time per call of `f` called `n` times by each of `threads` threads at once.
fn many(threads: usize, n: u64, f: &(dyn Fn() + Sync)) -> f64 {
    let barrier = std::sync::Barrier::new(threads);
    let t = std::time::Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                barrier.wait();
                for _ in 0..n {
                    f();
                }
            });
        }
    });
    t.elapsed().as_nanos() as f64 / (threads as u64 * n) as f64
}

/// ROUNDS rounds of `threads` threads making N calls each on one limiter, alternating.
fn time_n(threads: usize, rounds: u32, n: u64) {
    let big = NonZeroU32::new(1_000_000_000).expect("nonzero");
    let avg = paceline::RateLimiter::new(paceline::RateSpec::new(1e9).strictness(0.0));
    let burst = paceline::RateLimiter::new(paceline::RateSpec::new(1e9));
    let gov = governor::RateLimiter::direct(governor::Quota::per_second(big).allow_burst(big));
    println!(
        "round  paceline-avg  paceline-burst  governor  gov/avg  gov/burst  ({threads} threads, ns per call, wall)"
    );
    for r in 0..rounds {
        let a = many(threads, n, &|| {
            black_box(avg.acquire());
        });
        let b = many(threads, n, &|| {
            black_box(burst.acquire());
        });
        let g = many(threads, n, &|| {
            black_box(gov.check().is_ok());
        });
        println!(
            "{r:>5}  {a:>12.1}  {b:>14.1}  {g:>8.1}  {:>7.2}  {:>9.2}",
            g / a,
            g / b
        );
    }
}
