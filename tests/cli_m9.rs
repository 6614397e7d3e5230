//! Regression (audit p18, M9): ops in flight when a run's planned end cuts
//! them (its `duration`) are `cancelled`, shown on their own line, and left
//! out of `errors` thresholds, on the async runner (after `--stop-timeout`)
//! and the sync one (a `diag` latency still sleeping); a Ctrl-C's cut keeps
//! them as errors. Through the real binary, on the wall clock with wide
//! margins: each check needs only some op in flight at the end.

mod support;

use std::time::Duration;
use support::bin::{bin, finish, json, run, signal, spawn_piped, temp, text};

/// Runs `args` with `--summary-json`: exit code, stdout, and the document.
fn gated(name: &str, args: &[&str]) -> (Option<i32>, String, String, serde_json::Value) {
    let path = temp(name);
    let p = path.to_string_lossy().into_owned();
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--summary-json", &p]);
    let out = run(&all);
    let doc = json(&path);
    let _ = std::fs::remove_file(&path);
    (out.status.code(), text(&out.stdout), text(&out.stderr), doc)
}

/// The audit's command: 2 s ops at 10/s for 3 s, a 1 s stop timeout, so the
/// ops of the last second are cancelled at the end.
#[test]
fn async_ops_cut_by_the_duration_pass_an_errors_share() {
    let (code, out, err, doc) = gated(
        "m9_async.json",
        &[
            "run",
            "driver=diag",
            "latency=2s",
            "rate=10",
            "concurrency=50",
            "duration=3s",
            "--stop-timeout",
            "1s",
            "--threshold",
            "errors<1%",
        ],
    );
    let a = &doc["activities"][0];
    let cut = a["errors_by_kind"]["cancelled"].as_u64().unwrap_or(0);
    assert!(cut > 0, "no op cut: {a}\n{out}\n{err}");
    assert_eq!(doc["thresholds"][0]["pass"], true, "{}", doc["thresholds"]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert_eq!(a["cycles"]["errors"].as_u64(), Some(cut), "{a}");
    assert_eq!(a["cycles"]["cancelled_at_end"].as_u64(), Some(cut), "{a}");
    assert_eq!(a["ended"], "ran its duration");
    assert!(
        out.contains(&format!(
            "{cut} ops cut at the run's end (cancelled): left out of `errors` thresholds"
        )) || out.contains("1 op cut at the run's end"),
        "{out}"
    );
}

/// The sync runner: a `diag` op still sleeping when the duration ends is
/// cancelled (stopconn, this session), and `errors==0` still passes.
#[test]
fn sync_ops_cut_by_the_duration_pass_errors_zero() {
    let (code, out, err, doc) = gated(
        "m9_sync.json",
        &[
            "run",
            "driver=diag",
            "latency=50ms",
            "rate=100",
            "threads=2",
            "duration=1s",
            "--threshold",
            "errors==0",
        ],
    );
    let a = &doc["activities"][0];
    let cut = a["errors_by_kind"]["cancelled"].as_u64().unwrap_or(0);
    assert!(cut > 0, "no op cut: {a}\n{out}\n{err}");
    assert_eq!(doc["thresholds"][0]["value"], 0, "{}", doc["thresholds"]);
    assert_eq!(code, Some(0), "{out}\n{err}");
    assert_eq!(a["cycles"]["cancelled_at_end"].as_u64(), Some(cut), "{a}");
    assert!(out.contains("cut at the run's end (cancelled)"), "{out}");
    // `compare`'s `errors` row leaves them out too.
    let path = temp("m9_sync_cmp.json");
    std::fs::write(&path, doc.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let p = path.to_string_lossy().into_owned();
    let cmp = text(&run(&["compare", &p, &p]).stdout);
    let _ = std::fs::remove_file(&path);
    let row: Vec<&str> = cmp
        .lines()
        .find(|l| l.trim_start().starts_with("errors "))
        .map(|l| l.split_whitespace().collect())
        .unwrap_or_default();
    assert_eq!(row.get(..3), Some(&["errors", "0", "0"][..]), "{cmp}");
}

/// A Ctrl-C is a stop that was asked for: the ops it cuts stay errors, and
/// the activity says who stopped it.
#[test]
fn ops_cut_by_an_interrupt_stay_errors() {
    let path = temp("m9_int.json");
    let p = path.to_string_lossy().into_owned();
    let mut cmd = bin();
    cmd.args([
        "run",
        "driver=diag",
        "latency=2s",
        "rate=10",
        "concurrency=50",
        "duration=60s",
        "--stop-timeout",
        "1s",
        "--threshold",
        "errors==0",
        "--summary-json",
        &p,
    ]);
    let child = spawn_piped(&mut cmd);
    // Ops of 2 s at 10/s: from 2 s on, about 20 are in flight at any time
    // (and the interrupt handler is long set).
    std::thread::sleep(Duration::from_millis(3000));
    signal(&child, "INT");
    let (code, out, err, _) = finish(child, Duration::from_secs(60));
    let doc = json(&path);
    let _ = std::fs::remove_file(&path);
    let a = &doc["activities"][0];
    assert_eq!(code, Some(1), "{out}\n{err}");
    let cancelled = a["errors_by_kind"]["cancelled"].as_u64().unwrap_or(0);
    assert!(cancelled > 0, "no op cut: {a}\n{out}\n{err}");
    assert_eq!(doc["thresholds"][0]["pass"], false, "{}", doc["thresholds"]);
    assert_eq!(
        doc["thresholds"][0]["value"], cancelled,
        "{}",
        doc["thresholds"]
    );
    assert!(!out.contains("cut at the run's end"), "{out}");
    assert_eq!(a["cycles"]["cancelled_at_end"], 0, "{a}");
    assert_eq!(a["ended"], "stopped by interrupt", "{a}");
}
