//! `concurrency` through the binary: bad values and drivers without an async
//! runner exit 2 with the place and the fix; a short real run of `diag` on the
//! async runner reports its in-flight figures (wall clock, tolerant).

#[path = "support/bin.rs"]
mod bin;

#[path = "support/endpoint.rs"]
mod endpoint;

use bin::Killed as Child;
use bin::code_and_text as paceline;
use serde_json::Value;

#[test]
fn bad_concurrency_exits_2_with_the_fix() {
    let (code, text) = paceline(&["run", "driver=diag", "concurrency=0"]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("`concurrency` must be a whole number from 1 to 1048576"),
        "{text}"
    );
    let (code, text) = paceline(&["run", "driver=diag", "threads=4", "concurrency=2"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("concurrency 2 is below threads=4"), "{text}");
    let (code, text) = paceline(&["run", "driver=stdout", "concurrency=10", "cycles=1"]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("driver `stdout` has no async runner") && text.contains("drop concurrency="),
        "{text}"
    );
    let (code, text) = paceline(&["run", "driver=diag", "latency_mode=spin", "concurrency=10"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("`spin` and `hang` hold the thread"), "{text}");
}

#[test]
fn diag_on_the_async_runner_holds_its_ops_in_flight_and_reports_them() {
    let json = std::env::temp_dir().join(format!("paceline-conc-{}.json", std::process::id()));
    // 1000/s of 20 ms ops: 20 in flight on average on 2 threads.
    let (code, text) = paceline(&[
        "run",
        "driver=diag",
        "latency=20ms",
        "rate=1000",
        "concurrency=100",
        "threads=2",
        "cycles=1500",
        "--summary-json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("in flight: at most"), "{text}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let a = &v["activities"][0];
    assert_eq!(a["cycles"]["completed"], 1500, "{a}");
    assert_eq!(a["in_flight"]["concurrency"], 100, "{a}");
    let max = a["in_flight"]["max"].as_u64().unwrap();
    // At least the 20 the rate needs; never past the cap.
    assert!((15..=100).contains(&max), "{a}");
    // Every op sleeps its 20 ms on the engine's timer, not a thread: none ends early.
    assert!(
        a["service_ns"]["min"].as_u64().unwrap() >= 19_900_000,
        "{a}"
    );
    let _ = std::fs::remove_file(json);
}

/// Issue 21: `--stop-timeout` and the engine's stop grace were two settings,
/// each 10 s by default, so a run told to stop within 1 s gave up on its ops in
/// flight ("did not stop within") and lost them from the counts. The grace now
/// comes from the timeout: the ops are cancelled and counted, and the process
/// exits within the timeout.
#[test]
fn the_stop_timeout_cancels_ops_in_flight_and_counts_them() {
    let json = std::env::temp_dir().join(format!("paceline-grace-{}.json", std::process::id()));
    let t0 = std::time::Instant::now();
    let (code, text) = paceline(&[
        "run",
        "driver=diag",
        "latency=1h",
        "concurrency=4",
        "threads=1",
        "cycles=4",
        "--duration",
        "1s",
        // 3 s, not 1 s: a busy machine's stall of over a second inside a 1 s
        // grace made the cancellation itself late. The old bug (the engine's
        // own 10 s grace) still loses the ops at 3 s.
        "--stop-timeout",
        "3s",
        "--no-progress",
        "--summary-json",
        json.to_str().unwrap(),
    ]);
    let took = t0.elapsed();
    assert!(!text.contains("did not stop within"), "{text}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let a = &v["activities"][0];
    assert_eq!(a["errors_by_kind"]["cancelled"], 4, "{code} {a}\n{text}");
    // The duration, then at most the stop timeout; a loaded machine adds start-up.
    assert!(took < std::time::Duration::from_secs(15), "{took:?}");
    let _ = std::fs::remove_file(json);
}

/// A rate as the console prints it (`834`, `1.00K`), in ops per second.
fn printed_rate(s: &str) -> f64 {
    let (num, scale) = match s.strip_suffix('K') {
        Some(n) => (n, 1e3),
        None => (s, 1.0),
    };
    num.parse::<f64>().unwrap_or_else(|e| panic!("{s:?}: {e}")) * scale
}

/// Regression (session 14, found by the lead): `driver=diag latency=200ms
/// rate=1000 cycles=1000 concurrency=400 threads=2` printed "1000 of 1000
/// cycles in 1.199s, 834/s of 1.00K/s" and "concurrency needed 167.02 of 400"
/// though every op started at its slot: the rate counted the last ops' 200 ms
/// (the drain after the last start) as if the schedule had slowed. The achieved
/// rate is the start rate over the schedule: within 1 % of the target, unless
/// the generator really started ops late (then by no more than its latest
/// start's lateness), and "concurrency needed" is rate x 200 ms.
#[test]
fn regression_the_drain_after_the_last_start_is_no_shortfall_of_the_rate() {
    let json = std::env::temp_dir().join(format!("paceline-drain-{}.json", std::process::id()));
    let (code, text) = paceline(&[
        "run",
        "driver=diag",
        "latency=200ms",
        "rate=1000",
        "cycles=1000",
        "concurrency=400",
        "threads=2",
        "--summary-json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{text}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(json);
    let a = &v["activities"][0];
    // A busy machine may start ops late: the last start is at most the
    // latest wait after its slot, 999 ms in.
    let late = a["wait_ns"]["max"].as_f64().unwrap() / 1e9;
    let floor = 990.0_f64.min(999.0 / (0.999 + late)) * 0.999;
    // The printed line: "1000 of 1000 cycles in 1.2s, 1.00K/s of 1.00K/s".
    let line = text
        .lines()
        .find(|l| l.contains("1000 of 1000 cycles in "))
        .unwrap_or_else(|| panic!("no summary line: {text}"));
    let shown = line
        .split("s, ")
        .nth(1)
        .and_then(|r| r.split("/s of ").next())
        .unwrap_or_else(|| panic!("no rate in {line:?}"));
    let printed = printed_rate(shown);
    assert!(printed >= floor, "{line} (floor {floor:.1}/s)\n{text}");
    assert!(printed <= 1000.0, "{line}");
    let achieved = a["rate"]["achieved"].as_f64().unwrap();
    assert!((floor..=1000.0).contains(&achieved), "{a}");
    // The completions over the run's time keep the drain: 1000 / ~1.2 s.
    let completed = a["rate"]["completed"].as_f64().unwrap();
    assert!(completed < 0.9 * achieved, "{a}");
    // Little's law on the start rate: about 1000/s x 200 ms = 200.
    let needed: f64 = text
        .split("concurrency needed ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no concurrency needed: {text}"));
    assert!(needed >= 0.2 * floor, "{needed}\n{text}");
}

/// `concurrency` above the engine's cap through the binary: exit 2, the
/// place (the command line's pair) and the fix, and nothing runs.
#[test]
fn concurrency_above_the_cap_exits_2_with_the_place_and_the_fix() {
    let (code, text) = paceline(&["run", "driver=diag", "cycles=1", "concurrency=1048577"]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("`concurrency` must be a whole number from 1 to 1048576"),
        "{text}"
    );
    // The place: the command line's third pair.
    assert!(text.contains("param 3: "), "{text}");
    assert!(!text.contains("panicked"), "{text}");
    assert!(!text.contains("1 of 1 cycles"), "{text}");
    // The cap itself runs.
    let (code, text) = paceline(&[
        "run",
        "driver=diag",
        "cycles=1",
        "concurrency=1048576",
        "--no-progress",
    ]);
    assert_eq!(code, 0, "{text}");
}

/// Audit gap 7: the figures of a run whose cap is full most of the time (40/s
/// of 100 ms ops need 4 in flight; the cap is 2) beside one whose cap never
/// fills, in a CSV row, the console's interval line and the summary JSON.
///
/// The ops last 100 ms so that the generator's own gap between an op's end and
/// the next start, a few ms on a loaded machine with a debug build, leaves the
/// cap full well over 80 % of each interval (with 20 ms ops it was 78-90 %).
/// Each run lasts 3 s (12 intervals), so that a stall of a second or two,
/// which the reporter folds into one interval, still leaves the four whole
/// intervals the checks below read.
///
/// The uncapped run's cap is 1000, so that only a stall of 25 s (1000 slots of
/// 40/s caught up at once) could fill it: no upper bound below the cap is
/// asserted on its most in flight, which a busy machine's catch-up burst
/// breaks (review 1, 1.1); `max < cap` and a share of about 0 pin that the cap
/// never filled.
#[test]
fn the_in_flight_figures_of_each_interval_and_the_summary_are_the_runs() {
    for (cap, full) in [(2u64, true), (1000, false)] {
        let csv = bin::temp(&format!("inflight-{cap}.csv"));
        let json = bin::temp(&format!("inflight-{cap}.json"));
        let out = bin::run(&[
            "run",
            "driver=diag",
            "alias=flight",
            "latency=100ms",
            "rate=40",
            &format!("concurrency={cap}"),
            "threads=1",
            "duration=3s",
            "--report-interval",
            "250ms",
            "--no-progress",
            "--csv",
            csv.to_str().unwrap(),
            "--summary-json",
            json.to_str().unwrap(),
        ]);
        let stdout = bin::text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{}", bin::text(&out.stderr));
        // The console's interval lines: the most in flight of the cap, and the
        // share of the interval at the cap.
        let lines: Vec<&str> = stdout
            .lines()
            .filter(|l| l.contains(" | in flight max "))
            .collect();
        assert!(lines.len() >= 3, "{stdout}");
        for l in &lines {
            let (_, rest) = l.split_once(" | in flight max ").unwrap();
            let (max, rest) = rest.split_once(" of ").unwrap();
            let max: u64 = max.parse().unwrap_or_else(|_| panic!("{l}"));
            assert!(rest.starts_with(&format!("{cap}, at cap ")), "{l}");
            let pct: f64 = rest
                .split_once(", at cap ")
                .unwrap()
                .1
                .split('%')
                .next()
                .unwrap()
                .parse()
                .unwrap_or_else(|_| panic!("{l}"));
            assert!(max <= cap, "{l}");
            if full {
                assert_eq!(max, 2, "{l}");
            } else {
                assert!(max >= 1 && max < cap, "{l}");
                assert!(pct < 1.0, "{l}");
            }
        }
        if full {
            // Past the first interval the cap is full nearly all the time.
            assert!(
                lines[1..]
                    .iter()
                    .any(|l| l.contains(", at cap 9") || l.contains(", at cap 100%")),
                "{stdout}"
            );
        }

        // Each CSV row carries the same figures, by its header's columns.
        let text = std::fs::read_to_string(&csv).unwrap();
        let (header, rows) = bin::csv_table(&text);
        let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
        let (max_col, cap_col, share_col) = (
            col("in_flight_max"),
            col("concurrency"),
            col("cap_full_share"),
        );
        // The whole intervals' rows (not the events', nor the last partial one).
        let partial_col = col("partial");
        let rows: Vec<Vec<&str>> = rows.into_iter().filter(|r| r[partial_col] == "0").collect();
        assert!(rows.len() >= 4, "{text}");
        let mut shares = Vec::new();
        for r in &rows {
            assert_eq!(r[cap_col], cap.to_string(), "{text}");
            let max: u64 = r[max_col].parse().unwrap_or_else(|_| panic!("{text}"));
            assert!(max >= 1 && max <= cap, "{text}");
            let share: f64 = r[share_col].parse().unwrap_or_else(|_| panic!("{text}"));
            assert!((0.0..=1.0).contains(&share), "{text}");
            shares.push(share);
        }
        // Past the first interval, whose share counts the set-up.
        let last = shares[1..].iter().cloned();
        if full {
            assert!(last.clone().all(|s| s > 0.8), "{shares:?}\n{text}");
        } else {
            assert!(last.clone().all(|s| s < 0.01), "{shares:?}\n{text}");
        }

        // The summary JSON: the cap, the most in flight and the share.
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let f = &v["activities"][0]["in_flight"];
        assert_eq!(f["concurrency"], cap, "{f}");
        let max = f["max"].as_u64().unwrap();
        let share = f["cap_full_share"].as_f64().unwrap();
        if full {
            assert_eq!(max, 2, "{f}");
            assert!(share > 0.8, "{f}");
        } else {
            assert!(max >= 2 && max < cap, "{f}");
            assert!(share < 0.01, "{f}");
        }
        let _ = std::fs::remove_file(csv);
        let _ = std::fs::remove_file(json);
    }
}

/// Audit gap 6: `PUT /activities/{alias}/concurrency` on a running async
/// activity changes its cap (the status, the CSV's rows and event, and the
/// summary show the new one); a bad value gets 400 with the fix and changes
/// nothing; an activity on the sync runner gets 400 saying what to change.
#[test]
fn a_control_request_changes_the_concurrency_and_bad_ones_are_refused_with_the_fix() {
    use std::time::{Duration, Instant};
    let csv = bin::temp("control-concurrency.csv");
    let json = bin::temp("control-concurrency.json");
    let child = endpoint::spawn_control(bin::bin().args([
        "run",
        "driver=diag",
        "alias=capped",
        "latency=20ms",
        "rate=500",
        "concurrency=100",
        "threads=2",
        "cycles=1M",
        "--report-interval",
        "200ms",
        "--no-progress",
        "--csv",
        csv.to_str().unwrap(),
        "--summary-json",
        json.to_str().unwrap(),
    ]));
    let mut child = Child(child);
    let (port, mut stderr) = endpoint::bound_port(&mut child.0, "control endpoint");
    let put = |body: &str| endpoint::request(port, "PUT", "/activities/capped/concurrency", body);
    // The endpoint is up before the activity starts: wait (past the 404 of an
    // alias not known yet) until an interval has been reported, so that the
    // CSV holds a row before the change (review 1, 1.3: a fixed sleep lost
    // that race on a busy machine).
    let t0 = Instant::now();
    loop {
        let (status, _, body) = endpoint::request(port, "GET", "/activities/capped", "");
        if status == 200 {
            let v: Value = serde_json::from_str(&body).unwrap_or_default();
            if !v["current_interval"].is_null() {
                assert_eq!(
                    v["current_interval"]["in_flight"]["concurrency"], 100,
                    "{body}"
                );
                break;
            }
        } else {
            assert_eq!(status, 404, "{body}");
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "{status}: {body}");
        std::thread::sleep(Duration::from_millis(50));
    }

    let (status, _, body) = put("2000");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body.trim(), "capped: concurrency set to 2000");
    for (bad, says) in [
        ("0", "concurrency must be at least 1"),
        (
            "x",
            "`x` is not a concurrency: send the most ops in flight as a positive whole number",
        ),
        ("-3", "`-3` is not a concurrency"),
        ("1", "concurrency 1 is below threads=2"),
        ("1048577", "concurrency 1048577 is above the cap, 1048576"),
    ] {
        let (status, _, body) = put(bad);
        assert_eq!(status, 400, "{bad}: {body}");
        assert!(body.contains(says), "{bad}: {body}");
    }
    let (status, _, body) = endpoint::request(port, "PUT", "/activities/nope/concurrency", "8");
    assert_eq!(status, 404, "{body}");

    // The status's latest interval shows the new cap (once an interval after
    // the change was reported).
    let t0 = Instant::now();
    loop {
        let (status, _, body) = endpoint::request(port, "GET", "/activities/capped", "");
        assert_eq!(status, 200, "{body}");
        let v: Value = serde_json::from_str(&body).unwrap_or_default();
        if v["current_interval"]["in_flight"]["concurrency"] == 2000 {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "{body}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let (status, _, body) = endpoint::request(port, "POST", "/activities/capped/stop", "");
    assert_eq!(status, 200, "{body}");
    let t0 = Instant::now();
    let code = loop {
        if let Some(s) = child.0.try_wait().unwrap() {
            break s.code();
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "did not stop");
        std::thread::sleep(Duration::from_millis(50));
    };
    let err = stderr.text();
    assert_eq!(code, Some(0), "{err}");

    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["activities"][0]["in_flight"]["concurrency"], 2000, "{v}");
    let text = std::fs::read_to_string(&csv).unwrap();
    let (header, rows) = bin::csv_table(&text);
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (cap_col, event_col) = (col("concurrency"), col("event"));
    let change = rows
        .iter()
        .position(|r| r[event_col].contains("concurrency 100 -> 2000"))
        .unwrap_or_else(|| panic!("no concurrency event in\n{text}"));
    // Only the one change: the refused requests left no event.
    assert_eq!(
        rows.iter()
            .filter(|r| r[event_col].contains("concurrency"))
            .count(),
        1,
        "{text}"
    );
    // The intervals' rows (not the events') before and after the change.
    let caps = |rows: &[Vec<&str>]| -> Vec<String> {
        rows.iter()
            .filter(|r| r[event_col].is_empty())
            .map(|r| r[cap_col].to_string())
            .collect()
    };
    let (before, after) = (caps(&rows[..change]), caps(&rows[change + 1..]));
    assert!(
        !before.is_empty() && before.iter().all(|c| c == "100"),
        "{text}"
    );
    // The reporter takes an interval's snapshot, then its events: a change
    // that lands between the two is filed in that interval while its row
    // still shows the old cap, and CSV writes the events before their
    // interval's row (review 1, 1.4). So the first row after the event may
    // show either cap; every later one shows the new one, and the status
    // showed it before the stop, so the last row does.
    assert!(
        after.last().is_some_and(|c| c == "2000")
            && (after[0] == "100" || after[0] == "2000")
            && after[1..].iter().all(|c| c == "2000"),
        "{text}"
    );
    let _ = std::fs::remove_file(csv);
    let _ = std::fs::remove_file(json);

    // On the sync runner: refused, with what to change instead.
    let child = endpoint::spawn_control(bin::bin().args([
        "run",
        "driver=diag",
        "alias=onethread",
        "rate=100",
        "cycles=1M",
        "--report-interval",
        "200ms",
        "--no-progress",
    ]));
    let mut child = Child(child);
    let (port, _stderr) = endpoint::bound_port(&mut child.0, "control endpoint");
    let t0 = Instant::now();
    loop {
        let (status, _, body) =
            endpoint::request(port, "PUT", "/activities/onethread/concurrency", "8");
        // Before the activity has started its alias is not known yet.
        if status == 404 && t0.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        }
        assert_eq!(status, 400, "{body}");
        assert!(
            body.contains("activity `onethread` runs one op per thread")
                && body.contains("change threads instead"),
            "{body}"
        );
        break;
    }
    // The status's interval of a sync activity has no in-flight figures
    // (review 1, section 4).
    let t0 = Instant::now();
    loop {
        let (status, _, body) = endpoint::request(port, "GET", "/activities/onethread", "");
        assert_eq!(status, 200, "{body}");
        let v: Value = serde_json::from_str(&body).unwrap_or_default();
        let interval = &v["current_interval"];
        if !interval.is_null() {
            assert!(
                interval.get("in_flight").is_some_and(Value::is_null),
                "{body}"
            );
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(30), "{body}");
        std::thread::sleep(Duration::from_millis(50));
    }
}
