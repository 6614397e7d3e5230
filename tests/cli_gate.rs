//! Runs a CI pipeline can gate on (issue 27), through the real binary: a time-boxed
//! run that ends by itself with exit 0, thresholds and their exit code 3, bad
//! expressions (exit 2, with their place), the JUnit report read back with a real
//! XML parser, the run's metadata in the summary JSON, and `paceline compare`.

mod support;

use std::time::{Duration, Instant};
use support::bin::{json, run, temp, text};

#[test]
fn a_run_with_a_duration_ends_by_itself_with_exit_0() {
    let summary = temp("duration.json");
    let s = summary.to_string_lossy().to_string();
    let begun = Instant::now();
    let out = run(&[
        "run",
        "driver=diag",
        "rate=1000",
        "duration=3s",
        "--summary-json",
        &s,
        "--report-interval",
        "1s",
    ]);
    let took = begun.elapsed();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // Wide margins: the machine is shared.
    assert!(took >= Duration::from_secs(3), "{took:?}");
    assert!(took < Duration::from_secs(20), "{took:?}");
    let doc = json(&summary);
    let a = &doc["activities"][0];
    assert_eq!(a["ended"], "ran its duration");
    // Cycles were not given: unbounded, shown as 0 requested.
    assert_eq!(a["cycles"]["requested"], 0);
    let ops = a["cycles"]["completed"].as_u64().unwrap_or(0);
    assert!((2000..=3001).contains(&ops), "{ops}");
    let stdout = text(&out.stdout);
    assert!(stdout.contains("ran its duration (3s)"), "{stdout}");
    assert!(stdout.contains("; it ran its duration"), "{stdout}");
}

#[test]
fn the_whole_run_duration_flag_ends_a_run_too() {
    let out = run(&[
        "run",
        "driver=diag",
        "rate=200",
        "cycles=1M",
        "--duration",
        "1s",
        "--report-interval",
        "1s",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("ran its duration"));
}

#[test]
fn a_failing_threshold_exits_3_naming_it_and_its_value() {
    let summary = temp("fail.json");
    let s = summary.to_string_lossy().to_string();
    let out = run(&[
        "run",
        "driver=diag",
        "latency=2ms",
        "cycles=20",
        "rate=100",
        "--threshold",
        "response.p99<1ms",
        "--threshold",
        "errors<1%",
        "--summary-json",
        &s,
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("threshold `response.p99<1ms` failed on `diag`: "),
        "{stderr}"
    );
    assert!(stderr.contains("(from --threshold #1)"), "{stderr}");
    let stdout = text(&out.stdout);
    assert!(stdout.contains("thresholds: 1 of 2 passed"), "{stdout}");
    // At least the 2 ms the op takes (more on a busy machine).
    assert!(
        stdout.contains("FAIL response.p99<1ms (diag): "),
        "{stdout}"
    );
    assert!(stdout.contains("pass errors<1% (diag): 0%"), "{stdout}");
    let doc = json(&summary);
    let t = &doc["thresholds"];
    assert_eq!(t[0]["expr"], "response.p99<1ms");
    assert_eq!(t[0]["pass"], false);
    assert!(t[0]["value"].as_u64().unwrap_or(0) >= 2_000_000, "{t}");
    assert_eq!(t[1]["pass"], true);
    assert_eq!(t[1]["value"], 0.0);
}

#[test]
fn passing_thresholds_exit_0() {
    let out = run(&[
        "run",
        "driver=diag",
        "latency=2ms",
        "cycles=20",
        "rate=100",
        "--threshold",
        "service.p50>=1ms",
        "--threshold",
        "errors<10",
        "--threshold",
        "ops==20",
        "--threshold",
        "diag:response.max<10s",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("thresholds: 4 of 4 passed"));
}

#[test]
fn a_bad_expression_exits_2_naming_it_and_its_place() {
    let out = run(&[
        "run",
        "driver=diag",
        "cycles=5",
        "--threshold",
        "errors<1%",
        "--threshold",
        "response.p98<5ms",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.starts_with(
            "paceline: --threshold #2: bad threshold `response.p98<5ms` at column 10: unknown \
             figure `p98`"
        ),
        "{stderr}"
    );
    // Nothing ran.
    assert!(text(&out.stdout).is_empty());
}

#[test]
fn a_files_thresholds_are_checked_and_a_bad_one_is_placed_in_the_file() {
    let file = temp("gated.yaml");
    std::fs::write(
        &file,
        "params: {driver: diag, cycles: 10, rate: 100}\nops: {o: x}\nthresholds:\n  - errors<1\n  - {expr: 'ops>=11'}\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let f = file.to_string_lossy().to_string();
    let out = run(&["run", &f]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains(&format!("`ops>=11` failed on `gated`: 10 (from {f})")));

    std::fs::write(
        &file,
        "params: {driver: diag}\nops: {o: x}\nthresholds:\n  - response.p99 < 5 ms\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let out = run(&["run", &f]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    // Line 4, column 5 + 16: the value `5` has no unit.
    assert!(
        stderr.contains(&format!("{f}:4:21: bad threshold `response.p99 < 5 ms`")),
        "{stderr}"
    );
}

#[test]
fn abort_on_fail_stops_the_run_at_an_interval() {
    let begun = Instant::now();
    let out = run(&[
        "run",
        "driver=diag",
        "latency=2ms",
        "rate=100",
        "cycles=100K",
        "--report-interval",
        "200ms",
        "--threshold",
        "response.p99<1ms abort_on_fail",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    // 100K cycles at 100/s would take 1000 s.
    assert!(begun.elapsed() < Duration::from_secs(60));
    assert!(text(&out.stderr).contains("with abort_on_fail: stopping the run"));
}

#[test]
fn the_junit_report_reads_back_with_an_xml_parser() {
    let junit = temp("junit.xml");
    let j = junit.to_string_lossy().to_string();
    let out = run(&[
        "run",
        "driver=diag",
        "latency=2ms",
        "cycles=10",
        "rate=100",
        "--junit",
        &j,
        "--threshold",
        "response.p99<1ms",
        "--threshold",
        "errors<1%",
    ]);
    assert_eq!(out.status.code(), Some(3));
    let xml = std::fs::read_to_string(&junit).unwrap_or_default();
    let doc = roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("{e}: {xml}"));
    let suite = doc
        .descendants()
        .find(|n| n.has_tag_name("testsuite"))
        .unwrap_or_else(|| panic!("{xml}"));
    assert_eq!(suite.attribute("tests"), Some("3"));
    assert_eq!(suite.attribute("failures"), Some("1"));
    let cases: Vec<(String, bool)> = suite
        .children()
        .filter(|n| n.has_tag_name("testcase"))
        .map(|n| {
            let failed = n.children().any(|c| c.has_tag_name("failure"));
            (n.attribute("name").unwrap_or("").to_string(), failed)
        })
        .collect();
    assert_eq!(
        cases,
        [
            ("diag".to_string(), false),
            ("response.p99<1ms (diag)".to_string(), true),
            ("errors<1% (diag)".to_string(), false),
        ]
    );
    let failure = suite
        .descendants()
        .find(|n| n.has_tag_name("failure"))
        .and_then(|n| n.attribute("message"))
        .unwrap_or("");
    assert!(
        failure.starts_with("response.p99<1ms failed: value "),
        "{failure}"
    );
    assert!(
        failure.ends_with("ms") || failure.ends_with('s'),
        "{failure}"
    );
    // The command line, with its `<` and quotes, is a property.
    let cmd = suite
        .descendants()
        .find(|n| n.attribute("name") == Some("command_line"))
        .and_then(|n| n.attribute("value"))
        .unwrap_or("");
    assert!(cmd.contains("'response.p99<1ms'"), "{cmd}");
}

#[test]
fn the_summary_json_carries_the_runs_metadata() {
    let summary = temp("meta.json");
    let s = summary.to_string_lossy().to_string();
    let out = run(&["run", "driver=diag", "cycles=5", "--summary-json", &s]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc = json(&summary);
    assert_eq!(doc["version"], env!("CARGO_PKG_VERSION"));
    for k in ["started_at", "ended_at"] {
        let t = doc[k].as_str().unwrap_or("");
        // 2026-11-27T13:40:05.123+00:00
        assert_eq!(t.len(), 29, "{k}: {t}");
        assert!(
            t.ends_with("+00:00") && t.as_bytes()[10] == b'T',
            "{k}: {t}"
        );
    }
    assert!(doc["started_at"].as_str() <= doc["ended_at"].as_str());
    let cmd = doc["command_line"].as_str().unwrap_or("");
    assert!(
        cmd.ends_with(&format!("run driver=diag cycles=5 --summary-json {s}")),
        "{cmd}"
    );
    assert!(
        doc["os"]
            .as_str()
            .is_some_and(|o| o.starts_with(std::env::consts::OS))
    );
    assert!(doc["cores"].as_u64().is_some_and(|c| c >= 1));
    assert!(doc.get("host").is_some() && doc.get("cpu_model").is_some());
    // No thresholds given: no list.
    assert!(doc.get("thresholds").is_none());
}

#[test]
fn compare_shows_two_runs_and_gates_a_significant_regression() {
    let paths: Vec<(String, String)> = ["base", "slow"]
        .iter()
        .map(|n| {
            (
                temp(&format!("{n}.json")).to_string_lossy().to_string(),
                temp(&format!("{n}.hlog")).to_string_lossy().to_string(),
            )
        })
        .collect();
    for ((json, hlog), latency) in paths.iter().zip(["1ms", "6ms"]) {
        let lat = format!("latency={latency}");
        let out = run(&[
            "run",
            "driver=diag",
            &lat,
            "threads=4",
            "rate=200",
            "cycles=300",
            "--report-interval",
            "500ms",
            "--summary-json",
            json,
            "--hdr-log",
            hlog,
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    let (a, b) = (&paths[0], &paths[1]);
    // Without the logs: the change alone.
    let out = run(&["compare", &a.0, &b.0]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let table = text(&out.stdout);
    assert!(table.contains("response.p99"), "{table}");
    assert!(table.contains("verdict"), "{table}");
    // The gate reads the service floor: a busy machine can make the 1 ms run's
    // waits (and so its responses) longer than the 6 ms run's, but no op of the
    // 6 ms run is served in under 6 ms.
    let out = run(&["compare", &a.0, &b.0, "--fail-if", "service.min>+100%"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stdout));
    assert!(text(&out.stderr).contains("--fail-if `service.min>+100%` tripped on `diag`"));
    // With the logs: a 1 ms against a 6 ms op is significant.
    let out = run(&[
        "compare",
        &a.0,
        &b.0,
        "--hdr-logs",
        &a.1,
        &b.1,
        "--fail-if",
        "service.p50>+10%",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stdout));
    let table = text(&out.stdout);
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("  service.p50") && l.ends_with("significant")),
        "{table}"
    );
    // The test of the whole distribution is printed; its verdict on these two
    // runs depends on the waits a busy machine adds to the responses (the
    // statistics are pinned by `mann_whitney_tells_a_shift_from_noise`).
    assert!(
        table.contains("response as a whole: P(an op of B takes longer than one of A) = ")
            && table.contains("Mann-Whitney p = "),
        "{table}"
    );
    // The same run against itself: nothing trips.
    let out = run(&[
        "compare",
        &a.0,
        &a.0,
        "--hdr-logs",
        &a.1,
        &a.1,
        "--fail-if",
        "service.p50>+10%",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    // Bad input: exit 2, naming the gate and its place.
    let out = run(&["compare", &a.0, &b.0, "--fail-if", "response.p99>10"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--fail-if #1: bad gate `response.p99>10` at column 14"),
        "{}",
        text(&out.stderr)
    );
    let out = run(&["compare", &a.0, &a.1]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn the_html_report_and_paceline_report_show_metadata_and_thresholds() {
    let (html, json, hlog, rebuilt) = (
        temp("gate.html"),
        temp("gate.json"),
        temp("gate.hlog"),
        temp("rebuilt.html"),
    );
    let [h, j, l, r] = [&html, &json, &hlog, &rebuilt].map(|p| p.to_string_lossy().to_string());
    let out = run(&[
        "run",
        "driver=diag",
        "cycles=20",
        "rate=100",
        "--html",
        &h,
        "--summary-json",
        &j,
        "--hdr-log",
        &l,
        "--threshold",
        "errors<1",
        "--threshold",
        "ops>100",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let out = run(&["report", &l, "--summary-json", &j, "-o", &r]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    for page in [&html, &rebuilt] {
        let p = std::fs::read_to_string(page).unwrap_or_default();
        assert!(p.contains("<th>paceline</th><td>"), "{}", page.display());
        assert!(p.contains("<th>started</th><td>20"), "{}", page.display());
        assert!(p.contains("<th>command</th><td>"), "{}", page.display());
        assert!(
            p.contains("Thresholds: 1 of 2 passed"),
            "{}",
            page.display()
        );
        assert!(
            p.contains("<code>ops&gt;100</code></td><td>diag</td><td>20</td><td>FAIL</td>"),
            "{}",
            page.display()
        );
    }
}

#[test]
fn a_duration_composes_with_a_ramp_and_cuts_a_scenarios_wait() {
    let file = temp("ramped.yaml");
    std::fs::write(
        &file,
        "params: {driver: diag, rate: 100, duration: 2s}\nops: {o: x}\nscenarios:\n  default:\n    - start\n    - ramp: {to: 400, over: 1s}\n    - await\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let summary = temp("ramped.json");
    let (f, s) = (
        file.to_string_lossy().to_string(),
        summary.to_string_lossy().to_string(),
    );
    let out = run(&["run", &f, "--summary-json", &s, "--report-interval", "1s"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc = json(&summary);
    let a = &doc["activities"][0];
    assert_eq!(a["ended"], "ran its duration");
    // 1 s ramping from 100 to 400, then 1 s at 400: 650 slots.
    let ops = a["cycles"]["completed"].as_u64().unwrap_or(0);
    assert!((450..=660).contains(&ops), "{ops}");
    // The run-wide `--duration` cuts a scenario's long wait.
    std::fs::write(
        &file,
        "params: {driver: diag, rate: 100, cycles: 1M}\nops: {o: x}\nscenarios:\n  default:\n    - start\n    - wait: 60s\n    - stop\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let begun = Instant::now();
    let out = run(&["run", &f, "--duration", "1s", "--summary-json", &s]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(begun.elapsed() < Duration::from_secs(30));
    assert_eq!(json(&summary)["activities"][0]["ended"], "ran its duration");
}
