//! The merge of several HDR logs (`paceline report A.hlog B.hlog`) on logs
//! written by hand: windows aligned by wall time, partial windows, sums, targets
//! and the refusals.

use super::merge::from_texts;
use super::model::{RunData, Totals};
use base64::Engine as _;
use hdrhistogram::serialization::{Serializer as _, V2DeflateSerializer};
use std::path::Path;

/// A histogram line of `ops` values of 1 µs.
fn line(tag: &str, start: f64, len: f64, ops: u64) -> String {
    let mut h = Totals::default().service;
    h.record_n(1_000, ops).unwrap_or_else(|e| panic!("{e}"));
    let mut buf = Vec::new();
    V2DeflateSerializer::new()
        .serialize(&h, &mut buf)
        .unwrap_or_else(|e| panic!("{e:?}"));
    let b64 = base64::engine::general_purpose::STANDARD.encode(&buf);
    format!("Tag={tag},{start:.3},{len:.3},1.000,{b64}\n")
}

/// A log whose StartTime (and BaseTime) is `at`, with intervals of activity `a`
/// as (start, length, ops, target); `extra` goes after the header.
fn log(at: f64, extra: &str, intervals: &[(f64, f64, u64, f64)]) -> String {
    let mut s = format!(
        "#[Logged with paceline 0.1.0]\n#[Histogram log format version 1.3]\n\
         #[StartTime: {at:.3} (seconds since epoch)]\n#[BaseTime: {at:.3} (seconds since epoch)]\n\
         {extra}\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n"
    );
    for &(start, len, ops, target) in intervals {
        s.push_str(&format!("#[Target a: {target}]\n"));
        for m in ["service", "wait", "response"] {
            s.push_str(&line(&format!("a.{m}"), start, len, ops));
        }
    }
    s
}

fn merged(logs: &[(&str, &str)]) -> RunData {
    let logs: Vec<(&Path, &str)> = logs.iter().map(|(p, t)| (Path::new(*p), *t)).collect();
    from_texts(&logs).unwrap_or_else(|e| panic!("{e}")).0
}

fn refusal(logs: &[(&str, &str)]) -> String {
    let logs: Vec<(&Path, &str)> = logs.iter().map(|(p, t)| (Path::new(*p), *t)).collect();
    from_texts(&logs)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_else(|| panic!("merged"))
}

/// (start, end, ops, partial, target) of each merged window, times to the ms.
fn windows(d: &RunData) -> Vec<(f64, f64, u64, bool, Option<f64>)> {
    let ms = |x: f64| (x * 1e3).round() / 1e3;
    d.activities[0]
        .intervals
        .iter()
        .map(|i| (ms(i.start), ms(i.end), i.ops, i.partial, i.target))
        .collect()
}

/// B starts 0.4 s after A, C 0.7 s after: each of their 1 s intervals goes
/// whole into the window holding its midpoint; a window some log has not half
/// covered is partial; the totals are the sum.
#[test]
fn windows_align_by_wall_time_and_a_window_not_every_log_covers_is_partial() {
    let a = log(
        1000.0,
        "",
        &[
            (0.0, 1.0, 10, 100.0),
            (1.0, 1.0, 20, 100.0),
            (2.0, 1.0, 30, 100.0),
        ],
    );
    let b = log(1000.4, "", &[(0.0, 1.0, 1, 50.0), (1.0, 1.0, 2, 50.0)]);
    let d = merged(&[("a.hlog", &a), ("b.hlog", &b)]);
    assert_eq!(
        windows(&d),
        [
            (0.0, 1.0, 11, false, Some(150.0)),
            (1.0, 2.0, 22, false, Some(150.0)),
            // B ended at 2.4 s: its last interval went to window 1.
            (2.0, 3.0, 30, true, Some(100.0)),
        ]
    );
    assert_eq!(d.activities[0].totals.service.len(), 63);
    assert_eq!(d.activities[0].totals.response.len(), 63);
    assert_eq!(
        d.source, "2 HDR logs merged: a.hlog, b.hlog",
        "the page's header names them"
    );
    // C's first interval, 0.7 to 1.7 s, belongs to window 1: window 0 lacks C.
    let c = log(1000.7, "", &[(0.0, 1.0, 5, 100.0)]);
    let d = merged(&[("a.hlog", &a), ("b.hlog", &b), ("c.hlog", &c)]);
    let w = windows(&d);
    assert_eq!(
        w.iter().map(|w| (w.2, w.3)).collect::<Vec<_>>(),
        [(11, true), (27, false), (30, true)]
    );
    // The order of the logs does not matter.
    let d2 = merged(&[("c.hlog", &c), ("b.hlog", &b), ("a.hlog", &a)]);
    assert_eq!(windows(&d2), w);
}

/// A log that starts before the others sets the origin; BaseTime (when it
/// differs from StartTime) places the intervals; events move with their log.
#[test]
fn the_base_time_places_a_log_and_its_events() {
    let a = log(1000.0, "", &[(0.0, 1.0, 10, 100.0), (1.0, 1.0, 10, 100.0)]);
    let b = log(
        999.0,
        "#[Event 0.500 a: started]\n",
        &[(1.0, 1.0, 4, 100.0)],
    )
    .replace("#[BaseTime: 999.000", "#[BaseTime: 999.500");
    let d = merged(&[("a.hlog", &a), ("b.hlog", &b)]);
    // Origin 999.0: A's intervals are windows 1 and 2; B's 1.5 to 2.5 s (midpoint 2.0) window 2.
    assert_eq!(
        windows(&d)
            .iter()
            .map(|w| (w.0, w.2, w.3))
            .collect::<Vec<_>>(),
        [(1.0, 10, true), (2.0, 14, false)]
    );
    let e = &d.activities[0].events[0];
    assert_eq!((e.at, e.text.as_str()), (1.0, "started"));
}

/// On a shared schedule every log carries the whole schedule's rate: the merged
/// target counts it once. Unpaced logs merge with no target.
#[test]
fn a_shared_target_counts_once_and_unpaced_has_none() {
    let a = log(1000.0, "#[Shared a]\n", &[(0.0, 1.0, 10, 300.0)]);
    let b = log(1000.0, "#[Shared a]\n", &[(0.0, 1.0, 12, 300.0)]);
    let d = merged(&[("a.hlog", &a), ("b.hlog", &b)]);
    assert_eq!(windows(&d), [(0.0, 1.0, 22, false, Some(300.0))]);
    let u =
        log(1000.0, "", &[(0.0, 1.0, 10, 0.0)]).replace("#[Target a: 0]", "#[Target a: unpaced]");
    let d = merged(&[("a.hlog", &u), ("b.hlog", &u)]);
    assert_eq!(windows(&d), [(0.0, 1.0, 20, false, None)]);
}

#[test]
fn a_log_without_a_start_time_is_refused_with_its_line_and_the_fix() {
    let a = log(1000.0, "", &[(0.0, 1.0, 10, 100.0)]);
    let b: String = a
        .lines()
        .filter(|l| !l.starts_with("#[StartTime") && !l.starts_with("#[BaseTime"))
        .map(|l| format!("{l}\n"))
        .collect();
    let e = refusal(&[("a.hlog", &a), ("b.hlog", &b)]);
    assert!(
        e.starts_with("b.hlog:5: no `#[StartTime: ...]` line before the first histogram"),
        "{e}"
    );
    assert!(
        e.contains("add `#[StartTime: SECONDS (seconds since epoch)]`"),
        "{e}"
    );
}

#[test]
fn logs_of_other_tags_or_not_by_paceline_are_refused() {
    let a = log(1000.0, "", &[(0.0, 1.0, 10, 100.0)]);
    let other = a
        .replace("Tag=a.", "Tag=b.")
        .replace("#[Target a:", "#[Target b:");
    let e = refusal(&[("a.hlog", &a), ("b.hlog", &other)]);
    assert!(
        e.starts_with(
            "b.hlog:7: tag `b.service` is in this log but not in a.hlog: only logs \
             of the same workload merge"
        ),
        "{e}"
    );
    // A paced log (queue and dispatch split) beside one without the split.
    let split = format!("{a}{}", line("a.queue", 0.0, 1.0, 10));
    let e = refusal(&[("a.hlog", &split), ("b.hlog", &a)]);
    assert!(
        e.starts_with("b.hlog:7: tag `a.queue` of a.hlog is not in this log"),
        "{e}"
    );
    let foreign = a.replace("#[Logged with paceline 0.1.0]\n", "");
    let e = refusal(&[("a.hlog", &a), ("j.hlog", &foreign)]);
    assert!(
        e.starts_with("j.hlog:6: no `#[Logged with paceline ...]` line")
            && e.contains("unit is not known to be nanoseconds"),
        "{e}"
    );
    // A garbled line: the single-log report's own error, with file and line.
    let garbled = format!("{a}not a histogram\n");
    let e = refusal(&[("a.hlog", &a), ("g.hlog", &garbled)]);
    assert!(
        e.starts_with("g.hlog:10: not an HDR interval log line"),
        "{e}"
    );
}

#[test]
fn an_unreadable_file_is_named() {
    let e = super::merge::from_files(&[
        std::path::PathBuf::from("/nonexistent-paceline/a.hlog"),
        std::path::PathBuf::from("/nonexistent-paceline/b.hlog"),
    ])
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(
        e.starts_with("cannot read /nonexistent-paceline/a.hlog: "),
        "{e}"
    );
}

/// Regression (audit p18, H4): two processes of 3 s at 150/s on one shared
/// schedule, the second started 0.4 s later: its last interval (2.4 to 3.4 s)
/// went whole into the window of its midpoint, clipped at 3.0 s, so the run's
/// span stopped at the first process's end and 900 ops read 300/s. The last
/// window runs to the latest interval's end: 900 ops over 3.4 s, 265/s.
#[test]
fn the_runs_span_holds_every_process() {
    let three = [
        (0.0, 1.0, 150, 300.0),
        (1.0, 1.0, 150, 300.0),
        (2.0, 1.0, 150, 300.0),
    ];
    let a = log(1000.0, "", &three);
    let b = log(1000.4, "", &three);
    let d = merged(&[("a.hlog", &a), ("b.hlog", &b)]);
    let w = windows(&d);
    let ops: u64 = w.iter().map(|w| w.2).sum();
    let span = w.last().map_or(0.0, |w| w.1) - w.first().map_or(0.0, |w| w.0);
    assert_eq!((ops, span), (900, 3.4), "{w:?}");
    // Inner windows keep their clipped spans.
    assert_eq!((w[0].0, w[0].1, w[1].1), (0.0, 1.0, 2.0), "{w:?}");
}
