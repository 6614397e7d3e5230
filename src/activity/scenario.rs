//! Running a scenario: its steps in order against an engine.

use super::drivers::{Drivers, StartError};
use super::model::{Activity, ParamOverrides, Scenario, Step};
use crate::clock::{Signal, Waiting};
use crate::engine::{Control, ControlError, Engine};
use crate::nanos;
use std::fmt;

/// Why a scenario stopped early.
///
/// ```
/// let e = paceline::ScenarioError::NotStarted { step: 2, alias: "b".into() };
/// assert_eq!(e.to_string(), "step 2: no activity `b` was started before this step");
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum ScenarioError {
    /// A `run` or `start` step could not start its activity.
    Start {
        /// The step's 1-based position.
        step: usize,
        /// Why.
        error: StartError,
    },
    /// A control step was refused (the activity had finished, or a value was bad).
    Control {
        /// The step's 1-based position.
        step: usize,
        /// The activity.
        alias: String,
        /// Why.
        error: ControlError,
    },
    /// A step names an activity that no earlier step started.
    NotStarted {
        /// The step's 1-based position.
        step: usize,
        /// The alias.
        alias: String,
    },
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Start { step, error } => write!(f, "step {step}: {error}"),
            Self::Control { step, alias, error } => {
                write!(f, "step {step} (activity `{alias}`): {error}")
            }
            Self::NotStarted { step, alias } => write!(
                f,
                "step {step}: no activity `{alias}` was started before this step"
            ),
        }
    }
}

impl std::error::Error for ScenarioError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Start { error, .. } => Some(error),
            Self::Control { error, .. } => Some(error),
            Self::NotStarted { .. } => None,
        }
    }
}

/// Runs the steps of `scenario` in order on `engine`, then waits for every
/// activity it started. `overrides` (say, from the command line) apply over every
/// `run`/`start` step's own. `stop` cuts `wait` steps short and ends the scenario
/// (the caller stops the activities).
///
/// On the real clock (the manual clock jumps to each waiter's deadline, so the
/// activity could run to its end before the `rate` step on a busy machine):
/// 10/s for about 20 ms, then the rest at 2000/s.
///
/// ```
/// use paceline::{Drivers, Engine, Outcome, Signal, run_scenario};
/// let drivers = Drivers::builtin();
/// let a = drivers.loader().from_str(r#"
/// params: {driver: diag, cycles: 100}
/// ops: {o: x}
/// scenarios:
///   default:
///     - run: {alias: warmup, cycles: 10}
///     - start: {rate: 10}
///     - wait: 20ms
///     - rate: 2000
///     - await
/// "#, "s.yaml")?;
/// let engine = Engine::new();
/// run_scenario(&drivers, &engine, &a, a.scenario("default").unwrap(), &Default::default(), &Signal::new())?;
/// let ends = engine.wait_all();
/// assert_eq!(ends, [("warmup".into(), Outcome::Completed), ("s".into(), Outcome::Completed)]);
/// assert_eq!(engine.get("s").unwrap().snapshot().ops(), 100);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn run_scenario(
    drivers: &Drivers,
    engine: &Engine,
    activity: &Activity,
    scenario: &Scenario,
    overrides: &ParamOverrides,
    stop: &Signal,
) -> Result<(), ScenarioError> {
    let mut started: Vec<Control> = Vec::new();
    let find = |started: &[Control], step: usize, alias: &str| {
        started
            .iter()
            .rev()
            .find(|c| c.alias() == alias)
            .cloned()
            .ok_or_else(|| ScenarioError::NotStarted {
                step,
                alias: alias.to_string(),
            })
    };
    for (i, s) in scenario.steps.iter().enumerate() {
        if stop.is_stopped() {
            break;
        }
        let step = i + 1;
        let control_err = |alias: &str, error| ScenarioError::Control {
            step,
            alias: alias.to_string(),
            error,
        };
        match s {
            Step::Run(o) | Step::Start(o) => {
                let own = o;
                let o = o.then(overrides);
                let c = drivers.start(engine, activity, &o).map_err(|error| {
                    let error = placed(error, activity, scenario, i, own, overrides);
                    ScenarioError::Start { step, error }
                })?;
                started.push(c.clone());
                if matches!(s, Step::Run(_)) {
                    wait_or_stop(&c, stop);
                }
            }
            Step::Wait(d) => {
                let clock = engine.clock();
                let deadline = clock.now().saturating_add(nanos::from_duration(*d));
                clock.wait_until(deadline, &Waiting::sleep(), stop);
            }
            Step::Await { alias } => {
                let c = find(&started, step, alias)?;
                wait_or_stop(&c, stop);
            }
            Step::Rate { alias, spec } => {
                let c = find(&started, step, alias)?;
                c.set_rate(*spec).map_err(|e| control_err(alias, e))?;
            }
            Step::Ramp { alias, to, over } => {
                let c = find(&started, step, alias)?;
                c.ramp_to(*to, *over).map_err(|e| control_err(alias, e))?;
            }
            Step::Threads { alias, count } => {
                let c = find(&started, step, alias)?;
                c.set_threads(*count).map_err(|e| control_err(alias, e))?;
            }
            Step::Concurrency { alias, count } => {
                let c = find(&started, step, alias)?;
                set_concurrency(&c, *count).map_err(|e| control_err(alias, e))?;
            }
            Step::Stop { alias } => {
                find(&started, step, alias)?.stop();
            }
            // An NB5 optimizer or app command: not run here (see its note).
            Step::Skipped { .. } => {}
        }
    }
    for c in &started {
        wait_or_stop(c, stop);
    }
    Ok(())
}

/// A step's start refused by its driver for a param, placed where the value
/// in force was written (audit p17 M4: the file's own param was named, at
/// line 1, for the bad URL a step's command gave): the step (its command's
/// place in the file) when the step set it, the command line when that did;
/// the driver itself places a param only the file set.
fn placed(
    error: StartError,
    activity: &Activity,
    scenario: &Scenario,
    index: usize,
    own: &ParamOverrides,
    overrides: &ParamOverrides,
) -> StartError {
    let StartError::Driver(d) = &error else {
        return error;
    };
    let Some(param) = d.param() else {
        return error;
    };
    let at = if overrides.names().contains(&param) {
        "the command line".to_string()
    } else if own.names().contains(&param) {
        match step_place(activity, scenario, index) {
            Some((line, column)) => format!("{}:{line}:{column}", activity.source()),
            None => return error,
        }
    } else {
        return error;
    };
    StartError::Driver(super::drivers::DriverError::new(
        d.driver(),
        format!("{at}: {}", d.message()),
    ))
}

/// The 1-based (line, column) of step `index` of `scenario` in the file: a
/// list's item or an NB5 map's named command (a scenario cut to one step,
/// `FILE SCENARIO.STEP`, is found under its own scenario).
fn step_place(activity: &Activity, scenario: &Scenario, index: usize) -> Option<(usize, usize)> {
    use super::locate::{Seg, Target, locate};
    let name = scenario.step_names.get(index)?;
    let mut scenarios = vec![scenario.name.as_str()];
    if let Some((whole, _)) = scenario.name.rsplit_once('.') {
        scenarios.push(whole);
    }
    let mut steps = Vec::new();
    if let Ok(n) = name.parse::<usize>() {
        steps.push(Seg::Index(n.saturating_sub(1)));
    }
    steps.push(Seg::Key(name.clone()));
    scenarios.iter().find_map(|sc| {
        steps.iter().find_map(|step| {
            let path = [
                Seg::Key("scenarios".into()),
                Seg::Key((*sc).to_string()),
                step.clone(),
            ];
            locate(&activity.text, &path, Target::Value)
        })
    })
}

/// [`Control::set_concurrency`] (refused under loom, which has no async runner).
fn set_concurrency(c: &Control, n: usize) -> Result<(), ControlError> {
    #[cfg(not(loom))]
    return c.set_concurrency(n);
    #[cfg(loom)]
    {
        let _ = (c, n);
        Err(ControlError::BadValue {
            why: "no async runner in this build".into(),
        })
    }
}

/// Waits for `c` to finish, giving up when `stop` is stopped.
fn wait_or_stop(c: &Control, stop: &Signal) {
    while c
        .wait_timeout(std::time::Duration::from_millis(20))
        .is_none()
    {
        if stop.is_stopped() {
            return;
        }
    }
}
