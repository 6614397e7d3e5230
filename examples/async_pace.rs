//! Many async tasks sharing one limiter on tokio's multi-threaded runtime:
//! paceline's `acquire_async` beside governor's `until_ready`, in the same run.
//!
//! ```sh
//! # TASKS RATE SECONDS [WORKERS]
//! cargo run --release --example async_pace -- 10000 100K 5
//! ```
//!
//! Every task loops: await a permit, note the time, repeat, until SECONDS have passed.
//! For each pacer the run prints the achieved rate (ops that started in the measured
//! window, after a 0.5 s warm-up, per second), the CPU of the whole process (user +
//! system from `/proc/self/stat`, as a share of one core), the time inside the acquire
//! (call to return: p50, p99), for paceline also the wait (start minus slot, the
//! lateness against the schedule), and the most ops that started within any 1 ms
//! (the burst bound is rate x 1 ms, x the strictness for paceline's burst mode).
//!
//! The pacers: paceline at strictness 1.1 (its default, a 10 % burst allowance) and 1.0
//! (strict), and governor with a burst of one op (strict spacing) and of 1 ms of ops.
//! `benches/README.md` holds a run.

use governor::{Quota, RateLimiter as Governor};
use paceline::{RateLimiter, RateSpec};
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        eprintln!("usage: async_pace [TASKS] [RATE] [SECONDS] [WORKERS]");
        std::process::exit(2);
    }
    let tasks: usize = arg(
        &args,
        0,
        10_000,
        "TASKS must be a whole number, such as 10000",
    );
    let rate = args.get(1).map_or(100_000.0, |s| {
        RateSpec::parse(s)
            .unwrap_or_else(|e| fail(&format!("RATE: {e}")))
            .rate()
    });
    if rate < 1.0 {
        fail("RATE must be at least 1 op/s, such as 100K");
    }
    let seconds: f64 = arg(&args, 2, 5.0, "SECONDS must be a number, such as 5");
    if seconds <= 0.5 {
        fail("SECONDS must be more than the 0.5 s warm-up, such as 5");
    }
    let workers: usize = arg(
        &args,
        3,
        std::thread::available_parallelism().map_or(2, |n| n.get()),
        "WORKERS must be a whole number, such as 4",
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_time()
        .build()
        .unwrap_or_else(|e| fail(&format!("could not start tokio: {e}")));
    println!(
        "{tasks} tasks, {rate:.0} ops/s, {seconds} s each, tokio multi-threaded runtime with \
         {workers} workers, {} CPUs",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!();
    println!(
        "| pacer | achieved/s | vs target | CPU (% of a core) | in acquire p50 / p99 | wait p50 / p99 | max ops in 1 ms (bound) |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let run = Run {
        tasks,
        rate,
        seconds,
    };
    for strictness in [1.1, 1.0] {
        let out = rt.block_on(run.paceline(strictness));
        out.print(
            &format!("paceline `acquire_async`, strictness {strictness}"),
            &run,
            strictness,
        );
    }
    let per_ms = ((rate / 1000.0).round() as u32).max(1);
    for burst in [1, per_ms] {
        let out = rt.block_on(run.governor(burst));
        out.print(&format!("governor `until_ready`, burst {burst}"), &run, 1.0);
    }
}

fn fail(msg: &str) -> ! {
    eprintln!("error: {msg}");
    std::process::exit(2)
}

fn arg<T: std::str::FromStr>(args: &[String], i: usize, default: T, what: &str) -> T {
    args.get(i)
        .map_or(Ok(default), |s| s.parse())
        .unwrap_or_else(|_| fail(what))
}

#[derive(Clone, Copy)]
struct Run {
    tasks: usize,
    rate: f64,
    seconds: f64,
}

/// One op: when it started (ns since the run began), how long the acquire took, and
/// its wait against its slot (paceline only).
type Op = (u64, u64, Option<u64>);

struct Outcome {
    ops: Vec<Op>,
    cpu_seconds: f64,
    wall: f64,
}

fn cpu_seconds() -> f64 {
    // utime and stime are fields 14 and 15, after the parenthesised command name
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<f64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|s| s.parse().ok())
        .collect();
    f.iter().sum::<f64>() / 100.0
}

impl Run {
    async fn paceline(self, strictness: f64) -> Outcome {
        let spec = RateSpec::new(self.rate).strictness(strictness);
        let limiter = Arc::new(RateLimiter::new(spec));
        let deadline = Duration::from_secs_f64(self.seconds);
        let stopper = {
            let limiter = Arc::clone(&limiter);
            tokio::spawn(async move {
                tokio::time::sleep(deadline).await;
                limiter.stop();
            })
        };
        let out = self
            .drive(move |t0| {
                let limiter = Arc::clone(&limiter);
                async move {
                    let called = Instant::now();
                    let g = limiter.acquire_async().await;
                    let now = Instant::now();
                    if g.is_stopped() {
                        return None;
                    }
                    let in_acquire = (now - called).as_nanos() as u64;
                    Some((
                        (now - t0).as_nanos() as u64,
                        in_acquire,
                        Some(g.wait_nanos()),
                    ))
                }
            })
            .await;
        stopper.await.ok();
        out
    }

    async fn governor(self, burst: u32) -> Outcome {
        let quota = Quota::with_period(Duration::from_secs_f64(1.0 / self.rate))
            .unwrap_or_else(|| fail("rate too high for governor"))
            .allow_burst(NonZeroU32::new(burst).unwrap_or(NonZeroU32::MIN));
        let gov = Arc::new(Governor::direct(quota));
        self.drive(move |t0| {
            let gov = Arc::clone(&gov);
            async move {
                let called = Instant::now();
                gov.until_ready().await;
                let now = Instant::now();
                Some((
                    (now - t0).as_nanos() as u64,
                    (now - called).as_nanos() as u64,
                    None,
                ))
            }
        })
        .await
    }

    /// Runs the tasks, each looping on `acquire` until the deadline.
    async fn drive<F, Fut>(self, acquire: F) -> Outcome
    where
        F: Fn(Instant) -> Fut + Clone + Send + 'static,
        Fut: std::future::Future<Output = Option<Op>> + Send,
    {
        let t0 = Instant::now();
        let end = Duration::from_secs_f64(self.seconds);
        let cpu0 = cpu_seconds();
        let mut handles = Vec::with_capacity(self.tasks);
        for _ in 0..self.tasks {
            let acquire = acquire.clone();
            handles.push(tokio::spawn(async move {
                let mut mine = Vec::new();
                while let Some(op) = acquire(t0).await {
                    if op.0 >= end.as_nanos() as u64 {
                        break;
                    }
                    mine.push(op);
                }
                mine
            }));
        }
        let mut ops = Vec::new();
        for h in handles {
            ops.extend(h.await.unwrap_or_default());
        }
        let cpu_seconds = cpu_seconds() - cpu0;
        Outcome {
            ops,
            cpu_seconds,
            wall: t0.elapsed().as_secs_f64(),
        }
    }
}

fn pct(v: &mut [u64], q: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_unstable();
    v[((v.len() - 1) as f64 * q) as usize] as f64 / 1e3
}

impl Outcome {
    fn print(&self, name: &str, run: &Run, strictness: f64) {
        const WARM: u64 = 500_000_000;
        let end = (run.seconds * 1e9) as u64;
        let mut starts: Vec<u64> = self.ops.iter().map(|o| o.0).collect();
        starts.sort_unstable();
        let measured = starts.iter().filter(|&&s| s >= WARM && s < end).count();
        let achieved = measured as f64 / ((end - WARM) as f64 / 1e9);
        let mut max_ms = 0;
        let mut lo = 0;
        for hi in 0..starts.len() {
            while starts[hi] - starts[lo] >= 1_000_000 {
                lo += 1;
            }
            max_ms = max_ms.max(hi + 1 - lo);
        }
        let mut inside: Vec<u64> = self.ops.iter().map(|o| o.1).collect();
        let mut waits: Vec<u64> = self.ops.iter().filter_map(|o| o.2).collect();
        let wait = if waits.is_empty() {
            "-".to_string()
        } else {
            format!(
                "{:.0} / {:.0} us",
                pct(&mut waits, 0.5),
                pct(&mut waits, 0.99)
            )
        };
        println!(
            "| {name} | {achieved:.0} | {:+.3} % | {:.0} % | {:.0} / {:.0} us | {wait} | {max_ms} ({:.0}) |",
            (achieved / run.rate - 1.0) * 100.0,
            self.cpu_seconds / self.wall * 100.0,
            pct(&mut inside, 0.5),
            pct(&mut inside, 0.99),
            run.rate / 1000.0 * strictness,
        );
    }
}
