//! Thread changes: every cycle runs exactly once through `set_threads` (growing,
//! shrinking, racing the end of the input), retired workers leave without an op
//! more, and a large change never stalls status reads.

use crate::workloads::{LONG, Recording, Script, Takes};
use paceline::{ActivityConfig, Engine, ErrorAction, ErrorPolicy, Outcome, RateSpec, RunState};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[test]
fn every_cycle_runs_once_through_thread_changes_pause_and_a_partial_last_stride() {
    let work = Recording::default();
    let (at_8, go_8) = work.hook(1_000);
    let (at_pause, go_pause) = work.hook(40_000);
    let (at_2, go_2) = work.hook(70_000);
    let engine = Engine::new();
    // 100_003 cycles in strides of 7: the last stride holds 3.
    let run = engine
        .start(
            ActivityConfig::new("once")
                .cycles(5..100_008)
                .stride(7)
                .threads(1)
                .errors(ErrorPolicy::new(0, ErrorAction::Stop)),
            work.clone(),
        )
        .unwrap();

    at_8.recv_timeout(LONG).unwrap();
    run.set_threads(8).unwrap();
    go_8.send(()).unwrap();

    at_pause.recv_timeout(LONG).unwrap();
    run.pause().unwrap();
    go_pause.send(()).unwrap();
    // Paused: progress stops after each worker's current op (on a busy machine
    // a worker can finish its op well after 50 ms: wait until it settles).
    let mut held = run.status().completed;
    for _ in 0..100 {
        std::thread::sleep(Duration::from_millis(250));
        let now = run.status().completed;
        if now == held {
            break;
        }
        held = now;
    }
    std::thread::sleep(Duration::from_millis(250));
    assert_eq!(run.status().completed, held);
    assert_eq!(run.status().state, RunState::Paused);
    // A snapshot never waits on an idle worker.
    let _ = run.snapshot();
    run.resume().unwrap();

    at_2.recv_timeout(LONG).unwrap();
    run.set_threads(2).unwrap();
    go_2.send(()).unwrap();

    assert_eq!(run.wait(), Outcome::Completed);
    assert_eq!(work.sorted(), (5..100_008).collect::<Vec<u64>>());
    let s = run.status();
    assert_eq!((s.completed, s.threads, s.live_threads), (100_003, 2, 0));
    let events: Vec<String> = run.timeline().iter().map(|e| e.event.to_string()).collect();
    assert_eq!(
        events,
        [
            "started",
            "threads 1 -> 8",
            // An unpaced schedule's rate (audit p16, L9: it read `inf`).
            "rate unpaced -> 0",
            "paused",
            "rate 0 -> unpaced",
            "resumed",
            "threads 8 -> 2",
            "stopped"
        ]
    );
    run.snapshot();
    assert_eq!(run.totals().ops(), 100_003);
}

#[test]
fn shrinking_to_one_thread_while_the_others_hold_strides_loses_nothing() {
    for round in 0..20 {
        let work = Recording::default();
        let run = Engine::new()
            .start(
                ActivityConfig::new("shrink")
                    .cycles(0..20_000)
                    .stride(100)
                    .threads(8),
                work.clone(),
            )
            .unwrap();
        std::thread::sleep(Duration::from_micros(200 * round));
        let _ = run.set_threads(1);
        let _ = run.set_threads(3);
        let _ = run.set_threads(1);
        assert_eq!(run.wait(), Outcome::Completed);
        assert_eq!(
            work.sorted(),
            (0..20_000).collect::<Vec<u64>>(),
            "round {round}"
        );
    }
}

/// Issue 18.7: a thread change racing the end of a run never starts a worker
/// that outlives `wait`.
#[test]
fn set_threads_racing_the_end_never_leaves_a_worker_behind() {
    for _ in 0..300 {
        let work = Script::new(|_, _| Ok(()));
        let run = Engine::new()
            .start(ActivityConfig::new("race").cycles(0..2), work.clone())
            .unwrap();
        let hammer = {
            let run = run.clone();
            std::thread::spawn(move || {
                let mut n = 1;
                while run.set_threads(1 + n % 3).is_ok() {
                    n += 1;
                }
            })
        };
        // A client that keeps changing the thread count cannot keep the run from
        // finishing (it did: new motors kept starting after the input ran dry).
        assert_eq!(
            run.wait_timeout(Duration::from_secs(60)),
            Some(Outcome::Completed),
            "the run did not finish while its thread count was changed"
        );
        hammer.join().unwrap();
        // Every runner made was finished before `wait` returned.
        let (made, finished) = (*work.made.lock().unwrap(), *work.finished.lock().unwrap());
        assert_eq!(made, finished);
        assert_eq!(run.status().live_threads, 0);
    }
}

/// Issue 18.9: a worker retired while it waits for a slot (here across a pause)
/// leaves when it gets the slot, without running one more op; its cycle is run
/// by a worker that stays.
#[test]
fn a_worker_retired_while_waiting_for_a_slot_runs_no_more_ops() {
    let ran: Arc<Mutex<Vec<(usize, u64, Instant)>>> = Arc::default();
    let work = {
        let ran = ran.clone();
        Script::new(move |ctx, cycle| {
            ran.lock()
                .unwrap()
                .push((ctx.index(), cycle, Instant::now()));
            Ok(())
        })
    };
    // 2/s: one worker runs slot 0; the other waits 500 ms for slot 1. Four
    // cycles, so the worker that stays has one left when the other wakes.
    let run = Engine::new()
        .start(
            ActivityConfig::new("retire")
                .cycles(0..4)
                .threads(2)
                .rate(RateSpec::new(2.0)),
            work,
        )
        .unwrap();
    std::thread::sleep(Duration::from_millis(100));
    run.pause().unwrap();
    let retired_at = Instant::now();
    run.set_threads(1).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    run.resume().unwrap();
    assert_eq!(run.wait_timeout(LONG), Some(Outcome::Completed));
    let ran = ran.lock().unwrap().clone();
    let mut cycles: Vec<u64> = ran.iter().map(|r| r.1).collect();
    cycles.sort_unstable();
    assert_eq!(cycles, [0, 1, 2, 3]);
    let late: Vec<_> = ran
        .iter()
        .filter(|(worker, _, at)| *worker == 1 && *at > retired_at)
        .collect();
    assert!(late.is_empty(), "the retired worker ran {late:?}");
}

/// Issue 18.10: a large thread change starts its threads outside the motors lock,
/// so status reads (and the report loop) are not held up behind it.
#[test]
fn a_large_thread_change_does_not_stall_status_reads() {
    let run = Engine::new()
        .start(
            ActivityConfig::new("wide").cycles(0..1_000_000_000),
            Takes(Duration::from_micros(100)),
        )
        .unwrap();
    run.pause().unwrap();
    let grow = {
        let run = run.clone();
        std::thread::spawn(move || {
            let t0 = Instant::now();
            run.set_threads(1500).unwrap();
            t0.elapsed()
        })
    };
    let mut slowest = Duration::ZERO;
    while !grow.is_finished() {
        let t0 = Instant::now();
        let _ = run.status();
        slowest = slowest.max(t0.elapsed());
    }
    let took = grow.join().unwrap();
    assert_eq!(run.status().threads, 1500);
    run.stop();
    assert_eq!(run.wait_timeout(LONG), Some(Outcome::Stopped));
    assert!(
        slowest < took / 4,
        "a status read waited {slowest:?} while starting 1500 threads took {took:?}"
    );
}

/// A thread change after every cycle was handed out starts no worker: it would find
/// nothing to do. (Workers started then kept a run whose thread count a client kept
/// changing from ever finishing.)
#[test]
fn more_threads_after_the_input_ran_dry_start_no_worker() {
    let work = Script::new(|_, _| {
        std::thread::sleep(Duration::from_millis(200));
        Ok(())
    });
    let run = Engine::new()
        .start(ActivityConfig::new("dry").cycles(0..1), work.clone())
        .unwrap();
    // The one worker took the one cycle and is in its op.
    let t0 = std::time::Instant::now();
    while *work.made.lock().unwrap() == 0 && t0.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(20));
    run.set_threads(4).unwrap();
    std::thread::sleep(Duration::from_millis(50)); // a started worker builds its runner
    assert_eq!(
        *work.made.lock().unwrap(),
        1,
        "no worker started for a dry input"
    );
    assert_eq!(run.wait(), Outcome::Completed);
    assert_eq!(run.snapshot().ops(), 1);
}
