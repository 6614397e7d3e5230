//! The real binary: summaries agree with the run, control requests change a
//! running activity, bad input exits 2 with a message and no panic.
//!
//! One test binary: this file holds the summaries, bad input, `check`, `list`,
//! `help` and the stdout driver; `control` the control endpoint, `stopping`
//! signals and the stop timeout.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::time::{Duration, Instant};

#[path = "../support/endpoint.rs"]
mod endpoint;

#[path = "../support/bin.rs"]
mod bin;
use bin::{bin, run, signal, stderr_of, temp, text, wait_within};

mod control;
mod stopping;

#[test]
fn summary_json_agrees_with_the_run() {
    let path = temp("summary.json");
    let out = run(&[
        "run",
        "driver=diag",
        "cycles=20000",
        "threads=2",
        "rate=100K",
        "errors=count",
        "error_rate=0.01",
        "--summary-json",
        path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let a = &doc["activities"][0];
    assert_eq!(a["alias"], "diag");
    assert_eq!(a["driver"], "diag");
    assert_eq!(a["threads"], 2);
    assert_eq!(a["cycles"]["requested"], 20000);
    assert_eq!(a["cycles"]["completed"], 20000);
    let errors = a["cycles"]["errors"].as_u64().unwrap();
    assert!((100..300).contains(&errors), "{errors}");
    assert_eq!(a["rate"]["target"], 100_000.0);
    assert_eq!(a["rate"]["strictness"], 1.1);
    // `completed` is the ops over the run's time; `achieved`, the start rate
    // over the schedule, leaves out the drain after the last start (a thread
    // preempted in the last op on a busy machine) and never passes the target.
    let achieved = a["rate"]["achieved"].as_f64().unwrap();
    let completed = a["rate"]["completed"].as_f64().unwrap();
    let elapsed = a["elapsed_seconds"].as_f64().unwrap();
    assert!(
        (completed * elapsed - 20000.0).abs() < 200.0,
        "{completed} {elapsed}"
    );
    assert!(
        (0.99 * completed..=100_000.0).contains(&achieved),
        "{achieved} {completed}"
    );
    for m in ["service_ns", "wait_ns", "response_ns"] {
        for k in ["min", "mean", "p50", "p90", "p99", "p999", "max"] {
            assert!(a[m][k].is_u64(), "{m}.{k}: {}", a[m][k]);
        }
        assert!(a[m]["p50"].as_u64() <= a[m]["p99"].as_u64());
    }
    // The console has the summary table.
    assert!(
        text(&out.stdout).contains("20000 of 20000 cycles"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn every_kind_of_bad_input_exits_2_with_a_message_and_no_panic() {
    let bad_yaml = temp("bad.yaml");
    std::fs::write(
        &bad_yaml,
        "params:\n  driver: daig\n  thread: 4\nops:\n  o: 'x {nope}'\n",
    )
    .unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["run".into(), "no/such/file.yaml".into()],
            "no/such/file.yaml",
        ),
        (
            vec!["run".into(), bad_yaml.display().to_string()],
            "bad.yaml:2:11: unknown driver `daig`",
        ),
        (
            vec!["check".into(), bad_yaml.display().to_string()],
            "bad.yaml:3:3: unknown param `thread`",
        ),
        (
            vec!["run".into(), "driver=diag".into(), "threads=x".into()],
            "param 2:",
        ),
        (
            vec!["run".into(), "cycles=10".into()],
            "no activity file and no `driver=NAME`",
        ),
        (
            vec!["run".into(), "quickstart".into(), "scenario=nope".into()],
            "no scenario `nope`",
        ),
        (
            vec!["run".into(), "driver=diag".into(), "latency=fast".into()],
            "`fast` is not a duration",
        ),
        (
            vec!["run".into(), "driver=diag".into(), "rate=-5".into()],
            "param 2:",
        ),
        (
            vec![
                "run".into(),
                "quickstart".into(),
                "--report-interval".into(),
                "soon".into(),
            ],
            "soon",
        ),
        (
            vec![
                "run".into(),
                "quickstart".into(),
                "--summary-json".into(),
                "/no/such/dir/x.json".into(),
            ],
            "cannot create report file",
        ),
        (
            vec![
                "run".into(),
                "quickstart".into(),
                "--control".into(),
                "10.1.2.3:80".into(),
            ],
            "--control-allow-remote",
        ),
        (vec!["frobnicate".into()], "unrecognized subcommand"),
        // Issue 22: a rule for a kind the driver never gives (a misspelling).
        (
            vec![
                "run".into(),
                "driver=diag".into(),
                "error_kind=sql 40".into(),
                "errors=sql 4O:retry:3;count".into(),
            ],
            "param `errors`: rule `sql 4O:retry:3` is for error \
             kind `sql 4O`, which driver `diag` never gives an error (did you mean `sql 40`?)",
        ),
    ];
    for (args, want) in cases {
        let out = run(&args.iter().map(String::as_str).collect::<Vec<_>>());
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: want `{want}` in:\n{err}");
        assert!(
            !err.contains("panicked") && !err.contains("RUST_BACKTRACE"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn a_run_stopped_by_its_error_policy_exits_1_and_keeps_what_it_recorded() {
    let path = temp("failed.json");
    let out = run(&[
        "run",
        "driver=diag",
        "cycles=1000",
        "error_rate=0.5",
        "errors=stop",
        "--summary-json",
        path.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("activity `diag` failed: cycle "));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert!(doc["activities"][0]["cycles"]["errors"].as_u64().unwrap() >= 1);
}

#[test]
fn check_accepts_every_bundled_activity_and_list_names_them() {
    for entry in std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/activities")).unwrap() {
        let path = entry.unwrap().path();
        let out = run(&["check", path.to_str().unwrap()]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}: {}",
            path.display(),
            text(&out.stderr)
        );
        assert!(text(&out.stdout).contains(": valid"));
    }
    let out = run(&["list"]);
    assert_eq!(out.status.code(), Some(0));
    let listed = text(&out.stdout);
    for name in [
        "quickstart",
        "ramp",
        "overload",
        "kv-stdout",
        "postgres-keyvalue",
        "redis-keyvalue",
    ] {
        assert!(listed.contains(name), "{listed}");
    }
}

#[test]
fn help_shows_examples_for_each_command() {
    for cmd in ["run", "check", "list", "calibrate"] {
        let out = run(&[cmd, "--help"]);
        assert_eq!(out.status.code(), Some(0));
        assert!(text(&out.stdout).contains("Examples:"), "{cmd}");
    }
}

#[test]
fn the_stdout_driver_owns_stdout_and_a_closed_pipe_is_not_an_error() {
    let out = run(&["run", "kv-stdout", "cycles=50", "rate=1M"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let ops = text(&out.stdout);
    assert_eq!(ops.lines().count(), 50, "{ops}");
    assert!(
        ops.lines()
            .all(|l| l.starts_with("GET key:") || l.starts_with("SET key:")),
        "{ops}"
    );
    assert!(text(&out.stderr).contains("50 of 50 cycles"));

    // `paceline run kv-stdout | head -3`: the reader leaves early.
    let mut child = bin()
        .args(["run", "kv-stdout", "cycles=10M", "rate=1M", "--no-progress"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 64];
    child
        .stdout
        .as_mut()
        .unwrap()
        .read_exact(&mut first)
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// Issue 17.2.1 / 18.1: an activity that finishes before the run keeps its own
/// elapsed time and rate in the summary.
#[test]
fn an_early_activity_keeps_its_own_elapsed_time_and_rate() {
    let file = temp("early.yaml");
    std::fs::write(
        &file,
        "params: {alias: main, driver: diag, cycles: 1500, rate: 1K}\n\
         ops: {o: x}\n\
         scenarios:\n  default:\n    - run: {alias: warmup, cycles: 200, rate: 1K}\n    - run\n",
    )
    .unwrap();
    let json = temp("early.json");
    let out = run(&[
        "run",
        file.to_str().unwrap(),
        "--no-progress",
        "--report-interval",
        "300ms",
        "--summary-json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let warmup = &doc["activities"][0];
    assert_eq!(warmup["alias"], "warmup");
    let elapsed = warmup["elapsed_seconds"].as_f64().unwrap();
    let rate = warmup["rate"]["achieved"].as_f64().unwrap();
    // 200 ops at 1K/s: about 0.2 s, not the run's 1.7 s.
    assert!((0.19..0.6).contains(&elapsed), "{elapsed}");
    assert!(rate > 330.0, "{rate}");
    assert!(
        text(&out.stdout).contains("warmup (diag, 1 thread): 200 of 200 cycles in 0."),
        "{}",
        text(&out.stdout)
    );
}
