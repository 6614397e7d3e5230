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
