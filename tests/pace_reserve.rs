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

/// Two limiters with `spec` on one manual clock, each granted its first slot at 0,
/// then the clock set to `at`.
fn pair(spec: &str, at: u64) -> (RateLimiter<ManualClock>, RateLimiter<ManualClock>) {
    let (clock, a) = limiter(spec);
    let b = RateLimiter::with_clock(RateSpec::parse(spec).unwrap(), clock.clone());
    a.acquire();
    b.acquire();
    clock.set(at);
    (a, b)
}

/// (slot, start) of one acquire.
fn take(l: &RateLimiter<ManualClock>) -> (u64, u64) {
    let g = l.acquire();
    assert!(!g.is_stopped());
    assert_eq!(
        g.wait_nanos(),
        g.start_nanos().saturating_sub(g.scheduled_nanos())
    );
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
    let (_clock, l) = behind();
    l.set_spec(RateSpec::parse("1000,0,restart").unwrap());
    // the new schedule starts now, not at the reserved 51 ms
    assert_eq!(take(&l), (100 * MS, 100 * MS));
    assert_eq!(take(&l), (101 * MS, 101 * MS));
    assert_eq!(l.now(), 101 * MS);
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
    let (a, b) = pair("1000,0", 100 * MS);
    for k in 1..=40 {
        assert_eq!(take(&a), (k * MS, 100 * MS));
        assert_eq!(take(&b), (k * MS, 100 * MS));
    }
    assert_eq!((a.stats().grants, b.stats().grants), (41, 41));
}

/// Regression (issue 12, bug 2): reserved grants reported the reservation's reading
/// as their start, up to 2 us behind the clock. Every start is now the op's own.
#[test]
fn reserved_starts_are_the_clock_when_handed_out() {
    // 1e9/s, a caller at 10 ns per op: always behind, and hot
    let (clock, l) = limiter("1G,0");
    for _ in 0..20_000 {
        clock.advance_nanos(10);
        let now = l.now();
        let (slot, start) = take(&l);
        assert!(slot <= start, "{slot} {start}");
        assert_eq!(start, now);
    }
    // reservations did engage: one clock-reading op per at most 32
    assert!(l.stats().grants < 20_000 + 32);
}

/// Regression (session 11, the two `burst_starts_are_slice_over_s_apart` seeds): a
/// reservation taken behind the schedule and handed out after a stall did not restart
/// the burst allowance. The hand-outs read no clock; the next grant that did restarted
/// the allowance from itself, so the slack's burst came on top of the reserved slots.
///
/// 100K/s (slice 10 us), s = 2 (spacing 5 us), 100 ms behind. Acquire 2 reads the
/// clock and restarts the allowance at 99 ms (the 1 ms slack); acquire 3 reads the
/// same instant, so acquire 4 reserves the limit, 32 tickets (3..=34), all due. One
/// is handed out, then the thread stalls 5 ms and hands out the other 30 at 105 ms.
/// Had each read the clock, the first of them would have restarted the allowance at
/// 104 ms, and the ones after it start 5 us apart once the slack is spent: at 105 ms
/// at most 1 ms / 5 us + 1 = 201 slots start, 30 of them reserved. Before the fix
/// the next reading restarted from ticket 35, and 231 started at 105 ms.
#[test]
fn reserved_slots_handed_out_after_a_stall_spend_the_burst_allowance() {
    let (clock, l) = limiter("100000,2");
    assert_eq!(take(&l), (0, 0));
    clock.set(100 * MS);
    for k in 1..=4 {
        assert_eq!(take(&l), (k * 10_000, 100 * MS), "acquire {}", k + 1);
    }
    clock.set(105 * MS);
    let mut at_once = Vec::new();
    loop {
        let (slot, start) = take(&l);
        if start != 105 * MS {
            break;
        }
        at_once.push(slot);
    }
    // tickets 5..: consecutive slots, 30 of them the reserved ones
    assert_eq!(
        at_once[..31],
        (5..=35).map(|k| k * 10_000).collect::<Vec<_>>()[..]
    );
    let (first, last) = (at_once[0], *at_once.last().unwrap());
    assert!(
        at_once.len() <= 201,
        "{} slots started at 105 ms: the allowance lets 201 out",
        at_once.len()
    );
    // the burst-allowance bound between the first and last of them: (slots / s) less
    // the slack, with a nanosecond of rounding
    assert!((last - first) / 2 <= MS + 1, "{first} .. {last}");
    assert!(
        at_once.len() >= 200,
        "the slack is not lost: {}",
        at_once.len()
    );
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

/// 100K/s (slice 10 us) on the manual clock with the default release window (50 us),
/// and a caller whose ops take no time.
fn ahead(fast_path_limit: u64) -> (ManualClock, RateLimiter<ManualClock>) {
    let clock = ManualClock::new();
    let l = RateLimiter::builder(RateSpec::parse("100K,0").unwrap())
        .waiting(paceline::Waiting::adaptive())
        .fast_path_limit(fast_path_limit)
        .build_with_clock(clock.clone());
    (clock, l)
}

const US: u64 = 1_000;

#[test]
fn a_thread_ahead_of_the_schedule_releases_several_slots_per_wait() {
    // Acquire 1 anchors (slot 0). Acquire 2 (slot 10 us) is within the window and
    // goes at once; its caller's last op took no time, so the next reservation is
    // the 3 slots half a window (25 us) holds. Acquire 3 takes tickets 2..=4
    // (20..=40 us), and waits until half a window before the first (none: 20 us is
    // within 25 us of now); 3 and 4 are within the window, so they go too. Tickets
    // 5..=7 (50..=70 us) wait once, until 25 us; 8..=10 until 55 us; and so on: one
    // wait per 3 ops, each op at most 50 us early and never late.
    let (_clock, l) = ahead(32);
    let got: Vec<(u64, u64)> = (0..17).map(|_| take(&l)).collect();
    let want: Vec<(u64, u64)> = (0..17u64)
        .map(|k| {
            let start = match k {
                0..=1 => 0,
                _ => (2 + 3 * ((k - 2) / 3)) * 10 * US,
            };
            (k * 10 * US, start.saturating_sub(25 * US))
        })
        .collect();
    assert_eq!(got, want);
    for (slot, start) in got {
        assert!(start <= slot && slot - start <= 50 * US);
    }
}

#[test]
fn a_thread_ahead_whose_ops_are_slow_takes_one_slot_at_a_time() {
    // Ops of 8 us (more than half the 10 us slice): running 5 slots back to back
    // would make the last ones late, so each op waits for its own slot's window.
    let (clock, l) = ahead(32);
    let mut starts = Vec::new();
    for _ in 0..12 {
        let (slot, start) = take(&l);
        assert!(start <= slot && slot - start <= 50 * US, "{slot} {start}");
        starts.push(start);
        clock.advance_nanos(8 * US);
    }
    // no two ops start at the same instant: no batch was released
    assert!(starts.windows(2).all(|w| w[0] < w[1]), "{starts:?}");
    assert_eq!(l.stats().grants, 12);
}

#[test]
fn with_the_fast_path_off_a_thread_ahead_waits_per_op() {
    let (_clock, l) = ahead(0);
    let starts: Vec<u64> = (0..12).map(|_| take(&l).1).collect();
    // slots 0..110 us, each released 50 us early once the first window is used up
    assert_eq!(
        starts,
        [0, 0, 0, 0, 0, 0, 10, 20, 30, 40, 50, 60].map(|s| s * US)
    );
}

mod props {
    //! Reservations under random callers: rates, op durations and stalls drawn at
    //! random, on the manual clock with the default (adaptive) release window.
    use super::*;
    use proptest::prelude::*;

    /// What the caller does between two acquires.
    #[derive(Debug, Clone, Copy)]
    enum Gap {
        /// An op of this many ns.
        Op(u64),
        /// A stall of this many us.
        Stall(u64),
    }

    fn gaps() -> impl Strategy<Value = Vec<Gap>> {
        prop::collection::vec(
            prop_oneof![
                8 => (0u64..3_000).prop_map(Gap::Op),
                1 => (0u64..2_000).prop_map(Gap::Stall),
            ],
            1..400,
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

        /// One thread's grants: consecutive slots on the exact schedule, never more
        /// than the release window early, starts that never go back, and
        /// `wait = max(0, start - slot)`.
        #[test]
        fn reserved_slots_are_the_schedule_in_order_and_never_too_early(
            rate in prop_oneof![1e4f64..1e6, 1e6f64..1e9],
            s in prop::sample::select(vec![0.0, 1.1, 2.0]),
            gaps in gaps(),
        ) {
            let clock = ManualClock::new();
            let window = 50 * US;
            let l = RateLimiter::builder(RateSpec::new(rate).strictness(s))
                .waiting(paceline::Waiting::adaptive())
                .build_with_clock(clock.clone());
            let slice = 1e9 / rate;
            let mut last_start = 0;
            for (k, gap) in gaps.iter().enumerate() {
                let g = l.acquire();
                let (slot, start) = (g.scheduled_nanos(), g.start_nanos());
                let want = (k as f64 * slice).floor();
                prop_assert!((slot as f64 - want).abs() <= 1.0, "grant {k}: slot {slot}, schedule {want}");
                prop_assert!(start + window >= slot, "grant {k}: start {start} too early for {slot}");
                prop_assert!(start >= last_start, "grant {k}: start went back");
                prop_assert_eq!(g.wait_nanos(), start.saturating_sub(slot));
                let now = l.now();
                prop_assert!(start <= now, "grant {k}: start {start} after the clock {now}");
                last_start = start;
                match *gap {
                    Gap::Op(ns) => clock.advance_nanos(ns),
                    Gap::Stall(us) => clock.advance_nanos(us * US),
                }
            }
        }
    }
}

mod regressions {
    //! Found by review of the reservation change; each failed before its fix.
    use super::*;
    use paceline::Waiting;

    fn adaptive(spec: &str, clock: &ManualClock) -> RateLimiter<ManualClock> {
        RateLimiter::builder(RateSpec::parse(spec).unwrap())
            .waiting(Waiting::adaptive())
            .build_with_clock(clock.clone())
    }

    /// A change of burst ratio voids reserved tickets: they were mapped with the old
    /// ratio against the one shared anchor, and a pending one waited 4 s after 10 s of
    /// running (the error grows with run time).
    #[test]
    fn a_burst_ratio_change_voids_reserved_tickets() {
        let clock = ManualClock::new();
        let l = adaptive("100K,1.1", &clock);
        l.acquire();
        clock.set(10_000 * MS);
        l.set_spec(RateSpec::parse("100K,1.1,restart").unwrap());
        for _ in 0..3 {
            l.acquire(); // the third reserves 3 ahead
        }
        l.set_spec(RateSpec::parse("100K,2").unwrap());
        let g = l.acquire();
        assert!(g.wait_nanos() < MS, "wait {} ns", g.wait_nanos());
    }

    /// A reserved ticket served late (its thread was held up) no longer restarts the
    /// burst allowance from its old slot, which held back every other thread's
    /// on-schedule slots by about the delay / s.
    #[test]
    fn a_held_up_reserved_ticket_does_not_hold_back_the_schedule() {
        let clock = ManualClock::new();
        let l = adaptive("100K,1.1", &clock);
        for _ in 0..3 {
            l.acquire(); // this thread now holds tickets 3 and 4 (30, 40 us)
        }
        std::thread::scope(|s| {
            s.spawn(|| while l.acquire().scheduled_nanos() < 10 * MS {});
        });
        let held = l.acquire();
        assert_eq!(held.scheduled_nanos(), 30 * US);
        assert!(held.wait_nanos() >= 9 * MS, "it was held up");
        let next = std::thread::scope(|s| s.spawn(|| l.acquire()).join().unwrap());
        assert!(
            next.start_nanos() <= next.scheduled_nanos() + 100 * US,
            "slot {} held back to {}",
            next.scheduled_nanos(),
            next.start_nanos()
        );
    }

    /// A give-back checks the full epoch number: after 1024 epoch changes the word's
    /// 10 epoch bits repeat, and the word moved back over another thread's batch.
    #[test]
    fn a_give_back_after_1024_epochs_never_hands_a_slot_out_twice() {
        let (clock, l) = limiter("1000,0");
        l.acquire();
        clock.set(100 * MS);
        for _ in 1..=50 {
            l.acquire(); // this thread holds 51..=66 of epoch 1
        }
        for _ in 0..1024 {
            l.set_spec(RateSpec::parse("1000,0").unwrap());
        }
        let theirs = std::thread::scope(|s| s.spawn(|| l.acquire_n(67)).join().unwrap());
        let lo = theirs.scheduled_nanos();
        let mine = l.acquire_n(2);
        assert!(
            mine.scheduled_nanos() > lo + 66 * MS,
            "{} inside their batch {lo}..",
            mine.scheduled_nanos()
        );
    }

    /// A thread that moves to another limiter while holding reserved slots loses them,
    /// and reserves again only after 4096 consecutive acquires on one limiter: it used
    /// to lose a reservation on every switch (480 unused slots over these 201 ops).
    #[test]
    fn switching_limiters_loses_at_most_one_reservation() {
        let (a, b) = pair("1000,0", 10_000 * MS);
        let mut ops = 1u64;
        for _ in 0..20 {
            for _ in 0..10 {
                a.acquire();
                ops += 1;
            }
            b.acquire();
        }
        let unused = a.stats().grants - ops;
        assert!(unused <= 31, "{unused} unused");
    }

    /// Reservations are capped whatever the fast-path limit: a limit of 2^27 made one
    /// `fetch_add` carry into the word's epoch bits.
    #[test]
    fn a_huge_fast_path_limit_still_reserves_at_most_64() {
        let clock = ManualClock::new();
        let l = RateLimiter::builder(RateSpec::parse("1G,0").unwrap())
            .fast_path_limit(1 << 27)
            .build_with_clock(clock.clone());
        l.acquire();
        clock.set(1_000 * MS);
        for k in 1..=200u64 {
            assert_eq!(l.acquire().scheduled_nanos(), k);
        }
        assert!(l.stats().grants <= 201 + 64);
    }

    /// Regression (issue 12, bug 2): an op after a stall in the middle of a
    /// reservation under-reported its wait by the stall (here 1 ms every 97 ops of
    /// 10 ns). Its start is now the clock when it is handed out.
    #[test]
    fn a_stall_mid_reservation_is_in_the_next_wait() {
        let (clock, l) = limiter("1G,0");
        for i in 0..2_000u64 {
            clock.advance_nanos(if i % 97 == 0 { MS } else { 10 });
            let g = l.acquire();
            assert_eq!(g.start_nanos(), l.now(), "op {i}");
        }
        assert!(l.stats().grants > 2_000, "reservations engaged");
    }
}

/// Two limiters at 1G/s on one manual clock, both 1 s behind; this thread has made
/// 100 acquires on the first, so it holds unused reserved slots there.
fn two_behind_one_reserving() -> (RateLimiter<ManualClock>, RateLimiter<ManualClock>) {
    let (a, b) = pair("1G,0", 1_000 * MS);
    for _ in 0..100 {
        a.acquire();
    }
    (a, b)
}

/// A thread that moves on for good (one limiter after another, as a benchmark harness
/// does) reserves again on the new limiter once it has made 4096 acquires there.
#[test]
fn a_thread_that_moved_to_another_limiter_reserves_again_after_the_cooldown() {
    let (a, b) = two_behind_one_reserving();
    assert!(a.stats().grants > 101);
    let mut ops = 1;
    while ops < 4_096 {
        b.acquire();
        ops += 1;
        assert_eq!(b.stats().grants, ops, "no reservation during the cooldown");
    }
    for _ in 0..10 {
        b.acquire();
        ops += 1;
    }
    assert!(b.stats().grants > ops, "reserving again after the cooldown");
}

/// A reservation voided by a restart holds nothing, but the thread cannot see the
/// void until it acquires there again: a move right after it starts the cooldown like
/// any move with reserved slots (found by the second review; documented, not
/// avoided, as the thread holds no reference to the limiter it left).
#[test]
fn a_move_right_after_a_void_starts_the_cooldown() {
    let (a, b) = two_behind_one_reserving();
    a.set_spec(RateSpec::parse("1G,0,restart").unwrap());
    let mut ops = 1;
    for _ in 0..200 {
        b.acquire();
        ops += 1;
    }
    assert_eq!(b.stats().grants, ops, "cooling down");
}
