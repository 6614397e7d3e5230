//! A coordinated activity's shared schedule in the reports (`coordinate=`,
//! `docs/scale-out.md`): the line under its interval line, the lines under its
//! summary, and `activities[i].coordinated` in the summary JSON. Each is a pure
//! function of a [`Coordinated`] (`paceline::Control::coordinated`), which the run
//! loop keeps in [`ActivityInfo::coordinated`](super::ActivityInfo::coordinated).
//!
//! The process's own numbers stay where they are (the interval line, the
//! summary's table); these add the schedule's global ones beside them.

use super::units;
use paceline::{Coordinated, Nanos};
use std::fmt::Write as _;

/// The line under a coordinated activity's interval line: processes in the
/// schedule, and every process's ops together (the global achieved rate is the
/// schedule's start rate: the starts less one over the time from its first slot
/// to the latest start reported, without the drain after it).
///
/// `12.000s a: shared redis://127.0.0.1:6379/demo: 3 processes (3 live), global 120000 ops at 30.0K/s, re-run 0`
pub fn interval_line(origin: Nanos, alias: &str, end: Nanos, c: &Coordinated) -> String {
    format!(
        "{}s {alias}: shared {}: {} process{} ({} live), global {} ops at {}/s, re-run {}",
        units::seconds(end.saturating_sub(origin)),
        c.url,
        c.processes_seen,
        if c.processes_seen == 1 { "" } else { "es" },
        c.processes_live,
        c.global_completed,
        units::rate(c.global_achieved),
        c.rerun_cycles
    )
}

/// [`interval_line`] for a terminal, without the URL (the summary shows it), so
/// that it fits 100 columns as the compact interval line does.
///
/// `12.000s a: shared 3 processes (3 live), global 120000 ops at 30.0K/s, re-run 0`
pub fn compact_interval_line(origin: Nanos, alias: &str, end: Nanos, c: &Coordinated) -> String {
    let full = interval_line(origin, alias, end, c);
    full.replacen(&format!("shared {}: ", c.url), "shared ", 1)
}

/// The lines under a coordinated activity's summary headline, each ending in a
/// newline: the schedule, this process's member number, the global counts; then
/// the time base's error and the store's round trips per 1000 leased tickets.
///
/// ```text
///   shared redis://127.0.0.1:6379/demo, member 2 of 3 processes (3 live): global 300000 ops at 29.9K/s, re-run 0, missed 4
///     time base error 12.0µs, 310 round trips for 100000 tickets (3.10 per 1000 ops)
/// ```
pub fn summary_lines(c: &Coordinated) -> String {
    let mut s = format!(
        "  shared {}, member {} of {} process{} ({} live): global {} ops at {}/s, re-run {}, \
         missed {}\n    time base error {}, {} round trip{} for {} ticket{}",
        c.url,
        c.member,
        c.processes_seen,
        if c.processes_seen == 1 { "" } else { "es" },
        c.processes_live,
        c.global_completed,
        units::rate(c.global_achieved),
        c.rerun_cycles,
        c.global_missed,
        units::duration(c.time_error_nanos),
        c.round_trips,
        if c.round_trips == 1 { "" } else { "s" },
        c.tickets_leased,
        if c.tickets_leased == 1 { "" } else { "s" },
    );
    if c.tickets_leased > 0 {
        let per = c.round_trips as f64 * 1000.0 / c.tickets_leased as f64;
        let _ = write!(s, " ({per:.2} per 1000 ops)");
    }
    // The wait for a lost member's claims (audit p16, M8).
    if c.claim_wait_nanos > 0 {
        let _ = write!(
            s,
            "\n    waited {} for cycles a lost member's claims held (they expire 5 s after \
             its last heartbeat)",
            units::duration(c.claim_wait_nanos)
        );
    }
    s.push('\n');
    s
}

/// `activities[i].coordinated` in the summary JSON: `{"url", "member",
/// "processes_seen", "processes_live", "global_completed", "global_started", "global_achieved",
/// "global_completion_rate", "rerun_cycles", "global_missed", "time_error_ns", "round_trips",
/// "tickets_leased", "tickets": {"granted", "missed", "given_back", "voided"},
/// "rejoins", "claim_wait_ns"}` (`docs/cli.md` says what each is). The control endpoint's
/// status writes it the same way.
pub fn coordinated_json(c: &Coordinated) -> serde_json::Value {
    serde_json::json!({
        "url": c.url,
        "member": c.member,
        "processes_seen": c.processes_seen,
        "processes_live": c.processes_live,
        "global_completed": c.global_completed,
        "global_started": c.global_started,
        "global_achieved": c.global_achieved,
        "global_completion_rate": c.global_completion_rate,
        "rerun_cycles": c.rerun_cycles,
        "global_missed": c.global_missed,
        "time_error_ns": c.time_error_nanos,
        "round_trips": c.round_trips,
        "tickets_leased": c.tickets_leased,
        "tickets": {
            "granted": c.tickets.granted,
            "missed": c.tickets.missed,
            "given_back": c.tickets.given_back,
            "voided": c.tickets.voided,
        },
        "rejoins": c.rejoins,
        "claim_wait_ns": c.claim_wait_nanos,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Member 2 of a schedule of 3 processes, all live.
    pub(crate) fn three() -> Coordinated {
        let mut c = Coordinated::default();
        c.url = "redis://127.0.0.1:6379/demo".to_string();
        c.member = 2;
        c.processes_seen = 3;
        c.processes_live = 3;
        c.global_completed = 120_000;
        c.global_started = 120_003;
        c.global_achieved = 29_950.0;
        c.global_completion_rate = 29_800.0;
        c.rerun_cycles = 0;
        c.global_missed = 4;
        c.time_error_nanos = 12_000;
        c.round_trips = 310;
        c.tickets_leased = 100_000;
        c
    }

    #[test]
    fn the_interval_line_shows_the_global_numbers() {
        assert_eq!(
            interval_line(1_000_000_000, "a", 13_000_000_000, &three()),
            "12.000s a: shared redis://127.0.0.1:6379/demo: 3 processes (3 live), \
             global 120000 ops at 29.9K/s, re-run 0"
        );
        let mut one = three();
        (one.processes_seen, one.processes_live, one.rerun_cycles) = (1, 1, 7);
        assert!(
            interval_line(0, "a", 0, &one).contains(": 1 process (1 live), global "),
            "{}",
            interval_line(0, "a", 0, &one)
        );
        assert!(interval_line(0, "a", 0, &one).ends_with("re-run 7"));
    }

    #[test]
    fn the_compact_line_leaves_the_url_out_to_fit_a_terminal() {
        let mut c = three();
        c.url = format!("redis://:***@{}.example:6379/checkout-load", "a".repeat(40));
        (c.global_completed, c.global_achieved) = (123_456_789_012, 1.23e6);
        let line = compact_interval_line(1_000_000_000, "kv-reads", 13_000_000_000, &c);
        assert_eq!(
            line,
            "12.000s kv-reads: shared 3 processes (3 live), global 123456789012 ops at 1.23M/s, \
             re-run 0"
        );
        assert!(line.chars().count() <= 100, "{line}");
    }

    #[test]
    fn the_summary_lines_add_the_time_base_and_round_trips() {
        assert_eq!(
            summary_lines(&three()),
            "  shared redis://127.0.0.1:6379/demo, member 2 of 3 processes (3 live): global \
             120000 ops at 29.9K/s, re-run 0, missed 4\n    time base error 12.0µs, 310 round \
             trips for 100000 tickets (3.10 per 1000 ops)\n"
        );
        // No ticket leased yet: no ratio to show.
        let mut c = three();
        (c.round_trips, c.tickets_leased) = (1, 0);
        assert!(
            summary_lines(&c).ends_with("1 round trip for 0 tickets\n"),
            "{}",
            summary_lines(&c)
        );
    }

    #[test]
    fn the_reporter_shows_the_schedule_under_the_process_own_numbers() {
        use super::super::tests::{SharedBuf, info, snapshot};
        use super::super::{ActivityReport, Console, Reporter};
        let (console, json) = (SharedBuf::default(), SharedBuf::default());
        let mut r = Reporter::new(0, Console::new(Box::new(console.clone()), false))
            .summary_json_to(std::path::Path::new("s.json"), Box::new(json.clone()));
        let snap = snapshot(0, 2_000_000_000);
        let mut shared = info("a");
        shared.coordinated = Some(three());
        let alone = info("b");
        let reports = [&shared, &alone].map(|i| ActivityReport {
            info: i,
            snapshot: &snap,
            events: &[],
        });
        r.interval(&reports).unwrap_or_else(|e| panic!("{e}"));
        r.finish(&reports).unwrap_or_else(|e| panic!("{e}"));
        let text = console.text();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("2.000s a: 1000 ops "), "{text}");
        assert_eq!(lines[1], interval_line(0, "a", 2_000_000_000, &three()));
        assert!(lines[2].starts_with("2.000s b: 1000 ops "), "{text}");
        assert_eq!(text.matches("shared redis://").count(), 2, "{text}");
        // The headline says the rate is a total the process has a share of.
        assert_eq!(
            text.matches(", its share of a shared 10.0K/s (strictness 1.1)")
                .count(),
            1,
            "{text}"
        );
        assert!(text.contains("/s of 10.0K/s (strictness 1.1)"), "{text}");
        assert!(
            text.contains("missed slots 2\n  shared redis://127.0.0.1:6379/demo, member 2 of 3"),
            "{text}"
        );
        let doc: serde_json::Value = serde_json::from_str(&json.text()).unwrap_or_default();
        assert_eq!(
            doc["activities"][0]["coordinated"],
            coordinated_json(&three())
        );
        // A terminal gets the line without the URL.
        let tty = SharedBuf::default();
        let mut r = Reporter::new(0, Console::new(Box::new(tty.clone()), true));
        r.interval(&reports[..1]).unwrap_or_else(|e| panic!("{e}"));
        let shown = tty.text();
        assert!(
            shown.contains("\n2.000s a: shared 3 processes (3 live), global "),
            "{shown:?}"
        );
        assert!(!shown.contains("redis://"), "{shown:?}");
        // An activity that paces alone has no `coordinated` at all.
        let b = doc["activities"][1]
            .as_object()
            .cloned()
            .unwrap_or_default();
        assert!(
            b.contains_key("alias") && !b.contains_key("coordinated"),
            "{b:?}"
        );
    }

    #[test]
    fn the_json_has_every_field_under_its_documented_name() {
        assert_eq!(
            coordinated_json(&three()),
            serde_json::json!({
                "url": "redis://127.0.0.1:6379/demo", "member": 2, "processes_seen": 3,
                "processes_live": 3, "global_completed": 120000, "global_started": 120003, "global_achieved": 29950.0,
                "global_completion_rate": 29800.0, "rerun_cycles": 0, "global_missed": 4, "time_error_ns": 12000,
                "round_trips": 310, "tickets_leased": 100000,
                "tickets": {"granted": 0, "missed": 0, "given_back": 0, "voided": 0},
                "rejoins": 0, "claim_wait_ns": 0
            })
        );
    }
}
