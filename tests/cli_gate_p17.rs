//! The CI gate's regressions of the session 17 audit, through the real binary:
//! `abort_on_fail` at an interval with no value yet (H4), two report options
//! naming one file (M6), and `compare` on a run that did not complete (H2) and
//! on `queue` gates (H1).

mod support;

use support::bin::{code_and_text, json, temp, write_temp};

/// Regression (audit p17, H4): a run whose first op outlasts the report
/// interval was stopped at the first interval, exit 3, `errors<1%
/// abort_on_fail` failing "none (no ops)". It runs on and passes now; a step
/// not started yet is no failure either.
#[test]
fn abort_on_fail_waits_for_a_value() {
    let (code, out) = code_and_text(&[
        "run",
        "driver=diag",
        "latency=1200ms",
        "rate=10",
        "concurrency=20",
        "duration=2s",
        "--report-interval",
        "300ms",
        "--threshold",
        "errors<1% abort_on_fail",
        "--threshold",
        "response.p99<60s abort_on_fail",
        "--threshold",
        "achieved>=1% abort_on_fail",
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("stopping the run"), "{out}");
    let sc = write_temp(
        "steps.yaml",
        "params: {driver: diag, errors: count}\nops: {o: x}\nscenarios:\n  default:\n    \
         - run alias=one rate=100 duration=1s\n    - run alias=two rate=100 cycles=20\n",
    );
    let (code, out) = code_and_text(&[
        "run",
        &sc,
        "--report-interval",
        "300ms",
        "--threshold",
        "two:errors<1% abort_on_fail",
    ]);
    assert_eq!(code, 0, "{out}");
}

/// Regression (audit p17, H4): when an interval check does stop the run, the
/// FAIL line shows the value that stopped it, not the final one.
#[test]
fn an_interval_abort_shows_the_intervals_value() {
    let (code, out) = code_and_text(&[
        "run",
        "driver=diag",
        "rate=200",
        "duration=20s",
        "--report-interval",
        "300ms",
        "--threshold",
        "ops<5 abort_on_fail",
    ]);
    assert_eq!(code, 3, "{out}");
    let stop = out
        .lines()
        .find(|l| l.contains("with abort_on_fail: stopping the run"))
        .unwrap_or_default()
        .to_string();
    // "... failed (diag: 61) with abort_on_fail": the interval's count.
    let at = stop
        .split("(diag: ")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .unwrap_or_default()
        .to_string();
    assert!(!at.is_empty(), "{out}");
    assert!(
        out.contains(&format!("FAIL ops<5 abort_on_fail (diag): {at}\n")),
        "{out}"
    );
}

/// Regression (audit p17, M6): `--summary-json X --junit X` ran, exit 0, and
/// the summary was lost. Refused before anything runs now, exit 2, naming
/// both options; another spelling of the same file too.
#[test]
fn two_reports_on_one_file_are_refused() {
    let same = temp("same.out");
    let s = same.display().to_string();
    let _ = std::fs::remove_file(&same);
    let (code, out) = code_and_text(&[
        "run",
        "driver=diag",
        "cycles=10",
        "--summary-json",
        &s,
        "--junit",
        &s,
    ]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains(&format!(
            "paceline: --summary-json {s} and --junit {s} name the same file: one report \
             would overwrite the other; give each report its own path\n"
        )),
        "{out}"
    );
    assert!(!same.exists(), "nothing ran, nothing was written");
    // The same file by another spelling.
    let dir = same
        .parent()
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    let other = format!("{dir}/./same.out");
    let (code, out) = code_and_text(&[
        "run",
        "driver=diag",
        "cycles=10",
        "--hdr-log",
        &s,
        "--csv",
        &other,
    ]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("--hdr-log") && out.contains("--csv"), "{out}");
}

/// Regression (audit p17, H1 and H2), end to end: a failed B passed `rate` and
/// latency gates, and a `queue` gate judged nothing; both fail now (exit 3).
#[test]
fn compare_fails_a_failed_run_and_judges_queue() {
    let a = temp("a17.json").display().to_string();
    let f = temp("f17.json").display().to_string();
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
        "cycles=300",
        "error_rate=0.05",
        "--summary-json",
        &f,
    ]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(json(std::path::Path::new(&f))["outcome"], "failed");
    let (code, out) = code_and_text(&["compare", &a, &f, "--fail-if", "rate<-5%"]);
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("B's run ended `failed`"), "{out}");
    let (code, out) = code_and_text(&[
        "compare",
        &a,
        &f,
        "--fail-if",
        "rate<-99%",
        "--allow-incomplete",
    ]);
    assert_eq!(code, 0, "{out}");
    // A against itself: the queue rows are there, and judged.
    let (code, out) = code_and_text(&["compare", &a, &a, "--fail-if", "queue.p99>+1%"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("  queue.p99"), "{out}");
}
