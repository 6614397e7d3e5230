//! `compare`'s gates, its statistics on known histograms, and its table.

use super::*;
use serde_json::json;

fn hist(values: impl IntoIterator<Item = u64>) -> Histogram<u64> {
    let mut h = paceline::Latencies::new().histogram().clone();
    for v in values {
        h.record(v).unwrap_or_else(|e| panic!("{e}"));
    }
    h
}

#[test]
fn gates_parse_with_their_place() {
    let g = Gate::parse("response.p99>+10%").unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(
        (g.metric.as_str(), g.rise, g.percent),
        ("response.p99", true, 10.0)
    );
    assert!(g.trips(100.0, 111.0) && !g.trips(100.0, 110.0));
    let g = Gate::parse("reads: rate<-5%").unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(g.alias.as_deref(), Some("reads"));
    assert!(g.trips(1000.0, 940.0) && !g.trips(1000.0, 960.0));
    assert_eq!(Gate::parse("response.p99+10%").err().map(|e| e.0), Some(16));
    let (at, why) = Gate::parse("latency.p99>+10%").err().unwrap_or_default();
    assert_eq!(at, 0);
    assert!(why.contains("unknown metric `latency.p99`"), "{why}");
    let (at, why) = Gate::parse("errors>10").err().unwrap_or_default();
    assert_eq!(at, 7);
    assert!(why.contains("not a change in percent"), "{why}");
}

#[test]
fn changes_in_percent() {
    assert_eq!(change(100.0, 110.0), 10.0);
    assert_eq!(change(0.0, 0.0), 0.0);
    assert!(change(0.0, 1.0).is_infinite());
    assert_eq!(change(200.0, 100.0), -50.0);
}

#[test]
fn quantile_intervals_come_from_order_statistics() {
    // 1..=10000 µs: p50 is 5000 µs; with n = 10000 the 95% interval is about
    // ranks 5000 ± 98.
    let h = hist((1..=10_000).map(|i| i * 1000));
    let (lo, hi) = quantile_ci(&h, 0.5, 10_000.0);
    assert!((4_890_000..4_915_000).contains(&lo), "{lo}");
    assert!((5_085_000..5_110_000).contains(&hi), "{hi}");
    // Fewer effective ops: a wider interval.
    let (lo2, hi2) = quantile_ci(&h, 0.5, 100.0);
    assert!(lo2 < lo && hi2 > hi);
}

#[test]
fn mann_whitney_tells_a_shift_from_noise() {
    let a = hist((0..2000).map(|i| 1_000_000 + (i % 100) * 1000));
    let same = hist((0..2000).map(|i| 1_000_000 + ((i + 37) % 100) * 1000));
    let (p, pv) = mann_whitney(&a, &same, 2000.0, 2000.0);
    assert!((p - 0.5).abs() < 0.01, "{p}");
    assert!(pv > 0.5, "{pv}");
    let slower = hist((0..2000).map(|i| 1_050_000 + (i % 100) * 1000));
    let (p, pv) = mann_whitney(&a, &slower, 2000.0, 2000.0);
    assert!(p > 0.7, "{p}");
    assert!(pv < 1e-6, "{pv}");
    // The same shift on a handful of effective ops is not significant.
    let (_, pv) = mann_whitney(&a, &slower, 5.0, 5.0);
    assert!(pv > 0.05, "{pv}");
}

#[test]
fn the_effective_count_shrinks_with_drift() {
    assert_eq!(effective_count(1000, &[1.0, 2.0]), 1000.0);
    assert_eq!(effective_count(1000, &[5.0, 5.0, 5.0]), 1000.0);
    // A steady climb: strongly correlated medians.
    let drift: Vec<f64> = (0..20).map(f64::from).collect();
    let n = effective_count(1000, &drift);
    assert!(n < 200.0, "{n}");
    // Alternating values: negative correlation counts as none.
    assert_eq!(effective_count(1000, &[1.0, 3.0, 1.0, 3.0, 1.0]), 1000.0);
}

fn summary(p99: u64, rate: f64, errors: u64) -> Value {
    let lat = json!({"count": 100, "min": 1, "mean": 5, "p50": 5, "p90": 9, "p99": p99,
                     "p999": p99, "p9999": p99, "max": p99});
    json!({"version": "0.1.0", "started_at": "2026-01-01T00:00:00.000+00:00",
           "command_line": "paceline run w.yaml",
           "activities": [{"alias": "a", "rate": {"achieved": rate},
                           "cycles": {"errors": errors}, "missed_slots": 0,
                           "service_ns": lat, "wait_ns": lat, "response_ns": lat,
                           "verdict": {"kind": "on-schedule"}}]})
}

#[test]
fn the_table_shows_both_runs_and_gates_trip_on_their_change() {
    let a = summary(2_000_000, 1000.0, 0);
    let b = summary(2_500_000, 990.0, 3);
    let gates = [
        Gate::parse("response.p99>+10%").unwrap_or_else(|e| panic!("{e:?}")),
        Gate::parse("rate<-5%").unwrap_or_else(|e| panic!("{e:?}")),
        Gate::parse("gone:errors>+1%").unwrap_or_else(|e| panic!("{e:?}")),
    ];
    let (text, tripped) = render(&a, &b, None, &gates, false);
    assert!(
        text.contains("A: 2026-01-01T00:00:00.000+00:00 paceline run w.yaml (paceline 0.1.0)"),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.starts_with("  response.p99")
            && l.contains("2.00ms")
            && l.contains("2.50ms")
            && l.contains("+25.0%")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("  rate") && l.contains("-1.0%")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("  errors") && l.contains("new")),
        "{text}"
    );
    assert!(text.contains("verdict"));
    assert_eq!(
        tripped,
        [
            "--fail-if `response.p99>+10%` tripped on `a`: 2.00ms -> 2.50ms (+25.0%)",
            "--fail-if `gone:errors>+1%`: no activity `gone` in B",
        ]
    );
}

/// Regression (session 13): an empty distribution's figures are null in the
/// summary JSON (they were zeros); compare reads null as no data: `-`, no
/// change (a 0 -> 2 ms rise read as "new"), and a gate on it fails as one that
/// cannot be judged (a candidate that ran no ops passed every latency gate).
#[test]
fn a_null_figure_is_no_data() {
    let a = summary(2_000_000, 1000.0, 0);
    let mut b = summary(2_000_000, 0.0, 0);
    let empty = json!({"count": 0, "min": null, "mean": null, "p50": null, "p90": null,
                       "p99": null, "p999": null, "p9999": null, "max": null});
    b["activities"][0]["response_ns"] = empty;
    let gates = [
        Gate::parse("response.p99>+10%").unwrap_or_else(|e| panic!("{e:?}")),
        Gate::parse("response.p99<-10%").unwrap_or_else(|e| panic!("{e:?}")),
    ];
    let (text, tripped) = render(&a, &b, None, &gates, false);
    let row = text
        .lines()
        .find(|l| l.starts_with("  response.p99"))
        .unwrap_or_default();
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cols, ["response.p99", "2.00ms", "-", "-"], "{text}");
    assert_eq!(
        tripped,
        [
            "--fail-if `response.p99>+10%` on `a`: no data in B (no ops of that kind)",
            "--fail-if `response.p99<-10%` on `a`: no data in B (no ops of that kind)",
        ]
    );
    // The same the other way round.
    let (_, tripped) = render(&b, &a, None, &gates, false);
    assert_eq!(
        tripped,
        [
            "--fail-if `response.p99>+10%` on `a`: no data in A (no ops of that kind)",
            "--fail-if `response.p99<-10%` on `a`: no data in A (no ops of that kind)",
        ]
    );
    // A gate on another figure is judged as before.
    let rate = [Gate::parse("rate<-5%").unwrap_or_else(|e| panic!("{e:?}"))];
    let (_, tripped) = render(&a, &b, None, &rate, false);
    assert_eq!(tripped.len(), 1, "{tripped:?}");
    assert!(tripped[0].contains("tripped"), "{tripped:?}");
}

/// Regression (audit p16, H5): a gate without an alias passed (no trip, exit 0)
/// when B lacked the activity (its scenario failed before it, or renamed it),
/// or had none; a gate with the alias failed. Both fail now.
#[test]
fn a_gate_on_every_activity_fails_when_b_lacks_one() {
    let a = summary(2_000_000, 1000.0, 0);
    let mut none = a.clone();
    none["activities"] = json!([]);
    let mut renamed = a.clone();
    renamed["activities"][0]["alias"] = json!("other");
    let gates = [
        Gate::parse("rate<-5%").unwrap_or_else(|e| panic!("{e:?}")),
        Gate::parse("a:response.p99>+10%").unwrap_or_else(|e| panic!("{e:?}")),
    ];
    for b in [&none, &renamed] {
        let (_, tripped) = render(&a, b, None, &gates, false);
        assert_eq!(
            tripped,
            [
                "--fail-if `rate<-5%`: activity `a` of A is not in B (did B's run stop before \
                 it, or name it differently?)",
                "--fail-if `a:response.p99>+10%`: no activity `a` in B",
            ]
        );
    }
    // A baseline with no activity judges nothing: the gate fails too.
    let (_, tripped) = render(&none, &none, None, &gates[..1], false);
    assert_eq!(
        tripped,
        ["--fail-if `rate<-5%`: A has no activity: nothing to judge (pass a baseline that ran)"]
    );
    // An activity only in B is no failure of a gate on A's activities.
    let mut more = a.clone();
    if let Some(l) = more["activities"].as_array_mut() {
        l.push(renamed["activities"][0].clone());
    }
    let (_, tripped) = render(&a, &more, None, &gates[..1], false);
    assert!(tripped.is_empty(), "{tripped:?}");
}

fn gate(text: &str) -> Gate {
    Gate::parse(text).unwrap_or_else(|e| panic!("{e:?}"))
}

fn lat(p99: u64) -> Value {
    json!({"count": 100, "min": 1, "mean": 5, "p50": 5, "p90": 9, "p99": p99,
           "p999": p99, "p9999": p99, "max": p99})
}

/// Regression (audit p17, H1): `queue.…` and `dispatch.…` gates parsed and
/// matched no row: rc 0 on a +2440 % queue p99. They get rows and are judged;
/// a run without them (unpaced) fails the gate, saying why.
#[test]
fn queue_and_dispatch_gates_are_judged() {
    let mut a = summary(2_000_000, 500.0, 0);
    a["activities"][0]["queue_ns"] = lat(4_560_000);
    a["activities"][0]["dispatch_ns"] = lat(1_000);
    let mut b = a.clone();
    b["activities"][0]["queue_ns"] = lat(115_800_000);
    let gates = [
        gate("queue.p99>+1%"),
        gate("queue.max>+10%"),
        gate("dispatch.p99>+10%"),
    ];
    let (text, tripped) = render(&a, &b, None, &gates, false);
    assert!(
        text.lines().any(|l| l.starts_with("  queue.p99")
            && l.contains("4.56ms")
            && l.contains("+2439.5%")),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.starts_with("  dispatch.max")),
        "{text}"
    );
    assert_eq!(tripped.len(), 2, "{tripped:?}");
    assert!(tripped[0].starts_with("--fail-if `queue.p99>+1%` tripped on `a`"));
    assert!(tripped[1].starts_with("--fail-if `queue.max>+10%` tripped on `a`"));
    // An unpaced B (no queue/dispatch figures): no silent pass.
    let mut unpaced = b.clone();
    if let Some(o) = unpaced["activities"][0].as_object_mut() {
        o.remove("queue_ns");
        o.remove("dispatch_ns");
    }
    let (_, tripped) = render(&a, &unpaced, None, &gates[..1], false);
    assert_eq!(tripped.len(), 1, "{tripped:?}");
    assert!(
        tripped[0].contains("B has no queue figures (an unpaced run"),
        "{tripped:?}"
    );
    // Neither run paced: no rows, and the gate still fails.
    let (text, tripped) = render(&unpaced, &unpaced, None, &gates[..1], false);
    assert!(!text.contains("queue."), "{text}");
    assert!(tripped[0].contains("A has no queue figures"), "{tripped:?}");
}

/// Every gate judges something: one whose alias is only in B fails.
#[test]
fn a_gate_that_judges_nothing_fails() {
    let a = summary(2_000_000, 1000.0, 0);
    let mut b = a.clone();
    if let Some(l) = b["activities"].as_array_mut() {
        let mut other = l[0].clone();
        other["alias"] = json!("other");
        l.push(other);
    }
    let (_, tripped) = render(&a, &b, None, &[gate("other:rate<-5%")], false);
    assert_eq!(
        tripped,
        [
            "--fail-if `other:rate<-5%` judged nothing: no activity of both runs has `rate` \
             (check the alias and the metric)"
        ]
    );
}

/// Regression (audit p17, H2): a failed or interrupted B (43 of 500 cycles)
/// passed every gate, rc 0. It fails them now, naming the outcome, unless
/// `--allow-incomplete`.
#[test]
fn an_incomplete_run_fails_the_gates() {
    let a = summary(2_000_000, 500.0, 0);
    let mut ok = a.clone();
    ok["outcome"] = json!("completed");
    let mut failed = a.clone();
    failed["outcome"] = json!("failed");
    failed["activities"][0]["cycles"] = json!({"requested": 500, "completed": 43, "errors": 1});
    let mut interrupted = a.clone();
    interrupted["outcome"] = json!("interrupted");
    let gates = [gate("rate<-5%")];
    let (text, tripped) = render(&ok, &failed, None, &gates, false);
    assert!(
        text.contains("B: run ended `failed` (`a` (43 of 500 cycles)): not comparable"),
        "{text}"
    );
    assert_eq!(
        tripped,
        [
            "B's run ended `failed` (`a` (43 of 500 cycles)): not comparable, so no gate is \
             judged on it (rerun it, or pass --allow-incomplete to judge it anyway)"
        ]
    );
    let (_, tripped) = render(&interrupted, &ok, None, &gates, false);
    assert!(
        tripped.len() == 1 && tripped[0].starts_with("A's run ended `interrupted`"),
        "{tripped:?}"
    );
    // An activity that failed within a run that went on (a scenario).
    let mut step = ok.clone();
    step["activities"][0]["ended"] = json!("failed: cycle 3: boom");
    let (_, tripped) = render(&ok, &step, None, &gates, false);
    assert!(
        tripped.len() == 1 && tripped[0].starts_with("B's activity `a` ended `failed: cycle 3"),
        "{tripped:?}"
    );
    // Judged anyway when asked; a run whose thresholds failed is complete.
    let (_, tripped) = render(&ok, &failed, None, &gates, true);
    assert!(tripped.is_empty(), "{tripped:?}");
    let mut thresholds = ok.clone();
    thresholds["outcome"] = json!("thresholds failed");
    let (_, tripped) = render(&ok, &thresholds, None, &gates, false);
    assert!(tripped.is_empty(), "{tripped:?}");
}

/// Regression (audit p17, M1): repeated aliases paired first-match: a file
/// compared with itself tripped, B's second run was never judged.
#[test]
fn repeated_aliases_pair_in_order() {
    let mut tw = summary(2_000_000, 1000.0, 43);
    let second = summary(2_000_000, 1000.0, 0)["activities"][0].clone();
    if let Some(l) = tw["activities"].as_array_mut() {
        l.push(second);
    }
    let gates = [gate("errors>+10%")];
    let (text, tripped) = render(&tw, &tw, None, &gates, false);
    assert!(tripped.is_empty(), "{tripped:?}");
    assert!(
        text.contains("\na (run 1)\n") && text.contains("\na (run 2)\n"),
        "{text}"
    );
    // B's second run regressed: judged.
    let mut worse = tw.clone();
    worse["activities"][1]["cycles"]["errors"] = json!(5);
    let (_, tripped) = render(&tw, &worse, None, &gates, false);
    assert_eq!(
        tripped,
        ["--fail-if `errors>+10%` tripped on `a (run 2)`: 0 -> 5 (new)"]
    );
    // A third run only in B is shown as such.
    let mut three = tw.clone();
    if let Some(l) = three["activities"].as_array_mut() {
        l.push(l[1].clone());
    }
    let (text, _) = render(&tw, &three, None, &gates, false);
    assert!(text.contains("a (run 3): only in B"), "{text}");
}

/// Regression (audit p17, L3): the verdict row ran two long names together
/// (`generator-boundstopped-by-error`).
#[test]
fn verdict_columns_stay_apart() {
    let mut a = summary(2_000_000, 1000.0, 0);
    a["activities"][0]["verdict"]["kind"] = json!("generator-bound");
    let mut b = a.clone();
    b["activities"][0]["verdict"]["kind"] = json!("stopped-by-error");
    let (text, _) = render(&a, &b, None, &[], false);
    let row = text
        .lines()
        .find(|l| l.starts_with("  verdict"))
        .unwrap_or_default();
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        cols,
        ["verdict", "generator-bound", "stopped-by-error"],
        "{text}"
    );
}

/// Regression (audit p18, H1): a run cut short by an `abort_on_fail` threshold
/// (outcome `thresholds failed`, activity `stopped`) or by a control `stop`
/// (outcome `completed`) passed every gate on half a second of a 3 s run, rc 0.
/// Both fail the gates now, naming what stopped them; a scenario's planned
/// `stop` (`ended: "stopped"`, no abort) stays comparable.
#[test]
fn a_run_cut_short_fails_the_gates() {
    let mut ok = summary(2_000_000, 500.0, 0);
    ok["outcome"] = json!("completed");
    ok["activities"][0]["ended"] = json!("ran its duration");
    let gates = [gate("rate<-5%")];
    // Written before `ended` said why: the failed abort threshold tells it.
    let mut aborted = ok.clone();
    aborted["outcome"] = json!("thresholds failed");
    aborted["thresholds"] = json!([{"expr": "errors<1% abort_on_fail", "pass": false}]);
    aborted["activities"][0]["ended"] = json!("stopped");
    aborted["activities"][0]["elapsed_seconds"] = json!(0.505);
    aborted["activities"][0]["cycles"] = json!({"requested": 0, "completed": 253, "errors": 13});
    let (text, tripped) = render(&ok, &aborted, None, &gates, false);
    assert!(
        text.contains(
            "B: activity `a` ended `stopped by abort_on_fail` after 0.505 s (253 cycles): \
             not comparable"
        ),
        "{text}"
    );
    assert_eq!(tripped.len(), 1, "{tripped:?}");
    // Written now: `ended` names the cause.
    let mut marked = aborted.clone();
    marked["activities"][0]["ended"] = json!("stopped by abort_on_fail");
    let (_, tripped) = render(&ok, &marked, None, &gates, false);
    assert_eq!(tripped.len(), 1, "{tripped:?}");
    let mut control = ok.clone();
    control["activities"][0]["ended"] = json!("stopped by control");
    control["activities"][0]["elapsed_seconds"] = json!(0.648);
    let (_, tripped) = render(&control, &ok, None, &gates, false);
    assert!(
        tripped.len() == 1
            && tripped[0].starts_with("A's activity `a` ended `stopped by control` after 0.648 s"),
        "{tripped:?}"
    );
    // A planned stop, and a run whose thresholds failed without an abort.
    let mut planned = ok.clone();
    planned["activities"][0]["ended"] = json!("stopped");
    let (_, tripped) = render(&ok, &planned, None, &gates, false);
    assert!(tripped.is_empty(), "{tripped:?}");
    let mut failed = planned.clone();
    failed["outcome"] = json!("thresholds failed");
    failed["thresholds"] = json!([{"expr": "errors<1%", "pass": false}]);
    let (_, tripped) = render(&ok, &failed, None, &gates, false);
    assert!(tripped.is_empty(), "{tripped:?}");
    // Judged anyway when asked.
    let (_, tripped) = render(&ok, &marked, None, &gates, true);
    assert!(tripped.is_empty(), "{tripped:?}");
}

/// Regression (review p18, G-2): a file written since `ended` names who
/// stopped an activity, whose scenario ended with a planned `stop` and whose
/// `abort_on_fail` threshold failed only at the final check, was read as one
/// cut short by the abort ("not comparable", every gate tripped). Only a file
/// without `ended_says_who_stopped` is read so.
#[test]
fn a_planned_stop_with_an_abort_threshold_failed_at_the_end_is_comparable() {
    let mut ok = summary(2_000_000, 500.0, 0);
    ok["outcome"] = json!("completed");
    ok["activities"][0]["ended"] = json!("ran its duration");
    let gates = [gate("rate<-5%")];
    let mut planned = ok.clone();
    planned["outcome"] = json!("thresholds failed");
    planned["thresholds"] = json!([{"expr": "achieved>=99% abort_on_fail", "pass": false}]);
    planned["activities"][0]["ended"] = json!("stopped");
    planned[super::super::meta::ENDED_SAYS_WHO] = json!(true);
    let (text, tripped) = render(&ok, &planned, None, &gates, false);
    assert!(tripped.is_empty(), "{text}\n{tripped:?}");
    assert!(!text.contains("not comparable"), "{text}");
    // The same file without the field (an older one) is still read as cut short.
    if let Some(m) = planned.as_object_mut() {
        m.remove(super::super::meta::ENDED_SAYS_WHO);
    }
    let (_, tripped) = render(&ok, &planned, None, &gates, false);
    assert_eq!(tripped.len(), 1, "{tripped:?}");
}
