//! The engine as the control endpoint's target.

use super::control::{ControlError, ControlTarget};
use paceline::{Control, ControlError as EngineControlError, Engine, RateSpec, RunState, Signal};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The latest interval of each activity, as JSON, for `GET /activities`.
pub type Intervals = Arc<Mutex<HashMap<String, Value>>>;

/// Routes control requests to the engine's activities by alias.
pub struct EngineTarget {
    engine: Engine,
    intervals: Intervals,
    /// The running scenario's stop signal: a control `stop` ends the scenario.
    scenario: Mutex<Option<Signal>>,
}

impl EngineTarget {
    /// A target for `engine`; `intervals` is filled by the run loop.
    pub fn new(engine: Engine, intervals: Intervals) -> Self {
        Self {
            engine,
            intervals,
            scenario: Mutex::new(None),
        }
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
        json!({
            "rate": r.rate(),
            "strictness": r.strictness_value(),
            "scope": r.scope_value(),
        })
    });
    json!({
        "alias": s.alias,
        "driver": s.driver,
        "state": s.state.to_string(),
        "threads": s.threads,
        "live_threads": s.live_threads,
        "rate": rate,
        "cycles": {"start": s.cycles.start, "end": s.cycles.end, "completed": s.completed},
        "outcome": s.outcome.map(|o| o.to_string()),
        "paused": s.state == RunState::Paused,
        "current_interval": interval.cloned(),
    })
}

impl ControlTarget for EngineTarget {
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
        c.stop();
        if let Some(s) = &*self.scenario.lock().unwrap_or_else(|p| p.into_inner()) {
            s.stop();
        }
        Ok(())
    }
}
