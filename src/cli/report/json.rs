//! The `--summary-json` document: one object per activity, numbers in nanoseconds.

use super::{ActivityReport, units};
use paceline::{Latencies, Nanos, Spread, Verdict};
use serde::Serialize;
use std::collections::BTreeMap;

/// The whole document: the run's metadata and threshold results (when the run
/// has them) at the top level, then `"activities": [...]`.
#[derive(Debug, Serialize)]
pub struct SummaryJson<'a> {
    /// `version`, `started_at`, `ended_at`, `command_line`, `host`, `os`,
    /// `cpu_model`, `cores` (`cli::meta`), `thresholds` (`cli::gate`) and how the
    /// run ended, `outcome`, `failure` and `exit_code` (`cli::finish`), for a
    /// run; empty where the document is built for something else.
    #[serde(flatten)]
    pub run: serde_json::Map<String, serde_json::Value>,
    /// One entry per activity, in the order given.
    pub activities: Vec<ActivityJson<'a>>,
}

/// One activity's totals.
#[derive(Debug, Serialize)]
pub struct ActivityJson<'a> {
    /// The activity's alias.
    pub alias: &'a str,
    /// The driver that ran its ops.
    pub driver: &'a str,
    /// Worker threads (at the end of the run).
    pub threads: usize,
    /// Cycles requested, completed, and how many of them failed.
    pub cycles: CyclesJson,
    /// Seconds from the first interval's start (the schedule's first slot) to
    /// the last one's end.
    pub elapsed_seconds: f64,
    /// Seconds of set-up before the schedule's first slot (the workers opening
    /// their connections): in no rate.
    pub setup_seconds: f64,
    /// Target (null when unpaced), achieved rate and strictness.
    pub rate: RateJson,
    /// Slots the pacer gave up on while the activity ran (not while paused).
    pub missed_slots: u64,
    /// Seconds the activity spent paused.
    pub paused_seconds: f64,
    /// Retries counted.
    pub retries: u64,
    /// Error counts by kind name.
    pub errors_by_kind: BTreeMap<&'a str, u64>,
    /// The first message of each error kind (left out when no op failed).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub first_errors: BTreeMap<&'a str, &'a str>,
    /// Service times in nanoseconds.
    pub service_ns: LatenciesJson,
    /// Wait times in nanoseconds.
    pub wait_ns: LatenciesJson,
    /// Response times in nanoseconds.
    pub response_ns: LatenciesJson,
    /// The queueing part of paced ops' waits (left out when unpaced).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue_ns: Option<LatenciesJson>,
    /// The dispatch part of paced ops' waits (left out when unpaced).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dispatch_ns: Option<LatenciesJson>,
    /// Each op's figures, in the order the file writes the ops that ran (left
    /// out when the engine did not know the ops: a workload given in code).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub by_op: Vec<OpJson<'a>>,
    /// The async runner's ops in flight (left out on the sync runner):
    /// `{"concurrency", "max", "cap_full_share"}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_flight: Option<serde_json::Value>,
    /// The verdict on the run ([`verdict_json`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<serde_json::Value>,
    /// How it ended: `completed`, `ran its duration` (a `duration` or
    /// `--duration` ended it), `stopped` (a scenario's `stop`),
    /// `stopped by abort_on_fail` (a threshold failed at an interval),
    /// `stopped by control` (a control `stop`), `stopped by interrupt` (Ctrl-C
    /// or SIGTERM), `failed: …` (left out while running). `compare` refuses
    /// the first two cut short (audit p18, H1), and an interrupted run by its
    /// `outcome`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended: Option<&'a str>,
    /// Control events, seconds since the schedule's first slot (where the
    /// interval lines, the rates and a `duration` count from; negative for the
    /// set-up before it).
    pub timeline: Vec<TimelineJson>,
    /// The driver's own counters, when it has any (the `http` driver: requests,
    /// new connections, requests per connection, statuses).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub driver_stats: Option<&'a serde_json::Value>,
    /// The shared schedule's global numbers, for a coordinated activity
    /// (`report::shared::coordinated_json`); left out when it paced alone.
    #[cfg(feature = "redis")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub coordinated: Option<serde_json::Value>,
}

/// One op's figures: `{"op", "ops", "errors_by_kind", "service_ns", "wait_ns",
/// "response_ns"}`.
#[derive(Debug, Serialize)]
pub struct OpJson<'a> {
    /// The op's name as the activity file gives it (`BLOCK__OP` in a block).
    pub op: &'a str,
    /// Ops of it done, errors included.
    pub ops: u64,
    /// Its error counts by kind name.
    pub errors_by_kind: BTreeMap<&'a str, u64>,
    /// Its service times in nanoseconds.
    pub service_ns: LatenciesJson,
    /// Its wait times in nanoseconds.
    pub wait_ns: LatenciesJson,
    /// Its response times in nanoseconds.
    pub response_ns: LatenciesJson,
}

/// Cycle counts.
#[derive(Debug, Serialize)]
pub struct CyclesJson {
    /// Cycles the activity was asked to run (0 when unbounded).
    pub requested: u64,
    /// Cycles (ops) completed.
    pub completed: u64,
    /// Errors counted, all kinds together.
    pub errors: u64,
    /// Of `errors`, the ops a planned end cut (`cancelled` when the activity
    /// `completed`, `ran its duration` or was `stopped` by its scenario): the
    /// `errors` thresholds and `compare`'s `errors` row leave them out (audit
    /// p18, M9). 0 when a stop that was asked for cut them (abort, control,
    /// interrupt): those stay errors.
    pub cancelled_at_end: u64,
}

/// Rates in ops per second.
#[derive(Debug, Serialize)]
pub struct RateJson {
    /// The target rate at the end of the run; null when unpaced.
    pub target: Option<f64>,
    /// The mean target over the run: ramps, rate changes and pauses weighted by
    /// how long they lasted. The verdict judges `achieved` against it. Null when
    /// unpaced (or not known: then `target`).
    pub mean_target: Option<f64>,
    /// The achieved rate over the whole run (`paceline::achieved_rate`). Paced:
    /// the ops started (completed, failed or cancelled in flight) minus one over
    /// the span from the first slot to the last start, so a run whose ops all
    /// started on time reads its rate however long the last ones took, and never
    /// more than the mean target. Unpaced: ops over the run's time.
    pub achieved: f64,
    /// Ops completed over the run's time (`elapsed_seconds`, from the first slot
    /// to the last op's end): the closed loop's throughput, as pgbench's tps or
    /// redis-benchmark report it. Paced, it reads below `achieved` by the
    /// drain after the last start (1000 ops of 200 ms at 1000/s: 834/s).
    pub completed: f64,
    /// The pacer's strictness; null when unpaced.
    pub strictness: Option<f64>,
    /// For Poisson arrivals, the rate the run's drawn slots asked for over the
    /// ops that started (`paceline::drawn_rate`): `achieved` is capped at it,
    /// and the verdict judges `achieved` against it. Absent for uniform slots
    /// (the agreed shape of a uniform run's document is unchanged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drawn: Option<f64>,
}

/// A distribution's figures in nanoseconds (the mean rounded to whole nanoseconds).
/// An empty distribution (`count` 0: no ops of that kind) has no figures: each
/// is `null`, never 0, which would read as ops that took no time.
#[derive(Debug, Serialize, PartialEq)]
pub struct LatenciesJson {
    /// Values recorded.
    pub count: u64,
    /// Smallest.
    pub min: Option<Nanos>,
    /// Mean.
    pub mean: Option<Nanos>,
    /// Median.
    pub p50: Option<Nanos>,
    /// 90th percentile.
    pub p90: Option<Nanos>,
    /// 99th percentile.
    pub p99: Option<Nanos>,
    /// 99.9th percentile.
    pub p999: Option<Nanos>,
    /// 99.99th percentile.
    pub p9999: Option<Nanos>,
    /// Largest.
    pub max: Option<Nanos>,
}

impl From<&Latencies> for LatenciesJson {
    fn from(l: &Latencies) -> Self {
        let s = l.summary();
        let some = |v: Nanos| (s.count > 0).then_some(v);
        Self {
            count: s.count,
            min: some(s.min),
            mean: some(s.mean.round() as Nanos),
            p50: some(s.p50),
            p90: some(s.p90),
            p99: some(s.p99),
            p999: some(s.p999),
            p9999: some(s.p9999),
            max: some(s.max),
        }
    }
}

/// One timeline entry.
#[derive(Debug, Serialize)]
pub struct TimelineJson {
    /// Seconds from the activity's first slot (negative before it).
    pub at_seconds: f64,
    /// The event as text, such as `threads 4 -> 8`.
    pub event: String,
}

/// A verdict as JSON: `{"kind", "reason", "queue_ns": {"min", "p50", "p99",
/// "max"}, "dispatch_ns": {…}, "generator_cpu_cores", "machine_cores",
/// "concurrency_needed", "threads", "wait_bound_ns"}` (`generator_cpu_cores` is
/// null where the OS gives no CPU time). The summary JSON, the control
/// endpoint's status and `findmax` write it the same way.
pub fn verdict_json(v: &Verdict) -> serde_json::Value {
    // An empty distribution's figures are null, as the summary's own are.
    let spread = |s: &Spread| {
        let f = |n: u64| (s.count > 0).then_some(n);
        serde_json::json!({"min": f(s.min), "p50": f(s.p50), "p99": f(s.p99), "max": f(s.max)})
    };
    serde_json::json!({
        "kind": v.kind.as_str(),
        "reason": v.reason,
        "queue_ns": spread(&v.queue),
        "dispatch_ns": spread(&v.dispatch),
        "generator_cpu_cores": v.generator_cpu_cores,
        "machine_cores": v.machine_cores,
        "concurrency_needed": v.concurrency_needed,
        "threads": v.threads,
        "wait_bound_ns": v.wait_bound,
        "concurrency": v.concurrency,
        "run_queue_delay_per_op_ns": v.scheduling_delay_per_op,
    })
}

impl<'a> SummaryJson<'a> {
    /// The document for these totals; `origin` is the run's start on the activities'
    /// clock, so timeline times become seconds into the run.
    pub fn new(origin: Nanos, totals: &[ActivityReport<'a>]) -> Self {
        let activities = totals
            .iter()
            .map(|r| {
                let (info, t) = (r.info, r.snapshot);
                ActivityJson {
                    alias: &info.alias,
                    driver: &info.driver,
                    threads: info.threads,
                    cycles: CyclesJson {
                        requested: info.cycles_requested,
                        completed: t.ops(),
                        errors: t.error_count(),
                        cancelled_at_end: info.cut_at_end(t),
                    },
                    elapsed_seconds: t.elapsed_nanos() as f64 / 1e9,
                    setup_seconds: t.setup_nanos() as f64 / 1e9,
                    rate: RateJson {
                        target: info.target_rate,
                        mean_target: info.target_rate.and(info.mean_target),
                        achieved: r.achieved(),
                        completed: t.rate(),
                        strictness: info.target_rate.and(info.strictness),
                        drawn: info.verdict.as_ref().and_then(|v| v.drawn_rate),
                    },
                    missed_slots: t.missed(),
                    paused_seconds: t.paused_nanos() as f64 / 1e9,
                    retries: t.retries(),
                    errors_by_kind: r.snapshot.errors().collect(),
                    first_errors: info
                        .first_errors
                        .iter()
                        .map(|(k, m)| (k.as_str(), m.as_str()))
                        .collect(),
                    service_ns: t.service().into(),
                    wait_ns: t.wait().into(),
                    response_ns: t.response().into(),
                    queue_ns: (t.queue().count() > 0).then(|| t.queue().into()),
                    dispatch_ns: (t.dispatch().count() > 0).then(|| t.dispatch().into()),
                    by_op: t
                        .by_op()
                        .iter()
                        .map(|o| OpJson {
                            op: o.name(),
                            ops: o.ops(),
                            errors_by_kind: o.errors().collect(),
                            service_ns: o.service().into(),
                            wait_ns: o.wait().into(),
                            response_ns: o.response().into(),
                        })
                        .collect(),
                    in_flight: t.concurrency_cap().map(|cap| {
                        serde_json::json!({
                            "concurrency": cap,
                            "max": t.in_flight_max(),
                            "cap_full_share": t.cap_full_share(),
                        })
                    }),
                    verdict: info.verdict.as_ref().map(verdict_json),
                    ended: info.ended.as_deref(),
                    timeline: r
                        .events
                        .iter()
                        .map(|e| TimelineJson {
                            at_seconds: units::seconds_f64_since(
                                e.at,
                                info.schedule_start.unwrap_or(origin),
                            ),
                            event: e.event.to_string(),
                        })
                        .collect(),
                    driver_stats: info.driver_stats.as_ref(),
                    #[cfg(feature = "redis")]
                    coordinated: info
                        .coordinated
                        .as_ref()
                        .map(super::shared::coordinated_json),
                }
            })
            .collect();
        Self {
            run: serde_json::Map::new(),
            activities,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{info, snapshot};
    use super::*;
    use paceline::{Event, Snapshot, TimelineEntry};

    /// Issue 24 item 11: each op's figures in `by_op`, in the ops' order,
    /// adding up to the activity's.
    #[test]
    fn issue24_item11_the_summary_has_each_op_s_figures() {
        let metrics = paceline::Metrics::with_ops(0, &["read", "block1__write"]);
        let mut rec = metrics.recorder();
        for c in 0..4u64 {
            rec.set_op(usize::from(c == 3));
            rec.record(10, if c == 3 { 200 } else { 100 });
        }
        rec.error_named("conflict");
        let snap = metrics.snapshot(1_000_000);
        let i = info("a");
        let r = ActivityReport {
            info: &i,
            snapshot: &snap,
            events: &[],
        };
        let doc = serde_json::to_value(SummaryJson::new(0, &[r])).unwrap_or_default();
        let by_op = &doc["activities"][0]["by_op"];
        assert_eq!(by_op[0]["op"], "read");
        assert_eq!(by_op[0]["ops"], 3);
        assert_eq!(by_op[0]["service_ns"]["max"], 100);
        assert_eq!(by_op[0]["errors_by_kind"], serde_json::json!({}));
        assert_eq!(by_op[1]["op"], "block1__write");
        assert_eq!(by_op[1]["ops"], 1);
        assert_eq!(
            by_op[1]["errors_by_kind"],
            serde_json::json!({"conflict": 1})
        );
        assert_eq!(by_op[1]["response_ns"]["p50"], 210);
        assert_eq!(doc["activities"][0]["cycles"]["completed"], 4);
        // A snapshot without op names has no `by_op`.
        let plain = snapshot(0, 1_000_000);
        let r = ActivityReport {
            info: &i,
            snapshot: &plain,
            events: &[],
        };
        let doc = serde_json::to_value(SummaryJson::new(0, &[r])).unwrap_or_default();
        assert!(doc["activities"][0].get("by_op").is_none(), "{doc}");
    }

    #[test]
    fn the_document_has_the_agreed_shape() {
        let snap = snapshot(1_000_000_000, 11_010_000_000);
        let i = info("a");
        let events = [
            TimelineEntry {
                at: 1_000_000_000,
                event: Event::Started,
            },
            TimelineEntry {
                at: 6_500_000_000,
                event: Event::Threads { from: 4, to: 8 },
            },
        ];
        let r = ActivityReport {
            info: &i,
            snapshot: &snap,
            events: &events,
        };
        let doc = serde_json::to_value(SummaryJson::new(1_000_000_000, &[r])).unwrap_or_default();
        let want = serde_json::json!({"activities": [{
            "alias": "a", "driver": "diag", "threads": 4,
            "cycles": {"requested": 100000, "completed": 1000, "errors": 3, "cancelled_at_end": 0},
            "elapsed_seconds": 10.01, "setup_seconds": 0.0,
            "rate": {"target": 10000.0, "mean_target": null, "achieved": 1000.0 / 10.01,
                     "completed": 1000.0 / 10.01, "strictness": 1.1},
            "missed_slots": 2, "paused_seconds": 0.0,
            "retries": 1,
            "errors_by_kind": {"refused": 1, "timeout": 2},
            "service_ns": {"count": 1000, "min": 1000, "mean": 500_505, "p50": 500_223,
                           "p90": 900_095, "p99": 990_207, "p999": 999_423,
                           "p9999": 1_000_447, "max": 1_000_447},
            "wait_ns": {"count": 1000, "min": 10, "mean": 5006, "p50": 5_003, "p90": 9_007,
                        "p99": 9_903, "p999": 9_991, "p9999": 10_007, "max": 10_007},
            "response_ns": {"count": 1000, "min": 1010, "mean": 505_505, "p50": 505_087,
                            "p90": 909_311, "p99": 999_935, "p999": 1_009_151,
                            "p9999": 1_010_175, "max": 1_010_175},
            "timeline": [
                {"at_seconds": 0.0, "event": "started"},
                {"at_seconds": 5.5, "event": "threads 4 -> 8"}
            ]
        }]});
        assert_eq!(doc, want);
    }

    #[test]
    fn unpaced_activities_have_null_target_and_strictness() {
        let snap = Snapshot::empty(0, 0);
        let mut i = info("u");
        i.target_rate = None;
        let r = ActivityReport {
            info: &i,
            snapshot: &snap,
            events: &[],
        };
        let doc = serde_json::to_value(SummaryJson::new(0, &[r])).unwrap_or_default();
        assert_eq!(
            doc["activities"][0]["rate"],
            serde_json::json!({"target": null, "mean_target": null, "achieved": 0.0,
                "completed": 0.0, "strictness": null})
        );
        assert_eq!(
            doc["activities"][0]["wait_ns"]["max"],
            serde_json::Value::Null
        );
        assert_eq!(
            doc["activities"][0]["errors_by_kind"],
            serde_json::json!({})
        );
    }

    /// Regression (session 13): an empty distribution (no ops) was written as
    /// zeros beside `"count": 0`, as if ops took no time; its figures are null.
    #[test]
    fn an_empty_distribution_has_null_figures() {
        let snap = Snapshot::empty(0, 1_000_000_000);
        let i = info("e");
        let r = ActivityReport {
            info: &i,
            snapshot: &snap,
            events: &[],
        };
        let doc = serde_json::to_value(SummaryJson::new(0, &[r])).unwrap_or_default();
        let nulls = serde_json::json!({"count": 0, "min": null, "mean": null, "p50": null,
            "p90": null, "p99": null, "p999": null, "p9999": null, "max": null});
        for d in ["service_ns", "wait_ns", "response_ns"] {
            assert_eq!(doc["activities"][0][d], nulls, "{d}");
        }
        // One value: every figure is it, none null.
        let metrics = paceline::Metrics::new(0);
        let mut rec = metrics.recorder();
        rec.record(0, 7);
        let one = LatenciesJson::from(metrics.snapshot(1).service());
        assert_eq!(
            (one.count, one.min, one.p99, one.max),
            (1, Some(7), Some(7), Some(7))
        );
    }

    /// Issue 24, item 8: the mean target over the run is in the JSON beside the
    /// target at the end, and the achieved rate is set against it.
    #[test]
    fn the_rate_carries_the_mean_target() {
        let snap = snapshot(0, 1_000_000_000);
        let mut i = info("a");
        i.target_rate = Some(3_000.0);
        i.mean_target = Some(2_000.0);
        let r = ActivityReport {
            info: &i,
            snapshot: &snap,
            events: &[],
        };
        let doc = serde_json::to_value(SummaryJson::new(0, &[r])).unwrap_or_default();
        assert_eq!(
            doc["activities"][0]["rate"],
            serde_json::json!({"target": 3000.0, "mean_target": 2000.0, "achieved": 1000.0,
                               "completed": 1000.0, "strictness": 1.1})
        );
    }

    #[test]
    fn the_first_message_of_each_error_kind_is_in_the_summary() {
        let snap = snapshot(0, 1_000_000_000);
        let mut i = info("a");
        i.first_errors = vec![("timeout".into(), "no answer within 2s".into())];
        let r = ActivityReport {
            info: &i,
            snapshot: &snap,
            events: &[],
        };
        let doc = serde_json::to_value(SummaryJson::new(0, &[r])).unwrap_or_default();
        assert_eq!(
            doc["activities"][0]["first_errors"],
            serde_json::json!({"timeout": "no answer within 2s"})
        );
    }
}
