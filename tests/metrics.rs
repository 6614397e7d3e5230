//! Metrics: nothing lost under concurrent recording and snapshotting, correct
//! percentiles, a reader that never waits on an idle recorder, merge properties.

use paceline::{Event, Latencies, Metrics, Snapshot};
use proptest::prelude::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, mpsc};
use std::thread;
use std::time::Duration;

#[test]
fn concurrent_recording_and_snapshotting_loses_nothing() {
    let metrics = Metrics::new(0);
    let threads = 4;
    let per_thread = 50_000u64;
    let start = Arc::new(Barrier::new(threads + 1));
    let done = Arc::new(AtomicBool::new(false));
    let kind = metrics.error_kind("boom");
    let workers: Vec<_> = (0..threads)
        .map(|t| {
            let mut rec = metrics.recorder();
            let start = start.clone();
            thread::spawn(move || {
                start.wait();
                for i in 0..per_thread {
                    rec.record(i % 7, 100 + (i % 1000));
                    if i % 100 == 0 {
                        rec.error(kind);
                    }
                    if i % 250 == 0 {
                        rec.retry();
                    }
                }
                // Half the threads keep their recorder alive (idle), half drop it.
                if t % 2 == 0 { Some(rec) } else { None }
            })
        })
        .collect();
    let reader = {
        let metrics = metrics.clone();
        let done = done.clone();
        let start = start.clone();
        thread::spawn(move || {
            start.wait();
            let mut snaps = Vec::new();
            let mut now = 0;
            while !done.load(Ordering::Acquire) {
                now += 1_000;
                snaps.push(metrics.snapshot(now));
                thread::yield_now();
            }
            snaps
        })
    };
    let kept: Vec<_> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    done.store(true, Ordering::Release);
    let mut snaps = reader.join().unwrap();
    snaps.push(metrics.snapshot(u64::MAX / 2));
    assert!(
        snaps.len() > 1,
        "the reader took snapshots while workers ran"
    );

    let total = threads as u64 * per_thread;
    let ops: u64 = snaps.iter().map(Snapshot::ops).sum();
    let counts: u64 = snaps.iter().map(|s| s.service().count()).sum();
    let responses: u64 = snaps.iter().map(|s| s.response().count()).sum();
    let errors: u64 = snaps.iter().map(|s| s.errors_of("boom")).sum();
    let retries: u64 = snaps.iter().map(Snapshot::retries).sum();
    assert_eq!(ops, total);
    assert_eq!(counts, total);
    assert_eq!(responses, total);
    assert_eq!(errors, threads as u64 * per_thread.div_ceil(100));
    assert_eq!(retries, threads as u64 * per_thread.div_ceil(250));

    let totals = metrics.totals();
    assert_eq!(totals.ops(), total);
    assert_eq!(totals.wait().count(), total);
    assert_eq!(totals.service().max(), 1099);
    assert_eq!(totals.response().max(), 1105);
    assert_eq!(metrics.recorders(), kept.iter().flatten().count());
}

#[test]
fn a_dropped_recorder_hands_over_its_unread_data() {
    let metrics = Metrics::new(0);
    let mut a = metrics.recorder();
    let mut b = metrics.recorder();
    a.record(1, 1);
    b.record(2, 2);
    b.record(2, 2);
    drop(b);
    assert_eq!(metrics.recorders(), 1);
    let s = metrics.snapshot(10);
    assert_eq!(s.ops(), 3);
    assert_eq!(s.wait().max(), 2);
    drop(a);
    assert_eq!(metrics.snapshot(20).ops(), 0);
    assert_eq!(metrics.totals().ops(), 3);
}

#[test]
fn percentiles_on_known_data() {
    let metrics = Metrics::new(0);
    let mut rec = metrics.recorder();
    // service 1..=100_000 ns once each, wait a constant 500 ns.
    for v in 1..=100_000u64 {
        rec.record(500, v);
    }
    let s = metrics.snapshot(1_000_000_000);
    let svc = s.service();
    let near = |got: u64, want: u64| {
        let err = got.abs_diff(want) as f64 / want as f64;
        assert!(err <= 0.001, "got {got}, want {want} within 0.1 %");
    };
    near(svc.p50(), 50_000);
    near(svc.p90(), 90_000);
    near(svc.p99(), 99_000);
    near(svc.p999(), 99_900);
    near(svc.p9999(), 99_990);
    near(svc.max(), 100_000);
    assert_eq!(svc.min(), 1);
    assert!((svc.mean() - 50_000.5).abs() / 50_000.5 < 0.001);
    assert_eq!(s.wait().p50(), 500);
    assert_eq!(s.wait().max(), 500);
    near(s.response().p50(), 50_500);
    near(s.response().max(), 100_500);
    assert_eq!(s.rate(), 100_000.0);
}

#[test]
fn an_hour_long_value_is_recorded_within_three_digits() {
    let mut l = Latencies::new();
    let hour = 3_600_000_000_000u64;
    l.record(hour);
    l.record(1);
    assert!(l.max().abs_diff(hour) as f64 / (hour as f64) < 0.001);
    assert_eq!(l.min(), 1);
}

#[test]
fn reader_does_not_block_while_a_recorder_is_idle() {
    // A recorder records once and then sits idle, alive, forever (until the test
    // ends). HdrHistogram's SyncHistogram phasing would hang here (#120); our
    // reader must return promptly, many times over.
    let metrics = Metrics::new(0);
    let (parked_tx, parked_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let idle = {
        let mut rec = metrics.recorder();
        thread::spawn(move || {
            rec.record(1, 2);
            parked_tx.send(()).unwrap();
            let _ = release_rx.recv(); // idle, holding its recorder
            drop(rec);
        })
    };
    parked_rx.recv().unwrap();
    let (tx, rx) = mpsc::channel();
    let reader = {
        let metrics = metrics.clone();
        thread::spawn(move || {
            let mut ops = 0;
            for i in 1..=100 {
                ops += metrics.snapshot(i).ops();
            }
            tx.send(ops).unwrap();
        })
    };
    let ops = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the reader must not wait for an idle recorder");
    assert_eq!(ops, 1);
    reader.join().unwrap();
    release_tx.send(()).unwrap();
    idle.join().unwrap();
}

#[test]
fn timeline_reads_in_time_order() {
    let metrics = Metrics::new(0);
    metrics.mark(3, Event::Stopped);
    metrics.mark(1, Event::Started);
    metrics.mark(
        2,
        Event::Rate {
            from: 10.0,
            to: 20.0,
        },
    );
    metrics.mark(2, Event::Threads { from: 4, to: 8 });
    let events: Vec<_> = metrics.timeline().into_iter().map(|e| e.event).collect();
    assert_eq!(
        events,
        vec![
            Event::Started,
            Event::Rate {
                from: 10.0,
                to: 20.0
            },
            Event::Threads { from: 4, to: 8 },
            Event::Stopped
        ]
    );
    assert_eq!(metrics.timeline_since(3).len(), 1);
    assert!(metrics.timeline_since(9).is_empty());
}

fn snapshot_of(values: &[(u64, u64)], errors: u32, start: u64, end: u64) -> Snapshot {
    let metrics = Metrics::new(start);
    let mut rec = metrics.recorder();
    for &(w, s) in values {
        rec.record(w, s);
    }
    for i in 0..errors {
        rec.error_named(if i % 2 == 0 { "a" } else { "b" });
    }
    metrics.snapshot(end)
}

fn arb_snapshot() -> impl Strategy<Value = Snapshot> {
    (
        prop::collection::vec((0u64..1_000_000, 0u64..10_000_000), 0..50),
        0u32..5,
        0u64..1000,
        0u64..1000,
    )
        .prop_map(|(v, e, a, len)| snapshot_of(&v, e, a, a + len))
}

proptest! {
    #[test]
    fn merge_is_commutative_and_associative(a in arb_snapshot(), b in arb_snapshot(), c in arb_snapshot()) {
        let mut ab = a.clone();
        ab.merge(&b);
        let mut ba = b.clone();
        ba.merge(&a);
        prop_assert_eq!(&ab, &ba);
        let mut ab_c = ab.clone();
        ab_c.merge(&c);
        let mut bc = b.clone();
        bc.merge(&c);
        let mut a_bc = a.clone();
        a_bc.merge(&bc);
        prop_assert_eq!(&ab_c, &a_bc);
    }

    #[test]
    fn merge_adds_counts_and_keeps_extremes(a in arb_snapshot(), b in arb_snapshot()) {
        let mut m = a.clone();
        m.merge(&b);
        prop_assert_eq!(m.ops(), a.ops() + b.ops());
        prop_assert_eq!(m.service().count(), a.service().count() + b.service().count());
        prop_assert_eq!(m.error_count(), a.error_count() + b.error_count());
        prop_assert_eq!(m.errors_of("a"), a.errors_of("a") + b.errors_of("a"));
        prop_assert_eq!(m.response().max(), a.response().max().max(b.response().max()));
        let mins: Vec<u64> = [&a, &b].iter().filter(|s| s.wait().count() > 0).map(|s| s.wait().min()).collect();
        prop_assert_eq!(m.wait().min(), mins.into_iter().min().unwrap_or(0));
        prop_assert_eq!(m.start(), a.start().min(b.start()));
        prop_assert_eq!(m.end(), a.end().max(b.end()));
    }

    #[test]
    fn merging_an_empty_snapshot_changes_only_the_span(a in arb_snapshot()) {
        let mut m = a.clone();
        m.merge(&Snapshot::empty(a.start(), a.end()));
        prop_assert_eq!(m, a);
    }
}

/// On-time ops (no wait) are counted, not recorded, in the queue and dispatch
/// distributions, and show there as zeros in every snapshot and in the totals.
#[test]
fn on_time_ops_are_zeros_in_the_queue_and_dispatch_distributions() {
    let metrics = paceline::Metrics::new(0);
    let mut rec = metrics.recorder();
    for _ in 0..3 {
        rec.record_split(0, 0, 5);
    }
    rec.record_split(10, 4, 5);
    let first = metrics.snapshot(1);
    assert_eq!(first.queue().count(), 4);
    assert_eq!(first.dispatch().count(), 4);
    assert_eq!((first.queue().p50(), first.queue().max()), (0, 10));
    assert_eq!((first.dispatch().p50(), first.dispatch().max()), (0, 4));
    rec.record_split(0, 0, 5);
    let second = metrics.snapshot(2);
    assert_eq!((second.queue().count(), second.queue().max()), (1, 0));
    let totals = metrics.totals();
    assert_eq!(totals.queue().count(), 5);
    assert_eq!(totals.dispatch().count(), 5);
    assert_eq!(totals.wait().count(), 5);
}
