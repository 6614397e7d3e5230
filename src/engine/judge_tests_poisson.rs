//! The verdict on Poisson arrivals: the achieved rate against the drawn slots'
//! own rate (`Figures::drawn_rate`), not the target (audit of issue 22, H3).

use super::*;

/// H3: seed 0's first 10K independent draws ran 1.6 % slow, and a run that kept
/// every slot read "achieved 984/s of 1000/s" with a generator-bound verdict.
/// Against its drawn slots it is on schedule; without them it would not be.
#[test]
fn issue22_h3_a_poisson_run_is_judged_against_its_drawn_slots_rate() {
    let kept = Figures {
        achieved_rate: 983.5,
        drawn_rate: Some(983.5),
        ..base()
    };
    let (kind, reason) = judge(&kept);
    assert_eq!(kind, VerdictKind::OnSchedule, "{reason}");
    assert!(
        reason.starts_with(
            "achieved 984/s of the drawn Poisson slots' 984/s (target 1000/s); wait p99 60.0 µs"
        ),
        "{reason}"
    );
    let nominal = Figures {
        drawn_rate: None,
        ..kept
    };
    assert_ne!(judge(&nominal).0, VerdictKind::OnSchedule);
    // Fast draws: the run that kept them is on schedule above the target.
    let fast = Figures {
        achieved_rate: 1016.0,
        drawn_rate: Some(1016.0),
        ..base()
    };
    assert_eq!(judge(&fast).0, VerdictKind::OnSchedule);
    // 2.5 % behind its drawn slots, though within 1 % of the target: behind.
    let behind = Figures {
        achieved_rate: 1005.0,
        drawn_rate: Some(1030.0),
        wait_p99: 30_000_000,
        queue_p99: 30_000_000,
        queue_mean: 10_000_000.0,
        ..base()
    };
    let (kind, reason) = judge(&behind);
    assert_ne!(kind, VerdictKind::OnSchedule, "{reason}");
    assert!(
        reason.contains("achieved 1005/s of the drawn Poisson slots' 1030/s"),
        "{reason}"
    );
}

/// Uniform slots have no drawn rate: the verdict reads as before.
#[test]
fn uniform_slots_are_judged_against_the_target_as_before() {
    let (kind, reason) = judge(&base());
    assert_eq!(kind, VerdictKind::OnSchedule);
    assert!(reason.starts_with("achieved 1000/s of 1000/s;"), "{reason}");
}
