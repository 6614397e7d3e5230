//! The text reports line by line: interval, partial, event, progress and verdict
//! lines, and the summary table.

use super::super::ActivityReport;
use super::super::tests::{info, snapshot};
use super::summary::verdict_figures;
use super::*;
use paceline::Event;

#[test]
fn interval_line_shows_everything_in_human_units() {
    let snap = snapshot(10_000_000_000, 11_000_000_000);
    let line = interval_line(1_000_000_000, &info("a"), &snap);
    assert_eq!(
        line,
        "10.000s a: 1000 ops 1.00K/s \
         | service p50 500µs p99 990µs p99.9 999µs max 1.00ms \
         | wait p50 5.00µs p99 9.90µs p99.9 9.99µs max 10.0µs \
         | response p50 505µs p99 1.00ms p99.9 1.01ms max 1.01ms \
         | errors 3 | missed 2"
    );
}

/// Issue 17.2.3: paused time shows as paused, apart from missed slots.
#[test]
fn paused_time_shows_as_paused_in_the_line_and_the_summary() {
    let metrics = paceline::Metrics::new(0);
    let mut rec = metrics.recorder();
    rec.record(0, 1_000);
    rec.paused(4_500_000_000);
    let snap = metrics.snapshot(5_000_000_000);
    let line = interval_line(0, &info("a"), &snap);
    assert!(
        line.ends_with("| errors 0 | missed 0 | paused 4.50s"),
        "{line}"
    );
    let i = info("a");
    let table = summary_table(&ActivityReport {
        info: &i,
        snapshot: &snap,
        events: &[],
    });
    assert!(
        table.contains("errors 0, retries 0, missed slots 0, paused 4.50s\n"),
        "{table}"
    );
}

#[test]
fn the_compact_interval_line_fits_100_columns() {
    // Regression (issue 17): interval lines were about 330 characters wide.
    let snap = snapshot(10_000_000_000, 11_000_000_000);
    let mut i = info("kv-reads");
    let line = compact_interval_line(1_000_000_000, &i, &snap);
    assert!(
        line.chars().count() <= 100,
        "{} {line}",
        line.chars().count()
    );
    assert!(
        line.starts_with("10.000s kv-reads: 1000 ops 1.00K/s | p99 svc 990µs "),
        "{line}"
    );
    assert!(line.ends_with("| errors 3 missed 2"), "{line}");
    i.alias = "a".into();
    assert!(
        interval_line(0, &i, &snap).chars().count() > 100,
        "the full form stays"
    );
}

#[test]
fn the_legend_is_one_line() {
    // Issue 17: the summary never said what service, wait, response and missed
    // slots mean.
    assert!(!LEGEND.contains('\n'));
    for word in ["service", "wait", "response", "missed slots"] {
        assert!(LEGEND.contains(word), "{word}");
    }
}

#[test]
fn event_lines_show_rates_in_report_units() {
    // Regression (issue 17): `rate 12016.034348261594 -> 0`.
    let e = TimelineEntry {
        at: 2_000_000_000,
        event: Event::Rate {
            from: 12016.034348261594,
            to: 0.0,
        },
    };
    assert_eq!(event_line(0, "a", &e), "2.000s a: rate 12.0K/s -> 0/s");
    let ramp = Event::Ramp {
        to: 50_000.0,
        over: 30_000_000_000,
    };
    assert_eq!(event_text(&ramp), "ramp to 50.0K/s over 30.0s");
}

#[test]
fn event_line_is_relative_to_origin() {
    let e = TimelineEntry {
        at: 3_500_000_000,
        event: Event::Threads { from: 4, to: 8 },
    };
    assert_eq!(
        event_line(1_000_000_000, "a", &e),
        "2.500s a: threads 4 -> 8"
    );
}

#[test]
fn progress_line_with_target_and_eta() {
    let p = Progress {
        done: 45_000,
        rate: 9_980.0,
        wait_p99: Some(1_230_000),
        errors: 2,
    };
    assert_eq!(
        progress_line(&info("a"), &p),
        "a 45000/100000 (45%) 9.98K/s of 10.0K/s | wait p99 1.23ms | errors 2 | ETA 5.51s"
    );
}

#[test]
fn progress_line_falls_back_to_target_then_unknown() {
    let p = Progress {
        done: 0,
        ..Progress::default()
    };
    let mut i = info("a");
    assert!(progress_line(&i, &p).ends_with("| ETA 10.0s"));
    i.target_rate = None;
    assert_eq!(
        progress_line(&i, &p),
        "a 0/100000 (0%) 0/s unpaced | errors 0 | ETA ?"
    );
    i.cycles_requested = 0;
    assert_eq!(progress_line(&i, &p), "a 0 0/s unpaced | errors 0");
    i.cycles_requested = 10;
    let done = Progress {
        done: 10,
        ..Progress::default()
    };
    assert!(progress_line(&i, &done).ends_with("(100%) 0/s unpaced | errors 0 | ETA 0s"));
}

/// Regression (issue 24, item 17): before the first interval the line said
/// `wait p99 0ns`, which nothing had measured; and a far ETA read
/// `ETA 10087565s`.
#[test]
fn progress_line_has_no_wait_before_the_first_interval_and_a_human_eta() {
    let mut i = info("a");
    i.cycles_requested = 10_087_565;
    i.target_rate = Some(1.0);
    let p = Progress {
        done: 0,
        rate: 0.0,
        wait_p99: None,
        errors: 0,
    };
    assert_eq!(
        progress_line(&i, &p),
        "a 0/10087565 (0%) 0/s of 1.00/s | errors 0 | ETA 116d 18h"
    );
    assert_eq!(units::eta(45_200_000_000), "45.2s");
    assert_eq!(units::eta(750_000_000_000), "12m 30s");
    assert_eq!(units::eta(10_080_000_000_000), "2h 48m");
}

/// Issue 24, item 17: a verdict of 250 characters is wrapped at words on a
/// terminal, its later lines indented.
#[test]
fn long_lines_wrap_at_words_and_cut_with_an_ellipsis() {
    let text = "12.000s a: verdict generator-bound: each op costs the generator 45.0 µs";
    let wrapped = super::super::console::wrap(text, 30, "    ");
    assert_eq!(
        wrapped,
        "12.000s a: verdict\n    generator-bound: each op\n    costs the generator 45.0\n    µs"
    );
    assert!(
        wrapped.lines().all(|l| l.chars().count() <= 30),
        "{wrapped}"
    );
    use super::super::console::fit;
    assert_eq!(fit("abcdef", 80), "abcdef");
    assert_eq!(fit("abcdefghij", 6), "abcd…");
}

#[test]
fn progress_from_snapshots_takes_counts_from_totals_and_rates_from_recent() {
    let recent = snapshot(10_000_000_000, 11_000_000_000);
    let mut totals = snapshot(0, 1);
    totals.merge(&recent);
    let p = Progress::from_snapshots(&totals, &recent);
    assert_eq!((p.done, p.errors, p.rate), (2000, 6, 1000.0));
    assert_eq!(p.wait_p99, Some(recent.wait().p99()));
}

#[test]
fn summary_table_puts_service_wait_and_response_side_by_side() {
    let snap = snapshot(0, 1_000_000_000);
    let i = info("a");
    let r = ActivityReport {
        info: &i,
        snapshot: &snap,
        events: &[],
    };
    let want = "\
a (diag, 4 threads): 1000 of 100000 cycles in 1.000s, 1.00K/s of 10.0K/s (strictness 1.1)
  errors 3, retries 1, missed slots 2
             service      wait  response
  min         1.00µs      10ns    1.01µs
  mean         501µs    5.01µs     506µs
  p50          500µs    5.00µs     505µs
  p90          900µs    9.01µs     909µs
  p99          990µs    9.90µs    1.00ms
  p99.9        999µs    9.99µs    1.01ms
  p99.99      1.00ms    10.0µs    1.01ms
  max         1.00ms    10.0µs    1.01ms
  errors by kind: refused 1, timeout 2
  the times above include the 3 failed ops
";
    assert_eq!(summary_table(&r), want);
}

/// Asserts that the summary table's headline (its first line) ends with `tail`.
fn assert_headline_ends(i: &ActivityInfo, snap: &Snapshot, tail: &str) {
    let table = summary_table(&ActivityReport {
        info: i,
        snapshot: snap,
        events: &[],
    });
    let head = table.lines().next().unwrap_or_default();
    assert!(head.ends_with(tail), "{head}");
}

/// Regression (issue 24, item 3): 5 ops at 50/s over 85 ms read `58.6/s of
/// 50.0/s` (n ops over n - 1 gaps). Over the schedule's span a run that held
/// its schedule never reports more than its rate.
#[test]
fn a_short_run_that_held_its_schedule_reports_its_rate() {
    let metrics = paceline::Metrics::new(0);
    let mut rec = metrics.recorder();
    for _ in 0..5 {
        rec.record(10_000, 1_000_000);
    }
    let snap = metrics.snapshot(85_300_000);
    let mut i = info("a");
    i.cycles_requested = 5;
    i.target_rate = Some(50.0);
    i.mean_target = Some(50.0);
    assert_headline_ends(&i, &snap, "in 0.085s, 50.0/s of 50.0/s (strictness 1.1)");
}

/// Issue 24, item 8: the headline sets the achieved rate against the mean
/// target (a ramp's read `1.66K/s of 3.00K/s`), and says where it ended.
#[test]
fn the_headline_shows_the_mean_target_and_where_it_ended() {
    let snap = snapshot(0, 1_000_000_000);
    let mut i = info("a");
    i.target_rate = Some(3_000.0);
    i.mean_target = Some(1_000.0);
    assert_headline_ends(
        &i,
        &snap,
        "1.00K/s of 1.00K/s mean target (3.00K/s at the end) (strictness 1.1)",
    );
}

#[test]
fn summary_table_shows_the_first_message_of_each_error_kind() {
    let snap = snapshot(0, 1_000_000_000);
    let mut i = info("a");
    i.first_errors = vec![
        ("refused".into(), "http://h:1/x: connection refused".into()),
        (
            "timeout".into(),
            "http://h/y: no complete answer within the timeout".into(),
        ),
    ];
    let r = ActivityReport {
        info: &i,
        snapshot: &snap,
        events: &[],
    };
    let table = summary_table(&r);
    let tail: Vec<&str> = table.lines().rev().take(4).collect();
    assert_eq!(
        tail,
        [
            "  the times above include the 3 failed ops",
            "    first timeout: http://h/y: no complete answer within the timeout",
            "    first refused: http://h:1/x: connection refused",
            "  errors by kind: refused 1, timeout 2",
        ]
    );
}

#[test]
fn summary_table_for_an_unpaced_single_thread_activity() {
    let snap = Snapshot::empty(0, 2_000_000_000);
    let mut i = info("b");
    i.threads = 1;
    i.target_rate = None;
    i.strictness = None;
    let r = ActivityReport {
        info: &i,
        snapshot: &snap,
        events: &[],
    };
    let first = summary_table(&r).lines().next().unwrap_or("").to_string();
    assert_eq!(
        first,
        "b (diag, 1 thread): 0 of 100000 cycles in 2.000s, 0/s (unpaced)"
    );
}

/// The verdict's figures name the threads, and the cap in flight when the async
/// runner has one (the two forms were two near-copies of one format).
#[test]
fn verdict_figures_name_the_threads_and_the_cap_in_flight() {
    let snap = snapshot(0, 1_000_000_000);
    let mut v = paceline::Verdict::of(&snap, Some(10_000.0), 1, None);
    v.generator_cpu_cores = Some(0.31);
    v.machine_cores = 2;
    v.concurrency_needed = 1.96;
    v.scheduling_delay_per_op = None;
    assert_eq!(
        verdict_figures(&v),
        "generator cpu 0.31 of 2 cores, concurrency needed 1.96 of 1 thread"
    );
    v.threads = 2;
    v.concurrency = Some(64);
    assert_eq!(
        verdict_figures(&v),
        "generator cpu 0.31 of 2 cores, concurrency needed 1.96 of 64 in flight on 2 threads"
    );
}

/// Regression (session 13): an interval with no ops (a pause, a stalled server,
/// the set-up) printed `service p50 0ns p99 0ns ...` on the console, `0` in the
/// CSV's percentile columns and `0ns` throughout the summary table, as if ops had
/// taken no time. An empty distribution has no figures: `-` in the text and the
/// page, empty fields in the CSV (as a partial row's).
#[test]
fn an_interval_without_ops_has_no_percentiles() {
    let snap = Snapshot::empty(1_000_000_000, 2_000_000_000);
    let i = info("a");
    assert_eq!(
        interval_line(0, &i, &snap),
        "2.000s a: 0 ops 0/s | service - | wait - | response - | errors 0 | missed 0"
    );
    assert_eq!(
        compact_interval_line(0, &i, &snap),
        "2.000s a: 0 ops 0/s | p99 svc - wait - resp - | errors 0 missed 0"
    );
    let table = summary_table(&ActivityReport {
        info: &i,
        snapshot: &snap,
        events: &[],
    });
    let p99 = table
        .lines()
        .find(|l| l.trim_start().starts_with("p99 "))
        .unwrap_or_default();
    assert_eq!(
        p99.split_whitespace().collect::<Vec<_>>(),
        ["p99", "-", "-", "-"]
    );
    let mut csv = super::super::csv::CsvLog::new(Vec::new(), 0).unwrap_or_else(|e| panic!("{e}"));
    csv.row(
        &ActivityReport {
            info: &i,
            snapshot: &snap,
            events: &[],
        },
        false,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let text = String::from_utf8(csv.into_inner()).unwrap_or_default();
    let row: Vec<&str> = text.lines().nth(1).unwrap_or_default().split(',').collect();
    // time_s, alias, ops, rate, errors, missed, paused_s, then the percentiles.
    assert_eq!(&row[..7], ["2.000", "a", "0", "0.000", "0", "0", "0.000"]);
    assert!(row[7..27].iter().all(|f| f.is_empty()), "{row:?}");
}

/// Audit L3: one op over a short interval read as thousands per second
/// (`1 ops 3.98K/s` for `cycles=1 rate=10`); one op is no rate.
#[test]
fn audit_l3_one_op_in_an_interval_prints_no_rate() {
    let metrics = paceline::Metrics::new(0);
    let mut rec = metrics.recorder();
    rec.record(0, 1_000);
    drop(rec);
    let snap = metrics.snapshot(250_000);
    for line in [
        interval_line(0, &info("a"), &snap),
        compact_interval_line(0, &info("a"), &snap),
    ] {
        assert!(line.starts_with("0.000s a: 1 op | "), "{line}");
        assert!(!line.contains("/s"), "{line}");
    }
}
