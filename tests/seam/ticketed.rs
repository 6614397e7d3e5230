//! A slot source that keeps the books a shared schedule keeps: tickets a slice
//! apart, each granted slot either used (`slot_used`, the start the engine
//! reports) or not (`slot_not_used`), and the start rate read from the starts as
//! the shared schedule reads it. All on the manual clock.

use paceline::{
    ActivityConfig, Clock, Coordinator, CycleSource, Engine, JoinRequest, Joined, ManualClock,
    MissedSlots, Outcome, RateSpec, Slot, SlotSource, Waiting,
};
use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::seam_support::{Cycles, Held, until};

/// Tickets `slice` ns apart from 0; the acquire of ticket k moves the manual
/// clock to its slot (the wait) and grants it. The acquire of the worker thread
/// named `hold` (if any) waits, ignoring `give_up` (as a shared schedule's wait
/// toward its slot does), until the test lets it go.
struct Ticketed {
    clock: ManualClock,
    slice: u64,
    next_ticket: AtomicU64,
    cycles: Cycles,
    hold: Option<String>,
    held: AtomicBool,
    release: AtomicBool,
    /// `is_dry` answered true (a worker found nothing left).
    dry_seen: AtomicBool,
    /// (starts, latest start, latest slot used) from `slot_used`.
    starts: Mutex<(u64, u64, i64)>,
    not_used: AtomicU64,
}

impl Ticketed {
    fn new(clock: ManualClock, slice: u64, cycles: u64, hold: Option<&str>) -> Arc<Self> {
        Arc::new(Self {
            clock,
            slice,
            next_ticket: AtomicU64::new(0),
            cycles: Cycles::new(cycles),
            hold: hold.map(str::to_string),
            held: AtomicBool::new(false),
            release: AtomicBool::new(false),
            dry_seen: AtomicBool::new(false),
            starts: Mutex::new((0, 0, 0)),
            not_used: AtomicU64::new(0),
        })
    }

    /// The start rate as the shared schedule reads it: starts less one over the
    /// span from the first slot (0) to the latest start.
    fn start_rate(&self) -> f64 {
        let (n, last, _) = *self.starts.lock().unwrap();
        (n - 1) as f64 * 1e9 / last as f64
    }
}

impl SlotSource for Ticketed {
    fn now(&self) -> u64 {
        self.clock.now()
    }
    fn acquire_unless(&self, _give_up: &dyn Fn() -> bool) -> Slot {
        let me = std::thread::current().name().map(str::to_string);
        if self.hold.is_some() && me == self.hold {
            self.held.store(true, Ordering::SeqCst);
            while !self.release.load(Ordering::SeqCst) {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        let k = self.next_ticket.fetch_add(1, Ordering::SeqCst);
        let slot = k * self.slice;
        self.clock.set(slot);
        Slot::At(slot as i64)
    }
    fn slot_used(&self, slot: i64, start: u64) {
        assert!(
            start as i64 >= slot,
            "started at {start}, before its slot {slot}"
        );
        let mut s = self.starts.lock().unwrap();
        s.0 += 1;
        s.1 = s.1.max(start);
        s.2 = s.2.max(slot);
    }
    fn slot_not_used(&self, _retired: bool) {
        self.not_used.fetch_add(1, Ordering::SeqCst);
    }
    fn set_spec(&self, _spec: RateSpec, _marked: bool) {}
    fn spec(&self) -> RateSpec {
        RateSpec::new(1e9 / self.slice as f64)
    }
    fn stop(&self) {}
    fn wake(&self) {}
    fn waiting(&self) -> Waiting {
        Waiting::exact()
    }
    fn missed_slots(&self) -> MissedSlots {
        MissedSlots {
            count: self.not_used.load(Ordering::SeqCst) as f64,
            counts_pauses: false,
        }
    }
}

impl CycleSource for Ticketed {
    fn take(&self, stride: u64) -> Option<Range<u64>> {
        self.cycles.take(stride)
    }
    fn give_back(&self, r: Range<u64>) {
        panic!("cycles {r:?} given back: no worker leaves with cycles in these tests")
    }
    fn finished(&self, _r: Range<u64>) {}
    fn is_dry(&self) -> bool {
        let dry = self.cycles.is_dry();
        if dry {
            self.dry_seen.store(true, Ordering::SeqCst);
        }
        dry
    }
}

impl fmt::Display for Ticketed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("fake://tickets")
    }
}

impl fmt::Debug for Ticketed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Ticketed")
    }
}

#[derive(Clone, Debug)]
struct Join(Arc<Ticketed>);

impl fmt::Display for Join {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("fake://tickets")
    }
}

impl Coordinator for Join {
    fn join(&self, _r: JoinRequest) -> Result<Joined, String> {
        Ok(Joined {
            slots: self.0.clone(),
            cycles: self.0.clone(),
            paced: true,
        })
    }
}

/// Regression (session 15's review, H1): a worker retired while it waited for
/// its slot gave the slot back (`slot_not_used(true)`: one missed slot on a
/// shared schedule, and its start lost), then took over (no active worker was
/// left) and ran its op on that same slot: one ticket counted missed and used.
/// It now gives the slot back only when it leaves; taking over, it uses it.
#[test]
fn regression_a_retired_worker_that_takes_over_never_runs_a_slot_it_gave_back() {
    let clock = ManualClock::new();
    let tickets = Ticketed::new(clock.clone(), 1_000_000_000, 2, Some("h1-1"));
    let work = Held::new(u64::MAX);
    let engine = Engine::with_clock(clock);
    let run = engine
        .start(
            ActivityConfig::new("h1")
                .cycles(0..2)
                .stride(1)
                .threads(2)
                .rate(RateSpec::new(1.0))
                .coordinate(Join(tickets.clone())),
            work.clone(),
        )
        .unwrap();
    // Worker 1 holds a cycle and waits for its slot; worker 0 runs the other.
    until("worker 1 to wait for its slot", || {
        tickets.held.load(Ordering::SeqCst)
    });
    until("worker 0's op", || work.started.load(Ordering::SeqCst) == 1);
    run.set_threads(1).unwrap();
    work.open.store(true, Ordering::SeqCst);
    // Worker 0 finds the input dry and leaves (under the motors lock, which
    // worker 1's checkpoint takes after it): no active worker is left.
    until("worker 0 to find the input dry", || {
        tickets.dry_seen.load(Ordering::SeqCst)
    });
    tickets.release.store(true, Ordering::SeqCst);
    assert_eq!(run.wait(), Outcome::Completed);
    run.snapshot();
    assert_eq!(run.totals().ops(), 2);
    assert_eq!(
        tickets.not_used.load(Ordering::SeqCst),
        0,
        "no slot given back"
    );
    assert_eq!(tickets.next_ticket.load(Ordering::SeqCst), 2, "two tickets");
    assert_eq!(tickets.starts.lock().unwrap().0, 2, "both starts counted");
    assert_eq!(run.totals().missed(), 0);
}

/// Session 15's review, M1: a shared schedule counted a worker's start only once
/// that worker was granted its next slot, so with slow ops on some workers and
/// fast ones on another the start rate read mid-run was low (every op started
/// at its slot). The engine now reports each start as the op starts
/// (`slot_used`): with three ops held and a fast worker running the rest, the
/// start rate mid-run is the schedule's rate exactly.
#[test]
fn every_start_is_reported_as_it_starts_and_the_start_rate_mid_run_is_exact() {
    let clock = ManualClock::new();
    // 200/s: a slot every 5 ms; 40 cycles, the first 3 held.
    let tickets = Ticketed::new(clock.clone(), 5_000_000, 40, None);
    let work = Held::new(3);
    let engine = Engine::with_clock(clock);
    let run = engine
        .start(
            ActivityConfig::new("m1")
                .cycles(0..40)
                .stride(1)
                .threads(4)
                .rate(RateSpec::new(200.0))
                .coordinate(Join(tickets.clone())),
            work.clone(),
        )
        .unwrap();
    // The fast worker runs cycles 3..40 while the three slow ops are under way.
    until("the 37 fast ops", || {
        work.ended.load(Ordering::SeqCst) == 37
    });
    assert_eq!(work.started.load(Ordering::SeqCst), 40);
    let (starts, last_start, last_slot) = *tickets.starts.lock().unwrap();
    assert_eq!(
        (starts, last_slot),
        (40, 39 * 5_000_000),
        "every start, mid-run"
    );
    assert_eq!(
        last_start,
        39 * 5_000_000,
        "the latest start is at its slot"
    );
    assert_eq!(tickets.start_rate(), 200.0);
    work.open.store(true, Ordering::SeqCst);
    assert_eq!(run.wait(), Outcome::Completed);
    run.snapshot();
    assert_eq!(tickets.starts.lock().unwrap().0, run.totals().ops());
    assert_eq!(tickets.not_used.load(Ordering::SeqCst), 0);
}
