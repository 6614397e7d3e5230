//! The seeds' worked examples, each as a test on the manual clock.

use paceline::{
    AtomicTokenBucket, Clock, Decision, FixedWindow, KeyConfig, KeyedLimiter, Limit, LimitError,
    Limiter, ManualClock, PackedSlidingWindow, PackedSlidingWindow128, Signal,
    SlidingWindowCounter, SlidingWindowLog, TokenBucket, TokenPool, Waiting,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const SEC: u64 = 1_000_000_000;
const MIN: Duration = Duration::from_secs(60);

/// Seed 002, "Sliding Window": limit 10 per minute, 9 requests in [00:00, 00:01), 5 in
/// [00:01, 00:02); a request at 00:01:15 (25 % in) sees 9 × 0.75 + 5 = 11.75 > 10.
#[test]
fn seed002_sliding_window_counter_refuses_at_11_75() {
    fn check<L: Limiter>(
        name: &str,
        l: &L,
        clock: &ManualClock,
        record: impl Fn(u64),
        estimate: impl Fn() -> f64,
    ) {
        record(9);
        clock.set(60 * SEC);
        record(5);
        clock.set(75 * SEC);
        assert_eq!(estimate(), 11.75, "{name}");
        // Neither window exceeds 10, yet the weighted sum does.
        let d = l.try_acquire(1);
        assert!(!d.is_admitted(), "{name}");
        // It fits once 9 × (1 - f) + 5 + 1 <= 10, that is f >= 5/9.
        let at = d.earliest().unwrap();
        assert_eq!(at, 60 * SEC + 60 * SEC - 4 * 60 * SEC / 9, "{name}");
        clock.set(at);
        assert!(l.try_acquire(1).is_admitted(), "{name}");
    }
    let limit = Limit::new(10, MIN).unwrap();

    let clock = ManualClock::new();
    let l = SlidingWindowCounter::with_clock(limit, clock.clone());
    check("mutex", &l, &clock, |n| l.record(n), || l.estimate());

    let clock = ManualClock::new();
    let l = PackedSlidingWindow::with_clock(limit, clock.clone()).unwrap();
    check("packed 64", &l, &clock, |n| l.record(n), || l.estimate());

    let clock = ManualClock::new();
    let l = PackedSlidingWindow128::with_clock(limit, clock.clone()).unwrap();
    check("packed 128", &l, &clock, |n| l.record(n), || l.estimate());
}

/// Seed 002, "Fixed Window Counter": 2 per minute; requests at 00:00:58, 00:00:59,
/// 00:01:01 and 00:01:02 all pass, so [00:00:30, 00:01:30) holds 4.
#[test]
fn seed002_fixed_window_lets_a_double_burst_through_at_the_edge() {
    let clock = ManualClock::new();
    let w = FixedWindow::with_clock(Limit::new(2, MIN).unwrap(), clock.clone()).unwrap();
    let mut admitted_at = Vec::new();
    for t in [58, 59, 61, 62] {
        clock.set(t * SEC);
        if w.try_acquire(1).is_admitted() {
            admitted_at.push(t);
        }
    }
    assert_eq!(admitted_at, [58, 59, 61, 62]);
    let in_30_to_90 = admitted_at
        .iter()
        .filter(|&&t| (30..90).contains(&t))
        .count();
    assert_eq!(in_30_to_90, 4, "twice the limit in one minute-wide window");
    // Each aligned window still holds only 2.
    clock.set(63 * SEC);
    assert_eq!(
        w.try_acquire(1),
        Decision::Refused {
            earliest: 120 * SEC
        }
    );

    // The sliding-window log refuses the edge burst.
    let clock = ManualClock::new();
    let log = SlidingWindowLog::with_clock(Limit::new(2, MIN).unwrap(), clock.clone()).unwrap();
    let mut admitted_at = Vec::new();
    for t in [58, 59, 61, 62] {
        clock.set(t * SEC);
        if log.try_acquire(1).is_admitted() {
            admitted_at.push(t);
        }
    }
    assert_eq!(admitted_at, [58, 59]);
}

/// Seed 002, the fixed window's first example: 2 per minute; 00:00:24 and 00:00:36
/// pass, 00:00:49 is refused, 00:01:12 passes in the next window.
#[test]
fn seed002_fixed_window_counts_per_window() {
    let clock = ManualClock::new();
    let w = FixedWindow::with_clock(Limit::new(2, MIN).unwrap(), clock.clone()).unwrap();
    let mut seen = Vec::new();
    for t in [24, 36, 49, 72] {
        clock.set(t * SEC);
        seen.push(w.try_acquire(1).is_admitted());
    }
    assert_eq!(seen, [true, true, false, true]);
}

/// Seed 000, "Counter Overflow": 16-bit counts hold at most 65 535. The packed word
/// refuses a limit it cannot count, and its plain counter saturates instead of
/// wrapping (a wrapped count would read as a nearly idle window and open the gate).
/// The 128-bit word counts on.
#[test]
fn seed000_counter_overflow_saturates_and_the_wide_word_counts_on() {
    let too_many = Limit::per_second(65_536).unwrap();
    assert!(matches!(
        PackedSlidingWindow::with_clock(too_many, ManualClock::new()),
        Err(LimitError::TooMany {
            given: 65_536,
            max: 65_535,
            ..
        })
    ));

    let clock = ManualClock::new();
    let narrow =
        PackedSlidingWindow::with_clock(Limit::per_second(65_535).unwrap(), clock.clone()).unwrap();
    narrow.record(65_535);
    narrow.record(10); // 65 545 would wrap to 9 in 16 bits
    assert_eq!(narrow.estimate(), 65_535.0);
    assert!(
        !narrow.try_acquire(1).is_admitted(),
        "a saturated window stays shut"
    );

    let wide =
        PackedSlidingWindow128::with_clock(Limit::per_second(100_000).unwrap(), clock).unwrap();
    wide.record(65_535);
    wide.record(10);
    assert_eq!(wide.estimate(), 65_545.0);
    assert!(wide.try_acquire(34_455).is_admitted(), "up to 100 000 fits");
    assert!(!wide.try_acquire(1).is_admitted());
}

/// A clock that can step backwards, as seed 001's `time.Now()` can.
#[derive(Debug, Clone, Default)]
struct SteppingClock(Arc<AtomicU64>);

impl SteppingClock {
    fn set(&self, t: u64) {
        self.0.store(t, Ordering::Relaxed);
    }
}

impl Clock for SteppingClock {
    fn now(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
    fn wait_until(&self, deadline: u64, _: &Waiting, _: &Signal) -> u64 {
        self.0.fetch_max(deadline, Ordering::Relaxed).max(deadline)
    }
}

/// Seed 001, "Prevent calculation errors due to clock skew": when the clock moves
/// backwards, neither bucket refills, neither moves its time back, and when the clock
/// comes forward again no token is given twice for the same span.
#[test]
fn seed001_clock_moving_backwards_gives_nothing_twice() {
    fn check<L: Limiter>(name: &str, make: impl Fn(Limit, SteppingClock) -> L) {
        let clock = SteppingClock::default();
        clock.set(10 * SEC);
        let b = make(Limit::per_second(10).unwrap(), clock.clone());
        assert!(b.try_acquire(10).is_admitted(), "{name}");
        clock.set(10 * SEC + 500_000_000); // +0.5 s: 5 tokens
        assert!(b.try_acquire(5).is_admitted(), "{name}");
        clock.set(9 * SEC); // 1.5 s back
        assert!(
            !b.try_acquire(1).is_admitted(),
            "{name}: no refill from going back"
        );
        // Back at +0.5 s: still nothing; the bucket kept its time.
        clock.set(10 * SEC + 500_000_000);
        assert!(
            !b.try_acquire(1).is_admitted(),
            "{name}: the span is not counted twice"
        );
        clock.set(10 * SEC + 600_000_000);
        assert!(b.try_acquire(1).is_admitted(), "{name}");
        assert!(!b.try_acquire(1).is_admitted(), "{name}");
    }
    check("TokenBucket", TokenBucket::with_clock);
    check("AtomicTokenBucket", |l, c| {
        AtomicTokenBucket::with_clock(l, c).unwrap()
    });
}

/// Seed 001's first trade-off: the lock-free bucket keeps fractional tokens, so a
/// bucket asked every millisecond refills as fast as one asked once a second.
#[test]
fn seed001_fractional_tokens_are_kept() {
    let clock = ManualClock::new();
    let b = AtomicTokenBucket::with_clock(Limit::per_second(3).unwrap(), clock.clone()).unwrap();
    assert!(b.try_acquire(3).is_admitted());
    let mut admitted = 0;
    for _ in 0..3_000 {
        clock.advance(Duration::from_millis(1));
        admitted += u32::from(b.try_acquire(1).is_admitted());
    }
    assert_eq!(
        admitted, 9,
        "3 per second for 3 seconds, none lost to rounding"
    );
}

/// Seed 003, "Terms" and its example: pool size 1000, backfill 0.25, refills of 500.
/// Each refill fills the active pool first, spills the rest to the waiting pool, and
/// moves at most 0.25 × 500 = 125 waiting tokens back (pro rata: half the refill of a
/// pool, half the 250-token backfill room), never past 1250. Two refills give the full
/// 25 %; a consumer that fell behind then gets 625 per refill of 500.
#[test]
fn seed003_token_pool_backfill_example() {
    let clock = ManualClock::new();
    let pool = TokenPool::with_clock(Limit::per_second(1000).unwrap(), 0.25, clock).unwrap();
    let state = || (pool.active(), pool.waiting());
    assert!(pool.try_acquire(1000).is_admitted());
    assert_eq!(state(), (0.0, 0.0));
    pool.refill_permits(500);
    assert_eq!(
        state(),
        (500.0, 0.0),
        "room in the active pool: all of it goes there"
    );
    pool.refill_permits(500);
    assert_eq!(state(), (1000.0, 0.0));
    pool.refill_permits(500);
    assert_eq!(state(), (1125.0, 375.0), "all spills; 125 are backfilled");
    pool.refill_permits(500);
    assert_eq!(
        state(),
        (1250.0, 750.0),
        "the second refill completes the 25 %"
    );
    pool.refill_permits(500);
    assert_eq!(
        state(),
        (1250.0, 1250.0),
        "the active pool is at its ceiling"
    );
    assert_eq!(
        pool.try_acquire(1251),
        Decision::Refused {
            earliest: Decision::NEVER
        }
    );
    // The consumer catches up: 625 available per refill of 500, while the backlog lasts.
    assert!(pool.try_acquire(1250).is_admitted());
    pool.refill_permits(500);
    assert_eq!(state(), (625.0, 1125.0));
    assert!(pool.try_acquire(625).is_admitted());
    assert!(!pool.try_acquire(1).is_admitted());
}

/// Seed 004's configuration store: "user:241531" may make 5 requests in 1 second.
#[test]
fn seed004_per_key_configuration() {
    let s = Duration::from_secs(1);
    let clock = ManualClock::new();
    let limiter = KeyedLimiter::builder(KeyConfig::new(1, s, s / 10).unwrap())
        .build_with_clock(clock.clone());
    limiter.set_config("user:241531", KeyConfig::new(5, s, s / 10).unwrap());
    let admitted = (0..8)
        .filter(|_| limiter.try_acquire(&"user:241531", 1).is_admitted())
        .count();
    assert_eq!(admitted, 5);
    assert!(limiter.try_acquire(&"user:7", 1).is_admitted());
    assert!(!limiter.try_acquire(&"user:7", 1).is_admitted());
    // Half a second later the window still holds all 5; a second later none.
    clock.advance(s / 2);
    assert!(!limiter.try_acquire(&"user:241531", 1).is_admitted());
    clock.advance(s / 2);
    assert!(limiter.try_acquire(&"user:241531", 5).is_admitted());
}
