//! # paceline
//!
//! A nanosecond time-slice pacer for load-testing harnesses, the classic rate-limiting
//! algorithms beside it, and an engine that runs paced workloads.
//!
//! The heart is [`RateLimiter`]: every op gets its own slot on an exact schedule
//! (1e9 / rate nanoseconds apart, never rounded per op) and learns its **wait**, how
//! late it started against that slot. Strictness decides what happens to lateness;
//! the rate can change while it runs without losing state.
//!
//! ```
//! use paceline::{ManualClock, RateLimiter, RateSpec};
//! use std::time::Duration;
//!
//! let clock = ManualClock::new();
//! let limiter = RateLimiter::with_clock(RateSpec::new(1000.0).strictness(0.0), clock.clone());
//! limiter.acquire();                          // slot 0 ms: the schedule starts here
//! clock.advance(Duration::from_millis(10));   // the caller stalls for 10 ms
//! let g = limiter.acquire();                  // slot 1 ms, started at 10 ms
//! assert_eq!(g.wait_nanos(), 9_000_000);
//! ```
//!
//! The classic algorithms (token and leaky buckets, fixed and sliding windows, their
//! lock-free bit-packed twins, a token pool and a keyed limiter) answer one question
//! through the [`Limiter`] trait: may `n` permits pass now, and if not, when?
//!
//! With the `redis` feature (on by default), `RedisKeyedLimiter` keeps seed 004's
//! per-key windows in a shared Redis, so several processes enforce one limit.
//!
//! Layers, from the leaves up: `error`, `nanos`, `sync`, `wildcard`; `clock`; `pace`;
//! `limiters`; `metrics` and `store`; `engine`; `activity`. Each imports only from below.

#![forbid(unsafe_code)]
#![warn(missing_docs)]
// Under `--cfg loom` (the loom models only) the async runner and the drivers on
// it are left out, so the helpers only they use are unused there.
#![cfg_attr(loom, allow(dead_code, unused_imports))]

mod activity;
mod clock;
mod engine;
pub mod error;
mod limiters;
mod metrics;
pub mod nanos;
mod pace;
#[cfg(feature = "redis")]
mod store;
mod sync;
pub mod wildcard;

#[cfg(all(feature = "redis", not(loom)))]
pub use activity::Redis;
pub use activity::{
    Activity, ActivityError, Binding, BindingError, BindingSet, COMMAND_LINE, Cycles, Diag, Driver,
    DriverError, Drivers, Field, Http, HttpStats, Kind, Loader, Op, OpPlan, ParamError,
    ParamOverrides, Params, Problem, Scenario, ScenarioError, SeqType, StartError, Stdout, Step,
    TagFilter, Template, TemplateError, Threshold, ThresholdError, UNBOUNDED_CYCLES, Value,
    closest_name, mask_secrets, run_scenario,
};
/// Threshold expressions' parts (`paceline::thresholds::Metric`, …).
pub mod thresholds {
    pub use crate::activity::{
        Bound, Checked, Distribution, Metric, Observed, Stat, Threshold, ThresholdError,
        ThresholdOp as Op,
    };
}
#[cfg(not(loom))]
pub use activity::{PgStats, Postgres};
pub use clock::{Clock, ManualClock, MonotonicClock, Signal, Waiting, WaitingBuilder};
pub use engine::{
    ActivityConfig, AsyncOpRunner, BadErrorPolicy, Control, ControlError, Coordinated, Coordinator,
    CpuMeter, CycleSource, DEFAULT_STOP_GRACE, ENGINE_ERROR_KINDS, Engine, EngineError,
    ErrorAction, ErrorPolicy, Figures, JoinRequest, Joined, KnownKinds, LocalFuture,
    MAX_CONCURRENCY, MAX_CYCLE, MAX_OPS, MAX_THREADS, MIN_CPU_WINDOW, MIN_WAIT_BOUND, MissedSlots,
    OpError, OpRunner, OpSlot, OpTable, Outcome, Remote, RemoteSender, RunState, Slot, SlotSource,
    Spread, Status, TicketLedger, UnknownErrorKind, Verdict, VerdictKind, WorkerContext, Workload,
    achieved_rate, drawn_rate, judge, machine_cores, mean_target_rate, process_cpu_nanos,
    process_run_queue_nanos, rate_tolerance, scoped_drawn_rate, total_rate, wait_bound,
};
pub use error::RateSpecError;
pub use limiters::{
    AtomicTokenBucket, Decision, FixedWindow, KeyConfig, KeyedLimiter, KeyedLimiterBuilder,
    LeakyBucket, Limit, LimitError, Limiter, PackedSlidingWindow, PackedSlidingWindow128,
    RefillTokenBucket, SlidingWindowCounter, SlidingWindowLog, TokenBucket, TokenPool,
    atomic_u128_is_native,
};
pub use metrics::{
    CGROUP_CPU_STAT_ENV, ErrorKind, Event, Latencies, Metrics, OP_DIGITS, OpStats, Recorder,
    Snapshot, Summary, ThrottleMeter, Throttling, TimelineEntry,
};
pub use nanos::Nanos;
pub use pace::{
    Acquire, Arrivals, DEFAULT_FAST_PATH_LIMIT, DEFAULT_STRICTNESS, Grant, LimiterStats, MAX_RATE,
    MIN_RATE, Mode, RateLimiter, RateLimiterBuilder, RateSpec, Refused, Scope, Verb,
};
#[cfg(feature = "redis")]
pub use store::{
    Algorithm, Coordinate, DEFAULT_MIN_MEMBERS_TIMEOUT, FailMode, RedisKey, RedisKeyedLimiter,
    RedisKeyedLimiterBuilder, StoreError, StoreVerdict,
};
