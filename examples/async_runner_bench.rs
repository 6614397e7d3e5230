//! The async runner against thread-per-op, on `diag latency=50ms` (no server):
//! achieved rate, CPU per op, peak RSS and wait p50/p99/max at 2K, 10K and 20K/s,
//! with `concurrency` = 1.2 x rate x 50 ms on 2 threads against that many threads
//! running one op each. Each configuration runs in a child process of its own, so
//! its peak RSS (`VmHWM`) is its own.
//!
//! ```sh
//! cargo run --release --example async_runner_bench            # 5 s per run
//! cargo run --release --example async_runner_bench -- 10      # 10 s per run
//! ```
//!
//! The results, with the machine they came from, are in `benches/README.md`.

use paceline::{Drivers, Engine, ParamOverrides, process_cpu_nanos};
use std::process::Command;

const LATENCY_S: f64 = 0.05;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() >= 4 && args[1] == "--one" {
        let rate: f64 = args[2].parse().expect("rate");
        let mode = args[3].as_str();
        let secs: f64 = args.get(4).map_or(5.0, |s| s.parse().expect("seconds"));
        one(rate, mode, secs);
        return;
    }
    let secs = args.get(1).cloned().unwrap_or_else(|| "5".into());
    println!(
        "| rate | runner | in flight | achieved/s | CPU µs/op | peak RSS MB | wait p50 | wait p99 | wait max |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    let me = std::env::current_exe().expect("own path");
    for rate in [2_000.0, 10_000.0, 20_000.0] {
        for mode in ["async", "thread-per-op"] {
            let out = Command::new(&me)
                .args(["--one", &rate.to_string(), mode, &secs])
                .output()
                .expect("run a child");
            print!("{}", String::from_utf8_lossy(&out.stdout));
            if !out.status.success() {
                eprintln!("{}", String::from_utf8_lossy(&out.stderr));
            }
        }
    }
}

fn one(rate: f64, mode: &str, secs: f64) {
    let in_flight = (1.2 * rate * LATENCY_S).ceil() as u64;
    let cycles = (rate * secs) as u64;
    let shape = match mode {
        "async" => format!("threads: 2, concurrency: {in_flight}"),
        _ => format!("threads: {in_flight}"),
    };
    let yaml = format!(
        "params: {{driver: diag, latency: 50ms, rate: {rate}, cycles: {cycles}, {shape}}}\nops: {{o: x}}\n"
    );
    let d = Drivers::builtin();
    let a = d.loader().from_str(&yaml, "bench.yaml").expect("activity");
    let cpu0 = process_cpu_nanos().unwrap_or(0);
    let run = d
        .start(&Engine::new(), &a, &ParamOverrides::default())
        .expect("start");
    run.wait();
    let cpu = process_cpu_nanos().unwrap_or(0).saturating_sub(cpu0);
    let mut t = run.totals();
    t.merge(&run.snapshot());
    let ops = t.ops().max(1);
    let ms = |n: u64| format!("{:.2} ms", n as f64 / 1e6);
    println!(
        "| {rate} | {mode} | {in_flight} | {:.0} | {:.1} | {:.0} | {} | {} | {} |",
        t.rate(),
        cpu as f64 / 1e3 / ops as f64,
        peak_rss_mb(),
        ms(t.wait().p50()),
        ms(t.wait().p99()),
        ms(t.wait().max())
    );
}

/// The process's peak resident set, in MB (`VmHWM`), or 0 where unknown.
fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}
