//! The shared schedule measured (issue 13): several `paceline run` processes on one
//! machine pacing one schedule through a local redis-server, beside one process
//! alone.
//!
//! ```sh
//! cargo build --release
//! cargo run --release --example shared_bench -- [RATE] [SECONDS] [PROCESSES]
//! cargo run --release --example shared_bench -- 30000 10 3
//! ```
//!
//! Three cases, each `driver=diag threads=2` for RATE x SECONDS cycles:
//!
//! 1. one process alone, its own pacer (no `coordinate`) at RATE;
//! 2. one process on a shared schedule at RATE;
//! 3. PROCESSES processes on one shared schedule at RATE in total, started together.
//!
//! Each process writes its summary JSON; the table shows each one's share of the
//! ops, its wait p99 and p99.9, its CPU (seconds, and cores over its run), the
//! round trips to Redis per 1000 ops, and for the shared cases the aggregate: the
//! global achieved rate (global completed over the time from the schedule's first
//! slot to the latest op end) and its error against RATE. Prints markdown;
//! `benches/README.md` ("Shared schedule") holds a run.

#[path = "../tests/support/redis.rs"]
mod redis;

use redis::RedisServer;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

fn arg(i: usize, default: f64) -> f64 {
    std::env::args()
        .nth(i)
        .map(|s| s.parse().expect("a number"))
        .unwrap_or(default)
}

/// The release binary beside this example (`target/release/paceline`).
fn paceline() -> PathBuf {
    let exe = std::env::current_exe().expect("the example's path");
    let bin = exe
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("paceline"))
        .expect("target/release");
    assert!(
        bin.is_file(),
        "{} is missing: run `cargo build --release` first",
        bin.display()
    );
    bin
}

fn start(bin: &Path, args: &[String], summary: &Path) -> Child {
    Command::new(bin)
        .arg("run")
        .args(args)
        .arg("--summary-json")
        .arg(summary)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("paceline runs")
}

struct Row {
    case: String,
    process: usize,
    ops: u64,
    wait_p99: f64,
    wait_p999: f64,
    cpu_s: f64,
    cores: f64,
    trips_per_k: Option<f64>,
    global: Option<(u64, f64)>,
}

fn read(case: &str, process: usize, path: &Path) -> Row {
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("summary")).expect("JSON");
    let a = &doc["activities"][0];
    let ops = a["cycles"]["completed"].as_u64().unwrap_or(0);
    let elapsed = a["elapsed_seconds"].as_f64().unwrap_or(0.0);
    let cores = a["verdict"]["generator_cpu_cores"].as_f64().unwrap_or(0.0);
    let c = &a["coordinated"];
    Row {
        case: case.into(),
        process,
        ops,
        wait_p99: a["wait_ns"]["p99"].as_f64().unwrap_or(0.0) / 1e3,
        wait_p999: a["wait_ns"]["p999"].as_f64().unwrap_or(0.0) / 1e3,
        cpu_s: cores * elapsed,
        cores,
        trips_per_k: c["round_trips"]
            .as_f64()
            .map(|t| t * 1000.0 / ops.max(1) as f64),
        global: c["global_completed"]
            .as_u64()
            .map(|g| (g, c["global_achieved"].as_f64().unwrap_or(0.0))),
    }
}

fn run_case(bin: &Path, case: &str, procs: usize, args: &[String], dir: &Path) -> Vec<Row> {
    let files: Vec<PathBuf> = (0..procs)
        .map(|i| dir.join(format!("{case}-{i}.json")))
        .collect();
    let children: Vec<Child> = files.iter().map(|f| start(bin, args, f)).collect();
    for (i, c) in children.into_iter().enumerate() {
        let out = c.wait_with_output().expect("waits");
        assert!(
            out.status.success(),
            "{case} process {i}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    files
        .iter()
        .enumerate()
        .map(|(i, f)| read(case, i + 1, f))
        .collect()
}

fn main() {
    let rate = arg(1, 30_000.0);
    let secs = arg(2, 10.0);
    let procs = arg(3, 3.0) as usize;
    let bin = paceline();
    let server = RedisServer::start().expect("redis-server starts (install it to run this)");
    let dir = std::env::temp_dir().join(format!("paceline-shared-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let cycles = (rate * secs) as u64;
    let base = |coordinate: Option<&str>| -> Vec<String> {
        let mut v = vec![
            "driver=diag".to_string(),
            "threads=2".into(),
            format!("cycles={cycles}"),
            format!("rate={rate}"),
        ];
        if let Some(name) = coordinate {
            v.push(format!("coordinate={}/{name}", server.url()));
        }
        v
    };
    let load = || std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average before: {}", load().trim());
    let mut rows = run_case(&bin, "alone", 1, &base(None), &dir);
    rows.extend(run_case(&bin, "alone-shared", 1, &base(Some("one")), &dir));
    rows.extend(run_case(&bin, "shared", procs, &base(Some("many")), &dir));
    println!("load average after: {}", load().trim());
    println!("\n{procs} processes, {rate} ops/s in total for {secs} s, driver=diag threads=2\n");
    println!(
        "| case | process | ops (share) | wait p99 | wait p99.9 | CPU | round trips / 1000 ops |"
    );
    println!("|---|---|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {} | {} ({:.1} %) | {:.0} µs | {:.0} µs | {:.2} s ({:.3} cores) | {} |",
            r.case,
            r.process,
            r.ops,
            r.ops as f64 * 100.0 / cycles as f64,
            r.wait_p99,
            r.wait_p999,
            r.cpu_s,
            r.cores,
            r.trips_per_k.map_or("-".into(), |t| format!("{t:.0}")),
        );
    }
    println!();
    for case in ["alone-shared", "shared"] {
        let best = rows
            .iter()
            .filter(|r| r.case == case)
            .filter_map(|r| r.global)
            .max_by_key(|g| g.0);
        if let Some((done, achieved)) = best {
            println!(
                "{case}: global {done} ops at {achieved:.1}/s: {:+.3} % of {rate}",
                (achieved / rate - 1.0) * 100.0
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
