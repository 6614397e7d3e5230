//! The control endpoint of a real run: a rate change the intervals show, a
//! `stop` that ends a scenario, a client that never finishes its request.

use super::*;

#[test]
fn a_control_request_changes_the_rate_and_the_intervals_show_it() {
    let csv = temp("control.csv");
    let json = temp("control.json");
    let mut child = endpoint::spawn_control(bin().args([
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
    ]));
    let (port, mut stderr) = endpoint::bound_port(&mut child, "control endpoint");
    let request = |method: &str, path: &str, body: &str| control(port, method, path, body);
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
    let (header, rows) = bin::csv_table(&csv);
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (rate_col, event_col, ops_col) = (col("rate"), col("event"), col("ops"));
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

/// Sends one request with `body` to the control endpoint on `port`, retrying
/// the connect until the endpoint is up; the whole response.
fn control(port: u16, method: &str, path: &str, body: &str) -> String {
    try_control(port, method, path, body).unwrap()
}

/// [`control`], with the error of a connection that broke after it was made.
fn try_control(port: u16, method: &str, path: &str, body: &str) -> std::io::Result<String> {
    let t0 = Instant::now();
    loop {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(mut s) => {
                write!(
                    s,
                    "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
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
    let mut child =
        endpoint::spawn_control(bin().args(["run", file.to_str().unwrap(), "--no-progress"]));
    let (port, mut stderr) = endpoint::bound_port(&mut child, "control endpoint");
    // Once the scenario has started `main`.
    // The stop ends the process at once, so its answer can race the exit: a
    // connection reset after a stop that ended the run is the stop delivered.
    let t0 = Instant::now();
    loop {
        match try_control(port, "POST", "/activities/main/stop", "") {
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
    let mut child = endpoint::spawn_control(bin().args([
        "run",
        "driver=diag",
        "cycles=150",
        "rate=100",
        "--no-progress",
    ]));
    let (port, mut stderr) = endpoint::bound_port(&mut child, "control endpoint");
    let _ = control(port, "GET", "/activities", "");
    // Promises a body over 1 KiB and never sends it; a second one dribbles a header.
    let mut silent = TcpStream::connect(("127.0.0.1", port)).unwrap();
    silent
        .write_all(b"PUT /activities/diag/rate HTTP/1.1\r\nContent-Length: 2000\r\n\r\n5")
        .unwrap();
    let mut slow = TcpStream::connect(("127.0.0.1", port)).unwrap();
    slow.write_all(b"GET /activities HTTP/1.1\r\nX: ").unwrap();
    // Control still answers at once.
    let t0 = Instant::now();
    let r = control(port, "PUT", "/activities/diag/threads", "");
    assert!(r.starts_with("HTTP/1.1 400"), "{r}");
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
    // The run takes 1.5 s; the process exits soon after, clients or not.
    let (code, took) = wait_within(&mut child, Duration::from_secs(30));
    assert_eq!(code, Some(0), "{}", stderr.text());
    assert!(took < Duration::from_secs(6), "{took:?}");
    drop((silent, slow));
}

/// Audit L8: `PUT .../threads` took more threads than `concurrency` ("threads
/// set to 8", then "8 threads ... at most 4 of concurrency 4"), which the load
/// refuses. It is refused with the same rule and the fix; up to the cap it is
/// taken, and a raised cap lets more threads in.
#[test]
fn audit_l8_threads_above_concurrency_are_refused_as_the_load_refuses_them() {
    let mut child = endpoint::spawn_control(bin().args([
        "run",
        "driver=diag",
        "threads=2",
        "concurrency=4",
        "cycles=1M",
        "rate=100",
        "--no-progress",
    ]));
    let (port, mut stderr) = endpoint::bound_port(&mut child, "control endpoint");
    let (status, _, body) = endpoint::request(port, "PUT", "/activities/diag/threads", "8");
    assert_eq!(status, 400, "{body}");
    assert!(
        body.contains("8 threads is above concurrency 4")
            && body.contains("give at most 4 threads")
            && body.contains("raise concurrency to 8"),
        "{body}"
    );
    let (status, _, body) = endpoint::request(port, "PUT", "/activities/diag/threads", "4");
    assert_eq!(status, 200, "{body}");
    let (status, _, body) = endpoint::request(port, "PUT", "/activities/diag/concurrency", "8");
    assert_eq!(status, 200, "{body}");
    let (status, _, body) = endpoint::request(port, "PUT", "/activities/diag/threads", "8");
    assert_eq!(status, 200, "{body}");
    let (status, _, body) = endpoint::request(port, "POST", "/activities/diag/stop", "");
    assert_eq!(status, 200, "{body}");
    let (code, _) = wait_within(&mut child, Duration::from_secs(60));
    assert_eq!(code, Some(0), "{}", stderr.text());
}
