//! One running activity: its shared state, how it starts and how its workers
//! are started. Split by what runs where: this file holds the state and the
//! start (run on the starting thread, and on the thread of a control call that
//! adds workers); `schedule.rs` the schedule's start and the run's duration
//! (run by the motors before each op, and by the deadline's timer);
//! `transition.rs` the run's state machine with its side
//! effects (run by whoever asks for a change, under the motors lock);
//! `controls.rs` the control operations the [`Control`](crate::engine::Control) handle
//! forwards to (run on the caller's thread). The motors' loop, and the `Shared`
//! methods only motors call, are in `motor.rs` and `async_motor/`.
//!
//! # Ground rules
//!
//! - **Motors lock** (`motors`): the list of motors, the live and active counts,
//!   the thread target and the run's [`Phase`]. Every change of phase goes through
//!   [`Shared::transition`] under this lock, which applies the decision of
//!   [`phase::next`] and its side effects in one place. Every change of thread
//!   count, every give-back of a stride and every decision to leave because the
//!   input is dry is made under it too, so a stride given back by a leaving motor
//!   is always seen by a motor that is still live (see [`Shared::leave_dry`] and
//!   `Shared::checkpoint`).
//! - **Hot path**: a motor reads three words per op, all `Relaxed`: its own
//!   `retire` flag, `state` (the phase's mirror byte, written only by
//!   `transition`) and `paced`. They carry no data; they only send the motor to
//!   `Shared::checkpoint`, which takes the motors lock, and every decision there
//!   is made under that lock. A motor that reads a stale value runs at most one
//!   more op before it sees the new one (the next load): "stop within one op".
//! - **Progress counters**: each motor owns one padded `AtomicU64` of cycles run; it
//!   alone writes it (a Relaxed load and store, no RMW), readers sum them Relaxed.
//!   A departing motor adds its count to `departed` under the motors lock before
//!   leaving the list, so a reader holding that lock never counts it twice.
//! - **Two signals**: the engine's `signal` wakes motors waiting at a checkpoint
//!   while paused (pause, resume, a thread change, stop), ramp threads between
//!   steps, and ops sleeping through [`WorkerContext`](crate::engine::WorkerContext) (stop
//!   only). The pacer has its own signal, which wakes motors blocked in
//!   `acquire` (a spec change, stop). A motor reads the engine signal's generation
//!   *before* re-checking the state, so a change made between the two wakes it.
//! - **Schedule start** (`schedule_begun`): a flag that publishes nothing. Each
//!   motor loads it `Relaxed` before an op; the first to swap it in moves the
//!   metrics' window to the schedule's first slot (under the metrics' own lock,
//!   taken inside `missed`, as a snapshot takes it after its report).
//!   A motor that reads a stale `false` swaps and finds `true`: nothing more.
//! - **Lock order**: motors, then `missed`, then the pacer's own locks and the
//!   metrics' (the registry, then a recorder slot's `live`). A snapshot reads
//!   what needs motors (`finished_at`, the thread count) first, then holds
//!   `missed` from its report to its end (merging every recorder's
//!   histograms), and takes no motors lock meanwhile; nothing takes `missed` or
//!   motors while holding a metrics lock, so no cycle. Blocking this adds: the
//!   first op of a run (the sync motor's, an async executor's, whose other
//!   completions wait with it) takes `missed` to begin the schedule, and so
//!   waits out a snapshot's merge, once per run; a control call (pause, rate)
//!   that holds motors and takes `missed` waits for it too.

use crate::clock::{Clock, Signal, Waiting};
#[cfg(not(loom))]
use crate::engine::async_motor::{AsyncMotor, InFlight, idle::DrivingClock};
use crate::engine::config::ActivityConfig;
use crate::engine::error::ControlError;
use crate::engine::error::EngineError;
use crate::engine::input::CycleInput;
use crate::engine::missed::Missed;
use crate::engine::motor::Motor;
use crate::engine::phase::{self, Ask, PAUSED, Phase, RUNNING, STOPPING};
use crate::engine::seam::{JoinRequest, RemoteSender};
use crate::engine::source::{Input, Pacer};
use crate::engine::workload::Workload;
use crate::metrics::{Event, Metrics};
use crate::nanos::Nanos;
use crate::pace::{RateLimiter, RateSpec, Verb};
use crate::sync::threads::{self, Arc, AtomicBool, AtomicU8, AtomicU64, Condvar, Mutex, Ordering};
use crossbeam_utils::CachePadded;
use std::thread::JoinHandle;
use std::time::Duration;

mod controls;
mod schedule;
#[cfg(not(loom))]
pub(crate) mod setup;
mod transition;

/// The note a ramp's end marks in the timeline, once (the rate it reached is the
/// ramp's own `to`).
pub(crate) const RAMP_DONE: &str = "ramp done";

/// The longest ramp: 100 years, in nanoseconds (a ramp's end must fit the clock).
const MAX_RAMP: Nanos = 100 * 365 * 24 * 3600 * crate::nanos::NANOS_PER_SEC;

/// How a run ended.
///
/// ```
/// assert_eq!(paceline::Outcome::Completed.to_string(), "completed");
/// assert_eq!(paceline::Outcome::Elapsed.to_string(), "ran its duration");
/// assert_eq!(paceline::Outcome::Failed("cycle 3: boom".into()).to_string(), "failed: cycle 3: boom");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every cycle ran.
    Completed,
    /// [`Control::stop`](crate::engine::Control::stop) ended it early.
    Stopped,
    /// It ran for its [`duration`](crate::engine::ActivityConfig::duration) (or was told its
    /// time was up, [`Control::expire`](crate::engine::Control::expire)) and ended by
    /// itself: a time-boxed run that did what it was asked.
    Elapsed,
    /// An error stopped it (the error policy said so, or a worker could not start);
    /// the message names the cycle and the error.
    Failed(String),
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Completed => f.write_str("completed"),
            Self::Stopped => f.write_str("stopped"),
            Self::Elapsed => f.write_str("ran its duration"),
            Self::Failed(why) => write!(f, "failed: {why}"),
        }
    }
}

/// One motor's entry in the list.
pub(crate) struct MotorEntry {
    pub(crate) index: usize,
    retire: Arc<AtomicBool>,
    pub(crate) done: Arc<CachePadded<AtomicU64>>,
    /// `None` until its spawner, which starts threads outside the lock, stores it.
    pub(crate) handle: Option<JoinHandle<()>>,
    /// Decided to leave (input dry, or retired and gave its stride back): no
    /// longer counted in `active`.
    pub(crate) leaving: bool,
}

impl MotorEntry {
    pub(crate) fn is_active(&self) -> bool {
        !self.leaving && !self.retire.load(Ordering::Relaxed)
    }
}

/// Everything the motors lock guards.
pub(crate) struct Motors {
    pub(crate) list: Vec<MotorEntry>,
    /// Motors that are live (or being started) and not asked to retire.
    pub(crate) active: usize,
    /// The thread count asked for.
    target: usize,
    next_index: usize,
    /// Where the run stands; changed only by [`Shared::transition`].
    pub(crate) phase: Phase,
    /// Handles of motors that left and may not have exited yet.
    pub(crate) finished: Vec<JoinHandle<()>>,
    /// Bumped to cancel a running ramp.
    ramp_generation: u64,
}

/// The state every motor and control handle of one activity shares.
pub(crate) struct Shared {
    pub(crate) config: ActivityConfig,
    pub(crate) alias: Arc<str>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) pacer: Pacer,
    pub(crate) paced: AtomicBool,
    /// The phase's mirror for the hot path ([`Phase::mirror`]).
    pub(crate) state: AtomicU8,
    pub(crate) signal: Signal,
    pub(crate) input: Input,
    pub(crate) metrics: Metrics,
    /// The metrics' clock minus the pacer's time base (a constant: the local
    /// pacer counts from its origin, the shared schedule reads the clock): an
    /// op's start on the pacer plus this is its start on the metrics' clock
    /// (`Recorder::set_start`).
    pub(crate) pacer_offset: Nanos,
    pub(crate) workload: Box<dyn Workload>,
    /// Whether the motors are async ones (`concurrency`, or a workload with an
    /// async runner).
    async_mode: bool,
    /// The ops in flight of an async run.
    #[cfg(not(loom))]
    pub(crate) flight: InFlight,
    pub(crate) motors: Mutex<Motors>,
    ended: Condvar,
    pub(crate) departed: AtomicU64,
    /// Reports the pacer's missed slots and the paused time into the metrics.
    missed: Mutex<Missed>,
    /// When the activity started, on its clock.
    pub(crate) started_at: Nanos,
    /// Set once the schedule's first op is about to start ([`Shared::schedule_began`]).
    schedule_begun: AtomicBool,
    /// The worker threads' scheduler counts (real clock only).
    pub(crate) worker_sched: Option<Mutex<crate::engine::sched::WorkerSched>>,
    /// The cgroup's CPU throttling since the last snapshot (real clock only).
    throttle: Mutex<Option<crate::metrics::ThrottleMeter>>,
    /// The slot source's outage time at the last snapshot.
    outage_seen: Mutex<Option<Nanos>>,
    /// The slot source's claim wait at the last snapshot (`remote.rs`).
    pub(crate) claim_wait_seen: Mutex<Option<Nanos>>,
    /// When its duration is over, on its clock ([`NO_DEADLINE`] without a
    /// duration, and until the schedule begins: the duration counts from the
    /// schedule's first slot, see [`schedule_began`](Self::schedule_began)).
    /// Written once, Relaxed: a time that publishes no memory.
    deadline: AtomicU64,
    /// The same deadline on the pacer's time base, for the motors' check before
    /// each op (a motor that reads it a moment before it is written starts an op
    /// a whole duration before it).
    pacer_deadline: AtomicU64,
    /// This run, for the deadline's waker armed when the schedule begins.
    me: std::sync::Weak<Shared>,
    /// Set once this process has left its shared schedule; held while it leaves,
    /// so that a reader of the final numbers waits for the last heartbeat.
    pub(crate) left: Mutex<bool>,
    /// Set when a motor left with cycles in hand that it neither ran nor gave
    /// back: its slot source stopped while this activity was running (a stop
    /// from elsewhere). The run then did not complete, even with the input dry.
    pub(crate) abandoned: AtomicBool,
}

/// A reserved motor: its index, retire flag and progress counter.
type Reserved = (usize, Arc<AtomicBool>, Arc<CachePadded<AtomicU64>>);

/// What a motor does after a checkpoint.
pub(crate) enum Next {
    Go,
    Leave,
}

impl Shared {
    pub(crate) fn new(
        config: ActivityConfig,
        clock: Arc<dyn Clock>,
        waiting: Option<Waiting>,
        workload: Box<dyn Workload>,
    ) -> Result<Arc<Self>, EngineError> {
        let waiting = waiting.unwrap_or_else(|| clock.default_waiting());
        let async_mode = Self::async_mode(&config, &*workload, &clock)?;
        // The raw clock stays the engine's; an async run's pacer waits through a
        // clock that drives the worker's ops meanwhile (`async_motor::idle`).
        let engine_clock = clock.clone();
        #[cfg(not(loom))]
        let clock: Arc<dyn Clock> = if async_mode {
            Arc::new(DrivingClock(clock))
        } else {
            clock
        };
        let mut events = None;
        let (pacer, input, paced) = match &config.coordinate {
            Some(_) if config.arrivals != crate::pace::Arrivals::Uniform => {
                // Never silently uniform: the shared schedule's slots are a slice apart.
                return Err(EngineError::BadConfig {
                    alias: config.alias.clone(),
                    what: "arrivals".into(),
                    why: "Poisson arrivals are not supported on a shared (coordinated) \
                          schedule, whose slots are a slice apart: drop arrivals=poisson \
                          or run without coordinate="
                        .into(),
                });
            }
            Some(c) => {
                let (changes, rx) = RemoteSender::channel();
                let request = JoinRequest {
                    alias: config.alias.clone(),
                    cycles: config.cycles.clone(),
                    stride: config.stride,
                    spec: config.rate,
                    clock: clock.clone(),
                    waiting,
                    changes,
                };
                let joined = c.join(request).map_err(|message| EngineError::Coordinate {
                    alias: config.alias.clone(),
                    message,
                })?;
                events = Some(rx);
                (
                    Pacer::Shared(joined.slots),
                    Input::Shared(joined.cycles),
                    joined.paced,
                )
            }
            None => Self::local(&config, &clock, waiting),
        };
        let clock = engine_clock;
        let real = clock.timeline_origin().is_some();
        let now = clock.now();
        let metrics = match &config.ops {
            Some(t) => Metrics::with_ops(now, t.names()),
            None => Metrics::new(now),
        };
        let rec = metrics.recorder();
        let shared = Arc::new_cyclic(|me| Self {
            me: me.clone(),
            alias: Arc::from(config.alias.as_str()),
            paced: AtomicBool::new(paced),
            state: AtomicU8::new(RUNNING),
            signal: Signal::new(),
            input,
            motors: Mutex::new(Motors {
                list: Vec::new(),
                active: 0,
                target: config.threads,
                next_index: 0,
                phase: Phase::Running,
                finished: Vec::new(),
                ramp_generation: 0,
            }),
            ended: Condvar::new(),
            departed: AtomicU64::new(0),
            missed: Mutex::new(Missed::new(
                rec,
                (paced && pacer.spec().is_paused()).then(|| pacer.now()),
                paced.then(|| pacer.spec().rate()),
            )),
            started_at: now,
            schedule_begun: AtomicBool::new(false),
            worker_sched: real.then(Default::default),
            throttle: Mutex::new(real.then(crate::metrics::ThrottleMeter::start)),
            outage_seen: Mutex::new(pacer.outage_nanos()),
            claim_wait_seen: Mutex::new(pacer.claim_wait_nanos()),
            deadline: AtomicU64::new(NO_DEADLINE),
            pacer_deadline: AtomicU64::new(NO_DEADLINE),
            left: Mutex::new(false),
            abandoned: AtomicBool::new(false),
            metrics,
            pacer_offset: now.saturating_sub(pacer.now()),
            #[cfg(not(loom))]
            flight: InFlight::new(
                config.concurrency.unwrap_or(config.threads) as u64,
                config.threads as u64,
                config.concurrency.is_none(),
            ),
            async_mode,
            workload,
            pacer,
            clock,
            config,
        });
        if let Some(rx) = events {
            shared.watch(rx)?;
        }
        Ok(shared)
    }

    /// Whether the run is an async one: `concurrency` was given (the workload
    /// must have an async runner), or the workload has one.
    fn async_mode(
        config: &ActivityConfig,
        workload: &dyn Workload,
        clock: &Arc<dyn Clock>,
    ) -> Result<bool, EngineError> {
        #[cfg(not(loom))]
        let has = crate::engine::async_motor::has_async_runner(workload, &config.alias, clock);
        #[cfg(loom)]
        let has = {
            let _ = (workload, clock);
            false
        };
        if config.concurrency.is_some() && !has {
            let driver = if config.driver.is_empty() {
                "the workload".to_string()
            } else {
                format!("driver `{}`", config.driver)
            };
            return Err(EngineError::BadConfig {
                alias: config.alias.clone(),
                what: "concurrency".into(),
                why: format!(
                    "{driver} has no async runner, so it runs one op per thread: drop \
                     concurrency= and raise threads= to the ops in flight you need"
                ),
            });
        }
        Ok(has)
    }

    /// This process's own pacer and cycle input.
    fn local(
        config: &ActivityConfig,
        clock: &Arc<dyn Clock>,
        waiting: Waiting,
    ) -> (Pacer, Input, bool) {
        let spec = config.rate.unwrap_or(RateSpec::new(1.0));
        let limiter = RateLimiter::builder(spec)
            .waiting(waiting)
            .arrivals(config.arrivals)
            .build_with_clock(clock.clone());
        (
            Pacer::Local(limiter),
            Input::Local(CycleInput::new(config.cycles.clone())),
            config.rate.is_some(),
        )
    }

    /// Starts the configured number of motors, and the deadline's timer if the run
    /// has a duration.
    pub(crate) fn launch(self: &Arc<Self>) -> Result<(), String> {
        self.metrics.mark(self.started_at, Event::Started);
        let todo = Self::reserve(&mut threads::lock(&self.motors), self.config.threads);
        self.spawn_reserved(todo)?;
        if let Some(d) = self.config.duration {
            // The duration counts from the schedule's first slot (armed in
            // `schedule_began`); this one ends a run whose schedule never began
            // within its duration of the launch (a set-up that long, or a run
            // paused from the start), as before issue 21's set-up window.
            self.arm_deadline(self.started_at.saturating_add(d), true);
        }
        Ok(())
    }

    /// Makes entries for `n` more motors (counted active at once), under the
    /// motors lock; [`spawn_reserved`](Self::spawn_reserved) starts their threads
    /// outside it, so a large thread change never stalls status reads or the
    /// report loop. A run with reserved entries cannot finish before they leave.
    fn reserve(m: &mut Motors, n: usize) -> Vec<Reserved> {
        let mut todo = Vec::with_capacity(n);
        for _ in 0..n {
            let index = m.next_index;
            let retire = Arc::new(AtomicBool::new(false));
            let done = Arc::new(CachePadded::new(AtomicU64::new(0)));
            m.next_index += 1;
            m.active += 1;
            m.list.push(MotorEntry {
                index,
                retire: retire.clone(),
                done: done.clone(),
                handle: None,
                leaving: false,
            });
            todo.push((index, retire, done));
        }
        todo
    }

    /// Starts the threads of reserved entries. A thread that cannot start fails
    /// the run, and the entries not started are taken out.
    fn spawn_reserved(self: &Arc<Self>, todo: Vec<Reserved>) -> Result<(), String> {
        let mut failed = None;
        for (index, retire, done) in todo {
            let spawned = if failed.is_none() {
                let shared = self.clone();
                let (r, d) = (retire, done);
                std::thread::Builder::new()
                    .name(format!("{}-{index}", self.alias))
                    .spawn(move || {
                        #[cfg(not(loom))]
                        if shared.async_mode {
                            return AsyncMotor::run(shared, index, r, d);
                        }
                        Motor::run(shared, index, r, d)
                    })
                    .map_err(|e| e.to_string())
            } else {
                Err(String::new())
            };
            let mut m = threads::lock(&self.motors);
            match spawned {
                Ok(h) => match m.list.iter_mut().find(|e| e.index == index) {
                    Some(e) => e.handle = Some(h),
                    // It already ran and left.
                    None => m.finished.push(h),
                },
                Err(e) => {
                    // Never started: take its entry out as a departure with no work.
                    if let Some(pos) = m.list.iter().position(|e| e.index == index) {
                        let e = m.list.swap_remove(pos);
                        if e.is_active() {
                            m.active -= 1;
                        }
                    }
                    if failed.is_none() {
                        self.transition(
                            &mut m,
                            Ask::Fail {
                                why: format!("could not start a worker: {e}"),
                                kind: None,
                            },
                        );
                        failed = Some(e);
                    }
                    self.drained_if_empty(&mut m);
                }
            }
        }
        // Handles stored after the run finished (their motors ran and left at
        // once) are joined here, as `wait` may have drained the list already.
        let late = {
            let mut m = threads::lock(&self.motors);
            if m.phase.is_finished() {
                m.finished.drain(..).collect()
            } else {
                Vec::new()
            }
        };
        join_all(late);
        match failed {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// `deadline` and `pacer_deadline` before they are set.
const NO_DEADLINE: Nanos = Nanos::MAX;

pub(crate) fn join_all(handles: Vec<JoinHandle<()>>) {
    for h in handles {
        let _ = h.join();
    }
}
