//! The control endpoint's `current_interval` on a shared schedule (audit p17
//! M5): its `mean_target` is the whole schedule's, every process together, so
//! the interval says this process's share beside it, labelled.

use super::shared_interval;
use crate::cli::report::shared::tests::three;
use crate::cli::report::tests::info;

/// Regression (audit p17 M5): two processes on a shared 400/s read
/// `mean_target: 400` beside this process's `rate: 200`, 50 % on a healthy
/// run, with nothing saying whose target it was.
#[test]
fn audit_p17_m5_a_shared_schedule_s_interval_shows_this_process_s_share() {
    let mut a = info("a");
    a.mean_target = Some(30_000.0);
    a.coordinated = Some(three());
    let s = shared_interval(&a);
    assert_eq!(s["mean_target"], 30_000.0, "{s}");
    assert_eq!(s["processes_live"], 3, "{s}");
    assert_eq!(s["share_target"], 10_000.0, "{s}");
    assert_eq!(s["global_rate"], 29_950.0, "{s}");
    // Unpaced: no target, no share.
    a.mean_target = None;
    assert!(shared_interval(&a)["share_target"].is_null());
}

#[test]
fn an_activity_that_paces_alone_has_no_shared_interval() {
    let mut a = info("a");
    a.mean_target = Some(100.0);
    assert!(shared_interval(&a).is_null());
}
