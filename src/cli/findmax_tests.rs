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

/// A measured step at `target` that achieved `achieved`, failed when `failed`.
fn step(target: f64, achieved: f64, failed: bool, retry: bool) -> StepResult {
    StepResult {
        target,
        achieved,
        response_p99: 1_000_000,
        errors: 0,
        ops: 100,
        verdict: Verdict::of(
            &paceline::Snapshot::empty(0, 1_000_000_000),
            Some(target),
            1,
            None,
        ),
        failed: failed.then(|| "achieved short".to_string()),
        slo_only: false,
        retry,
    }
}

#[test]
fn issue24_item10_an_interrupt_before_any_pass_is_no_max_rate_limited_by_the_system() {
    // Ctrl-C during the first step: nothing measured, nothing passed.
    let search = Search::new(100.0, 0.0);
    let found = conclude(&search, &[], Some(("interrupted (Ctrl-C)", 1)));
    let line = found.line();
    assert!(!line.contains("max rate 0/s"), "{line}");
    assert!(!line.contains("limited by the system"), "{line}");
    assert_eq!(found.limited_by, "unfinished");
    assert_eq!(found.max, None);
    assert!(
        line.starts_with("no max rate: the search stopped before a step passed")
            && line.contains("interrupted (Ctrl-C) during step 1"),
        "{line}"
    );
}

#[test]
fn issue24_item10_an_interrupt_after_passes_says_at_least_with_the_achieved_rate() {
    let mut search = Search::new(100.0, 0.0);
    let steps = vec![
        step(100.0, 99.6, false, false),
        step(200.0, 198.8, false, false),
    ];
    search.record(100.0, true);
    search.record(200.0, true);
    let found = conclude(&search, &steps, Some(("interrupted (Ctrl-C)", 3)));
    let line = found.line();
    assert_eq!(found.max, Some((200.0, 198.8)));
    assert!(
        line.starts_with("max rate at least 199/s (achieved at the 200/s step)"),
        "{line}"
    );
    assert!(
        line.contains("during step 3") && line.contains("no step had failed yet"),
        "{line}"
    );
    // A search that ran to its end is not unfinished, whatever stopped it after.
    let (done, _) = super::tests::search(100.0, 950.0);
    let found = conclude(&done, &[], Some(("interrupted (Ctrl-C)", 9)));
    assert_ne!(found.limited_by, "unfinished");
}

#[test]
fn issue24_item10_the_max_rate_is_the_achieved_rate_of_that_step_capped_at_its_target() {
    let mut search = Search::new(1000.0, 0.0);
    // 1000/s passed achieving 993/s; 2000/s failed twice; 1500/s passed with a
    // backlog paid off (1510/s: not capacity); 1750/s failed twice...
    let steps = vec![
        step(1000.0, 993.0, false, false),
        step(2000.0, 1610.0, true, false),
        step(2000.0, 1605.0, true, true),
        step(1500.0, 1510.0, false, false),
    ];
    search.record(1000.0, true);
    search.record(2000.0, false);
    search.record(1500.0, true);
    let found = conclude(&search, &steps, None);
    assert_eq!(found.max, Some((1500.0, 1500.0)));
    let steps = vec![step(1000.0, 993.0, false, false)];
    let mut one = Search::new(1000.0, 0.0);
    one.record(1000.0, true);
    one.record(2000.0, false);
    let found = conclude(&one, &steps, None);
    assert_eq!(found.max, Some((1000.0, 993.0)));
    assert!(
        found
            .line()
            .starts_with("max rate 993/s (achieved at the 1.00K/s step), limited by the system"),
        "{}",
        found.line()
    );
}

#[test]
fn issue24_item10_live_step_numbers_are_the_tables() {
    // Step 1 passed, step 2 failed and ran again, then step 3: the retry keeps
    // its number live as in the table (it was counted as step 3 live).
    let steps = vec![
        step(100.0, 100.0, false, false),
        step(200.0, 150.0, true, false),
        step(200.0, 150.0, true, true),
    ];
    assert_eq!(step_number(&steps[..1]), 2);
    assert_eq!(step_number(&steps[..2]), 3);
    assert_eq!(step_number(&steps), 3);
    let t = table(&steps);
    let labels: Vec<&str> = t
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .filter(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .collect();
    assert_eq!(labels, ["1", "2", "2*"]);
}

/// Regression (session 12): findmax passed `threads` to `rate_tolerance`, where the
/// verdict counts the ops in flight at each edge (`Figures::edge_ops`). On the async
/// runner those are up to `concurrency`: 10K/s x 50 ms on 2 threads holds 500 in
/// flight, so a 1 s step may read 501 ops short (501/s) and still have kept its
/// schedule; on the sync runner, one per thread.
#[test]
fn a_step_allows_the_ops_in_flight_at_its_edges_as_the_verdict_does() {
    let async_step = paceline::Figures {
        target_rate: Some(10_000.0),
        elapsed_nanos: 1_000_000_000,
        threads: 2,
        service_mean: 50e6,
        concurrency: Some(1000),
        ..Default::default()
    };
    assert_eq!(async_step.edge_ops(), 500);
    assert_eq!(step_tolerance(&async_step), 501.0);
    // the cap bounds it: 200 in flight at most
    let capped = paceline::Figures {
        concurrency: Some(200),
        ..async_step
    };
    assert_eq!(step_tolerance(&capped), 201.0);
    // the sync runner: one op per thread, so 1 % of the target
    let sync_step = paceline::Figures {
        concurrency: None,
        ..async_step
    };
    assert_eq!(step_tolerance(&sync_step), 100.0);
}

/// Regression (review A, p17 L9): the exit-3 message gave one cause and "fix
/// the system under test" even when the generator was the limit.
#[test]
fn review_p17_l9_the_no_pass_message_follows_what_limited_the_last_step() {
    let of = |limited_by| Found {
        max: None,
        limited_by,
        why: "at 100/s: why".to_string(),
    };
    let generator = of("generator").no_pass_message(100.0, "10s", 20);
    assert!(
        generator.contains("limited by the generator")
            && generator.contains("the load generator, not the system under test")
            && !generator.contains("fix the system under test")
            && generator.contains("each step is 10s; a lower rate would run fewer than 20 ops"),
        "{generator}"
    );
    let slo = of("slo").no_pass_message(100.0, "10s", 20);
    assert!(
        slo.contains("relax `--slo-p99`") && !slo.contains("--max-error-rate"),
        "{slo}"
    );
    let system = of("system").no_pass_message(100.0, "10s", 20);
    assert!(
        system.contains("fix the system under test") && system.contains("at 100/s: why"),
        "{system}"
    );
}
