//! Coordinated omission, shown: a steady paced load against nginx, which stops
//! answering for a while (SIGSTOP, then SIGCONT), measured by paceline (burst
//! allowance 1.1 and average mode) and by `wrk` (closed loop, no correction).
//!
//! ```sh
//! cargo run --release --example co_demo -- [RATE] [STALL_MS]
//! cargo run --release --example co_demo -- 1000 1000
//! ```
//!
//! Needs `nginx` (and `wrk` for the comparison; skipped with a note when
//! missing). Prints markdown tables; `docs/coordinated-omission.md` holds a run.

#[path = "../tests/support/nginx.rs"]
mod nginx;

use nginx::Nginx;
use paceline::{Drivers, Engine, Latencies, Outcome, ParamOverrides, Snapshot};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// When the stall starts, after the load starts.
const STALL_AT: Duration = Duration::from_secs(3);
const THREADS: usize = 4;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rate: f64 = args
        .first()
        .map_or(1000.0, |s| s.parse().expect("RATE: a number"));
    let stall_ms: u64 = args
        .get(1)
        .map_or(1000, |s| s.parse().expect("STALL_MS: a number"));
    let stall = Duration::from_millis(stall_ms);
    let nginx = nginx::start_or_exit();
    println!(
        "nginx pid {} on {}; rate {rate}/s, {THREADS} threads, stall {stall_ms} ms at {} s\n",
        nginx.pid(),
        nginx.base_url(),
        STALL_AT.as_secs()
    );

    let mut rows = Vec::new();
    // Strictness 1.1: the backlog drains at 1.1 x rate, so it takes stall / 0.1.
    let burst_secs = STALL_AT.as_secs_f64() + stall.as_secs_f64() * 11.0 + 2.0;
    rows.push(paced(&nginx, rate, "1.1", burst_secs, stall));
    let avg_secs = STALL_AT.as_secs_f64() + stall.as_secs_f64() + 4.0;
    rows.push(paced(&nginx, rate, "0", avg_secs, stall));
    match wrk(&nginx, stall) {
        Ok(r) => rows.push(r),
        Err(e) => println!("wrk: skipped ({e})\n"),
    }

    println!("## Side by side\n");
    println!("| tool | measure | p50 | p90 | p99 | p99.9 | max | requests | rate |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for r in &rows {
        for (name, p) in &r.measures {
            println!(
                "| {} | {name} | {} | {} | {} | {} | {} | {} | {:.0}/s |",
                r.tool,
                fmt(p[0]),
                fmt(p[1]),
                fmt(p[2]),
                fmt(p[3]),
                fmt(p[4]),
                r.requests,
                r.rate
            );
        }
    }
}

/// One tool's figures: per measure p50, p90, p99, p99.9 (if known), max.
struct Row {
    tool: String,
    measures: Vec<(&'static str, [Option<u64>; 5])>,
    requests: u64,
    rate: f64,
}

fn pcts(l: &Latencies) -> [Option<u64>; 5] {
    [
        Some(l.p50()),
        Some(l.p90()),
        Some(l.p99()),
        Some(l.p999()),
        Some(l.max()),
    ]
}

fn fmt(n: Option<u64>) -> String {
    let Some(n) = n else { return "-".to_string() };
    let n = n as f64;
    if n >= 1e9 {
        format!("{:.3} s", n / 1e9)
    } else if n >= 1e6 {
        format!("{:.1} ms", n / 1e6)
    } else {
        format!("{:.0} us", n / 1e3)
    }
}

fn paced(nginx: &Nginx, rate: f64, strictness: &str, secs: f64, stall: Duration) -> Row {
    let cycles = (rate * secs) as u64;
    let mode = if strictness == "0" {
        "average (strictness 0)".to_string()
    } else {
        format!("burst allowance (strictness {strictness})")
    };
    let alias = format!("co-{}", strictness.replace('.', "_"));
    let yaml = format!(
        "params: {{driver: http, alias: {alias}, base_url: '{}', threads: {THREADS}, cycles: {cycles}, \
         rate: '{rate},{strictness}', errors: count}}\nops: {{ok: GET /ok}}",
        nginx.base_url()
    );
    let d = Drivers::builtin();
    let a = d
        .loader()
        .from_str(&yaml, "co.yaml")
        .expect("valid activity");
    let t0 = Instant::now();
    let cpu = paceline::CpuMeter::start();
    let run = d
        .start(&Engine::new(), &a, &ParamOverrides::default())
        .expect("starts");
    let mut intervals: Vec<Snapshot> = Vec::new();
    let mut wall = 0.0;
    std::thread::scope(|scope| {
        scope.spawn(|| {
            sleep_until(t0 + STALL_AT);
            nginx.stall(stall);
        });
        let mut tick = 1;
        loop {
            let left = (t0 + Duration::from_secs(tick)).saturating_duration_since(Instant::now());
            if run.wait_timeout(left).is_some() {
                wall = t0.elapsed().as_secs_f64();
                break;
            }
            tick += 1;
            intervals.push(run.snapshot());
        }
    });
    assert_eq!(run.wait(), Outcome::Completed);
    intervals.push(run.snapshot());
    let total = run.totals();
    let http = paceline::Http::stats(&alias).expect("stats");
    let verdict = paceline::Verdict::of(&total, Some(rate), THREADS, cpu.cores());

    println!("## paceline, {rate}/s, {mode}\n");
    println!(
        "{} ops in {wall:.2} s = {:.1}/s achieved; errors {:?}; {} requests on {} connections",
        total.ops(),
        total.ops() as f64 / wall,
        total.errors().collect::<Vec<_>>(),
        http.requests,
        http.connections
    );
    println!("verdict: {verdict}\n");
    let slow = |l: &Latencies| l.histogram().count_between(10_000_000, u64::MAX);
    println!(
        "ops over 10 ms: service {}, wait {}, response {}\n",
        slow(total.service()),
        slow(total.wait()),
        slow(total.response())
    );
    println!("| measure | p50 | p90 | p99 | p99.9 | max |");
    println!("|---|---|---|---|---|---|");
    for (name, l) in [
        ("service", total.service()),
        ("wait", total.wait()),
        ("response", total.response()),
    ] {
        let p = pcts(l);
        println!(
            "| {name} | {} | {} | {} | {} | {} |",
            fmt(p[0]),
            fmt(p[1]),
            fmt(p[2]),
            fmt(p[3]),
            fmt(p[4])
        );
    }
    println!("\nPer interval (about 1 s each):\n");
    println!("| ends at | ops | rate | service max | wait p50 | wait max | response max |");
    println!("|---|---|---|---|---|---|---|");
    for s in intervals.iter().filter(|s| s.ops() > 0) {
        let end = (s.end() - intervals[0].start()) as f64 / 1e9;
        println!(
            "| {end:.1} s | {} | {:.0}/s | {} | {} | {} | {} |",
            s.ops(),
            s.rate(),
            fmt(Some(s.service().max())),
            fmt(Some(s.wait().p50())),
            fmt(Some(s.wait().max())),
            fmt(Some(s.response().max()))
        );
    }
    println!();
    Row {
        tool: format!("paceline {mode}"),
        measures: vec![
            ("service", pcts(total.service())),
            ("wait", pcts(total.wait())),
            ("response", pcts(total.response())),
        ],
        requests: total.ops(),
        rate: total.ops() as f64 / wall,
    }
}

fn sleep_until(t: Instant) {
    let now = Instant::now();
    if t > now {
        std::thread::sleep(t - now);
    }
}

/// Runs `wrk -t4 -c4 -d10s --latency` with the same stall, and parses it.
fn wrk(nginx: &Nginx, stall: Duration) -> Result<Row, String> {
    let secs = STALL_AT.as_secs() + stall.as_secs() + 6;
    let t0 = Instant::now();
    let child = Command::new("wrk")
        .args([
            format!("-t{THREADS}"),
            format!("-c{THREADS}"),
            format!("-d{secs}s"),
            "--latency".to_string(),
            format!("{}/ok", nginx.base_url()),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run wrk: {e}; install it with `apt-get install wrk`"))?;
    sleep_until(t0 + STALL_AT);
    nginx.stall(stall);
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    println!("## wrk -t{THREADS} -c{THREADS} -d{secs}s --latency, same stall\n");
    println!("```text\n{}```\n", text);
    let p = |label: &str| -> Option<u64> {
        text.lines()
            .map(str::trim)
            .find(|l| l.starts_with(label))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(parse_wrk_duration)
    };
    let max = text
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("Latency") && l.split_whitespace().count() >= 4)
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(parse_wrk_duration);
    let (requests, rate) = nginx::wrk_totals(&text);
    let (requests, rate) = (requests.unwrap_or(0), rate.unwrap_or(0.0));
    Ok(Row {
        tool: "wrk (closed loop)".to_string(),
        measures: vec![("latency", [p("50%"), p("90%"), p("99%"), None, max])],
        requests,
        rate,
    })
}

/// `85.00us`, `1.20ms`, `1.00s`, `2.00m` (wrk's forms) to nanoseconds.
fn parse_wrk_duration(s: &str) -> Option<u64> {
    paceline::nanos::parse_duration(s)
        .ok()
        .map(paceline::nanos::from_duration)
}
