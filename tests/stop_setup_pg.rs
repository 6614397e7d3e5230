//! Ctrl-C while a postgres run is still opening its connections (audit p17
//! L6), against a real PostgreSQL cluster behind a fault proxy that stops
//! answering: every connect then waits for its `connect_timeout` (60 s). The
//! run stops within seconds of the interrupt, says it stopped during set-up,
//! and writes its reports; before the fix it waited out the stop timeout and
//! reported "an op is stuck in its driver". Without the server binaries the
//! test prints `skipping: ...` and passes.
#![cfg(not(loom))]

mod support;

use std::time::{Duration, Instant};
use support::bin::{bin, finish, json, signal, spawn_piped, temp, write_temp};
use support::postgres::server;
use support::proxy::FaultProxy;

#[test]
fn audit_p17_l6_ctrl_c_while_postgres_connections_are_opening_stops_the_run_at_once() {
    let Some(pg) = server() else { return };
    let proxy = FaultProxy::start(pg.port()).expect("a loopback port for the proxy");
    let url = pg.url().replace(
        &format!(":{}/", pg.port()),
        &format!(":{}/", proxy.addr().port()),
    );
    let yaml = write_temp(
        "stop_setup_pg.yaml",
        &format!("params: {{driver: postgres, url: '{url}'}}\nops: {{o: 'select 1'}}\n"),
    );
    let summary = temp("stop_setup_pg.json");
    let _ = std::fs::remove_file(&summary);
    let child = spawn_piped(bin().args([
        "run",
        &yaml,
        "concurrency=100",
        "connect_timeout=60s",
        "rate=100",
        "duration=60s",
        "--stop-timeout",
        "30s",
        "--no-progress",
        "--summary-json",
        summary.to_str().unwrap(),
    ]));
    // The load-time check's connection, then the worker's first ones: from
    // there on the server "accepts slowly" (never answers).
    let deadline = Instant::now() + Duration::from_secs(60);
    while proxy.accepted() < 4 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(proxy.accepted() >= 4, "the run never connected");
    proxy.stall();
    std::thread::sleep(Duration::from_millis(300));
    let t0 = Instant::now();
    signal(&child, "INT");
    let (code, out, err, at) = finish(child, Duration::from_secs(90));
    let took = at.duration_since(t0);
    proxy.resume();
    assert!(
        took < Duration::from_secs(15),
        "the interrupt waited {took:?} for the set-up\n{out}\n{err}"
    );
    assert!(!err.contains("did not stop within"), "{err}");
    assert_eq!(code, Some(1), "{out}\n{err}");
    let text = format!("{out}{err}");
    assert!(text.contains("stopped during set-up"), "{text}");
    // Ended by the stop, not left behind still setting up.
    assert!(
        text.contains("before its first slot") && text.contains("(stopped)"),
        "{text}"
    );
    assert!(!text.contains("still setting up"), "{text}");
    let doc = json(&summary);
    let a = &doc["activities"][0];
    assert_eq!(a["cycles"]["completed"].as_u64(), Some(0), "{a}");
    assert_eq!(a["cycles"]["errors"].as_u64(), Some(0), "{a}");
}
