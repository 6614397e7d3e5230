//! Issue 14.1: the real binary's `GET /metrics`, scraped during a run and read
//! with a real OpenMetrics parser; `--metrics` is read-only, and a bad
//! `--metrics` address exits 2 with a message.

use endpoint::request;
use openmetrics_parser::openmetrics::parse_openmetrics;
use openmetrics_parser::{MetricsExposition, OpenMetricsType, OpenMetricsValue};
use std::net::TcpListener;
use std::process::Stdio;
use std::time::{Duration, Instant};

#[path = "support/endpoint.rs"]
mod endpoint;

type Parsed = MetricsExposition<OpenMetricsType, OpenMetricsValue>;

#[path = "support/bin.rs"]
mod bin;
use bin::{Killed as Run, bin};

/// Parses an exposition with openmetrics-parser. That parser refuses a `# UNIT`
/// line on a histogram, which OpenMetrics 1.0 allows on every type; so those
/// lines are checked here and taken out first.
fn parse(text: &str) -> Parsed {
    let mut kept = String::new();
    for line in text.lines() {
        match line.strip_prefix("# UNIT ") {
            Some(unit) => assert!(
                unit.ends_with("_seconds seconds")
                    || unit.ends_with("_ops_per_second ops_per_second"),
                "{line}"
            ),
            None => {
                kept.push_str(line);
                kept.push('\n');
            }
        }
    }
    parse_openmetrics(&kept).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// The value of `family`'s sample for `activity`.
fn sample(parsed: &Parsed, family: &str, activity: &str) -> OpenMetricsValue {
    parsed
        .families
        .get(family)
        .unwrap_or_else(|| panic!("no family {family}"))
        .iter_samples()
        .find(|s| {
            s.get_labelset()
                .is_ok_and(|l| l.get_label_value("activity") == Some(activity))
        })
        .map(|s| s.value.clone())
        .unwrap_or_else(|| panic!("no {family} sample for {activity}"))
}

fn number(parsed: &Parsed, family: &str, activity: &str) -> f64 {
    match sample(parsed, family, activity) {
        OpenMetricsValue::Counter(c) => c.value.as_f64(),
        OpenMetricsValue::Gauge(g) => g.as_f64(),
        other => panic!("{family} is not a number: {other:?}"),
    }
}

fn histogram_count(parsed: &Parsed, family: &str, activity: &str) -> u64 {
    match sample(parsed, family, activity) {
        OpenMetricsValue::Histogram(h) => {
            let inf = h.buckets.last().map(|b| (b.upper_bound, b.count.as_f64()));
            assert_eq!(inf, Some((f64::INFINITY, h.count.unwrap_or(0) as f64)));
            h.count.unwrap_or(0)
        }
        other => panic!("{family} is not a histogram: {other:?}"),
    }
}

/// Scrapes until the run's first interval has been reported.
fn scrape_once_reported(port: u16) -> (String, Parsed) {
    let t0 = Instant::now();
    loop {
        let (status, head, body) = request(port, "GET", "/metrics", "");
        assert_eq!(status, 200, "{head}\n{body}");
        assert!(
            head.contains("Content-Type: application/openmetrics-text; version=1.0.0"),
            "{head}"
        );
        // Before the activity has started the exposition is `# EOF` alone, which
        // the parser refuses (the endpoint is up first; a scrape once came then).
        if body.trim() == "# EOF" {
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "no activity started"
            );
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        let parsed = parse(&body);
        // Ops are counted live, the achieved rate at each reported interval: an
        // op done before the first interval was reported is not enough (a busy
        // machine once scraped in between: issue 25).
        if parsed.families.contains_key("paceline_ops")
            && number(&parsed, "paceline_ops", "paced") > 0.0
            && number(&parsed, "paceline_rate_achieved_ops_per_second", "paced") > 0.0
        {
            return (body, parsed);
        }
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "no interval reported:\n{body}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_running_activity_is_scraped_and_metrics_cannot_change_it() {
    let child = bin()
        .args([
            "run",
            "driver=diag",
            "alias=paced",
            "cycles=1M",
            "threads=2",
            "rate=2000",
            "--report-interval",
            "200ms",
            "--no-progress",
            "--metrics",
            "127.0.0.1:0",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn: {e}"));
    let mut run = Run(child);
    let (port, mut stderr) = endpoint::bound_port(&mut run.0, "metrics endpoint");
    let (_, first) = scrape_once_reported(port);
    let ops = number(&first, "paceline_ops", "paced");
    assert_eq!(
        number(&first, "paceline_rate_target_ops_per_second", "paced"),
        2000.0
    );
    assert_eq!(number(&first, "paceline_threads", "paced"), 2.0);
    assert!(number(&first, "paceline_rate_achieved_ops_per_second", "paced") > 0.0);
    assert_eq!(number(&first, "paceline_missed_slots", "paced"), 0.0);
    assert_eq!(number(&first, "paceline_retries", "paced"), 0.0);
    // The async runner's families are left out on the sync runner.
    for family in [
        "paceline_concurrency",
        "paceline_in_flight_max",
        "paceline_cap_full_ratio",
    ] {
        assert!(!first.families.contains_key(family), "{family}");
    }
    for family in [
        "paceline_service_seconds",
        "paceline_wait_seconds",
        "paceline_response_seconds",
    ] {
        // Every op is in every distribution, from the same snapshots as the count.
        assert_eq!(
            histogram_count(&first, family, "paced") as f64,
            ops,
            "{family}"
        );
    }

    // The read-only endpoint changes nothing.
    let (status, _, body) = request(port, "PUT", "/activities/paced/rate", "50000");
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("read-only"), "{body}");
    let (status, _, body) = request(port, "POST", "/activities/paced/stop", "");
    assert_eq!(status, 403, "{body}");
    let (status, _, body) = request(port, "GET", "/activities/paced", "");
    assert_eq!(status, 200, "{body}");
    let status: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
    assert_eq!(status["state"], "running", "{body}");

    // Later: the counters have moved on; nothing was changed.
    let t0 = Instant::now();
    let later = loop {
        std::thread::sleep(Duration::from_millis(300));
        let (_, _, body) = request(port, "GET", "/metrics", "");
        let parsed = parse(&body);
        if number(&parsed, "paceline_ops", "paced") > ops {
            break parsed;
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "stuck at {ops}");
    };
    assert_eq!(
        number(&later, "paceline_rate_target_ops_per_second", "paced"),
        2000.0
    );
    let _ = run.0.kill();
    let _ = run.0.wait();
    let err = stderr.text();
    assert!(!err.contains("panicked"), "{err}");
}

/// Audit gap 7: the async runner's families, scraped during a run whose cap is
/// full most of the time (40/s of 100 ms ops need 4 in flight; the cap is 2;
/// ops this long keep the generator's own gap between an end and the next
/// start, a few ms on a loaded machine, a small part of the time).
#[test]
fn an_async_run_is_scraped_with_its_cap_its_most_in_flight_and_the_share_at_the_cap() {
    let child = bin()
        .args([
            "run",
            "driver=diag",
            "alias=paced",
            "latency=100ms",
            "rate=40",
            "concurrency=2",
            "threads=1",
            "cycles=1M",
            "--report-interval",
            "200ms",
            "--no-progress",
            "--metrics",
            "127.0.0.1:0",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn: {e}"));
    let mut run = Run(child);
    let (port, mut stderr) = endpoint::bound_port(&mut run.0, "metrics endpoint");
    let (body, first) = scrape_once_reported(port);
    for family in [
        "paceline_concurrency",
        "paceline_in_flight_max",
        "paceline_cap_full_ratio",
    ] {
        assert_eq!(
            first.families.get(family).map(|f| f.family_type),
            Some(OpenMetricsType::Gauge),
            "{family}\n{body}"
        );
    }
    assert_eq!(number(&first, "paceline_concurrency", "paced"), 2.0);
    assert_eq!(number(&first, "paceline_in_flight_max", "paced"), 2.0);
    // The cap is full past the first few ops. The ratio is over the run so
    // far, set-up included (the cap is not full then), so it reaches a share
    // near 1 only as the run outgrows its set-up: scrape until it passes 0.8,
    // which a run whose cap is full most of the time does however long a busy
    // machine made its set-up (review 1, 1.7: one scrape at 100 ops failed
    // after a set-up of 200 ms), and one whose cap is full half the time
    // never does.
    let t0 = Instant::now();
    loop {
        std::thread::sleep(Duration::from_millis(300));
        let (_, _, body) = request(port, "GET", "/metrics", "");
        let later = parse(&body);
        let full = number(&later, "paceline_cap_full_ratio", "paced");
        assert!((0.0..=1.0).contains(&full), "{body}");
        assert_eq!(number(&later, "paceline_concurrency", "paced"), 2.0);
        assert_eq!(number(&later, "paceline_in_flight_max", "paced"), 2.0);
        if full > 0.8 {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(60), "{body}");
    }
    let _ = run.0.kill();
    let _ = run.0.wait();
    let err = stderr.text();
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_bad_metrics_address_exits_2_with_a_message() {
    let out = bin()
        .args(["run", "driver=diag", "cycles=10", "--metrics", "nowhere"])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("`nowhere` is not an address"), "{err}");
    assert!(err.contains("such as 7878 or 127.0.0.1:7878"), "{err}");

    // A port in use: the message names it and the flag; nothing runs.
    let busy = TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let port = busy.local_addr().map(|a| a.port()).unwrap_or(0);
    let out = bin()
        .args([
            "run",
            "driver=diag",
            "cycles=10",
            "--metrics",
            &port.to_string(),
        ])
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("cannot listen on 127.0.0.1:{port} for --metrics")),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}
