//! `paceline findmax` in thread scope (`rate=N,thread`: each thread's schedule
//! at the rate): its steps are the activity's totals, as the reports show them
//! and as the achieved rate counts its ops.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

/// Regression (session 16, gauges): a step of `rate=20,thread` on 2 threads ran
/// 40/s and was judged, printed and searched as 20/s ("step 1: 20.0/s:
/// achieved 44.8/s"), so the search went on from a target half the load it ran.
#[test]
fn findmax_steps_the_total_of_a_thread_scope_rate() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_paceline"))
        .args([
            "findmax",
            "driver=diag",
            "latency=1ms",
            "threads=2",
            "rate=20,thread",
            "--step",
            "1s",
            "--settle",
            "200ms",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("the binary runs: {e}"));
    let mut reader = BufReader::new(child.stdout.take().expect("stdout"));
    let mut out = String::new();
    let step = loop {
        let mut line = String::new();
        let n = reader.read_line(&mut line).unwrap_or(0);
        out.push_str(&line);
        if n == 0 || line.starts_with("step 1:") {
            break line;
        }
    };
    // Ours to end: the search would go on for a minute.
    let _ = child.kill();
    let _ = child.wait();
    assert!(out.contains("from 40.0/s in total"), "{out}");
    // `step 1: 40.0/s: achieved A/s, ...`: the target is the total, and the
    // achieved rate (every thread's ops) is not above it by much (a backlog
    // paid off reads above it; twice is no backlog of a 1 ms op).
    let target = field(&step, "step 1: ", "/s");
    let achieved = field(&step, "achieved ", "/s");
    assert_eq!(target, 40.0, "{out}");
    assert!(achieved < 1.5 * target, "{out}");
}

/// The number after `before` up to `until` in `line`.
fn field(line: &str, before: &str, until: &str) -> f64 {
    let rest = &line[line.find(before).unwrap_or_else(|| panic!("{line}")) + before.len()..];
    rest[..rest.find(until).unwrap_or(rest.len())]
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("{e}: {line}"))
}
