//! The `diag` driver: a synthetic op, the engine's own test instrument.

use super::{Driver, DriverError, OpPlan};
use crate::activity::bindings::hash::{hash_keyed, seed_key, unit};
use crate::activity::model::Field;
use crate::activity::params::duration;
use crate::engine::{OpError, OpRunner, WorkerContext, Workload};
use crate::nanos::Nanos;
use crate::sync::threads::Arc;
use std::time::Duration;

/// The `diag` driver: each op takes a set time (sleeping or spinning on the
/// engine's clock) and fails at a set rate, both fixed or drawn per cycle from
/// bindings. With nothing set, an op does nothing, which measures the engine.
///
/// Params (all optional):
///
/// | param | value | default |
/// |---|---|---|
/// | `latency` | duration of each op: `250us`, `2ms` (a bare number is seconds) | `0` |
/// | `latency_us` | the same in microseconds, a number | |
/// | `latency_mode` | `sleep` (the clock's waiting strategy), `spin` (busy), or `hang`: sleep the OS thread and ignore a stop, as an op blocked in a system call does (to try a stop timeout) | `sleep` |
/// | `error_rate` | share of cycles that fail, 0 to 1, chosen by a hash of the cycle | `0` |
/// | `error_kind` | the kind failures are counted under | `diag` |
///
/// With the activity's `concurrency`, `diag` runs on the async runner: an op's
/// latency is an engine sleep that holds no thread (`latency_mode: sleep` only),
/// so `latency=50ms concurrency=1200 threads=2` keeps 1200 ops in flight on two
/// threads.
///
/// Op fields `latency`, `latency_us`, `error_rate` and `fail` (`true` fails the
/// cycle) override the params per op and may be `{binding}` placeholders, so
/// latency can follow any distribution the bindings draw.
///
/// ```
/// use paceline::{Drivers, Engine, ManualClock, ParamOverrides};
/// let d = Drivers::builtin();
/// let a = d.loader().from_str(r#"
/// params: {driver: diag, cycles: 1000, latency: 1ms, error_rate: 0.1, errors: count}
/// bindings:
///   jitter: Uniform(0, 500); Round(0)
/// ops:
///   fixed: {stmt: steady}
///   drawn: {latency_us: "{jitter}"}
/// "#, "diag.yaml")?;
/// let run = d.start(&Engine::with_clock(ManualClock::new()), &a, &ParamOverrides::default())?;
/// run.wait();
/// let t = run.snapshot();
/// assert_eq!(t.ops(), 1000);
/// assert!((80..120).contains(&t.errors_of("diag")));        // about 10 %
/// assert!(t.service().max() >= 999_000);                    // the fixed op's 1 ms
/// assert!(t.service().min() <= 500_000);                    // the drawn op's 0..500 µs
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Diag;

/// The params `diag` accepts.
const PARAMS: &[&str] = &[
    "latency",
    "latency_us",
    "latency_mode",
    "error_rate",
    "error_kind",
];

/// Salt of the error-rate hash, so failures do not line up with `Hash()` bindings.
const ERROR_SEED: u64 = 0x6469_6167;

impl Driver for Diag {
    fn name(&self) -> &str {
        "diag"
    }

    fn error_kinds(&self, plan: &OpPlan) -> Option<Vec<String>> {
        let own = plan.param_str("error_kind").unwrap_or("diag");
        Some(vec![own.to_string(), "diag-value".to_string()])
    }

    fn params(&self) -> Option<&[&str]> {
        Some(PARAMS)
    }

    fn workload(&self, plan: Arc<OpPlan>) -> Result<Box<dyn Workload>, DriverError> {
        let err = |m: String| DriverError::new("diag", m);
        let latency = match (plan.param("latency"), plan.param("latency_us")) {
            (Some(_), Some(_)) => {
                return Err(err("set `latency` or `latency_us`, not both".to_string()));
            }
            (Some(v), None) => param_duration("latency", v).map_err(err)?,
            (None, Some(v)) => param_micros("latency_us", v).map_err(err)?,
            (None, None) => 0,
        };
        let mode = match plan.param_str("latency_mode") {
            None | Some("sleep") => Mode::Sleep,
            Some("spin") => Mode::Spin,
            Some("hang") => Mode::Hang,
            Some(other) => {
                return Err(err(format!(
                    "param `latency_mode`: `{other}` is not a mode; use `sleep`, `spin` or `hang`"
                )));
            }
        };
        if plan.param("latency_mode").is_some() && plan.param_str("latency_mode").is_none() {
            return Err(err(
                "param `latency_mode`: use `sleep`, `spin` or `hang`".to_string()
            ));
        }
        if mode != Mode::Sleep && plan.params().concurrency.is_some() {
            return Err(err(
                "param `latency_mode`: `spin` and `hang` hold the thread, so they cannot run \
                 with `concurrency`; drop `concurrency` (one op per thread) or use \
                 `latency_mode: sleep`"
                    .to_string(),
            ));
        }
        let error_rate = match plan.param("error_rate") {
            None => 0.0,
            Some(v) => rate("param `error_rate`", v).map_err(err)?,
        };
        let kind: Arc<str> = match plan.param("error_kind") {
            None => Arc::from("diag"),
            Some(serde_json::Value::String(s)) if !s.is_empty() => Arc::from(s.as_str()),
            Some(v) => {
                return Err(err(format!(
                    "param `error_kind`: {v} is not a name; write a word such as `timeout`"
                )));
            }
        };
        let mut ops = Vec::with_capacity(plan.ops().len());
        for op in plan.ops() {
            let field = |name: &str| op.field(name).cloned();
            let lat = match (field("latency"), field("latency_us")) {
                (Some(_), Some(_)) => {
                    return Err(err(format!(
                        "op `{}`: set `latency` or `latency_us`, not both",
                        op.name
                    )));
                }
                (Some(f), None) => Source::from_field(f, Unit::Duration)
                    .map_err(|m| err(format!("op `{}`: field `latency`: {m}", op.name)))?,
                (None, Some(f)) => Source::from_field(f, Unit::Micros)
                    .map_err(|m| err(format!("op `{}`: field `latency_us`: {m}", op.name)))?,
                (None, None) => Source::Fixed(latency as f64),
            };
            let rate = match field("error_rate") {
                Some(f) => Source::from_field(f, Unit::Rate)
                    .map_err(|m| err(format!("op `{}`: field `error_rate`: {m}", op.name)))?,
                None => Source::Fixed(error_rate),
            };
            let fail = match field("fail") {
                Some(f) => Some(
                    Source::from_field(f, Unit::Bool)
                        .map_err(|m| err(format!("op `{}`: field `fail`: {m}", op.name)))?,
                ),
                None => None,
            };
            ops.push(OpSpec {
                latency: lat,
                error_rate: rate,
                fail,
            });
        }
        Ok(Box::new(DiagWork(Arc::new(Shared {
            plan,
            ops,
            mode,
            kind,
            key: seed_key(ERROR_SEED),
        }))))
    }
}

/// How an op spends its latency.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// The clock's waiting strategy; ends early on stop.
    Sleep,
    /// Busy; ends early on stop.
    Spin,
    /// The OS thread sleeps, deaf to a stop.
    Hang,
}

/// What a value means.
#[derive(Debug, Clone, Copy)]
enum Unit {
    Duration,
    Micros,
    Rate,
    Bool,
}

/// A number per cycle: fixed, or rendered from a field with placeholders.
#[derive(Debug, Clone)]
enum Source {
    Fixed(f64),
    Field(Field, Unit),
}

impl Source {
    fn from_field(f: Field, unit: Unit) -> Result<Self, String> {
        match &f {
            Field::Literal(v) => convert(v, unit).map(Source::Fixed),
            Field::Text(t) if t.is_literal() => convert(
                &serde_json::Value::String(t.render(0, &Default::default())),
                unit,
            )
            .map(Source::Fixed),
            Field::Text(_) => Ok(Source::Field(f, unit)),
            _ => Err("is a list or map; write a value or a `{binding}`".to_string()),
        }
    }

    #[inline]
    fn value(&self, cycle: u64, plan: &OpPlan) -> Result<f64, String> {
        match self {
            Source::Fixed(v) => Ok(*v),
            Source::Field(f, unit) => convert(&f.render_json(cycle, plan.bindings()), *unit),
        }
    }
}

/// Converts a value to nanoseconds (durations), a share (rates) or 0/1 (bools).
fn convert(v: &serde_json::Value, unit: Unit) -> Result<f64, String> {
    use serde_json::Value as J;
    match (unit, v) {
        (Unit::Duration, J::String(s)) => duration(s)
            .map(|d| d.as_nanos() as f64)
            .ok_or_else(|| format!("`{s}` is not a duration; write `250us`, `2ms` or `1.5s`")),
        (Unit::Duration, J::Number(n)) => n
            .as_f64()
            .filter(|s| *s >= 0.0)
            .map(|s| s * 1e9)
            .ok_or_else(|| format!("{n} is not a duration in seconds")),
        (Unit::Micros, J::Number(n)) => n
            .as_f64()
            .filter(|us| *us >= 0.0 && us.is_finite())
            .map(|us| us * 1e3)
            .ok_or_else(|| format!("{n} is not a number of microseconds >= 0")),
        (Unit::Micros, J::String(s)) => s
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|us| *us >= 0.0 && us.is_finite())
            .map(|us| us * 1e3)
            .ok_or_else(|| format!("`{s}` is not a number of microseconds >= 0")),
        (Unit::Rate, J::Number(n)) => n
            .as_f64()
            .filter(|r| (0.0..=1.0).contains(r))
            .ok_or_else(|| format!("{n} is not a share from 0 to 1")),
        (Unit::Rate, J::String(s)) => s
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|r| (0.0..=1.0).contains(r))
            .ok_or_else(|| format!("`{s}` is not a share from 0 to 1")),
        (Unit::Bool, J::Bool(b)) => Ok(f64::from(u8::from(*b))),
        (Unit::Bool, J::String(s)) => match s.trim() {
            "true" => Ok(1.0),
            "false" => Ok(0.0),
            other => Err(format!("`{other}` is not `true` or `false`")),
        },
        (_, other) => Err(format!("{other} is not a {}", unit_name(unit))),
    }
}

fn unit_name(unit: Unit) -> &'static str {
    match unit {
        Unit::Duration => "duration such as `2ms`",
        Unit::Micros => "number of microseconds",
        Unit::Rate => "share from 0 to 1",
        Unit::Bool => "boolean",
    }
}

fn param_duration(name: &str, v: &serde_json::Value) -> Result<Nanos, String> {
    convert(v, Unit::Duration)
        .map(|n| n as Nanos)
        .map_err(|m| format!("param `{name}`: {m}"))
}

fn param_micros(name: &str, v: &serde_json::Value) -> Result<Nanos, String> {
    convert(v, Unit::Micros)
        .map(|n| n as Nanos)
        .map_err(|m| format!("param `{name}`: {m}"))
}

fn rate(what: &str, v: &serde_json::Value) -> Result<f64, String> {
    convert(v, Unit::Rate).map_err(|m| format!("{what}: {m}"))
}

#[derive(Debug)]
struct OpSpec {
    latency: Source,
    error_rate: Source,
    fail: Option<Source>,
}

#[derive(Debug)]
struct Shared {
    plan: Arc<OpPlan>,
    ops: Vec<OpSpec>,
    mode: Mode,
    kind: Arc<str>,
    key: u64,
}

struct DiagWork(Arc<Shared>);

impl Workload for DiagWork {
    fn runner(&self, ctx: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
        Ok(Box::new(DiagRunner {
            shared: self.0.clone(),
            ctx: ctx.clone(),
        }))
    }

    /// Only with `concurrency`: without it `diag` keeps its sync runner (one op
    /// per thread, and `latency_mode` `spin` and `hang`, which hold a thread).
    #[cfg(not(loom))]
    fn async_runner(
        &self,
        ctx: &WorkerContext,
        _in_flight: usize,
    ) -> Option<crate::engine::LocalFuture<Result<Box<dyn crate::engine::AsyncOpRunner>, OpError>>>
    {
        self.0.plan.params().concurrency?;
        let runner = DiagAsync {
            shared: self.0.clone(),
            ctx: ctx.clone(),
        };
        Some(Box::pin(async move {
            Ok(Box::new(runner) as Box<dyn crate::engine::AsyncOpRunner>)
        }))
    }
}

struct DiagRunner {
    shared: Arc<Shared>,
    ctx: WorkerContext,
}

impl Shared {
    /// What the op of `cycle` does: its latency in ns, and its failure if it fails.
    #[inline]
    fn plan_op(&self, cycle: u64) -> Result<(f64, Option<OpError>), OpError> {
        let op = &self.ops[self.plan.op_index(cycle)];
        let bad = |m: String| OpError::new("diag-value", format!("cycle {cycle}: {m}"));
        let latency = op.latency.value(cycle, &self.plan).map_err(bad)?;
        let failed = match &op.fail {
            Some(f) => f.value(cycle, &self.plan).map_err(bad)? >= 1.0,
            None => false,
        } || {
            let r = op.error_rate.value(cycle, &self.plan).map_err(bad)?;
            r > 0.0 && unit(hash_keyed(cycle, self.key)) < r
        };
        let failure = failed.then(|| {
            OpError::new(
                self.kind.to_string(),
                format!("cycle {cycle}: injected failure"),
            )
        });
        Ok((latency, failure))
    }
}

impl DiagRunner {
    /// Takes `d` on the engine's clock, sleeping or spinning. A stop cuts it
    /// short, and the op is then `cancelled` (no service time, no success), as
    /// on the async runner, whose op a stop drops (audit p16, M5: the sync op
    /// was a success with a truncated service time). A pause does not wake
    /// the sleep (only a stop does): the op sleeps on to its end, as an async
    /// op does.
    fn take_time(&self, cycle: u64, d: Duration, mode: Mode) -> Result<(), OpError> {
        let deadline = self
            .ctx
            .now()
            .saturating_add(crate::nanos::from_duration(d));
        loop {
            let now = match mode {
                Mode::Spin => self.ctx.spin(Duration::from_nanos(
                    deadline.saturating_sub(self.ctx.now()),
                )),
                _ => self.ctx.sleep_until(deadline),
            };
            if now >= deadline {
                return Ok(());
            }
            if self.ctx.is_stopping() {
                return Err(OpError::new(
                    "cancelled",
                    format!("cycle {cycle}: the activity stopped during the op's latency"),
                )
                .retryable(false));
            }
        }
    }
}

impl OpRunner for DiagRunner {
    #[inline]
    fn run(&mut self, cycle: u64) -> Result<(), OpError> {
        let s = &*self.shared;
        let (latency, failure) = s.plan_op(cycle)?;
        if latency >= 1.0 {
            let d = Duration::from_nanos(latency as u64);
            match s.mode {
                Mode::Sleep | Mode::Spin => self.take_time(cycle, d, s.mode)?,
                Mode::Hang => std::thread::sleep(d),
            }
        }
        match failure {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// The async runner (with `concurrency`): an op's latency is an engine sleep
/// ([`WorkerContext::sleep_async`]) that holds no thread, so thousands of ops
/// are in flight on a few threads.
#[cfg(not(loom))]
struct DiagAsync {
    shared: Arc<Shared>,
    ctx: WorkerContext,
}

#[cfg(not(loom))]
impl crate::engine::AsyncOpRunner for DiagAsync {
    fn start(&self, cycle: u64) -> crate::engine::LocalFuture<Result<(), OpError>> {
        let planned = self.shared.plan_op(cycle);
        let sleep = match &planned {
            Ok((latency, _)) if *latency >= 1.0 => {
                Some(self.ctx.sleep_async(Duration::from_nanos(*latency as u64)))
            }
            _ => None,
        };
        Box::pin(async move {
            let (_, failure) = planned?;
            if let Some(s) = sleep {
                s.await;
            }
            match failure {
                Some(e) => Err(e),
                None => Ok(()),
            }
        })
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    fn plan(yaml: &str) -> Arc<OpPlan> {
        super::super::testing::plan(&Diag, yaml)
    }

    fn err(yaml: &str) -> String {
        super::super::testing::refusal(&Diag, yaml)
    }

    #[test]
    fn bad_values_say_what_to_write() {
        assert_eq!(
            err("params: {driver: diag, latency: fast}\nops: {o: x}"),
            "driver `diag`: param `latency`: `fast` is not a duration; write `250us`, `2ms` or `1.5s`"
        );
        assert_eq!(
            err("params: {driver: diag, error_rate: 2}\nops: {o: x}"),
            "driver `diag`: param `error_rate`: 2 is not a share from 0 to 1"
        );
        assert_eq!(
            err("params: {driver: diag, latency_mode: nap}\nops: {o: x}"),
            "driver `diag`: param `latency_mode`: `nap` is not a mode; use `sleep`, `spin` or `hang`"
        );
        assert_eq!(
            err("params: {driver: diag}\nops: {o: {latency: [1]}}"),
            "driver `diag`: op `o`: field `latency`: is a list or map; write a value or a `{binding}`"
        );
    }

    #[test]
    fn a_bad_drawn_value_is_an_op_error_of_its_own_kind() {
        let p = plan("params: {driver: diag}\nbindings: {w: Mod(3)}\nops: {o: {latency: '{w}x'}}");
        let work = Diag.workload(p).unwrap();
        let ctx = WorkerContext::new(0, "a", Arc::new(ManualClock::new()));
        let mut r = work.runner(&ctx).unwrap();
        let e = r.run(1).unwrap_err();
        assert_eq!(e.kind(), "diag-value");
        assert!(e.message().contains("`1x` is not a duration"), "{e}");
    }

    #[test]
    fn latency_and_failures_follow_the_fields() {
        let p = plan(
            "params: {driver: diag, error_kind: boom}\nbindings: {n: Mod(4)}\nops: {o: {latency_us: '{n}', fail: true}}",
        );
        let work = Diag.workload(p).unwrap();
        let clock = ManualClock::new();
        let ctx = WorkerContext::new(0, "a", Arc::new(clock.clone()));
        let mut r = work.runner(&ctx).unwrap();
        let e = r.run(3).unwrap_err();
        assert_eq!(e.kind(), "boom");
        assert_eq!(crate::clock::Clock::now(&clock), 3_000);
    }

    /// A clock that never moves: a wait for a later reading blocks until the
    /// activity stops (as a real sleep a stop cuts short), and says when one
    /// began, so the test stops the run with the op surely in its latency.
    #[derive(Debug, Default)]
    struct Frozen(crate::sync::AtomicBool);

    impl crate::clock::Clock for Frozen {
        fn now(&self) -> crate::nanos::Nanos {
            0
        }
        fn wait_until(
            &self,
            deadline: crate::nanos::Nanos,
            _: &crate::Waiting,
            signal: &crate::Signal,
        ) -> crate::nanos::Nanos {
            if deadline > 0 {
                // Release/Acquire: the test reads it only to time its stop.
                self.0.store(true, crate::sync::Ordering::Release);
                while !signal.is_stopped() {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
            0
        }
    }

    /// Starts one `diag` op of 100 s on the sync runner, cuts it with `cut` once
    /// it sleeps, and checks the run ends `want` with that op cancelled: no op
    /// finished, one error of kind `cancelled`, no service time, one start.
    fn a_sleeping_op_cut_by(cut: impl FnOnce(&crate::Control), want: crate::Outcome) {
        let p = plan("params: {driver: diag, latency: 100s}\nops: {o: x}");
        let clock = Arc::new(Frozen::default());
        let work = Diag.workload(p).unwrap();
        let run = crate::Engine::with_clock(clock.clone())
            .start(crate::ActivityConfig::new("a").cycles(0..1), work)
            .unwrap();
        while !clock.0.load(crate::sync::Ordering::Acquire) {
            std::thread::sleep(Duration::from_millis(1));
        }
        cut(&run);
        assert_eq!(run.wait(), want);
        let t = run.snapshot();
        assert_eq!((t.ops(), t.errors_of("cancelled")), (0, 1), "{t:?}");
        assert_eq!(t.service().count(), 0);
        assert_eq!(t.starts(), 1);
    }

    /// Regression (audit p16, M5): on the sync runner an op whose `diag` sleep
    /// a stop cut short was a successful op with a truncated service time
    /// (`completed 1, errors 0`, service 3 s of a 100 s op), where the async
    /// runner counts it `cancelled`. Both now say: no op finished, one error of
    /// kind `cancelled`, and the run stopped (not failed).
    #[test]
    fn a_stop_during_the_latency_cancels_the_op_on_the_sync_runner() {
        a_sleeping_op_cut_by(crate::Control::stop, crate::Outcome::Stopped);
    }

    /// Regression (audit p16 M5, at the duration's end): an op whose `diag`
    /// sleep the run's end cut short was booked as a completed op with the
    /// truncated service time; it is cancelled, as at a stop (and as the
    /// async runner books an op the end cuts), and the run ran its duration.
    #[test]
    fn the_duration_s_end_during_the_latency_cancels_the_op_on_the_sync_runner() {
        a_sleeping_op_cut_by(crate::Control::expire, crate::Outcome::Elapsed);
    }
}
