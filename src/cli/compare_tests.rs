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
    let (text, tripped) = render(&a, &b, None, &gates);
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
    let (text, tripped) = render(&a, &b, None, &gates);
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
    let (_, tripped) = render(&b, &a, None, &gates);
    assert_eq!(
        tripped,
        [
            "--fail-if `response.p99>+10%` on `a`: no data in A (no ops of that kind)",
            "--fail-if `response.p99<-10%` on `a`: no data in A (no ops of that kind)",
        ]
    );
    // A gate on another figure is judged as before.
    let rate = [Gate::parse("rate<-5%").unwrap_or_else(|e| panic!("{e:?}"))];
    let (_, tripped) = render(&a, &b, None, &rate);
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
        let (_, tripped) = render(&a, b, None, &gates);
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
    let (_, tripped) = render(&none, &none, None, &gates[..1]);
    assert_eq!(
        tripped,
        ["--fail-if `rate<-5%`: A has no activity: nothing to judge (pass a baseline that ran)"]
    );
    // An activity only in B is no failure of a gate on A's activities.
    let mut more = a.clone();
    if let Some(l) = more["activities"].as_array_mut() {
        l.push(renamed["activities"][0].clone());
    }
    let (_, tripped) = render(&a, &more, None, &gates[..1]);
    assert!(tripped.is_empty(), "{tripped:?}");
}
