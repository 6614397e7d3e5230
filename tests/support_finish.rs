//! `support::bin::finish`, the wait for a child with piped output (review B
//! L10): it kills through the `Child` itself past its limit, and no thread of
//! it outlives the call (before, a watchdog thread slept out the whole limit
//! and then signalled the pid, which could be another process's by then).
//!
//! One test in this binary: the thread count of the process is the measure.

mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::bin::finish;

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|d| d.count())
        .unwrap_or(0)
}

fn sh(script: &str) -> std::process::Child {
    Command::new("sh")
        .args(["-c", script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("sh runs")
}

#[test]
fn finish_returns_the_output_kills_past_its_limit_and_leaves_no_thread() {
    if !std::path::Path::new("/proc/self/task").exists() {
        return eprintln!("skipping: no /proc/self/task");
    }
    let before = threads();
    let (code, out, err, _) = finish(
        sh("echo out; echo err >&2; exit 3"),
        Duration::from_secs(60),
    );
    assert_eq!(
        (code, out.as_str(), err.as_str()),
        (Some(3), "out\n", "err\n")
    );
    // Before the fix a watchdog thread slept here for the whole 60 s.
    assert_eq!(threads(), before, "a thread of finish outlived it");

    let t0 = Instant::now();
    let (code, _, _, at) = finish(sh("exec sleep 30"), Duration::from_millis(200));
    assert_eq!(code, None, "killed by a signal");
    let took = at.duration_since(t0);
    assert!(took < Duration::from_secs(20), "killed after {took:?}");
    assert_eq!(threads(), before, "a thread of finish outlived it");
}
