//! Paces ops on the real clock and reports what happened.
//!
//! ```sh
//! # one run: RATE [THREADS] [SECONDS] [STRATEGY] [STRICTNESS]
//! cargo run --release --example pace -- 10K 2
//! cargo run --release --example pace -- 100K 8 2 sleep 0
//! # wait tells the truth: a caller that keeps up, and one slower than the rate
//! cargo run --release --example pace -- slow [RATE] [SECONDS]
//! # CPU, waits and burst for every waiting strategy at 1K-1M ops/s (markdown)
//! cargo run --release --example pace -- table [SECONDS] [THREADS]
//! # starts are exact: stalls of 1-50 ms between quick grants, every mode, 1K-5M ops/s
//! cargo run --release --example pace -- stall [ROUNDS]
//! # CPU while the rate ramps 1K -> 100K in 25 ms steps, as the engine's ramp does
//! cargo run --release --example pace -- ramp [THREADS] [SECONDS]
//! ```
//!
//! STRATEGY is one of adaptive (default), sleep, spin-sleep, spin, exact: the presets of
//! `Waiting`. A run prints the achieved rate against the target, wait percentiles, CPU
//! used (share of one core, all threads) and the largest number of ops that started
//! within any 1 ms window.

use paceline::{RateLimiter, RateSpec, Waiting};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        None | Some("--help" | "-h") => usage(),
        Some("slow") => slow(&args[1..]),
        Some("table") => table(&args[1..]),
        Some("stall") => stall(&args[1..]),
        Some("ramp") => ramp(&args[1..]),
        Some(_) => single(&args),
    }
}

fn usage() -> ! {
    eprintln!(
        "usage: pace RATE [THREADS] [SECONDS] [adaptive|sleep|spin-sleep|spin|exact] [STRICTNESS]\n\
         \x20      pace slow [RATE] [SECONDS]\n\
         \x20      pace table [SECONDS] [THREADS]\n\
         \x20      pace stall [ROUNDS]\n\
         \x20      pace ramp [THREADS] [SECONDS]"
    );
    std::process::exit(2)
}

fn fail(msg: &str) -> ! {
    eprintln!("error: {msg}");
    std::process::exit(2)
}

fn parse_or<T: std::str::FromStr>(arg: Option<&String>, default: T, what: &str) -> T {
    arg.map_or(Ok(default), |s| s.parse())
        .unwrap_or_else(|_| fail(what))
}

/// The waiting presets, by the names the command line uses.
const STRATEGIES: &[(&str, Waiting)] = &[
    ("adaptive", Waiting::adaptive()),
    ("sleep", Waiting::sleep()),
    ("spin-sleep", Waiting::spin_sleep()),
    ("spin", Waiting::spin()),
    ("exact", Waiting::exact()),
];

fn strategy(name: &str) -> Waiting {
    if name == "adaptive-park" {
        // The default plus parking: callers the schedule does not need yet park.
        return Waiting::builder()
            .release_window(std::time::Duration::from_micros(50))
            .timer_slack(std::time::Duration::from_nanos(1))
            .park_when_ahead(true)
            .build();
    }
    STRATEGIES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, w)| w)
        .unwrap_or_else(|| {
            fail(&format!(
                "unknown strategy `{name}`: use adaptive, adaptive-park, sleep, spin-sleep, spin or exact"
            ))
        })
}

/// One paced run.
struct Run {
    spec: RateSpec,
    threads: usize,
    seconds: f64,
    waiting: Waiting,
    /// Work each op does after it starts (busy, on the limiter's clock), in ns.
    service_nanos: u64,
}

/// What a run measured.
struct Outcome {
    /// Every op's start and wait, in ns since the limiter's origin, sorted by start.
    ops: Vec<(u64, u64)>,
    waits: hdrhistogram::Histogram<u64>,
    /// CPU of all threads, in ns, and the wall time, in ns.
    cpu: u64,
    wall: u64,
}

impl Run {
    fn go(&self) -> Outcome {
        let slice = self.spec.slice_nanos().expect("a positive rate");
        let total = ((self.seconds * 1e9 / slice).round() as u64).max(1);
        let limiter = Arc::new(
            RateLimiter::builder(self.spec)
                .waiting(self.waiting)
                .build(),
        );
        let next = Arc::new(AtomicU64::new(0));
        let service = self.service_nanos;
        let cpu_before = thread_cpu_nanos();
        let wall = Instant::now();
        let handles: Vec<_> = (0..self.threads)
            .map(|_| {
                let limiter = Arc::clone(&limiter);
                let next = Arc::clone(&next);
                std::thread::spawn(move || {
                    let mut ops = Vec::new();
                    let mut waits = histogram();
                    while next.fetch_add(1, Ordering::Relaxed) < total {
                        let g = limiter.acquire();
                        // read once: on the real clock a start may be read when asked
                        let start = g.start_nanos();
                        let wait = g.wait_at(start);
                        ops.push((start, wait));
                        waits.saturating_record(wait);
                        if service > 0 {
                            let until = start + service;
                            while limiter.now() < until {
                                std::hint::spin_loop();
                            }
                        }
                    }
                    (ops, waits, thread_cpu_nanos())
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
        let mut ops = Vec::with_capacity(total as usize);
        let mut waits = histogram();
        let mut cpu = 0;
        for h in handles {
            let (o, w, c) = h.join().expect("worker panicked");
            cpu += c;
            ops.extend(o);
            waits.add(w).expect("histogram merge");
        }
        let wall = wall.elapsed().as_nanos() as u64;
        cpu += thread_cpu_nanos().saturating_sub(cpu_before);
        ops.sort_unstable();
        Outcome {
            ops,
            waits,
            cpu,
            wall,
        }
    }
}

impl Outcome {
    /// Ops after the first, over the time from the first start to the last.
    fn achieved(&self) -> f64 {
        let (first, last) = (self.ops[0].0, self.ops[self.ops.len() - 1].0);
        let span = (last - first) as f64 / 1e9;
        if span > 0.0 {
            (self.ops.len() - 1) as f64 / span
        } else {
            0.0
        }
    }

    /// The largest number of ops that started within any 1 ms window.
    fn max_in_ms(&self) -> usize {
        let (mut best, mut lo) = (0, 0);
        for hi in 0..self.ops.len() {
            while self.ops[hi].0 - self.ops[lo].0 >= 1_000_000 {
                lo += 1;
            }
            best = best.max(hi - lo + 1);
        }
        best
    }

    /// CPU as a share of one core, in percent.
    fn cpu_percent(&self) -> f64 {
        self.cpu as f64 / self.wall as f64 * 100.0
    }

    fn wait_us(&self, q: f64) -> f64 {
        self.waits.value_at_quantile(q) as f64 / 1e3
    }
}

fn histogram() -> hdrhistogram::Histogram<u64> {
    hdrhistogram::Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("histogram")
}

/// `pace RATE [THREADS] [SECONDS] [STRATEGY] [STRICTNESS]`: one run.
fn single(args: &[String]) {
    let spec = RateSpec::parse(&args[0]).unwrap_or_else(|e| fail(&e.to_string()));
    let threads = parse_or(args.get(1), 2, "THREADS must be a whole number, such as 2");
    let seconds = parse_or(
        args.get(2),
        2.0,
        "SECONDS must be a number, such as 2 or 0.5",
    );
    let name = args.get(3).map_or("adaptive", String::as_str);
    let waiting = strategy(name);
    let spec = match args.get(4) {
        Some(s) => {
            let s: f64 = s
                .parse()
                .unwrap_or_else(|_| fail("STRICTNESS must be a number, such as 0 or 1.1"));
            spec.try_strictness(s)
                .unwrap_or_else(|e| fail(&e.to_string()))
        }
        None => spec,
    };
    if spec.is_paused() {
        fail("a rate of 0 pauses forever; give a positive rate");
    }
    let out = Run {
        spec,
        threads,
        seconds,
        waiting,
        service_nanos: 0,
    }
    .go();
    println!(
        "target {:.0}/s  achieved {:.1}/s ({:+.3} %)  threads {threads}  strategy {name}  ops {}",
        spec.rate(),
        out.achieved(),
        (out.achieved() / spec.rate() - 1.0) * 100.0,
        out.ops.len(),
    );
    println!(
        "wait us: p50 {:.1}  p99 {:.1}  p99.9 {:.1}  max {:.1}   cpu {:.1} % of a core   \
         max ops in 1 ms {} (rate x 1 ms = {:.1})",
        out.wait_us(0.5),
        out.wait_us(0.99),
        out.wait_us(0.999),
        out.waits.max() as f64 / 1e3,
        out.cpu_percent(),
        out.max_in_ms(),
        spec.rate() / 1000.0,
    );
}

/// `pace slow [RATE] [SECONDS]`: wait tells the truth. One caller, default strictness
/// and waiting, four runs: no work per op, half a slice of work (both keep up), and
/// 1.5 slices of work (the caller falls behind by half a slice per op) at the default
/// strictness and at strictness 1.
fn slow(args: &[String]) {
    let spec = args.first().map_or(RateSpec::new(1000.0), |s| {
        RateSpec::parse(s).unwrap_or_else(|e| fail(&e.to_string()))
    });
    let seconds = parse_or(args.get(1), 2.0, "SECONDS must be a number, such as 2");
    let Some(slice) = spec.slice_nanos() else {
        fail("a rate of 0 pauses forever; give a positive rate")
    };
    let slice = slice.round() as u64;
    println!(
        "rate {}/s (slice {:.1} us), 1 thread, adaptive waiting, {seconds} s of schedule per run",
        spec.rate(),
        slice as f64 / 1e3
    );
    println!();
    println!("| caller | strictness | work per op | p50 wait | p99 wait | max wait | CPU |");
    println!("|---|---|---|---:|---:|---:|---:|");
    for (label, work) in [("keeps up, no work", 0), ("keeps up", slice / 2)] {
        let out = Run {
            spec,
            threads: 1,
            seconds,
            waiting: Waiting::adaptive(),
            service_nanos: work,
        }
        .go();
        println!(
            "| {label} | {} | {:.0} us | {:.1} us | {:.1} us | {:.1} us | {:.1} % |",
            spec.strictness_value(),
            work as f64 / 1e3,
            out.wait_us(0.5),
            out.wait_us(0.99),
            out.waits.max() as f64 / 1e3,
            out.cpu_percent(),
        );
    }
    println!();
    let work = slice + slice / 2;
    let shortfall = work - slice;
    println!(
        "slow caller: {:.0} us of work per op, so each op starts {:.0} us (the shortfall) \
         after its slot plus the lateness of the op before it",
        work as f64 / 1e3,
        shortfall as f64 / 1e3
    );
    println!();
    println!(
        "| strictness | ops | expected wait step | mean step | p50 step | max deviation from the shortfall | last wait | ops x shortfall |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for s in [spec.strictness_value(), 1.0] {
        let out = Run {
            spec: spec.strictness(s),
            threads: 1,
            seconds: seconds * 2.0 / 3.0,
            waiting: Waiting::adaptive(),
            service_nanos: work,
        }
        .go();
        let waits: Vec<i64> = out.ops.iter().map(|&(_, w)| w as i64).collect();
        // strict forfeits each op's lateness, so its wait is the shortfall itself, not
        // a running total: compare the waits, not their steps
        let strict = s == 1.0;
        let mut steps: Vec<i64> = if strict {
            waits[1..].to_vec()
        } else {
            waits.windows(2).map(|w| w[1] - w[0]).collect()
        };
        let mean = steps.iter().sum::<i64>() as f64 / steps.len() as f64;
        let worst = steps
            .iter()
            .map(|&d| (d - shortfall as i64).abs())
            .max()
            .unwrap_or(0);
        steps.sort_unstable();
        let p50 = steps[steps.len() / 2];
        let last = *waits.last().unwrap_or(&0);
        println!(
            "| {s}{} | {} | {:.1} us | {:.2} us | {:.2} us | {:.2} us | {:.1} ms | {} |",
            if strict { " (wait itself)" } else { "" },
            waits.len(),
            shortfall as f64 / 1e3,
            mean / 1e3,
            p50 as f64 / 1e3,
            worst as f64 / 1e3,
            last as f64 / 1e6,
            if strict {
                format!("{:.1} ms (strict: one shortfall)", shortfall as f64 / 1e6)
            } else {
                format!(
                    "{:.1} ms",
                    (waits.len() - 1) as f64 * shortfall as f64 / 1e6
                )
            },
        );
    }
}

/// `pace table [SECONDS] [THREADS]`: every waiting preset at 1K, 10K, 100K and 1M ops/s,
/// default strictness, as a markdown table.
fn table(args: &[String]) {
    let seconds = parse_or(args.first(), 2.0, "SECONDS must be a number, such as 2");
    let threads = parse_or(
        args.get(1),
        8usize,
        "THREADS must be a whole number, such as 8",
    );
    let only = std::env::var("PACE_STRATEGIES").ok();
    println!(
        "{threads} threads, strictness {}, {seconds} s per cell; burst bound = 1.2 x rate x 1 ms + threads",
        paceline::DEFAULT_STRICTNESS
    );
    println!();
    println!(
        "| strategy | rate | achieved | CPU (% of a core) | p50 wait | p99 wait | max ops in 1 ms | bound |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for &(name, waiting) in STRATEGIES {
        if only
            .as_deref()
            .is_some_and(|o| !o.split(',').any(|n| n == name))
        {
            continue;
        }
        for rate in [1e3, 1e4, 1e5, 1e6] {
            let out = Run {
                spec: RateSpec::new(rate),
                threads,
                seconds,
                waiting,
                service_nanos: 0,
            }
            .go();
            let bound = 1.2 * rate / 1e3 + threads as f64;
            let max = out.max_in_ms();
            println!(
                "| {name} | {} | {:+.2} % | {:.1} | {:.1} us | {:.1} us | {max}{} | {bound:.0} |",
                short(rate),
                (out.achieved() / rate - 1.0) * 100.0,
                out.cpu_percent(),
                out.wait_us(0.5),
                out.wait_us(0.99),
                if max as f64 > bound { " (over)" } else { "" },
            );
        }
    }
}

/// `pace stall [ROUNDS]`: at 1K-5M ops/s in every mode, a caller takes quick grants,
/// stalls 1, 5, 20 or 50 ms, and acquires again. Reports, per rate and mode, the worst
/// of: how much earlier than the call to `acquire` the reported start was (must be 0:
/// a start before the call leaves the stall out of the wait), how much earlier than
/// `acquire`'s return (the same bug, seen from the other side: a stale start is older
/// than the return by the stall; an exact one by the time from its reading to the
/// return).
fn stall(args: &[String]) {
    let rounds: u32 = parse_or(args.first(), 5, "ROUNDS must be a whole number");
    let stalls_ms = [1u64, 5, 20, 50];
    println!(
        "| rate | mode | grants | start before the call (worst) | start before the return (worst) |"
    );
    println!("|---|---|---:|---:|---:|");
    for rate in [1e3, 1e4, 1e5, 1e6, 5e6] {
        for (mode, s) in [
            ("average 0", 0.0),
            ("compensate 0.25", 0.25),
            ("strict 1", 1.0),
            ("burst 1.1", 1.1),
            ("burst 2", 2.0),
        ] {
            let limiter = RateLimiter::new(RateSpec::new(rate).strictness(s));
            let (mut before_call, mut before_return, mut grants) = (0u64, 0u64, 0);
            let mut take = || {
                let called = limiter.now();
                let g = limiter.acquire();
                let start = g.start_nanos();
                let returned = limiter.now();
                before_call = before_call.max(called.saturating_sub(start));
                before_return = before_return.max(returned.saturating_sub(start));
                grants += 1;
            };
            let quick = (rate / 1e3).clamp(5.0, 200.0) as usize;
            for _ in 0..rounds {
                for &ms in &stalls_ms {
                    for _ in 0..quick {
                        take();
                    }
                    std::thread::sleep(std::time::Duration::from_millis(ms));
                    take();
                }
            }
            println!(
                "| {} | {mode} | {grants} | {} ns | {} ns |",
                short(rate),
                before_call,
                before_return,
            );
        }
    }
}

/// `pace ramp [THREADS] [SECONDS]`: THREADS callers (8) while the rate ramps from 1K to
/// 100K ops/s and back in 25 ms steps (a `set_spec` each, as the engine's ramp makes)
/// for SECONDS (4). Prints the ops, the steps and the CPU used, in percent of a core.
fn ramp(args: &[String]) {
    let threads: usize = parse_or(args.first(), 8, "THREADS must be a whole number");
    let seconds: f64 = parse_or(args.get(1), 4.0, "SECONDS must be a number");
    let limiter = Arc::new(RateLimiter::new(RateSpec::new(1e3)));
    let cpu_before = thread_cpu_nanos();
    let wall = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let limiter = Arc::clone(&limiter);
            std::thread::spawn(move || {
                let mut ops = 0u64;
                while !limiter.acquire().is_stopped() {
                    ops += 1;
                }
                (ops, thread_cpu_nanos())
            })
        })
        .collect();
    let mut steps = 0;
    while wall.elapsed().as_secs_f64() < seconds {
        // a triangle: up over the first half, down over the second
        let x = wall.elapsed().as_secs_f64() / seconds;
        let up = if x < 0.5 { x * 2.0 } else { (1.0 - x) * 2.0 };
        limiter.set_spec(RateSpec::new(1e3 + up * 99e3));
        steps += 1;
        std::thread::sleep(std::time::Duration::from_millis(25));
    }
    limiter.stop();
    let (mut ops, mut cpu) = (0, 0);
    for h in handles {
        let (o, c) = h.join().expect("worker");
        ops += o;
        cpu += c;
    }
    cpu += thread_cpu_nanos().saturating_sub(cpu_before);
    let wall = wall.elapsed().as_nanos() as f64;
    println!(
        "{threads} threads, {ops} ops in {:.2} s, {steps} rate changes: {:.1} % of a core",
        wall / 1e9,
        cpu as f64 / wall * 100.0
    );
}

fn short(rate: f64) -> String {
    match rate {
        r if r >= 1e6 => format!("{}M", r / 1e6),
        r if r >= 1e3 => format!("{}K", r / 1e3),
        r => format!("{r}"),
    }
}

/// CPU time of the calling thread so far, in ns (Linux: /proc/thread-self/schedstat;
/// 0 elsewhere).
fn thread_cpu_nanos() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}
