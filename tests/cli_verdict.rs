//! The verdict on real runs of the binary: the `diag` driver made to fall behind
//! on purpose (too few threads, a rate the engine cannot issue, a stall), a
//! comfortable run, and the coordinated-omission demo against nginx. Each checks
//! `activities[0].verdict` in the summary JSON and the verdict line the summary
//! prints. Wall-clock tests, kept few and short; the rules themselves are pinned
//! on exact numbers in `src/engine/judge_tests.rs`.

mod support;

#[path = "support/endpoint.rs"]
mod endpoint;

use serde_json::Value;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The runs go one at a time: two of them spin a core each, and a comfortable
/// run beside them on a small machine would be starved by the test itself.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("paceline-verdict-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    dir.join(name)
}

/// Runs `paceline run ARGS --summary-json …`; returns the first activity's
/// summary and the console output.
fn run(name: &str, args: &[&str]) -> (Value, String) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    run_alone(name, args)
}

/// [`run`], for a caller that holds [`ONE_AT_A_TIME`] already.
fn run_alone(name: &str, args: &[&str]) -> (Value, String) {
    let path = temp(&format!("{name}.json"));
    let out = Command::new(env!("CARGO_BIN_EXE_paceline"))
        .arg("run")
        .args(args)
        .args(["--report-interval", "1s", "--summary-json"])
        .arg(&path)
        .output()
        .unwrap_or_else(|e| panic!("the binary runs: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
    let doc: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    (doc["activities"][0].clone(), stdout)
}

/// The verdict's kind, checked against the line the summary printed and the
/// shape every verdict has.
fn kind(a: &Value, stdout: &str) -> String {
    let v = &a["verdict"];
    let kind = v["kind"]
        .as_str()
        .unwrap_or_else(|| panic!("no verdict: {a}"));
    let reason = v["reason"].as_str().unwrap_or_default();
    assert!(
        stdout.contains(&format!("  verdict: {kind}: {reason}")),
        "the summary prints the verdict:\n{stdout}"
    );
    // Whole nanoseconds, or null for an empty split (no op waited for a slot:
    // an unpaced run, no op at all), as every other empty figure is.
    for part in ["queue_ns", "dispatch_ns"] {
        for f in ["min", "p50", "p99", "max"] {
            assert!(
                v[part][f].is_u64() || v[part][f].is_null(),
                "{part}.{f}: {v}"
            );
        }
    }
    assert!(v["concurrency_needed"].is_f64(), "{v}");
    // Issue 24, item 2: a run shorter than 100 ms has its CPU left unjudged.
    let judged = a["elapsed_seconds"].as_f64().unwrap_or(0.0) >= 0.1;
    if cfg!(target_os = "linux") && judged {
        assert!(v["generator_cpu_cores"].as_f64().is_some(), "{v}");
    }
    kind.to_string()
}

#[test]
fn too_few_threads_for_the_op_latency_is_system_bound() {
    // 2 ms ops at 1000/s need 2 threads; the run has 1.
    let (a, out) = run(
        "few-threads",
        &[
            "driver=diag",
            "latency=2ms",
            "threads=1",
            "rate=1000",
            "cycles=1200",
        ],
    );
    assert_eq!(kind(&a, &out), "system-bound", "{}", a["verdict"]);
    let v = &a["verdict"];
    let reason = v["reason"].as_str().unwrap_or_default();
    // "…; 1000/s needs 2.1 threads, the run had 1: raise threads to 3 (…": the
    // need is at least the 2.0 of 2 ms ops (more when the machine slows them).
    let needed: f64 = reason
        .split_once("1000/s needs ")
        .and_then(|(_, rest)| rest.split_once(' '))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or_else(|| panic!("{reason}"));
    assert!(needed >= 2.0, "{reason}");
    assert!(
        reason.contains("the run had 1: raise threads to "),
        "{reason}"
    );
    assert!(
        v["queue_ns"]["p99"].as_u64() > v["dispatch_ns"]["p99"].as_u64(),
        "the lateness is queueing: {v}"
    );
    // One thread, always busy: Little's law says about one op in service.
    let needed = v["concurrency_needed"].as_f64().unwrap_or_default();
    assert!((0.8..=1.05).contains(&needed), "{needed}");
    // The wait split is in the summary beside wait, and adds up to it.
    assert_eq!(a["queue_ns"]["count"], a["wait_ns"]["count"]);
    assert!(
        out.contains("verdict system-bound"),
        "an interval line: {out}"
    );
}

#[test]
fn a_rate_above_what_the_engine_can_issue_is_generator_bound() {
    // 100M ops/s of no-op cycles from one thread: no build issues that.
    let (a, out) = run(
        "too-fast",
        &["driver=diag", "threads=1", "rate=100M", "cycles=300000"],
    );
    assert_eq!(kind(&a, &out), "generator-bound", "{}", a["verdict"]);
    let reason = a["verdict"]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("costs the generator") || reason.contains("cores"),
        "{reason}"
    );
}

#[test]
fn a_comfortable_run_is_on_schedule() {
    // 1 ms ops at 50/s on 4 threads: 0.05 threads busy; the bound is one slot, 20 ms.
    let (a, out) = run(
        "comfortable",
        &[
            "driver=diag",
            "latency=1ms",
            "threads=4",
            "rate=50",
            "cycles=150",
        ],
    );
    let v = &a["verdict"];
    assert_eq!(v["wait_bound_ns"], 20_000_000);
    let kind = kind(&a, &out);
    // A comfortable run is never blamed on the system. On a machine so busy that
    // this process's wakeups came more than a slot late (dispatch p99 over the
    // bound, which the run measured itself), the verdict names the generator;
    // otherwise the run is on schedule.
    if v["dispatch_ns"]["p99"].as_u64() > v["wait_bound_ns"].as_u64() {
        eprintln!("the machine starved this run's wakeups: {v}");
        assert_eq!(kind, "generator-bound", "{v}");
    } else {
        assert_eq!(kind, "on-schedule", "{v}");
    }
}

#[test]
fn an_unpaced_run_says_so() {
    let (a, out) = run("unpaced", &["driver=diag", "cycles=1000"]);
    assert_eq!(kind(&a, &out), "unpaced");
    assert!(a.get("queue_ns").is_none(), "no split without slots: {a}");
    // Audit p16, M3: no slot, so no wait to split: null figures, not zeros.
    for part in ["queue_ns", "dispatch_ns"] {
        for f in ["min", "p50", "p99", "max"] {
            assert!(a["verdict"][part][f].is_null(), "{part}.{f}: {a}");
        }
    }
}

#[test]
fn a_stall_of_the_system_at_a_steady_rate_is_system_bound() {
    // The coordinated-omission shape with `diag`: steady 100 µs ops at 500/s, and
    // one op that stalls for 300 ms; the ops scheduled meanwhile queue behind it.
    let file = temp("stall.yaml");
    std::fs::write(
        &file,
        // Cycles 0..999: the sequence of 500 puts the one stall at cycle 499.
        "params: {driver: diag, threads: 1, cycles: 999, rate: 500, seq: concat}\n\
         ops:\n  fast: {ratio: 499, latency: 100us}\n  stall: {ratio: 1, latency: 300ms}\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let (a, out) = run("stall", &[file.to_str().unwrap_or_default()]);
    let v = &a["verdict"];
    if kind(&a, &out) == "generator-bound" {
        // A machine too busy to issue 500/s from one thread: a 2-core machine
        // shared by builds once measured 2.6 ms of generator cost per op and
        // 301/s at most (issue 25). The verdict is then right to name the
        // generator (the unit tests in src/engine/judge_tests.rs pin each
        // kind exactly); the stall still shows in the queue.
        let reason = v["reason"].as_str().unwrap_or_default();
        assert!(!reason.is_empty(), "{v}");
        eprintln!("note: a busy machine: the generator was the limit: {reason}");
    } else {
        assert_eq!(kind(&a, &out), "system-bound", "{v}");
    }
    assert!(
        v["queue_ns"]["max"].as_u64().unwrap_or_default() > 200_000_000,
        "ops queued behind the stall: {v}"
    );
}

#[test]
fn the_bundled_overload_demo_is_system_bound() {
    // `overload`: 1.2 ms ops (spinning) at 1000/s on one thread.
    if paceline::machine_cores() < 2 {
        eprintln!("skipping: the spinning op fills a one-core machine (generator-bound there)");
        return;
    }
    let (a, out) = run("overload", &["overload"]);
    assert_eq!(kind(&a, &out), "system-bound", "{}", a["verdict"]);
    let reason = a["verdict"]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("raise threads to"), "{reason}");
}

#[test]
fn the_coordinated_omission_demo_is_system_bound() {
    // `examples/co_demo.rs` in small: nginx stops answering (SIGSTOP) for 300 ms
    // under a steady 1000/s from 4 threads; the ops scheduled meanwhile queue.
    if let Err(why) = support::nginx::binary() {
        eprintln!("skipping: nginx not installed ({why})");
        return;
    }
    let nginx = support::nginx::Nginx::start_with(support::nginx::Options {
        access_log: false,
        ..Default::default()
    })
    .unwrap_or_else(|e| panic!("nginx is installed and must start: {e}"));
    let file = temp("co.yaml");
    std::fs::write(
        &file,
        format!(
            "params: {{driver: http, base_url: '{}', threads: 4, cycles: 2000, rate: 1000, \
             errors: count}}\nops: {{ok: GET /ok}}\n",
            nginx.base_url()
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let (a, out) = std::thread::scope(|s| {
        s.spawn(|| {
            std::thread::sleep(Duration::from_millis(700));
            nginx.stall(Duration::from_millis(300));
        });
        run_alone("co", &[file.to_str().unwrap_or_default()])
    });
    drop(one);
    assert_eq!(kind(&a, &out), "system-bound", "{}", a["verdict"]);
    assert!(
        a["service_ns"]["max"].as_u64().unwrap_or_default() > 250_000_000,
        "the stall is in the service times: {a}"
    );
}

/// One request to the control endpoint on `port`; the answer's body.
fn request(port: u16, method: &str, path: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap_or_else(|e| panic!("{e}"));
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    answer
        .split_once("\r\n\r\n")
        .map_or(String::new(), |(_, body)| body.to_string())
}

#[test]
fn the_control_endpoint_status_carries_the_latest_intervals_verdict() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_paceline"))
        .args([
            "run",
            "driver=diag",
            "latency=2ms",
            "threads=1",
            "rate=1000",
            "cycles=100000",
            "--report-interval",
            "200ms",
            "--control",
            "127.0.0.1:0",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let (port, mut stderr) = endpoint::bound_port(&mut child, "control endpoint");
    let t0 = Instant::now();
    let verdict = loop {
        let body = request(port, "GET", "/activities");
        let doc: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        let v = doc[0]["verdict"].clone();
        if v.is_object() {
            assert_eq!(doc[0]["current_interval"]["verdict"], v, "{doc}");
            break v;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "no verdict: {body}\n{}",
            stderr.text()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    request(port, "POST", "/activities/diag/stop");
    let _ = child.wait();
    assert_eq!(verdict["kind"], "system-bound", "{verdict}");
    assert!(verdict["queue_ns"]["p99"].is_u64(), "{verdict}");
}

/// Regression (issue 24, item 9): a run an error stopped at its first op got a
/// verdict on its pacing (generator-bound advice for a run a TLS error stopped
/// at cycle 0). It is judged as stopped by the error.
#[test]
fn a_run_an_error_stopped_is_judged_stopped_by_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_paceline"))
        .args([
            "run",
            "driver=http",
            "op=GET http://127.0.0.1:1/",
            "cycles=5",
            "rate=50",
            "--no-progress",
        ])
        .output()
        .unwrap_or_else(|e| panic!("the binary runs: {e}"));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("verdict: stopped-by-error: an error stopped the run after 1 op (cycle 0"),
        "{text}"
    );
    assert!(!text.contains("the ops before it were"), "{text}");
}

/// Issue 23 (beyond the fixes): a generator held by its cgroup's CPU limit started
/// its ops late, and the verdict blamed the system under test. The binary reads
/// the cgroup's `cpu.stat` (here a fake one, named by `PACELINE_CGROUP_CPU_STAT`,
/// whose throttling rises during the run) and names the throttling; the same run
/// without it is system-bound.
#[test]
fn cgroup_throttling_during_the_run_is_named_as_the_generators() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let stat = temp("cpu.stat");
    let write = |periods: u64, throttled: u64, usec: u64| {
        std::fs::write(
            &stat,
            format!(
                "usage_usec 1000\nnr_periods {periods}\nnr_throttled {throttled}\n\
                 throttled_usec {usec}\n"
            ),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    };
    write(40, 0, 0);
    // As too_few_threads_for_the_op_latency_is_system_bound: late by queueing.
    let args = [
        "run",
        "driver=diag",
        "latency=2ms",
        "threads=1",
        "rate=1000",
        "cycles=1500",
    ];
    let path = temp("throttled.json");
    let child = Command::new(env!("CARGO_BIN_EXE_paceline"))
        .args(args)
        .arg("--summary-json")
        .arg(&path)
        .env("PACELINE_CGROUP_CPU_STAT", &stat)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    std::thread::sleep(Duration::from_millis(400));
    write(70, 12, 640_000);
    let out = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
    let doc: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
    let v = &doc["activities"][0]["verdict"];
    assert_eq!(v["kind"], "generator-bound", "{v}");
    let reason = v["reason"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with(
            "the generator was throttled by its cgroup's CPU limit in 12 of 30 periods \
             (640 ms held in all"
        ),
        "{reason}"
    );
    assert!(reason.contains("not the system under test"), "{reason}");
    // Unchanged counts: no throttling in the run, and the queueing is the
    // system's.
    let (a, out) = run_alone_with_env(
        "not-throttled",
        &args[1..],
        (
            "PACELINE_CGROUP_CPU_STAT",
            stat.to_str().unwrap_or_default(),
        ),
    );
    assert_eq!(kind(&a, &out), "system-bound", "{}", a["verdict"]);
}

/// [`run_alone`] with one more environment variable.
fn run_alone_with_env(name: &str, args: &[&str], env: (&str, &str)) -> (Value, String) {
    let path = temp(&format!("{name}.json"));
    let out = Command::new(env!("CARGO_BIN_EXE_paceline"))
        .arg("run")
        .args(args)
        .args(["--report-interval", "1s", "--summary-json"])
        .arg(&path)
        .env(env.0, env.1)
        .output()
        .unwrap_or_else(|e| panic!("the binary runs: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
    let doc: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    (doc["activities"][0].clone(), stdout)
}
