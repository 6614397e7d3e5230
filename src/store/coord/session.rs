//! [`Coordination`]: one process's membership in a shared schedule. It joins, talks
//! to the store through the scripts (retrying a lost connection for a grace
//! period, then failing the run), runs a heartbeat thread (membership, claims,
//! counts, the spec's version) and a listener thread (the pub/sub nudge), and tells
//! the engine of changes made elsewhere through a channel of [`Remote`]s.
//!
//! The pacing side (tickets) is in `super::pacing`; the cycles are here.
//!
//! # Ground rules
//!
//! - Each piece of state sits under its own lock: `known` (the spec as last read),
//!   `tickets` (with the `refill` condvar), `chunks` (with `claimed`), `timebase`,
//!   `status`, `reported`. No lock is held across a round trip but `reported`,
//!   which only the heartbeat takes (so two heartbeats never report the same
//!   counts); a lease in flight is marked by the `refilling` flag and a claim by
//!   the `claiming` flag, not by a held lock. Lock order: `reported`, then
//!   `tickets` or `chunks`, then `known`, then `status` or `timebase`.
//! - Counters (`done`, `missed`, `missed_here`, `used`, `last_end`, `round_trips`, `leased`) are `Relaxed` atomics:
//!   only their values matter, and the heartbeat reads them as a snapshot.
//! - `halt` tells the threads to end; `signal` wakes everything that waits (stop,
//!   a change of spec, a lost store). Once `lost` is set it stays set.

use super::Coordinate;
use super::chunks::Chunks;
use super::pacing::Tickets;
use super::scripts::Scripts;
use super::slots::{exact, forfeit_fraction};
use super::timebase::TimeBase;
use crate::clock::{Clock, Signal, Waiting};
use crate::engine::{Coordinated, Remote, RemoteSender};
use crate::nanos::Nanos;
use crate::pace::{RateSpec, Verb};
use crate::store::conn::Pool;
use crate::store::error::StoreError;
use crate::sync::threads::{self, Arc, AtomicBool, AtomicU64, Condvar, Mutex, Ordering};
use redis::{Script, Value};
use std::ops::Range;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a store that does not answer is retried before the run fails, from
/// the moment the first request that failed was sent.
pub(super) const GRACE: Duration = Duration::from_secs(3);
/// How long a request waits for its reply before it is sent again (the pool sends
/// it at most twice per attempt: on the kept connection, then on a fresh one).
pub(super) const READ_TIMEOUT: Duration = Duration::from_millis(250);
/// How long a member stays in the schedule without a heartbeat, µs: above the grace
/// plus two read timeouts, so a process that rides out a stall is never pruned
/// while it is alive (its repeated requests still find their stored replies).
const MEMBER_TTL_US: u64 = 5_000_000;
/// How long a claim on cycles lives without a heartbeat, µs: after it, others re-run
/// the claim's unfinished cycles. As long as a member's TTL, for the same reason.
const CLAIM_LEASE_US: u64 = MEMBER_TTL_US;
const _: () = assert!(
    MEMBER_TTL_US as u128 > (GRACE.as_micros() + 2 * READ_TIMEOUT.as_micros()),
    "a live member must outlast the grace"
);
/// Between heartbeats.
const BEAT_EVERY: Duration = Duration::from_millis(250);
/// A new epoch's base is at most this far ahead of now (ns).
const HORIZON: Nanos = 2_000_000;
/// The listener looks at `halt` at least this often (a leaving process waits for it).
const LISTEN_TIMEOUT: Duration = Duration::from_millis(20);
/// A paused or waiting process looks again at least this often.
pub(super) const POLL: Duration = Duration::from_millis(50);

/// The spec as this process last read it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Known {
    pub(super) ver: u64,
    pub(super) paced: bool,
    pub(super) paused: bool,
    pub(super) stopped: bool,
    pub(super) spec: RateSpec,
}

/// The cycles and whether a claim is under way.
#[derive(Debug, Default)]
struct ChunkState {
    chunks: Chunks,
    claiming: bool,
    dry: bool,
}

/// One process's membership in a shared schedule.
pub(crate) struct Coordination {
    pub(super) url: String,
    keys: [String; 5],
    channel: String,
    pool: Pool,
    scripts: Scripts,
    run_id: String,
    id: u64,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) waiting: Waiting,
    pub(super) signal: Signal,
    pub(super) known: Mutex<Known>,
    pub(super) tickets: Mutex<Tickets>,
    pub(super) refill: Condvar,
    chunks: Mutex<ChunkState>,
    claimed: Condvar,
    stride: u64,
    pub(super) timebase: Mutex<TimeBase>,
    status: Mutex<Coordinated>,
    done: AtomicU64,
    pub(super) missed: AtomicU64,
    /// The part of `missed` the store has not counted: late tickets forfeited here
    /// between leases (the heartbeat adds them to the global count).
    pub(super) missed_here: AtomicU64,
    /// Tickets used: granted, or forfeited here (for the member's ledger).
    pub(super) used: AtomicU64,
    /// The engine clock's reading at the end of the latest stride run here.
    last_end: AtomicU64,
    round_trips: AtomicU64,
    pub(super) leased: AtomicU64,
    /// `done` and `missed_here` as the store last took them.
    reported: Mutex<(u64, u64)>,
    lost: Mutex<Option<String>>,
    /// The last request number sent (each request's copies share one).
    seq: AtomicU64,
    /// When the outage under way began (the send of its first failed request), and
    /// whether any of its failures was a store that did not answer.
    outage: Mutex<Option<(Instant, bool)>>,
    /// Held across a CHANGE: one in flight per member (its stored reply is then
    /// always the one a repeat asks for).
    changing: Mutex<()>,
    halt: AtomicBool,
    beat: Signal,
    events: RemoteSender,
    workers: Mutex<Vec<JoinHandle<()>>>,
}

/// A script's reply as strings (integers written out, nil as empty).
fn strings(v: Value) -> Vec<String> {
    match v {
        Value::Array(items) => items.into_iter().flat_map(strings).collect(),
        Value::BulkString(b) => vec![String::from_utf8_lossy(&b).into_owned()],
        Value::SimpleString(s) => vec![s],
        Value::Int(i) => vec![i.to_string()],
        Value::Okay => vec!["OK".into()],
        _ => vec![String::new()],
    }
}

fn num(v: &[String], i: usize) -> u64 {
    v.get(i).and_then(|s| s.parse().ok()).unwrap_or(0)
}

fn float(v: &[String], i: usize) -> f64 {
    v.get(i).and_then(|s| s.parse().ok()).unwrap_or(0.0)
}

/// Everything a join needs.
pub(crate) struct JoinSpec {
    pub(crate) cycles: Range<u64>,
    pub(crate) stride: u64,
    pub(crate) spec: Option<RateSpec>,
}

impl Coordination {
    /// Joins (or creates) the schedule at `at`; starts the heartbeat and listener
    /// threads. Remote changes go to `events`.
    pub(crate) fn join(
        at: &Coordinate,
        clock: Arc<dyn Clock>,
        waiting: Waiting,
        want: JoinSpec,
        events: RemoteSender,
    ) -> Result<Arc<Self>, StoreError> {
        let pool = Pool::open(at.server(), 2, READ_TIMEOUT, Duration::from_millis(50))?;
        let scripts = Scripts::new();
        let prefix = at.key_prefix();
        let keys = [
            format!("{prefix}:s"),
            format!("{prefix}:m"),
            format!("{prefix}:c"),
            format!("{prefix}:l"),
            format!("{prefix}:r"),
        ];
        let spec = want.spec.unwrap_or(RateSpec::new(1.0));
        let run_id = format!("{:016x}", random_id());
        let url = at.to_string();
        let t0 = clock.now();
        let reply = pool
            .with_conn(|c| {
                let mut inv = scripts.join.prepare_invoke();
                for k in &keys {
                    inv.key(k);
                }
                inv.arg(&run_id)
                    .arg(want.cycles.start)
                    .arg(want.cycles.end)
                    .arg(exact(spec.rate()))
                    .arg(exact(1e9 / spec.rate()))
                    .arg(exact(spec.strictness_value()))
                    .arg(exact(forfeit_fraction(spec.strictness_value())))
                    .arg(u8::from(want.spec.is_some()))
                    .arg(MEMBER_TTL_US)
                    .arg(format!("j:{run_id}"))
                    .arg(1);
                inv.invoke::<Value>(c)
            })
            .map(strings)?;
        let t1 = clock.now();
        let (id, run_id) = match reply.first().map(String::as_str) {
            Some("created" | "joined") => (num(&reply, 1), reply[2].clone()),
            Some("mismatch") => {
                return Err(StoreError::Mismatch {
                    url,
                    reason: format!(
                        "cycles {}..{}, not {}..{}",
                        num(&reply, 1),
                        num(&reply, 2),
                        want.cycles.start,
                        want.cycles.end
                    ),
                });
            }
            _ => {
                return Err(StoreError::BadReply {
                    reply: format!("{reply:?}"),
                });
            }
        };
        let mut timebase = TimeBase::default();
        timebase.offer(t0, t1, num(&reply, 4));
        let known = Known {
            ver: 0,
            paced: false,
            paused: false,
            stopped: false,
            spec,
        };
        let me = Arc::new(Self {
            url: url.clone(),
            channel: format!("{prefix}:n"),
            keys,
            pool,
            scripts,
            run_id,
            id,
            waiting,
            signal: Signal::new(),
            known: Mutex::new(known),
            tickets: Mutex::new(Tickets::default()),
            refill: Condvar::new(),
            chunks: Mutex::new(ChunkState::default()),
            claimed: Condvar::new(),
            stride: want.stride,
            timebase: Mutex::new(timebase),
            status: Mutex::new(Coordinated {
                url,
                member: id,
                ..Coordinated::default()
            }),
            done: AtomicU64::new(0),
            missed: AtomicU64::new(0),
            missed_here: AtomicU64::new(0),
            used: AtomicU64::new(0),
            last_end: AtomicU64::new(0),
            round_trips: AtomicU64::new(1),
            leased: AtomicU64::new(0),
            reported: Mutex::new((0, 0)),
            lost: Mutex::new(None),
            seq: AtomicU64::new(0),
            outage: Mutex::new(None),
            changing: Mutex::new(()),
            halt: AtomicBool::new(false),
            beat: Signal::new(),
            events,
            workers: Mutex::new(Vec::new()),
            clock,
        });
        // The spec in force (a joiner takes the schedule's), and a few more time
        // samples: the tightest round trip wins.
        for _ in 0..4 {
            me.refresh_spec(false)
                .map_err(|reason| StoreError::Unreachable {
                    url: me.url.clone(),
                    reason,
                })?;
        }
        if threads::lock(&me.known).stopped {
            // A stopped schedule whose last processes have not left yet: joining
            // it would end at once, as stopped.
            me.leave();
            return Err(StoreError::Stopped {
                url: me.url.clone(),
            });
        }
        me.heartbeat(false);
        let beat = {
            let me = me.clone();
            std::thread::Builder::new()
                .name("paceline-beat".into())
                .spawn(move || me.beat_loop())
        };
        let listen = {
            let me = me.clone();
            std::thread::Builder::new()
                .name("paceline-nudge".into())
                .spawn(move || me.listen_loop())
        };
        match (beat, listen) {
            (Ok(a), Ok(b)) => threads::lock(&me.workers).extend([a, b]),
            (a, b) => {
                me.halt.store(true, Ordering::Relaxed);
                me.beat.stop();
                let why = [a.err(), b.err()].into_iter().flatten().next();
                return Err(StoreError::Unreachable {
                    url: me.url.clone(),
                    reason: format!("could not start a thread: {why:?}"),
                });
            }
        }
        Ok(me)
    }

    // ----- the store ------------------------------------------------------------

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
            match got {
                Ok(v) => {
                    *threads::lock(&self.outage) = None;
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

    fn args(&self, rest: impl IntoIterator<Item = String>) -> Vec<String> {
        std::iter::once(self.run_id.clone()).chain(rest).collect()
    }

    /// The arguments of a script: the run's id, then `rest`.
    pub(super) fn gen_args(&self, rest: impl IntoIterator<Item = String>) -> Vec<String> {
        self.args(rest)
    }

    /// This process's member number.
    pub(super) fn member(&self) -> u64 {
        self.id
    }

    pub(super) fn lease_script(&self) -> &Script {
        &self.scripts.lease
    }

    /// Runs the heartbeat now (it reads a change of spec).
    pub(super) fn nudge_heartbeat(&self) {
        self.beat.notify();
    }

    /// The store was lost: every wait ends, the engine is told once.
    fn fail(&self, why: String) {
        let mut lost = threads::lock(&self.lost);
        if lost.is_none() {
            *lost = Some(why.clone());
            drop(lost);
            self.events.send(Remote::Lost(why));
            self.signal.stop();
            self.refill.notify_all();
            self.claimed.notify_all();
        }
    }

    pub(crate) fn lost(&self) -> Option<String> {
        threads::lock(&self.lost).clone()
    }

    /// Reads the spec in force; tells the engine what changed when `tell`.
    fn refresh_spec(&self, tell: bool) -> Result<(), String> {
        let r = self.call(&self.scripts.spec, None, &self.args([]), Some(9))?;
        let marked = r.get(10).is_none_or(|m| m != "0");
        let ver = num(&r, 1);
        let mut k = threads::lock(&self.known);
        if ver <= k.ver {
            return Ok(());
        }
        let rate = float(&r, 5);
        let strict = float(&r, 7);
        let spec = RateSpec::try_new(rate)
            .ok()
            .and_then(|s| s.try_strictness(strict).ok())
            .unwrap_or(k.spec);
        let new = Known {
            ver,
            paced: r.get(2).is_some_and(|s| s == "1"),
            paused: r.get(3).is_some_and(|s| s == "1"),
            stopped: r.get(4).is_some_and(|s| s == "1"),
            spec,
        };
        let old = std::mem::replace(&mut *k, new);
        drop(k);
        if tell {
            let event = if new.stopped && !old.stopped {
                Some(Remote::Stop)
            } else if new.paused && !old.paused {
                Some(Remote::Pause)
            } else if !new.paused && old.paused {
                Some(Remote::Resume(spec))
            } else if new.paced
                && (!old.paced
                    || old.spec.rate() != spec.rate()
                    || old.spec.strictness_value() != spec.strictness_value())
            {
                Some(Remote::Spec(spec, marked))
            } else {
                None
            };
            if let Some(e) = event {
                self.events.send(e);
            }
        }
        // Paused workers look again; a worker waiting for a slot keeps its ticket.
        self.signal.notify();
        self.refill.notify_all();
        Ok(())
    }

    /// The spec in force, as last read, and whether the schedule is paced.
    pub(crate) fn spec(&self) -> (RateSpec, bool) {
        let k = threads::lock(&self.known);
        (k.spec, k.paced)
    }

    /// Changes the schedule's spec for every process: a rate of 0 pauses, a
    /// positive rate after a pause resumes. A spec already in force changes nothing.
    pub(crate) fn set_spec(&self, spec: RateSpec, marked: bool) {
        let kind = {
            let k = threads::lock(&self.known);
            if k.stopped {
                return;
            }
            if spec.rate() == 0.0 {
                if k.paused {
                    return;
                }
                "pause"
            } else if spec.verb_value() == Verb::Restart {
                "restart"
            } else if k.paced
                && !k.paused
                && k.spec.rate() == spec.rate()
                && k.spec.strictness_value() == spec.strictness_value()
            {
                return;
            } else {
                "spec"
            }
        };
        self.change(kind, spec, marked);
    }

    /// Stops the schedule for every process.
    pub(crate) fn stop_everywhere(&self) {
        let spec = threads::lock(&self.known).spec;
        self.change("stop", spec, true);
    }

    fn change(&self, kind: &str, spec: RateSpec, marked: bool) {
        let rate = spec.rate().max(f64::MIN_POSITIVE);
        let args = self.args([
            kind.to_string(),
            exact(spec.rate()),
            exact(1e9 / rate),
            exact(spec.strictness_value()),
            exact(forfeit_fraction(spec.strictness_value())),
            HORIZON.to_string(),
            self.channel.clone(),
            u8::from(marked).to_string(),
        ]);
        let one = threads::lock(&self.changing);
        let got = self.call(&self.scripts.change, Some("change"), &args, None);
        drop(one);
        if let Ok(r) = got {
            let ver = num(&r, 1);
            let mut k = threads::lock(&self.known);
            if r.first().is_some_and(|s| s == "ok") && ver > k.ver {
                k.ver = ver;
                match kind {
                    "stop" => k.stopped = true,
                    "pause" => k.paused = true,
                    _ => {
                        k.paused = false;
                        k.paced = true;
                        k.spec = spec.verb(Verb::Start);
                    }
                }
            }
            drop(k);
            self.signal.notify();
            self.refill.notify_all();
        }
    }

    // ----- threads --------------------------------------------------------------

    fn beat_loop(self: Arc<Self>) {
        while !self.halt.load(Ordering::Relaxed) {
            let g = self.beat.generation();
            self.beat.wait_change_for(g, BEAT_EVERY);
            if self.halt.load(Ordering::Relaxed) || self.lost().is_some() {
                return;
            }
            self.heartbeat(false);
        }
    }

    fn listen_loop(self: Arc<Self>) {
        while !self.halt.load(Ordering::Relaxed) && self.lost().is_none() {
            let Ok(mut conn) = self.pool.dedicated(LISTEN_TIMEOUT) else {
                std::thread::sleep(POLL);
                continue;
            };
            let mut sub = conn.as_pubsub();
            if sub.subscribe(&self.channel).is_err() {
                std::thread::sleep(POLL);
                continue;
            }
            // A nudge missed while (re)subscribing is found here.
            let _ = self.refresh_spec(true);
            loop {
                if self.halt.load(Ordering::Relaxed) || self.lost().is_some() {
                    return;
                }
                match sub.get_message() {
                    Ok(_) => {
                        let _ = self.refresh_spec(true);
                    }
                    Err(e) if e.is_timeout() => {}
                    Err(_) => break,
                }
            }
        }
    }

    /// One heartbeat: renews the membership and claims (or releases them when
    /// `leaving`, with the unused tickets), adds this process's counts, and reads the
    /// global ones and the spec's version.
    fn heartbeat(&self, leaving: bool) {
        let progress = threads::lock(&self.chunks).chunks.progress();
        // Tickets left over when the cycles ran out, or when the schedule was
        // stopped everywhere, are not slots anyone missed: the schedule has no op
        // left for them. Left over while others go on (an interrupt here), they go
        // back, or count as missed when others leased after.
        let over = self.is_cycles_done() || threads::lock(&self.known).stopped;
        let unused = if leaving && !over {
            threads::lock(&self.tickets).drain_unused()
        } else {
            Vec::new()
        };
        let done = self.done.load(Ordering::Relaxed);
        let missed = self.missed_here.load(Ordering::Relaxed);
        let mut reported = threads::lock(&self.reported);
        let mut args = vec![
            self.id.to_string(),
            MEMBER_TTL_US.to_string(),
            CLAIM_LEASE_US.to_string(),
            (done - reported.0).to_string(),
            (missed - reported.1).to_string(),
            u8::from(leaving).to_string(),
            self.last_end().to_string(),
            self.used.load(Ordering::Relaxed).to_string(),
            progress.len().to_string(),
        ];
        for (key, upto) in &progress {
            args.extend([key.to_string(), upto.to_string()]);
        }
        args.push(unused.len().to_string());
        for r in &unused {
            args.extend([r.start.to_string(), r.end.to_string()]);
        }
        let Ok(r) = self.call(&self.scripts.beat, Some("beat"), &self.args(args), Some(7)) else {
            return;
        };
        *reported = (done, missed);
        drop(reported);
        threads::lock(&self.chunks).chunks.reported(&progress);
        let ver = num(&r, 1);
        let last = num(&r, 9);
        {
            let mut s = threads::lock(&self.status);
            s.processes_live = num(&r, 2);
            s.processes_seen = num(&r, 3);
            s.global_completed = num(&r, 4);
            s.global_missed = num(&r, 5);
            s.rerun_cycles = num(&r, 6);
            // From the first slot (the schedule's origin) to the latest op end
            // any process reported with its counts.
            s.global_achieved = if last > 0 {
                s.global_completed as f64 * 1e9 / last as f64
            } else {
                0.0
            };
        }
        if !leaving && ver > threads::lock(&self.known).ver {
            let _ = self.refresh_spec(true);
        }
    }
}

/// The cycles, the run's end, and the status.
impl Coordination {
    /// How many cycles one claim takes: about 100 ms of this process's share of the
    /// rate (64 strides unpaced), a whole number of strides.
    fn chunk_size(&self) -> u64 {
        let (spec, paced) = self.spec();
        let live = threads::lock(&self.status).processes_live.max(1);
        let strides = if paced && spec.rate() > 0.0 {
            (spec.rate() / live as f64 * 0.1 / self.stride as f64).ceil()
        } else {
            64.0
        };
        strides.clamp(1.0, (1u64 << 20) as f64) as u64 * self.stride
    }

    /// The next stride of at most `stride` cycles: from the chunks held, else from a
    /// new claim (an expired claim of another process first). Waits while others
    /// hold the last claims (they may still expire); `None` once no cycle is
    /// left anywhere, or the schedule stopped or was lost.
    pub(crate) fn take(&self, stride: u64) -> Option<Range<u64>> {
        let mut st = threads::lock(&self.chunks);
        loop {
            if self.lost().is_some() || self.halt.load(Ordering::Relaxed) {
                return None;
            }
            if let Some(r) = st.chunks.take(stride) {
                return Some(r);
            }
            if st.dry {
                return None;
            }
            if st.claiming {
                st = self
                    .claimed
                    .wait_timeout(st, POLL)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
                continue;
            }
            st.claiming = true;
            let held = st.chunks.progress();
            drop(st);
            let mut args = vec![
                self.id.to_string(),
                self.chunk_size().to_string(),
                CLAIM_LEASE_US.to_string(),
                held.len().to_string(),
            ];
            args.extend(held.iter().map(|(key, _)| key.to_string()));
            let args = self.args(args);
            let got = self.call(&self.scripts.claim, Some("claim"), &args, None);
            st = threads::lock(&self.chunks);
            st.claiming = false;
            self.claimed.notify_all();
            let Ok(r) = got else {
                return None;
            };
            match r.first().map(String::as_str) {
                Some("new" | "own" | "rerun") => st.chunks.add(num(&r, 1), num(&r, 2), num(&r, 3)),
                Some("wait") => {
                    drop(st);
                    let g = self.signal.generation();
                    let us = num(&r, 1).clamp(1_000, POLL.as_micros() as u64);
                    self.signal.wait_change_for(g, Duration::from_micros(us));
                    st = threads::lock(&self.chunks);
                }
                Some("dry") => st.dry = true,
                _ => {
                    // Stopped everywhere: the engine hears of it from the listener or
                    // the heartbeat (read now) and stops here, which ends this wait.
                    drop(st);
                    self.nudge_heartbeat();
                    let g = self.signal.generation();
                    self.signal.wait_change_for(g, POLL);
                    st = threads::lock(&self.chunks);
                }
            }
        }
    }

    /// A worker will not run `r`: another worker of this process will.
    pub(crate) fn give_back(&self, r: Range<u64>) {
        threads::lock(&self.chunks).chunks.give_back(r);
    }

    /// Every cycle of `r` ran (the heartbeat writes the claim's watermark).
    pub(crate) fn finished(&self, r: Range<u64>) {
        let n = r.end - r.start;
        if n == 0 {
            return;
        }
        threads::lock(&self.chunks).chunks.finished(r);
        self.done.fetch_add(n, Ordering::Relaxed);
        self.last_end.fetch_max(self.clock.now(), Ordering::Relaxed);
    }

    /// The end of this process's latest op on the schedule's time base (0 if none).
    fn last_end(&self) -> Nanos {
        match self.last_end.load(Ordering::Relaxed) {
            0 => 0,
            t => threads::lock(&self.timebase).to_schedule(t).unwrap_or(0),
        }
    }

    /// Whether no cycle is left for this process: none anywhere, or the schedule
    /// stopped or was lost.
    pub(crate) fn is_dry(&self) -> bool {
        if self.lost().is_some() || self.halt.load(Ordering::Relaxed) {
            return true;
        }
        let st = threads::lock(&self.chunks);
        st.dry && st.chunks.exhausted()
    }

    /// Whether the store said no cycle is left and every one held here ran.
    fn is_cycles_done(&self) -> bool {
        let st = threads::lock(&self.chunks);
        st.dry && st.chunks.exhausted()
    }

    /// Wakes every wait of this process (a stop here): pacing and claims end.
    pub(crate) fn stop_here(&self) {
        self.halt.store(true, Ordering::Relaxed);
        self.signal.stop();
        self.refill.notify_all();
        self.claimed.notify_all();
    }

    /// Leaves the schedule: a last heartbeat writes this process's counts and
    /// watermarks, releases its unfinished claims to the others at once and gives
    /// its unused tickets back (or counts them missed); the threads end.
    pub(crate) fn leave(&self) {
        self.stop_here();
        self.beat.stop();
        let workers: Vec<_> = threads::lock(&self.workers).drain(..).collect();
        for w in workers {
            let _ = w.join();
        }
        if self.lost().is_none() {
            self.heartbeat(true);
        }
    }

    /// This process's view, for reports.
    pub(crate) fn status(&self) -> Coordinated {
        let mut s = threads::lock(&self.status).clone();
        s.time_error_nanos = threads::lock(&self.timebase).error(self.clock.now());
        s.round_trips = self.round_trips.load(Ordering::Relaxed);
        s.tickets_leased = self.leased.load(Ordering::Relaxed);
        s
    }

    /// Slots this process forfeited (late leases, late tickets, tickets it could
    /// not give back).
    pub(crate) fn missed_slots(&self) -> u64 {
        self.missed.load(Ordering::Relaxed)
    }

    /// The clock reading the slots are on (the engine's clock).
    pub(crate) fn now(&self) -> Nanos {
        self.clock.now()
    }

    /// The waiting strategy of its workers.
    pub(crate) fn waiting(&self) -> Waiting {
        self.waiting
    }
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

/// A random 64-bit id for a new schedule (which run a key belongs to): the std
/// hasher's random keys, mixed with the time and the process id.
fn random_id() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.write_u32(std::process::id());
    h.finish()
}
