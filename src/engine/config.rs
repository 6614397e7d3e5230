//! An activity's engine settings: a value type with validating setters.

use super::error::EngineError;
use super::policy::ErrorPolicy;
use super::seam::Coordinator;
use crate::nanos::Nanos;
use crate::pace::RateSpec;
use crate::sync::threads::Arc;
use std::fmt;
use std::ops::Range;
use std::time::Duration;

/// The longest duration a run may be given: 100 years, in nanoseconds (its end
/// must fit the clock).
const MAX_DURATION: Nanos = 100 * 365 * 24 * 3600 * crate::nanos::NANOS_PER_SEC;

/// The most worker threads one activity may have.
pub const MAX_THREADS: usize = 4096;

/// The most ops one activity may have in flight (`concurrency`): 1,048,576.
/// Each op in flight holds a task of a few hundred bytes plus what its driver
/// keeps (a connection), so a million is far past what one process holds well;
/// spread more over processes (`coordinate=`).
pub const MAX_CONCURRENCY: usize = 1 << 20;

/// How long ops in flight may go on after a stop, by default, before they are
/// cancelled (each counted as an error of kind `cancelled`).
pub const DEFAULT_STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(10);

/// The largest cycle number an activity may run up to (2^62): the cycle input's
/// cursor overshoots the end by a stride per worker and must not wrap.
pub const MAX_CYCLE: u64 = 1 << 62;

/// How the engine runs one activity: name, threads, cycles, stride, rate and error
/// policy. The workload itself is given to [`Engine::start`](super::Engine::start)
/// beside it. [`Engine::start`](super::Engine::start) validates it.
///
/// ```
/// use paceline::{ActivityConfig, ErrorPolicy, RateSpec};
/// let c = ActivityConfig::new("reads")
///     .threads(4)
///     .cycles(0..1_000_000)
///     .stride(100)
///     .rate(RateSpec::new(10_000.0))
///     .errors(ErrorPolicy::parse("retry:3")?);
/// assert_eq!((c.alias_str(), c.threads_count(), c.stride_len()), ("reads", 4, 100));
/// # Ok::<(), paceline::BadErrorPolicy>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ActivityConfig {
    pub(crate) alias: String,
    pub(crate) driver: String,
    pub(crate) threads: usize,
    pub(crate) cycles: Range<u64>,
    pub(crate) stride: u64,
    pub(crate) rate: Option<RateSpec>,
    /// How the pacer spaces slots (uniform or Poisson).
    pub(crate) arrivals: crate::pace::Arrivals,
    pub(crate) errors: ErrorPolicy,
    /// The most ops in flight, spread over the threads (the async runner).
    pub(crate) concurrency: Option<usize>,
    /// How long ops in flight may go on after a stop; `None`: the engine's
    /// ([`Engine::set_stop_grace`](super::Engine::set_stop_grace)), else
    /// [`DEFAULT_STOP_GRACE`].
    pub(crate) stop_grace: Option<std::time::Duration>,
    /// How long it may run, on the engine's clock, in nanoseconds; `None`: until
    /// its cycles run out.
    pub(crate) duration: Option<Nanos>,
    /// The shared schedule it joins, if any.
    pub(crate) coordinate: Option<SharedWith>,
    /// Its op names and op sequence, if given: figures are then kept per op.
    pub(crate) ops: Option<super::ops::OpTable>,
}

/// A coordinator held by a config: compared and shown by the schedule it names.
#[derive(Clone)]
pub(crate) struct SharedWith(pub(crate) Arc<dyn Coordinator>);

impl std::ops::Deref for SharedWith {
    type Target = dyn Coordinator;
    fn deref(&self) -> &Self::Target {
        &*self.0
    }
}

impl PartialEq for SharedWith {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0.to_string() == other.0.to_string()
    }
}

impl fmt::Debug for SharedWith {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl ActivityConfig {
    /// An activity called `alias`: one thread, cycles `0..1`, stride 1, unpaced,
    /// errors stop it.
    ///
    /// ```
    /// let c = paceline::ActivityConfig::new("a");
    /// assert_eq!(c.cycle_range(), 0..1);
    /// ```
    pub fn new(alias: impl Into<String>) -> Self {
        Self {
            alias: alias.into(),
            driver: String::new(),
            threads: 1,
            cycles: 0..1,
            stride: 1,
            rate: None,
            arrivals: crate::pace::Arrivals::Uniform,
            errors: ErrorPolicy::default(),
            concurrency: None,
            stop_grace: None,
            duration: None,
            coordinate: None,
            ops: None,
        }
    }

    /// Its op names and op sequence ([`OpTable`](crate::OpTable)): the engine
    /// then records each op under the op its cycle runs, and snapshots carry
    /// per-op figures ([`Snapshot::by_op`](crate::Snapshot::by_op)). Activities
    /// loaded from a file get their ops' table. By default, none: figures for
    /// all ops only.
    ///
    /// ```
    /// use paceline::{ActivityConfig, OpTable};
    /// let c = ActivityConfig::new("kv").ops(OpTable::new(["get", "put"], &[0, 0, 1])?);
    /// assert_eq!(c.op_table().unwrap().names().len(), 2);
    /// # Ok::<(), String>(())
    /// ```
    pub fn ops(mut self, table: super::ops::OpTable) -> Self {
        self.ops = Some(table);
        self
    }

    /// The op table, if one was given.
    ///
    /// ```
    /// assert!(paceline::ActivityConfig::new("x").op_table().is_none());
    /// ```
    pub fn op_table(&self) -> Option<&super::ops::OpTable> {
        self.ops.as_ref()
    }

    /// The driver's name, for reports only. By default, empty.
    ///
    /// ```
    /// assert_eq!(paceline::ActivityConfig::new("a").driver("diag").driver_name(), "diag");
    /// ```
    pub fn driver(mut self, name: impl Into<String>) -> Self {
        self.driver = name.into();
        self
    }

    /// Worker threads, 1 to [`MAX_THREADS`]. By default, 1.
    ///
    /// ```
    /// assert_eq!(paceline::ActivityConfig::new("a").threads(8).threads_count(), 8);
    /// ```
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = n;
        self
    }

    /// The cycles to run, closed-open, ending at most at [`MAX_CYCLE`]. By default,
    /// `0..1`.
    ///
    /// ```
    /// assert_eq!(paceline::ActivityConfig::new("a").cycles(5..9).cycle_range(), 5..9);
    /// ```
    pub fn cycles(mut self, cycles: Range<u64>) -> Self {
        self.cycles = cycles;
        self
    }

    /// Cycles a worker takes from the input at a time, at least 1. By default, 1.
    ///
    /// ```
    /// assert_eq!(paceline::ActivityConfig::new("a").stride(64).stride_len(), 64);
    /// ```
    pub fn stride(mut self, n: u64) -> Self {
        self.stride = n;
        self
    }

    /// Paces every op through a [`RateLimiter`](crate::RateLimiter) with `spec`. By
    /// default, unpaced.
    ///
    /// ```
    /// use paceline::RateSpec;
    /// let c = paceline::ActivityConfig::new("a").rate(RateSpec::new(50.0));
    /// assert_eq!(c.rate_spec(), Some(RateSpec::new(50.0)));
    /// ```
    pub fn rate(mut self, spec: RateSpec) -> Self {
        self.rate = Some(spec);
        self
    }

    /// Paces with `spec` if it is `Some`, else runs unpaced. By default, unpaced.
    ///
    /// ```
    /// assert_eq!(paceline::ActivityConfig::new("a").maybe_rate(None).rate_spec(), None);
    /// ```
    pub fn maybe_rate(mut self, spec: Option<RateSpec>) -> Self {
        self.rate = spec;
        self
    }

    /// What an op's error does. By default, it stops the activity.
    ///
    /// ```
    /// use paceline::{ActivityConfig, ErrorAction, ErrorPolicy};
    /// let c = ActivityConfig::new("a").errors(ErrorPolicy::new(0, ErrorAction::Count));
    /// assert_eq!(c.error_policy().to_string(), "count");
    /// ```
    pub fn errors(mut self, policy: ErrorPolicy) -> Self {
        self.errors = policy;
        self
    }

    /// The most ops in flight at once, spread over the threads (each thread holds
    /// at most its share, `concurrency / threads` rounded up, and the activity at
    /// most `concurrency`), 1 to [`MAX_CONCURRENCY`] and at least the thread
    /// count. The activity runs on the async runner (`docs/engine.md`, "The async
    /// runner"): its workload must have one
    /// ([`Workload::async_runner`](crate::Workload::async_runner)). By default,
    /// none: one op per thread, on the async runner when the workload has one
    /// (then `concurrency` = threads), else on the sync runner.
    ///
    /// ```
    /// let c = paceline::ActivityConfig::new("a").threads(2).concurrency(1000);
    /// assert_eq!(c.concurrency_limit(), Some(1000));
    /// ```
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = Some(n);
        self
    }

    /// [`concurrency`](Self::concurrency) if `Some`. By default, none.
    ///
    /// ```
    /// assert_eq!(paceline::ActivityConfig::new("a").maybe_concurrency(None).concurrency_limit(), None);
    /// ```
    pub fn maybe_concurrency(mut self, n: Option<usize>) -> Self {
        self.concurrency = n;
        self
    }

    /// The most ops in flight, if set.
    ///
    /// ```
    /// assert_eq!(paceline::ActivityConfig::new("a").concurrency_limit(), None);
    /// ```
    pub fn concurrency_limit(&self) -> Option<usize> {
        self.concurrency
    }

    /// How long ops in flight on the async runner may go on after a stop (or a
    /// failure that stops the run); the ones still in flight then are cancelled,
    /// each counted as an error of kind `cancelled`. By default, the engine's
    /// ([`Engine::set_stop_grace`](super::Engine::set_stop_grace); the command
    /// line's `--stop-timeout` sets it), else [`DEFAULT_STOP_GRACE`] (10 s).
    ///
    /// ```
    /// use std::time::Duration;
    /// let c = paceline::ActivityConfig::new("a").stop_grace(Duration::from_secs(2));
    /// assert_eq!(c.stop_grace_period(), Duration::from_secs(2));
    /// ```
    pub fn stop_grace(mut self, d: std::time::Duration) -> Self {
        self.stop_grace = Some(d);
        self
    }

    /// See [`stop_grace`](Self::stop_grace).
    ///
    /// ```
    /// assert_eq!(paceline::ActivityConfig::new("a").stop_grace_period(), paceline::DEFAULT_STOP_GRACE);
    /// ```
    pub fn stop_grace_period(&self) -> std::time::Duration {
        self.stop_grace.unwrap_or(DEFAULT_STOP_GRACE)
    }

    /// Ends the run by itself once it has run for `d` on the engine's clock (paused
    /// time included), whichever comes first of that and the end of its cycles.
    /// No op starts at or after the deadline; ops in flight then finish, and the
    /// run's [`Outcome`](crate::Outcome) is [`Elapsed`](crate::Outcome::Elapsed).
    /// For a run bounded by time alone, give it unbounded cycles
    /// (`0..`[`MAX_CYCLE`]). By default, no limit.
    ///
    /// ```
    /// use paceline::{ActivityConfig, MAX_CYCLE};
    /// use std::time::Duration;
    /// let c = ActivityConfig::new("a").cycles(0..MAX_CYCLE).duration(Duration::from_secs(600));
    /// assert_eq!(c.duration_limit(), Some(Duration::from_secs(600)));
    /// ```
    pub fn duration(mut self, d: Duration) -> Self {
        self.duration = Some(crate::nanos::from_duration(d));
        self
    }

    /// [`duration`](Self::duration) if `d` is `Some`, else no limit. By default, no
    /// limit.
    ///
    /// ```
    /// assert_eq!(paceline::ActivityConfig::new("a").maybe_duration(None).duration_limit(), None);
    /// ```
    pub fn maybe_duration(mut self, d: Option<Duration>) -> Self {
        self.duration = d.map(crate::nanos::from_duration);
        self
    }

    /// How long the run may last, if limited.
    ///
    /// ```
    /// assert!(paceline::ActivityConfig::new("x").duration_limit().is_none());
    /// ```
    pub fn duration_limit(&self) -> Option<Duration> {
        self.duration.map(crate::nanos::to_duration)
    }

    /// Joins the shared schedule of coordinator `c` as the activity starts: every
    /// process that runs an activity on the same schedule (for paceline's Redis
    /// schedule, the same [`Coordinate`](crate::Coordinate)) paces it at its rate in
    /// total and runs each of its cycles once across them (`docs/scale-out.md`). The
    /// rate is the aggregate; a process that joins a running schedule takes its
    /// spec, and its cycle range must be the schedule's. Any [`Coordinator`] will
    /// do. By default, the activity paces alone.
    ///
    /// ```
    /// let c = paceline::ActivityConfig::new("a").coordinate("redis://127.0.0.1:6379/demo".parse::<paceline::Coordinate>()?);
    /// assert_eq!(c.coordination().map(|c| c.to_string()).as_deref(), Some("redis://127.0.0.1:6379/demo"));
    /// # Ok::<(), paceline::StoreError>(())
    /// ```
    pub fn coordinate(mut self, c: impl Coordinator + 'static) -> Self {
        self.coordinate = Some(SharedWith(Arc::new(c)));
        self
    }

    /// [`coordinate`](Self::coordinate) with a coordinator already shared.
    ///
    /// ```
    /// let c: std::sync::Arc<dyn paceline::Coordinator> =
    ///     std::sync::Arc::new("redis://127.0.0.1:6379/demo".parse::<paceline::Coordinate>()?);
    /// assert!(paceline::ActivityConfig::new("a").coordinate_shared(c).coordination().is_some());
    /// # Ok::<(), paceline::StoreError>(())
    /// ```
    pub fn coordinate_shared(mut self, c: Arc<dyn Coordinator>) -> Self {
        self.coordinate = Some(SharedWith(c));
        self
    }

    /// The coordinator of the shared schedule it joins, if any.
    ///
    /// ```
    /// assert!(paceline::ActivityConfig::new("x").coordination().is_none());
    /// ```
    pub fn coordination(&self) -> Option<&dyn Coordinator> {
        self.coordinate.as_deref()
    }

    /// The alias.
    ///
    /// ```
    /// assert_eq!(paceline::ActivityConfig::new("x").alias_str(), "x");
    /// ```
    pub fn alias_str(&self) -> &str {
        &self.alias
    }

    /// The driver's name.
    ///
    /// ```
    /// assert_eq!(paceline::ActivityConfig::new("x").driver_name(), "");
    /// ```
    pub fn driver_name(&self) -> &str {
        &self.driver
    }

    /// The thread count.
    ///
    /// ```
    /// assert_eq!(paceline::ActivityConfig::new("x").threads_count(), 1);
    /// ```
    pub fn threads_count(&self) -> usize {
        self.threads
    }

    /// The cycles.
    ///
    /// ```
    /// assert_eq!(paceline::ActivityConfig::new("x").cycle_range().end, 1);
    /// ```
    pub fn cycle_range(&self) -> Range<u64> {
        self.cycles.clone()
    }

    /// The stride.
    ///
    /// ```
    /// assert_eq!(paceline::ActivityConfig::new("x").stride_len(), 1);
    /// ```
    pub fn stride_len(&self) -> u64 {
        self.stride
    }

    /// The rate, if paced.
    ///
    /// ```
    /// assert!(paceline::ActivityConfig::new("x").rate_spec().is_none());
    /// ```
    pub fn rate_spec(&self) -> Option<RateSpec> {
        self.rate
    }

    /// Spaces the paced ops' slots as `arrivals` says: a slice apart, or at
    /// exponentially distributed gaps with the rate as their mean (the same for the
    /// same seed). A shared schedule ([`coordinate`](Self::coordinate)) takes uniform
    /// slots only: the engine refuses Poisson arrivals there. By default, uniform.
    ///
    /// ```
    /// use paceline::Arrivals;
    /// let c = paceline::ActivityConfig::new("a").arrivals(Arrivals::Poisson { seed: 3 });
    /// assert_eq!(c.arrivals_value(), Arrivals::Poisson { seed: 3 });
    /// ```
    pub fn arrivals(mut self, arrivals: crate::pace::Arrivals) -> Self {
        self.arrivals = arrivals;
        self
    }

    /// How the paced ops' slots are spaced.
    ///
    /// ```
    /// assert_eq!(paceline::ActivityConfig::new("a").arrivals_value(), paceline::Arrivals::Uniform);
    /// ```
    pub fn arrivals_value(&self) -> crate::pace::Arrivals {
        self.arrivals
    }

    /// The error policy.
    ///
    /// ```
    /// assert_eq!(paceline::ActivityConfig::new("x").error_policy(), paceline::ErrorPolicy::default());
    /// ```
    pub fn error_policy(&self) -> ErrorPolicy {
        self.errors.clone()
    }

    /// Checks every setting, naming the first bad one and how to fix it.
    ///
    /// ```
    /// let err = paceline::ActivityConfig::new("a").threads(0).validate().unwrap_err();
    /// assert!(err.to_string().contains("threads"));
    /// ```
    pub fn validate(&self) -> Result<(), EngineError> {
        let bad = |what: &str, why: String| {
            Err(EngineError::BadConfig {
                alias: self.alias.clone(),
                what: what.to_string(),
                why,
            })
        };
        if self.alias.trim().is_empty() {
            return bad(
                "alias",
                "the alias is empty: give the activity a name".into(),
            );
        }
        if self.threads == 0 || self.threads > MAX_THREADS {
            return bad(
                "threads",
                format!(
                    "{} threads: use 1 to {MAX_THREADS} (pause an activity instead of giving it 0 threads)",
                    self.threads
                ),
            );
        }
        if self.cycles.start > self.cycles.end {
            return bad(
                "cycles",
                format!(
                    "{}..{} ends before it starts: write A..B with A <= B",
                    self.cycles.start, self.cycles.end
                ),
            );
        }
        if self.cycles.end > MAX_CYCLE {
            return bad(
                "cycles",
                format!("{} is past the last cycle, 2^62", self.cycles.end),
            );
        }
        if let Some(c) = self.concurrency {
            if let Err(why) = check_concurrency(c, self.threads) {
                return bad("concurrency", why);
            }
        }
        if self.duration == Some(0) {
            return bad(
                "duration",
                "a duration of 0 would end the run before its first op: give at least 1ns, \
                 such as 30s, or leave it out"
                    .into(),
            );
        }
        if self.duration.is_some_and(|d| d > MAX_DURATION) {
            return bad(
                "duration",
                "a duration over 100 years cannot be timed: give a shorter one, or leave it \
                 out to run until the cycles end"
                    .into(),
            );
        }
        if self.stride == 0 || self.stride > 1 << 32 {
            return bad("stride", format!("stride {}: use 1 to 2^32", self.stride));
        }
        if let Some(c) = &self.coordinate {
            if self.cycles.end > c.max_cycle() {
                return bad(
                    "cycles",
                    format!(
                        "{} is past the last cycle the shared schedule {} can count, {}",
                        self.cycles.end,
                        c.0,
                        c.max_cycle()
                    ),
                );
            }
        }
        Ok(())
    }
}

/// Checks a `concurrency` against the thread count; the message says how to fix it.
pub(crate) fn check_concurrency(c: usize, threads: usize) -> Result<(), String> {
    if c == 0 {
        return Err(
            "concurrency 0: give the most ops in flight, at least the thread count \
                    (pause an activity instead of giving it 0)"
                .into(),
        );
    }
    if c > MAX_CONCURRENCY {
        return Err(format!(
            "concurrency {c} is above the cap, {MAX_CONCURRENCY}: use fewer, and spread \
             more over processes (coordinate=)"
        ));
    }
    if c < threads {
        return Err(format!(
            "concurrency {c} is below threads={threads}: each thread holds at least one op \
             in flight; give concurrency >= {threads}, or fewer threads"
        ));
    }
    Ok(())
}
