//! The engine's two seams: where a run's slots come from ([`SlotSource`]) and where
//! its cycles come from ([`CycleSource`]), and the [`Coordinator`] that hands out
//! both for a schedule shared with other processes.
//!
//! A run that paces alone uses the engine's own pacer and cycle input, which
//! implement these traits. A run on a shared schedule gets both from a coordinator
//! that the layer above gives its [`ActivityConfig`](super::ActivityConfig)
//! (paceline's Redis schedule, [`Coordinate`](crate::Coordinate), is one; an
//! embedding tool can bring its own). The engine knows nothing else of it.
//!
//! # The contract
//!
//! - **Time.** [`SlotSource::now`] is the source's clock; a slot is on the same base,
//!   signed: a shared schedule that runs behind may hand out a slot from before this
//!   process's clock's zero, and the wait then measured is the whole lateness, never
//!   clamped to the process's uptime. The engine measures an op's service time
//!   between two `now` readings, so `now` must be monotonic.
//! - **Missed slots.** [`SlotSource::missed_slots`] is a running count. The engine
//!   reads it before and after a `restart` spec and reports the difference from the
//!   reading after (its baseline): a source whose count restarts at zero and one
//!   whose count goes on are both counted once.
//! - **Changes made elsewhere.** A coordinator tells the engine of a pause, resume,
//!   rate change, stop or lost store through the [`RemoteSender`] it got at join;
//!   the engine applies them as it applies its own control verbs.
//! - **Leaving.** [`SlotSource::leave`] is called once, after the run's last op.

use crate::clock::{Clock, Waiting};
use crate::nanos::Nanos;
use crate::pace::{LimiterStats, RateSpec};
use crate::sync::threads::Arc;
use crossbeam_channel::Sender;
use std::fmt;
use std::ops::Range;

/// What a worker asking a [`SlotSource`] for a slot gets.
///
/// ```
/// use paceline::Slot;
/// let s = Slot::At(-1_500_000); // 1.5 ms before the source's clock's zero
/// assert!(matches!(s, Slot::At(t) if t < 0));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slot {
    /// Its slot, on the source's time base ([`SlotSource::now`]), in signed
    /// nanoseconds: the worker may start.
    At(i64),
    /// `give_up` held while paused: no slot.
    GaveUp,
    /// The source stopped.
    Stopped,
    /// A shared schedule was lost: the run fails with this message.
    Lost(String),
}

/// A running count of missed slots, and whether it counts paused time as missed.
///
/// ```
/// let m = paceline::MissedSlots { count: 3.0, counts_pauses: false };
/// assert_eq!(m.count, 3.0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MissedSlots {
    /// Slots missed so far (fractional for a local pacer's schedule).
    pub count: f64,
    /// The count grows while paused, and the engine takes a pause's slots back
    /// out by its own estimate (the pause's length in slices of the last rate
    /// above 0). paceline's own sources count no pause: the local pacer leaves
    /// its paused slots out (`LimiterStats::paused_slots`), and a shared
    /// schedule has no slot while paused.
    pub counts_pauses: bool,
}

/// Where a run's slots come from: its own pacer, or a shared schedule.
///
/// The engine's motors call [`now`](Self::now) and
/// [`acquire_unless`](Self::acquire_unless) on the hot path; the rest is control.
///
/// ```
/// use paceline::{MissedSlots, RateSpec, Slot, SlotSource, Waiting};
/// // A source whose every slot is now (an unthrottled stand-in).
/// struct Now;
/// impl SlotSource for Now {
///     fn now(&self) -> u64 { 0 }
///     fn acquire_unless(&self, _give_up: &dyn Fn() -> bool) -> Slot { Slot::At(0) }
///     fn set_spec(&self, _spec: RateSpec, _marked: bool) {}
///     fn spec(&self) -> RateSpec { RateSpec::new(1.0) }
///     fn stop(&self) {}
///     fn wake(&self) {}
///     fn waiting(&self) -> Waiting { Waiting::default() }
///     fn missed_slots(&self) -> MissedSlots { MissedSlots { count: 0.0, counts_pauses: false } }
/// }
/// assert_eq!(Now.acquire_unless(&|| false), Slot::At(0));
/// assert!(Now.lost().is_none());
/// ```
pub trait SlotSource: Send + Sync {
    /// Now on the source's time base (monotonic).
    fn now(&self) -> Nanos;

    /// Waits for the next slot; while paused, gives up (no slot) when `give_up`
    /// holds. A pause that begins while a worker waits toward its slot ends that
    /// wait: the worker does not start during the pause.
    fn acquire_unless(&self, give_up: &dyn Fn() -> bool) -> Slot;

    /// Applies `spec` (a shared schedule: for every process; a spec already in
    /// force changes nothing). A rate of 0 pauses; `marked` says whether the other
    /// processes mark it as an event on their timelines (a ramp's steps are not).
    fn set_spec(&self, spec: RateSpec, marked: bool);

    /// The spec in force.
    fn spec(&self) -> RateSpec;

    /// Ends every wait, in this process.
    fn stop(&self);

    /// Stops the schedule for every process that shares it, then here. By default,
    /// the same as [`stop`](Self::stop).
    fn stop_everywhere(&self) {
        self.stop();
    }

    /// Wakes the waits (they look at their `give_up` again).
    fn wake(&self);

    /// The waiting strategy of its workers.
    fn waiting(&self) -> Waiting;

    /// Slots missed so far (see the module's contract on restarts).
    fn missed_slots(&self) -> MissedSlots;

    /// Why a shared schedule was lost, if it was. By default, never.
    fn lost(&self) -> Option<String> {
        None
    }

    /// The op on `slot` (as [`acquire_unless`](Self::acquire_unless) granted it)
    /// starts now, at `start` (a [`now`](Self::now) reading): the engine calls it
    /// once per slot it uses, on the worker's thread, as the op starts (the sync
    /// motor just before the op's first attempt, the async one at the op's first
    /// poll); a granted slot is either used (this) or not
    /// ([`slot_not_used`](Self::slot_not_used)), never both. A shared schedule
    /// counts its start rate from these. By default, nothing to do.
    fn slot_used(&self, slot: i64, start: Nanos) {
        let _ = (slot, start);
    }

    /// A slot [`acquire_unless`](Self::acquire_unless) granted was not used: the
    /// worker retired (`retired`), or the run's duration ended, before its op
    /// started. A shared schedule counts its ticket (missed, or void at the
    /// end); by default, nothing to do.
    fn slot_not_used(&self, retired: bool) {
        let _ = retired;
    }

    /// Leaves a shared schedule once the run has finished (its last counts
    /// written, unused slots given back). By default, nothing to do.
    fn leave(&self) {}

    /// A shared schedule's numbers, for reports. By default, `None`: it paces alone.
    fn status(&self) -> Option<Coordinated> {
        None
    }

    /// A local pacer's statistics. By default, `None`.
    fn stats(&self) -> Option<LimiterStats> {
        None
    }

    /// How long, in all so far, the source could not give slots because its store
    /// did not answer (an outage under way counted to now), ns; the verdict names
    /// the store for an interval that holds some. By default, `None`: a source that
    /// cannot be out.
    fn outage_nanos(&self) -> Option<Nanos> {
        None
    }

    /// How long, in all so far, this process's workers waited for cycles that
    /// other processes' claims held (at a shared schedule's end: the claims of
    /// a member that died, until their lease expires), ns; the verdict names
    /// the lost member for a window that holds some, not this process's
    /// generator. By default, `None`: a source whose cycles no one else holds.
    fn claim_wait_nanos(&self) -> Option<Nanos> {
        None
    }
}

/// Where a run's cycles come from: its own range, or a range shared with others.
/// Each cycle is handed out once.
///
/// ```
/// use paceline::CycleSource;
/// use std::ops::Range;
/// use std::sync::Mutex;
/// struct Ten(Mutex<u64>);
/// impl CycleSource for Ten {
///     fn take(&self, stride: u64) -> Option<Range<u64>> {
///         let mut n = self.0.lock().unwrap();
///         (*n < 10).then(|| { let r = *n..(*n + stride).min(10); *n = r.end; r })
///     }
///     fn give_back(&self, _r: Range<u64>) {}
///     fn finished(&self, _r: Range<u64>) {}
///     fn is_dry(&self) -> bool { *self.0.lock().unwrap() >= 10 }
/// }
/// let t = Ten(Mutex::new(0));
/// assert_eq!(t.take(4), Some(0..4));
/// ```
pub trait CycleSource: Send + Sync {
    /// The next stride of at most `stride` cycles, or `None` when none is left for
    /// this process.
    fn take(&self, stride: u64) -> Option<Range<u64>>;

    /// A worker will not run `r` (another worker of this process will).
    fn give_back(&self, r: Range<u64>);

    /// Every cycle of `r` ran.
    fn finished(&self, r: Range<u64>);

    /// Whether no cycle is left for this process.
    fn is_dry(&self) -> bool;
}

/// A change made to a shared schedule elsewhere (or a fault), for the engine.
///
/// ```
/// let r = paceline::Remote::Lost("the store does not answer".into());
/// assert!(matches!(r, paceline::Remote::Lost(_)));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Remote {
    /// A new rate or strictness, and whether it is an event for the timeline (a
    /// ramp's steps are not).
    Spec(RateSpec, bool),
    /// Paused everywhere.
    Pause,
    /// Resumed everywhere, at this spec.
    Resume(RateSpec),
    /// Stopped everywhere.
    Stop,
    /// The schedule was lost: the run must fail with this message.
    Lost(String),
    /// Something the timeline should show (a process that came back to the
    /// schedule after being pruned while alive).
    Note(String),
}

/// Where a coordinator sends its [`Remote`] changes.
///
/// ```
/// let (tx, rx) = paceline::RemoteSender::channel();
/// tx.send(paceline::Remote::Stop);
/// assert_eq!(rx.try_recv().ok(), Some(paceline::Remote::Stop));
/// ```
#[derive(Debug, Clone)]
pub struct RemoteSender(Sender<Remote>);

impl RemoteSender {
    /// A sender and the receiver the engine reads (also for a coordinator's tests).
    ///
    /// See [`RemoteSender`] for an example.
    pub fn channel() -> (Self, crossbeam_channel::Receiver<Remote>) {
        let (tx, rx) = crossbeam_channel::unbounded();
        (Self(tx), rx)
    }

    /// Sends a change; one sent after the run ended is dropped.
    ///
    /// See [`RemoteSender`] for an example.
    pub fn send(&self, r: Remote) {
        let _ = self.0.send(r);
    }
}

/// What a coordinator needs to join a schedule for one activity.
///
/// ```
/// # use paceline::{JoinRequest, MonotonicClock, RemoteSender, Waiting};
/// let (changes, _rx) = RemoteSender::channel();
/// let r = JoinRequest {
///     alias: "a".into(), cycles: 0..10, stride: 1, spec: None,
///     clock: std::sync::Arc::new(MonotonicClock::new()), waiting: Waiting::default(), changes,
/// };
/// assert_eq!(r.cycles, 0..10);
/// ```
pub struct JoinRequest {
    /// The activity's alias.
    pub alias: String,
    /// Its cycle range (the schedule's, for a process that joins a running one).
    pub cycles: Range<u64>,
    /// Its stride.
    pub stride: u64,
    /// Its rate spec (`None`: unpaced).
    pub spec: Option<RateSpec>,
    /// The engine's clock.
    pub clock: Arc<dyn Clock>,
    /// The waiting strategy of its workers.
    pub waiting: Waiting,
    /// Where to send changes made elsewhere.
    pub changes: RemoteSender,
}

/// What a coordinator hands the engine once joined.
pub struct Joined {
    /// The slots.
    pub slots: Arc<dyn SlotSource>,
    /// The cycles.
    pub cycles: Arc<dyn CycleSource>,
    /// Whether the schedule is paced (a joiner takes the schedule's spec).
    pub paced: bool,
}

/// Joins a schedule shared with other processes, for one activity: the engine calls
/// [`join`](Self::join) as the activity starts.
/// [`ActivityConfig::coordinate`](super::ActivityConfig::coordinate) takes one;
/// `Display` names the schedule in messages (with no secret in it).
///
/// ```
/// let c: paceline::Coordinate = "redis://127.0.0.1:6379/demo".parse()?;
/// let c: &dyn paceline::Coordinator = &c;
/// assert_eq!(c.to_string(), "redis://127.0.0.1:6379/demo");
/// assert_eq!(c.max_cycle(), 1 << 53);
/// # Ok::<(), paceline::StoreError>(())
/// ```
pub trait Coordinator: Send + Sync + fmt::Display + fmt::Debug {
    /// Joins (or creates) the schedule; `Err` is the message the start fails with,
    /// saying what went wrong and how to fix it.
    fn join(&self, request: JoinRequest) -> Result<Joined, String>;

    /// The last cycle the schedule can count. By default, the engine's own limit.
    fn max_cycle(&self) -> u64 {
        super::MAX_CYCLE
    }
}

/// One process's view of a shared schedule, for reports: its own place in it and
/// the activity's global numbers, read from the store at the last heartbeat (every
/// 250 ms).
///
/// ```
/// let c = paceline::Coordinated::default();
/// assert_eq!((c.processes_seen, c.global_completed, c.rerun_cycles), (0, 0, 0));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Coordinated {
    /// The schedule's URL, password hidden.
    pub url: String,
    /// This process's member number (1 for the process that created the schedule).
    pub member: u64,
    /// Processes that have joined the schedule since it was created, this one included.
    pub processes_seen: u64,
    /// Processes whose membership has not expired.
    pub processes_live: u64,
    /// Cycles completed by every process together.
    pub global_completed: u64,
    /// Ops started by every process together, as each last reported them (a
    /// start counts as its op starts; leaving, every start of this process is
    /// in). Once every process has left: the ops run, a cancelled op included.
    pub global_started: u64,
    /// The schedule's start rate, ops/s: every process's ops started, less one,
    /// over the time from the schedule's first slot to the latest start any
    /// process reported (the drain after the last start is no part of it); with
    /// fewer than 2 starts (an unpaced schedule), `global_completion_rate`.
    pub global_achieved: f64,
    /// `global_completed` over the time from the schedule's first slot to the
    /// latest op end any process reported (the last ops' service included), ops/s.
    pub global_completion_rate: f64,
    /// Cycles run again because the process that claimed them died (or stalled past
    /// its claim's lease) before it reported them done.
    pub rerun_cycles: u64,
    /// Slots of the shared schedule forfeited (strict modes, lateness, tickets of
    /// processes that left or died).
    pub global_missed: u64,
    /// Half the round trip of the time-base measurement in use: how far this
    /// process's reading of the shared time may be off, ns.
    pub time_error_nanos: u64,
    /// Round trips to the store so far (leases, claims, heartbeats, changes).
    pub round_trips: u64,
    /// Tickets this process leased, for round trips per op.
    pub tickets_leased: u64,
    /// Times this process was pruned while alive (frozen longer than its
    /// membership's TTL) and came back with a fresh ledger.
    pub rejoins: u64,
    /// How long, in all, this process waited for cycles that other processes'
    /// claims held, ns: at the schedule's end, the claims of a member that died
    /// (or stalled past its claim's lease), until they expired (5 s after its
    /// last heartbeat) and their cycles were re-run here.
    pub claim_wait_nanos: u64,
    /// This process's ticket ledger: what became of each ticket it leased.
    /// Once it has left the schedule, `tickets_leased` = granted + missed +
    /// given back + voided (before, the difference is the tickets it holds).
    pub tickets: TicketLedger,
}

/// What became of the tickets a process leased from a shared schedule: each is
/// exactly one of these once the process has left it.
///
/// ```
/// let t = paceline::TicketLedger::default();
/// assert_eq!(t.granted + t.missed + t.given_back + t.voided, 0);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TicketLedger {
    /// Granted to a worker, whose op started on it.
    pub granted: u64,
    /// Counted missed: forfeited late (strict modes), held when a prune counted
    /// them, granted to a worker that retired before its op, or handed back on
    /// leaving after others leased past them (the store counts those missed).
    pub missed: u64,
    /// Given back to the schedule on leaving (the next lease takes them).
    pub given_back: u64,
    /// Void: leased before a pause (nobody runs them after it), left over when
    /// the schedule ended (stopped everywhere, or no cycle left), granted when the
    /// run's duration was over, or held when the store was lost.
    pub voided: u64,
}
