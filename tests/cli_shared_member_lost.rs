//! A shared schedule whose other member is killed: the survivor's wait for the
//! dead member's claims (5 s lease) is the lost member's in its verdict and its
//! summary, not its own generator falling behind (audit p16, M8). Real
//! `paceline run` processes on a real redis-server.
#![cfg(feature = "redis")]

mod support;

use serde_json::Value;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::Duration;
use support::bin::{bin, spawn_piped, temp};
use support::redis::server;

fn start(args: &[&str], summary: &PathBuf) -> Child {
    spawn_piped(
        bin()
            .arg("run")
            .args(args)
            .arg("--summary-json")
            .arg(summary),
    )
}

/// Regression (audit p16, M8): B is killed 1.5 s into a 600-cycle schedule
/// at 200/s; A runs out of new cycles, waits until B's claims expire and
/// re-runs them. Its verdict read "generator-bound: ... the generator fell
/// behind"; it is now `member-lost`, naming the wait, and the summary says how
/// long A waited for the lost member's claims. (The wait is seconds, the
/// schedule's claim lease; the bounds below leave room for a loaded machine.)
#[test]
fn a_survivors_wait_for_a_killed_members_claims_is_judged_member_lost() {
    let Some(redis) = server() else { return };
    let url = format!("coordinate={}/lost-member", redis.url());
    let (fa, fb) = (temp("lost-member-a.json"), temp("lost-member-b.json"));
    // A low rate, so that A keeps up on a loaded machine and runs out of new
    // cycles well before B's claims expire (a survivor that is itself behind
    // takes them up expired, without a wait).
    let args = ["driver=diag", "cycles=600", "rate=200", &url];
    let survivor = start(&args, &fa);
    let victim = start(&args, &fb);
    std::thread::sleep(Duration::from_millis(1500));
    let _ = Command::new("kill")
        .arg("-9")
        .arg(victim.id().to_string())
        .status();
    let (code, out, err, _) = support::bin::finish(survivor, Duration::from_secs(40));
    assert_eq!(code, Some(0), "{out}{err}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&fa).unwrap()).unwrap();
    let a = &doc["activities"][0];
    let c = &a["coordinated"];
    assert!(c["rerun_cycles"].as_u64().unwrap_or(0) > 0, "{c}");
    let waited = c["claim_wait_ns"].as_u64().unwrap_or(0);
    assert!(waited >= 1_000_000_000, "waited {waited} ns: {c}");
    let v = &a["verdict"];
    assert_eq!(v["kind"], "member-lost", "{v}\n{out}");
    let reason = v["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("another process's claims held"), "{reason}");
    assert!(!reason.contains("generator fell behind"), "{reason}");
    assert!(
        out.contains("for cycles a lost member's claims held"),
        "{out}"
    );
    drop(victim);
}
