//! How a real run stops: SIGTERM with every report written, a stuck op past
//! the stop timeout, a second interrupt.

use super::*;

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
    signal(&child, "TERM");
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
    signal(&child, "TERM");
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
    signal(&child, "INT");
    std::thread::sleep(Duration::from_millis(300));
    signal(&child, "INT");
    let (code, took) = wait_within(&mut child, Duration::from_secs(20));
    let err = stderr_of(&mut child);
    assert_eq!(code, Some(1), "{err}");
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert!(err.contains("interrupted again; exiting"), "{err}");
}
