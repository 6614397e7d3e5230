//! A shared schedule whose other member is killed: the survivor's wait for the
//! dead member's claims (5 s lease) is the lost member's in its verdict and its
//! summary, not its own generator falling behind (audit p16, M8), and with
//! several workers in the survivor that wait is the process's wall time,
//! counted once, not once per worker (review p17, M4). Real `paceline run`
//! processes on a real redis-server.
#![cfg(feature = "redis")]

mod support;

use serde_json::Value;
use std::process::Command;
use std::time::{Duration, Instant};
use support::bin::{spawn_run, temp};
use support::redis::server;

/// What the survivor of a killed member left (it exited 0, re-ran cycles and
/// waited at least a second for the lost member's claims): its stdout, the
/// nanoseconds from before either member started to its exit, its summary's
/// activity, and its `claim_wait_ns`.
struct Survivor {
    out: String,
    wall: u64,
    activity: Value,
    waited: u64,
}

/// Two members of the schedule `name` on `redis_url`, each `paceline run
/// driver=diag cycles=600 rate=200 threads=THREADS`: B is killed (SIGKILL)
/// 1.5 s in; A runs out of new cycles, waits until B's claims expire and
/// re-runs them. A's end. (The wait is seconds, the schedule's claim lease;
/// the callers' bounds leave room for a loaded machine.)
fn kill_a_member(redis_url: &str, name: &str, threads: usize) -> Survivor {
    let url = format!("coordinate={redis_url}/{name}");
    let threads = format!("threads={threads}");
    let (fa, fb) = (
        temp(&format!("{name}-a.json")),
        temp(&format!("{name}-b.json")),
    );
    // A low rate, so that A keeps up on a loaded machine and runs out of new
    // cycles well before B's claims expire (a survivor that is itself behind
    // takes them up expired, without a wait).
    let args = ["driver=diag", "cycles=600", "rate=200", &threads, &url];
    let began = Instant::now();
    let survivor = spawn_run(&args, &fa);
    let victim = spawn_run(&args, &fb);
    std::thread::sleep(Duration::from_millis(1500));
    let _ = Command::new("kill")
        .arg("-9")
        .arg(victim.id().to_string())
        .status();
    let (code, out, err, _) = support::bin::finish(survivor, Duration::from_secs(40));
    let wall = began.elapsed().as_nanos() as u64;
    assert_eq!(code, Some(0), "{out}{err}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&fa).unwrap()).unwrap();
    drop(victim);
    let activity = doc["activities"][0].clone();
    let c = &activity["coordinated"];
    assert!(c["rerun_cycles"].as_u64().unwrap_or(0) > 0, "{c}");
    let waited = c["claim_wait_ns"].as_u64().unwrap_or(0);
    assert!(waited >= 1_000_000_000, "waited {waited} ns: {c}");
    Survivor {
        out,
        wall,
        activity,
        waited,
    }
}

/// Regression (audit p16, M8): A's verdict read "generator-bound: ... the
/// generator fell behind"; it is now `member-lost`, naming the wait, and the
/// summary says how long A waited for the lost member's claims.
#[test]
fn a_survivors_wait_for_a_killed_members_claims_is_judged_member_lost() {
    let Some(redis) = server() else { return };
    let a = kill_a_member(&redis.url(), "lost-member", 1);
    let v = &a.activity["verdict"];
    assert_eq!(v["kind"], "member-lost", "{v}\n{}", a.out);
    let reason = v["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("another process's claims held"), "{reason}");
    assert!(!reason.contains("generator fell behind"), "{reason}");
    assert!(
        a.out.contains("for cycles a lost member's claims held"),
        "{}",
        a.out
    );
}

/// Regression (review p17, M4): four workers of A wait together for the
/// killed B's claims to expire. Each added its own sleep, so the
/// `claim_wait_ns` read about four times the wait, more than the whole run
/// lasted, and tipped the verdict to member-lost four times sooner. The
/// figure is now at most the survivor's wall time (and still seconds: the
/// claim lease).
#[test]
fn four_workers_waiting_for_a_killed_members_claims_count_the_wait_once() {
    let Some(redis) = server() else { return };
    let a = kill_a_member(&redis.url(), "lost-member-threads", 4);
    let (waited, c) = (a.waited, &a.activity["coordinated"]);
    assert!(
        waited <= a.wall,
        "waited {waited} ns, more than the run's wall time {} ns: {c}",
        a.wall
    );
}
