//! A shared schedule whose other member is killed, with several workers in the
//! survivor: its wait for the dead member's claims is the process's wall time,
//! counted once, not once per worker (review p17, M4). Real `paceline run`
//! processes on a real redis-server.
#![cfg(feature = "redis")]

mod support;

use serde_json::Value;
use std::process::Command;
use std::time::{Duration, Instant};
use support::bin::{bin, spawn_piped, temp};
use support::redis::server;

/// Regression (review p17, M4): four workers of A wait together for the
/// killed B's claims to expire. Each added its own sleep, so the
/// `claim_wait_ns` read about four times the wait, more than the whole run
/// lasted, and tipped the verdict to member-lost four times sooner. The
/// figure is now at most the survivor's wall time (and still seconds: the
/// claim lease).
#[test]
fn four_workers_waiting_for_a_killed_members_claims_count_the_wait_once() {
    let Some(redis) = server() else { return };
    let url = format!("coordinate={}/lost-member-threads", redis.url());
    let (fa, fb) = (temp("lost-threads-a.json"), temp("lost-threads-b.json"));
    let start = |summary: &std::path::PathBuf| {
        spawn_piped(
            bin()
                .arg("run")
                .args(["driver=diag", "cycles=600", "rate=200", "threads=4", &url])
                .arg("--summary-json")
                .arg(summary),
        )
    };
    let began = Instant::now();
    let survivor = start(&fa);
    let victim = start(&fb);
    std::thread::sleep(Duration::from_millis(1500));
    let _ = Command::new("kill")
        .arg("-9")
        .arg(victim.id().to_string())
        .status();
    let (code, out, err, _) = support::bin::finish(survivor, Duration::from_secs(40));
    let wall = began.elapsed().as_nanos() as u64;
    assert_eq!(code, Some(0), "{out}{err}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&fa).unwrap()).unwrap();
    let a = &doc["activities"][0];
    let c = &a["coordinated"];
    assert!(c["rerun_cycles"].as_u64().unwrap_or(0) > 0, "{c}");
    let waited = c["claim_wait_ns"].as_u64().unwrap_or(0);
    assert!(waited >= 1_000_000_000, "waited {waited} ns: {c}");
    assert!(
        waited <= wall,
        "waited {waited} ns, more than the run's wall time {wall} ns: {c}"
    );
    drop(victim);
}
