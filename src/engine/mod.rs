//! The engine: worker threads that pace through the pacer, run ops through a
//! [`Workload`], and record service, wait and response time per op (wait split
//! into queueing and dispatch); a [`Control`] handle per run; and the
//! [`Verdict`] on a run: on schedule, or system- or generator-bound.
//!
//! The engine knows nothing of YAML or drivers' formats: the `activity` layer
//! turns a file into an [`ActivityConfig`] and a [`Workload`]. An embedding tool
//! can do the same in code.
//!
//! ```
//! use paceline::{ActivityConfig, Engine, ManualClock, OpError, OpRunner, RateSpec, Workload, WorkerContext};
//!
//! struct Sleepy;
//! struct SleepyRunner(WorkerContext);
//! impl Workload for Sleepy {
//!     fn runner(&self, ctx: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
//!         Ok(Box::new(SleepyRunner(ctx.clone())))
//!     }
//! }
//! impl OpRunner for SleepyRunner {
//!     fn run(&mut self, _cycle: u64) -> Result<(), OpError> {
//!         self.0.sleep(std::time::Duration::from_micros(300)); // the op takes 300 µs
//!         Ok(())
//!     }
//! }
//!
//! // On the manual clock, one thread: exact numbers.
//! let engine = Engine::with_clock(ManualClock::new());
//! let run = engine.start(
//!     ActivityConfig::new("a").cycles(0..1000).rate(RateSpec::new(1000.0)),
//!     Sleepy,
//! )?;
//! run.wait();
//! let t = run.snapshot();
//! assert_eq!(t.ops(), 1000);
//! assert!((300_000..300_300).contains(&t.service().max())); // 3 significant digits
//! assert_eq!(t.wait().max(), 0);     // each op starts exactly at its slot
//! assert_eq!(t.elapsed_nanos(), 999_300_000); // last slot at 999 ms, plus its 300 µs
//! # Ok::<(), paceline::EngineError>(())
//! ```

#[cfg(not(loom))]
mod async_motor;
mod async_op;
mod config;
mod control;
mod cpu;
#[allow(clippy::module_inception)]
mod engine;
mod error;
mod error_kinds;
mod input;
mod judge;
mod missed;
mod motor;
mod ops;
mod phase;
mod policy;
mod rates;
mod remote;
mod runtime;
mod sched;
mod seam;
mod source;
mod verdict;
mod workload;

pub use async_op::{AsyncOpRunner, LocalFuture, OpSlot};
pub use config::{ActivityConfig, DEFAULT_STOP_GRACE, MAX_CONCURRENCY, MAX_CYCLE, MAX_THREADS};
pub use control::{Control, RunState, Status};
pub use cpu::{CpuMeter, MIN_CPU_WINDOW, machine_cores, process_cpu_nanos};
pub use engine::Engine;
pub use error::{ControlError, EngineError};
pub use error_kinds::{ENGINE_ERROR_KINDS, KnownKinds, UnknownErrorKind};
pub use judge::judge;
pub use ops::{MAX_OPS, OpTable};
pub use policy::{BadErrorPolicy, ErrorAction, ErrorPolicy};
pub use rates::{
    MIN_WAIT_BOUND, achieved_rate, drawn_rate, mean_target_rate, rate_tolerance, scoped_drawn_rate,
    total_rate, wait_bound,
};
pub use runtime::Outcome;
pub use sched::process_run_queue_nanos;
pub use seam::{
    Coordinated, Coordinator, CycleSource, JoinRequest, Joined, MissedSlots, Remote, RemoteSender,
    Slot, SlotSource, TicketLedger,
};
pub use verdict::{Figures, Spread, Verdict, VerdictKind};
pub use workload::{OpError, OpRunner, WorkerContext, Workload};

/// Blocking calls and waits that a slot source makes on a worker's thread (a
/// shared schedule's lease, its waits on a signal): on an async worker they let
/// the worker go on driving its ops in flight (`async_motor::idle`); anywhere
/// else they block the thread as plain calls do.
pub(crate) mod worker_wait {
    /// A worker's driver, for the drivers' tests of their real-clock path.
    #[cfg(all(test, not(loom)))]
    pub(crate) use super::async_motor::idle::Driver;
    #[cfg(not(loom))]
    pub(crate) use super::async_motor::idle::{call_blocking, reactor_age, wait_change_for};

    /// Runs `f` here (no async runner under loom).
    #[cfg(loom)]
    pub(crate) fn call_blocking<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
        f()
    }

    /// No async worker under loom: no reactor to vouch for readiness.
    #[cfg(loom)]
    pub(crate) fn reactor_age() -> Option<crate::nanos::Nanos> {
        None
    }

    /// [`Signal::wait_change_for`](crate::clock::Signal) (no async runner under loom).
    #[cfg(loom)]
    pub(crate) fn wait_change_for(
        signal: &crate::clock::Signal,
        seen: u64,
        d: std::time::Duration,
    ) {
        signal.wait_change_for(seen, d)
    }
}
