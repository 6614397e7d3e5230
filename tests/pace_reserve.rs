//! Per-thread reservations (the pacer's fast path while a schedule is behind), on the
//! manual clock. A thread that finds several slots already due takes them in one step
//! and hands them out from thread-local storage; these tests pin what that may and
//! may not change. The expected numbers follow from the rules in `src/pace/reserve.rs`
//! and were worked out by hand.

use paceline::{ManualClock, RateLimiter, RateSpec};

const MS: u64 = 1_000_000;

fn limiter(spec: &str) -> (ManualClock, RateLimiter<ManualClock>) {
    let clock = ManualClock::new();
    let l = RateLimiter::with_clock(RateSpec::parse(spec).unwrap(), clock.clone());
    (clock, l)
}

/// (slot, start) of one acquire.
fn take(l: &RateLimiter<ManualClock>) -> (u64, u64) {
    let g = l.acquire();
    assert!(!g.is_stopped());
    assert_eq!(g.wait_nanos(), g.start_nanos() - g.scheduled_nanos());
    (g.scheduled_nanos(), g.start_nanos())
}

/// 1000/s, average mode, anchored at 0, then 100 ms behind: 51 acquires at one instant.
///
/// Acquire 1 anchors (slot 0). At 100 ms, acquire 2 (slot 1 ms) reads the clock 100 ms
/// after the thread's previous reading: one grant per 100 ms is far too slow to
/// reserve. Acquire 3 (slot 2 ms) reads the same instant: the pace says nothing, 98
/// later slots are due, so the next reservation is the limit, 32. Acquire 4 takes
/// tickets 3..=34 and acquire 36 the next 32 (35..=66). After 51 acquires, tickets
/// 51..=66 are reserved and not handed out.
fn behind() -> (ManualClock, RateLimiter<ManualClock>) {
    let (clock, l) = limiter("1000,0");
    assert_eq!(take(&l), (0, 0));
    clock.set(100 * MS);
    for k in 1..=50 {
        assert_eq!(take(&l), (k * MS, 100 * MS), "acquire {}", k + 1);
    }
    (clock, l)
}

#[test]
fn a_thread_behind_gets_consecutive_slots_and_exact_waits() {
    let (_clock, l) = behind();
    assert_eq!(l.stats().grants, 67, "51 handed out, 16 still reserved");
}

#[test]
fn a_batch_after_single_acquires_continues_in_order() {
    let (_clock, l) = behind();
    // the reservation's 16 tickets go back to the schedule first (nobody took a
    // ticket after them), so the batch takes the next slots
    let g = l.acquire_n(3);
    assert_eq!((g.scheduled_nanos(), g.start_nanos()), (51 * MS, 100 * MS));
    assert_eq!(l.stats().grants, 54);
    assert_eq!(take(&l), (54 * MS, 100 * MS));
}

#[test]
fn try_acquire_after_single_acquires_continues_in_order() {
    let (_clock, l) = behind();
    let g = l.try_acquire().unwrap();
    assert_eq!(g.scheduled_nanos(), 51 * MS);
    assert_eq!(l.stats().grants, 52);
}

#[test]
fn a_restart_voids_the_reservation() {
    let (clock, l) = behind();
    l.set_spec(RateSpec::parse("1000,0,restart").unwrap());
    // the new schedule starts now, not at the reserved 51 ms
    assert_eq!(take(&l), (100 * MS, 100 * MS));
    assert_eq!(take(&l), (101 * MS, 101 * MS));
    assert_eq!(clock.now_duration().as_nanos(), u128::from(101 * MS));
    assert_eq!(l.stats().grants, 2);
}

#[test]
fn a_pause_voids_the_reservation() {
    let (clock, l) = behind();
    l.set_spec(RateSpec::parse("0").unwrap());
    clock.set(150 * MS);
    l.set_spec(RateSpec::parse("1000,0").unwrap());
    // Average mode keeps its backlog across a pause, shifted by the pause: the cursor
    // was 67 ms (67 tickets taken, 16 of them reserved) and moves by 50 ms. The 16
    // reserved slots are void, not handed out at their pre-pause times: the backlog
    // after the pause is 33 ms where single acquires would have left 49 ms.
    assert_eq!(take(&l), (117 * MS, 150 * MS));
    assert_eq!(take(&l), (118 * MS, 150 * MS));
    assert_eq!(
        l.stats().grants,
        67 + 32,
        "a new reservation of 32 on the resumed schedule"
    );
}

#[test]
fn a_change_to_strict_voids_the_reservation() {
    let (_clock, l) = behind();
    l.set_spec(RateSpec::parse("1000,1").unwrap());
    // strict: the schedule resumes after the 67 tickets taken, and the late op
    // forfeits its lateness, so the one after it is a slice later
    assert_eq!(take(&l), (67 * MS, 100 * MS));
    assert_eq!(take(&l), (101 * MS, 101 * MS));
}

#[test]
fn a_rate_change_keeps_the_reserved_slots() {
    let (_clock, l) = behind();
    l.set_spec(RateSpec::parse("2000,0").unwrap());
    // tickets 51..=66 were granted in the old epoch (the change counted them): they
    // are handed out at their old slots; then the new slice, 0.5 ms, from 67 ms
    for k in 51..=66 {
        assert_eq!(take(&l), (k * MS, 100 * MS));
    }
    assert_eq!(take(&l), (67 * MS, 100 * MS));
    assert_eq!(take(&l), (67 * MS + MS / 2, 100 * MS));
}

#[test]
fn stop_ends_a_reservation() {
    let (_clock, l) = behind();
    l.stop();
    assert!(l.acquire().is_stopped());
}

#[test]
fn limiters_used_in_turn_by_one_thread_never_reserve() {
    let clock = ManualClock::new();
    let a = RateLimiter::with_clock(RateSpec::parse("1000,0").unwrap(), clock.clone());
    let b = RateLimiter::with_clock(RateSpec::parse("1000,0").unwrap(), clock.clone());
    a.acquire();
    b.acquire();
    clock.set(100 * MS);
    for k in 1..=40 {
        assert_eq!(take(&a), (k * MS, 100 * MS));
        assert_eq!(take(&b), (k * MS, 100 * MS));
    }
    assert_eq!((a.stats().grants, b.stats().grants), (41, 41));
}

#[test]
fn reported_starts_trail_the_clock_by_at_most_two_microseconds() {
    // 1e9/s, a caller at 10 ns per op: always behind, and hot
    let (clock, l) = limiter("1G,0");
    let mut last_start = 0;
    for _ in 0..20_000 {
        clock.advance_nanos(10);
        let now = clock.now_duration().as_nanos() as u64;
        let (slot, start) = take(&l);
        assert!(slot <= start && start <= now, "{slot} {start} {now}");
        assert!(
            now - start <= 2_000,
            "start {start} trails {now} by more than 2 us"
        );
        assert!(start >= last_start);
        last_start = start;
    }
    // reservations did engage: one clock-reading op per at most 32
    assert!(l.stats().grants < 20_000 + 32);
}

#[test]
fn a_thread_that_leaves_mid_reservation_leaves_its_slots_unused() {
    let (clock, l) = limiter("1000,0");
    take(&l);
    clock.set(100 * MS);
    std::thread::scope(|s| {
        s.spawn(|| {
            for k in 1..=5 {
                assert_eq!(take(&l), (k * MS, 100 * MS));
            }
        });
    });
    // the thread took tickets 3..=34 in its reservation (acquire 3 of its 5 was the
    // limit-sized one: its first reading was unpaced, its second at the same instant)
    // and handed out 3..=5; 6..=34 stay granted and unused
    assert_eq!(l.stats().grants, 35);
    assert_eq!(take(&l).0, 35 * MS);
}
