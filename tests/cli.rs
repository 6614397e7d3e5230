//! The real binary: summaries agree with the run, control requests change a
//! running activity, bad input exits 2 with a message and no panic.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "support/endpoint.rs"]
mod endpoint;

#[path = "support/bin.rs"]
mod bin;
use bin::{bin, run, temp, text};

#[test]
fn summary_json_agrees_with_the_run() {
    let path = temp("summary.json");
    let out = run(&[
        "run",
        "driver=diag",
        "cycles=20000",
        "threads=2",
        "rate=100K",
        "errors=count",
        "error_rate=0.01",
        "--summary-json",
        path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let a = &doc["activities"][0];
    assert_eq!(a["alias"], "diag");
    assert_eq!(a["driver"], "diag");
    assert_eq!(a["threads"], 2);
    assert_eq!(a["cycles"]["requested"], 20000);
    assert_eq!(a["cycles"]["completed"], 20000);
    let errors = a["cycles"]["errors"].as_u64().unwrap();
    assert!((100..300).contains(&errors), "{errors}");
    assert_eq!(a["rate"]["target"], 100_000.0);
    assert_eq!(a["rate"]["strictness"], 1.1);
    // `completed` is the ops over the run's time; `achieved`, the start rate
    // over the schedule, leaves out the drain after the last start (a thread
    // preempted in the last op on a busy machine) and never passes the target.
    let achieved = a["rate"]["achieved"].as_f64().unwrap();
    let completed = a["rate"]["completed"].as_f64().unwrap();
    let elapsed = a["elapsed_seconds"].as_f64().unwrap();
    assert!(
        (completed * elapsed - 20000.0).abs() < 200.0,
        "{completed} {elapsed}"
    );
    assert!(
        (0.99 * completed..=100_000.0).contains(&achieved),
        "{achieved} {completed}"
    );
    for m in ["service_ns", "wait_ns", "response_ns"] {
        for k in ["min", "mean", "p50", "p90", "p99", "p999", "max"] {
            assert!(a[m][k].is_u64(), "{m}.{k}: {}", a[m][k]);
        }
        assert!(a[m]["p50"].as_u64() <= a[m]["p99"].as_u64());
    }
    // The console has the summary table.
    assert!(
        text(&out.stdout).contains("20000 of 20000 cycles"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn a_control_request_changes_the_rate_and_the_intervals_show_it() {
    let csv = temp("control.csv");
    let json = temp("control.json");
    let mut child = bin()
        .args([
            "run",
            "driver=diag",
            "alias=paced",
            "cycles=1M",
            "rate=200",
            "--report-interval",
            "200ms",
            "--no-progress",
            "--csv",
            csv.to_str().unwrap(),
            "--summary-json",
            json.to_str().unwrap(),
            "--control",
            "127.0.0.1:0",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (port, mut stderr) = endpoint::bound_port(&mut child, "control endpoint");
    let request = |method: &str, path: &str, body: &str| -> String {
        let t0 = Instant::now();
        loop {
            match TcpStream::connect(("127.0.0.1", port)) {
                Ok(mut s) => {
                    write!(
                        s,
                        "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    )
                    .unwrap();
                    let mut resp = String::new();
                    s.read_to_string(&mut resp).unwrap();
                    return resp;
                }
                Err(_) if t0.elapsed() < Duration::from_secs(20) => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                Err(e) => panic!("no control endpoint: {e}"),
            }
        }
    };
    // long enough for several 200 ms intervals at each rate even on a loaded machine
    std::thread::sleep(Duration::from_millis(1500));
    let r = request("PUT", "/activities/paced/rate", "2000");
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    let r = request("PUT", "/activities/paced/rate", "fast");
    assert!(r.starts_with("HTTP/1.1 400"), "{r}");
    let r = request("PUT", "/activities/nope/threads", "2");
    assert!(r.starts_with("HTTP/1.1 404"), "{r}");
    let r = request("GET", "/activities", "");
    assert!(
        r.contains("\"rate\":2000.0") || r.contains("\"rate\": 2000.0"),
        "{r}"
    );
    std::thread::sleep(Duration::from_millis(1500));
    let r = request("POST", "/activities/paced/stop", "");
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    let (code, _) = wait_within(&mut child, Duration::from_secs(60));
    assert_eq!(code, Some(0), "{}", stderr.text());

    let csv = std::fs::read_to_string(&csv).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (rate_col, event_col, ops_col) = (col("rate"), col("event"), col("ops"));
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    let change = rows
        .iter()
        .position(|r| r[event_col].contains("rate 200 -> 2000"))
        .unwrap_or_else(|| panic!("no rate event in\n{csv}"));
    let rate_at = |r: &Vec<&str>| r[rate_col].parse::<f64>().unwrap_or(0.0);
    // Every row as wide as the one-line header (pandas reads it with no help);
    // the paced activity's waits split into queue and dispatch, and no global
    // numbers for an activity that paces alone.
    assert!(rows.iter().all(|r| r.len() == header.len()), "{csv}");
    assert_eq!(
        &header[header.len() - 18..],
        [
            "queue_p50_ns",
            "queue_p99_ns",
            "queue_p999_ns",
            "queue_max_ns",
            "dispatch_p50_ns",
            "dispatch_p99_ns",
            "dispatch_p999_ns",
            "dispatch_max_ns",
            "global_ops",
            "global_rate",
            "in_flight_max",
            "concurrency",
            "cap_full_share",
            "target_rate",
            "interval_s",
            "partial",
            "set_up",
            "event"
        ]
    );
    let (queue_col, dispatch_col) = (col("queue_max_ns"), col("dispatch_p50_ns"));
    // A partial interval (the tail after the stop, issue 24, item 4) has its
    // counts only.
    let intervals: Vec<&Vec<&str>> = rows
        .iter()
        .filter(|r| r[event_col].is_empty() && r[col("partial")] == "0")
        .collect();
    assert!(!intervals.is_empty(), "{csv}");
    for r in &intervals {
        assert!(r[queue_col].parse::<u64>().is_ok(), "{r:?}");
        assert!(r[dispatch_col].parse::<u64>().is_ok(), "{r:?}");
        assert!(r[col("global_ops")].is_empty() && r[col("global_rate")].is_empty());
        // The interval's mean target: paced, so a rate.
        assert!(
            r[col("target_rate")].parse::<f64>().is_ok_and(|t| t > 0.0),
            "{r:?}"
        );
    }
    let before: Vec<f64> = rows[..change]
        .iter()
        .filter(|r| r[event_col].is_empty() && r[ops_col] != "0")
        .map(rate_at)
        .collect();
    let after: Vec<f64> = rows[change..]
        .iter()
        .filter(|r| r[event_col].is_empty())
        .map(rate_at)
        .collect();
    // Bands wide enough for a loaded machine's interval jitter, and a decade
    // apart. (From 2000/s to 20000/s, a 2-core machine busy with other builds
    // achieved 3-9K/s after the change: issue 25; 2000/s it keeps.)
    assert!(
        before.iter().any(|r| (100.0..300.0).contains(r)),
        "{before:?}\n{csv}"
    );
    assert!(
        after.iter().any(|r| (1000.0..3000.0).contains(r)),
        "{after:?}\n{csv}"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let tl = doc["activities"][0]["timeline"].to_string();
    assert!(
        tl.contains("rate 200 -> 2000") && tl.contains("stopped"),
        "{tl}"
    );
}

#[test]
fn every_kind_of_bad_input_exits_2_with_a_message_and_no_panic() {
    let bad_yaml = temp("bad.yaml");
    std::fs::write(
        &bad_yaml,
        "params:\n  driver: daig\n  thread: 4\nops:\n  o: 'x {nope}'\n",
    )
    .unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["run".into(), "no/such/file.yaml".into()],
            "no/such/file.yaml",
        ),
        (
            vec!["run".into(), bad_yaml.display().to_string()],
            "bad.yaml:2:11: unknown driver `daig`",
        ),
        (
            vec!["check".into(), bad_yaml.display().to_string()],
            "bad.yaml:3:3: unknown param `thread`",
        ),
        (
            vec!["run".into(), "driver=diag".into(), "threads=x".into()],
            "param 2:",
        ),
        (
            vec!["run".into(), "cycles=10".into()],
            "no activity file and no `driver=NAME`",
        ),
        (
            vec!["run".into(), "quickstart".into(), "scenario=nope".into()],
            "no scenario `nope`",
        ),
        (
            vec!["run".into(), "driver=diag".into(), "latency=fast".into()],
            "`fast` is not a duration",
        ),
        (
            vec!["run".into(), "driver=diag".into(), "rate=-5".into()],
            "param 2:",
        ),
        (
            vec![
                "run".into(),
                "quickstart".into(),
                "--report-interval".into(),
                "soon".into(),
            ],
            "soon",
        ),
        (
            vec![
                "run".into(),
                "quickstart".into(),
                "--summary-json".into(),
                "/no/such/dir/x.json".into(),
            ],
            "cannot create report file",
        ),
        (
            vec![
                "run".into(),
                "quickstart".into(),
                "--control".into(),
                "10.1.2.3:80".into(),
            ],
            "--control-allow-remote",
        ),
        (vec!["frobnicate".into()], "unrecognized subcommand"),
        // Issue 22: a rule for a kind the driver never gives (a misspelling).
        (
            vec![
                "run".into(),
                "driver=diag".into(),
                "error_kind=sql 40".into(),
                "errors=sql 4O:retry:3;count".into(),
            ],
            "param `errors`: rule `sql 4O:retry:3` is for error \
             kind `sql 4O`, which driver `diag` never gives an error (did you mean `sql 40`?)",
        ),
    ];
    for (args, want) in cases {
        let out = run(&args.iter().map(String::as_str).collect::<Vec<_>>());
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: want `{want}` in:\n{err}");
        assert!(
            !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn a_run_stopped_by_its_error_policy_exits_1_and_keeps_what_it_recorded() {
    let path = temp("failed.json");
    let out = run(&[
        "run",
        "driver=diag",
        "cycles=1000",
        "error_rate=0.5",
        "errors=stop",
        "--summary-json",
        path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("activity `diag` failed: cycle "));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert!(doc["activities"][0]["cycles"]["errors"].as_u64().unwrap() >= 1);
}

#[test]
fn check_accepts_every_bundled_activity_and_list_names_them() {
    for entry in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/activities")).unwrap() {
        let path = entry.unwrap().path();
        let out = run(&["check", path.to_str().unwrap()]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {}",
            path.display(),
            text(&out.stderr)
        );
        assert!(text(&out.stdout).contains(": valid"));
    }
    let out = run(&["list"]);
    assert_eq!(out.status.code(), Some(0));
    let listed = text(&out.stdout);
    for name in [
        "quickstart",
        "ramp",
        "overload",
        "kv-stdout",
        "postgres-keyvalue",
        "redis-keyvalue",
    ] {
        assert!(listed.contains(name), "{listed}");
    }
}

#[test]
fn help_shows_examples_for_each_command() {
    for cmd in ["run", "check", "list", "calibrate"] {
        let out = run(&[cmd, "--help"]);
        assert_eq!(out.status.code(), Some(0));
        assert!(text(&out.stdout).contains("Examples:"), "{cmd}");
    }
}

#[test]
fn the_stdout_driver_owns_stdout_and_a_closed_pipe_is_not_an_error() {
    let out = run(&["run", "kv-stdout", "cycles=50", "rate=1M"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let ops = text(&out.stdout);
    assert_eq!(ops.lines().count(), 50, "{ops}");
    assert!(
        ops.lines()
            .all(|l| l.starts_with("GET key:") || l.starts_with("SET key:")),
        "{ops}"
    );
    assert!(text(&out.stderr).contains("50 of 50 cycles"));

    // `paceline run kv-stdout | head -3`: the reader leaves early.
    let mut child = bin()
        .args(["run", "kv-stdout", "cycles=10M", "rate=1M", "--no-progress"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 64];
    child
        .stdout
        .as_mut()
        .unwrap()
        .read_exact(&mut first)
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// Waits for `child` at most `limit`; kills it and panics past that.
fn wait_within(child: &mut std::process::Child, limit: Duration) -> (Option<i32>, Duration) {
    let t0 = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (status.code(), t0.elapsed());
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal(child: &std::process::Child, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(ok.success());
}

fn stderr_of(child: &mut std::process::Child) -> String {
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    err
}

/// Issue 18.8: `timeout -s TERM` (any SIGTERM) stops the run and every report is
/// written: the summary, the CSV and the HDR log.
#[test]
fn sigterm_stops_the_run_and_writes_every_report() {
    let (json, csv, hdr) = (temp("term.json"), temp("term.csv"), temp("term.hlog"));
    let mut child = bin()
        .args([
            "run",
            "driver=diag",
            "cycles=1B",
            "rate=2000",
            "--report-interval",
            "10s",
            "--no-progress",
            "--summary-json",
            json.to_str().unwrap(),
            "--csv",
            csv.to_str().unwrap(),
            "--hdr-log",
            hdr.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    signal(&child, "-TERM");
    let (code, took) = wait_within(&mut child, Duration::from_secs(20));
    let err = stderr_of(&mut child);
    assert_eq!(code, Some(1), "{err}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert!(
        err.contains("interrupted; stopping and writing the reports"),
        "{err}"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("summary written"))
            .expect("summary is JSON");
    let done = doc["activities"][0]["cycles"]["completed"]
        .as_u64()
        .unwrap();
    assert!(done > 100, "{done}");
    // The one interval there was (cut at the stop) is in the CSV and the HDR log.
    let rows = std::fs::read_to_string(&csv).unwrap();
    assert!(rows.lines().count() >= 2, "{rows}");
    let log = std::fs::read_to_string(&hdr).unwrap();
    assert!(log.contains("diag.service"), "{log}");
}

/// Issue 18.8: an op that never returns cannot keep the process alive past the
/// stop timeout; the reports are written without it.
#[test]
fn a_stuck_op_lets_the_process_exit_within_the_stop_timeout() {
    let json = temp("stuck.json");
    let mut child = bin()
        .args([
            "run",
            "driver=diag",
            "cycles=10",
            "threads=2",
            "latency=1h",
            "latency_mode=hang",
            "--stop-timeout",
            "1s",
            "--no-progress",
            "--summary-json",
            json.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Long enough for the binary to start and catch signals on a loaded machine.
    std::thread::sleep(Duration::from_millis(1500));
    signal(&child, "-TERM");
    let (code, took) = wait_within(&mut child, Duration::from_secs(20));
    let err = stderr_of(&mut child);
    assert_eq!(code, Some(1), "{err}");
    assert!(took < Duration::from_secs(4), "{took:?}");
    assert!(err.contains("did not stop within 1.00s"), "{err}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("summary written")).unwrap();
    assert_eq!(doc["activities"][0]["alias"], "diag");
}

/// Issue 18.8: a second Ctrl-C exits at once, whatever is stuck.
#[test]
fn a_second_interrupt_exits_at_once() {
    let mut child = bin()
        .args([
            "run",
            "driver=diag",
            "cycles=10",
            "latency=1h",
            "latency_mode=hang",
            "--stop-timeout",
            "1h",
            "--no-progress",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    signal(&child, "-INT");
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, "-INT");
    let (code, took) = wait_within(&mut child, Duration::from_secs(20));
    let err = stderr_of(&mut child);
    assert_eq!(code, Some(1), "{err}");
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert!(err.contains("interrupted again; exiting"), "{err}");
}

/// Sends one request to the control endpoint on `port`, retrying the connect
/// until the endpoint is up.
fn control(port: u16, method: &str, path: &str) -> String {
    try_control(port, method, path).unwrap()
}

/// [`control`], with the error of a connection that broke after it was made.
fn try_control(port: u16, method: &str, path: &str) -> std::io::Result<String> {
    let t0 = Instant::now();
    loop {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(mut s) => {
                write!(
                    s,
                    "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
                )?;
                let mut resp = String::new();
                s.read_to_string(&mut resp)?;
                return Ok(resp);
            }
            Err(_) if t0.elapsed() < Duration::from_secs(20) => {
                std::thread::sleep(Duration::from_millis(50))
            }
            Err(e) => panic!("no control endpoint: {e}"),
        }
    }
}

/// Issue 17.2.2: a control `stop` in a scenario ends the scenario at once, and
/// the run exits 0.
#[test]
fn a_control_stop_ends_the_scenario_at_once_and_exits_0() {
    let file = temp("scenario-stop.yaml");
    std::fs::write(
        &file,
        "params: {alias: main, driver: diag, cycles: 1B, rate: 1K}\n\
         ops: {o: x}\n\
         scenarios:\n  default:\n    - start\n    - wait: 60s\n    - rate: 2000\n    - wait: 60s\n",
    )
    .unwrap();
    let mut child = bin()
        .args([
            "run",
            file.to_str().unwrap(),
            "--no-progress",
            "--control",
            "127.0.0.1:0",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (port, mut stderr) = endpoint::bound_port(&mut child, "control endpoint");
    // Once the scenario has started `main`.
    // The stop ends the process at once, so its answer can race the exit: a
    // connection reset after a stop that ended the run is the stop delivered.
    let t0 = Instant::now();
    loop {
        match try_control(port, "POST", "/activities/main/stop") {
            Ok(r) if r.starts_with("HTTP/1.1 404") && t0.elapsed() < Duration::from_secs(20) => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Ok(r) => {
                assert!(r.starts_with("HTTP/1.1 200"), "{r}");
                break;
            }
            Err(e) => {
                let waited = Instant::now();
                let mut exited = false;
                while !exited && waited.elapsed() < Duration::from_secs(5) {
                    std::thread::sleep(Duration::from_millis(50));
                    exited = child.try_wait().unwrap().is_some();
                }
                assert!(exited || t0.elapsed() < Duration::from_secs(20), "{e}");
                if exited {
                    break;
                }
            }
        }
    }
    let (code, took) = wait_within(&mut child, Duration::from_secs(30));
    let err = stderr.text();
    assert_eq!(code, Some(0), "{err}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert!(!err.contains("already finished"), "{err}");
}

/// Issue 18.2: a control client that never finishes its request cannot keep the
/// process from exiting when the run ends.
#[test]
fn a_hostile_control_client_does_not_keep_the_process_alive() {
    let mut child = bin()
        .args([
            "run",
            "driver=diag",
            "cycles=150",
            "rate=100",
            "--no-progress",
            "--control",
            "127.0.0.1:0",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (port, mut stderr) = endpoint::bound_port(&mut child, "control endpoint");
    let _ = control(port, "GET", "/activities");
    // Promises a body over 1 KiB and never sends it; a second one dribbles a header.
    let mut silent = TcpStream::connect(("127.0.0.1", port)).unwrap();
    silent
        .write_all(b"PUT /activities/diag/rate HTTP/1.1\r\nContent-Length: 2000\r\n\r\n5")
        .unwrap();
    let mut slow = TcpStream::connect(("127.0.0.1", port)).unwrap();
    slow.write_all(b"GET /activities HTTP/1.1\r\nX: ").unwrap();
    // Control still answers at once.
    let t0 = Instant::now();
    let r = control(port, "PUT", "/activities/diag/threads");
    assert!(r.starts_with("HTTP/1.1 400"), "{r}");
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    // The run takes 1.5 s; the process exits soon after, clients or not.
    let (code, took) = wait_within(&mut child, Duration::from_secs(30));
    assert_eq!(code, Some(0), "{}", stderr.text());
    assert!(took < Duration::from_secs(6), "{took:?}");
    drop((silent, slow));
}

/// Issue 17.2.1 / 18.1: an activity that finishes before the run keeps its own
/// elapsed time and rate in the summary.
#[test]
fn an_early_activity_keeps_its_own_elapsed_time_and_rate() {
    let file = temp("early.yaml");
    std::fs::write(
        &file,
        "params: {alias: main, driver: diag, cycles: 1500, rate: 1K}\n\
         ops: {o: x}\n\
         scenarios:\n  default:\n    - run: {alias: warmup, cycles: 200, rate: 1K}\n    - run\n",
    )
    .unwrap();
    let json = temp("early.json");
    let out = run(&[
        "run",
        file.to_str().unwrap(),
        "--no-progress",
        "--report-interval",
        "300ms",
        "--summary-json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let warmup = &doc["activities"][0];
    assert_eq!(warmup["alias"], "warmup");
    let elapsed = warmup["elapsed_seconds"].as_f64().unwrap();
    let rate = warmup["rate"]["achieved"].as_f64().unwrap();
    // 200 ops at 1K/s: about 0.2 s, not the run's 1.7 s.
    assert!((0.19..0.6).contains(&elapsed), "{elapsed}");
    assert!(rate > 330.0, "{rate}");
    assert!(
        text(&out.stdout).contains("warmup (diag, 1 thread): 200 of 200 cycles in 0."),
        "{}",
        text(&out.stdout)
    );
}
