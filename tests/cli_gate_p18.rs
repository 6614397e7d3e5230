//! The CI gate's regressions of the session 18 audit, through the real binary:
//! `compare` on a run an `abort_on_fail` threshold cut short (H1) and on a
//! standard output that cannot be written (H3).

mod support;

use support::bin::{bin, code_and_text, json, temp, text};

/// Regression (audit p18, H1): a run stopped by `abort_on_fail` after a part
/// of its duration ("253 cycles in 0.505s, 500/s of 500/s") passed `compare`'s
/// rate gate, rc 0. Its activity now ends `stopped by abort_on_fail`, and the
/// gate fails on it.
#[test]
fn compare_fails_a_run_abort_on_fail_cut_short() {
    let a = temp("a18.json").display().to_string();
    let b = temp("b18.json").display().to_string();
    let (code, out) = code_and_text(&[
        "run",
        "driver=diag",
        "rate=500",
        "cycles=300",
        "--summary-json",
        &a,
    ]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = code_and_text(&[
        "run",
        "driver=diag",
        "rate=500",
        "duration=20s",
        "error_rate=0.05",
        "errors=count",
        "--report-interval",
        "200ms",
        "--threshold",
        "errors<1% abort_on_fail",
        "--summary-json",
        &b,
    ]);
    assert_eq!(code, 3, "{out}");
    let doc = json(std::path::Path::new(&b));
    assert_eq!(
        doc["activities"][0]["ended"], "stopped by abort_on_fail",
        "{doc}"
    );
    let (code, out) = code_and_text(&["compare", &a, &b, "--fail-if", "rate<-5%"]);
    assert_eq!(code, 3, "{out}");
    assert!(
        out.contains("B's activity `diag` ended `stopped by abort_on_fail` after"),
        "{out}"
    );
}

/// Regression (audit p18, H3): `compare ... > /dev/full` panicked (exit 101,
/// a backtrace). It exits 1 with one line now, as `list` and `check` do.
#[test]
fn compare_to_a_full_stdout_exits_1_without_a_panic() {
    let a = temp("full18.json").display().to_string();
    let (code, out) = code_and_text(&[
        "run",
        "driver=diag",
        "rate=500",
        "cycles=50",
        "--summary-json",
        &a,
    ]);
    assert_eq!(code, 0, "{out}");
    let Ok(full) = std::fs::File::create("/dev/full") else {
        return; // no /dev/full here
    };
    let o = bin()
        .args(["compare", &a, &a])
        .stdout(full)
        .output()
        .expect("paceline runs");
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("cannot write to standard output"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// Regression (audit p18, H2): an async run of 1 s ops at 100/s, exact ("100/s
/// of 100/s"), was stopped at its duration's end by `achieved>=90%
/// abort_on_fail`: the interval check counted its 100 ops in flight as never
/// started (exit 3). The rate is judged at the end now, and passes.
#[test]
fn abort_on_fail_leaves_an_ended_schedules_rate_to_the_end() {
    let (code, out) = code_and_text(&[
        "run",
        "driver=diag",
        "rate=100",
        "latency=1s",
        "concurrency=200",
        "duration=3s",
        "--report-interval",
        "300ms",
        "--threshold",
        "achieved>=90% abort_on_fail",
    ]);
    assert!(!out.contains("stopping the run"), "{out}");
    assert_eq!(code, 0, "{out}");
}

/// Regression (audit p18, M8): diag's injected error at cycle 84 (of
/// `error_rate=0.002`) read 1.04 % at the first 100 ms interval and
/// `errors<1% abort_on_fail` stopped a run that ends at 0.3 %. The share's
/// upper bound is judged only once one failure alone is under it (more than
/// 100 ops started for `<1%`). One cycle in every 300 fails, wherever the
/// sequence puts it, so any interval past that point reads under 1 %: the run
/// passes wherever the interval ticks fall (review p18, G-1; the exact
/// boundary, 100 ops, is pinned by gate.rs's unit test).
#[test]
fn an_early_first_error_does_not_abort_a_share_threshold() {
    let w = temp("early18.yaml");
    std::fs::write(
        &w,
        "params: {driver: diag, errors: count}\n\
         ops:\n  bad: {ratio: 1, fail: true}\n  good: {ratio: 299}\n",
    )
    .unwrap();
    let (code, out) = code_and_text(&[
        "run",
        &w.display().to_string(),
        "rate=1000",
        "duration=2s",
        "--report-interval",
        "100ms",
        "--threshold",
        "errors<1% abort_on_fail",
    ]);
    assert!(!out.contains("stopping the run"), "{out}");
    assert_eq!(code, 0, "{out}");
}

/// Regression (audit p18, H5): 3 ops ended and 7 cancelled at the stop
/// timeout read `errors<1%` at 233.3 % (cancelled errors over the ops
/// recorded). The share is over the ops started: never above 100 %.
#[test]
fn the_error_share_never_exceeds_the_ops_started() {
    let s = temp("share18.json").display().to_string();
    let (_, out) = code_and_text(&[
        "run",
        "driver=diag",
        "latency=1200ms",
        "rate=10",
        "concurrency=50",
        "duration=1s",
        "--stop-timeout",
        "500ms",
        "--threshold",
        "errors<1%",
        "--summary-json",
        &s,
    ]);
    let doc = json(std::path::Path::new(&s));
    let v = doc["thresholds"][0]["value"].as_f64().unwrap_or(0.0);
    assert!(v <= 100.0, "{v}: {out}");
}
