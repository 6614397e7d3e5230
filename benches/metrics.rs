//! The cost of recording one op: service, wait and response into per-thread
//! HdrHistograms plus the op counter, on the worker's own (uncontended) lock.

use criterion::{BatchSize, Criterion, Throughput};
use paceline::Metrics;
use std::hint::black_box;

/// One `record` (three bucket counts and the op count) on an idle hub.
pub fn record(c: &mut Criterion) {
    let mut g = c.benchmark_group("metrics");
    g.throughput(Throughput::Elements(1));
    let metrics = Metrics::new(0);
    let mut rec = metrics.recorder();
    let mut i = 0u64;
    g.bench_function("record", |b| {
        b.iter(|| {
            i = i.wrapping_add(1);
            // Spread values over a realistic range: waits 0-8 µs, services 20-150 µs.
            rec.record(black_box(i & 0x1fff), black_box(20_000 + (i & 0x1ffff)));
        })
    });
    let kind = metrics.error_kind("timeout");
    g.bench_function("record+error+retry", |b| {
        b.iter(|| {
            i = i.wrapping_add(1);
            rec.record(black_box(i & 0x1fff), black_box(20_000 + (i & 0x1ffff)));
            rec.error(kind);
            rec.retry();
        })
    });
    // A paced op: its wait split in queue and dispatch, two more bucket counts
    // when it was late (a quarter on time here).
    g.bench_function("record_split", |b| {
        b.iter(|| {
            i = i.wrapping_add(1);
            let dispatch = if i & 3 == 0 { 0 } else { i & 0x1fff };
            rec.record_split(
                black_box(0),
                black_box(dispatch),
                black_box(20_000 + (i & 0x1ffff)),
            );
        })
    });
    // The same op recorded under its op (an activity loaded from a file): the
    // op's own three 2-digit bucket counts besides the all-ops ones.
    let by_op = Metrics::with_ops(0, &["read", "write"]);
    let mut rec = by_op.recorder();
    g.bench_function("record_per_op", |b| {
        b.iter(|| {
            i = i.wrapping_add(1);
            rec.set_op(black_box((i & 1) as usize));
            rec.record(black_box(i & 0x1fff), black_box(20_000 + (i & 0x1ffff)));
        })
    });
    g.finish();
}

/// A snapshot of a hub with 8 recorders holding 10k ops each: the reader's cost.
pub fn snapshot(c: &mut Criterion) {
    let metrics = Metrics::new(0);
    let mut recs: Vec<_> = (0..8).map(|_| metrics.recorder()).collect();
    let mut now = 0;
    c.bench_function("metrics/snapshot_8x10k", |b| {
        b.iter_batched(
            || {
                for r in &mut recs {
                    for i in 0..10_000u64 {
                        r.record(i & 0xff, 20_000 + i);
                    }
                }
            },
            |()| {
                now += 1_000_000_000;
                black_box(metrics.snapshot(now))
            },
            BatchSize::PerIteration,
        )
    });
}

/// The command line's tick on a paced run: a snapshot of 2 recorders holding
/// 5k split ops each, then what the verdict and the report read (each
/// distribution's p50, p99, p99.9 and mean).
pub fn tick(c: &mut Criterion) {
    let metrics = Metrics::new(0);
    let mut recs: Vec<_> = (0..2).map(|_| metrics.recorder()).collect();
    let mut now = 0;
    c.bench_function("metrics/tick_2x5k_paced", |b| {
        b.iter_batched(
            || {
                for r in &mut recs {
                    for i in 0..5_000u64 {
                        let dispatch = if i & 3 == 0 { 0 } else { (i * 37) % 50_000 };
                        r.record_split(0, dispatch, 30_000 + (i * 7_919) % 1_970_000);
                    }
                }
            },
            |()| {
                now += 1_000_000_000;
                let s = metrics.snapshot(now);
                let mut sum = 0u64;
                for l in [s.service(), s.wait(), s.response(), s.queue(), s.dispatch()] {
                    sum = sum.wrapping_add(l.p50() ^ l.p99() ^ l.p999() ^ l.mean() as u64);
                }
                black_box(sum)
            },
            BatchSize::PerIteration,
        )
    });
}
