//! An async HTTP client paced by paceline: `reqwest` on tokio, each request started by
//! `RateLimiter::acquire_async`, its wait, service and response time recorded with
//! paceline's `Metrics` (one `Recorder` per task). See `docs/embedding.md`.
//!
//! ```sh
//! # RATE SECONDS TASKS [URL]; without a URL it starts its own nginx on loopback
//! cargo run --release --example async_http -- 2K 3 32
//! cargo run --release --example async_http -- 500 2 8 http://127.0.0.1:8080/
//! ```
//!
//! Exits 0 when requests were made and every one got a 2xx answer, 1 otherwise, 2 on
//! bad arguments or when nginx cannot be started. An achieved rate more than 5 % off
//! the target is reported, not failed: a debug build on a busy machine misses it.

#[path = "../tests/support/nginx.rs"]
mod nginx;

use paceline::{Metrics, RateLimiter, RateSpec};
use std::sync::Arc;
use std::time::Duration;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        eprintln!("usage: async_http [RATE] [SECONDS] [TASKS] [URL]");
        std::process::exit(2);
    }
    let spec = args.first().map_or(RateSpec::new(2000.0), |s| {
        RateSpec::parse(s).unwrap_or_else(|e| fail(&format!("RATE: {e}")))
    });
    if spec.rate() <= 0.0 {
        fail("RATE must be positive, such as 2K (a rate of 0 pauses forever)");
    }
    let seconds: f64 = arg(
        &args,
        1,
        3.0,
        "SECONDS must be a positive number, such as 3",
    );
    let tasks: usize = arg(&args, 2, 32, "TASKS must be a whole number, such as 32");
    if seconds <= 0.0 || tasks == 0 {
        fail("SECONDS and TASKS must be positive, such as 3 and 32");
    }
    // Our own nginx unless a URL was given; it is killed when `_server` drops.
    let (url, _server) = match args.get(3) {
        Some(url) => (url.clone(), None),
        None => {
            let server = nginx::start_or_exit();
            (format!("{}/ok", server.base_url()), Some(server))
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| fail(&format!("could not start tokio: {e}")));
    let ok = rt.block_on(run(spec, seconds, tasks, url));
    std::process::exit(if ok { 0 } else { 1 });
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

async fn run(spec: RateSpec, seconds: f64, tasks: usize, url: String) -> bool {
    let limiter = Arc::new(RateLimiter::new(spec));
    let metrics = Metrics::new(limiter.now());
    let client = reqwest::Client::new();
    let mut handles = Vec::new();
    for _ in 0..tasks {
        let (limiter, client, url) = (Arc::clone(&limiter), client.clone(), url.clone());
        // One recorder per task: the hot path shares no lock.
        let mut rec = metrics.recorder();
        handles.push(tokio::spawn(async move {
            loop {
                let grant = limiter.acquire_async().await;
                if grant.is_stopped() {
                    break;
                }
                // The start is our own reading: the wait is start - slot, and the
                // same reading begins the service time.
                let start = limiter.now();
                let wait = grant.wait_at(start);
                let answer = match client.get(&url).send().await {
                    Ok(resp) => {
                        let status = resp.status();
                        resp.bytes().await.map(|_| status)
                    }
                    Err(e) => Err(e),
                };
                let service = limiter.now().saturating_sub(start);
                match answer {
                    Ok(status) if status.is_success() => {}
                    Ok(status) => rec.error_named(status.as_str()),
                    Err(e) => rec.error_with("transport", &e.to_string()),
                }
                rec.record(wait, service);
            }
        }));
    }
    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
    limiter.stop();
    // The interval ends at the stop: requests in flight then are recorded when they
    // finish, and counted in it.
    let end = limiter.now();
    for h in handles {
        h.await.ok();
    }
    let snap = metrics.snapshot(end);
    let us = |n: u64| n as f64 / 1e3;
    println!(
        "{url}: {} requests in {:.2} s, {:.1}/s against a target of {}/s, {tasks} tasks",
        snap.ops(),
        snap.elapsed_nanos() as f64 / 1e9,
        snap.rate(),
        spec.rate()
    );
    for (name, l) in [
        ("wait", snap.wait()),
        ("service", snap.service()),
        ("response", snap.response()),
    ] {
        println!(
            "{name:>8} us: p50 {:.0}  p99 {:.0}  p99.9 {:.0}  max {:.0}",
            us(l.p50()),
            us(l.p99()),
            us(l.p999()),
            us(l.max())
        );
    }
    let stats = limiter.stats();
    println!(
        "limiter: {} grants, {:.0} missed slots; errors: {}",
        stats.grants,
        stats.missed_slots,
        snap.error_count()
    );
    for (kind, message) in metrics.first_errors() {
        println!("  first {kind}: {message}");
    }
    if (snap.rate() / spec.rate() - 1.0).abs() > 0.05 {
        println!("note: the achieved rate is more than 5 % off the target");
    }
    snap.ops() > 0 && snap.error_count() == 0
}
