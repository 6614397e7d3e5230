//! The run's pacer and cycle input as the motors and the run state machine see
//! them: this process's own (held inline: the local pacer's size is not worth an
//! indirection on the hot path), or a [`SlotSource`] and [`CycleSource`] that a
//! [`Coordinator`](super::Coordinator) handed out. The local pacer and input
//! implement the same traits, so both arms answer one contract (`seam.rs`).

use super::input::CycleInput;
use super::missed::Limiter;
use super::seam::{Coordinated, CycleSource, MissedSlots, Slot, SlotSource};
use crate::clock::Waiting;
use crate::nanos::Nanos;
use crate::pace::{LimiterStats, RateSpec};
use crate::sync::threads::Arc;
use std::ops::Range;

/// The local pacer's slot as signed time (the engine's clock stays below 2^63 ns).
#[inline]
fn signed(t: Nanos) -> i64 {
    i64::try_from(t).unwrap_or(i64::MAX)
}

impl SlotSource for Limiter {
    #[inline]
    fn now(&self) -> Nanos {
        Limiter::now(self)
    }

    #[inline]
    fn acquire_unless(&self, give_up: &dyn Fn() -> bool) -> Slot {
        match Limiter::acquire_unless(self, give_up) {
            None => Slot::GaveUp,
            Some(g) if g.is_stopped() => Slot::Stopped,
            Some(g) => Slot::At(signed(g.scheduled_nanos())),
        }
    }

    fn set_spec(&self, spec: RateSpec, _marked: bool) {
        Limiter::set_spec(self, spec)
    }

    fn spec(&self) -> RateSpec {
        Limiter::spec(self)
    }

    fn stop(&self) {
        Limiter::stop(self)
    }

    fn wake(&self) {
        Limiter::wake(self)
    }

    fn waiting(&self) -> Waiting {
        Limiter::waiting(self)
    }

    /// The slots the schedules missed while they ran: the pacer knows which of
    /// its forfeited slots were a pause's (per thread schedule, at the rate
    /// before it, none before the first acquire), so none is counted here.
    fn missed_slots(&self) -> MissedSlots {
        let s = Limiter::stats(self);
        MissedSlots {
            count: s.missed_slots - s.paused_slots,
            counts_pauses: false,
        }
    }

    fn stats(&self) -> Option<LimiterStats> {
        Some(Limiter::stats(self))
    }
}

impl CycleSource for CycleInput {
    #[inline]
    fn take(&self, stride: u64) -> Option<Range<u64>> {
        CycleInput::take(self, stride)
    }

    fn give_back(&self, r: Range<u64>) {
        CycleInput::give_back(self, r)
    }

    /// The local input needs nothing.
    #[inline]
    fn finished(&self, _r: Range<u64>) {}

    fn is_dry(&self) -> bool {
        CycleInput::is_dry(self)
    }
}

/// The run's pacer. One per run, held inline in the run's shared state.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Pacer {
    /// This process's own.
    Local(Limiter),
    /// A coordinator's (a shared schedule).
    Shared(Arc<dyn SlotSource>),
}

impl Pacer {
    #[inline]
    fn source(&self) -> &dyn SlotSource {
        match self {
            Self::Local(l) => l,
            Self::Shared(s) => &**s,
        }
    }

    /// Now on the pacer's time base.
    #[inline]
    pub(crate) fn now(&self) -> Nanos {
        match self {
            Self::Local(l) => l.now(),
            Self::Shared(s) => s.now(),
        }
    }

    /// Waits for the next slot; gives up while paused when `give_up` holds.
    #[inline]
    pub(crate) fn acquire_unless(&self, give_up: impl Fn() -> bool) -> Slot {
        match self {
            // Monomorphic on the hot path of a run that paces alone.
            Self::Local(l) => match l.acquire_unless(give_up) {
                None => Slot::GaveUp,
                Some(g) if g.is_stopped() => Slot::Stopped,
                Some(g) => Slot::At(signed(g.scheduled_nanos())),
            },
            Self::Shared(s) => s.acquire_unless(&give_up),
        }
    }

    /// Applies `spec` (shared: for every process; a spec already in force changes
    /// nothing).
    pub(crate) fn set_spec(&self, spec: RateSpec) {
        self.set_spec_marked(spec, true);
    }

    /// [`set_spec`](Self::set_spec); `marked` says whether the other processes of a
    /// shared schedule mark it as an event on their timelines (not a ramp's steps).
    pub(crate) fn set_spec_marked(&self, spec: RateSpec, marked: bool) {
        self.source().set_spec(spec, marked)
    }

    /// The spec in force.
    pub(crate) fn spec(&self) -> RateSpec {
        self.source().spec()
    }

    /// The op on granted `slot` starts at `start` (a `now` reading): a shared
    /// schedule counts the start.
    #[inline]
    pub(crate) fn slot_used(&self, slot: i64, start: Nanos) {
        if let Self::Shared(s) = self {
            s.slot_used(slot, start);
        }
    }

    /// A granted slot was not used (the worker retired, or the run's duration
    /// ended, before its op started): a shared schedule counts its ticket.
    pub(crate) fn slot_not_used(&self, retired: bool) {
        if let Self::Shared(s) = self {
            s.slot_not_used(retired);
        }
    }

    /// Ends every wait on the pacer, in this process.
    pub(crate) fn stop(&self) {
        self.source().stop()
    }

    /// Stops the schedule for every process that shares it (and here).
    pub(crate) fn stop_everywhere(&self) {
        self.source().stop_everywhere()
    }

    /// Wakes the waits on the pacer (they look at their `give_up` again).
    pub(crate) fn wake(&self) {
        self.source().wake()
    }

    /// The waiting strategy.
    pub(crate) fn waiting(&self) -> Waiting {
        self.source().waiting()
    }

    /// Slots missed so far.
    pub(crate) fn missed_slots(&self) -> MissedSlots {
        self.source().missed_slots()
    }

    /// Why the shared schedule was lost, if it was.
    pub(crate) fn lost(&self) -> Option<String> {
        self.source().lost()
    }

    /// Whether a coordinator's source paces the run.
    pub(crate) fn is_shared(&self) -> bool {
        matches!(self, Self::Shared(_))
    }

    /// Leaves the shared schedule (nothing for a local pacer).
    pub(crate) fn leave(&self) {
        self.source().leave()
    }

    /// The shared schedule's numbers (`None` for a local pacer).
    pub(crate) fn status(&self) -> Option<Coordinated> {
        self.source().status()
    }

    /// How long the source's store has not answered, in all so far (`None` for a
    /// local pacer).
    pub(crate) fn outage_nanos(&self) -> Option<Nanos> {
        self.source().outage_nanos()
    }

    /// How long this process waited for cycles others' claims held, in all so
    /// far (`None` for a local pacer).
    pub(crate) fn claim_wait_nanos(&self) -> Option<Nanos> {
        self.source().claim_wait_nanos()
    }

    /// The local pacer's statistics (`None` for a shared schedule, whose numbers
    /// are in [`Coordinated`]).
    pub(crate) fn stats(&self) -> Option<LimiterStats> {
        self.source().stats()
    }
}

/// The run's cycles.
pub(crate) enum Input {
    /// This process's own range.
    Local(CycleInput),
    /// A coordinator's (a shared range).
    Shared(Arc<dyn CycleSource>),
}

impl Input {
    /// The next stride, or `None` when none is left for this process.
    #[inline]
    pub(crate) fn take(&self, stride: u64) -> Option<Range<u64>> {
        match self {
            Self::Local(i) => i.take(stride),
            Self::Shared(s) => s.take(stride),
        }
    }

    /// A motor will not run `r`.
    pub(crate) fn give_back(&self, r: Range<u64>) {
        match self {
            Self::Local(i) => i.give_back(r),
            Self::Shared(s) => s.give_back(r),
        }
    }

    /// Every cycle of `r` ran.
    #[inline]
    pub(crate) fn finished(&self, r: Range<u64>) {
        match self {
            Self::Local(_) => {}
            Self::Shared(s) => s.finished(r),
        }
    }

    /// Whether no cycle is left for this process.
    pub(crate) fn is_dry(&self) -> bool {
        match self {
            Self::Local(i) => i.is_dry(),
            Self::Shared(s) => s.is_dry(),
        }
    }
}
