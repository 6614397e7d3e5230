//! The HTML report end to end: a run's reports through the [`Reporter`], the page it
//! writes, and the same page built again from the HDR log and summary JSON it wrote.

use super::model::{EventKind, HtmlLog, RunData};
use super::tests::{SharedBuf, info, split_snapshot};
use super::{ActivityInfo, ActivityReport, Console, Reporter, html, read};
use paceline::{Event, Snapshot, TimelineEntry, Verdict};
use std::path::Path;
use std::time::SystemTime;

const SEC: u64 = 1_000_000_000;

fn ev(at: u64, event: Event) -> TimelineEntry {
    TimelineEntry { at, event }
}

/// An activity with no pacer.
fn unpaced(alias: &str) -> ActivityInfo {
    ActivityInfo {
        target_rate: None,
        mean_target: None,
        strictness: None,
        ..info(alias)
    }
}

/// What a run hands the reporter: three intervals of `a` (paced, its waits split
/// into queue and dispatch, paused in the second: target 0) and of `z` (unpaced,
/// no ops at all), then the totals.
struct Run {
    intervals: Vec<Vec<(ActivityInfo, Snapshot, Vec<TimelineEntry>)>>,
    totals: Vec<(ActivityInfo, Snapshot, Vec<TimelineEntry>)>,
}

fn run() -> Run {
    let a = info("a");
    let paused = ActivityInfo {
        target_rate: Some(0.0),
        ..info("a")
    };
    let z = unpaced("z");
    let a_events = vec![
        ev(0, Event::Started),
        ev(
            SEC + SEC / 2,
            Event::Rate {
                from: 10_000.0,
                to: 0.0,
            },
        ),
        ev(SEC + SEC / 2, Event::Note("paused".into())),
        ev(
            2 * SEC + SEC / 4,
            Event::Rate {
                from: 0.0,
                to: 10_000.0,
            },
        ),
        ev(2 * SEC + SEC / 4, Event::Note("resumed".into())),
        ev(2 * SEC + SEC / 2, Event::Threads { from: 4, to: 8 }),
        ev(3 * SEC, Event::Stopped),
    ];
    let z_events = vec![ev(0, Event::Started), ev(3 * SEC, Event::Stopped)];
    let mut intervals = Vec::new();
    let mut totals_a = Snapshot::empty(0, 0);
    for n in 0..3u64 {
        let s = split_snapshot(n * SEC, (n + 1) * SEC);
        totals_a.merge(&s);
        let (from, to) = (n * SEC, (n + 1) * SEC);
        let pick = |es: &[TimelineEntry]| -> Vec<TimelineEntry> {
            es.iter()
                .filter(|e| (e.at >= from && e.at < to) || (n == 2 && e.at == to))
                .cloned()
                .collect()
        };
        intervals.push(vec![
            (
                if n == 1 { paused.clone() } else { a.clone() },
                s,
                pick(&a_events),
            ),
            (z.clone(), Snapshot::empty(from, to), pick(&z_events)),
        ]);
    }
    // The whole run's verdict, as the run loop hands it over with the totals.
    let a = ActivityInfo {
        verdict: Some(verdict(&totals_a)),
        ..a
    };
    Run {
        intervals,
        totals: vec![
            (a, totals_a, a_events),
            (z, Snapshot::empty(0, 3 * SEC), z_events),
        ],
    }
}

/// The verdict on `a`'s totals: 4 threads at 10 000/s.
fn verdict(totals: &Snapshot) -> Verdict {
    Verdict::of(totals, Some(10_000.0), 4, None)
}

fn reports(data: &[(ActivityInfo, Snapshot, Vec<TimelineEntry>)]) -> Vec<ActivityReport<'_>> {
    data.iter()
        .map(|(info, snapshot, events)| ActivityReport {
            info,
            snapshot,
            events,
        })
        .collect()
}

/// The page, HDR log and summary JSON the reporter writes for [`run`].
fn write_reports() -> (String, String, String) {
    let (page, hdr, json) = (
        SharedBuf::default(),
        SharedBuf::default(),
        SharedBuf::default(),
    );
    let mut r = Reporter::new(0, Console::new(Box::new(SharedBuf::default()), false))
        .hdr_log_to(
            Path::new("x.hlog"),
            Box::new(hdr.clone()),
            SystemTime::UNIX_EPOCH,
        )
        .map(|r| r.summary_json_to(Path::new("x.json"), Box::new(json.clone())))
        .map(|r| r.html_to(Path::new("x.html"), Box::new(page.clone())))
        .unwrap_or_else(|e| panic!("{e}"));
    let run = run();
    for i in &run.intervals {
        r.interval(&reports(i)).unwrap_or_else(|e| panic!("{e}"));
    }
    r.finish(&reports(&run.totals))
        .unwrap_or_else(|e| panic!("{e}"));
    (page.text(), hdr.text(), json.text())
}

/// The part of `page` about activity number `i`.
fn section(page: &str, i: usize) -> &str {
    let start = page
        .find(&format!("<section id=\"activity-{i}\">"))
        .unwrap_or_else(|| panic!("no section {i}"));
    let end = page[start..]
        .find("</section>")
        .map_or(page.len(), |e| start + e);
    &page[start..end]
}

/// What every page of [`run`] must show, however it was built.
fn check_page(page: &str) {
    // Self-contained: nothing is loaded from elsewhere, and no script at all.
    for bad in [
        "src=\"http",
        "href=\"http",
        "src='http",
        "href='http",
        "<script",
        "<link",
        "@import",
        "url(",
    ] {
        assert!(!page.contains(bad), "the page holds `{bad}`");
    }
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(page.ends_with("</html>\n"));
    // One SVG per plot per activity, each inside its figure.
    assert_eq!(page.matches("<svg").count(), 6);
    for plot in ["rate", "latency", "spectrum"] {
        assert_eq!(
            page.matches(&format!("<figure class=\"plot {plot}\">\n<svg"))
                .count(),
            2,
            "{plot}"
        );
    }
    assert!(!page.contains("class=\"error\""));

    let a = section(page, 0);
    assert!(a.contains("<h2>a</h2>"));
    // The pause and the resume are events on the plots, listed by number.
    assert!(
        a.contains("<td>pause</td><td>rate 10.0K/s -&gt; 0/s, paused</td>"),
        "{a}"
    );
    assert!(a.contains("<td>resume</td><td>rate 0/s -&gt; 10.0K/s, resumed</td>"));
    assert!(a.contains("<td>threads</td><td>threads 4 -&gt; 8</td>"));
    assert!(a.contains(">\ntarget\n</text>"));
    assert!(a.contains("latency per interval (log scale)"));
    // Paced: the whole run's queue and dispatch between wait and response, as
    // the console's summary shows them (3 × 1000 ops, exact figures).
    let rows: Vec<&str> = a
        .lines()
        .filter(|l| l.starts_with("<tr><th>") && l.contains("</th><td>3000</td>"))
        .collect();
    assert_eq!(rows.len(), 5, "{a}");
    for (row, name) in rows
        .iter()
        .zip(["service", "wait", "queue", "dispatch", "response"])
    {
        assert!(row.starts_with(&format!("<tr><th>{name}</th>")), "{row}");
    }
    assert_eq!(
        rows[2],
        "<tr><th>queue</th><td>3000</td><td>1ns</td><td>501ns</td><td>500ns</td><td>900ns</td>\
         <td>990ns</td><td>999ns</td><td>1.00µs</td><td>1.00µs</td></tr>"
    );

    // The whole run's verdict, kind and reason, in the summary table.
    let v = verdict(&run().totals[0].1);
    assert!(
        a.contains(&format!(
            "<tr><th>verdict</th><td>{}</td></tr>\n<tr><th>why</th><td>{}</td></tr>",
            v.kind,
            html::esc(&v.reason)
        )),
        "{a}"
    );

    let z = section(page, 1);
    assert!(z.contains("<h2>z</h2>"));
    // No verdict was handed over for `z`: no row for it.
    assert!(!z.contains("<th>verdict</th>"));
    // Unpaced: no target line, and said so.
    assert!(!z.contains(">\ntarget\n</text>"));
    assert!(z.contains(">\n(unpaced)\n</text>"));
    // No ops: the plots are drawn, empty, and say why; the table has dashes.
    assert!(z.contains("latency per interval (no ops recorded)"));
    assert!(z.contains("percentile spectrum (no ops recorded)"));
    assert!(z.contains("<tr><th>service</th><td>0</td><td>-</td>"));
    // Unpaced: no split rows.
    assert!(!z.contains("<th>queue</th>") && !z.contains("<th>dispatch</th>"));
}

#[test]
fn the_page_a_run_writes_shows_every_activity() {
    let (page, _, _) = write_reports();
    check_page(&page);
    assert!(
        page.contains("From paceline run; 2 activities, up to 3.000 s from each one's first slot.")
    );
    assert!(
        section(&page, 0)
            .contains("<tr><th>rate</th><td>1.00K/s of 10.0K/s (strictness 1.1)</td></tr>")
    );
}

#[test]
fn the_page_built_from_the_files_matches_the_run() {
    let (_, hdr, json) = write_reports();
    let mut from_files =
        read::parse_hdr(&hdr, Path::new("x.hlog")).unwrap_or_else(|e| panic!("{e}"));
    // Without the summary JSON the log says nothing of the verdict: no row.
    let page = html::render(&from_files);
    assert!(!page.contains("<th>verdict</th>"), "{page}");
    assert!(!page.contains("<th>why</th>"));
    read::add_summary(&mut from_files, &json, Path::new("x.json"))
        .unwrap_or_else(|e| panic!("{e}"));
    check_page(&html::render(&from_files));

    // The same data as the run gathered (the log keeps times to the millisecond).
    let run = run();
    let mut log = HtmlLog::new(0);
    for i in &run.intervals {
        log.interval(&reports(i));
        for (info, _, events) in i {
            for e in events {
                log.event(info.schedule_start.unwrap_or(0), &info.alias, e);
            }
        }
    }
    let live: RunData = log.finish(&reports(&run.totals)).clone();
    assert_eq!(from_files.activities.len(), live.activities.len());
    for (f, l) in from_files.activities.iter().zip(&live.activities) {
        assert_eq!(f.alias, l.alias);
        assert_eq!(f.intervals, l.intervals);
        assert_eq!(f.events, l.events);
        assert_eq!(f.totals.service, l.totals.service);
        assert_eq!(f.totals.wait, l.totals.wait);
        assert_eq!(f.totals.response, l.totals.response);
        assert_eq!(f.totals.queue, l.totals.queue);
        assert_eq!(f.totals.dispatch, l.totals.dispatch);
        assert_eq!(f.summary, l.summary);
    }
    let a = &from_files.activities[0];
    let targets: Vec<Option<f64>> = a.intervals.iter().map(|i| i.target).collect();
    assert_eq!(targets, [Some(10_000.0), Some(0.0), Some(10_000.0)]);
    assert!(
        from_files.activities[1]
            .intervals
            .iter()
            .all(|i| i.target.is_none() && i.ops == 0)
    );
    let kinds: Vec<EventKind> = a.events.iter().map(|e| e.kind).collect();
    use EventKind::*;
    assert_eq!(kinds, [Start, Pause, Pause, Resume, Resume, Threads, Stop]);
}

/// An hour at one interval a second: plain lines keep the page under a megabyte
/// (a mark per point and dashed max lines made it 4.4 MB).
#[test]
fn a_long_run_makes_a_page_of_bounded_size() {
    use super::model::{ActivityData, Figures, IntervalPoint};
    let mut a = ActivityData::new("long");
    for n in 0..3600u64 {
        // Jagged figures, the worst case for line length.
        let f = |base: u64| Figures {
            count: 1000,
            p50: base * (1 + n % 7),
            p99: base * 10 * (1 + n % 5),
            max: base * 100 * (1 + n % 3),
        };
        a.intervals.push(IntervalPoint {
            start: n as f64,
            end: (n + 1) as f64,
            ops: 1000 + n % 13 * 50,
            target: Some(1000.0 + (n / 600) as f64 * 500.0),
            service: f(10_000),
            wait: f(1_000),
            response: f(11_000),
            partial: false,
        });
    }
    let page = html::render(&RunData {
        source: "test".into(),
        activities: vec![a],
        run: None,
        merged_logs: 0,
    });
    assert_eq!(page.matches("<svg").count(), 3);
    assert!(page.len() < 1_000_000, "{} bytes", page.len());
}

/// One activity's page from `a`, its facts table.
fn facts_of(a: super::model::ActivityData) -> String {
    let page = html::render(&RunData {
        source: "test".into(),
        activities: vec![a],
        run: None,
        merged_logs: 0,
    });
    let start = page.find("<table class=\"facts\">").unwrap_or(0);
    let end = page[start..]
        .find("</table>")
        .map_or(page.len(), |e| start + e);
    page[start..end].to_string()
}

/// Regression (session 14, item 3): the HTML report's facts had no set-up
/// row: a pause before the first op read `paused 0.000 s` on the page while
/// the console said `set-up 2.500s before the first slot`. The page shows the
/// set-up as the console and the JSON do, and none when there was none.
#[test]
fn the_facts_show_the_set_up_as_the_console_does() {
    use super::model::ActivityData;
    let summary = |setup: f64| {
        serde_json::json!({
            "driver": "diag", "threads": 1,
            "cycles": {"completed": 10, "requested": 10},
            "elapsed_seconds": 1.0, "setup_seconds": setup, "paused_seconds": 0.0,
            "rate": {"achieved": 10.0, "target": 10.0, "strictness": 1.0},
            "missed_slots": 0, "retries": 0, "errors_by_kind": {}
        })
    };
    let mut a = ActivityData::new("a");
    a.summary = Some(summary(2.5));
    let facts = facts_of(a);
    assert!(
        facts.contains("<tr><th>set-up</th><td>2.500 s before the first slot</td></tr>"),
        "{facts}"
    );
    assert!(
        facts.contains("<tr><th>paused</th><td>0.000 s</td></tr>"),
        "{facts}"
    );
    let mut b = ActivityData::new("b");
    b.summary = Some(summary(0.0));
    assert!(!facts_of(b).contains("set-up"));
}

/// Session 14, item 5: a page built from the logs alone (no summary JSON)
/// counted its elapsed time, and so its rate, from its first row, a set-up
/// row at a negative time: 2.5 s of set-up made a 1 s run of 1000 ops read
/// 3.5 s at 286/s. The window starts at the first slot (time 0), and the
/// set-up before it has its own row.
#[test]
fn the_facts_from_the_logs_count_from_the_first_slot() {
    use super::model::{ActivityData, Figures, IntervalPoint};
    let mut a = ActivityData::new("a");
    let f = |count: u64| Figures {
        count,
        p50: 10,
        p99: 10,
        max: 10,
    };
    for (start, end, ops) in [(-2.5, -1.5, 0), (-1.5, -0.5, 0), (0.0, 1.0, 1000)] {
        a.intervals.push(IntervalPoint {
            start,
            end,
            ops,
            target: Some(1000.0),
            service: f(ops),
            wait: f(ops),
            response: f(ops),
            partial: false,
        });
    }
    let facts = facts_of(a);
    assert!(
        facts.contains("<tr><th>elapsed</th><td>1.000 s</td></tr>"),
        "{facts}"
    );
    assert!(
        facts.contains(&format!(
            "<tr><th>completion rate</th><td>{}/s (ops over the time to the last op&#39;s \
             end; the achieved rate, starts over their span, is in the summary JSON)</td></tr>",
            super::units::rate(1000.0)
        )),
        "{facts}"
    );
    assert!(
        facts.contains("<tr><th>set-up</th><td>2.500 s before the first slot</td></tr>"),
        "{facts}"
    );
}

/// Regression (session 14 review, finding 6): the page rebuilt from the logs
/// showed no set-up when the set-up was shorter than one interval (issue 21's
/// 74 ms of connecting): no row comes before the first slot, so the first
/// row's start said nothing. The `started` mark, at its negative time, does.
#[test]
fn the_facts_from_the_logs_show_a_set_up_shorter_than_an_interval() {
    use super::model::{ActivityData, EventMark, Figures, IntervalPoint};
    let mut a = ActivityData::new("a");
    let f = |count: u64| Figures {
        count,
        p50: 10,
        p99: 10,
        max: 10,
    };
    a.events.push(EventMark::new(-0.074, "started"));
    for (start, end) in [(0.0, 1.0), (1.0, 2.0)] {
        a.intervals.push(IntervalPoint {
            start,
            end,
            ops: 1000,
            target: Some(1000.0),
            service: f(1000),
            wait: f(1000),
            response: f(1000),
            partial: false,
        });
    }
    let facts = facts_of(a);
    assert!(
        facts.contains("<tr><th>set-up</th><td>0.074 s before the first slot</td></tr>"),
        "{facts}"
    );
    assert!(
        facts.contains("<tr><th>elapsed</th><td>2.000 s</td></tr>"),
        "{facts}"
    );
}
