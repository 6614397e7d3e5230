//! The console's own tests: progress drawn in place or as lines, cut to the
//! terminal, a broken pipe, and what each interval and event line says.

use super::tests::{SharedBuf, info, snapshot};
use super::*;
use paceline::Event;

fn ev(at: paceline::Nanos, event: Event) -> TimelineEntry {
    TimelineEntry { at, event }
}

/// A writer whose reader has gone away.
struct BrokenPipe;

impl Write for BrokenPipe {
    fn write(&mut self, _: &[u8]) -> io::Result<usize> {
        Err(io::ErrorKind::BrokenPipe.into())
    }
    fn flush(&mut self) -> io::Result<()> {
        Err(io::ErrorKind::BrokenPipe.into())
    }
}

#[test]
fn console_redraws_progress_in_place_on_a_terminal() {
    let buf = SharedBuf::default();
    let mut c = Console::new(Box::new(buf.clone()), true);
    c.progress("one").unwrap_or_else(|e| panic!("{e}"));
    c.progress("two").unwrap_or_else(|e| panic!("{e}"));
    c.line("interval").unwrap_or_else(|e| panic!("{e}"));
    c.line("next").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        buf.text(),
        "\r\x1b[2Kone\r\x1b[2Ktwo\r\x1b[2Kinterval\nnext\n"
    );
}

#[test]
fn console_prints_plain_progress_lines_elsewhere() {
    let buf = SharedBuf::default();
    let mut c = Console::new(Box::new(buf.clone()), false);
    c.progress("one").unwrap_or_else(|e| panic!("{e}"));
    c.line("interval").unwrap_or_else(|e| panic!("{e}"));
    c.clear_progress().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(buf.text(), "one\ninterval\n");
}

#[test]
fn a_broken_pipe_on_the_console_is_not_an_error() {
    let mut c = Console::new(Box::new(BrokenPipe), false);
    assert!(c.line("x").is_ok());
    assert!(c.line("y").is_ok());
    let mut r = Reporter::new(0, Console::new(Box::new(BrokenPipe), true));
    let snap = snapshot(0, 1_000_000_000);
    let i = info("a");
    let rep = ActivityReport {
        info: &i,
        snapshot: &snap,
        events: &[],
    };
    assert!(r.interval(&[rep]).is_ok());
    assert!(r.finish(&[rep]).is_ok());
}

/// Issue 24, item 17: the progress line is cut to the terminal's width, so a
/// redraw in place never wraps and leaves debris above it.
#[test]
fn the_progress_line_is_cut_to_the_terminal_width() {
    let out = SharedBuf::default();
    let mut c = Console::new(Box::new(out.clone()), true).with_width(40);
    c.progress(&"x".repeat(100))
        .unwrap_or_else(|e| panic!("{e}"));
    let text = out.text();
    let drawn = text.trim_start_matches("\r\x1b[2K");
    assert_eq!(drawn.chars().count(), 39, "{drawn:?}");
    assert!(drawn.ends_with('…'), "{drawn:?}");
}

/// An activity whose whole run is one short interval is not partial: that
/// interval is its run, which its summary shows in full.
#[test]
fn a_run_shorter_than_half_the_interval_is_one_whole_interval() {
    let console = SharedBuf::default();
    let mut r = Reporter::new(0, Console::new(Box::new(console.clone()), false))
        .report_interval(std::time::Duration::from_secs(10));
    let mut a = info("a");
    a.ended = Some("completed".into());
    let run = snapshot(0, 300_000_000);
    r.interval(&[ActivityReport {
        info: &a,
        snapshot: &run,
        events: &[],
    }])
    .unwrap_or_else(|e| panic!("{e}"));
    let text = console.text();
    assert!(
        text.starts_with("0.300s a: 1000 ops 3.33K/s | service p50"),
        "{text}"
    );
}

/// Regression (session 14, item 5): the console's partial-interval line (the
/// tail after a stop) and its terminal line left out the paused time their
/// interval held, so a run's console lines did not sum to its summary's
/// `paused` (a `rate=0` launch stopped 300 ms after a report showed those
/// 300 ms in the CSV only). Every interval line shows it when there is any.
#[test]
fn every_console_line_shows_the_paused_time_its_interval_held() {
    let metrics = paceline::Metrics::new(0);
    let mut rec = metrics.recorder();
    rec.paused(3_000_000);
    let s = metrics.snapshot(3_000_000);
    let i = info("a");
    let partial = super::text::partial_interval_line(0, &i, &s);
    assert_eq!(
        partial,
        "0.003s a: partial interval (3.00ms): 0 ops | errors 0 | missed 0 | paused 3.00ms \
         (no rate or percentiles; in the totals)"
    );
    let compact = super::text::compact_interval_line(0, &i, &s);
    assert!(
        compact.ends_with("| errors 0 missed 0 paused 3.00ms"),
        "{compact}"
    );
    let full = super::text::interval_line(0, &i, &s);
    assert!(full.contains("| paused 3.00ms"), "{full}");
    // None paused: the lines as before.
    let none = snapshot(0, 1_000_000_000);
    assert!(!super::text::compact_interval_line(0, &i, &none).contains("paused"));
    assert!(!super::text::partial_interval_line(0, &i, &none).contains("paused"));
}

/// In thread scope a rate event's rates are the spec's, each thread's, while
/// the lines beside it show the total: the console said `rate 50.0/s ->
/// 60.0/s` for 4 threads that ran 200/s, then 240/s. It says `per thread`.
#[test]
fn a_thread_scope_rate_event_says_per_thread() {
    let console = SharedBuf::default();
    let mut r = Reporter::new(0, Console::new(Box::new(console.clone()), false));
    let scoped = ActivityInfo {
        per_thread: true,
        ..info("a")
    };
    let shared = info("b");
    let rate = ev(
        500_000_000,
        Event::Rate {
            from: 50.0,
            to: 60.0,
        },
    );
    let snap = snapshot(0, 1_000_000_000);
    r.interval(&[
        ActivityReport {
            info: &scoped,
            snapshot: &snap,
            events: std::slice::from_ref(&rate),
        },
        ActivityReport {
            info: &shared,
            snapshot: &snap,
            events: std::slice::from_ref(&rate),
        },
    ])
    .unwrap_or_else(|e| panic!("{e}"));
    let text = console.text();
    assert!(
        text.contains("0.500s a: rate 50.0/s -> 60.0/s per thread\n"),
        "{text}"
    );
    assert!(text.contains("0.500s b: rate 50.0/s -> 60.0/s\n"), "{text}");
}
