//! The verdict's rules on the generator's own limits (the in-flight cap, its
//! run-queue delay, cgroup throttling) and the verdicts of their own (too short,
//! stopped by an error, a shared store that did not answer).

use super::*;

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

/// Issue 21's done-when run (10K/s of 50 ms answers, concurrency 1000 on two
/// threads, the cap never full), as its figures read before the async motor's
/// queueing was fixed: the worker's own late starts counted as queueing.
fn done_when_run() -> Figures {
    Figures {
        target_rate: Some(10_000.0),
        achieved_rate: 9_864.0,
        elapsed_nanos: 10_137_000_000,
        ops: 100_000,
        threads: 2,
        service_mean: 50_300_000.0,
        service_max: 60_700_000,
        wait_p99: 3_070_000,
        queue_mean: 73_900.0,
        queue_p99: 2_840_000,
        dispatch_mean: 36_800.0,
        dispatch_p99: 430_000,
        cpu_cores: Some(0.81),
        machine_cores: 2,
        concurrency: Some(1000),
        cap_full_share: Some(0.0),
        in_flight_max: Some(597),
        run_queue_nanos: Some(4_650_000_000),
        run_queue_runs: 1_000_000,
        ..base()
    }
}

#[test]
fn regression_issue21_a_late_worker_with_the_cap_never_full_is_not_blamed_on_the_server() {
    // It read "system-bound: … the system under test stalled, not the generator".
    let (kind, reason) = judge(&done_when_run());
    assert_eq!(kind, VerdictKind::GeneratorBound, "{reason}");
    assert!(
        reason.starts_with(
            "ops started late with room under the in-flight cap (at most 597 of 1000 in \
             flight, the cap full 0.0 % of the time): wait p99 3.07 ms (dispatch 36.8 µs on \
             average, p99 430 µs; queueing 73.9 µs on average) is the worker threads' own \
             lateness"
        ),
        "{reason}"
    );
    assert!(!reason.contains("stalled"), "{reason}");
    // The same run once its figures are right: the lateness is dispatch.
    let fixed = Figures {
        achieved_rate: 10_000.0,
        queue_mean: 0.0,
        queue_p99: 0,
        dispatch_mean: 110_700.0,
        dispatch_p99: 3_070_000,
        ..done_when_run()
    };
    let (kind, reason) = judge(&fixed);
    assert_eq!(kind, VerdictKind::GeneratorBound, "{reason}");
    assert!(reason.contains("room under the in-flight cap"), "{reason}");
    assert!(
        reason.ends_with("(achieved 10.0K/s of 10.0K/s)"),
        "{reason}"
    );
}

#[test]
fn an_async_run_within_its_bounds_is_on_schedule() {
    let f = Figures {
        achieved_rate: 9_990.0,
        queue_mean: 0.0,
        queue_p99: 0,
        dispatch_mean: 20_000.0,
        dispatch_p99: 400_000,
        wait_p99: 400_000,
        ..done_when_run()
    };
    let (kind, reason) = judge(&f);
    assert_eq!(kind, VerdictKind::OnSchedule, "{reason}");
    // Regression (session 11's quiet done-when run read "499.1 of 2 threads
    // busy"): the ops in flight are counted against the cap.
    assert!(
        reason.contains("of 1000 in flight on 2 threads"),
        "{reason}"
    );
    assert!(!reason.contains("threads busy"), "{reason}");
}

#[test]
fn an_async_runs_queueing_for_room_at_the_cap_is_still_the_systems() {
    // The cap full part of the time, and the ops behind a stall of the server
    // queued for room: the lateness is queueing, and it is the server's.
    let f = Figures {
        achieved_rate: 10_000.0,
        service_max: 900_000_000,
        wait_p99: 600_000_000,
        queue_mean: 30_000_000.0,
        queue_p99: 600_000_000,
        dispatch_mean: 20_000.0,
        dispatch_p99: 300_000,
        cap_full_share: Some(0.08),
        in_flight_max: Some(1000),
        ..done_when_run()
    };
    let (kind, reason) = judge(&f);
    assert_eq!(kind, VerdictKind::SystemBound, "{reason}");
    assert!(reason.contains("stalled"), "{reason}");
    // Late with room on average (dispatch above queueing) is the worker's, even
    // with the cap full for a moment.
    let own = Figures {
        queue_mean: 10_000.0,
        dispatch_mean: 90_000.0,
        service_max: 52_000_000,
        ..f
    };
    let (kind, reason) = judge(&own);
    assert_eq!(kind, VerdictKind::GeneratorBound, "{reason}");
    assert!(
        reason.contains("the cap full 8.0 % of the time"),
        "{reason}"
    );
}

/// A kept schedule whose ops take `service` each, `n` of them at `rate` on the
/// async runner: the window runs from the first slot to the last op's end.
fn kept_with_a_tail(rate: f64, n: u64, service: f64, cap: u64) -> Figures {
    let elapsed = (n as f64 / rate * 1e9 + service) as u64;
    Figures {
        target_rate: Some(rate),
        achieved_rate: n as f64 * 1e9 / elapsed as f64,
        elapsed_nanos: elapsed,
        ops: n,
        threads: 2,
        service_mean: service,
        service_max: service as u64,
        wait_p99: 100_000,
        queue_mean: 0.0,
        queue_p99: 0,
        dispatch_mean: 10_000.0,
        dispatch_p99: 100_000,
        cpu_cores: Some(0.5),
        machine_cores: 2,
        concurrency: Some(cap),
        cap_full_share: Some(0.0),
        in_flight_max: Some(cap / 2),
        ..base()
    }
}

#[test]
fn regression_issue21_the_service_tail_at_a_windows_edge_is_not_a_shortfall() {
    // The ops in flight at an edge finish on the other side of it: 10K/s of
    // 50 ms ops end their last 500 ops 50 ms after the schedule's last slot
    // (0.5 % of 10 s), and a 1 s interval's first 50 ms of ends are missing.
    // Whatever the service time, a kept schedule is judged kept.
    for (rate, n, service, cap) in [
        (10_000.0, 100_000, 50e6, 1000),
        (10_000.0, 10_000, 50e6, 1000),
        (10_000.0, 20_000, 100e6, 2000),
        (20_000.0, 40_000, 200e6, 5000),
        (2_000.0, 2_000, 50e6, 200),
    ] {
        let f = kept_with_a_tail(rate, n, service, cap);
        let (kind, reason) = judge(&f);
        assert_eq!(
            kind,
            VerdictKind::OnSchedule,
            "{rate} x {n} x {service}: {reason}"
        );
    }
    // A real shortfall beyond the edges is still one: 2 % short over 10 s.
    let short = Figures {
        achieved_rate: 9_800.0,
        ..kept_with_a_tail(10_000.0, 98_000, 50e6, 1000)
    };
    assert_ne!(judge(&short).0, VerdictKind::OnSchedule);
    // The sync runner's edge stays one op per thread.
    let sync = Figures {
        concurrency: None,
        ..kept_with_a_tail(10_000.0, 10_000, 50e6, 1000)
    };
    assert_eq!(sync.edge_ops(), 2);
}

#[test]
fn a_backlog_the_cap_built_and_the_pacer_pays_off_is_the_caps_not_the_workers() {
    // benches/http_async.sh at 10K/s with concurrency 600 (2-core VM, shared):
    // the cap full 11.7 % of the time, and the backlog it built paid off at the
    // pacer's burst rate, which is dispatch. The cap was the limit.
    let f = Figures {
        target_rate: Some(10_000.0),
        achieved_rate: 9_679.0,
        elapsed_nanos: 5_166_000_000,
        ops: 50_000,
        threads: 2,
        service_mean: 56_400_000.0,
        service_max: 80_000_000,
        wait_p99: 121_570_000,
        queue_mean: 1_720_000.0,
        queue_p99: 30_000_000,
        dispatch_mean: 52_600_000.0,
        dispatch_p99: 122_000_000,
        cpu_cores: Some(0.54),
        machine_cores: 2,
        concurrency: Some(600),
        cap_full_share: Some(0.117),
        in_flight_max: Some(600),
        ..base()
    };
    let (kind, reason) = judge(&f);
    assert_eq!(kind, VerdictKind::ConcurrencyBound, "{reason}");
    assert!(reason.contains("raise concurrency to 705"), "{reason}");
}

#[test]
fn a_moment_at_the_cap_does_not_make_a_late_worker_the_caps() {
    // Issue 21's done-when run on a shared 2-core VM after the fixes: the cap
    // full 0.1 % of the time, queueing 189 ns on average, dispatch p99 33 ms.
    // The slowest op (136 ms) times the rate is past the cap, but no op
    // waited for room: the worker was late, not the cap (it read
    // "concurrency-bound … at the cap 0 % of the time … queueing p99 0 ns").
    let f = Figures {
        achieved_rate: 9_929.0,
        elapsed_nanos: 10_071_000_000,
        service_mean: 51_100_000.0,
        service_max: 136_000_000,
        wait_p99: 33_100_000,
        queue_mean: 189.0,
        queue_p99: 0,
        dispatch_mean: 1_580_000.0,
        dispatch_p99: 33_100_000,
        cpu_cores: Some(0.66),
        cap_full_share: Some(0.001),
        in_flight_max: Some(783),
        run_queue_nanos: Some(1_000_000_000),
        run_queue_runs: 100_000,
        ..done_when_run()
    };
    let (kind, reason) = judge(&f);
    assert_eq!(kind, VerdictKind::GeneratorBound, "{reason}");
    assert!(
        reason.starts_with("ops started late with room under the in-flight cap (at most 783 of 1000 in flight, the cap full 0.1 % of the time)"),
        "{reason}"
    );
}
