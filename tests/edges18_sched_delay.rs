//! Audit p18 M2: "run-queue delay N per op" inflated by orders of magnitude on a
//! busy closed loop (15.9 ms per op for 4.9 M ops of 0.4 us, 78,000 s of delay in
//! a 2 s run on 2 threads). The figure never exceeds the threads' run-queue time
//! over the ops, times the ops one wait could have delayed.

use paceline::{Figures, judge};

const NANOS_PER_SEC: u64 = 1_000_000_000;

/// The audit's busy sync loop: 4.9 M ops in 2 s on two threads, 3.4 s of
/// run-queue delay over 340 runs (10 ms a wait).
fn busy_sync() -> Figures {
    Figures {
        ops: 4_900_000,
        threads: 2,
        elapsed_nanos: 2 * NANOS_PER_SEC,
        run_queue_nanos: Some(3_400_000_000),
        run_queue_runs: 340,
        ..Default::default()
    }
}

#[test]
fn a_busy_sync_loop_is_delayed_no_more_than_its_run_queue_time_over_its_ops() {
    let f = busy_sync();
    let d = f.scheduling_delay_per_op().unwrap();
    // Each wait lands in the one op its thread holds: 3.4 s / 4.9 M = 694 ns.
    assert!(d <= 3.4e9 / 4.9e6 + 1e-6, "{d}");
    assert!((d - 3.4e9 / 4.9e6).abs() < 1.0, "{d}");
    // The total can never exceed the threads' own run-queue time.
    assert!(d * f.ops as f64 <= 3.4e9 + 1.0);
}

#[test]
fn a_paced_sync_run_with_fast_ops_is_not_called_generator_bound_by_the_run_queue_rule() {
    // Paced at 2.5 M/s, a little late, ops of 0.4 us: 694 ns per op of delay is
    // above a tenth of the op times but under the rule's 50 us floor; the old
    // 8.5 ms figure made the run-queue rule fire.
    let f = Figures {
        target_rate: Some(2_500_000.0),
        achieved_rate: 2_450_000.0,
        service_mean: 400.0,
        service_max: 50_000,
        cpu_cores: Some(0.29),
        cpu_of_workers: true,
        machine_cores: 2,
        ..busy_sync()
    };
    let (_, reason) = judge(&f);
    assert!(!reason.contains("run-queue delay"), "{reason}");
}

#[test]
fn the_async_runner_keeps_the_term_for_answers_that_come_during_a_wait() {
    // 10K/s of 50 ms ops on two threads, 500 in flight: 3.46 s of run-queue
    // delay over 200K runs (17.3 us a wait) -> 34.6 us x (1 + 10K/s x 17.3 us / 2).
    let f = Figures {
        ops: 100_000,
        threads: 2,
        elapsed_nanos: 10 * NANOS_PER_SEC,
        concurrency: Some(1000),
        in_flight_max: Some(500),
        run_queue_nanos: Some(3_460_000_000),
        run_queue_runs: 200_000,
        ..Default::default()
    };
    let d = f.scheduling_delay_per_op().unwrap();
    assert!((d - 37_593.0).abs() < 10.0, "{d}");
}

#[test]
fn the_async_term_is_capped_by_the_ops_in_flight_per_thread() {
    // An async runner holding one op per thread, on a busy loop: a wait can
    // delay the one op its thread holds, not the 12,000 the term would say.
    let f = Figures {
        concurrency: Some(2),
        in_flight_max: Some(2),
        ..busy_sync()
    };
    let d = f.scheduling_delay_per_op().unwrap();
    assert!(d * f.ops as f64 <= 3.4e9 + 1.0, "{d}");
    // With 8 in flight per thread, at most 8 ops per wait.
    let f = Figures {
        concurrency: Some(64),
        in_flight_max: Some(16),
        ..busy_sync()
    };
    let d = f.scheduling_delay_per_op().unwrap();
    assert!(d * f.ops as f64 <= 8.0 * 3.4e9 + 1.0, "{d}");
    assert!(d * f.ops as f64 >= 8.0 * 3.4e9 - 1.0, "{d}");
}
