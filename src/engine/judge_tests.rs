//! The verdict's rules, one test each, on exact numbers.

use super::*;
use crate::engine::rates::mean_target_rate;
use crate::engine::verdict::{Spread, Verdict};
use crate::metrics::{Event, Throttling, TimelineEntry};

/// A 10 s window at 1000/s on 2 threads of a 4-core machine: 2 ms ops, on time.
fn base() -> Figures {
    Figures {
        target_rate: Some(1000.0),
        achieved_rate: 1000.0,
        elapsed_nanos: 10 * NANOS_PER_SEC,
        ops: 10_000,
        threads: 4,
        service_mean: 2_000_000.0,
        service_max: 2_500_000,
        wait_p99: 60_000,
        queue_mean: 0.0,
        queue_p99: 0,
        dispatch_mean: 30_000.0,
        dispatch_p99: 60_000,
        cpu_cores: Some(0.2),
        machine_cores: 4,
        concurrency: None,
        cap_full_share: None,
        run_queue_nanos: None,
        run_queue_runs: 0,
        source_outage_nanos: None,
        throttling: None,
    }
}

#[test]
fn no_target_is_unpaced() {
    let f = Figures {
        target_rate: None,
        achieved_rate: 5000.0,
        service_mean: 200_000.0,
        threads: 1,
        ..base()
    };
    assert_eq!(
        judge(&f),
        (
            VerdictKind::Unpaced,
            // Issue 24, item 9: the kind is not repeated ("unpaced: unpaced: ...").
            "5000/s from 1 thread; ops take 200 µs on average, 1.0 busy at once".to_string()
        )
    );
}

#[test]
fn paused_is_on_schedule() {
    let f = Figures {
        target_rate: Some(0.0),
        ops: 0,
        achieved_rate: 0.0,
        ..base()
    };
    assert_eq!(judge(&f).0, VerdictKind::OnSchedule);
}

#[test]
fn a_kept_rate_with_waits_under_the_bound_is_on_schedule() {
    assert_eq!(
        judge(&base()),
        (
            VerdictKind::OnSchedule,
            "achieved 1000/s of 1000/s; wait p99 60.0 µs is under the 1.00 ms bound; ops take \
             2.00 ms on average, 2.0 of 4 threads busy"
                .to_string()
        )
    );
}

#[test]
fn the_rate_tolerance_is_one_percent_or_the_ops_in_flight_at_the_edges() {
    // 1 % of 1000/s over 10 s: 990 passes, 989 does not.
    let f = Figures {
        achieved_rate: 990.0,
        ..base()
    };
    assert_eq!(judge(&f).0, VerdictKind::OnSchedule);
    let f = Figures {
        achieved_rate: 989.0,
        ..base()
    };
    assert_ne!(judge(&f).0, VerdictKind::OnSchedule);
    // 1 % above counts as kept too.
    let f = Figures {
        achieved_rate: 1010.0,
        ..base()
    };
    assert_eq!(judge(&f).0, VerdictKind::OnSchedule);
    // 50/s over 1 s on 4 threads: five ops (5/s) of slack, more than 1 % (0.5/s).
    let f = Figures {
        target_rate: Some(50.0),
        achieved_rate: 45.0,
        elapsed_nanos: NANOS_PER_SEC,
        ..base()
    };
    assert_eq!(judge(&f).0, VerdictKind::OnSchedule);
    let f = Figures {
        achieved_rate: 44.9,
        ..f
    };
    assert_ne!(judge(&f).0, VerdictKind::OnSchedule);
}

#[test]
fn the_wait_bound_is_one_slot_or_one_millisecond() {
    // At 1000/s the bound is 1 ms: 1.0 ms passes, 1.001 ms does not.
    let f = Figures {
        wait_p99: 1_000_000,
        ..base()
    };
    assert_eq!(judge(&f).0, VerdictKind::OnSchedule);
    let f = Figures {
        wait_p99: 1_001_000,
        dispatch_mean: 900_000.0,
        ..base()
    };
    assert_eq!(judge(&f).0, VerdictKind::GeneratorBound);
    // At 100/s one slot is 10 ms.
    let f = Figures {
        target_rate: Some(100.0),
        achieved_rate: 100.0,
        wait_p99: 9_000_000,
        ..base()
    };
    assert_eq!(judge(&f).0, VerdictKind::OnSchedule);
}

#[test]
fn too_few_threads_is_system_bound_with_the_threads_to_raise_to() {
    let f = Figures {
        achieved_rate: 500.0,
        threads: 1,
        wait_p99: 4_900_000_000,
        queue_mean: 2_500_000_000.0,
        queue_p99: 4_900_000_000,
        dispatch_mean: 20_000.0,
        ..base()
    };
    assert_eq!(
        judge(&f),
        (
            VerdictKind::SystemBound,
            "ops take 2.00 ms on average; 1000/s needs 2.0 threads, the run had 1: raise \
             threads to 3 (achieved 500/s of 1000/s, queueing p99 4.90 s)"
                .to_string()
        )
    );
}

#[test]
fn the_thread_advice_is_at_least_one_more_than_the_run_had() {
    // 0.9 threads needed (1.25 x 0.9 rounds up to 2), the run had 1, yet it fell short.
    let f = Figures {
        achieved_rate: 900.0,
        threads: 1,
        service_mean: 900_000.0,
        wait_p99: 50_000_000,
        queue_mean: 20_000_000.0,
        queue_p99: 50_000_000,
        ..base()
    };
    let (kind, reason) = judge(&f);
    assert_eq!(kind, VerdictKind::SystemBound);
    assert!(reason.contains("raise threads to 2"), "{reason}");
}

#[test]
fn nearly_all_cores_used_is_generator_bound() {
    let f = Figures {
        achieved_rate: 800.0,
        wait_p99: 30_000_000,
        queue_mean: 10_000_000.0,
        queue_p99: 30_000_000,
        cpu_cores: Some(1.9),
        machine_cores: 2,
        ..base()
    };
    assert_eq!(
        judge(&f),
        (
            VerdictKind::GeneratorBound,
            "the generator used 1.90 of 2 cores: run fewer threads or more processes (achieved \
             800/s of 1000/s, wait p99 30.0 ms)"
                .to_string()
        )
    );
    // 1.7 of 2 (85 %) is under the 90 % line: the queueing decides.
    let f = Figures {
        cpu_cores: Some(1.7),
        ..f
    };
    assert_eq!(judge(&f).0, VerdictKind::SystemBound);
}

#[test]
fn lateness_that_is_mostly_dispatch_is_generator_bound() {
    let f = Figures {
        wait_p99: 5_000_000,
        queue_mean: 100_000.0,
        queue_p99: 300_000,
        dispatch_mean: 1_500_000.0,
        dispatch_p99: 4_800_000,
        cpu_cores: None,
        ..base()
    };
    assert_eq!(
        judge(&f),
        (
            VerdictKind::GeneratorBound,
            // Issue 24, item 9: the means the rule compared, not p99s.
            "ops started late with a worker free (dispatch 1.50 ms on average, queueing 100 \
             µs): the generator's sleeps overshoot or it is short of CPU (it used an unknown share \
             of the machine's cores); free CPU on this machine or try `--waiting spin_sleep` \
             (achieved 1000/s of 1000/s)"
                .to_string()
        )
    );
}

#[test]
fn a_stall_paid_off_at_the_rate_is_system_bound() {
    // The coordinated-omission demo: the rate was kept, a 1 s stall queued the rest.
    let f = Figures {
        achieved_rate: 999.9,
        service_mean: 300_000.0,
        service_max: 1_003_000_000,
        wait_p99: 985_000_000,
        queue_mean: 270_000_000.0,
        queue_p99: 985_000_000,
        dispatch_mean: 2_500_000.0,
        ..base()
    };
    assert_eq!(
        judge(&f),
        (
            VerdictKind::SystemBound,
            "achieved 1000/s of 1000/s, but ops took up to 1.00 s and the ops behind them \
             queued (queueing p99 985 ms): the system under test stalled, not the generator"
                .to_string()
        )
    );
}

#[test]
fn a_stall_whose_backlog_was_not_paid_off_is_system_bound() {
    // Short of the rate, the generator's per-op time (the pacer holding a capped
    // catch-up) above the mean op, but the longest op explains the queue.
    let f = Figures {
        achieved_rate: 870.0,
        service_mean: 380_000.0,
        service_max: 500_000_000,
        wait_p99: 480_000_000,
        queue_mean: 200_000_000.0,
        queue_p99: 480_000_000,
        dispatch_mean: 1_800_000.0,
        ..base()
    };
    let (kind, reason) = judge(&f);
    assert_eq!(kind, VerdictKind::SystemBound);
    assert!(
        reason.starts_with("achieved 870/s of 1000/s: ops took up to 500 ms"),
        "{reason}"
    );
}

#[test]
fn a_generator_that_cannot_issue_the_rate_is_generator_bound() {
    // 10M/s asked of one thread; each op costs the generator 900 ns beside 100 ns.
    let f = Figures {
        target_rate: Some(10_000_000.0),
        achieved_rate: 1_000_000.0,
        threads: 1,
        service_mean: 100.0,
        service_max: 3_000_000,
        wait_p99: 1_800_000_000,
        queue_mean: 900_000_000.0,
        queue_p99: 1_800_000_000,
        dispatch_mean: 900.0,
        dispatch_p99: 2_000,
        cpu_cores: Some(1.0),
        machine_cores: 2,
        ..base()
    };
    assert_eq!(
        judge(&f),
        (
            VerdictKind::GeneratorBound,
            "each op costs the generator 900 ns (its pacing, sleeps and recording) beside the \
             op's own 100 ns: at that cost 1 thread can issue about 1.00M/s (achieved 1.00M/s \
             of 10.00M/s); run more threads or more processes, or a release build"
                .to_string()
        )
    );
}

/// Regression (issue 24, item 9): "8 threads can issue about 83.6K/s" at a
/// 35.5K/s target, then generator-bound. When the threads could issue the rate
/// at the ops' cost, the sentence says the generator lost time between ops.
#[test]
fn a_generator_that_could_issue_the_rate_but_fell_short_says_so() {
    let f = Figures {
        target_rate: Some(35_500.0),
        achieved_rate: 20_000.0,
        threads: 8,
        service_mean: 40_000.0,
        service_max: 200_000,
        wait_p99: 1_800_000_000,
        queue_mean: 900_000_000.0,
        queue_p99: 1_800_000_000,
        dispatch_mean: 55_700.0,
        dispatch_p99: 200_000,
        cpu_cores: Some(1.0),
        machine_cores: 2,
        ..base()
    };
    let (kind, reason) = judge(&f);
    assert_eq!(kind, VerdictKind::GeneratorBound);
    assert!(!reason.contains("can issue"), "{reason}");
    assert!(
        reason.starts_with(
            "ops take 40.0 µs and cost the generator 55.7 µs each, so 8 threads could issue \
             about 83.6K/s, yet the run fell short (achieved 20.0K/s of 35.5K/s)"
        ),
        "{reason}"
    );
}

#[test]
fn no_op_finished_is_system_bound() {
    let f = Figures {
        achieved_rate: 0.0,
        ops: 0,
        elapsed_nanos: NANOS_PER_SEC,
        service_mean: 0.0,
        wait_p99: 0,
        dispatch_mean: 0.0,
        ..base()
    };
    assert_eq!(
        judge(&f),
        (
            VerdictKind::SystemBound,
            "no op finished in 1.00 s: the ops in flight took longer than that (the system \
             under test stalled)"
                .to_string()
        )
    );
}

#[test]
fn a_verdict_carries_its_figures() {
    let f = Figures {
        achieved_rate: 500.0,
        threads: 1,
        ..base()
    };
    let q = Spread {
        min: 1,
        p50: 2,
        p99: 3,
        max: 4,
    };
    let v = Verdict::from_figures(&f, q, Spread::default());
    assert_eq!(
        (v.queue, v.threads, v.machine_cores, v.wait_bound),
        (q, 1, 4, 1_000_000)
    );
    assert_eq!(v.concurrency_needed, 1.0);
    assert_eq!(v.generator_cpu_cores, Some(0.2));
    assert!(v.to_string().starts_with(v.kind.as_str()));
}

#[test]
fn durations_and_rates_read_with_three_figures() {
    assert_eq!(ns(850.0), "850 ns");
    assert_eq!(ns(45_000.0), "45.0 µs");
    assert_eq!(ns(2_000_000.0), "2.00 ms");
    assert_eq!(ns(123_456_789.0), "123 ms");
    assert_eq!(ns(1_000_000_000.0), "1.00 s");
    assert_eq!(rate(2.5), "2.5/s");
    assert_eq!(rate(999.6), "1000/s");
    assert_eq!(rate(1_200_000.0), "1.20M/s");
    assert_eq!(rate(391_017.0), "391.0K/s");
    assert_eq!(rate(9_999.0), "9999/s");
}

#[test]
fn slow_ops_with_threads_to_spare_on_average_are_system_bound() {
    // 4 threads, 2 ms on average (2 of 4 threads busy), but ops of up to 10 ms
    // queue the rest for 100 ms at p99: not a capacity shortage, not one stall.
    let f = Figures {
        achieved_rate: 950.0,
        service_max: 10_000_000,
        wait_p99: 100_000_000,
        queue_mean: 40_000_000.0,
        queue_p99: 100_000_000,
        ..base()
    };
    assert_eq!(
        judge(&f),
        (
            VerdictKind::SystemBound,
            "ops take 2.00 ms on average but up to 10.0 ms, and the ops behind the slow ones \
             queued (queueing p99 100 ms): raise threads to 5 to absorb them (2 of 4 were busy \
             on average: the bursts of slow ops, not the mean, need more) (achieved 950/s of \
             1000/s)"
                .to_string()
        )
    );
}

#[test]
fn a_stall_inside_an_interval_is_named_a_stall_not_a_thread_shortage() {
    // One thread at 500/s, 100 µs ops and one 500 ms stall in the interval: the
    // mean service (0.6 ms, 0.3 threads) does not ask for more threads.
    let f = Figures {
        target_rate: Some(500.0),
        achieved_rate: 272.0,
        elapsed_nanos: NANOS_PER_SEC,
        ops: 272,
        threads: 1,
        service_mean: 2_050_000.0,
        service_max: 500_000_000,
        wait_p99: 498_000_000,
        queue_mean: 300_000_000.0,
        queue_p99: 496_000_000,
        dispatch_mean: 400_000.0,
        ..base()
    };
    let (kind, reason) = judge(&f);
    assert_eq!(kind, VerdictKind::SystemBound);
    assert!(
        reason.starts_with("ops take 2.05 ms on average; 500/s needs 1.0 threads"),
        "rule 7 comes first when the ops fill the thread: {reason}"
    );
    let f = Figures {
        service_mean: 600_000.0,
        ..f
    };
    let (kind, reason) = judge(&f);
    assert_eq!(kind, VerdictKind::SystemBound);
    assert!(
        reason.starts_with("achieved 272/s of 500/s: ops took up to 500 ms"),
        "{reason}"
    );
}

/// Regression: 30 ns ops at 20K/s on one thread kept the rate, but one stall of the
/// process (7 ms between two ops) left 7 ms of queueing at p99 behind it, and the
/// verdict said "the system under test stalled" although no op took more than
/// 23 µs. The queueing came from the generator's late start.
#[test]
fn a_kept_rate_with_queueing_behind_a_generator_stall_is_generator_bound() {
    let f = Figures {
        target_rate: Some(20_000.0),
        achieved_rate: 20_000.0,
        elapsed_nanos: 5 * NANOS_PER_SEC,
        ops: 100_000,
        threads: 1,
        service_mean: 30.0,
        service_max: 22_800,
        wait_p99: 7_630_000,
        queue_mean: 200_000.0,
        queue_p99: 7_580_000,
        dispatch_mean: 1_500.0,
        dispatch_p99: 60_000,
        cpu_cores: Some(0.3),
        machine_cores: 2,
        concurrency: None,
        cap_full_share: None,
        run_queue_nanos: None,
        run_queue_runs: 0,
        source_outage_nanos: None,
        throttling: None,
    };
    assert_eq!(
        judge(&f),
        (
            VerdictKind::GeneratorBound,
            "achieved 20.0K/s of 20.0K/s, but ops queued behind late starts (queueing p99 \
             7.58 ms) while no op took more than 22.8 µs: the generator fell behind (a \
             sleep that overshot, the process descheduled; it used 0.30 of 2 cores) and the \
             ops behind it caught up"
                .to_string()
        )
    );
    // Slow ops that queue the others at a kept rate are still the system's.
    let f = Figures {
        service_mean: 2_000.0,
        ..f
    };
    assert_eq!(judge(&f).0, VerdictKind::SystemBound);
}

/// Regression: a run that ramped and paused was judged against the rate in force at
/// its end, so it read as short of the rate ("generator-bound" in the HTML report's
/// demo: 2658/s of 3000/s) although every op started on time.
#[test]
fn a_run_is_judged_against_the_mean_rate_its_schedule_asked_for() {
    const S: u64 = NANOS_PER_SEC;
    let entry = |at, event| TimelineEntry { at, event };
    // 2 s at 2000, a ramp to 4000 over 2 s cut short at 1 s by a change to 3000,
    // a 1 s pause, 2 s at 3000; events before the window and after it count only
    // inside it.
    let timeline = [
        entry(0, Event::Started),
        entry(
            2 * S,
            Event::Ramp {
                to: 4000.0,
                over: 2 * S,
            },
        ),
        entry(
            3 * S,
            Event::Rate {
                from: 3000.0,
                to: 3000.0,
            },
        ),
        entry(
            4 * S,
            Event::Rate {
                from: 3000.0,
                to: 0.0,
            },
        ),
        entry(
            5 * S,
            Event::Rate {
                from: 0.0,
                to: 3000.0,
            },
        ),
        entry(
            9 * S,
            Event::Rate {
                from: 3000.0,
                to: 50.0,
            },
        ),
    ];
    // 2 x 2000 + (2000 + 3000) / 2 + 3000 + 0 + 2 x 3000 = 15500 over 7 s
    let mean = mean_target_rate(2000.0, &timeline, 0, 7 * S);
    assert!((mean - 15_500.0 / 7.0).abs() < 1e-9, "{mean}");
    assert_eq!(mean_target_rate(2000.0, &timeline, 5 * S, 7 * S), 3000.0);
    assert_eq!(mean_target_rate(2000.0, &[], 0, 0), 2000.0);
}

#[test]
fn regression_thread_advice_never_asks_for_more_threads_than_the_figures_need() {
    // The issue-21 run: 30K/s, 50 ms ops, 2000 threads; 1183 busy on average was
    // what its own figures said, and the verdict said "raise threads to 2001".
    let f = Figures {
        target_rate: Some(30_000.0),
        achieved_rate: 23_400.0,
        threads: 2000,
        ops: 234_000,
        service_mean: 50_500_000.0,
        service_max: 400_000_000,
        wait_p99: 900_000_000,
        queue_mean: 300_000_000.0,
        queue_p99: 900_000_000,
        dispatch_mean: 1_000_000.0,
        dispatch_p99: 5_000_000,
        cpu_cores: Some(1.6),
        machine_cores: 2,
        ..base()
    };
    let (_, reason) = judge(&f);
    assert!(!reason.contains("raise threads to 2001"), "{reason}");
    assert!(
        reason.contains("raise threads to 2500 to absorb them (1515 of 2000 were busy"),
        "{reason}"
    );
}

#[test]
fn the_in_flight_cap_is_its_own_verdict_and_advice() {
    // 10K/s of 50 ms ops need 500 in flight; the cap was 400.
    let f = Figures {
        target_rate: Some(10_000.0),
        achieved_rate: 8_000.0,
        threads: 2,
        ops: 80_000,
        service_mean: 50_000_000.0,
        service_max: 51_000_000,
        wait_p99: 2_000_000_000,
        queue_mean: 900_000_000.0,
        queue_p99: 2_000_000_000,
        dispatch_mean: 20_000.0,
        dispatch_p99: 80_000,
        cpu_cores: Some(0.3),
        machine_cores: 2,
        concurrency: Some(400),
        cap_full_share: Some(0.98),
        ..base()
    };
    let (kind, reason) = judge(&f);
    assert_eq!(kind, VerdictKind::ConcurrencyBound);
    assert!(
        reason.starts_with("the in-flight cap was the limit: ops take 50.0 ms on average (up to 51.0 ms); 10.0K/s needs 500 in flight, the cap was 400, at the cap 98 % of the time: raise concurrency to 625"),
        "{reason}"
    );
    assert_eq!(VerdictKind::parse("concurrency-bound"), Some(kind));
}

#[test]
fn the_generators_own_run_queue_delay_is_never_blamed_on_the_server() {
    // 600 threads on 2 cores, 50 ms answers: the ops' times hold 8 ms per op of
    // the generator's threads waiting for a CPU. Without the measure this read
    // as "the system under test stalled".
    let stalled = Figures {
        target_rate: Some(10_000.0),
        achieved_rate: 10_000.0,
        threads: 600,
        ops: 100_000,
        service_mean: 58_000_000.0,
        service_max: 300_000_000,
        wait_p99: 250_000_000,
        queue_mean: 20_000_000.0,
        queue_p99: 250_000_000,
        dispatch_mean: 100_000.0,
        dispatch_p99: 1_000_000,
        cpu_cores: Some(1.5),
        machine_cores: 2,
        ..base()
    };
    assert_eq!(judge(&stalled).0, VerdictKind::SystemBound);
    let measured = Figures {
        run_queue_nanos: Some(800_000_000_000),
        ..stalled
    };
    let (kind, reason) = judge(&measured);
    assert_eq!(kind, VerdictKind::GeneratorBound);
    assert!(
        reason.starts_with("the generator's threads waited 8.00 ms per op for a CPU"),
        "{reason}"
    );
    // A small run-queue delay (a quiet machine) blames nobody new.
    let quiet = Figures {
        run_queue_nanos: Some(1_000_000),
        ..stalled
    };
    assert_eq!(judge(&quiet).0, VerdictKind::SystemBound);
}

/// Regression (issue 21's done-when run: "run-queue delay 8.54 ms per op" for
/// 100K ops in 10 s on two threads, 854 s of delay in 20 s of thread time): the
/// delay was multiplied by the ops each thread held in flight, as if a thread
/// waiting for a CPU delayed all of them. An op waiting on its server is
/// delayed only if its answer comes during the wait: per op it is about the
/// delay over the ops, plus what the events that come during each wait add.
#[test]
fn the_run_queue_delay_per_op_is_not_multiplied_by_the_ops_in_flight() {
    let f = Figures {
        target_rate: Some(10_000.0),
        achieved_rate: 9_880.0,
        elapsed_nanos: 10 * NANOS_PER_SEC,
        threads: 2,
        ops: 100_000,
        service_mean: 50_000_000.0,
        service_max: 69_700_000,
        wait_p99: 51_300_000,
        queue_mean: 2_910_000.0,
        queue_p99: 51_200_000,
        dispatch_mean: 56_600.0,
        dispatch_p99: 471_000,
        cpu_cores: Some(0.78),
        machine_cores: 2,
        concurrency: Some(1000),
        cap_full_share: Some(0.0),
        // 3.46 s of run-queue delay over 200K runs of the two workers: 17.3 us
        // a wait, with 10K op events a second on each thread.
        run_queue_nanos: Some(3_460_000_000),
        run_queue_runs: 200_000,
        ..base()
    };
    let d = f.scheduling_delay_per_op().unwrap();
    // 34.6 us x (1 + 10K/s x 17.3 us / 2) = 37.6 us, not 8.54 ms.
    assert!((d - 37_593.0).abs() < 10.0, "{d}");
    assert!(d * f.ops as f64 <= 2.0 * 10.0 * NANOS_PER_SEC as f64);
    let (_, reason) = judge(&f);
    assert!(!reason.contains("run-queue delay"), "{reason}");
    // Without the runs, the per-run term is left out: the delay over the ops.
    let unknown = Figures {
        run_queue_runs: 0,
        ..f
    };
    assert_eq!(unknown.scheduling_delay_per_op(), Some(34_600.0));
}

#[test]
fn a_cap_that_cannot_hold_the_slowest_ordinary_ops_is_concurrency_bound_and_a_stall_is_not() {
    // 2000/s of 51 ms ops (up to 61 ms) under a cap of 120: 102 in flight on
    // average, 122 at the slowest: queueing at the cap, no stall.
    let f = Figures {
        target_rate: Some(2000.0),
        achieved_rate: 1957.0,
        threads: 2,
        ops: 6000,
        service_mean: 51_000_000.0,
        service_max: 61_000_000,
        wait_p99: 75_000_000,
        queue_mean: 20_000_000.0,
        queue_p99: 74_600_000,
        dispatch_mean: 800_000.0,
        dispatch_p99: 6_000_000,
        cpu_cores: Some(0.35),
        machine_cores: 2,
        concurrency: Some(120),
        cap_full_share: Some(0.055),
        ..base()
    };
    let (kind, reason) = judge(&f);
    assert_eq!(kind, VerdictKind::ConcurrencyBound, "{reason}");
    assert!(
        reason.contains("and 122 at the slowest, the cap was 120"),
        "{reason}"
    );
    assert!(reason.contains("raise concurrency to 153"), "{reason}");
    // The same run with one 500 ms op: a stall of the system under test.
    let stall = Figures {
        service_max: 500_000_000,
        queue_p99: 450_000_000,
        ..f
    };
    assert_eq!(judge(&stall).0, VerdictKind::SystemBound);
}

/// Regression (issue 24, item 9): a 5-op run (85 ms at 50/s) that started its
/// ops late got generator-bound advice. Too few slots are a verdict of their own.
#[test]
fn a_late_window_with_too_few_slots_is_too_short_to_judge() {
    let f = Figures {
        target_rate: Some(50.0),
        achieved_rate: 40.0,
        elapsed_nanos: 85_000_000,
        ops: 5,
        threads: 1,
        service_mean: 100_000.0,
        service_max: 120_000,
        wait_p99: 30_000_000,
        queue_mean: 0.0,
        queue_p99: 0,
        dispatch_mean: 20_000_000.0,
        dispatch_p99: 30_000_000,
        cpu_cores: None,
        machine_cores: 2,
        ..Default::default()
    };
    let (kind, reason) = judge(&f);
    assert_eq!(kind, VerdictKind::TooShort, "{reason}");
    assert!(
        reason.starts_with("85.0 ms held 4 slots at 50/s on 1 thread: too few to judge"),
        "{reason}"
    );
    // The same lateness over 10 s at 50/s (500 slots) is judged.
    let long = Figures {
        elapsed_nanos: 10 * NANOS_PER_SEC,
        ops: 400,
        ..f
    };
    assert_eq!(judge(&long).0, VerdictKind::GeneratorBound);
    // On schedule stays on schedule, however short.
    let kept = Figures {
        achieved_rate: 50.0,
        wait_p99: 100_000,
        ..f
    };
    assert_eq!(judge(&kept).0, VerdictKind::OnSchedule);
}

/// Issue 24, item 9: a run an error stopped at cycle 0 is judged as stopped by
/// it, not as generator-bound.
#[test]
fn a_run_an_error_stopped_has_its_own_verdict() {
    let f = Figures {
        target_rate: Some(20.0),
        elapsed_nanos: 300_000_000,
        threads: 8,
        ..Default::default()
    };
    let v = Verdict::from_figures(&f, Spread::default(), Spread::default())
        .stopped("invalid peer certificate", 0);
    assert_eq!(v.kind, VerdictKind::StoppedByError);
    assert_eq!(
        v.reason,
        "an error stopped the run after 0 ops (invalid peer certificate): fix it before \
         judging the pacing"
    );
    assert_eq!(
        VerdictKind::parse("stopped-by-error"),
        Some(VerdictKind::StoppedByError)
    );
    assert_eq!(VerdictKind::parse("too-short"), Some(VerdictKind::TooShort));
}

/// Issue 23, item 2: during a store outage a process on a shared schedule runs no
/// op and misses no slot, so its own target read 0 and the interval read
/// "on-schedule: paused: no op was due". The verdict names the store.
#[test]
fn a_window_the_shared_store_did_not_answer_names_the_store() {
    let f = Figures {
        target_rate: Some(0.0),
        achieved_rate: 0.0,
        ops: 0,
        elapsed_nanos: 2 * NANOS_PER_SEC,
        source_outage_nanos: Some(1_500_000_000),
        ..base()
    };
    let (kind, reason) = judge(&f);
    assert_eq!(kind, VerdictKind::GeneratorBound, "{reason}");
    assert!(
        reason.starts_with(
            "the shared schedule's store did not answer for 1.50 s of this 2.00 s window"
        ),
        "{reason}"
    );
    assert!(reason.contains("not for the system under test"), "{reason}");
    // Late at a positive target: the store still, not the system under test.
    let late = Figures {
        achieved_rate: 400.0,
        wait_p99: 900_000_000,
        queue_p99: 900_000_000,
        queue_mean: 300_000_000.0,
        source_outage_nanos: Some(600_000_000),
        ..base()
    };
    assert!(judge(&late).1.starts_with("the shared schedule's store"));
    // A blip the schedule absorbed: on schedule still.
    let kept = Figures {
        source_outage_nanos: Some(1_000),
        ..base()
    };
    assert_eq!(judge(&kept).0, VerdictKind::OnSchedule);
    // No outage: a shared schedule paused reads as before.
    let paused = Figures {
        target_rate: Some(0.0),
        source_outage_nanos: Some(0),
        ..base()
    };
    assert_eq!(judge(&paused).1, "paused: no op was due");
}

/// Issue 23 (beyond the fixes): a generator held by its cgroup's CPU limit made
/// late starts that the verdict blamed on queueing behind slow ops. Throttling in
/// the window names the generator.
#[test]
fn a_late_window_with_cgroup_throttling_names_the_throttled_generator() {
    // Late, with a stall of the ops that would otherwise be the system's.
    let late = Figures {
        achieved_rate: 700.0,
        wait_p99: 95_000_000,
        queue_mean: 20_000_000.0,
        queue_p99: 95_000_000,
        service_max: 90_000_000,
        ..base()
    };
    assert_eq!(judge(&late).0, VerdictKind::SystemBound);
    let throttled = Figures {
        throttling: Some(Throttling {
            periods: 100,
            throttled: 12,
            throttled_nanos: 640_000_000,
        }),
        ..late
    };
    let (kind, reason) = judge(&throttled);
    assert_eq!(kind, VerdictKind::GeneratorBound, "{reason}");
    assert!(
        reason.starts_with(
            "the generator was throttled by its cgroup's CPU limit in 12 of 100 periods \
             (640 ms held in all"
        ),
        "{reason}"
    );
    assert!(reason.contains("not the system under test"), "{reason}");
    // Below the floor, or none: the other rules decide.
    for t in [
        Throttling {
            periods: 100,
            throttled: 0,
            throttled_nanos: 0,
        },
        Throttling {
            periods: 100,
            throttled: 1,
            throttled_nanos: 999_999,
        },
    ] {
        let f = Figures {
            throttling: Some(t),
            ..late
        };
        assert_eq!(judge(&f).0, VerdictKind::SystemBound);
    }
    // On schedule despite a throttled period: on schedule.
    let on = Figures {
        throttling: throttled.throttling,
        ..base()
    };
    assert_eq!(judge(&on).0, VerdictKind::OnSchedule);
}
