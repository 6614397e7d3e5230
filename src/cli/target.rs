//! The engine as the control endpoint's target.

use super::control::{ControlError, ControlTarget};
use super::metrics::{ActivityMetrics, BucketScheme};
use paceline::{
    Control, ControlError as EngineControlError, Engine, RateSpec, RunState, Scope, Signal,
};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The latest interval of each activity, as JSON, for `GET /activities` (and its
/// `rate` for `GET /metrics`).
pub type Intervals = Arc<Mutex<HashMap<String, Value>>>;

/// Routes control requests to the engine's activities by alias.
pub struct EngineTarget {
    engine: Engine,
    intervals: Intervals,
    /// The running scenario's stop signal: a control `stop` ends the scenario.
    scenario: Mutex<Option<Signal>>,
    /// The `/metrics` histograms' bounds (`--metrics-buckets`).
    buckets: BucketScheme,
    /// Stopped once the run has ended and its reports are written
    /// (`paceline_run_ended`).
    ended: Signal,
}

impl EngineTarget {
    /// A target for `engine`; `intervals` is filled by the run loop.
    pub fn new(engine: Engine, intervals: Intervals) -> Self {
        Self {
            engine,
            intervals,
            scenario: Mutex::new(None),
            buckets: BucketScheme::default(),
            ended: Signal::new(),
        }
    }

    /// The same target, its `/metrics` histograms in `scheme`'s buckets.
    pub fn with_buckets(mut self, scheme: BucketScheme) -> Self {
        self.buckets = scheme;
        self
    }

    /// Says that the run has ended: from now on `paceline_run_ended` reads 1,
    /// and the numbers served are final (`--linger`).
    pub fn run_ended(&self) {
        self.ended.stop();
    }

    /// From now on, a `stop` request also stops `signal`, the running scenario's:
    /// its remaining steps do not run and its waits end at once.
    pub fn stop_scenario_with(&self, signal: Signal) {
        *self.scenario.lock().unwrap_or_else(|p| p.into_inner()) = Some(signal);
    }

    fn get(&self, alias: &str) -> Result<Control, ControlError> {
        self.engine
            .get(alias)
            .ok_or_else(|| ControlError::UnknownAlias(alias.to_string()))
    }
}

/// The timeline note a control `stop` leaves on the activity it stops.
pub(super) const CONTROL_STOP: &str = "stop requested (control)";

fn map(e: EngineControlError) -> ControlError {
    match e {
        EngineControlError::BadValue { why } => ControlError::BadValue(why),
        other => ControlError::Conflict(other.to_string()),
    }
}

/// One activity's status as JSON.
pub fn status_json(c: &Control, interval: Option<&Value>) -> Value {
    let s = c.status();
    let rate = s.rate.map(|r| {
        // `rate` is the spec's rate, in the unit `PUT .../rate` takes with
        // the spec's scope, as it always was (a GET then PUT round trip keeps
        // it); `target` is that of every thread together, as the summary's
        // `rate.target`: in thread scope each thread's schedule runs at the
        // spec's rate, which `per_thread` repeats (null in activity scope,
        // where one schedule is shared).
        let target = paceline::total_rate(&r, s.threads);
        json!({
            "rate": r.rate(),
            "target": target,
            "per_thread": (r.scope_value() == Scope::Thread).then(|| r.rate()),
            "strictness": r.strictness_value(),
            "scope": r.scope_value(),
        })
    });
    json!({
        "alias": s.alias,
        "driver": s.driver,
        "threads": s.threads,
        "live_threads": s.live_threads,
        "rate": rate,
        // No bound (a `duration` without `cycles`) is null, not 2^53 (audit L3).
        "cycles": {
            "start": s.cycles.start,
            "end": (s.cycles.end < paceline::UNBOUNDED_CYCLES).then_some(s.cycles.end),
            "completed": s.completed,
        },
        "outcome": s.outcome.as_ref().map(|o| o.to_string()),
        // As `/metrics` says it: `rate=0` holds an activity paused too (audit L3:
        // `"paused": false, "state": "running"` beside `paceline_paused 1`).
        "paused": paused(&s),
        "state": if paused(&s) { "paused".to_string() } else { s.state.to_string() },
        "current_interval": interval.cloned(),
        // The latest interval's verdict (`report::json::verdict_json`).
        "verdict": interval.and_then(|i| i.get("verdict")).cloned(),
        "coordinated": coordinated_of(c),
    })
}

/// Whether the activity is held paused: by a control pause, or by a rate of 0
/// (`rate=0` starts an activity paused as well, issue 24 item 1).
fn paused(s: &paceline::Status) -> bool {
    match s.state {
        RunState::Paused => true,
        RunState::Running => s.rate.is_some_and(|r| r.rate() == 0.0),
        _ => false,
    }
}

/// The shared schedule's numbers as in the summary JSON
/// (`report::shared::coordinated_json`); null when the activity paces alone.
#[cfg(feature = "redis")]
fn coordinated_of(c: &Control) -> Value {
    c.coordinated()
        .map_or(Value::Null, |s| super::report::shared::coordinated_json(&s))
}

/// Without the `redis` feature every activity paces alone.
#[cfg(not(feature = "redis"))]
fn coordinated_of(_: &Control) -> Value {
    Value::Null
}

/// The numbers `GET /metrics` shows for the activities `runs` (in start order),
/// given the latest interval of each alias. Runs that share an alias (a scenario
/// that runs it twice) add up, so its counters never go back; the gauges come
/// from its newest run.
pub fn metrics_of(runs: &[Control], intervals: &HashMap<String, Value>) -> Vec<ActivityMetrics> {
    let mut out: Vec<ActivityMetrics> = Vec::new();
    for c in runs {
        let s = c.status();
        let held = paused(&s);
        let live = !matches!(s.state, RunState::Finished);
        // Every thread's schedule together, as the summary's target: in thread
        // scope, threads x the spec's rate (`paceline::total_rate`).
        let rate_target = match s.state {
            RunState::Running => s.rate.map_or(0.0, |r| paceline::total_rate(&r, s.threads)),
            _ => 0.0,
        };
        let rate_achieved = if live {
            intervals
                .get(c.alias())
                .and_then(|i| i["rate"].as_f64())
                .unwrap_or(0.0)
        } else {
            0.0
        };
        let totals = c.totals();
        let mut now = ActivityMetrics {
            alias: s.alias,
            totals,
            rate_target,
            rate_achieved,
            threads: if live { s.threads } else { 0 },
            paused: held,
            #[cfg(feature = "redis")]
            coordinated: c.coordinated(),
        };
        match out.iter_mut().find(|m| m.alias == now.alias) {
            Some(earlier) => {
                now.totals.merge(&earlier.totals);
                *earlier = now;
            }
            None => out.push(now),
        }
    }
    out
}

impl ControlTarget for EngineTarget {
    fn metrics(&self) -> String {
        let runs = self.engine.activities();
        let intervals = self.intervals.lock().unwrap_or_else(|p| p.into_inner());
        let metrics = metrics_of(&runs, &intervals);
        drop(intervals);
        // `paceline_run_ended`: 1 once the run has ended and the numbers are
        // final (a scraper during `--linger` sees it), 0 while it runs.
        super::metrics::encode_text(&metrics, self.buckets, Some(self.ended.is_stopped()))
    }

    fn metrics_protobuf(&self) -> Option<Vec<u8>> {
        let runs = self.engine.activities();
        let intervals = self.intervals.lock().unwrap_or_else(|p| p.into_inner());
        let metrics = metrics_of(&runs, &intervals);
        drop(intervals);
        Some(super::metrics::encode_protobuf(
            &metrics,
            self.buckets,
            Some(self.ended.is_stopped()),
        ))
    }

    fn activities(&self) -> Value {
        let intervals = self.intervals.lock().unwrap_or_else(|p| p.into_inner());
        Value::Array(
            self.engine
                .activities()
                .iter()
                .map(|c| status_json(c, intervals.get(c.alias())))
                .collect(),
        )
    }

    fn set_rate(&self, alias: &str, spec: RateSpec) -> Result<(), ControlError> {
        self.get(alias)?.set_rate(spec).map_err(map)
    }

    fn ramp(&self, alias: &str, to: RateSpec, over: Duration) -> Result<(), ControlError> {
        self.get(alias)?.ramp_to(to, over).map_err(map)
    }

    fn set_threads(&self, alias: &str, n: usize) -> Result<(), ControlError> {
        self.get(alias)?.set_threads(n).map_err(map)
    }

    fn set_concurrency(&self, alias: &str, n: usize) -> Result<(), ControlError> {
        self.get(alias)?.set_concurrency(n).map_err(map)
    }

    fn pause(&self, alias: &str) -> Result<(), ControlError> {
        self.get(alias)?.pause().map_err(map)
    }

    fn resume(&self, alias: &str) -> Result<(), ControlError> {
        self.get(alias)?.resume().map_err(map)
    }

    fn stop(&self, alias: &str) -> Result<(), ControlError> {
        let c = self.get(alias)?;
        if c.is_finished() {
            return Err(map(EngineControlError::Finished {
                alias: alias.into(),
            }));
        }
        // The timeline says who stopped it: `compare` refuses a run cut short by a
        // request (audit p18, H1), which `ended: "stopped"` alone does not tell
        // from a scenario's planned `stop`.
        c.metrics()
            .mark(c.now(), paceline::Event::Note(CONTROL_STOP.to_string()));
        c.stop();
        if let Some(s) = &*self.scenario.lock().unwrap_or_else(|p| p.into_inner()) {
            s.stop();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use paceline::{ActivityConfig, ManualClock, OpError, OpRunner, WorkerContext, Workload};

    struct Nop;
    impl Workload for Nop {
        fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
            Ok(Box::new(NopRun))
        }
    }
    struct NopRun;
    impl OpRunner for NopRun {
        fn run(&mut self, _: u64) -> Result<(), OpError> {
            Ok(())
        }
    }

    fn latest(rate: f64) -> HashMap<String, Value> {
        HashMap::from([("a".to_string(), json!({"rate": rate}))])
    }

    #[test]
    fn a_scrape_takes_no_snapshot_and_runs_of_one_alias_add_up() {
        let engine = Engine::with_clock(ManualClock::new());
        let first = engine
            .start(ActivityConfig::new("a").cycles(0..50), Nop)
            .unwrap_or_else(|e| panic!("{e}"));
        first.wait();
        // Before the report loop's first snapshot a scrape shows nothing, and
        // leaves every op to that snapshot.
        let m = metrics_of(&engine.activities(), &latest(5.0));
        assert_eq!((m.len(), m[0].totals.ops()), (1, 0));
        assert_eq!(first.snapshot().ops(), 50);
        let second = engine
            .start(ActivityConfig::new("a").cycles(0..30), Nop)
            .unwrap_or_else(|e| panic!("{e}"));
        second.wait();
        assert_eq!(second.snapshot().ops(), 30);
        let m = metrics_of(&engine.activities(), &latest(5.0));
        assert_eq!(m.len(), 1, "one series per alias");
        assert_eq!(m[0].totals.ops(), 80, "counters never go back");
        // Ended: nothing runs.
        assert_eq!(
            (m[0].threads, m[0].rate_target, m[0].rate_achieved),
            (0, 0.0, 0.0)
        );
    }

    #[test]
    fn an_activity_that_paces_alone_has_no_shared_schedule() {
        let engine = Engine::with_clock(ManualClock::new());
        let run = engine
            .start(ActivityConfig::new("a").cycles(0..5), Nop)
            .unwrap_or_else(|e| panic!("{e}"));
        run.wait();
        let status = status_json(&run, None);
        assert_eq!(status["alias"], "a");
        // Present, and null: the status lists every field it has.
        assert_eq!(status.get("coordinated"), Some(&Value::Null), "{status}");
        #[cfg(feature = "redis")]
        assert!(
            metrics_of(&engine.activities(), &HashMap::new())[0]
                .coordinated
                .is_none()
        );
    }

    /// Session 15's left-over: in thread scope (each thread's schedule at the
    /// spec's rate) the control status and `/metrics` showed the spec's rate,
    /// 1000, while the summary showed the total, 4000. Each place reads the
    /// total now, and the status says the per-thread rate apart.
    #[test]
    fn thread_scope_shows_the_summary_total_everywhere() {
        use super::super::report::{ActivityReport, json::SummaryJson};
        let engine = Engine::with_clock(ManualClock::new());
        let run = engine
            .start(
                ActivityConfig::new("a")
                    .cycles(0..1_000_000_000_000)
                    .threads(4)
                    .rate(RateSpec::new(1000.0).scope(Scope::Thread)),
                Nop,
            )
            .unwrap_or_else(|e| panic!("{e}"));
        let intervals: Intervals = Arc::default();
        let target = Arc::new(EngineTarget::new(engine.clone(), intervals));

        // The summary JSON, as the run loop builds it.
        let info = super::super::tracked::info_of(&run);
        let snap = run.snapshot();
        let report = ActivityReport {
            info: &info,
            snapshot: &snap,
            events: &[],
        };
        let summary = serde_json::to_value(SummaryJson::new(0, &[report])).unwrap_or_default();
        assert_eq!(
            summary["activities"][0]["rate"]["target"], 4000.0,
            "{summary}"
        );

        // The control API and `/metrics`, through the server's routes.
        let dyn_target: Arc<dyn ControlTarget> = target.clone();
        let server = super::super::control::ControlServer::start(
            std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            false,
            dyn_target,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let addr = server.local_addr();
        let status: Value = serde_json::from_str(&get(addr, "/activities/a")).unwrap_or_default();
        assert_eq!(status["rate"]["target"], 4000.0, "{status}");
        // Review A, finding 4: `rate.rate` read 4000 here, so a client that
        // PUT back `{rate*1.1},thread` asked for 4 x 1.1 times the rate.
        assert_eq!(status["rate"]["rate"], 1000.0, "{status}");
        assert_eq!(status["rate"]["per_thread"], 1000.0, "{status}");
        assert_eq!(status["rate"]["scope"], "thread", "{status}");
        let text = get(addr, "/metrics");
        assert!(
            text.contains("paceline_rate_target_ops_per_second{activity=\"a\"} 4000\n"),
            "{text}"
        );
        // After a change of threads, the total follows.
        run.set_threads(2).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            metrics_of(&engine.activities(), &HashMap::new())[0].rate_target,
            2000.0
        );
        assert_eq!(status_json(&run, None)["rate"]["target"], 2000.0);
        // Activity scope: one shared schedule, no per-thread rate.
        run.set_rate(RateSpec::new(1000.0))
            .unwrap_or_else(|e| panic!("{e}"));
        let status = status_json(&run, None);
        assert_eq!(status["rate"]["target"], 1000.0, "{status}");
        assert_eq!(status["rate"]["per_thread"], Value::Null, "{status}");
        assert_eq!(
            metrics_of(&engine.activities(), &HashMap::new())[0].rate_target,
            1000.0
        );
        drop(server);
        run.stop();
        run.wait();
    }

    /// One GET over a socket; the body.
    fn get(addr: std::net::SocketAddr, path: &str) -> String {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(addr).unwrap_or_else(|e| panic!("{e}"));
        let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
        let req = format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
        s.write_all(req.as_bytes())
            .unwrap_or_else(|e| panic!("{e}"));
        let mut raw = String::new();
        s.read_to_string(&mut raw).unwrap_or_else(|e| panic!("{e}"));
        raw.split_once("\r\n\r\n")
            .map(|(_, b)| b.to_string())
            .unwrap_or(raw)
    }

    /// Audit L3: `GET /activities` said `"cycles": {"end": 9007199254740992}`
    /// (2^53) for a run with no cycle bound, and `"paused": false, "state":
    /// "running"` for one launched at `rate=0`, which `/metrics` called paused.
    #[test]
    fn audit_l3_no_cycle_bound_is_null_and_rate_0_is_paused() {
        let engine = Engine::with_clock(ManualClock::new());
        let run = engine
            .start(
                ActivityConfig::new("a")
                    .cycles(0..paceline::UNBOUNDED_CYCLES)
                    .rate(RateSpec::new(0.0)),
                Nop,
            )
            .unwrap_or_else(|e| panic!("{e}"));
        let j = status_json(&run, None);
        assert_eq!(j["cycles"]["end"], Value::Null, "{j}");
        assert_eq!(
            (&j["paused"], &j["state"]),
            (&json!(true), &json!("paused")),
            "{j}"
        );
        run.set_rate(RateSpec::new(10.0))
            .unwrap_or_else(|e| panic!("{e}"));
        let j = status_json(&run, None);
        assert_eq!(
            (&j["paused"], &j["state"]),
            (&json!(false), &json!("running")),
            "{j}"
        );
        run.stop();
        run.wait();
        let bounded = engine
            .start(ActivityConfig::new("b").cycles(0..5), Nop)
            .unwrap_or_else(|e| panic!("{e}"));
        bounded.wait();
        assert_eq!(status_json(&bounded, None)["cycles"]["end"], 5);
    }

    #[test]
    fn the_target_rate_is_zero_while_paused_and_unpaced() {
        let engine = Engine::with_clock(ManualClock::new());
        let run = engine
            .start(
                ActivityConfig::new("a")
                    .cycles(0..1_000_000_000_000)
                    .threads(2)
                    .rate(RateSpec::new(1000.0)),
                Nop,
            )
            .unwrap_or_else(|e| panic!("{e}"));
        let gauges = || {
            let m = metrics_of(&engine.activities(), &latest(987.0));
            (m[0].rate_target, m[0].rate_achieved, m[0].threads)
        };
        assert_eq!(gauges(), (1000.0, 987.0, 2));
        run.pause().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(gauges(), (0.0, 987.0, 2));
        run.resume().unwrap_or_else(|e| panic!("{e}"));
        run.set_threads(3).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(gauges(), (1000.0, 987.0, 3));
        run.stop();
        run.wait();
        assert_eq!(gauges(), (0.0, 0.0, 0));

        let unpaced = engine
            .start(ActivityConfig::new("u").cycles(0..1_000_000_000_000), Nop)
            .unwrap_or_else(|e| panic!("{e}"));
        let m = metrics_of(&engine.activities(), &HashMap::new());
        assert_eq!((m[1].alias.as_str(), m[1].rate_target), ("u", 0.0));
        unpaced.stop();
        unpaced.wait();
    }
}
