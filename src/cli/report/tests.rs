//! Shared test helpers (an activity, a snapshot, a readable writer) and the
//! reporter's own tests.

use super::*;
use paceline::Nanos;
use paceline::{Event, Metrics};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// An activity `alias` on the diag driver: 4 threads, 100 000 cycles at 10 000/s,
/// strictness 1.1.
pub fn info(alias: &str) -> ActivityInfo {
    ActivityInfo {
        alias: alias.to_string(),
        driver: "diag".to_string(),
        threads: 4,
        cycles_requested: 100_000,
        target_rate: Some(10_000.0),
        mean_target: None,
        strictness: Some(1.1),
        per_thread: false,
        driver_stats: None,
        first_errors: Vec::new(),
        verdict: None,
        #[cfg(feature = "redis")]
        coordinated: None,
        ended: None,
        schedule_start: None,
        schedule_begun: true,
    }
}

/// A snapshot from `start` to `end`: 1000 ops with service i µs and wait i×10 ns
/// for i in 1..=1000, errors timeout ×2 and refused ×1, 1 retry, 2 missed slots.
pub fn snapshot(start: Nanos, end: Nanos) -> Snapshot {
    let metrics = Metrics::new(start);
    let mut rec = metrics.recorder();
    for i in 1..=1000 {
        rec.record(i * 10, i * 1000);
    }
    rec.error_named("timeout");
    rec.error_named("timeout");
    rec.error_named("refused");
    rec.retry();
    rec.missed(2);
    metrics.snapshot(end)
}

/// A paced snapshot from `start` to `end` whose waits are split: 1000 ops with
/// queue i ns, dispatch 2 × (1001 - i) ns and service 10 ns for i in 1..=1000.
/// Every value is below 2048, so every figure is exact: queue p50 500, p99 990,
/// p99.9 999, max 1000; dispatch 1000, 1980, 1998, 2000; wait (1002..=2001)
/// 1501, 1991, 2000, 2001; response (wait + 10) 1511, 2001, 2010, 2011.
pub fn split_snapshot(start: Nanos, end: Nanos) -> Snapshot {
    let metrics = Metrics::new(start);
    let mut rec = metrics.recorder();
    for i in 1..=1000 {
        rec.record_split(i, 2 * (1001 - i), 10);
    }
    metrics.snapshot(end)
}

/// A writer whose bytes the test can read afterwards.
#[derive(Clone, Default)]
pub struct SharedBuf(Arc<Mutex<Vec<u8>>>);

impl SharedBuf {
    pub fn text(&self) -> String {
        let bytes = self.0.lock().map(|b| b.clone()).unwrap_or_default();
        String::from_utf8(bytes).unwrap_or_default()
    }
}

impl Write for SharedBuf {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Ok(mut b) = self.0.lock() {
            b.extend_from_slice(buf);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn ev(at: Nanos, event: Event) -> TimelineEntry {
    TimelineEntry { at, event }
}

#[test]
fn a_missing_directory_is_a_create_error_that_names_the_file() {
    let opts = ReportOptions {
        csv: Some(PathBuf::from("/nonexistent-dir-paceline/x.csv")),
        progress: Some(false),
        ..ReportOptions::default()
    };
    let err = Reporter::open(&opts, 0, SystemTime::now())
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.starts_with("cannot create report file /nonexistent-dir-paceline/x.csv: "),
        "{err}"
    );
    assert!(err.ends_with("or pass another path)"), "{err}");
}

#[test]
fn the_reporter_keeps_every_output_in_time_order() {
    let (console, csv, hdr, json) = (
        SharedBuf::default(),
        SharedBuf::default(),
        SharedBuf::default(),
        SharedBuf::default(),
    );
    let origin = 1_000_000_000;
    let mut r = Reporter::new(origin, Console::new(Box::new(console.clone()), false))
        .progress_enabled(true)
        .csv_to(Path::new("x.csv"), Box::new(csv.clone()))
        .and_then(|r| {
            r.hdr_log_to(
                Path::new("x.hlog"),
                Box::new(hdr.clone()),
                SystemTime::UNIX_EPOCH,
            )
        })
        .map(|r| r.summary_json_to(Path::new("x.json"), Box::new(json.clone())))
        .unwrap_or_else(|e| panic!("{e}"));

    let i = info("a");
    let first = snapshot(origin, 2_000_000_000);
    // The second event happened after the first interval's end: it waits.
    let events = [
        ev(origin, Event::Started),
        ev(2_500_000_000, Event::Threads { from: 4, to: 8 }),
    ];
    r.interval(&[ActivityReport {
        info: &i,
        snapshot: &first,
        events: &events,
    }])
    .unwrap_or_else(|e| panic!("{e}"));
    r.progress(&[(&i, Progress::from_snapshots(&first, &first))])
        .unwrap_or_else(|e| panic!("{e}"));
    let second = snapshot(2_000_000_000, 3_000_000_000);
    r.interval(&[ActivityReport {
        info: &i,
        snapshot: &second,
        events: &[],
    }])
    .unwrap_or_else(|e| panic!("{e}"));
    let mut totals = first.clone();
    totals.merge(&second);
    let all = [
        events[0].clone(),
        events[1].clone(),
        ev(3_000_000_000, Event::Stopped),
    ];
    r.finish(&[ActivityReport {
        info: &i,
        snapshot: &totals,
        events: &all,
    }])
    .unwrap_or_else(|e| panic!("{e}"));

    let text = console.text();
    let firsts: Vec<&str> = text
        .lines()
        .map(|l| l.split(" |").next().unwrap_or(""))
        .collect();
    assert_eq!(
        &firsts[..7],
        &[
            "0.000s a: started",
            "1.000s a: 1000 ops 1.00K/s",
            "a 1000/100000 (1%) 1.00K/s of 10.0K/s",
            "1.500s a: threads 4 -> 8",
            "2.000s a: 1000 ops 1.00K/s",
            "2.000s a: stopped",
            "a (diag, 4 threads): 2000 of 100000 cycles in 2.000s, 1.00K/s of 10.0K/s (strictness 1.1)",
        ]
    );

    let csv_rows: Vec<String> = csv
        .text()
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            format!("{} {} {}", f[0], f[2], f[f.len() - 1])
        })
        .collect();
    assert_eq!(
        csv_rows,
        [
            "0.000  started",
            "1.000 1000 ",
            "1.500  threads 4 -> 8",
            "2.000 1000 ",
            "2.000  stopped"
        ]
    );

    let hdr_text = hdr.text();
    let hdr_lines: Vec<String> = hdr_text
        .lines()
        .skip(6)
        .map(|l| l.split(",HIST").next().unwrap_or("").to_string())
        .collect();
    assert_eq!(
        hdr_lines,
        [
            "#[Event 0.000 a: started]",
            "#[Target a: 10000]",
            "Tag=a.service,0.000,1.000,1000447.000",
            "Tag=a.wait,0.000,1.000,10007.000",
            "Tag=a.response,0.000,1.000,1010175.000",
            "Tag=a.queue,0.000,1.000,0.000",
            "Tag=a.dispatch,0.000,1.000,0.000",
            "#[Event 1.500 a: threads 4 -> 8]",
            "#[Target a: 10000]",
            "Tag=a.service,1.000,1.000,1000447.000",
            "Tag=a.wait,1.000,1.000,10007.000",
            "Tag=a.response,1.000,1.000,1010175.000",
            "Tag=a.queue,1.000,1.000,0.000",
            "Tag=a.dispatch,1.000,1.000,0.000",
            "#[Event 2.000 a: stopped]",
        ]
    );

    let doc: serde_json::Value =
        serde_json::from_str(&json.text()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(doc["activities"][0]["cycles"]["completed"], 2000);
    assert_eq!(
        doc["activities"][0]["timeline"][2],
        serde_json::json!({"at_seconds": 2.0, "event": "stopped"})
    );
}

/// Regression (session 12): interval lines were labelled from the run's origin while
/// their rates count from the schedule's first slot, so after 300 ms of set-up the
/// first line read "1.000s" over 0.7 s of ops. Every label counts from the first
/// slot: interval lines, the verdict, events (set-up before it is negative), the
/// CSV rows and the JSON timeline.
#[test]
fn interval_labels_count_from_the_schedules_first_slot() {
    let (console, csv, json) = (
        SharedBuf::default(),
        SharedBuf::default(),
        SharedBuf::default(),
    );
    let mut r = Reporter::new(0, Console::new(Box::new(console.clone()), false))
        .csv_to(Path::new("x.csv"), Box::new(csv.clone()))
        .map(|r| r.summary_json_to(Path::new("x.json"), Box::new(json.clone())))
        .unwrap_or_else(|e| panic!("{e}"));
    let i = ActivityInfo {
        schedule_start: Some(300_000_000),
        ..info("a")
    };
    let first = snapshot(300_000_000, 1_000_000_000);
    let events = [ev(0, Event::Started)];
    r.interval(&[ActivityReport {
        info: &i,
        snapshot: &first,
        events: &events,
    }])
    .unwrap_or_else(|e| panic!("{e}"));
    let second = snapshot(1_000_000_000, 2_000_000_000);
    r.interval(&[ActivityReport {
        info: &i,
        snapshot: &second,
        events: &[],
    }])
    .unwrap_or_else(|e| panic!("{e}"));
    let mut totals = first.clone();
    totals.merge(&second);
    r.finish(&[ActivityReport {
        info: &i,
        snapshot: &totals,
        events: &events,
    }])
    .unwrap_or_else(|e| panic!("{e}"));
    let text = console.text();
    let firsts: Vec<&str> = text
        .lines()
        .map(|l| l.split(" |").next().unwrap_or(""))
        .collect();
    assert_eq!(
        &firsts[..3],
        &[
            "-0.300s a: started",
            "0.700s a: 1000 ops 1.43K/s",
            "1.700s a: 1000 ops 1.00K/s",
        ]
    );
    let rows: Vec<String> = csv
        .text()
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap_or("").to_string())
        .collect();
    assert_eq!(rows, ["-0.300", "0.700", "1.700"]);
    let doc: serde_json::Value =
        serde_json::from_str(&json.text()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        doc["activities"][0]["timeline"][0],
        serde_json::json!({"at_seconds": -0.3, "event": "started"})
    );
}

/// Regression (issue 24, item 14): a scenario's activity that ended since the
/// last report (`warmup`, at 10.052 s) came after one still running (`main`,
/// at 15.069 s), on the console and in the CSV log. Rows go in time order, each
/// after the events up to its end.
#[test]
fn rows_of_one_report_go_in_time_order_across_activities() {
    let (console, csv) = (SharedBuf::default(), SharedBuf::default());
    let mut r = Reporter::new(0, Console::new(Box::new(console.clone()), false))
        .csv_to(Path::new("x.csv"), Box::new(csv.clone()))
        .unwrap_or_else(|e| panic!("{e}"));
    let (main, warmup) = (info("main"), info("warmup"));
    let main_snap = snapshot(10_000_000_000, 15_069_000_000);
    let warmup_snap = snapshot(5_000_000_000, 10_052_000_000);
    let main_events = [ev(12_000_000_000, Event::Threads { from: 4, to: 8 })];
    r.interval(&[
        ActivityReport {
            info: &main,
            snapshot: &main_snap,
            events: &main_events,
        },
        ActivityReport {
            info: &warmup,
            snapshot: &warmup_snap,
            events: &[],
        },
    ])
    .unwrap_or_else(|e| panic!("{e}"));
    let firsts: Vec<String> = console
        .text()
        .lines()
        .map(|l| l.split(':').next().unwrap_or("").to_string())
        .collect();
    assert_eq!(firsts, ["10.052s warmup", "12.000s main", "15.069s main"]);
    let rows: Vec<String> = csv
        .text()
        .lines()
        .skip(1)
        .map(|l| l.split(',').take(2).collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(rows, ["10.052 warmup", "12.000 main", "15.069 main"]);
}

/// Regression (issue 24, item 4): a last interval of a few ms was reported as a
/// whole one (`2 ops 100/s ... p99 21.4ms`) on the console, in the CSV and HDR
/// logs and in the plots. It is marked partial everywhere, with its counts but
/// no rate, percentiles or verdict line; its ops stay in every file.
#[test]
fn a_tail_interval_of_a_few_ms_is_partial_in_every_report() {
    let (console, csv, hdr, html) = (
        SharedBuf::default(),
        SharedBuf::default(),
        SharedBuf::default(),
        SharedBuf::default(),
    );
    let mut r = Reporter::new(0, Console::new(Box::new(console.clone()), false))
        .report_interval(std::time::Duration::from_secs(1))
        .csv_to(Path::new("x.csv"), Box::new(csv.clone()))
        .and_then(|r| {
            r.hdr_log_to(
                Path::new("x.hlog"),
                Box::new(hdr.clone()),
                SystemTime::UNIX_EPOCH,
            )
        })
        .map(|r| r.html_to(Path::new("x.html"), Box::new(html.clone())))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut a = info("a");
    let whole = snapshot(0, 1_000_000_000);
    let tail = snapshot(1_000_000_000, 1_003_000_000);
    let v = paceline::Verdict::from_figures(
        &paceline::Figures::default(),
        Default::default(),
        Default::default(),
    );
    a.verdict = Some(v);
    for s in [&whole, &tail] {
        r.interval(&[ActivityReport {
            info: &a,
            snapshot: s,
            events: &[],
        }])
        .unwrap_or_else(|e| panic!("{e}"));
    }
    let mut totals = whole.clone();
    totals.merge(&tail);
    r.finish(&[ActivityReport {
        info: &a,
        snapshot: &totals,
        events: &[],
    }])
    .unwrap_or_else(|e| panic!("{e}"));
    let text = console.text();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("1.000s a: 1000 ops 1.00K/s"), "{text}");
    assert!(lines[1].starts_with("1.000s a: verdict unpaced"), "{text}");
    assert_eq!(
        lines[2],
        "1.003s a: partial interval (3.00ms): 1000 ops | errors 3 | missed 2 (no rate or \
         percentiles; in the totals)"
    );
    assert!(!text.contains("1.003s a: verdict"), "{text}");
    let csv_text = csv.text();
    let header: Vec<&str> = csv::HEADER.split(',').collect();
    let at = |name: &str| header.iter().position(|h| *h == name).unwrap_or(usize::MAX);
    let rows: Vec<Vec<&str>> = csv_text
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(rows.len(), 2, "{csv_text}");
    assert_eq!(
        (rows[0][at("partial")], rows[0][at("interval_s")]),
        ("0", "1.000")
    );
    assert_eq!(
        (rows[1][at("partial")], rows[1][at("interval_s")]),
        ("1", "0.003")
    );
    assert_eq!((rows[1][at("ops")], rows[1][at("rate")]), ("1000", ""));
    assert_eq!(rows[1][at("service_p99_ns")], "");
    assert!(
        rows[0][at("service_p99_ns")].parse::<u64>().is_ok(),
        "{csv_text}"
    );
    let hdr_text = hdr.text();
    assert!(
        hdr_text.contains("#[Partial a: 0.003 s, under half the 1.000 s report interval"),
        "{hdr_text}"
    );
    // Both intervals' histograms are in the log: it sums to the totals.
    assert_eq!(hdr_text.matches("Tag=a.service,").count(), 2, "{hdr_text}");
    let page = html.text();
    assert!(
        page.contains("1 partial interval (under half the report interval) left out of the plots"),
        "{}",
        page.len()
    );
}
