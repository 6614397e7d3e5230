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
    /// so never more than the window; before the first slot nothing is reported.
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
        let mut missed = Missed::new(metrics.recorder(), launch_zero.then_some(0));
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
                Step::Zero => { missed.rate_set(now, true); zero = true; }
                Step::Raise if paused => resume_zero = false,
                Step::Raise => { missed.rate_set(now, false); zero = false; }
                Step::Pause if !paused => {
                    missed.pause_began(now, Some(100.0));
                    (paused, resume_zero, zero) = (true, zero, false);
                }
                Step::Resume if paused => {
                    missed.pause_ended(now);
                    missed.rate_set(now, resume_zero);
                    (paused, zero) = (false, resume_zero);
                }
                Step::Begin if begun.is_none() && !paused && !zero => {
                    missed.schedule_began(now);
                    begun = Some(now);
                }
                Step::Report => {
                    missed.report(&pacer, true);
                    metrics.snapshot(now);
                    let want = if begun.is_some() { inside } else { 0 };
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
