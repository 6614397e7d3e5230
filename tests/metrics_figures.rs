//! The snapshot path's figures equal the old path's: every count, minimum,
//! maximum, percentile and mean a snapshot (or the totals) reports is the one
//! an HdrHistogram that recorded the same values one by one gives, bit for bit.
//! This pins the fast paths of `src/metrics` (bucket counts drained into the
//! snapshot's histograms, each distribution's summary read in that same pass:
//! `Latencies`' module doc).

use hdrhistogram::Histogram;
use paceline::{Latencies, Metrics, Summary};
use proptest::prelude::*;

/// The recorders' clamp: values past it count as it.
const MAX_TRACKED: u64 = 1 << 61;

/// The old path: one HdrHistogram recording each value (clamped as the
/// recorders clamp it).
fn recorded(digits: u8, values: &[u64]) -> Histogram<u64> {
    let mut h = Histogram::new(digits).unwrap();
    for &v in values {
        if h.record(v.min(MAX_TRACKED)).is_err() {
            h.saturating_record(v);
        }
    }
    h
}

/// The figures HdrHistogram itself reads off `h` (the old `Latencies` reads).
fn old_figures(h: &Histogram<u64>) -> Summary {
    if h.is_empty() {
        return Summary::default();
    }
    Summary {
        count: h.len(),
        min: h.min(),
        p50: h.value_at_quantile(0.5),
        p90: h.value_at_quantile(0.9),
        p99: h.value_at_quantile(0.99),
        p999: h.value_at_quantile(0.999),
        p9999: h.value_at_quantile(0.9999),
        max: h.max(),
        mean: h.mean(),
    }
}

fn same(l: &Latencies, digits: u8, values: &[u64]) -> Result<(), TestCaseError> {
    let direct = recorded(digits, values);
    prop_assert!(l.histogram() == &direct);
    let (new, old) = (l.summary(), old_figures(&direct));
    prop_assert_eq!(
        new.mean.to_bits(),
        old.mean.to_bits(),
        "{:?} / {:?}",
        new,
        old
    );
    prop_assert_eq!(new, old);
    prop_assert_eq!(
        (
            l.count(),
            l.min(),
            l.max(),
            l.p50(),
            l.p90(),
            l.p99(),
            l.p999(),
            l.p9999()
        ),
        (
            old.count, old.min, old.max, old.p50, old.p90, old.p99, old.p999, old.p9999
        )
    );
    prop_assert_eq!(l.mean().to_bits(), old.mean.to_bits());
    // A quantile the summary does not hold is read off the histogram.
    let q = if direct.is_empty() {
        0
    } else {
        direct.value_at_quantile(0.25)
    };
    prop_assert_eq!(l.quantile(0.25), q);
    Ok(())
}

fn value() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        Just(1u64),
        Just(MAX_TRACKED),
        Just(MAX_TRACKED + 1),
        Just(u64::MAX),
        0..3_000u64,
        0..5_000_000u64,
        any::<u64>(),
    ]
}

/// One op: a split (queue, dispatch) or not, its service, its op index.
fn op() -> impl Strategy<Value = (bool, u64, u64, u64, usize)> {
    (any::<bool>(), value(), value(), value(), 0..3usize)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]
    #[test]
    fn snapshots_and_totals_read_the_old_figures(
        rounds in prop::collection::vec(prop::collection::vec(op(), 0..60), 1..4),
    ) {
        let metrics = Metrics::with_ops(0, &["a", "b"]);
        let mut recs = [metrics.recorder(), metrics.recorder()];
        let mut all: [Vec<u64>; 5] = Default::default();
        let mut by_op: [[Vec<u64>; 3]; 2] = Default::default();
        for (r, round) in rounds.iter().enumerate() {
            let mut this: [Vec<u64>; 5] = Default::default();
            let mut this_op: [[Vec<u64>; 3]; 2] = Default::default();
            for (k, &(split, a, b, service, op)) in round.iter().enumerate() {
                let rec = &mut recs[k % 2];
                rec.set_op(op);
                let wait = if split {
                    let (queue, dispatch) = (a, if a == 0 { 0 } else { b });
                    rec.record_split(queue, dispatch, service);
                    let wait = queue.saturating_add(dispatch);
                    this[3].push(if wait == 0 { 0 } else { queue });
                    this[4].push(if wait == 0 { 0 } else { dispatch });
                    wait
                } else {
                    rec.record(a, service);
                    a
                };
                let response = wait.saturating_add(service);
                this[0].push(service);
                this[1].push(wait);
                this[2].push(response);
                if let Some(cell) = this_op.get_mut(op) {
                    cell[0].push(service);
                    cell[1].push(wait);
                    cell[2].push(response);
                }
            }
            let snap = metrics.snapshot((r as u64 + 1) * 1_000_000_000);
            prop_assert_eq!(snap.ops(), round.len() as u64);
            let read = [snap.service(), snap.wait(), snap.response(), snap.queue(), snap.dispatch()];
            for (l, values) in read.into_iter().zip(&this) {
                same(l, 3, values)?;
            }
            for (o, values) in snap.by_op().iter().zip(&this_op) {
                same(o.service(), 2, &values[0])?;
                same(o.wait(), 2, &values[1])?;
                same(o.response(), 2, &values[2])?;
            }
            for (mine, more) in all.iter_mut().zip(this) {
                mine.extend(more);
            }
            for (mine, more) in by_op.iter_mut().zip(this_op) {
                for (m, v) in mine.iter_mut().zip(more) {
                    m.extend(v);
                }
            }
            // The totals are merged histograms: read the old way, and equal.
            let t = metrics.totals();
            let read = [t.service(), t.wait(), t.response(), t.queue(), t.dispatch()];
            for (l, values) in read.into_iter().zip(&all) {
                same(l, 3, values)?;
            }
            for (o, values) in t.by_op().iter().zip(&by_op) {
                same(o.service(), 2, &values[0])?;
            }
        }
        // A snapshot after the last ops reads nothing, and leaves the totals.
        let empty = metrics.snapshot(100_000_000_000);
        prop_assert_eq!(empty.service().summary(), Summary::default());
        prop_assert_eq!(empty.queue().count(), 0);
        prop_assert_eq!(metrics.totals().response().count(), all[2].len() as u64);
    }
}

/// A recorder that leaves hands its unread ops over: the next snapshot reads
/// them, with the old figures.
#[test]
fn a_departed_recorders_ops_read_the_old_figures() {
    let metrics = Metrics::new(0);
    let mut stay = metrics.recorder();
    stay.record_split(0, 0, 70);
    {
        let mut gone = metrics.recorder();
        gone.record_split(3_000, 20, 1_000_000);
        gone.record(5, u64::MAX);
    }
    let s = metrics.snapshot(1);
    let old = |v: &[u64]| old_figures(&recorded(3, v));
    assert_eq!(s.service().summary(), old(&[70, 1_000_000, u64::MAX]));
    assert_eq!(s.queue().summary(), old(&[0, 3_000]));
    assert_eq!(s.dispatch().summary(), old(&[0, 20]));
    assert_eq!(s.wait().summary(), old(&[0, 3_020, 5]));
    let t = metrics.totals();
    assert_eq!(t.response().summary(), old(&[70, 1_003_020, u64::MAX]));
}
