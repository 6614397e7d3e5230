use crate::{ManualClock, RateLimiter, RateSpec, Waiting};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Parking on the real clock (adaptive waiting, slots 5 us apart, 4 threads): every
/// slot is granted exactly once, in order, and stop reaches parked callers at once.
#[test]
fn parked_callers_take_every_slot_once_and_wake_on_stop() {
    let l = Arc::new(
        RateLimiter::builder(RateSpec::new(200_000.0))
            .waiting(
                Waiting::builder()
                    .release_window(std::time::Duration::from_micros(50))
                    .timer_slack(std::time::Duration::from_nanos(1))
                    .park_when_ahead(true)
                    .build(),
            )
            .build(),
    );
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let l = Arc::clone(&l);
            std::thread::spawn(move || {
                let mut slots = Vec::new();
                loop {
                    let g = l.acquire();
                    if g.is_stopped() {
                        return slots;
                    }
                    assert!(g.start_nanos() + 50_000 >= g.scheduled_nanos());
                    slots.push(g.scheduled_nanos());
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(50));
    let stopping = Instant::now();
    l.stop();
    let mut slots: Vec<u64> = handles
        .into_iter()
        .flat_map(|h| h.join().expect("worker"))
        .collect();
    assert!(
        stopping.elapsed() < Duration::from_millis(100),
        "stop took {:?}",
        stopping.elapsed()
    );
    let n = slots.len();
    slots.sort_unstable();
    slots.dedup();
    assert_eq!(slots.len(), n, "a slot was granted twice");
    // a caller still sleeping on its slot when stopped gives it up (it returns
    // stopped), with the rest of its reservation: at most the slots half a
    // release window holds (1 + 25 us / 5 us, undercounted to 5) per thread are
    // taken and not used
    let tickets = l.stats().grants as usize;
    assert!(
        (n..=n + 4 * 5).contains(&tickets),
        "{n} used, {tickets} taken"
    );
    // slots 5 us apart from the anchor, all within the tickets taken
    assert!(slots.iter().all(|s| (s - slots[0]) % 5_000 == 0));
    assert!(((slots[n - 1] - slots[0]) / 5_000) < tickets as u64);
    assert!(n > 1_000, "only {n} ops in 50 ms at 200K/s");
}

/// Regression (found by `tests/pace_props.rs`): a `try_acquire` in a forfeiting mode
/// late by more than the idle field holds (134 ms of forfeit) rolled the epoch over
/// and retried forever, because a rollover frees the field but the forfeit still did
/// not fit.
#[test]
fn try_acquire_late_past_the_idle_field_forfeits_instead_of_spinning() {
    // strict: 1.1875 s late at 1/s forfeits all of it
    let clock = ManualClock::new();
    let l = RateLimiter::with_clock(RateSpec::new(1.0).strictness(1.0), clock.clone());
    l.acquire();
    clock.advance_nanos(2_187_500_000);
    let g = l.try_acquire().expect("due");
    assert_eq!(
        (g.scheduled_nanos(), g.wait_nanos()),
        (1_000_000_000, 1_187_500_000)
    );
    assert_eq!(l.stats().idle_nanos, 1_187_500_000);
    assert_eq!(l.acquire().scheduled_nanos(), 3_187_500_000);
    // compensating (s = 0.125): 1.125 s late forfeits 140.625 ms
    let clock = ManualClock::new();
    let l = RateLimiter::with_clock(RateSpec::new(1.0).strictness(0.125), clock.clone());
    l.acquire();
    clock.advance_nanos(2_125_000_000);
    let g = l.try_acquire().expect("due");
    assert_eq!(g.wait_nanos(), 1_125_000_000);
    assert_eq!(l.stats().idle_nanos, 140_625_000);
    assert_eq!(
        l.try_acquire(),
        Err(crate::Refused::NotUntil(2_140_625_000)),
        "the next slot moved by the forfeit"
    );
}
