//! One time axis for every report. Regression (session 13): the HDR log and the
//! HTML report counted from the run's origin while the console, the CSV and the
//! summary JSON counted from each activity's schedule's first slot, so the same
//! interval read `1.000` in one and `0.700` in the other. Every report now gives
//! the same number; a merge of several processes' logs still places each line at
//! its wall time.

use super::tests::{SharedBuf, info, snapshot};
use super::*;
use paceline::{Event, TimelineEntry};
use std::path::Path;
use std::time::{Duration, SystemTime};

fn ev(at: Nanos, event: Event) -> TimelineEntry {
    TimelineEntry { at, event }
}

/// The wall time of the run's origin: not a whole millisecond, so that the
/// BaseTime lines show their nanoseconds.
fn started_at() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_nanos(1_700_000_000_250_000_123)
}

/// `set_up` of each row of the CSV log (the column before `event`).
fn csv_set_up(text: &str) -> Vec<String> {
    text.lines()
        .skip(1)
        .map(|l| {
            let cols: Vec<&str> = l.split(',').collect();
            cols[cols.len() - 2].to_string()
        })
        .collect()
}

/// `(time, alias, event)` of each row of the CSV log.
fn csv_rows(text: &str) -> Vec<(String, String, String)> {
    text.lines()
        .skip(1)
        .map(|l| {
            let cols: Vec<&str> = l.split(',').collect();
            let last = cols.last().copied().unwrap_or("").trim_matches('"');
            (cols[0].to_string(), cols[1].to_string(), last.to_string())
        })
        .collect()
}

/// What the HDR log says, line by line: `(alias, BaseTime text in effect, end)`
/// of each service histogram (its end = START + LENGTH) and `(alias, BaseTime,
/// time)` of each event.
type Placed = Vec<(String, String, String)>;

fn hdr_lines(text: &str) -> (Placed, Placed) {
    let (mut intervals, mut events) = (Vec::new(), Vec::new());
    let mut base = String::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("#[BaseTime: ") {
            base = rest.split(' ').next().unwrap_or("").to_string();
        } else if let Some(rest) = line.strip_prefix("#[Event ") {
            let (at, rest) = rest.split_once(' ').unwrap_or_default();
            let alias = rest.split_once(':').unwrap_or_default().0;
            events.push((alias.to_string(), base.clone(), at.to_string()));
        } else if let Some(rest) = line.strip_prefix("Tag=") {
            let cols: Vec<&str> = rest.split(',').collect();
            let Some(alias) = cols[0].strip_suffix(".service") else {
                continue;
            };
            let ms = |s: &str| (s.parse::<f64>().unwrap_or(f64::NAN) * 1e3).round() as i64;
            let end = ms(cols[1]) + ms(cols[2]);
            let end = format!("{}.{:03}", end / 1000, end % 1000);
            intervals.push((alias.to_string(), base.clone(), end));
        }
    }
    (intervals, events)
}

/// Two activities of a scenario, each with its own first slot: `a` 300 ms
/// after the run's origin, `b` (started later) 125 ms after its own start.
/// Every report gives each interval's end and each event the same number,
/// counted from its activity's first slot.
#[test]
fn an_interval_has_the_same_time_in_every_report() {
    let origin = 1_000_000_000;
    let (console, csv, json, hdr, html) = (
        SharedBuf::default(),
        SharedBuf::default(),
        SharedBuf::default(),
        SharedBuf::default(),
        SharedBuf::default(),
    );
    let mut r = Reporter::new(origin, Console::new(Box::new(console.clone()), false))
        .csv_to(Path::new("x.csv"), Box::new(csv.clone()))
        .and_then(|r| r.hdr_log_to(Path::new("x.hlog"), Box::new(hdr.clone()), started_at()))
        .map(|r| r.summary_json_to(Path::new("x.json"), Box::new(json.clone())))
        .map(|r| r.html_to(Path::new("x.html"), Box::new(html.clone())))
        .unwrap_or_else(|e| panic!("{e}"));
    let a = ActivityInfo {
        schedule_start: Some(1_300_000_000),
        ..info("a")
    };
    let b = ActivityInfo {
        schedule_start: Some(3_125_000_000),
        ..info("b")
    };
    let a_events = [ev(1_000_000_000, Event::Started)];
    let b_events = [ev(3_000_000_000, Event::Started)];
    let a_snaps = [
        snapshot(1_300_000_000, 2_000_000_000),
        snapshot(2_000_000_000, 3_000_000_000),
        snapshot(3_000_000_000, 4_000_000_000),
    ];
    let b_snap = snapshot(3_125_000_000, 4_000_000_000);
    let report = |info, snapshot, events| ActivityReport {
        info,
        snapshot,
        events,
    };
    let ok = |r: Result<(), Failed>| r.unwrap_or_else(|e| panic!("{e}"));
    ok(r.interval(&[report(&a, &a_snaps[0], &a_events)]));
    ok(r.interval(&[report(&a, &a_snaps[1], &[])]));
    ok(r.interval(&[report(&a, &a_snaps[2], &[]), report(&b, &b_snap, &b_events)]));

    let want_rows = [
        ("-0.300", "a", "started"),
        ("0.700", "a", ""),
        ("1.700", "a", ""),
        ("-0.125", "b", "started"),
        ("2.700", "a", ""),
        ("0.875", "b", ""),
    ];
    let mut totals = a_snaps[0].clone();
    totals.merge(&a_snaps[1]);
    totals.merge(&a_snaps[2]);
    // Stopped off the millisecond grid: 2.7015 s after the first slot, which
    // every report prints as 2.701 (whole ms, as the console always did).
    let a_all = [a_events[0].clone(), ev(4_001_500_000, Event::Stopped)];
    ok(r.finish(&[report(&a, &totals, &a_all), report(&b, &b_snap, &b_events)]));
    let want_rows: Vec<(&str, &str, &str)> = want_rows
        .into_iter()
        .chain([("2.701", "a", "stopped")])
        .collect();
    // The in-process HTML report's data.
    let data = r.html_data().cloned().unwrap_or_default();

    // The CSV.
    let rows = csv_rows(&csv.text());
    let rows: Vec<(&str, &str, &str)> = rows
        .iter()
        .map(|(t, a, e)| (t.as_str(), a.as_str(), e.as_str()))
        .collect();
    assert_eq!(rows, want_rows);
    // The console.
    let firsts: Vec<String> = console
        .text()
        .lines()
        .take(7)
        .map(|l| l.split(' ').next().unwrap_or("").to_string())
        .collect();
    let times: Vec<String> = want_rows.iter().map(|r| format!("{}s", r.0)).collect();
    assert_eq!(firsts, times);
    // The summary JSON's timelines.
    let doc: serde_json::Value =
        serde_json::from_str(&json.text()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(doc["activities"][0]["timeline"][0]["at_seconds"], -0.3);
    // The JSON keeps the nanoseconds: the printed number is its first digits.
    assert_eq!(doc["activities"][0]["timeline"][1]["at_seconds"], 2.7015);
    assert_eq!(doc["activities"][1]["timeline"][0]["at_seconds"], -0.125);
    // The HDR log: each line counts from the BaseTime above it, its activity's
    // first slot in wall time to the nanosecond (origin's wall time + 0.3 s for
    // `a`, + 2.125 s for `b`), so offset + BaseTime - first slot = offset.
    let (a_base, b_base) = ("1700000000.550000123", "1700000002.375000123");
    let (intervals, events) = hdr_lines(&hdr.text());
    let at =
        |alias: &str, base: &str, t: &str| (alias.to_string(), base.to_string(), t.to_string());
    assert_eq!(
        intervals,
        [
            at("a", a_base, "0.700"),
            at("a", a_base, "1.700"),
            at("a", a_base, "2.700"),
            at("b", b_base, "0.875"),
        ]
    );
    assert_eq!(
        events,
        [
            at("a", a_base, "-0.300"),
            at("b", b_base, "-0.125"),
            at("a", a_base, "2.701")
        ]
    );
    // The HTML report's data: the same numbers, exactly.
    let ends = |d: &model::RunData, i: usize| -> Vec<f64> {
        d.activities[i].intervals.iter().map(|p| p.end).collect()
    };
    let marks = |d: &model::RunData, i: usize| -> Vec<f64> {
        d.activities[i].events.iter().map(|e| e.at).collect()
    };
    assert_eq!(ends(&data, 0), [0.7, 1.7, 2.7]);
    assert_eq!(ends(&data, 1), [0.875]);
    assert_eq!(marks(&data, 0), [-0.3, 2.701]);
    assert_eq!(marks(&data, 1), [-0.125]);
    let page = html.text();
    assert!(page.contains("<td>-0.300</td>"), "{page}");
    assert!(page.contains("<td>-0.125</td>"));
    assert!(page.contains("<td>2.701</td>"));
    assert!(page.contains("seconds from the first slot"));
    // And `paceline report` on the HDR log reads them back (to the ms the log
    // keeps).
    let read = read::parse_hdr(&hdr.text(), Path::new("x.hlog")).unwrap_or_else(|e| panic!("{e}"));
    let ms = |v: Vec<f64>| -> Vec<String> { v.iter().map(|x| format!("{x:.3}")).collect() };
    assert_eq!(ms(ends(&read, 0)), ["0.700", "1.700", "2.700"]);
    assert_eq!(ms(ends(&read, 1)), ["0.875"]);
    assert_eq!(ms(marks(&read, 0)), ["-0.300", "2.701"]);
    assert_eq!(ms(marks(&read, 1)), ["-0.125"]);
}

/// An activity whose schedule never began counts from its start (where its
/// metrics' window stays): the HDR log's BaseTime is that start, its rows the
/// CSV's.
#[test]
fn a_schedule_that_never_began_counts_from_the_activitys_start() {
    let (csv, hdr) = (SharedBuf::default(), SharedBuf::default());
    let mut r = Reporter::new(0, Console::new(Box::new(SharedBuf::default()), false))
        .csv_to(Path::new("x.csv"), Box::new(csv.clone()))
        .and_then(|r| r.hdr_log_to(Path::new("x.hlog"), Box::new(hdr.clone()), started_at()))
        .unwrap_or_else(|e| panic!("{e}"));
    // Started 2 s into the run; its window is still its start at 3.5 s.
    let i = ActivityInfo {
        schedule_start: Some(2_000_000_000),
        ..info("a")
    };
    let snap = Snapshot::empty(2_000_000_000, 3_500_000_000);
    let events = [ev(2_000_000_000, Event::Started)];
    r.interval(&[ActivityReport {
        info: &i,
        snapshot: &snap,
        events: &events,
    }])
    .unwrap_or_else(|e| panic!("{e}"));
    let rows = csv_rows(&csv.text());
    assert_eq!(rows[0].0, "0.000");
    assert_eq!(rows[1].0, "1.500");
    let (intervals, events) = hdr_lines(&hdr.text());
    let base = "1700000002.250000123".to_string();
    assert_eq!(intervals, [("a".into(), base.clone(), "1.500".into())]);
    assert_eq!(events, [("a".into(), base, "0.000".into())]);
}

/// One process's HDR log of activity `a`: its origin's wall time is
/// `started_at` + `skew_ms`, its schedule's first slot `first_ms` after its
/// origin, and it reports two 1 s intervals from there; a `started` event at its
/// origin.
fn process_log(skew_ms: u64, first_ms: u64) -> String {
    let out = SharedBuf::default();
    let wall = SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_000 + skew_ms);
    let mut log = hdr::HdrLog::new(out.clone(), 0, wall).unwrap_or_else(|e| panic!("{e}"));
    let first = first_ms * 1_000_000;
    let i = ActivityInfo {
        schedule_start: Some(first),
        ..info("a")
    };
    log.event(first, "a", &ev(0, Event::Started))
        .unwrap_or_else(|e| panic!("{e}"));
    for k in 0..2 {
        let snap = snapshot(first + k * 1_000_000_000, first + (k + 1) * 1_000_000_000);
        log.interval(&[ActivityReport {
            info: &i,
            snapshot: &snap,
            events: &[],
        }])
        .unwrap_or_else(|e| panic!("{e}"));
    }
    log.flush().unwrap_or_else(|e| panic!("{e}"));
    out.text()
}

/// Two processes' logs whose first slots differ (P's at wall +0.5 s, Q's at wall
/// +0.1 + 1.0 s): the merge places every interval and event at its wall time,
/// counted from the activity's earliest first slot (P's), and a log merged alone
/// reads as it does on its own.
#[test]
fn a_merge_of_logs_with_other_first_slots_keeps_wall_times() {
    let (p, q) = (process_log(0, 500), process_log(100, 1_000));
    let logs = [
        (Path::new("p.hlog"), p.as_str()),
        (Path::new("q.hlog"), q.as_str()),
    ];
    let (d, _) = merge::from_texts(&logs).unwrap_or_else(|e| panic!("{e}"));
    let ms = |x: f64| (x * 1e3).round() / 1e3;
    let windows: Vec<(f64, f64, u64, bool)> = d.activities[0]
        .intervals
        .iter()
        .map(|i| (ms(i.start), ms(i.end), i.ops, i.partial))
        .collect();
    // From P's first slot: P's intervals 0-1 and 1-2 s, Q's 0.6-1.6 (midpoint
    // 1.1: window 1) and 1.6-2.6 (window 2).
    assert_eq!(
        windows,
        [
            (0.0, 1.0, 1000, true),
            (1.0, 2.0, 2000, false),
            (2.0, 2.6, 1000, true)
        ]
    );
    // P started 0.5 s before its first slot; Q 0.1 s after P's origin.
    let events: Vec<f64> = d.activities[0].events.iter().map(|e| ms(e.at)).collect();
    assert_eq!(events, [-0.5, -0.4]);
    // A log merged alone reads as it does on its own.
    let (alone, _) =
        merge::from_texts(&[(Path::new("q.hlog"), q.as_str())]).unwrap_or_else(|e| panic!("{e}"));
    let own = read::parse_hdr(&q, Path::new("q.hlog")).unwrap_or_else(|e| panic!("{e}"));
    let spans = |d: &model::RunData| -> Vec<(f64, f64)> {
        d.activities[0]
            .intervals
            .iter()
            .map(|i| (ms(i.start), ms(i.end)))
            .collect()
    };
    assert_eq!(spans(&alone), spans(&own));
    assert_eq!(spans(&own), [(0.0, 1.0), (1.0, 2.0)]);
    assert_eq!(ms(own.activities[0].events[0].at), -1.0);
}

/// Rows reported before an activity's schedule began (launched at `rate=0` and
/// raised after 2.5 report intervals, or a set-up longer than the report
/// interval) counted from its start, the first slot not being known yet.
/// Regression (session 13): the CSV's time_s then went backwards (2.028 ->
/// 0.000) once the schedule began, unmarked, and the console printed times
/// that later repeated. Now the HTML report (live or from the HDR log, whose
/// BaseTime lines say which base each row used) moves them before the first
/// slot, the console prints them at once labelled `set-up +…` (since the
/// activity's start), and the CSV writes them at once as the console does,
/// marked `set_up` 1 (session 14, item 4: it held them in memory until the
/// first slot, unbounded, and wrote a never-begun activity's rows at the end,
/// after every other activity's).
#[test]
fn rows_before_the_schedule_began_go_before_its_first_slot_in_every_report() {
    let (hdr, html, csv, console) = (
        SharedBuf::default(),
        SharedBuf::default(),
        SharedBuf::default(),
        SharedBuf::default(),
    );
    let mut r = Reporter::new(0, Console::new(Box::new(console.clone()), false))
        .report_interval(Duration::from_secs(1))
        .hdr_log_to(Path::new("x.hlog"), Box::new(hdr.clone()), started_at())
        .map(|r| r.html_to(Path::new("x.html"), Box::new(html.clone())))
        .and_then(|r| r.csv_to(Path::new("x.csv"), Box::new(csv.clone())))
        .unwrap_or_else(|e| panic!("{e}"));
    let waiting = ActivityInfo {
        schedule_start: Some(0),
        schedule_begun: false,
        ..info("a")
    };
    let began = ActivityInfo {
        schedule_start: Some(2_500_000_000),
        ..info("a")
    };
    let snaps = [
        Snapshot::empty(0, 1_000_000_000),
        Snapshot::empty(1_000_000_000, 2_000_000_000),
        snapshot(2_500_000_000, 3_000_000_000),
        snapshot(3_000_000_000, 4_000_000_000),
    ];
    let started = [ev(0, Event::Started)];
    let rated = [ev(
        2_500_000_000,
        Event::Rate {
            from: 0.0,
            to: 100.0,
        },
    )];
    let ok = |r: Result<(), Failed>| r.unwrap_or_else(|e| panic!("{e}"));
    for (k, snap) in snaps.iter().enumerate() {
        let (info, events): (&ActivityInfo, &[TimelineEntry]) = match k {
            0 => (&waiting, &started),
            1 => (&waiting, &[]),
            2 => (&began, &rated),
            _ => (&began, &[]),
        };
        ok(r.interval(&[ActivityReport {
            info,
            snapshot: snap,
            events,
        }]));
        if k < 2 {
            // Written at once: the header, `started`, and a row per interval.
            assert_eq!(csv.text().lines().count(), 3 + k, "{}", csv.text());
        }
    }
    let mut totals = snaps[2].clone();
    totals.merge(&snaps[3]);
    let all = [started[0].clone(), rated[0].clone()];
    ok(r.finish(&[ActivityReport {
        info: &began,
        snapshot: &totals,
        events: &all,
    }]));
    let ms = |x: f64| (x * 1e3).round() / 1e3;
    let axis = |d: &model::RunData| {
        let a = &d.activities[0];
        let spans: Vec<(f64, f64)> = a
            .intervals
            .iter()
            .map(|i| (ms(i.start), ms(i.end)))
            .collect();
        let events: Vec<f64> = a.events.iter().map(|e| ms(e.at)).collect();
        (spans, events)
    };
    let want = (
        vec![(-2.5, -1.5), (-1.5, -0.5), (0.0, 0.5), (0.5, 1.5)],
        vec![-2.5, 0.0],
    );
    let live = r.html_data().cloned().unwrap_or_default();
    assert_eq!(axis(&live), want);
    let read = read::parse_hdr(&hdr.text(), Path::new("x.hlog")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(axis(&read), want);
    let (merged, _) = merge::from_texts(&[(Path::new("x.hlog"), hdr.text().as_str())])
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(axis(&merged).1, want.1);

    // The CSV: the set-up rows marked, their times from the activity's start
    // as on the console (less the 2.5 s of set-up: the page's); time_s never
    // decreases among the rows of one `set_up`.
    let rows = csv_rows(&csv.text());
    let times: Vec<&str> = rows.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(
        times,
        ["0.000", "1.000", "2.000", "0.000", "0.500", "1.500"]
    );
    assert_eq!(csv_set_up(&csv.text()), ["1", "1", "1", "0", "0", "0"]);
    assert_eq!(
        (rows[0].2.as_str(), rows[3].2.is_empty()),
        ("started", false)
    );
    // The console: the set-up lines printed at once, labelled, never a bare
    // time that a later line repeats.
    let heads: Vec<String> = console
        .text()
        .lines()
        .take(6)
        .map(|l| l.split_once(": ").map_or(l, |h| h.0).to_string())
        .collect();
    assert_eq!(
        heads,
        [
            "set-up +0.000s a",
            "set-up +1.000s a",
            "set-up +2.000s a",
            "0.000s a",
            "0.500s a",
            "1.500s a"
        ]
    );
}

/// A run stopped before its schedule began (launched at `rate=0`, never
/// raised): the CSV's rows are written as they come, from the activity's
/// start (its window's start, as the HDR log's BaseTime), marked set-up, and
/// every console line is labelled set-up.
#[test]
fn a_run_stopped_before_its_schedule_began_writes_its_rows_as_they_come() {
    let (csv, console) = (SharedBuf::default(), SharedBuf::default());
    let mut r = Reporter::new(0, Console::new(Box::new(console.clone()), false))
        .csv_to(Path::new("x.csv"), Box::new(csv.clone()))
        .unwrap_or_else(|e| panic!("{e}"));
    let i = ActivityInfo {
        schedule_start: Some(1_000_000_000),
        schedule_begun: false,
        ..info("a")
    };
    let snaps = [
        Snapshot::empty(1_000_000_000, 2_000_000_000),
        Snapshot::empty(2_000_000_000, 3_000_000_000),
    ];
    let started = [ev(1_000_000_000, Event::Started)];
    let ok = |r: Result<(), Failed>| r.unwrap_or_else(|e| panic!("{e}"));
    ok(r.interval(&[ActivityReport {
        info: &i,
        snapshot: &snaps[0],
        events: &started,
    }]));
    ok(r.interval(&[ActivityReport {
        info: &i,
        snapshot: &snaps[1],
        events: &[],
    }]));
    assert_eq!(csv.text().lines().count(), 4);
    let all = [started[0].clone(), ev(3_200_000_000, Event::Stopped)];
    let totals = Snapshot::empty(1_000_000_000, 3_200_000_000);
    ok(r.finish(&[ActivityReport {
        info: &i,
        snapshot: &totals,
        events: &all,
    }]));
    let rows = csv_rows(&csv.text());
    let rows: Vec<(&str, &str)> = rows.iter().map(|r| (r.0.as_str(), r.2.as_str())).collect();
    assert_eq!(
        rows,
        [
            ("0.000", "started"),
            ("1.000", ""),
            ("2.000", ""),
            ("2.200", "stopped")
        ]
    );
    assert!(csv_set_up(&csv.text()).iter().all(|s| s == "1"));
    let lines: Vec<String> = console.text().lines().take(4).map(String::from).collect();
    assert!(
        lines[0].starts_with("set-up +0.000s a: started"),
        "{lines:?}"
    );
    assert!(lines[1].starts_with("set-up +1.000s a: 0 ops"), "{lines:?}");
    assert!(lines[2].starts_with("set-up +2.000s a: 0 ops"), "{lines:?}");
    assert!(
        lines[3].starts_with("set-up +2.200s a: stopped"),
        "{lines:?}"
    );
}

/// An activity with no interval reported (it ran less than one report
/// interval) has its events written at the end: they count from the first slot
/// its totals know, as in the JSON, not from the run's origin.
#[test]
fn events_written_at_the_end_count_from_the_first_slot() {
    let (csv, json) = (SharedBuf::default(), SharedBuf::default());
    let mut r = Reporter::new(0, Console::new(Box::new(SharedBuf::default()), false))
        .csv_to(Path::new("x.csv"), Box::new(csv.clone()))
        .map(|r| r.summary_json_to(Path::new("x.json"), Box::new(json.clone())))
        .unwrap_or_else(|e| panic!("{e}"));
    let i = ActivityInfo {
        schedule_start: Some(300_000_000),
        ..info("a")
    };
    let snap = snapshot(300_000_000, 800_000_000);
    r.finish(&[ActivityReport {
        info: &i,
        snapshot: &snap,
        events: &[ev(0, Event::Started), ev(800_000_000, Event::Stopped)],
    }])
    .unwrap_or_else(|e| panic!("{e}"));
    let times: Vec<String> = csv_rows(&csv.text()).into_iter().map(|r| r.0).collect();
    assert_eq!(times, ["-0.300", "0.500"]);
    let doc: serde_json::Value =
        serde_json::from_str(&json.text()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(doc["activities"][0]["timeline"][0]["at_seconds"], -0.3);
}

/// Session 14, item 4: an activity in set-up beside one that runs. Its rows
/// go out as its intervals end, in time order with the other's, nothing held
/// in memory: the CSV held them until the first slot, and wrote a never-begun
/// activity's rows at the end, after every other activity's.
#[test]
fn set_up_rows_go_out_in_time_order_with_the_other_activities_rows() {
    let csv = SharedBuf::default();
    let mut r = Reporter::new(0, Console::new(Box::new(SharedBuf::default()), false))
        .report_interval(Duration::from_secs(1))
        .csv_to(Path::new("x.csv"), Box::new(csv.clone()))
        .unwrap_or_else(|e| panic!("{e}"));
    let waiting = ActivityInfo {
        schedule_start: Some(0),
        schedule_begun: false,
        ..info("a")
    };
    let running = ActivityInfo {
        schedule_start: Some(0),
        ..info("b")
    };
    let ok = |r: Result<(), Failed>| r.unwrap_or_else(|e| panic!("{e}"));
    for k in 1..=3u64 {
        let (sa, sb) = (
            Snapshot::empty((k - 1) * SEC, k * SEC),
            snapshot((k - 1) * SEC, k * SEC),
        );
        ok(r.interval(&[
            ActivityReport {
                info: &waiting,
                snapshot: &sa,
                events: &[],
            },
            ActivityReport {
                info: &running,
                snapshot: &sb,
                events: &[],
            },
        ]));
        assert_eq!(csv.text().lines().count(), 1 + 2 * k as usize);
    }
    let (ta, tb) = (Snapshot::empty(0, 3 * SEC), snapshot(0, 3 * SEC));
    ok(r.finish(&[
        ActivityReport {
            info: &waiting,
            snapshot: &ta,
            events: &[],
        },
        ActivityReport {
            info: &running,
            snapshot: &tb,
            events: &[],
        },
    ]));
    let rows = csv_rows(&csv.text());
    let order: Vec<(&str, &str)> = rows.iter().map(|r| (r.0.as_str(), r.1.as_str())).collect();
    assert_eq!(
        order,
        [
            ("1.000", "a"),
            ("1.000", "b"),
            ("2.000", "a"),
            ("2.000", "b"),
            ("3.000", "a"),
            ("3.000", "b")
        ]
    );
    assert_eq!(csv_set_up(&csv.text()), ["1", "0", "1", "0", "1", "0"]);
}

const SEC: u64 = 1_000_000_000;
