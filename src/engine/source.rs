//! Where a run's slots and cycles come from: this process's own pacer and cycle
//! input, or a shared schedule in a store (`coordinate=`, feature `redis`), which
//! hands out both across processes. The motors and the run state machine see one
//! interface either way.

use super::input::CycleInput;
use super::missed::Limiter;
use crate::clock::Waiting;
use crate::nanos::Nanos;
use crate::pace::{LimiterStats, RateSpec};
#[cfg(feature = "redis")]
use crate::store::coord::{Coordination, Granted, Taken};
#[cfg(feature = "redis")]
use crate::sync::threads::Arc;
use std::ops::Range;

/// What a motor asking for a slot gets.
pub(crate) enum Slot {
    /// Its slot, on the pacer's time base ([`Pacer::now`]).
    At(Nanos),
    /// `give_up` held while paused: no slot.
    GaveUp,
    /// The pacer stopped.
    Stopped,
    /// The shared schedule was lost: the run fails with this message.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    Lost(String),
}

/// The run's pacer. One per run, held inline in the run's shared state: the local
/// pacer's size is not worth an indirection on the hot path.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Pacer {
    /// This process's own.
    Local(Limiter),
    /// A shared schedule.
    #[cfg(feature = "redis")]
    Shared(Arc<Coordination>),
}

impl Pacer {
    /// Now on the pacer's time base.
    #[inline]
    pub(crate) fn now(&self) -> Nanos {
        match self {
            Self::Local(l) => l.now(),
            #[cfg(feature = "redis")]
            Self::Shared(c) => c.now(),
        }
    }

    /// Waits for the next slot; gives up while paused when `give_up` holds.
    #[inline]
    pub(crate) fn acquire_unless(&self, give_up: impl Fn() -> bool) -> Slot {
        match self {
            Self::Local(l) => match l.acquire_unless(give_up) {
                None => Slot::GaveUp,
                Some(g) if g.is_stopped() => Slot::Stopped,
                Some(g) => Slot::At(g.scheduled_nanos()),
            },
            #[cfg(feature = "redis")]
            Self::Shared(c) => match c.acquire_unless(&give_up) {
                Granted::Slot(s) => Slot::At(s),
                Granted::GaveUp => Slot::GaveUp,
                Granted::Stopped => Slot::Stopped,
                Granted::Lost(why) => Slot::Lost(why),
            },
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
        match self {
            Self::Local(l) => {
                let _ = marked;
                l.set_spec(spec)
            }
            #[cfg(feature = "redis")]
            Self::Shared(c) => c.set_spec(spec, marked),
        }
    }

    /// The spec in force.
    pub(crate) fn spec(&self) -> RateSpec {
        match self {
            Self::Local(l) => l.spec(),
            #[cfg(feature = "redis")]
            Self::Shared(c) => c.spec().0,
        }
    }

    /// Ends every wait on the pacer, in this process.
    pub(crate) fn stop(&self) {
        match self {
            Self::Local(l) => l.stop(),
            #[cfg(feature = "redis")]
            Self::Shared(c) => c.stop_here(),
        }
    }

    /// Wakes the waits on the pacer (they look at their `give_up` again).
    pub(crate) fn wake(&self) {
        match self {
            Self::Local(l) => l.wake(),
            #[cfg(feature = "redis")]
            Self::Shared(c) => c.wake(),
        }
    }

    /// The waiting strategy.
    pub(crate) fn waiting(&self) -> Waiting {
        match self {
            Self::Local(l) => l.waiting(),
            #[cfg(feature = "redis")]
            Self::Shared(c) => c.waiting(),
        }
    }

    /// Slots missed so far, and whether that count includes paused time (the local
    /// pacer forfeits a pause's slots; a shared schedule has none while paused).
    pub(crate) fn missed_slots(&self) -> (f64, bool) {
        match self {
            Self::Local(l) => (l.stats().missed_slots, true),
            #[cfg(feature = "redis")]
            Self::Shared(c) => (c.missed_slots() as f64, false),
        }
    }

    /// Why the shared schedule was lost, if it was.
    pub(crate) fn lost(&self) -> Option<String> {
        match self {
            Self::Local(_) => None,
            #[cfg(feature = "redis")]
            Self::Shared(c) => c.lost(),
        }
    }

    /// The local pacer's statistics (`None` for a shared schedule, whose numbers
    /// are in [`Coordinated`](crate::Coordinated)).
    pub(crate) fn stats(&self) -> Option<LimiterStats> {
        match self {
            Self::Local(l) => Some(l.stats()),
            #[cfg(feature = "redis")]
            Self::Shared(_) => None,
        }
    }
}

/// The run's cycles.
pub(crate) enum Input {
    /// This process's own range.
    Local(CycleInput),
    /// A shared range, claimed in chunks.
    #[cfg(feature = "redis")]
    Shared(Arc<Coordination>),
}

impl Input {
    /// The next stride, or `None` when none is left for this process.
    #[inline]
    pub(crate) fn take(&self, stride: u64) -> Option<Range<u64>> {
        match self {
            Self::Local(i) => i.take(stride),
            #[cfg(feature = "redis")]
            Self::Shared(c) => match c.take(stride) {
                Taken::Stride(r) => Some(r),
                Taken::Dry => None,
            },
        }
    }

    /// A motor will not run `r`.
    pub(crate) fn give_back(&self, r: Range<u64>) {
        match self {
            Self::Local(i) => i.give_back(r),
            #[cfg(feature = "redis")]
            Self::Shared(c) => c.give_back(r),
        }
    }

    /// Every cycle of `r` ran (a shared schedule records it; the local input needs
    /// nothing).
    #[inline]
    pub(crate) fn finished(&self, r: Range<u64>) {
        match self {
            Self::Local(_) => {
                let _ = r;
            }
            #[cfg(feature = "redis")]
            Self::Shared(c) => c.finished(r),
        }
    }

    /// Whether no cycle is left for this process.
    pub(crate) fn is_dry(&self) -> bool {
        match self {
            Self::Local(i) => i.is_dry(),
            #[cfg(feature = "redis")]
            Self::Shared(c) => c.is_dry(),
        }
    }
}
