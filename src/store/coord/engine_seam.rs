//! The shared schedule behind the engine's seams: [`Coordinate`] is a
//! [`Coordinator`], and one process's [`Coordination`] is both its
//! [`SlotSource`] and its [`CycleSource`].

use super::Coordinate;
use super::session::{Coordination, JoinSpec};
use crate::clock::Waiting;
use crate::engine::{
    Coordinated, Coordinator, CycleSource, JoinRequest, Joined, MissedSlots, Slot, SlotSource,
};
use crate::nanos::Nanos;
use crate::pace::{RateSpec, Scope};
use std::ops::Range;

/// The largest cycle number a shared schedule counts up to (2^53): the store's
/// scripts count cycles in exact doubles.
pub(crate) const MAX_SHARED_CYCLE: u64 = 1 << 53;

impl Coordinator for Coordinate {
    fn join(&self, r: JoinRequest) -> Result<Joined, String> {
        thread_scope_refused(r.spec.as_ref())?;
        if r.clock.timeline_origin().is_none() {
            return Err(
                "a shared schedule is paced on the store's time, which only the real \
                        clock follows: start it in an engine on the real clock (Engine::new)"
                    .into(),
            );
        }
        let want = JoinSpec {
            cycles: r.cycles,
            stride: r.stride,
            spec: r.spec,
            min_members: self.min_members_count(),
            min_members_timeout: self.min_members_timeout(),
        };
        let c = Coordination::join(self, r.clock, r.waiting, want, r.changes)
            .map_err(|e| e.to_string())?;
        let paced = c.spec().1;
        Ok(Joined {
            slots: c.clone(),
            cycles: c,
            paced,
        })
    }

    fn max_cycle(&self) -> u64 {
        MAX_SHARED_CYCLE
    }
}

/// Refuses thread scope: a shared schedule has one rate, every member's
/// threads' total, and read as that total `rate=100,thread` on 2 threads would
/// run at 100/s, not the 200/s it asks for (audit p17, L10: it did, silently).
/// Checked before anything reaches the store. Pinned by
/// `tests::thread_scope_is_refused_before_the_store_is_asked`.
pub(crate) fn thread_scope_refused(spec: Option<&RateSpec>) -> Result<(), String> {
    match spec {
        Some(s) if s.scope_value() == Scope::Thread => Err(format!(
            "thread scope (`rate={}`) is not supported on a shared schedule, whose one rate \
             is the total of every member's threads: give that total in activity scope \
             (`rate=200` for 2 threads at 100/s each, the `thread` word left out), or run \
             without coordinate=",
            spec_text(s)
        )),
        _ => Ok(()),
    }
}

/// `s`'s rate, strictness and scope as a user writes them: `100,1.1,thread`.
fn spec_text(s: &RateSpec) -> String {
    format!("{},{},thread", s.rate(), s.strictness_value())
}

impl SlotSource for Coordination {
    fn now(&self) -> Nanos {
        Coordination::now(self)
    }

    fn acquire_unless(&self, give_up: &dyn Fn() -> bool) -> Slot {
        Coordination::acquire_unless(self, give_up)
    }

    fn set_spec(&self, spec: RateSpec, marked: bool) {
        Coordination::set_spec(self, spec, marked)
    }

    fn spec(&self) -> RateSpec {
        Coordination::spec(self).0
    }

    fn stop(&self) {
        self.stop_here()
    }

    fn stop_everywhere(&self) {
        Coordination::stop_everywhere(self);
        self.stop_here();
    }

    fn wake(&self) {
        Coordination::wake(self)
    }

    fn waiting(&self) -> Waiting {
        Coordination::waiting(self)
    }

    fn missed_slots(&self) -> MissedSlots {
        MissedSlots {
            count: Coordination::missed_slots(self) as f64,
            counts_pauses: false,
        }
    }

    fn lost(&self) -> Option<String> {
        Coordination::lost(self)
    }

    fn slot_used(&self, slot: i64, start: Nanos) {
        Coordination::slot_used(self, slot, start)
    }

    fn slot_not_used(&self, retired: bool) {
        Coordination::slot_not_used(self, retired)
    }

    fn leave(&self) {
        Coordination::leave(self)
    }

    fn status(&self) -> Option<Coordinated> {
        Some(Coordination::status(self))
    }

    fn outage_nanos(&self) -> Option<Nanos> {
        Some(Coordination::outage_nanos(self))
    }

    fn claim_wait_nanos(&self) -> Option<Nanos> {
        Some(Coordination::claim_wait_nanos(self))
    }
}

impl CycleSource for Coordination {
    fn take(&self, stride: u64) -> Option<Range<u64>> {
        Coordination::take(self, stride)
    }

    fn give_back(&self, r: Range<u64>) {
        Coordination::give_back(self, r)
    }

    fn finished(&self, r: Range<u64>) {
        Coordination::finished(self, r)
    }

    fn is_dry(&self) -> bool {
        Coordination::is_dry(self)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// Regression (audit p17, L10): `rate=100,1.1,thread threads=2` on a shared
    /// schedule joined it at 100/s in total, in activity scope, without a word.
    #[test]
    fn thread_scope_is_refused_before_the_store_is_asked() {
        let thread = RateSpec::parse("100,1.1,thread").unwrap_or_else(|e| panic!("{e}"));
        let err = thread_scope_refused(Some(&thread)).unwrap_err();
        assert!(
            err.starts_with("thread scope (`rate=100,1.1,thread`) is not supported on a shared"),
            "{err}"
        );
        assert!(err.contains("`rate=200` for 2 threads"), "{err}");
        let activity = RateSpec::parse("100,1.1").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(thread_scope_refused(Some(&activity)), Ok(()));
        assert_eq!(thread_scope_refused(None), Ok(()));
    }
}
