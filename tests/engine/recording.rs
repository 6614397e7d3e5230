//! What a run records: a finished run's snapshot ends when it finished, the
//! timeline read by count, and each op's figures under its own name.

use crate::workloads::Takes;
use paceline::{
    ActivityConfig, Engine, ErrorPolicy, Event, ManualClock, OpError, OpRunner, Outcome, RateSpec,
    WorkerContext, Workload,
};
use std::time::Duration;

/// Issue 18.1 / 17.2.1: a run that finished long ago keeps its own elapsed time.
#[test]
fn a_finished_runs_snapshot_ends_when_it_finished() {
    let clock = ManualClock::new();
    let run = Engine::with_clock(clock.clone())
        .start(
            ActivityConfig::new("warmup")
                .cycles(0..10)
                .rate(RateSpec::new(10.0)),
            Takes(Duration::ZERO),
        )
        .unwrap();
    assert_eq!(run.wait(), Outcome::Completed);
    clock.advance(Duration::from_secs(95)); // the rest of the scenario goes on
    let t = run.snapshot();
    assert_eq!(t.ops(), 10);
    // Slots 0..0.9 s: the run's own 0.9 s, not 95.9 s.
    assert_eq!(t.elapsed_nanos(), 900_000_000);
    assert_eq!(t.rate(), 10.0 / 0.9);
    clock.advance(Duration::from_secs(5));
    assert_eq!(run.snapshot().elapsed_nanos(), 0);
    assert_eq!(run.totals().elapsed_nanos(), 900_000_000);
}

/// Issue 18.11: a timeline reader polling with a count never sees an entry twice
/// and never misses one marked out of time order.
#[test]
fn timeline_since_counts_marks_not_positions() {
    let m = paceline::Metrics::new(0);
    m.mark(20, Event::Started);
    let first = m.timeline_since(0);
    assert_eq!(first.len(), 1);
    m.mark(10, Event::Note("earlier".into()));
    m.mark(30, Event::Stopped);
    let next = m.timeline_since(first.len());
    let events: Vec<String> = next.iter().map(|e| e.event.to_string()).collect();
    assert_eq!(events, ["earlier", "stopped"]);
}

/// Ops whose time and failures depend on the op their cycle runs, as an
/// activity's sequence picks it: `read` (100 µs) twice, then `write` (300 µs,
/// failing as `conflict` on every other one), the sequence `[0, 0, 1]`.
struct ReadWrite(WorkerContext);

impl OpRunner for ReadWrite {
    fn run(&mut self, cycle: u64) -> Result<(), OpError> {
        if cycle % 3 == 2 {
            self.0.sleep(Duration::from_micros(300));
            if cycle % 6 == 5 {
                return Err(OpError::new("conflict", format!("cycle {cycle}")));
            }
        } else {
            self.0.sleep(Duration::from_micros(100));
        }
        Ok(())
    }
}

struct ReadWriteWork;

impl Workload for ReadWriteWork {
    fn runner(&self, ctx: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
        Ok(Box::new(ReadWrite(ctx.clone())))
    }
}

/// Issue 24 item 11: the engine learns which op each cycle ran from the op
/// table (a sequence with a ratio of 2), and records it under that op: the
/// per-op counts, errors and distributions are each op's own, and add up to
/// the all-ops figures, whatever the thread count.
#[test]
fn issue24_item11_each_op_is_recorded_under_its_own_op() {
    for threads in [1, 3] {
        let engine = Engine::with_clock(ManualClock::new());
        let table = paceline::OpTable::new(["read", "write"], &[0, 0, 1]).unwrap();
        let run = engine
            .start(
                ActivityConfig::new("rw")
                    .cycles(0..300)
                    .threads(threads)
                    .rate(RateSpec::new(1000.0))
                    .errors(ErrorPolicy::parse("count").unwrap())
                    .ops(table),
                ReadWriteWork,
            )
            .unwrap();
        run.wait();
        let t = run.snapshot();
        let names: Vec<&str> = t.by_op().iter().map(|o| o.name()).collect();
        assert_eq!(names, ["read", "write"]);
        let (read, write) = (t.op("read").unwrap(), t.op("write").unwrap());
        assert_eq!((read.ops(), write.ops(), t.ops()), (200, 100, 300));
        // Cycles 5, 11, ..., 299: every other write.
        assert_eq!((read.error_count(), write.errors_of("conflict")), (0, 50));
        assert_eq!(t.errors_of("conflict"), 50);
        // Per op, 2 significant digits: 100 µs and 300 µs to 1 %. On one
        // thread exactly; on three, the workers' sleeps on the one manual clock
        // overlap (one's sleep moves the time another reads its end at), so an
        // op may read longer, never shorter (seen in CI under load: a read of
        // more than 100 µs).
        let near = |v: u64, to: u64| v.abs_diff(to) <= to / 100;
        let at_least = |v: u64, to: u64| v + to / 100 >= to;
        if threads == 1 {
            assert!(near(read.service().min(), 100_000) && near(read.service().max(), 100_000));
            assert!(near(write.service().min(), 300_000) && near(write.service().max(), 300_000));
        } else {
            assert!(
                at_least(read.service().min(), 100_000),
                "{:?}",
                read.service()
            );
            assert!(
                at_least(write.service().min(), 300_000),
                "{:?}",
                write.service()
            );
        }
        assert_eq!(
            read.service().count() + write.service().count(),
            t.service().count()
        );
        // The all-ops distribution holds both, to 3 digits.
        if threads == 1 {
            assert!(
                t.service().min().abs_diff(100_000) <= 100,
                "{:?}",
                t.service()
            );
            assert!(
                t.service().max().abs_diff(300_000) <= 300,
                "{:?}",
                t.service()
            );
        } else {
            assert!(t.service().min() + 100 >= 100_000, "{:?}", t.service());
            assert!(t.service().max() + 300 >= 300_000, "{:?}", t.service());
        }
        assert_eq!(
            read.response().count() + write.response().count(),
            t.response().count()
        );
        assert_eq!(read.wait().count() + write.wait().count(), t.wait().count());
    }
}
