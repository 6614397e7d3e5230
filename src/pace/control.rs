//! Everything a schedule does under its control lock: installing epochs (changes of
//! spec, pause, restart, stop, anchoring, rollover, idle overflow) and the accounting
//! of finished epochs that `stats` reads.
//!
//! An epoch change computes the next epoch from the current word ([`Change`]),
//! installs its burst anchor (if it starts a new allowance) and writes its ring slot,
//! then installs its number in the hot word with a CAS; a ticket that slipped in
//! first makes it start over. After the install it publishes the epoch's full number
//! (`gate.epoch`), the `slow` hint and, where reservations become void, the `era`.
//! See `super::schedule` for the ground rules.

use super::arrivals::Arrivals;
use super::epoch::{Epoch, Kind, ModeBits, NO_CUT, Ring};
use super::grant::{Grant, Refused};
use super::schedule::{Gate, Hot, Schedule, Shared, Toward, Waiters};
use super::slice::Slice;
use super::spec::{Mode, RateSpec, Verb};
use super::word::Word;
use crate::clock::Clock;
use crate::nanos::Nanos;
use crate::sync::{self, AtomicBool, AtomicU64, Backoff, Mutex, Ordering};
use crossbeam_utils::CachePadded;

/// Schedule ids for thread-local reservations (0 is "none").
static NEXT_SCHEDULE: sync::unmodeled::AtomicU64 = sync::unmodeled::AtomicU64::new(1);

/// Accounting of what finished epochs did, and the spec in force.
#[derive(Debug)]
pub(crate) struct Control {
    pub(super) epoch: Epoch,
    /// The spec in force (its verb is never `restart`: a restart is carried out, not
    /// kept).
    spec: RateSpec,
    /// When the schedule was anchored (first acquire or restart); `None` before.
    origin: Option<Nanos>,
    grants_before: u64,
    /// Tickets of this schedule (since its anchoring) given back by their takers at
    /// a cut: counted in `grants_before` or the word, never granted.
    returned: u64,
    /// The epoch the latest anchoring installed: tickets of earlier epochs were
    /// counted in grants the anchoring zeroed.
    anchored_epoch: u64,
    idle_before: u64,
    missed_before: f64,
    /// Of `missed_before`, the slots forfeited while away: paused (the spec at
    /// rate 0) or out of use (the other scope is in force).
    paused_before: f64,
    /// While the schedule's time is not owed (paused, or out of use while the
    /// limiter's other scope is active): since when, and the slice before. That time
    /// is forfeited when the schedule is running and in use again.
    away: Option<(Nanos, Slice)>,
    /// Whether the limiter's scope uses this schedule.
    in_use: bool,
    /// The burst allowance generation: the tag of the anchor in force.
    tag: u8,
    epochs: u64,
}

/// Statistics of one schedule; see [`LimiterStats`](crate::LimiterStats).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct ScheduleStats {
    pub(crate) grants: u64,
    pub(crate) allocated: u64,
    pub(crate) idle: u64,
    pub(crate) missed: f64,
    /// Of `missed`, the slots forfeited while paused.
    pub(crate) paused: f64,
    pub(crate) cursor: u64,
    pub(crate) last_seen: u64,
    pub(crate) epochs: u64,
    pub(crate) stale: u64,
    pub(crate) anchored: bool,
}

impl ScheduleStats {
    /// Adds `other`'s counts (grants, allocated, idle, missed, paused, epochs,
    /// stale) to these.
    pub(crate) fn add_counts(&mut self, other: &ScheduleStats) {
        self.grants += other.grants;
        self.allocated += other.allocated;
        self.idle += other.idle;
        self.missed += other.missed;
        self.paused += other.paused;
        self.epochs += other.epochs;
        self.stale += other.stale;
    }
}

/// A change of epoch, computed under the control mutex from the current word.
struct Change {
    next: Epoch,
    /// Tickets of the old epoch the change itself grants (an op's own ticket).
    consumed: u64,
    /// Idle forfeited at the change (strict overflow).
    extra_idle: u64,
    /// The anchor of a new burst allowance, installed before the epoch.
    anchor: Option<i64>,
}

impl Change {
    /// A change to `next`, granting nothing and forfeiting nothing itself.
    fn to(next: Epoch) -> Self {
        Self {
            next,
            consumed: 0,
            extra_idle: 0,
            anchor: None,
        }
    }

    /// A change to the epoch after `cur`, from `base`, with `cur`'s parameters.
    fn from(cur: &Epoch, base: u64, frac: u64) -> Self {
        Self::to(Epoch {
            number: cur.number + 1,
            base,
            frac,
            cut: NO_CUT,
            ..*cur
        })
    }
}

fn mode_bits(spec: &RateSpec, tag: u8) -> ModeBits {
    let (kind, shift, inv_s) = match spec.mode() {
        Mode::Average => (Kind::Average, 0, 0),
        Mode::Compensate { shift } => (Kind::Compensate, shift, 0),
        Mode::Strict => (Kind::Strict, 0, 0),
        Mode::Burst { ratio } => (
            Kind::Burst,
            0,
            ((1u64 << 32) as f64 / ratio).floor().min(u32::MAX as f64) as u32,
        ),
    };
    ModeBits {
        kind,
        shift,
        inv_s,
        paused: spec.is_paused(),
        unanchored: false,
        stopped: false,
        tag,
        poisson: false,
    }
}

/// The slots of `slice` that fit in `nanos` of forfeited time. A schedule that
/// has never had a rate (started paused) has a zero slice and forfeits no slot:
/// its time away is paused time, not missed slots (issue 24, item 1: the
/// division by zero read as 18446744073709551615 missed slots).
fn slots_in(nanos: Nanos, slice: Slice) -> f64 {
    match slice.as_f64() {
        s if s > 0.0 => nanos as f64 / s,
        _ => 0.0,
    }
}

fn slice_of(spec: &RateSpec) -> Option<Slice> {
    (!spec.is_paused()).then(|| Slice::of_rate(spec.rate()))
}

/// The spec as it stays in force: a restart is carried out, not kept, so that a later
/// pause or resume built from it (`spec().with_rate(..)`) never restarts.
fn in_force(spec: RateSpec) -> RateSpec {
    if spec.verb_value() == Verb::Restart {
        spec.verb(Verb::Start)
    } else {
        spec
    }
}

/// A change to slice `slice` at `now` raises the rate while `cur`'s cursor `cursor` is
/// more than one new slice (or the release window `window`, if longer) ahead of now:
/// the cut (tickets of earlier epochs whose slot lies at or after it are given back)
/// and the reading, or `None` (the new epoch starts at the cursor, as before).
/// Audit p16, H1: a slot granted at 0.01/s held every op for 100 s after a raise.
fn raise_cut(
    cur: &Epoch,
    cursor: Nanos,
    slice: Slice,
    now: Nanos,
    window: Nanos,
) -> Option<(Nanos, Nanos)> {
    let raises = raises(cur.slice, slice);
    let cut = now
        .saturating_add(ceil(slice).max(window))
        .saturating_add(1);
    (raises && cursor >= cut).then_some((cut, now))
}

/// Whether a change from slice `from` to slice `to` raises the rate.
fn raises(from: Slice, to: Slice) -> bool {
    (to.hi, to.lo) < (from.hi, from.lo)
}

/// A slice in whole nanoseconds, rounded up.
fn ceil(slice: Slice) -> Nanos {
    slice.hi + u64::from(slice.lo != 0)
}

/// Where the epoch after `cur` (ended at word `wd`) starts when a change to `slice` at
/// `now` cuts at `cut`: one new slice after the latest slot kept (before the cut), and
/// not before now.
///
/// Uniform slots: the tickets certainly cut are those whose slot at the epoch's least
/// idle lies at or after the cut (a binary search: slots rise with the ticket). In
/// average and burst modes the idle is constant in an epoch, so that is exact. In
/// strict and compensating modes a taker's slot was computed with the idle of its
/// take, between 0 (the epoch's start) and the word's, so the latest kept slot is
/// bounded above by the cut and by the latest candidate's slot at the word's idle: a
/// kept slot is never closer than one new slice to the new epoch's first. Poisson
/// slots are not searched (each costs a prefix sum of gaps): the bound is the last
/// ticket's slot.
fn cut_base(cur: &Epoch, wd: Word, cut: Nanos, now: Nanos, slice: Slice) -> Nanos {
    let before = cut - 1;
    let candidates = if cur.mode.poisson {
        wd.ticket
    } else {
        let least = if cur.mode.forfeits() { 0 } else { wd.idle };
        let (mut lo, mut hi) = (0, wd.ticket);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if cur.slot(mid, least) < cut {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    };
    let last = match candidates {
        // Every ticket of this epoch is cut: earlier epochs' slots lie before its base.
        0 => before.min(cur.base),
        k => before.min(cur.slot(k - 1, wd.idle)),
    };
    now.max(last.saturating_add(ceil(slice)))
}

impl Schedule {
    /// A schedule for `spec`, not anchored: the first acquire anchors it. `in_use`:
    /// whether the limiter's scope uses it (see [`set_spec`](Self::set_spec)).
    pub(crate) fn new(spec: RateSpec, in_use: bool, arrivals: Arrivals) -> Self {
        let mut mode = mode_bits(&spec, 0);
        mode.unanchored = true;
        let seed = match arrivals {
            Arrivals::Uniform => 0,
            Arrivals::Poisson { seed } => {
                mode.poisson = true;
                seed
            }
        };
        let epoch = Epoch {
            number: 0,
            base: 0,
            frac: 0,
            slice: slice_of(&spec).unwrap_or_default(),
            mode,
            seed,
            draws: 0,
            cut: NO_CUT,
        };
        let ring = Ring::new();
        ring.write(&epoch);
        Self {
            hot: CachePadded::new(Hot {
                word: AtomicU64::new(
                    Word {
                        epoch: 0,
                        ticket: 0,
                        idle: 0,
                    }
                    .pack(),
                ),
                seen: AtomicU64::new(0),
                anchor: super::anchor::Anchor::new(),
            }),
            gate: CachePadded::new(Gate {
                slow: AtomicBool::new(true),
                era: AtomicU64::new(0),
                epoch: AtomicU64::new(0),
                paused: AtomicU64::new(0),
                cut: AtomicU64::new(0),
                id: NEXT_SCHEDULE.fetch_add(1, Ordering::Relaxed),
            }),
            ring,
            control: Mutex::new(Control {
                epoch,
                spec: in_force(spec),
                origin: None,
                grants_before: 0,
                returned: 0,
                anchored_epoch: 0,
                idle_before: 0,
                missed_before: 0.0,
                paused_before: 0.0,
                away: None,
                in_use,
                tag: 0,
                epochs: 0,
            }),
            stale: AtomicU64::new(0),
            voided: AtomicU64::new(0),
            voided_nanos: AtomicU64::new(0),
            waiters: CachePadded::new(Waiters {
                sleepers: AtomicU64::new(0),
                parked: AtomicU64::new(0),
            }),
            async_gate: CachePadded::new(AtomicU64::new(0)),
            async_starts: CachePadded::new(AtomicU64::new(0)),
        }
    }

    /// The first acquire anchors the schedule at its reading, unless epoch
    /// `seen_epoch` already ended.
    #[cold]
    pub(super) fn anchor_first<C: Clock>(&self, sh: &Shared<C>, seen_epoch: u64) {
        let mut ctl = sync::lock(&self.control);
        if ctl.epoch.number == seen_epoch {
            let now = self.observe(sh);
            self.anchor_at(&mut ctl, now, NO_CUT);
        }
    }

    /// Anchors (or re-anchors) the schedule at `now`: a fresh origin, no lag, no idle,
    /// a new burst allowance. Tickets of earlier epochs whose slot lies at or after
    /// `cut` are given back by their takers ([`NO_CUT`]: none).
    fn anchor_at(&self, ctl: &mut Control, now: Nanos, cut: Nanos) {
        let spec = ctl.spec;
        ctl.tag = super::anchor::next_tag(ctl.tag);
        let mode = mode_bits(&spec, ctl.tag);
        self.change(ctl, |cur, _| {
            let next = Epoch {
                number: cur.number + 1,
                base: now,
                frac: 0,
                slice: slice_of(&spec).unwrap_or(cur.slice),
                mode,
                seed: 0,
                draws: 0,
                cut,
            };
            Change {
                anchor: Some(next.anchor_for(now, now)),
                ..Change::to(next)
            }
        });
        // A restart: reservations of the old schedule are void.
        self.gate.era.fetch_add(1, Ordering::Release);
        ctl.origin = Some(now);
        ctl.grants_before = 0;
        ctl.returned = 0;
        ctl.anchored_epoch = ctl.epoch.number;
        ctl.idle_before = 0;
        ctl.missed_before = 0.0;
        ctl.paused_before = 0.0;
        ctl.away = (spec.is_paused() || !ctl.in_use).then_some((now, ctl.epoch.slice));
    }

    /// Installs the next epoch computed by `make` from the current word, retrying until
    /// no ticket slipped in between. Accounts the finished epoch.
    fn change(&self, ctl: &mut Control, mut make: impl FnMut(&Epoch, Word) -> Change) -> Word {
        self.change_if(ctl, |cur, wd| Some(make(cur, wd)))
            .expect("an unconditional change is always installed")
    }

    /// [`change`](Self::change), unless `make` returns `None` for the current word: then
    /// nothing changes and `None` is returned.
    fn change_if(
        &self,
        ctl: &mut Control,
        mut make: impl FnMut(&Epoch, Word) -> Option<Change>,
    ) -> Option<Word> {
        let backoff = Backoff::new();
        loop {
            let w = self.hot.word.load(Ordering::Acquire);
            let wd = Word::unpack(w);
            let cur = ctl.epoch;
            debug_assert_eq!(wd.epoch, cur.number & super::word::EPOCH_MASK);
            let mut change = make(&cur, wd)?;
            // The arrivals are the schedule's: every epoch inherits them, and its
            // random gaps continue the draws where the old epoch's live tickets ended.
            change.next.mode.poisson = cur.mode.poisson;
            change.next.seed = cur.seed;
            change.next.draws = if cur.mode.live() {
                cur.draws.wrapping_add(wd.ticket + change.consumed)
            } else {
                cur.draws
            };
            if let Some(anchor) = change.anchor {
                // Before the epoch: its takers see the anchor of their allowance.
                self.hot.anchor.install(change.next.mode.tag, anchor);
            }
            self.ring.write(&change.next);
            let installed = Word {
                epoch: change.next.number,
                ticket: 0,
                idle: 0,
            };
            if self
                .hot
                .word
                .compare_exchange(w, installed.pack(), Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                self.gate.epoch.store(change.next.number, Ordering::Release);
                if change.next.mode.paused {
                    // Before the signal is interrupted: a woken sleeper sees it.
                    self.gate
                        .paused
                        .store(change.next.number, Ordering::Release);
                }
                if cur.mode.live() {
                    let idle = wd.idle + change.extra_idle;
                    ctl.grants_before += wd.ticket + change.consumed;
                    ctl.idle_before += idle;
                    ctl.missed_before += slots_in(idle, cur.slice);
                }
                ctl.epoch = change.next;
                ctl.epochs += 1;
                let slow = change.next.mode.forfeits() || !change.next.mode.live();
                self.gate.slow.store(slow, Ordering::Relaxed);
                let cut = change.next.cut != NO_CUT;
                if cut {
                    // After the install, before the signal is interrupted: a taker
                    // that sees it reads the cut from the epoch's ring slot.
                    self.gate.cut.store(change.next.number, Ordering::Release);
                }
                // Reserved tickets are mapped by their own epoch's burst ratio: a
                // change of kind or ratio voids them too; so does a cut (reserved
                // slots at or after it would otherwise be handed out).
                let remapped = change.next.mode.kind != cur.mode.kind
                    || change.next.mode.inv_s != cur.mode.inv_s;
                if slow || remapped || cut {
                    self.gate.era.fetch_add(1, Ordering::Release);
                }
                return Some(wd);
            }
            backoff.spin();
        }
    }

    /// Starts a new epoch with the same parameters (tickets near the field's limit, or
    /// idle about to overflow), unless `seen_epoch` already ended.
    #[cold]
    pub(super) fn roll_over(&self, seen_epoch: u64) {
        let mut ctl = sync::lock(&self.control);
        if ctl.epoch.number != seen_epoch {
            return; // someone else rolled it over already
        }
        self.change(&mut ctl, |cur, wd| {
            let (base, frac) = cur.cursor(wd.ticket, wd.idle);
            Change::from(cur, base, frac)
        });
    }

    /// Applies a new spec (scope is the caller's business). `in_use`: whether the
    /// limiter's scope uses this schedule from now on; the time a schedule spends out
    /// of use is forfeited when it comes back, as a pause's is.
    pub(crate) fn set_spec<C: Clock>(&self, sh: &Shared<C>, spec: RateSpec, in_use: bool) {
        let mut ctl = sync::lock(&self.control);
        // A pause is never a restart.
        let restart = spec.verb_value() == Verb::Restart && !spec.is_paused();
        let spec = in_force(spec);
        ctl.in_use = in_use;
        if ctl.epoch.mode.stopped {
            ctl.spec = spec;
            return;
        }
        ctl.spec = spec;
        if ctl.origin.is_none() {
            // Not started: keep waiting for the first acquire, with the new parameters.
            let mut mode = mode_bits(&spec, ctl.tag);
            mode.unanchored = true;
            self.change(&mut ctl, |cur, _| {
                Change::to(Epoch {
                    number: cur.number + 1,
                    base: 0,
                    frac: 0,
                    slice: slice_of(&spec).unwrap_or(cur.slice),
                    mode,
                    seed: 0,
                    draws: 0,
                    cut: NO_CUT,
                })
            });
            sh.signal.notify();
            return;
        }
        // The schedule is away while paused or out of use; the time it was away is
        // forfeited (idle, missed slots) when it runs in use again.
        let away_now = spec.is_paused() || !in_use;
        // A change that may cut marks itself before it reads the clock: a taker whose
        // decision comes after this reading sees the mark (review p17 M3).
        let may_cut = restart
            || (!away_now
                && ctl.away.is_none()
                && ctl.epoch.mode.live()
                && raises(ctl.epoch.slice, slice_of(&spec).unwrap_or(ctl.epoch.slice)));
        let unmark = may_cut.then(|| self.mark_cut_pending(&ctl));
        let now = self.observe(sh);
        let window = sh.waiting.release_window_nanos();
        if restart {
            // A restart begins a new schedule at now: a caller asleep toward a slot
            // of the old one beyond the release window gives it back and takes one
            // of the new schedule (audit p16, H1).
            self.anchor_at(&mut ctl, now, now.saturating_add(window).saturating_add(1));
            sh.signal.interrupt();
            return;
        }
        let back = match ctl.away {
            Some((at, slice)) if !away_now => Some((now.saturating_sub(at), slice)),
            _ => None,
        };
        let cur_mode = ctl.epoch.mode;
        let mut mode = mode_bits(&spec, ctl.tag);
        let new_allowance = mode.kind == Kind::Burst
            && (cur_mode.kind != Kind::Burst || cur_mode.inv_s != mode.inv_s);
        if new_allowance {
            ctl.tag = super::anchor::next_tag(ctl.tag);
            mode.tag = ctl.tag;
        }
        let tag_before = cur_mode.tag;
        let anchor = self.hot.anchor.get(tag_before);
        let mut cutting = false;
        self.change(&mut ctl, |cur, wd| {
            let (mut base, mut frac) = cur.end(wd.ticket, wd.idle);
            if let Some((forfeit, _)) = back {
                base = base.saturating_add(forfeit);
            }
            let slice = slice_of(&spec).unwrap_or(cur.slice);
            // Read after the word: a ticket a forfeiting taker took by CAS before it
            // was decided on an earlier reading, so its slot is within the release
            // window of this one, before the cut.
            let cut = if back.is_none() && !away_now && cur.mode.live() {
                raise_cut(cur, base, slice, self.observe(sh), window)
            } else {
                None
            };
            cutting = cut.is_some();
            if let Some((cut, now)) = cut {
                (base, frac) = (cut_base(cur, wd, cut, now, slice), 0);
            }
            let next = Epoch {
                number: cur.number + 1,
                base,
                frac,
                slice,
                mode,
                seed: 0,
                draws: 0,
                cut: cut.map_or(NO_CUT, |(cut, _)| cut),
            };
            let anchor = (mode.kind == Kind::Burst && !spec.is_paused()).then(|| {
                // The next late op may start at now (or where the old allowance put
                // it, if later): a change never releases more burst than s allows.
                let was = match anchor {
                    Some(a) if cur.mode.kind == Kind::Burst && cur.mode.live() => {
                        cur.burst_start(base, a)
                    }
                    _ => 0,
                };
                next.anchor_for(base, now.max(was))
            });
            Change {
                anchor,
                ..Change::to(next)
            }
        });
        if let Some((forfeit, slice)) = back {
            // Every return from being away is an absence (a pause, or out of use
            // in the other scope), never overload: its slots are paused slots
            // whatever the epoch left was (a scope round trip invented missed
            // slots when only a paused one counted).
            ctl.idle_before += forfeit;
            ctl.missed_before += slots_in(forfeit, slice);
            ctl.paused_before += slots_in(forfeit, slice);
            ctl.away = None;
        } else if away_now && ctl.away.is_none() {
            // A paused epoch keeps the slice before the pause: its missed slots are
            // counted in it.
            ctl.away = Some((now, ctl.epoch.slice));
        }
        if let (Some(before), false) = (unmark, cutting) {
            // Marked, but the reading found nothing to cut: the mark goes (a taker
            // that saw it found no cut in the installed epoch's ring slot).
            self.gate.cut.store(before, Ordering::Release);
        }
        let pausing = spec.is_paused() && !cur_mode.paused;
        drop(ctl);
        if pausing || cutting {
            // A cut: callers asleep toward slots it gave back wake and take new ones.
            // Callers sleeping toward slots the pause voided wake and wait it out.
            sh.signal.interrupt();
        } else {
            sh.signal.notify();
        }
    }

    /// Publishes that the change about to be computed under `ctl` may cut: `gate.cut`
    /// holds the next epoch's number until the change installs it (with its cut, or,
    /// if it cut nothing, the value before, which is returned). SeqCst store, then a
    /// SeqCst fence, BEFORE the change reads the clock: the setter's half of the
    /// store-buffering pair whose other half is a taker's reading, then its load in
    /// [`Schedule::cut_since`]. Either the taker's load sees this mark (it then waits
    /// for the change under this lock and re-checks) or the change's reading is no
    /// earlier than the taker's, so the taker's slot lies before the cut.
    fn mark_cut_pending(&self, ctl: &Control) -> u64 {
        let before = self.gate.cut.load(Ordering::Relaxed);
        self.gate.cut.store(ctl.epoch.number + 1, Ordering::SeqCst);
        sync::fence(Ordering::SeqCst);
        before
    }

    /// A taker gives back `n` tickets of epoch `ep_number` whose slots a cut gave
    /// back (see [`Epoch::cut`]): never granted, not missed (the schedule time they
    /// held is the new epoch's). Tickets of an epoch before the latest anchoring
    /// were counted in grants it zeroed.
    #[cold]
    pub(super) fn returned_at_cut(&self, ep_number: u64, n: u64) {
        let mut ctl = sync::lock(&self.control);
        if ep_number >= ctl.anchored_epoch {
            ctl.returned += n;
        }
    }

    /// Marks the schedule stopped: every later acquire returns a stopped grant. The
    /// accounting stops with it (a pause in progress ends at the stop).
    pub(crate) fn stop<C: Clock>(&self, sh: &Shared<C>) {
        let mut ctl = sync::lock(&self.control);
        if ctl.epoch.mode.stopped {
            return;
        }
        if let Some((at, slice)) = ctl.away.take() {
            if ctl.epoch.mode.paused {
                let paused_for = sh.now().saturating_sub(at);
                ctl.idle_before += paused_for;
                ctl.missed_before += slots_in(paused_for, slice);
                ctl.paused_before += slots_in(paused_for, slice);
            }
        }
        self.change(&mut ctl, |cur, wd| {
            let (base, frac) = cur.end(wd.ticket, wd.idle);
            let mut change = Change::from(cur, base, frac);
            change.next.mode.stopped = true;
            change
        });
    }

    /// Whether [`stop`](Self::stop) was called.
    pub(crate) fn is_stopped(&self) -> bool {
        sync::lock(&self.control).epoch.mode.stopped
    }

    /// Takes a ticket through an epoch change (strict idle overflow, rollover race).
    pub(super) fn take_under_lock<C: Clock>(&self, sh: &Shared<C>, n: u64) -> Option<Grant> {
        let (slot, now, ep, ticket) = match self.forfeit_under_lock(sh, n, None)? {
            Ok(taken) => taken,
            Err(_) => unreachable!("a blocking take is never refused"),
        };
        // A pause installed after their epoch voids the tickets (they cannot go back:
        // their epoch has ended).
        let toward = Toward::new(&ep, ticket, slot, n, false);
        let start = self.wait_from(sh, now, slot, 0, toward)?;
        Some(Grant::new(slot, start, n as u32))
    }

    /// Takes `n` tickets in a forfeiting epoch under the control lock, moving the
    /// forfeit into the next epoch's base instead of the idle field (for a forfeit the
    /// field cannot hold, or tickets near the rollover). With `try_window`
    /// (`try_acquire`), takes nothing if the slot is more than that window ahead of
    /// now and says when it is due. Returns the slot, the clock reading and the epoch
    /// the tickets were taken in; `None` if
    /// the epoch no longer forfeits (the caller starts over).
    pub(super) fn forfeit_under_lock<C: Clock>(
        &self,
        sh: &Shared<C>,
        n: u64,
        try_window: Option<Nanos>,
    ) -> Option<Result<(Nanos, Nanos, Epoch, u64), Refused>> {
        let mut ctl = sync::lock(&self.control);
        if !ctl.epoch.mode.live() || !ctl.epoch.mode.forfeits() {
            return None;
        }
        let mut taken = Ok((0, 0, ctl.epoch, 0));
        self.change_if(&mut ctl, |cur, wd| {
            let slot = cur.slot(wd.ticket, wd.idle);
            let now = self.observe(sh);
            if let Some(window) = try_window {
                if slot > now.saturating_add(window) {
                    taken = Err(Refused::NotUntil(slot - window));
                    return None;
                }
            }
            let forfeit = cur.forfeit(now.saturating_sub(slot));
            taken = Ok((slot, now, *cur, wd.ticket));
            let (base, frac) = cur.cursor(wd.ticket + n, wd.idle);
            Some(Change {
                consumed: n,
                extra_idle: forfeit,
                ..Change::from(cur, base.saturating_add(forfeit), frac)
            })
        });
        Some(taken)
    }

    /// The spec in force.
    pub(crate) fn spec(&self) -> RateSpec {
        sync::lock(&self.control).spec
    }

    /// A consistent view of the accounting.
    pub(crate) fn stats<C: Clock>(&self, sh: &Shared<C>) -> ScheduleStats {
        let ctl = sync::lock(&self.control);
        let wd = Word::unpack(self.hot.word.load(Ordering::Acquire));
        let ep = ctl.epoch;
        let now = sh.now();
        let (mut cursor, _) = ep.end(wd.ticket, wd.idle);
        let voided = self.voided.load(Ordering::Relaxed);
        let mut idle = ctl.idle_before + self.voided_nanos.load(Ordering::Relaxed);
        let mut missed = ctl.missed_before + voided as f64;
        let mut paused = ctl.paused_before;
        let mut grants = ctl.grants_before;
        // Tickets of an epoch that is not live (paused, unanchored, stopped) are void.
        if ep.mode.live() {
            idle += wd.idle;
            missed += slots_in(wd.idle, ep.slice);
            grants += wd.ticket;
        }
        if let (true, Some((at, slice))) = (ep.mode.paused, ctl.away) {
            let paused_for = now.saturating_sub(at);
            idle += paused_for;
            missed += slots_in(paused_for, slice);
            paused += slots_in(paused_for, slice);
            cursor = ep.base.saturating_add(paused_for);
        }
        let origin = ctl.origin.unwrap_or(0);
        ScheduleStats {
            grants: grants.saturating_sub(voided).saturating_sub(ctl.returned),
            allocated: cursor.saturating_sub(origin).saturating_sub(idle),
            idle,
            missed,
            paused,
            cursor,
            last_seen: self.hot.seen.load(Ordering::Relaxed) >> 1,
            epochs: ctl.epochs,
            stale: self.stale.load(Ordering::Relaxed),
            anchored: ctl.origin.is_some(),
        }
    }
}
