//! Issue 23: every ticket a process leases from a shared schedule ends as
//! exactly one of granted, missed, given back or voided, and the ledger in
//! `Coordinated::tickets` says which. A ticket taken by a worker that then
//! stopped (or retired) was counted used, and was neither granted, missed nor
//! given back. Against a real redis-server; without one each test prints
//! `skipping: ...` and passes.
#![cfg(feature = "redis")]

mod support;

use paceline::{
    ActivityConfig, Coordinate, Coordinated, Engine, OpError, OpRunner, RateSpec, WorkerContext,
    Workload,
};
use std::time::Duration;
use support::coord::at;
use support::redis::server;

struct Nop;
struct NopRun;

impl Workload for Nop {
    fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
        Ok(Box::new(NopRun))
    }
}

impl OpRunner for NopRun {
    fn run(&mut self, _: u64) -> Result<(), OpError> {
        Ok(())
    }
}

/// Many threads at a low rate: most workers wait toward a slot, each holding a
/// ticket, at any moment.
fn config(c: &Coordinate, threads: usize, strictness: f64) -> ActivityConfig {
    ActivityConfig::new("shared")
        .threads(threads)
        .cycles(0..1_000_000)
        .rate(RateSpec::new(400.0).strictness(strictness))
        .coordinate(c.clone())
}

/// The books of a process that has left: every leased ticket in one place, and
/// the granted ones are the ops it ran.
fn balanced(who: &str, st: &Coordinated, ops: u64) {
    let t = st.tickets;
    assert_eq!(
        st.tickets_leased,
        t.granted + t.missed + t.given_back + t.voided,
        "{who}: {st:?}"
    );
    assert_eq!(
        t.granted, ops,
        "{who}: every granted ticket ran an op: {st:?}"
    );
    eprintln!("{who}: leased {} = {t:?}", st.tickets_leased);
}

/// A process stopped here (an interrupt) while its workers wait toward their
/// slots, on a schedule another process goes on with: the tickets they had taken
/// are given back with the ones held (or counted missed, when the other leased
/// past them), not lost.
#[test]
fn stopping_here_while_workers_hold_tickets_balances_the_books() {
    let Some(redis) = server() else { return };
    let c = at(&redis.url(), "ledger-here");
    let a = Engine::new();
    let b = Engine::new();
    let ra = a.start(config(&c, 8, 0.0), Nop).expect("joins");
    let rb = b.start(config(&c, 8, 0.0), Nop).expect("joins");
    std::thread::sleep(Duration::from_millis(700));
    a.stop_all();
    ra.wait();
    let st = ra.coordinated().expect("coordinated");
    balanced("stopped here", &st, ra.snapshot().ops());
    assert!(
        st.tickets.given_back + st.tickets.missed > 0,
        "workers held tickets when it stopped: {st:?}"
    );
    assert_eq!(st.tickets.voided, 0, "the schedule goes on: {st:?}");
    // The other process goes on with the tickets given back; stopped
    // everywhere, what it holds is void.
    std::thread::sleep(Duration::from_millis(300));
    rb.stop();
    rb.wait();
    let st = rb.coordinated().expect("coordinated");
    balanced("stopped everywhere", &st, rb.snapshot().ops());
}

/// Strict mode forfeits late tickets (missed); a pause voids the ones leased
/// before it; workers retired mid-wait let their granted slot pass (missed);
/// the books still balance.
#[test]
fn forfeits_pauses_and_retired_workers_balance_the_books() {
    let Some(redis) = server() else { return };
    let c = at(&redis.url(), "ledger-strict");
    let run = Engine::new().start(config(&c, 8, 1.0), Nop).expect("joins");
    std::thread::sleep(Duration::from_millis(400));
    run.set_threads(2).expect("fewer threads");
    std::thread::sleep(Duration::from_millis(200));
    run.set_rate(RateSpec::new(0.0)).expect("pause");
    std::thread::sleep(Duration::from_millis(200));
    run.set_rate(RateSpec::new(400.0).strictness(1.0))
        .expect("resume");
    std::thread::sleep(Duration::from_millis(200));
    run.stop();
    run.wait();
    let st = run.coordinated().expect("coordinated");
    balanced("strict, retired, paused", &st, run.snapshot().ops());
}
