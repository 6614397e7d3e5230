//! [`Missed`]'s paused time against a model: any order of rate changes to and
//! from 0, pauses, resumes and reports, with or without the schedule's first slot.

use super::Missed;
use crate::clock::{Clock, ManualClock};
use crate::engine::source::Pacer;
use crate::metrics::Metrics;
use crate::nanos::Nanos;
use crate::pace::{RateLimiter, RateSpec};
use crate::sync::threads::Arc;
use proptest::prelude::*;

/// The engine's limiter (`missed::Limiter`), shared.
type Held = Option<Arc<super::Limiter>>;

/// A slot source whose missed count grows while paused, as the local pacer's
/// did before it counted its paused slots apart: the engine takes a pause's
/// slots out by its own estimate (`MissedSlots::counts_pauses`).
struct CountsPauses(Arc<RateLimiter<Arc<dyn Clock>>>);

impl crate::engine::seam::SlotSource for CountsPauses {
    fn now(&self) -> Nanos {
        self.0.now()
    }
    fn acquire_unless(&self, give_up: &dyn Fn() -> bool) -> crate::engine::seam::Slot {
        crate::engine::seam::SlotSource::acquire_unless(&*self.0, give_up)
    }
    fn set_spec(&self, spec: RateSpec, _marked: bool) {
        self.0.set_spec(spec);
    }
    fn spec(&self) -> RateSpec {
        self.0.spec()
    }
    fn stop(&self) {
        self.0.stop();
    }
    fn wake(&self) {}
    fn waiting(&self) -> crate::clock::Waiting {
        self.0.waiting()
    }
    fn missed_slots(&self) -> crate::engine::seam::MissedSlots {
        crate::engine::seam::MissedSlots {
            count: self.0.stats().missed_slots,
            counts_pauses: true,
        }
    }
}

/// The pacer a slot test runs on: the local one, which counts its paused
/// slots apart, or (`counts_pauses`) [`CountsPauses`]; with the limiter under
/// it when that is not the local pacer's own.
fn pacer_of(spec: RateSpec, clock: &ManualClock, counts_pauses: bool) -> (Pacer, Held) {
    let dyn_clock: Arc<dyn Clock> = Arc::new(clock.clone());
    let limiter = RateLimiter::with_clock(spec, dyn_clock);
    if counts_pauses {
        let limiter = Arc::new(limiter);
        let source = Arc::new(CountsPauses(limiter.clone()));
        (Pacer::Shared(source), Some(limiter))
    } else {
        (Pacer::Local(limiter), None)
    }
}

/// The limiter under `pacer` ([`pacer_of`]).
fn limiter_of<'a>(pacer: &'a Pacer, held: &'a Held) -> &'a RateLimiter<Arc<dyn Clock>> {
    match (pacer, held) {
        (Pacer::Local(l), _) => l,
        (_, Some(l)) => l,
        _ => unreachable!("a pacer_of pair"),
    }
}

#[derive(Clone, Copy, Debug)]
enum Step {
    Zero,
    Raise,
    Pause,
    Resume,
    /// The schedule's first slot (only where a slot can come: not paused, above 0).
    Begin,
    Report,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        Just(Step::Zero),
        Just(Step::Raise),
        Just(Step::Pause),
        Just(Step::Resume),
        Just(Step::Begin),
        Just(Step::Report),
    ]
}

proptest! {
    /// Session 13: paused time is the time paused or at rate 0 inside the window
    /// (from the first slot; from the launch when no slot came), each moment once,
    /// so never more than the window; before the first slot the set-up rows
    /// show it as it happens (session 14), and the totals drop it at the first
    /// slot, as the engine moves the window there.
    #[test]
    fn paused_time_is_the_time_paused_or_at_rate_0_inside_the_window(
        launch_zero in any::<bool>(),
        steps in proptest::collection::vec((0u64..5_000, step()), 0..40),
    ) {
        let clock = ManualClock::new();
        let dyn_clock: Arc<dyn Clock> = Arc::new(clock.clone());
        let spec = if launch_zero { RateSpec::paused() } else { RateSpec::new(100.0) };
        let pacer = Pacer::Local(RateLimiter::with_clock(spec, dyn_clock));
        let metrics = Metrics::new(0);
        let mut missed = Missed::new(
            metrics.recorder(),
            launch_zero.then_some(0),
            Some(if launch_zero { 0.0 } else { 100.0 }),
        );
        // The model: the state, the window's start, and the paused time in it
        // (or, before it, since the launch).
        let (mut zero, mut paused, mut resume_zero) = (launch_zero, false, false);
        let mut begun: Option<Nanos> = None;
        let (mut before, mut inside) = (0u64, 0u64);
        for (dt, s) in steps {
            if zero || paused {
                if begun.is_some() { inside += dt } else { before += dt }
            }
            clock.advance_nanos(dt);
            let now = clock.now();
            match s {
                Step::Zero if paused => resume_zero = true,
                Step::Zero => { missed.rate_set(now, Some(0.0)); zero = true; }
                Step::Raise if paused => resume_zero = false,
                Step::Raise => { missed.rate_set(now, Some(100.0)); zero = false; }
                Step::Pause if !paused => {
                    missed.pause_began(now, Some(100.0));
                    (paused, resume_zero, zero) = (true, zero, false);
                }
                Step::Resume if paused => {
                    missed.pause_ended(now);
                    missed.rate_set(now, Some(if resume_zero { 0.0 } else { 100.0 }));
                    (paused, zero) = (false, resume_zero);
                }
                Step::Begin if begun.is_none() && !paused && !zero => {
                    metrics.schedule_started(now);
                    missed.schedule_began(now);
                    begun = Some(now);
                }
                Step::Report => {
                    missed.report(&pacer, true);
                    metrics.snapshot(now);
                    let want = if begun.is_some() { inside } else { before };
                    prop_assert_eq!(metrics.totals().paused_nanos(), want);
                }
                _ => {}
            }
        }
        missed.freeze(&pacer, true);
        let end = clock.now();
        let _ = metrics.snapshot(end);
        let window = end - begun.unwrap_or(0);
        let want = if begun.is_some() { inside } else { before };
        let t = metrics.totals();
        prop_assert_eq!(t.paused_nanos(), want);
        prop_assert!(t.paused_nanos() <= window);
    }
}

/// Regression (session 14, item 2): a pause before the pacer's first acquire
/// hid later missed slots. The local pacer, not yet anchored, counts nothing
/// while paused before its first slot, but the pause's slots were still taken
/// out of every later count: 1 s paused at 100/s hid the first 100 slots the
/// run really missed (49 read 0). Only the part of a pause after the first slot
/// comes out of the pacer's count.
#[test]
fn a_pause_before_the_first_slot_hides_no_missed_slot() {
    for counts_pauses in [false, true] {
        a_pause_before_the_first_slot_hides_no_missed_slot_on(counts_pauses);
    }
}

fn a_pause_before_the_first_slot_hides_no_missed_slot_on(counts_pauses: bool) {
    use crate::pace::Verb;
    let clock = ManualClock::new();
    let spec = RateSpec::new(100.0).strictness(1.0);
    let (pacer, held) = pacer_of(spec, &clock, counts_pauses);
    let limiter = limiter_of(&pacer, &held);
    let metrics = Metrics::new(0);
    let mut missed = Missed::new(metrics.recorder(), None, Some(100.0));
    // Set-up, then a pause of 1 s (the engine's pause: rate 0, then the spec back).
    clock.advance_nanos(100_000_000);
    missed.pause_began(clock.now(), Some(100.0));
    limiter.set_spec(
        spec.with_rate(0.0)
            .unwrap_or(RateSpec::paused())
            .verb(Verb::Start),
    );
    clock.advance_nanos(1_000_000_000);
    missed.report(&pacer, true);
    missed.pause_ended(clock.now());
    limiter.set_spec(spec.verb(Verb::Configure));
    clock.advance_nanos(100_000_000);
    let first = limiter.acquire();
    missed.schedule_began(first.scheduled_nanos());
    // Half a second late: strict forfeits 49 slots.
    clock.advance_nanos(500_000_000);
    limiter.acquire();
    assert_eq!(limiter.stats().missed_slots, 49.0);
    missed.report(&pacer, true);
    let s = metrics.snapshot(clock.now());
    assert_eq!(s.missed(), 49);
    // A pause after the first slot is still paused time, not missed slots.
    missed.pause_began(clock.now(), Some(100.0));
    limiter.set_spec(
        spec.with_rate(0.0)
            .unwrap_or(RateSpec::paused())
            .verb(Verb::Start),
    );
    clock.advance_nanos(2_000_000_000);
    missed.pause_ended(clock.now());
    limiter.set_spec(spec.verb(Verb::Configure));
    limiter.acquire();
    missed.freeze(&pacer, true);
    let s = metrics.snapshot(clock.now());
    assert_eq!((s.missed(), s.paused_nanos()), (0, 2_000_000_000));
    assert_eq!(metrics.totals().missed(), 49);
}

/// Regression (session 14, item 1): an activity launched at rate 0 and never
/// raised read paused 0 in every interval row, and the whole paused time landed
/// in the last row, at the stop. Each row holds the time it was at rate 0, and
/// the rows sum to the totals.
#[test]
fn each_row_of_a_rate_0_launch_never_raised_holds_its_own_paused_time() {
    let clock = ManualClock::new();
    let dyn_clock: Arc<dyn Clock> = Arc::new(clock.clone());
    let pacer = Pacer::Local(RateLimiter::with_clock(RateSpec::paused(), dyn_clock));
    let metrics = Metrics::new(0);
    let mut missed = Missed::new(metrics.recorder(), Some(0), Some(0.0));
    let mut rows = Vec::new();
    for dt in [1_000_000_000, 1_000_000_000] {
        clock.advance_nanos(dt);
        missed.report(&pacer, true);
        rows.push(metrics.snapshot(clock.now()).paused_nanos());
    }
    clock.advance_nanos(500_000_000);
    missed.freeze(&pacer, true);
    rows.push(metrics.snapshot(clock.now()).paused_nanos());
    assert_eq!(rows, [1_000_000_000, 1_000_000_000, 500_000_000]);
    let t = metrics.totals();
    assert_eq!(
        (t.paused_nanos(), t.setup_nanos(), t.elapsed_nanos()),
        (2_500_000_000, 0, 2_500_000_000)
    );
}

/// Session 14, item 1: a rate-0 launch raised later. Its set-up rows (before
/// the first slot) show the time they were at rate 0, as it happens; once the
/// schedule begins, that time is set-up, and the totals' paused time is the
/// window's: the sum of the rows from the first slot on.
#[test]
fn set_up_rows_show_their_paused_time_and_the_totals_the_window_only() {
    let clock = ManualClock::new();
    let dyn_clock: Arc<dyn Clock> = Arc::new(clock.clone());
    let pacer = Pacer::Local(RateLimiter::with_clock(RateSpec::paused(), dyn_clock));
    let metrics = Metrics::new(0);
    let mut missed = Missed::new(metrics.recorder(), Some(0), Some(0.0));
    clock.advance_nanos(1_000_000_000);
    missed.report(&pacer, true);
    let setup_row = metrics.snapshot(clock.now());
    // Raised at 1.5 s, its first slot at once; paused at 2 s.
    clock.advance_nanos(500_000_000);
    missed.rate_set(clock.now(), Some(100.0));
    metrics.schedule_started(clock.now());
    missed.schedule_began(clock.now());
    clock.advance_nanos(500_000_000);
    missed.pause_began(clock.now(), Some(100.0));
    clock.advance_nanos(250_000_000);
    missed.report(&pacer, true);
    let row = metrics.snapshot(clock.now());
    clock.advance_nanos(750_000_000);
    missed.freeze(&pacer, true);
    let last = metrics.snapshot(clock.now());
    assert_eq!(
        (
            setup_row.paused_nanos(),
            (row.start(), row.paused_nanos()),
            last.paused_nanos()
        ),
        (1_000_000_000, (1_500_000_000, 250_000_000), 750_000_000)
    );
    let t = metrics.totals();
    assert_eq!(
        (t.paused_nanos(), t.setup_nanos(), t.elapsed_nanos()),
        (1_000_000_000, 1_500_000_000, 1_500_000_000)
    );
}

/// Regression (session 14, item 5): a rate set to 0 (not a control pause)
/// after the schedule began, then raised, invented missed slots. The local
/// pacer counts the stretch at rate 0 as forfeited schedule time at the rate
/// before it, as it does a pause's, but only a pause's slots were taken out:
/// 1 s at rate 0 from 100/s read 100 missed slots. A stretch at rate 0 is
/// paused time, and its slots come out as a pause's do; a pause that began at
/// rate 0 is counted at the last rate above 0, as the pacer counts it.
#[test]
fn a_stretch_at_rate_0_invents_no_missed_slot() {
    for counts_pauses in [false, true] {
        a_stretch_at_rate_0_invents_no_missed_slot_on(counts_pauses);
    }
}

fn a_stretch_at_rate_0_invents_no_missed_slot_on(counts_pauses: bool) {
    use crate::pace::Verb;
    let clock = ManualClock::new();
    let spec = RateSpec::new(100.0).strictness(1.0);
    let (pacer, held) = pacer_of(spec, &clock, counts_pauses);
    let limiter = limiter_of(&pacer, &held);
    let metrics = Metrics::new(0);
    let mut missed = Missed::new(metrics.recorder(), None, Some(100.0));
    let first = limiter.acquire();
    missed.schedule_began(first.scheduled_nanos());
    let set = |missed: &mut Missed, rate: f64| {
        limiter.set_spec(spec.with_rate(rate).unwrap_or(spec).verb(Verb::Start));
        missed.rate_set(clock.now(), Some(rate));
    };
    // 1 s at rate 0, then raised (to another rate: the pacer still counts the
    // stretch at 100/s).
    clock.advance_nanos(5_000_000);
    set(&mut missed, 0.0);
    clock.advance_nanos(1_000_000_000);
    missed.report(&pacer, true);
    set(&mut missed, 200.0);
    limiter.acquire();
    missed.report(&pacer, true);
    let s = metrics.snapshot(clock.now());
    assert_eq!((s.missed(), s.paused_nanos()), (0, 1_000_000_000));
    // At rate 0 again, then a control pause over it, resumed at 200/s: the
    // pacer counts it all at 200/s, the last rate above 0.
    set(&mut missed, 0.0);
    clock.advance_nanos(500_000_000);
    missed.pause_began(clock.now(), Some(0.0));
    limiter.set_spec(spec.with_rate(0.0).unwrap_or(spec).verb(Verb::Start));
    clock.advance_nanos(500_000_000);
    missed.pause_ended(clock.now());
    missed.rate_set(clock.now(), Some(200.0));
    limiter.set_spec(spec.with_rate(200.0).unwrap_or(spec).verb(Verb::Configure));
    limiter.acquire();
    // A real miss after it still counts: 100 ms late at 200/s.
    clock.advance_nanos(100_000_000);
    limiter.acquire();
    missed.freeze(&pacer, true);
    let s = metrics.snapshot(clock.now());
    assert_eq!((s.missed(), s.paused_nanos()), (19, 1_000_000_000));
}

/// Regression (session 14, item 5): in thread scope each thread's schedule
/// forfeits a pause's slots, and the engine took out one schedule's: a 1 s
/// pause at 100/s on two threads read 100 missed slots. The pacer says which of
/// its missed slots were paused ones (`LimiterStats::paused_slots`), and the
/// engine reports the rest.
#[test]
fn a_pause_in_thread_scope_invents_no_missed_slot() {
    use crate::pace::{Scope, Verb};
    let clock = ManualClock::new();
    let dyn_clock: Arc<dyn Clock> = Arc::new(clock.clone());
    let spec = RateSpec::new(100.0).strictness(1.0).scope(Scope::Thread);
    let pacer = Arc::new(Pacer::Local(RateLimiter::with_clock(spec, dyn_clock)));
    let Pacer::Local(limiter) = &*pacer else {
        unreachable!()
    };
    let metrics = Metrics::new(0);
    let mut missed = Missed::new(metrics.recorder(), None, Some(100.0));
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let (ready_tx, ready) = std::sync::mpsc::channel::<()>();
    let other = {
        let pacer = pacer.clone();
        std::thread::spawn(move || {
            if let Pacer::Local(l) = &*pacer {
                l.acquire();
                ready_tx.send(()).ok();
                rx.recv().ok();
                l.acquire();
            }
        })
    };
    ready.recv().ok();
    let first = limiter.acquire();
    missed.schedule_began(first.scheduled_nanos());
    missed.pause_began(clock.now(), Some(100.0));
    limiter.set_spec(spec.with_rate(0.0).unwrap_or(spec).verb(Verb::Start));
    clock.advance_nanos(1_000_000_000);
    missed.pause_ended(clock.now());
    limiter.set_spec(spec.verb(Verb::Configure));
    tx.send(()).ok();
    other.join().ok();
    limiter.acquire();
    missed.freeze(&pacer, true);
    let s = metrics.snapshot(clock.now());
    assert_eq!((s.missed(), s.paused_nanos()), (0, 1_000_000_000));
}
