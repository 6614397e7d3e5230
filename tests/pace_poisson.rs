//! Poisson arrivals (issue 22): slots at exponentially distributed gaps whose mean is
//! 1e9 / rate ns, the same for the same seed, with every other clause of the pacing
//! contract applying to the random slots as to uniform ones.
//!
//! Each behaviour test compares against the schedule's own raw slots (a limiter with
//! the same seed whose caller is never late), so the rules are checked exactly:
//! strict forfeits move later slots by the lateness, burst allowance maps them by
//! 1 / s, a pause moves them by its length, a rate change rescales the gaps to come.

use paceline::{Arrivals, Clock, ManualClock, RateLimiter, RateSpec, Verb};
use proptest::prelude::*;

const MS: u64 = 1_000_000;

fn poisson(spec: RateSpec, seed: u64) -> (ManualClock, RateLimiter<ManualClock>) {
    let clock = ManualClock::new();
    let l = RateLimiter::builder(spec)
        .arrivals(Arrivals::Poisson { seed })
        .build_with_clock(clock.clone());
    (clock, l)
}

/// The first `n` slots of the stream: a caller that is never late.
fn raw_slots(rate: f64, seed: u64, n: usize) -> Vec<u64> {
    let (_, l) = poisson(RateSpec::new(rate).strictness(0.0), seed);
    (0..n).map(|_| l.acquire().scheduled_nanos()).collect()
}

/// A fixed seed's slots, pinned: the same numbers on every run (and every thread
/// count: the stream is a function of the seed and the ticket).
#[test]
fn a_fixed_seed_pins_its_slots_and_waits_exactly() {
    let (clock, l) = poisson(RateSpec::new(1000.0), 42);
    let mut slots = Vec::new();
    for _ in 0..8 {
        let g = l.acquire();
        assert_eq!(g.start_nanos(), g.scheduled_nanos(), "on time: {g:?}");
        assert_eq!(g.wait_nanos(), 0);
        slots.push(g.scheduled_nanos());
    }
    assert_eq!(slots, PINNED_SEED_42, "{slots:?}");
    assert_eq!(clock.now(), *PINNED_SEED_42.last().unwrap());
    assert_eq!(raw_slots(1000.0, 42, 8), PINNED_SEED_42);
    assert_ne!(raw_slots(1000.0, 43, 8), PINNED_SEED_42);
}

/// Seed 42 at 1000/s (mean gap 1 ms). Regenerated for the stratified draws
/// (audit of issue 22, M5); the independent draws gave 0, 298_992, 2_132_134, ...
const PINNED_SEED_42: [u64; 8] = [
    0, 1_977_466, 3_339_983, 4_918_277, 5_744_188, 8_597_478, 8_778_002, 11_007_010,
];

/// The slots are the same whichever thread computes them: four threads taking
/// tickets in turn from one limiter (each summing from its own memo) get exactly
/// the slots one thread alone gets, for the stratified draws as for any.
#[test]
fn four_threads_taking_tickets_get_the_one_thread_slots() {
    let raw = raw_slots(1000.0, 42, 10_001);
    let (clock, l) = poisson(RateSpec::new(1000.0).strictness(0.0), 42);
    assert_eq!(l.acquire().scheduled_nanos(), 0);
    // Every later slot is due at once: no thread sleeps, each takes its own.
    clock.set(raw[10_000] + 1);
    let l = std::sync::Arc::new(l);
    let mut slots: Vec<u64> = (0..4)
        .map(|_| {
            let l = l.clone();
            std::thread::spawn(move || {
                (0..2500)
                    .map(|_| l.acquire().scheduled_nanos())
                    .collect::<Vec<_>>()
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    slots.sort_unstable();
    assert_eq!(slots, raw[1..]);
}

/// Each op's wait is measured from its own random slot: after a stall in average
/// mode, the due ops start at once, each with `now - its slot`.
#[test]
fn after_a_stall_each_wait_is_from_its_own_random_slot() {
    let raw = raw_slots(1000.0, 7, 40);
    let (clock, l) = poisson(RateSpec::new(1000.0).strictness(0.0), 7);
    assert_eq!(l.acquire().scheduled_nanos(), 0);
    let stall = raw[20] + 1;
    clock.set(stall);
    for (k, &slot) in raw.iter().enumerate().take(21).skip(1) {
        let g = l.acquire();
        assert_eq!(g.scheduled_nanos(), slot, "ticket {k}");
        assert_eq!(g.start_nanos(), stall);
        assert_eq!(g.wait_nanos(), stall - slot, "ticket {k}");
    }
    let g = l.acquire();
    assert_eq!((g.scheduled_nanos(), g.wait_nanos()), (raw[21], 0));
}

/// The mean rate over 100K ops is within 0.5 % of the rate (across Poisson epoch
/// rollovers, every 65,536 tickets), through the limiter. Seeds 8 and 39 missed it
/// with independent draws (+0.54 %, +0.71 %; audit of issue 22, M5); the sweep of
/// 100 seeds over the draws themselves is
/// `issue22_m5_the_mean_of_100k_gaps_is_within_half_a_percent_for_every_seed`.
#[test]
fn the_mean_rate_over_100k_ops_is_within_half_a_percent() {
    for seed in [1, 2, 3, 8, 39] {
        let raw = raw_slots(10_000.0, seed, 100_001);
        let mean_gap = *raw.last().unwrap() as f64 / 100_000.0;
        let rate = 1e9 / mean_gap;
        assert!(
            (rate / 10_000.0 - 1.0).abs() < 0.002,
            "seed {seed}: {rate:.1}/s"
        );
        // The slots are the draws' prefix sums, to the nanosecond per slot.
        let span = Arrivals::Poisson { seed }.span(100_000) * 1e5;
        assert!(
            (span - *raw.last().unwrap() as f64).abs() < 100_001.0,
            "seed {seed}"
        );
    }
}

/// Goodness of fit: the gaps of 100K slots against the exponential with mean 1e9 /
/// rate (Kolmogorov-Smirnov, critical value 1.63 / sqrt(n) at the 1 % level), and no
/// correlation between neighbouring gaps.
#[test]
fn the_gaps_are_exponential_and_uncorrelated() {
    let rate = 10_000.0;
    let mean = 1e9 / rate;
    let raw = raw_slots(rate, 2026, 100_001);
    let mut gaps: Vec<f64> = raw.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
    let n = gaps.len() as f64;
    let lag1 = {
        let m = gaps.iter().sum::<f64>() / n;
        let var = gaps.iter().map(|g| (g - m).powi(2)).sum::<f64>();
        gaps.windows(2)
            .map(|w| (w[0] - m) * (w[1] - m))
            .sum::<f64>()
            / var
    };
    assert!(lag1.abs() < 0.015, "lag-1 correlation {lag1}");
    gaps.sort_by(f64::total_cmp);
    let d = gaps
        .iter()
        .enumerate()
        .map(|(i, &g)| {
            // whole-ns gaps: compare at the middle of the nanosecond
            let cdf = 1.0 - (-(g + 0.5) / mean).exp();
            (cdf - i as f64 / n)
                .abs()
                .max(((i + 1) as f64 / n - cdf).abs())
        })
        .fold(0.0, f64::max);
    assert!(d < 1.63 / n.sqrt(), "KS D = {d}");
}

/// Strict (s = 1): a late op keeps its random slot and forfeits its lateness; the
/// next slot is its start plus the next random gap.
#[test]
fn strict_on_random_slots_moves_the_rest_by_the_lateness() {
    let raw = raw_slots(1000.0, 5, 12);
    let (clock, l) = poisson(RateSpec::new(1000.0).strictness(1.0), 5);
    for &slot in &raw[..3] {
        assert_eq!(l.acquire().scheduled_nanos(), slot);
    }
    let late = raw[3] + 10 * MS;
    clock.set(late);
    let g = l.acquire();
    assert_eq!((g.scheduled_nanos(), g.wait_nanos()), (raw[3], 10 * MS));
    for (k, &slot) in raw.iter().enumerate().skip(4) {
        let g = l.acquire();
        assert_eq!(g.scheduled_nanos(), slot + 10 * MS, "ticket {k}");
        assert_eq!(g.wait_nanos(), 0);
    }
    let st = l.stats();
    assert_eq!(st.idle_nanos, 10 * MS, "{st:?}");
    assert!((st.missed_slots - 10.0).abs() < 1e-9, "{st:?}");
}

/// Burst allowance (s = 2): after a stall the backlog of random slots starts no
/// faster than twice the rate: each late op starts half its random gap after the
/// one before (to the nanosecond the 1 / s mapping rounds to), once the first
/// millisecond of backlog (`BURST_SLACK`: the first late op restarts the
/// allowance 1 ms before itself) has started at once.
#[test]
fn burst_on_random_slots_catches_up_at_s_times_the_gaps() {
    let raw = raw_slots(1000.0, 11, 60);
    let (clock, l) = poisson(RateSpec::new(1000.0).strictness(2.0), 11);
    assert_eq!(l.acquire().scheduled_nanos(), 0);
    let stall = raw[10];
    clock.set(stall);
    let mut prev = l.acquire();
    assert_eq!(
        (prev.scheduled_nanos(), prev.start_nanos()),
        (raw[1], stall)
    );
    let mut caught_up = false;
    for (k, &slot) in raw.iter().enumerate().skip(2) {
        let g = l.acquire();
        assert_eq!(g.scheduled_nanos(), slot, "ticket {k}");
        // The allowance's line: 1 ms before the stall at raw[1], then half the
        // random gaps.
        let line = (stall - MS) + (slot - raw[1]) / 2;
        let want = line.max(slot).max(prev.start_nanos());
        assert!(
            g.start_nanos().abs_diff(want) <= 1,
            "ticket {k}: started {} (slot {slot}, line {line})",
            g.start_nanos()
        );
        if g.start_nanos() == slot {
            caught_up = true;
            break;
        }
        prev = g;
    }
    assert!(caught_up, "the backlog never caught up");
}

/// A pause forfeits its length: the random slots after it are the raw ones moved by
/// the pause, and its missed slots are its length in mean gaps.
#[test]
fn a_pause_moves_the_random_slots_by_its_length() {
    let raw = raw_slots(1000.0, 3, 20);
    let (clock, l) = poisson(RateSpec::new(1000.0).strictness(0.0), 3);
    for &slot in &raw[..5] {
        assert_eq!(l.acquire().scheduled_nanos(), slot);
    }
    let at = clock.now();
    l.set_spec(l.spec().with_rate(0.0).unwrap());
    clock.set(at + 250 * MS);
    l.set_spec(l.spec().with_rate(1000.0).unwrap());
    for (k, &slot) in raw.iter().enumerate().skip(5) {
        assert_eq!(l.acquire().scheduled_nanos(), slot + 250 * MS, "ticket {k}");
    }
    assert!((l.stats().missed_slots - 250.0).abs() < 1e-9);
}

/// A live rate change keeps the schedule's state and its draws: the gaps after it
/// are the same draws at the new mean (to a nanosecond of rounding each).
#[test]
fn a_rate_change_rescales_the_gaps_to_come_without_redrawing_them() {
    let raw = raw_slots(1000.0, 9, 30);
    let (_, l) = poisson(RateSpec::new(1000.0), 9);
    let mut slots: Vec<u64> = (0..10).map(|_| l.acquire().scheduled_nanos()).collect();
    assert_eq!(slots, raw[..10]);
    l.set_spec(RateSpec::new(4000.0).verb(Verb::Configure));
    slots.extend((10..30).map(|_| l.acquire().scheduled_nanos()));
    // The cursor (raw[10]) was more than one new mean gap ahead of now (raw[9]):
    // the raise cut it (audit p16 H1, docs/pacing.md), and ticket 10 comes one new
    // mean gap (250 us) after ticket 9.
    assert!(raw[10] > raw[9] + 250_000);
    assert_eq!(slots[10], raw[9] + 250_000);
    for k in 11..30 {
        let got = slots[k] - slots[k - 1];
        let want = (raw[k] - raw[k - 1]) / 4;
        assert!(
            got.abs_diff(want) <= 1,
            "ticket {k}: gap {got}, want {want}"
        );
    }
}

/// The async acquire takes the same random slots.
#[test]
fn the_async_acquire_takes_the_same_random_slots() {
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};
    let raw = raw_slots(500.0, 13, 10);
    let (clock, l) = poisson(RateSpec::new(500.0), 13);
    let mut cx = Context::from_waker(Waker::noop());
    for &slot in &raw {
        let mut f = pin!(l.acquire_async());
        let mut polls = 0;
        let g = loop {
            match f.as_mut().poll(&mut cx) {
                Poll::Ready(g) => break g,
                Poll::Pending => clock.set(slot),
            }
            polls += 1;
            assert!(polls < 3, "not granted at its slot {slot}");
        };
        assert_eq!((g.scheduled_nanos(), g.start_nanos()), (slot, slot));
    }
}

#[derive(Debug, Clone)]
enum Step {
    Acquire,
    Stall(u64),
    Rate(f64),
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(
        prop_oneof![
            6 => Just(Step::Acquire),
            2 => (1u64..20 * MS).prop_map(Step::Stall),
            1 => prop_oneof![Just(100.0), Just(1000.0), Just(1e5)].prop_map(Step::Rate),
        ],
        1..150,
    )
}

proptest! {
    /// Whatever the stalls and rate changes, in every mode: slots never go back,
    /// no op starts before its slot or its call, its wait is `start - slot`, and
    /// the counts add up (every acquire one grant; schedule time is granted or idle).
    #[test]
    fn random_slots_keep_the_invariants(
        seed in any::<u64>(),
        s in prop_oneof![Just(0.0), Just(0.25), Just(1.0), Just(1.1), Just(2.0)],
        steps in steps(),
    ) {
        let (clock, l) = poisson(RateSpec::new(1000.0).strictness(s), seed);
        let (mut last_slot, mut grants) = (0u64, 0u64);
        for step in steps {
            match step {
                Step::Acquire => {
                    let called = clock.now();
                    let g = l.acquire();
                    prop_assert!(g.scheduled_nanos() >= last_slot, "{g:?} after {last_slot}");
                    prop_assert!(g.start_nanos() >= g.scheduled_nanos().min(called).max(called));
                    prop_assert!(g.start_nanos() >= g.scheduled_nanos());
                    prop_assert_eq!(g.wait_nanos(), g.start_nanos() - g.scheduled_nanos());
                    last_slot = g.scheduled_nanos();
                    grants += 1;
                }
                Step::Stall(d) => clock.advance_nanos(d),
                Step::Rate(r) => l.set_spec(l.spec().with_rate(r).unwrap()),
            }
        }
        let st = l.stats();
        prop_assert_eq!(st.grants, grants);
        prop_assert!(st.missed_slots >= 0.0);
    }
}

/// Regression (issue 22's pgbench bench: paced at 25 % of the closed-loop rate,
/// waits grew to 233 ms): under the default burst allowance (s = 1.1) a caller
/// that needs 100 us per op, and wakes 60 us late from each wait, takes random
/// slots at 5000/s (half its capacity). Each time a short random gap made it late
/// to its place on the allowance's line, the allowance re-anchored at its start,
/// and the time came back only at (s - 1) x the gaps after: the lag grew without
/// bound (to 660 ms in 10 s). A caller late by less than `BURST_SLACK` keeps its
/// place, and at half load the waits stay those of a queue, as pgbench `-R`'s.
#[test]
fn burst_allowance_on_random_slots_keeps_up_with_a_caller_at_half_its_capacity() {
    let (clock, l) = poisson(RateSpec::new(5000.0), 9);
    let (busy, overshoot) = (100_000, 60_000);
    let n = 50_000;
    let mut waits = Vec::with_capacity(n);
    for _ in 0..n {
        let called = clock.now();
        let g = l.acquire();
        waits.push(g.wait_nanos());
        if g.start_nanos() > called {
            clock.advance_nanos(overshoot);
        }
        clock.advance_nanos(busy);
    }
    let tail = &waits[n - 10_000..];
    let mean = tail.iter().sum::<u64>() / tail.len() as u64;
    let max = *tail.iter().max().unwrap();
    assert!(
        mean < MS / 2,
        "mean wait {mean} ns over the last 10K ops (max {max})"
    );
    assert!(max < 5 * MS, "max wait {max} ns over the last 10K ops");
}
