//! Store calls: a script run with retry for the grace period (one grace clock per
//! outage, for every thread), a request number that makes a repeat harmless
//! (`scripts.rs`, "Which scripts may run twice"), and the message a lost store
//! fails the run with: "does not answer" told from "cannot be reached".

use super::session::{Coordination, GRACE, READ_TIMEOUT};
use crate::store::error::StoreError;
use crate::sync::threads::{self, Ordering};
use redis::{Script, Value};
use std::time::{Duration, Instant};

impl Coordination {
    /// Runs `script`, retrying a store that does not answer (or cannot be reached)
    /// until [`GRACE`] has passed since the outage began; a reply whose element
    /// `now_at` is the server's time feeds the time base. `once` names a script that
    /// changes the schedule (`lease`, `claim`, `beat`, `change`): every copy of this
    /// request carries the same request number, so the server runs it once however
    /// often it arrives (`scripts.rs`, "Which scripts may run twice"); it gets all
    /// five keys, a read-only script the first. `Err` is the message the run fails
    /// with (the store lost, or the schedule erased).
    pub(super) fn call(
        &self,
        script: &Script,
        once: Option<&str>,
        args: &[String],
        now_at: Option<usize>,
    ) -> Result<Vec<String>, String> {
        let nkeys = if once.is_some() { 5 } else { 1 };
        let tail = once.map(|kind| {
            let seq = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
            [format!("{}:{kind}", self.id), seq.to_string()]
        });
        loop {
            if let Some(why) = self.lost() {
                return Err(why);
            }
            let t0 = self.clock.now();
            let sent = Instant::now();
            let token = threads::lock(&self.silence).send(sent);
            let got = self.pool.with_conn(|c| {
                let mut inv = script.prepare_invoke();
                for k in &self.keys[..nkeys] {
                    inv.key(k);
                }
                for a in args.iter().chain(tail.iter().flatten()) {
                    inv.arg(a);
                }
                inv.invoke::<Value>(c)
            });
            let t1 = self.clock.now();
            let outage = match &got {
                Ok(_) => threads::lock(&self.outage).take().map(|o| o.0),
                Err(_) => None,
            };
            threads::lock(&self.silence).back(token, sent, outage, got.is_ok());
            match got {
                Ok(v) => {
                    self.round_trips.fetch_add(1, Ordering::Relaxed);
                    let v = strings(v);
                    if v.first().map(String::as_str) == Some("gone") {
                        let why = StoreError::Erased {
                            url: self.url.clone(),
                        }
                        .to_string();
                        self.fail(why.clone());
                        return Err(why);
                    }
                    if let Some(i) = now_at.filter(|&i| i < v.len()) {
                        threads::lock(&self.timebase).offer(t0, t1, num(&v, i));
                    }
                    return Ok(v);
                }
                // Not there, or there and not ready (loading its data after a
                // restart, a failover): wait and try again, for the grace period.
                Err(
                    e @ (StoreError::Lost { .. }
                    | StoreError::Unreachable { .. }
                    | StoreError::Server { .. }),
                ) if e.is_transient() => {
                    // One grace clock per outage, for every thread: it starts when
                    // the first request that failed was sent (a thread that queued
                    // for a connection behind it does not start a clock of its own).
                    let (since, silent) = {
                        let mut o = threads::lock(&self.outage);
                        let o = o.get_or_insert((sent, false));
                        o.1 |= no_answer(&e);
                        *o
                    };
                    if since.elapsed() >= GRACE || self.halt.load(Ordering::Relaxed) {
                        let why = outage_message(&self.url, &e, silent, since.elapsed());
                        self.fail(why.clone());
                        return Err(why);
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => {
                    let why = format!("the shared schedule {} failed: {e}", self.url);
                    self.fail(why.clone());
                    return Err(why);
                }
            }
        }
    }
}

/// A request unanswered for this long counts as the store's silence for the
/// verdict, before its read timeout fails it.
const STALE: Duration = Duration::from_millis(READ_TIMEOUT.as_millis() as u64 / 2);

/// How long the store has not answered, for the verdict: the silences that ended,
/// the requests in flight (one unanswered for [`STALE`] is silence from its send),
/// and the time already counted (`covered`), so that requests that overlap count
/// once and the total only grows.
#[derive(Debug, Default)]
pub(super) struct Silence {
    done: Duration,
    pending: Vec<(u64, Instant)>,
    next: u64,
    covered: Option<Instant>,
}

impl Silence {
    /// A request was sent at `at`; its token.
    fn send(&mut self, at: Instant) -> u64 {
        self.next += 1;
        self.pending.push((self.next, at));
        self.next
    }

    /// The request `token` sent at `sent` came back (answered when `ok`); an
    /// outage that began at `outage` ended with it.
    fn back(&mut self, token: u64, sent: Instant, outage: Option<Instant>, ok: bool) {
        self.pending.retain(|(t, _)| *t != token);
        let stale = (sent.elapsed() >= STALE).then_some(sent);
        if ok && let Some(start) = earliest(outage, stale) {
            let now = Instant::now();
            let from = self.covered.map_or(start, |c| c.max(start));
            self.done += now.saturating_duration_since(from);
            self.covered = Some(now);
        }
    }

    /// The silence so far, with `outage` (the send of the failed request that
    /// began the outage under way, if any).
    fn total(&self, outage: Option<Instant>) -> Duration {
        let oldest = self
            .pending
            .iter()
            .map(|(_, at)| *at)
            .filter(|at| at.elapsed() >= STALE)
            .min();
        let ongoing = earliest(outage, oldest).map_or(Duration::ZERO, |s| {
            Instant::now().saturating_duration_since(self.covered.map_or(s, |c| c.max(s)))
        });
        self.done + ongoing
    }
}

fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

impl Coordination {
    /// How long the store has not answered, in all so far, ns: the outages that
    /// ended, the one under way (from the send of its first failed request), and
    /// requests unanswered for half a read timeout.
    pub(crate) fn outage_nanos(&self) -> u64 {
        let outage = threads::lock(&self.outage).map(|o| o.0);
        let total = threads::lock(&self.silence).total(outage);
        total.as_nanos().min(u128::from(u64::MAX)) as u64
    }
}

/// A script's reply as strings (integers written out, nil as empty).
pub(super) fn strings(v: Value) -> Vec<String> {
    match v {
        Value::Array(items) => items.into_iter().flat_map(strings).collect(),
        Value::BulkString(b) => vec![String::from_utf8_lossy(&b).into_owned()],
        Value::SimpleString(s) => vec![s],
        Value::Int(i) => vec![i.to_string()],
        Value::Okay => vec!["OK".into()],
        _ => vec![String::new()],
    }
}

pub(super) fn num(v: &[String], i: usize) -> u64 {
    v.get(i).and_then(|s| s.parse().ok()).unwrap_or(0)
}

pub(super) fn float(v: &[String], i: usize) -> f64 {
    v.get(i).and_then(|s| s.parse().ok()).unwrap_or(0.0)
}

/// The message a run fails with once the store has been out for the grace: a store
/// that does not answer (connected, no reply: stopped, overloaded, a network that
/// drops packets) is told from one that cannot be reached (refused, no route).
fn outage_message(url: &str, e: &StoreError, silent: bool, out: Duration) -> String {
    let what = if silent {
        format!(
            "the store does not answer: no reply within {READ_TIMEOUT:?} to any request for \
             {:.1}s (the server is stopped, overloaded or cut off; it accepts connections \
             or did, and answers nothing)",
            out.as_secs_f64()
        )
    } else if matches!(e, StoreError::Server { .. }) {
        format!("the store is not ready ({e}) for {:.1}s", out.as_secs_f64())
    } else {
        let detail = match e {
            StoreError::Unreachable { reason, .. } => reason.clone(),
            StoreError::Lost { source, .. } => source.to_string(),
            other => other.to_string(),
        };
        format!(
            "the store cannot be reached for {:.1}s ({detail}); start redis-server there or \
             fix the URL",
            out.as_secs_f64()
        )
    };
    format!(
        "lost the shared schedule {url}: {what}; pacing stopped (no local fallback, which \
         would multiply the rate)"
    )
}

/// Whether `e` is a store that took the connection (or the request) and did not
/// answer in time, rather than one that refused it.
fn no_answer(e: &StoreError) -> bool {
    match e {
        StoreError::Lost { source, .. } => source.is_timeout(),
        StoreError::Unreachable { io: Some(kind), .. } => {
            matches!(
                kind,
                std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
            )
        }
        StoreError::Unreachable { reason, .. } => {
            let r = reason.to_ascii_lowercase();
            [
                "timed out",
                "timeout",
                "temporarily unavailable",
                "would block",
            ]
            .iter()
            .any(|s| r.contains(s))
        }
        _ => false,
    }
}
