//! `coordinate=` with real `paceline run` processes sharing one schedule on a real
//! redis-server: the cycles split once across them at the aggregate rate, a rate
//! change or stop sent to one process's control endpoint reaches the others, a
//! process killed with SIGKILL leaves its unfinished cycles to the survivor (run
//! again and counted), and a lost server ends the run with exit 1 and its reports.
//!
//! Wall-clock rates here are checked with wide tolerance; the aggregate's accuracy
//! is measured in `benches/README.md` ("Shared schedule").
#![cfg(feature = "redis")]

mod support;

#[path = "support/endpoint.rs"]
mod endpoint;

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};
use support::redis::server;

use support::bin::{spawn_run, temp};

/// Waits for `child` (at most `limit`); its exit code and output.
fn finish(child: Child, limit: Duration) -> (Option<i32>, String) {
    let (code, out, err, _) = support::bin::finish(child, limit);
    (code, format!("{out}{err}"))
}

fn summary(path: &PathBuf) -> Value {
    let doc = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let doc: Value = serde_json::from_str(&doc).unwrap_or_else(|e| panic!("{e}"));
    doc["activities"][0].clone()
}

/// Of the processes' summaries, the reading of the shared schedule that counts
/// the most completed ops (the last process to leave read it).
fn latest_reading(docs: &[Value]) -> Value {
    docs.iter()
        .map(|d| d["coordinated"].clone())
        .max_by_key(|c| c["global_completed"].as_u64())
        .unwrap_or_default()
}

#[test]
fn three_processes_split_the_cycles_once_at_the_aggregate_rate() {
    let Some(redis) = server() else { return };
    let url = format!("coordinate={}/three", redis.url());
    let files: Vec<PathBuf> = (0..3).map(|i| temp(&format!("three-{i}.json"))).collect();
    let args = [
        "driver=diag",
        "cycles=12000",
        // Average mode: a machine busy with other tests may delay the start, and
        // the schedule then catches up at once instead of at 1.1x.
        "rate=6000,0",
        "threads=2",
        &url,
    ];
    let html = temp("three.html");
    let mut first = args.to_vec();
    first.extend(["--html", html.to_str().unwrap_or_default()]);
    let t0 = Instant::now();
    let mut children = vec![spawn_run(&first, &files[0])];
    children.extend(files[1..].iter().map(|f| spawn_run(&args, f)));
    for c in children {
        let (code, out) = finish(c, Duration::from_secs(30));
        assert_eq!(code, Some(0), "{out}");
        assert!(out.contains("shared "), "{out}");
    }
    let took = t0.elapsed().as_secs_f64();
    // 12000 ops at 6000/s in total: 2 s (not 0.7 s, a rate per process). No
    // tighter upper bound: three processes starting on a busy 2-core machine
    // once took 4.5 s in all (issue 25); the schedule's own achieved rate,
    // below, is what says the aggregate rate was kept.
    assert!((1.8..30.0).contains(&took), "took {took:.2} s");
    let docs: Vec<Value> = files.iter().map(summary).collect();
    let own: u64 = docs
        .iter()
        .map(|d| d["cycles"]["completed"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(own, 12000, "the processes' own counts add up to the range");
    let last = latest_reading(&docs);
    assert_eq!(last["global_completed"], 12000, "{last}");
    assert_eq!(last["global_started"], 12000, "{last}");
    assert_eq!(last["processes_seen"], 3, "{last}");
    assert_eq!(last["rerun_cycles"], 0, "{last}");
    // The first process's HTML report shows the schedule it was on.
    let page = std::fs::read_to_string(&html).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        page.contains("<tr><th>shared schedule</th><td>redis://127.0.0.1:"),
        "no shared schedule row in the report"
    );
    assert!(page.contains("<tr><th>global</th><td>"), "no global row");
    assert!(
        page.contains("/s, its share of a shared 6.00K/s (strictness 0.0)"),
        "the rate row does not say the target is the total"
    );
    let achieved = last["global_achieved"].as_f64().unwrap_or(0.0);
    assert!((5700.0..6100.0).contains(&achieved), "{last}");
    for d in &docs {
        // Each process is judged on its own tickets, not against the aggregate
        // rate (which no one process achieves); a loaded machine may still make
        // it generator-bound by its waits.
        let reason = d["verdict"]["reason"].as_str().unwrap_or_default();
        assert!(!reason.contains("of 6.00K/s"), "{reason}");
    }
}

#[test]
fn a_rate_change_and_a_stop_sent_to_one_process_reach_the_other() {
    let Some(redis) = server() else { return };
    let url = format!("coordinate={}/live", redis.url());
    let (fa, fb) = (temp("live-a.json"), temp("live-b.json"));
    let args = ["driver=diag", "cycles=10M", "rate=1000", "threads=2", &url];
    let with_control = |f: &PathBuf| {
        let mut all = args.to_vec();
        all.extend(["--control", "127.0.0.1:0"]);
        spawn_run(&all, f)
    };
    let mut a = with_control(&fa);
    let mut b = with_control(&fb);
    let (pa, _ea) = endpoint::bound_port(&mut a, "control endpoint");
    let (pb, _eb) = endpoint::bound_port(&mut b, "control endpoint");
    // The endpoints are up before the activities join their schedule and start.
    for port in [pa, pb] {
        let t0 = Instant::now();
        while endpoint::request(port, "GET", "/activities/diag", "").0 != 200 {
            assert!(t0.elapsed() < Duration::from_secs(10), "never started");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    let (status, _, body) = endpoint::request(pa, "PUT", "/activities/diag/rate", "2500");
    assert_eq!(status, 200, "{body}");
    let t0 = Instant::now();
    loop {
        let (_, _, body) = endpoint::request(pb, "GET", "/activities/diag", "");
        let st: Value = serde_json::from_str(&body).unwrap_or_default();
        if st["rate"].as_f64() == Some(2500.0) || st["rate"]["rate"].as_f64() == Some(2500.0) {
            break;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(2),
            "b never saw 2500/s: {body}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let (status, _, body) = endpoint::request(pb, "POST", "/activities/diag/stop", "");
    assert_eq!(status, 200, "{body}");
    let (code_a, out_a) = finish(a, Duration::from_secs(10));
    let (code_b, out_b) = finish(b, Duration::from_secs(10));
    assert_eq!((code_a, code_b), (Some(0), Some(0)), "{out_a}\n{out_b}");
    assert!(
        summary(&fa)["timeline"].to_string().contains("2500"),
        "{out_a}"
    );
}

#[test]
fn a_killed_process_leaves_its_cycles_to_the_survivor_counted_as_rerun() {
    let Some(redis) = server() else { return };
    let url = format!("coordinate={}/kill", redis.url());
    let (fa, fb) = (temp("kill-a.json"), temp("kill-b.json"));
    let args = [
        "driver=diag",
        "cycles=16000",
        "rate=4000",
        "threads=2",
        &url,
    ];
    let victim = spawn_run(&args, &fa);
    let survivor = spawn_run(&args, &fb);
    std::thread::sleep(Duration::from_millis(1500));
    let _ = Command::new("kill")
        .arg("-9")
        .arg(victim.id().to_string())
        .status();
    let (code, out) = finish(survivor, Duration::from_secs(30));
    assert_eq!(code, Some(0), "{out}");
    let c = summary(&fb)["coordinated"].clone();
    let (done, rerun) = (
        c["global_completed"].as_u64().unwrap_or(0),
        c["rerun_cycles"].as_u64().unwrap_or(0),
    );
    // Every cycle ran at least once; a cycle counted twice was re-run, and counted.
    assert!(done >= 16000, "{c}");
    assert!(done - 16000 <= rerun, "{c}");
    assert!(rerun > 0, "the victim held a claim when it died: {c}");
    drop(victim);
}

#[test]
fn a_lost_server_exits_1_with_the_reports_written() {
    let Some(mut redis) = server() else { return };
    let url = format!("coordinate={}/lost", redis.url());
    let f = temp("lost.json");
    let child = spawn_run(&["driver=diag", "cycles=10M", "rate=1000", &url], &f);
    std::thread::sleep(Duration::from_millis(700));
    redis.stop();
    let (code, out) = finish(child, Duration::from_secs(20));
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("lost the shared schedule"), "{out}");
    assert!(!out.contains("panicked"), "{out}");
    let d = summary(&f);
    let ops = d["cycles"]["completed"].as_u64().unwrap_or(0);
    // Some ops before the loss (a busy machine once ran 286 in the first
    // 700 ms at 1000/s: issue 25), and none long after it.
    assert!((1..1500).contains(&ops), "ran {ops} ops: {out}");
}

/// Regression (session 15, item 1), through the store: two processes share a
/// schedule of 200 ops at 200/s, each op taking 500 ms. Every op starts at its
/// slot, so the schedule's achieved rate is 200/s; the old figure, the
/// completions over the time to the last op's end (now the completion rate),
/// read about 200 over 1.5 s, 134/s, a shortfall that was only the drain.
#[test]
fn the_global_achieved_rate_is_the_start_rate_without_the_drain() {
    let Some(redis) = server() else { return };
    let url = format!("coordinate={}/drain", redis.url());
    let files: Vec<PathBuf> = (0..2).map(|i| temp(&format!("drain-{i}.json"))).collect();
    let args = [
        "driver=diag",
        "cycles=200",
        "latency=500ms",
        // Average mode: a start delayed by a busy machine is caught up.
        "rate=200,0",
        "concurrency=150",
        &url,
    ];
    let children: Vec<Child> = files.iter().map(|f| spawn_run(&args, f)).collect();
    for c in children {
        let (code, out) = finish(c, Duration::from_secs(30));
        assert_eq!(code, Some(0), "{out}");
    }
    let docs: Vec<Value> = files.iter().map(summary).collect();
    let last = latest_reading(&docs);
    assert_eq!(last["global_completed"], 200, "{last}");
    // The async runner reports each start at the op's first poll.
    assert_eq!(last["global_started"], 200, "{last}");
    let achieved = last["global_achieved"].as_f64().unwrap_or(0.0);
    let completion = last["global_completion_rate"].as_f64().unwrap_or(0.0);
    // Never above the schedule's rate; a busy machine may start a few late.
    assert!((170.0..=200.0).contains(&achieved), "{last}");
    assert!(completion < 160.0, "{last}");
}

/// Session 15's review (L1, and H1 behind it): nothing checked that the starts
/// a shared schedule counts are the ops run. A run that ends by its duration
/// gives back the slots granted after the deadline (no start), and each op
/// under way at the deadline is a start: completed, or (a `diag` latency the
/// end cut short, audit p16 M5 at the duration's end) `cancelled`. The
/// schedule's starts are this process's ops run and cancelled exactly, and its
/// ledger's granted tickets too.
#[test]
fn the_starts_are_the_ops_run_on_a_run_ended_by_its_duration() {
    let Some(redis) = server() else { return };
    let url = format!("coordinate={}/starts", redis.url());
    let file = temp("starts.json");
    let args = [
        "driver=diag",
        "cycles=1000000",
        "latency=30ms",
        "rate=200,0",
        "threads=4",
        "duration=1s",
        &url,
    ];
    let (code, out) = finish(spawn_run(&args, &file), Duration::from_secs(30));
    assert_eq!(code, Some(0), "{out}");
    let doc = summary(&file);
    let ran = doc["cycles"]["completed"].as_u64().unwrap_or(0);
    let c = &doc["coordinated"];
    assert!(ran > 20, "{doc}");
    let cancelled = doc["errors_by_kind"]["cancelled"].as_u64().unwrap_or(0);
    // At most one op per thread is under way at the deadline.
    assert!(cancelled <= 4, "{doc}");
    assert_eq!(c["global_completed"].as_u64(), Some(ran), "{c}");
    assert_eq!(c["global_started"].as_u64(), Some(ran + cancelled), "{c}");
    assert_eq!(
        c["tickets"]["granted"].as_u64(),
        Some(ran + cancelled),
        "{c}"
    );
}
