//! Issue 24, item 6: `--linger` keeps `GET /metrics` and `GET /activities`
//! serving the final numbers after the run, with `paceline_run_ended 1`, until
//! its time is up or Ctrl-C; the exit code is the run's.

use endpoint::request;
use std::process::Stdio;
use std::time::{Duration, Instant};

#[path = "support/endpoint.rs"]
mod endpoint;

#[path = "support/bin.rs"]
mod bin;
use bin::{Killed as Run, bin};

/// Regression: the process exited right after its last interval, so Prometheus
/// never saw the end of a run (39,500 of 40,000 ops) nor a gauge that it ended.
#[test]
fn linger_serves_the_final_numbers_until_ctrl_c() {
    let child = bin()
        .args([
            "run",
            "driver=diag",
            "alias=a",
            "cycles=300",
            "rate=1000",
            "--report-interval",
            "10s",
            "--no-progress",
            "--metrics",
            "127.0.0.1:0",
            "--linger",
            "60s",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn: {e}"));
    let mut run = Run(child);
    let (port, mut stderr) = endpoint::bound_port(&mut run.0, "metrics endpoint");
    let t0 = Instant::now();
    let body = loop {
        let (status, _, body) = request(port, "GET", "/metrics", "");
        assert_eq!(status, 200, "{body}");
        if body.contains("\npaceline_run_ended 1\n") {
            break body;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the run never ended:\n{body}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    // Every op of the run, not the last interval's count before the exit.
    assert!(
        body.contains("paceline_ops_total{activity=\"a\"} 300"),
        "{body}"
    );
    assert!(body.trim_end().ends_with("# EOF"), "{body}");
    let (status, _, activities) = request(port, "GET", "/activities", "");
    assert_eq!(status, 200, "{activities}");
    let doc: serde_json::Value = serde_json::from_str(&activities).unwrap_or_default();
    assert_eq!(doc[0]["cycles"]["completed"], 300, "{activities}");
    // Still there a moment later: it lingers.
    std::thread::sleep(Duration::from_millis(300));
    let (status, _, _) = request(port, "GET", "/metrics", "");
    assert_eq!(status, 200);
    assert!(run.0.try_wait().ok().flatten().is_none(), "exited early");
    // Ctrl-C ends the linger at once, with the run's exit code.
    let pid = run.0.id().to_string();
    let sent = std::process::Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap_or_else(|e| panic!("kill: {e}"));
    assert!(sent.success());
    let t1 = Instant::now();
    let code = loop {
        if let Ok(Some(s)) = run.0.try_wait() {
            break s.code();
        }
        assert!(
            t1.elapsed() < Duration::from_secs(20),
            "still lingering after Ctrl-C"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let err = stderr.text();
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("serving its final numbers for 60.0s (--linger"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}
