//! Paces no-op ops on the real clock and reports what happened.
//!
//! ```sh
//! cargo run --release --example pace -- RATE [THREADS] [SECONDS] [STRATEGY] [STRICTNESS]
//! cargo run --release --example pace -- 10K 2
//! cargo run --release --example pace -- 100K 8 2 sleep 0
//! ```
//!
//! STRATEGY is one of adaptive (default), sleep, spin-sleep, spin. Prints the achieved
//! rate against the target, wait percentiles, CPU used (share of one core), and the
//! largest number of ops that started within any 1 ms window.

use paceline::{RateLimiter, RateSpec, Waiting};
use std::sync::Arc;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() || args[0] == "--help" || args[0] == "-h" {
        eprintln!(
            "usage: pace RATE [THREADS] [SECONDS] [adaptive|sleep|spin-sleep|spin] [STRICTNESS]"
        );
        std::process::exit(2);
    }
    let spec = match RateSpec::parse(&args[0]) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let threads: usize = args
        .get(1)
        .map_or(Ok(2), |s| s.parse())
        .unwrap_or_else(|_| {
            eprintln!("error: THREADS must be a whole number, such as 2");
            std::process::exit(2)
        });
    let seconds: f64 = args
        .get(2)
        .map_or(Ok(2.0), |s| s.parse())
        .unwrap_or_else(|_| {
            eprintln!("error: SECONDS must be a number, such as 2 or 0.5");
            std::process::exit(2)
        });
    let waiting = match args.get(3).map(String::as_str).unwrap_or("adaptive") {
        "adaptive" => Waiting::adaptive(),
        "sleep" => Waiting::sleep(),
        "spin-sleep" => Waiting::spin_sleep(),
        "spin" => Waiting::spin(),
        other => {
            eprintln!("error: unknown strategy `{other}`: use adaptive, sleep, spin-sleep or spin");
            std::process::exit(2)
        }
    };
    let spec = match args.get(4).map(|s| s.parse::<f64>()) {
        Some(Ok(s)) => spec.try_strictness(s).unwrap_or_else(|e| {
            eprintln!("error: {e}");
            std::process::exit(2)
        }),
        Some(Err(_)) => {
            eprintln!("error: STRICTNESS must be a number, such as 0 or 1.1");
            std::process::exit(2)
        }
        None => spec,
    };
    let Some(slice) = spec.slice_nanos() else {
        eprintln!("error: a rate of 0 pauses forever; give a positive rate");
        std::process::exit(2)
    };
    let total = ((seconds * 1e9 / slice).round() as u64).max(1);
    let limiter = Arc::new(RateLimiter::builder(spec).waiting(waiting).build());
    let next = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let cpu_before = thread_cpu_nanos();
    let wall = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let limiter = Arc::clone(&limiter);
            let next = Arc::clone(&next);
            std::thread::spawn(move || {
                let mut starts = Vec::new();
                let mut waits =
                    hdrhistogram::Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3)
                        .expect("histogram");
                while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < total {
                    let g = limiter.acquire();
                    starts.push(g.start_nanos());
                    waits.saturating_record(g.wait_nanos());
                }
                (starts, waits, thread_cpu_nanos())
            })
        })
        .collect();
    if std::env::var_os("PACE_TRACE").is_some() {
        while !handles.iter().all(|h| h.is_finished()) {
            std::thread::sleep(std::time::Duration::from_millis(200));
            let s = limiter.stats();
            eprintln!(
                "t={:.1}s grants={} lag={:.1}us idle={}",
                limiter.now() as f64 / 1e9,
                s.grants,
                s.lag_nanos as f64 / 1e3,
                s.idle_nanos
            );
        }
    }
    let mut starts = Vec::with_capacity(total as usize);
    let mut waits = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3)
        .expect("histogram");
    let mut cpu = 0;
    for h in handles {
        let (s, w, c) = h.join().expect("worker panicked");
        cpu += c;
        starts.extend(s);
        waits.add(w).expect("histogram merge");
    }
    let elapsed = wall.elapsed();
    cpu += thread_cpu_nanos().saturating_sub(cpu_before);
    starts.sort_unstable();
    let first = starts[0];
    let last = *starts.last().unwrap_or(&first);
    let span = (last - first) as f64 / 1e9;
    // ops after the first, over the time from the first start to the last
    let achieved = if span > 0.0 {
        (starts.len() - 1) as f64 / span
    } else {
        0.0
    };
    let mut max_in_ms = 0;
    let mut lo = 0;
    for hi in 0..starts.len() {
        while starts[hi] - starts[lo] >= 1_000_000 {
            lo += 1;
        }
        max_in_ms = max_in_ms.max(hi - lo + 1);
    }
    let us = |n: u64| n as f64 / 1e3;
    println!(
        "target {:.0}/s  achieved {:.1}/s ({:+.3} %)  threads {threads}  strategy {}  ops {}",
        spec.rate(),
        achieved,
        (achieved / spec.rate() - 1.0) * 100.0,
        args.get(3).map(String::as_str).unwrap_or("adaptive"),
        starts.len(),
    );
    println!(
        "wait us: p50 {:.1}  p99 {:.1}  p99.9 {:.1}  max {:.1}   cpu {:.1} % of a core   max ops in 1 ms {} (rate x 1 ms = {:.1})",
        us(waits.value_at_quantile(0.5)),
        us(waits.value_at_quantile(0.99)),
        us(waits.value_at_quantile(0.999)),
        us(waits.max()),
        cpu as f64 / elapsed.as_nanos() as f64 * 100.0,
        max_in_ms,
        spec.rate() / 1000.0,
    );
}

/// CPU time of the calling thread so far, in ns (Linux: /proc/thread-self/schedstat;
/// 0 elsewhere).
fn thread_cpu_nanos() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}
