//! `paceline findmax` on the `diag` driver, whose capacity is known, with short
//! steps: it finds the capacity, names the generator when the generator is the
//! limit, writes the summary JSON, and refuses bad options with exit 2. The search
//! itself is pinned on a pure state machine in `src/cli/findmax.rs`.

use serde_json::Value;
use std::process::{Command, Output};
use std::sync::Mutex;

#[path = "support/bin.rs"]
mod bin;
use bin::{temp, text};

/// The searches run one at a time: each measures rates on the wall clock, and
/// another search spinning beside it on a small machine would be measured too.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn findmax(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_paceline"))
        .arg("findmax")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("the binary runs: {e}"))
}

/// Runs findmax with a summary JSON; returns it and the console output.
fn search(name: &str, args: &[&str]) -> (Value, String) {
    let (doc, out, _) = search_exits(name, args, 0);
    (doc, out)
}

/// [`search`] that exits with `code`; also returns stderr.
fn search_exits(name: &str, args: &[&str], code: i32) -> (Value, String, String) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let path = temp(&format!("{name}.json"));
    let mut all: Vec<&str> = args.to_vec();
    let p = path.to_str().unwrap_or_default();
    all.extend(["--summary-json", p]);
    let out = findmax(&all);
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{stdout}{stderr}");
    let doc = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
    let doc: Value = serde_json::from_str(&doc).unwrap_or_else(|e| panic!("{e}: {doc}"));
    (doc, stdout, stderr)
}

/// Issue 25 (a suite that holds on a busy machine): this test once asserted
/// that the result lands within 90-101 % of the capacity, and failed on a
/// 2-core machine busy with other builds (step 1, 300/s, achieved 285/s; later
/// 271/s and a result of 195/s). What a busy machine cannot change is kept: the
/// result never exceeds the capacity, the search doubles from the start while
/// steps pass and bisects after a failure confirmed by a retry, and its result
/// is the highest passing step with the lowest twice-failed step within 2 %
/// above it. How close the result comes to the capacity on an idle machine is
/// the search's own unit tests' job (`findmax_tests.rs`, on synthetic steps).
#[test]
fn findmax_search_is_consistent_and_bounded_by_the_capacity_of_two_threads_of_2ms_ops() {
    // Two threads of 2 ms ops sustain at most 1000/s.
    let (doc, out) = search(
        "capacity",
        &[
            "driver=diag",
            "latency=2ms",
            "threads=2",
            "rate=300",
            "--step",
            "700ms",
            "--settle",
            "100ms",
        ],
    );
    let max = doc["max_rate"].as_f64().unwrap_or_default();
    assert!((0.0..=1010.0).contains(&max), "max rate {max}:\n{out}");
    let steps = doc["steps"].as_array().cloned().unwrap_or_default();
    assert!(steps.len() >= 2, "{out}");
    for s in &steps {
        for key in ["achieved", "response_p99_ns", "pass"] {
            assert!(!s[key].is_null(), "{key} in {s}");
        }
        assert!(s["verdict"]["kind"].is_string(), "{s}");
        // Nothing achieves more than two threads of 2 ms ops can.
        let achieved = s["achieved"].as_f64().unwrap_or_default();
        assert!(achieved <= 1010.0, "{s}");
    }
    // The search: from 300/s, doubling after each pass until a failure, which
    // is run again (a retry) before it counts.
    let targets: Vec<f64> = steps.iter().filter_map(|s| s["target"].as_f64()).collect();
    assert_eq!(targets[0], 300.0, "{out}");
    let mut i = 0;
    let mut expected = 300.0;
    while i < steps.len() && steps[i]["pass"] == true {
        assert_eq!(targets[i], expected, "{out}");
        expected *= 2.0;
        i += 1;
    }
    if i < steps.len() {
        assert_eq!(targets[i], expected, "{out}");
        assert!(i + 1 < steps.len(), "a failure is retried: {out}");
        assert_eq!(
            (targets[i + 1], &steps[i + 1]["retry"]),
            (expected, &Value::Bool(true)),
            "{out}"
        );
    }
    // The highest passing step is the result, and the lowest step that failed
    // twice (a failure and its retry) is within 2 % of it.
    let passed = steps
        .iter()
        .filter(|s| s["pass"] == true)
        .filter_map(|s| s["target"].as_f64())
        .fold(0.0, f64::max);
    // Issue 24 item 10: the max rate is that step's achieved rate, no more
    // than its target and within the 1 % (or edge ops + 1) a pass allows.
    assert_eq!(doc["max_rate_target"].as_f64(), Some(passed), "{out}");
    assert!(
        max <= passed && max >= passed * 0.99 - 5.0,
        "{max} of {passed}: {out}"
    );
    let failed_above = steps
        .windows(2)
        .filter(|w| w[0]["pass"] == false && w[1]["retry"] == true && w[1]["pass"] == false)
        .filter_map(|w| w[1]["target"].as_f64())
        .fold(f64::INFINITY, f64::min);
    assert!(
        failed_above <= passed * 1.02 + 1e-9,
        "{passed} {failed_above}"
    );
    // A line per step, then the table and the result.
    let lines = out
        .lines()
        .filter(|l| l.starts_with("step ") && l.contains("/s: achieved"))
        .count();
    assert_eq!(lines, steps.len(), "{out}");
    assert!(out.contains("response p99"), "{out}");
    assert!(out.contains("limited by "), "{out}");
}

#[test]
fn findmax_names_the_generator_when_the_generator_is_the_limit() {
    // No-op ops: nothing but the generator limits the rate.
    let (doc, out) = search(
        "generator",
        &[
            "driver=diag",
            "threads=1",
            "rate=20K",
            "--step",
            "300ms",
            "--settle",
            "100ms",
        ],
    );
    assert_eq!(doc["limited_by"], "generator", "{out}");
    assert!(
        out.contains("limited by the generator, not the system"),
        "{out}"
    );
    assert!(doc["max_rate"].as_f64().unwrap_or_default() > 0.0, "{out}");
}

#[test]
fn a_response_slo_limits_the_search() {
    // 2 ms ops can never answer within 1 ms at p99: every step fails on the SLO
    // down to the floor of the halving, and the SLO is named. Audit L6: no step
    // passed, so the search exits 3 (it exited 0: a CI gate passed).
    let (doc, out, err) = search_exits(
        "slo",
        &[
            "driver=diag",
            "latency=2ms",
            "threads=4",
            "rate=100",
            "--step",
            "200ms",
            "--settle",
            "50ms",
            "--slo-p99",
            "1ms",
        ],
        3,
    );
    assert!(
        err.contains("no step passed") && err.contains("(exit 3)") && err.contains("--slo-p99"),
        "{err}"
    );
    assert_eq!(doc["limited_by"], "slo", "{out}");
    // Issue 24 item 10: no step passed, so no max rate (it was `0`).
    assert!(doc["max_rate"].is_null(), "{out}");
    assert!(out.contains("no max rate: no step passed"), "{out}");
    assert_eq!(doc["slo_p99_ns"], 1_000_000);
    assert!(out.contains("over the 1.00ms SLO"), "{out}");
}

#[test]
fn html_plots_the_steps_and_names_the_max_rate() {
    let page = temp("steps.html");
    let p = page.to_str().unwrap_or_default();
    let (doc, out) = search(
        "html",
        &[
            "driver=diag",
            "latency=2ms",
            "threads=2",
            "rate=400",
            "--step",
            "300ms",
            "--settle",
            "100ms",
            "--slo-p99",
            "50ms",
            "--html",
            p,
        ],
    );
    let html = std::fs::read_to_string(&page).unwrap_or_else(|e| panic!("{e}: {out}"));
    // The result as the console's line gives it, said once (issue 24 item 20:
    // the page repeated the whole line under its headline).
    let line = out
        .lines()
        .find(|l| l.starts_with("max rate ") || l.starts_with("no max rate"))
        .unwrap_or_else(|| panic!("{out}"));
    let bold = html
        .split_once("<p class=\"result\"><b>")
        .and_then(|(_, rest)| rest.split_once("</b>"))
        .map(|(b, _)| b)
        .unwrap_or_else(|| panic!("no result headline: {html}"));
    // As text: the page escapes `'` (the generator's headline has one).
    let unescape = |t: &str| {
        t.replace("&#39;", "'")
            .replace("&quot;", "\"")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&")
    };
    assert!(line.starts_with(&unescape(bold)), "{line}\n{bold}");
    assert!(
        !unescape(&html).contains(line),
        "the page repeats the console's line: {html}"
    );
    assert_eq!(html.matches(bold).count(), 1, "{html}");
    assert!(!html.contains("<script") && !html.contains("src=\"http"));
    assert_eq!(html.matches("<svg").count(), 2, "{html}");
    // A row per step, as in the summary JSON.
    let steps = doc["steps"].as_array().map_or(0, Vec::len);
    assert!(steps > 1, "{doc}");
    assert_eq!(
        html.matches("<td class=\"pass\">").count() + html.matches("<td class=\"fail\">").count(),
        steps,
        "{html}"
    );
    assert!(html.contains(">\nSLO 50.0ms\n</text>"), "{html}");
}

#[test]
fn an_unwritable_html_path_exits_2_before_the_search() {
    let out = findmax(&[
        "driver=diag",
        "--step",
        "10ms",
        "--html",
        "/no/such/directory/steps.html",
    ]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("/no/such/directory/steps.html"), "{err}");
    assert!(err.contains("directory exists"), "{err}");
    assert!(!text(&out.stdout).contains("step 1"), "the search ran");
}

#[test]
fn bad_options_exit_2_with_a_message() {
    for (args, says) in [
        (&["driver=diag", "--slo-p99", "0"][..], "--slo-p99"),
        (&["driver=diag", "--slo-p99", "soon"][..], "--slo-p99"),
        (&["driver=diag", "--step", "1ms"][..], "at least 10ms"),
        (&["driver=diag", "--step", "x"][..], "--step"),
        (&["driver=diag", "--max-error-rate", "5"][..], "from 0 to 1"),
        (&["driver=diag", "--start", "0"][..], "--start"),
        (&["no-such-activity-file"][..], "no-such-activity-file"),
    ] {
        let out = findmax(args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// Runs findmax (slow steps, so a search is long), sends it SIGINT once a line
/// starting with `after` is out, and returns the exit code, stdout and stderr,
/// and the summary JSON.
fn interrupted(name: &str, after: &str) -> (Option<i32>, String, String, Value) {
    use std::io::{BufRead, BufReader, Read};
    use std::process::Stdio;
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let path = temp(&format!("{name}.json"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_paceline"))
        .args([
            "findmax",
            "driver=diag",
            "latency=1ms",
            "threads=2",
            "rate=100",
            "--step",
            "1500ms",
            "--settle",
            "100ms",
            "--summary-json",
            path.to_str().unwrap_or_default(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("the binary runs: {e}"));
    let mut reader = BufReader::new(child.stdout.take().expect("stdout"));
    let mut out = String::new();
    loop {
        let mut line = String::new();
        let n = reader.read_line(&mut line).unwrap_or(0);
        out.push_str(&line);
        assert!(n > 0, "ended before `{after}`: {out}");
        if line.starts_with(after) {
            break;
        }
    }
    // Into the next step's measurement, past its settle period.
    std::thread::sleep(std::time::Duration::from_millis(400));
    let killed = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .map(|s| s.success());
    assert_eq!(killed.ok(), Some(true), "kill -INT");
    let mut rest = String::new();
    let _ = reader.read_to_string(&mut rest);
    out.push_str(&rest);
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    let code = child.wait().ok().and_then(|s| s.code());
    let doc = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}: {out}{err}"));
    let doc: Value = serde_json::from_str(&doc).unwrap_or_else(|e| panic!("{e}: {doc}"));
    (code, out, err, doc)
}

/// Issue 24 item 10: Ctrl-C in the first step printed `max rate 0/s, limited by
/// the system`, a result the search never found.
#[test]
fn issue24_item10_ctrl_c_in_the_first_step_is_no_max_rate_not_a_system_limit() {
    let (code, out, err, doc) = interrupted("ctrl-c-first", "findmax ");
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(!out.contains("max rate 0/s"), "{out}");
    assert!(!out.contains("limited by the system"), "{out}");
    assert!(
        out.contains("no max rate: the search stopped before a step passed (interrupted (Ctrl-C) during step 1"),
        "{out}"
    );
    assert!(err.contains("interrupted"), "{err}");
    assert_eq!(doc["limited_by"], "unfinished", "{doc}");
    assert!(doc["max_rate"].is_null(), "{doc}");
}

/// Issue 24 item 10: after Ctrl-C the result is what passed, as a lower bound,
/// and the max rate is the achieved rate of the highest passing step.
#[test]
fn issue24_item10_ctrl_c_after_a_pass_gives_a_lower_bound_at_the_achieved_rate() {
    let (code, out, err, doc) = interrupted("ctrl-c-later", "step 1: ");
    assert_eq!(code, Some(1), "{out}{err}");
    let line = out
        .lines()
        .find(|l| l.starts_with("max rate") || l.starts_with("no max rate"))
        .unwrap_or_else(|| panic!("{out}"));
    if out.contains("step 1: 100/s")
        && out
            .lines()
            .any(|l| l.starts_with("step 1: ") && l.ends_with("pass"))
    {
        assert!(line.starts_with("max rate at least "), "{line}");
        assert!(line.contains("(achieved at the 100/s step)"), "{line}");
        assert_eq!(doc["max_rate_target"], 100.0, "{doc}");
        let achieved = doc["max_rate"].as_f64().unwrap_or_default();
        let step1 = doc["steps"][0]["achieved"].as_f64().unwrap_or_default();
        assert_eq!(achieved, step1.min(100.0), "{doc}");
    }
    // In step 2, or in step 1's retry if step 1 failed on a busy machine.
    assert!(
        line.contains("during step 2") || line.contains("during step 1"),
        "{line}"
    );
    assert_eq!(doc["limited_by"], "unfinished", "{doc}");
}

/// Audit L6: a given `cycles=` was replaced by an unbounded count without a
/// word. The search still runs unbounded (a step of 10 cycles measures
/// nothing), from the first cycle given, and says so.
#[test]
fn audit_l6_a_given_cycles_is_named_as_not_used() {
    let (doc, out, err) = search_exits(
        "cycles",
        &[
            "driver=diag",
            "cycles=5..10",
            "--start",
            "400",
            "--step",
            "100ms",
            "--settle",
            "20ms",
            "--slo-p99",
            "1ns",
        ],
        3,
    );
    assert!(
        err.contains("`cycles=5..10` (param 2) is not used")
            && err.contains("from cycle 5 with no end")
            && err.contains("leave `cycles` out"),
        "{err}"
    );
    // More ops than the 5 cycles given ran in the first step.
    assert!(doc["steps"][0]["ops"].as_u64() > Some(5), "{out}");
}
