//! The search's state machine and the options' checks.

use super::*;

/// Runs a search against a system that passes every rate up to `capacity`.
fn search(start: f64, capacity: f64) -> (Search, Vec<f64>) {
    let mut s = Search::new(start, 0.0);
    let mut tried = Vec::new();
    while let Some(r) = s.next() {
        tried.push(r);
        s.record(r, r <= capacity);
        assert!(tried.len() <= MAX_STEPS, "{tried:?}");
    }
    (s, tried)
}

#[test]
fn the_search_doubles_then_bisects_to_within_two_percent() {
    let (s, tried) = search(250.0, 957.0);
    assert_eq!(tried[..4], [250.0, 500.0, 1000.0, 750.0]);
    let (p, f) = (s.pass.unwrap_or(0.0), s.fail.unwrap_or(0.0));
    assert!(p <= 957.0 && f > 957.0, "{p} {f}");
    assert!(f <= p * 1.02, "{p} {f}");
    assert!(p >= 957.0 * 0.98, "{p}");
    assert_eq!(tried.len(), 8, "{tried:?}");
}

#[test]
fn a_failing_start_halves_until_a_step_passes() {
    let (s, tried) = search(1000.0, 300.0);
    assert_eq!(tried[..3], [1000.0, 500.0, 250.0]);
    assert!(s.pass.unwrap_or(0.0) >= 300.0 * 0.98);
}

#[test]
fn nothing_passes_down_to_the_floor() {
    let (s, tried) = search(1.0, 0.0);
    assert_eq!(s.pass, None);
    assert!(tried.iter().all(|&r| r >= MIN_TRIED), "{tried:?}");
    assert!(tried.len() <= 8, "{tried:?}");
}

#[test]
fn the_halving_stops_at_the_floor() {
    let mut s = Search::new(100.0, 30.0);
    s.record(100.0, false);
    assert_eq!(s.next(), Some(50.0));
    s.record(50.0, false);
    assert_eq!(s.next(), None, "25/s is under the floor");
    assert_eq!(
        Search::new(1.0, 30.0).next(),
        Some(30.0),
        "a start under it"
    );
}

#[test]
fn the_pacers_maximum_ends_the_growth() {
    let (s, _) = search(1e8, f64::INFINITY);
    assert_eq!((s.pass, s.fail), (Some(MAX_RATE), None));
}

#[test]
fn bad_options_say_how_to_fix_them() {
    let slo = parse_slo("0").unwrap_err();
    assert!(slo.contains("above 0, such as 50ms"), "{slo}");
    assert!(parse_slo("fast").unwrap_err().starts_with("--slo-p99:"));
    let step = parse_step("5ms").unwrap_err();
    assert!(step.contains("at least 10ms"), "{step}");
    assert!(parse_step("-1s").is_err());
    assert_eq!(parse_step("300ms"), Ok(Duration::from_millis(300)));
    assert!(parse_error_rate("2").unwrap_err().contains("from 0 to 1"));
    assert_eq!(parse_error_rate("0.01"), Ok(0.01));
    assert_eq!(parse_start("10K"), Ok(10_000.0));
    assert!(parse_start("0").is_err());
}
