//! Per-op and all-ops figures of a known set of ops under two op names (and
//! some under none), exactly: each snapshot's, and the totals', against
//! histograms recorded value by value here. Every reader (the interval lines,
//! the summary, JSON, CSV, hlog, /metrics) reads these snapshots, so this pins
//! what they all print, whatever the recorder does on its hot path.

use hdrhistogram::Histogram;
use paceline::{Metrics, OP_DIGITS, Recorder, Snapshot};

/// Op indices: `get`, `put`, and one past the names (all-ops figures only).
const GET: usize = 0;
const PUT: usize = 1;
const NONE: usize = 7;

/// One recorded op: its op, queue, dispatch and service (a plain `record`
/// when `split` is false: the wait is `queue`).
#[derive(Clone, Copy)]
struct Op {
    op: usize,
    queue: u64,
    dispatch: u64,
    service: u64,
    split: bool,
}

const fn op(op: usize, wait: u64, service: u64) -> Op {
    Op {
        op,
        queue: wait,
        dispatch: 0,
        service,
        split: false,
    }
}

const fn split(op: usize, queue: u64, dispatch: u64, service: u64) -> Op {
    Op {
        op,
        queue,
        dispatch,
        service,
        split: true,
    }
}

impl Op {
    fn wait(&self) -> u64 {
        self.queue + self.dispatch
    }

    fn record(&self, rec: &mut Recorder) {
        rec.set_op(self.op);
        if self.split {
            rec.record_split(self.queue, self.dispatch, self.service);
        } else {
            rec.record(self.queue, self.service);
        }
    }
}

/// The first interval's ops, by recorder A then B.
const FIRST_A: [Op; 5] = [
    op(GET, 0, 100),
    op(GET, 5, 200),
    op(PUT, 10, 40_000),
    op(NONE, 3, 60),
    split(PUT, 2_000, 345, 1_234_567),
];
const FIRST_B: [Op; 4] = [
    op(GET, 0, 150),
    op(PUT, 7, 90),
    split(GET, 0, 0, 250),
    op(GET, 1_000_000, 3_000_000_000),
];
/// The second interval's: A's, then B's (B leaves before the snapshot).
const SECOND_A: [Op; 2] = [op(PUT, 1, 1), op(NONE, 0, 0)];
const SECOND_B: [Op; 3] = [op(GET, 99_999, 12_345), op(PUT, 0, 77), op(GET, 0, 100)];

fn histogram(digits: u8, values: impl IntoIterator<Item = u64>) -> Histogram<u64> {
    let mut h = Histogram::new(digits).expect("a valid precision");
    values
        .into_iter()
        .for_each(|v| h.record(v).expect("in range"));
    h
}

/// Checks `snap` against `ops`, exactly: the all-ops histograms to 3 digits,
/// each op's to [`OP_DIGITS`], the counts and the errors.
fn check(snap: &Snapshot, ops: &[Op], errors: (u64, u64)) {
    let all = |f: fn(&Op) -> u64| histogram(3, ops.iter().map(f));
    assert_eq!(snap.ops(), ops.len() as u64);
    assert_eq!(*snap.service().histogram(), all(|o| o.service));
    assert_eq!(*snap.wait().histogram(), all(Op::wait));
    assert_eq!(*snap.response().histogram(), all(|o| o.wait() + o.service));
    assert_eq!(snap.error_count(), errors.0 + errors.1);
    for (name, index, errors) in [("get", GET, errors.0), ("put", PUT, errors.1)] {
        let mine: Vec<Op> = ops.iter().copied().filter(|o| o.op == index).collect();
        let one = |f: fn(&Op) -> u64| histogram(OP_DIGITS, mine.iter().map(f));
        let s = snap.op(name).expect("the op is named");
        assert_eq!(s.ops(), mine.len() as u64, "{name}");
        assert_eq!(*s.service().histogram(), one(|o| o.service), "{name}");
        assert_eq!(*s.wait().histogram(), one(Op::wait), "{name}");
        assert_eq!(
            *s.response().histogram(),
            one(|o| o.wait() + o.service),
            "{name}"
        );
        assert_eq!(s.errors_of("refused"), errors, "{name}");
    }
    assert_eq!(snap.by_op().len(), 2);
}

#[test]
fn per_op_and_all_ops_figures_are_exact_across_snapshots_hand_overs_and_totals() {
    let metrics = Metrics::with_ops(0, &["get", "put"]);
    let (mut a, mut b) = (metrics.recorder(), metrics.recorder());
    FIRST_A.iter().for_each(|o| o.record(&mut a));
    FIRST_B.iter().for_each(|o| o.record(&mut b));
    a.set_op(GET);
    a.error_named("refused");
    let first = metrics.snapshot(1_000_000_000);
    let first_ops: Vec<Op> = FIRST_A.iter().chain(&FIRST_B).copied().collect();
    check(&first, &first_ops, (1, 0));
    // Figures read off the same snapshot, as the reports print them.
    let get = first.op("get").unwrap();
    assert_eq!((get.ops(), get.service().min()), (5, 100));
    assert_eq!(get.service().p50(), 200);
    assert_eq!((get.wait().min(), get.wait().max()), (0, 1_003_519));
    assert_eq!(first.op("put").unwrap().wait().max(), 2_351);
    assert_eq!(first.wait().max(), 1_000_447);
    assert_eq!(first.service().max(), 3_001_024_511);
    assert_eq!((first.queue().count(), first.queue().max()), (2, 2_000));

    SECOND_A.iter().for_each(|o| o.record(&mut a));
    SECOND_B.iter().for_each(|o| o.record(&mut b));
    b.set_op(PUT);
    b.error_named("refused");
    b.error_named("refused");
    drop(b); // its unread ops are handed over, counted once
    let second = metrics.snapshot(2_000_000_000);
    let second_ops: Vec<Op> = SECOND_A.iter().chain(&SECOND_B).copied().collect();
    check(&second, &second_ops, (0, 2));
    assert_eq!(second.op("put").unwrap().service().max(), 77);

    let every: Vec<Op> = first_ops.iter().chain(&second_ops).copied().collect();
    check(&metrics.totals(), &every, (1, 2));
    // Nothing new: an empty third interval, per op too.
    let third = metrics.snapshot(3_000_000_000);
    check(&third, &[], (0, 0));
    drop(a);
}
