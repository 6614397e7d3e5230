//! Runs a CI pipeline can gate on, session 16 (audit p16): the run-level
//! outcome and exit code in the summary JSON and a failing JUnit case when a
//! scenario step, an interrupt or a stuck op ends the run (H6); a step refused
//! at its start exits 2 as one activity does (M9); one result per
//! `abort_on_fail` threshold (M1); JUnit's figures are the summary's (M2); and
//! `compare --hdr-logs` / `report --summary-json` refuse a log of another run
//! (M6). Through the real binary.

mod support;

use std::path::Path;
use support::bin::{run, temp, text, write_temp};

fn json(path: &Path) -> serde_json::Value {
    let t = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&t).unwrap_or_else(|e| panic!("{e}: {t}"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A scenario whose step `refused` cannot start: its Redis is on a port where
/// nothing listens (no server needed), after `steps_before` of `diag`.
#[cfg(feature = "redis")]
fn refused_scenario(name: &str, step_before: bool) -> String {
    let first = if step_before {
        "    one: run alias=first driver=diag cycles=5\n"
    } else {
        ""
    };
    write_temp(
        name,
        &format!(
            "scenarios:\n  default:\n{first}    two: run alias=second driver=redis cycles=5\n\
             params: {{url: \"redis://127.0.0.1:1/0\"}}\nops:\n  o: {{command: [PING]}}\n"
        ),
    )
}

/// Regression (audit p16, H6 and M9): step 2 refused at its start left a
/// JUnit report with `failures="0"` and a summary with no outcome, and exited
/// 1 where the same step alone exits 2.
#[cfg(feature = "redis")]
#[test]
fn a_step_refused_after_another_ran_is_bad_input_and_says_so_in_every_report() {
    let file = refused_scenario("refused2.yaml", true);
    let (summary, junit) = (temp("refused2.json"), temp("refused2.xml"));
    let out = run(&[
        "run",
        &file,
        "--no-progress",
        "--summary-json",
        &summary.to_string_lossy(),
        "--junit",
        &junit.to_string_lossy(),
        "--threshold",
        "errors<1%",
    ]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("scenario stopped: step 2:"), "{err}");
    let doc = json(&summary);
    assert_eq!(doc["outcome"], "bad input", "{doc}");
    assert_eq!(doc["exit_code"], 2, "{doc}");
    let why = doc["failure"].as_str().unwrap_or_default();
    assert!(why.starts_with("scenario stopped: step 2:"), "{why}");
    assert!(why.contains("cannot reach Redis"), "{why}");
    // The step before it is reported.
    assert_eq!(doc["activities"][0]["alias"], "first", "{doc}");
    let xml = read(&junit);
    assert!(xml.contains("tests=\"3\" failures=\"1\""), "{xml}");
    assert!(
        xml.contains("<testcase classname=\"paceline.run\" name=\"run\""),
        "{xml}"
    );
    assert!(xml.contains("type=\"bad input\""), "{xml}");
}

/// Regression (audit p16, M9): the first step refused exited 1; as an
/// activity it exits 2, and nothing ran, so no report is left behind.
#[cfg(feature = "redis")]
#[test]
fn a_first_step_refused_exits_2_with_no_report() {
    let file = refused_scenario("refused1.yaml", false);
    let summary = temp("refused1.json");
    let out = run(&[
        "run",
        &file,
        "--no-progress",
        "--summary-json",
        &summary.to_string_lossy(),
    ]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot reach Redis"), "{err}");
    assert!(!summary.exists());
}

/// A run that went well says so: outcome `completed`, exit code 0; a failed
/// threshold: `thresholds failed`, 3.
#[test]
fn a_run_that_went_well_says_completed() {
    let summary = temp("ok.json");
    let s = summary.to_string_lossy().to_string();
    let out = run(&[
        "run",
        "driver=diag",
        "cycles=10",
        "--no-progress",
        "--summary-json",
        &s,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc = json(&summary);
    assert_eq!(doc["outcome"], "completed", "{doc}");
    assert_eq!(doc["exit_code"], 0);
    assert!(doc["failure"].is_null());
    let out = run(&[
        "run",
        "driver=diag",
        "cycles=10",
        "--no-progress",
        "--summary-json",
        &s,
        "--threshold",
        "errors>5",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let doc = json(&summary);
    assert_eq!(doc["outcome"], "thresholds failed", "{doc}");
    assert_eq!(doc["exit_code"], 3);
}

/// Regression (audit p16, H6): an op stuck past `--stop-timeout` exited 1
/// with `failures="0"` in the JUnit report and nothing in the summary.
#[test]
fn an_op_stuck_past_the_stop_timeout_fails_the_run_in_its_reports() {
    let (summary, junit) = (temp("stuck.json"), temp("stuck.xml"));
    let out = run(&[
        "run",
        "driver=diag",
        "cycles=3",
        "latency=20s",
        "latency_mode=hang",
        "--no-progress",
        "--duration",
        "1s",
        "--stop-timeout",
        "1s",
        "--summary-json",
        &summary.to_string_lossy(),
        "--junit",
        &junit.to_string_lossy(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let doc = json(&summary);
    assert_eq!(doc["outcome"], "failed", "{doc}");
    assert_eq!(doc["exit_code"], 1);
    let why = doc["failure"].as_str().unwrap_or_default();
    assert!(
        why.contains("did not stop within the stop timeout"),
        "{why}"
    );
    let xml = read(&junit);
    assert!(xml.contains("failures=\"1\""), "{xml}");
    assert!(xml.contains("type=\"failed\""), "{xml}");
}

/// Regression (audit p16, M1): one `abort_on_fail` threshold was reported
/// twice ("0 of 2 passed") when its value at the aborting interval differed
/// from the final one.
#[test]
fn an_abort_on_fail_threshold_is_reported_once() {
    let (summary, junit) = (temp("abort.json"), temp("abort.xml"));
    let out = run(&[
        "run",
        "driver=diag",
        "--no-progress",
        "cycles=1000",
        "rate=1000",
        "latency=5ms",
        "--threshold",
        "response.p99<1ms abort_on_fail",
        "--report-interval",
        "100ms",
        "--summary-json",
        &summary.to_string_lossy(),
        "--junit",
        &junit.to_string_lossy(),
    ]);
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(3), "{all}");
    assert!(all.contains("thresholds: 0 of 1 passed"), "{all}");
    let doc = json(&summary);
    assert_eq!(doc["thresholds"].as_array().map(Vec::len), Some(1), "{doc}");
    let xml = read(&junit);
    assert_eq!(
        xml.matches("classname=\"paceline.threshold\"").count(),
        1,
        "{xml}"
    );
}

/// Regression (audit p16, M2): JUnit's output showed the completion rate
/// (4069/s for `rate=10`) and `response p99 0ns` for a run with no op.
#[test]
fn junit_output_shows_the_summarys_rate_and_no_p99_without_ops() {
    let junit = temp("one.xml");
    let j = junit.to_string_lossy().to_string();
    let out = run(&[
        "run",
        "driver=diag",
        "cycles=1",
        "rate=10",
        "--no-progress",
        "--junit",
        &j,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let xml = read(&junit);
    assert!(xml.contains("<system-out>1 ops in "), "{xml}");
    assert!(xml.contains("s, 10.0/s, 0 errors"), "{xml}");
    let out = run(&[
        "run",
        "driver=diag",
        "cycles=0",
        "--no-progress",
        "--junit",
        &j,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let xml = read(&junit);
    assert!(
        xml.contains("0 errors, response p99 - (completed)"),
        "{xml}"
    );
}

/// Regression (audit p16, M6): `compare --hdr-logs` took the baseline's log
/// for B (a 50x regression "within noise", exit 0), and `report
/// --summary-json` put one run's header above another's log.
#[test]
fn a_log_of_another_run_is_refused() {
    let files = |n: &str| {
        (
            temp(&format!("{n}.hlog")).to_string_lossy().to_string(),
            temp(&format!("{n}.json")).to_string_lossy().to_string(),
        )
    };
    let (la, ja) = files("ca");
    let (lb, jb) = files("cb");
    for (i, (l, j)) in [(&la, &ja), (&lb, &jb)].into_iter().enumerate() {
        if i == 1 {
            // Two runs start seconds apart at least.
            std::thread::sleep(std::time::Duration::from_millis(1500));
        }
        let out = run(&[
            "run",
            "driver=diag",
            "cycles=50",
            "rate=500",
            "--no-progress",
            "--hdr-log",
            l,
            "--summary-json",
            j,
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    let cmp = |l1: &str, l2: &str| {
        run(&[
            "compare",
            &ja,
            &jb,
            "--hdr-logs",
            l1,
            l2,
            "--fail-if",
            "response.p99>+10%",
        ])
    };
    let ok = cmp(&la, &lb);
    assert_ne!(ok.status.code(), Some(2), "{}", text(&ok.stderr));
    // The baseline's log twice, and the logs swapped.
    for (l1, l2) in [(&la, &la), (&lb, &la)] {
        let out = cmp(l1, l2);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("is not the HDR log of the run in"), "{err}");
    }
    let html = temp("mix.html").to_string_lossy().to_string();
    let out = run(&["report", &la, "--summary-json", &jb, "-o", &html]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("is not the HDR log of the run in"), "{err}");
    let out = run(&["report", &la, "--summary-json", &ja, "-o", &html]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

/// Regression (audit p16, H5): `compare --fail-if` without an alias passed
/// (exit 0) when B lacked the activity (renamed, or a run that stopped before
/// it); docs/cli.md says a gate that cannot be judged fails.
#[test]
fn compare_fails_a_gate_on_every_activity_when_b_lacks_one() {
    let a = temp("h5a.json").to_string_lossy().to_string();
    let out = run(&[
        "run",
        "driver=diag",
        "cycles=100",
        "--no-progress",
        "--summary-json",
        &a,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc = json(Path::new(&a));
    let mut none = doc.clone();
    none["activities"] = serde_json::json!([]);
    let mut renamed = doc.clone();
    renamed["activities"][0]["alias"] = serde_json::json!("other");
    for (name, b) in [("h5none.json", none), ("h5renamed.json", renamed)] {
        let b = write_temp(name, &b.to_string());
        let out = run(&["compare", &a, &b, "--fail-if", "rate<-5%"]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{name}: {err}");
        assert!(err.contains("activity `diag` of A is not in B"), "{err}");
    }
}

/// Regression (audit p16, L4): `verdict==on-schedule` passed (exit 0) on a run
/// paused for its whole length, which ran no op.
#[test]
fn a_verdict_threshold_fails_on_a_run_with_no_ops() {
    let out = run(&[
        "run",
        "driver=diag",
        "rate=0",
        "duration=1s",
        "--no-progress",
        "--threshold",
        "verdict==on-schedule",
    ]);
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(3), "{all}");
    assert!(
        all.contains("FAIL verdict==on-schedule (diag): none (no ops)"),
        "{all}"
    );
}

/// Regression (audit p16, L1): a reader that closed stdout (`| head`) left
/// one op error of kind `closed`: `errors==0` failed with exit 3, and the
/// summary said the activity `failed`.
#[test]
fn a_closed_stdout_is_no_error_for_a_threshold() {
    use std::io::Read as _;
    let summary = temp("closed.json");
    let s = summary.to_string_lossy().to_string();
    let mut child = support::bin::bin()
        .args([
            "run",
            "kv-stdout",
            "cycles=10M",
            "--no-progress",
            "--threshold",
            "errors==0",
            "--summary-json",
            &s,
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut out = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
    let mut first = [0u8; 64];
    let _ = out.read(&mut first);
    drop(out);
    let done = child.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
    let err = text(&done.stderr);
    assert_eq!(done.status.code(), Some(0), "{err}");
    assert!(err.contains("pass errors==0 (kv-stdout): 0"), "{err}");
    let doc = json(&summary);
    assert_eq!(
        doc["activities"][0]["ended"], "stopped (stdout closed)",
        "{doc}"
    );
    assert_eq!(doc["outcome"], "completed", "{doc}");
}

/// Regression (audit p16, L5): a threshold on an alias no activity has ran the
/// whole run (here 60 s), then failed "no such activity ran" with exit 3.
#[test]
fn a_threshold_on_an_alias_the_run_does_not_start_exits_2_at_once() {
    let begun = std::time::Instant::now();
    let out = run(&[
        "run",
        "driver=diag",
        "rate=10",
        "duration=60s",
        "--no-progress",
        "--threshold",
        "dag:errors<1",
    ]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "--threshold #1: threshold `dag:errors<1` names activity `dag`, which this \
                      run does not start (it starts `diag`); did you mean `diag`?"
        ),
        "{err}"
    );
    assert!(begun.elapsed() < std::time::Duration::from_secs(30));
}
