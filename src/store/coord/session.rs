//! [`Coordination`]: one process's membership in a shared schedule. It joins, talks
//! to the store through the scripts (retrying a lost connection for a grace
//! period, then failing the run), runs a heartbeat thread (membership, claims,
//! counts, the spec's version) and a listener thread (the pub/sub nudge), and tells
//! the engine of changes made elsewhere through a channel of [`Remote`]s.
//!
//! This file holds the state, the join, the leave and the status; the store calls
//! are in `super::calls`, the heartbeat, listener and spec in `super::membership`,
//! the cycles in `super::cycles`, and the pacing side (tickets) in `super::pacing`.
//!
//! # Ground rules
//!
//! - Each piece of state sits under its own lock: `known` (the spec as last read),
//!   `tickets` (with the `refill` signal), `chunks` (with `claimed`), `timebase`,
//!   `status`, `reported`. No lock is held across a round trip but `reported`,
//!   which only the heartbeat takes (so two heartbeats never report the same
//!   counts); a lease in flight is marked by the `refilling` flag and a claim by
//!   the `claiming` flag, not by a held lock. Lock order: `reported`, then
//!   `tickets` or `chunks`, then `known`, then `status` or `timebase`.
//! - Counters (`done`, `missed`, `missed_here`, `used`, `last_end`, `round_trips`, `leased`,
//!   `claim_wait`) are `Relaxed` atomics:
//!   only their values matter, and the heartbeat reads them as a snapshot.
//! - `halt` tells the threads to end; `signal` wakes everything that waits (stop,
//!   a change of spec, a lost store). Once `lost` is set it stays set.

use super::Coordinate;
use super::calls::{num, strings};
use super::chunks::Chunks;
use super::pacing::{Ledger, Tickets};
use super::scripts::Scripts;
use super::slots::{exact, forfeit_fraction};
use super::starts::Starts;
use super::timebase::TimeBase;
use crate::clock::{Clock, Signal, Waiting};
use crate::engine::{Coordinated, Remote, RemoteSender};
use crate::nanos::Nanos;
use crate::pace::RateSpec;
use crate::store::conn::Pool;
use crate::store::error::StoreError;
use crate::sync::threads::{self, Arc, AtomicBool, AtomicU64, Mutex, Ordering};
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
pub(super) const MEMBER_TTL_US: u64 = 5_000_000;
/// How long a claim on cycles lives without a heartbeat, µs: after it, others re-run
/// the claim's unfinished cycles. As long as a member's TTL, for the same reason.
pub(super) const CLAIM_LEASE_US: u64 = MEMBER_TTL_US;
const _: () = assert!(
    MEMBER_TTL_US as u128 > (GRACE.as_micros() + 2 * READ_TIMEOUT.as_micros()),
    "a live member must outlast the grace"
);
/// Between heartbeats.
pub(super) const BEAT_EVERY: Duration = Duration::from_millis(250);
/// A process whose last heartbeat was sent this long ago (ns) may have been pruned
/// (frozen past its TTL): its workers use no ticket until a heartbeat answers.
/// Half a second under the TTL, and above anything a live process waits between
/// heartbeats (a stall ridden out for the grace, two read timeouts, a beat).
pub(super) const DOUBT_AFTER: Nanos = MEMBER_TTL_US * 1000 - 500_000_000;
const _: () = assert!(
    DOUBT_AFTER as u128 > (GRACE.as_nanos() + 2 * READ_TIMEOUT.as_nanos() + BEAT_EVERY.as_nanos()),
    "a live member is not in doubt"
);
/// A new epoch's base is at most this far ahead of now (ns).
pub(super) const HORIZON: Nanos = 2_000_000;
/// The listener looks at `halt` at least this often (a leaving process waits for it).
pub(super) const LISTEN_TIMEOUT: Duration = Duration::from_millis(20);
/// A paused or waiting process looks again at least this often.
pub(super) const POLL: Duration = Duration::from_millis(50);

/// The spec as this process last read it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Known {
    pub(super) ver: u64,
    /// The version that installed the latest pause (0: none): tickets of older
    /// epochs are void.
    pub(super) pause_ver: u64,
    pub(super) paced: bool,
    pub(super) paused: bool,
    pub(super) stopped: bool,
    pub(super) spec: RateSpec,
}

/// The cycles and whether a claim is under way.
#[derive(Debug, Default)]
pub(super) struct ChunkState {
    pub(super) chunks: Chunks,
    pub(super) claiming: bool,
    pub(super) dry: bool,
    /// The workers waiting for a lost member's claims (`super::cycles`).
    pub(super) lost_wait: super::cycles::LostWait,
}

/// One process's membership in a shared schedule.
pub(crate) struct Coordination {
    /// Itself, for the round trips an async worker's helper thread runs (they
    /// hold it while they last).
    pub(super) me: std::sync::Weak<Coordination>,
    pub(super) url: String,
    pub(super) keys: [String; 5],
    pub(super) channel: String,
    pub(super) pool: Pool,
    pub(super) scripts: Scripts,
    pub(super) run_id: String,
    pub(super) id: u64,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) waiting: Waiting,
    pub(super) signal: Signal,
    pub(super) known: Mutex<Known>,
    pub(super) tickets: Mutex<Tickets>,
    /// Bumped when a lease in flight ends (or anything a worker waiting for
    /// one must see): a `Signal`, so an async worker waits on it driving its ops.
    pub(super) refill: Signal,
    pub(super) chunks: Mutex<ChunkState>,
    /// Bumped when a claim in flight ends (a `Signal`, as `refill` is).
    pub(super) claimed: Signal,
    pub(super) stride: u64,
    pub(super) timebase: Mutex<TimeBase>,
    pub(super) status: Mutex<Coordinated>,
    pub(super) done: AtomicU64,
    pub(super) missed: AtomicU64,
    /// The part of `missed` the store has not counted: late tickets forfeited here
    /// between leases (the heartbeat adds them to the global count).
    pub(super) missed_here: AtomicU64,
    /// Tickets used: granted, or forfeited here (for the member's ledger).
    pub(super) used: AtomicU64,
    /// The engine clock's reading at the end of the latest stride run here.
    pub(super) last_end: AtomicU64,
    pub(super) round_trips: AtomicU64,
    pub(super) leased: AtomicU64,
    /// What became of the leased tickets.
    pub(super) ledger: Ledger,
    /// The ops started here, for the global start rate (lock-free: the workers
    /// write it as their ops start).
    pub(super) starts: Starts,
    /// `done`, `missed_here` and the starts as the store last took them.
    pub(super) reported: Mutex<(u64, u64, u64)>,
    pub(super) lost: Mutex<Option<String>>,
    /// The last request number sent (each request's copies share one).
    pub(super) seq: AtomicU64,
    /// When the outage under way began (the send of its first failed request), and
    /// whether any of its failures was a store that did not answer.
    pub(super) outage: Mutex<Option<(Instant, bool)>>,
    /// How long the store has not answered, for the verdict (`super::calls`).
    pub(super) silence: Mutex<super::calls::Silence>,
    /// Held across a CHANGE: one in flight per member (its stored reply is then
    /// always the one a repeat asks for).
    pub(super) changing: Mutex<()>,
    /// When the last heartbeat that renewed the membership was sent (engine clock).
    pub(super) renewed_at: AtomicU64,
    /// Times this process came back after being pruned while alive.
    pub(super) rejoins: AtomicU64,
    /// How long this process waited for cycles that others' claims held (ns on
    /// the engine clock, counted once however many workers waited together;
    /// `super::cycles`): at the schedule's end, the claims of a member that
    /// died or stalled, until their lease expires.
    pub(super) claim_wait: AtomicU64,
    pub(super) halt: AtomicBool,
    pub(super) beat: Signal,
    pub(super) events: RemoteSender,
    pub(super) workers: Mutex<Vec<JoinHandle<()>>>,
}

/// Everything a join needs.
pub(crate) struct JoinSpec {
    pub(crate) cycles: Range<u64>,
    pub(crate) stride: u64,
    pub(crate) spec: Option<RateSpec>,
    /// The start barrier: processes to wait for (1: none), and for how long.
    pub(crate) min_members: u64,
    pub(crate) min_members_timeout: Duration,
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
        // The join is safe to send twice (its request number is `j:RUNID`, 1), so
        // a server slow to answer (a busy machine, a brief stall) is tried again
        // for the grace period; a refused connection fails at once.
        let patience = Instant::now() + GRACE;
        let mut t0 = clock.now();
        let reply = loop {
            let got = pool.with_conn(|c| {
                let mut inv = scripts.join.prepare_invoke();
                for k in &keys {
                    inv.key(k);
                }
                inv.arg(&run_id)
                    .arg(want.cycles.start)
                    .arg(want.cycles.end)
                    .arg(exact(spec.rate()))
                    // Paused at rate 0: any slice will do until a rate is set.
                    .arg(exact(
                        1e9 / if spec.rate() > 0.0 { spec.rate() } else { 1.0 },
                    ))
                    .arg(exact(spec.strictness_value()))
                    .arg(exact(forfeit_fraction(spec.strictness_value())))
                    .arg(u8::from(want.spec.is_some()))
                    .arg(MEMBER_TTL_US)
                    .arg(want.min_members.max(1))
                    .arg(format!("j:{run_id}"))
                    .arg(1);
                inv.invoke::<Value>(c)
            });
            match got {
                Err(e) if e.is_transient() && !e.is_refused() && Instant::now() < patience => {
                    std::thread::sleep(Duration::from_millis(60));
                    t0 = clock.now();
                }
                got => break got.map(strings)?,
            }
        };
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
            pause_ver: 0,
            paced: false,
            paused: false,
            stopped: false,
            spec,
        };
        let me = Arc::new_cyclic(|me| Self {
            me: me.clone(),
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
            refill: Signal::new(),
            chunks: Mutex::new(ChunkState::default()),
            claimed: Signal::new(),
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
            ledger: Ledger::default(),
            starts: Starts::default(),
            reported: Mutex::new((0, 0, 0)),
            lost: Mutex::new(None),
            seq: AtomicU64::new(0),
            outage: Mutex::new(None),
            silence: Mutex::new(super::calls::Silence::default()),
            changing: Mutex::new(()),
            renewed_at: AtomicU64::new(t0),
            rejoins: AtomicU64::new(0),
            claim_wait: AtomicU64::new(0),
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
                    io: None,
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
                    io: None,
                });
            }
        }
        // The start barrier, with the heartbeat running (the wait may be long).
        if let Err(e) = me.await_members(want.min_members.max(1), want.min_members_timeout) {
            me.leave();
            return Err(e);
        }
        Ok(me)
    }

    // ----- the store ------------------------------------------------------------

    /// Itself, shared (it is always held in an `Arc`).
    pub(super) fn arc(&self) -> Arc<Self> {
        self.me
            .upgrade()
            .expect("a Coordination is used only through its Arc")
    }

    pub(super) fn args(&self, rest: impl IntoIterator<Item = String>) -> Vec<String> {
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
    pub(super) fn fail(&self, why: String) {
        let mut lost = threads::lock(&self.lost);
        if lost.is_none() {
            *lost = Some(why.clone());
            drop(lost);
            self.events.send(Remote::Lost(why));
            self.signal.stop();
            self.refill.notify();
            self.claimed.notify();
        }
    }

    pub(crate) fn lost(&self) -> Option<String> {
        threads::lock(&self.lost).clone()
    }

    /// Whether this process may have been pruned (frozen past its TTL): no
    /// heartbeat has renewed its membership for [`DOUBT_AFTER`].
    pub(super) fn in_doubt(&self) -> bool {
        self.clock
            .now()
            .saturating_sub(self.renewed_at.load(Ordering::Relaxed))
            >= DOUBT_AFTER
    }

    // ----- threads --------------------------------------------------------------
}

/// The run's end, and the status.
impl Coordination {
    /// Wakes every wait of this process (a stop here): pacing and claims end.
    pub(crate) fn stop_here(&self) {
        self.halt.store(true, Ordering::Relaxed);
        self.signal.stop();
        self.refill.notify();
        self.claimed.notify();
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
        } else {
            // The store is gone: the tickets held go nowhere.
            let held: u64 = threads::lock(&self.tickets)
                .drain_unused()
                .iter()
                .map(|r| r.end - r.start)
                .sum();
            super::pacing::Ledger::add(&self.ledger.voided, held);
        }
    }

    /// This process's view, for reports.
    pub(crate) fn status(&self) -> Coordinated {
        let mut s = threads::lock(&self.status).clone();
        s.time_error_nanos = threads::lock(&self.timebase).error(self.clock.now());
        s.round_trips = self.round_trips.load(Ordering::Relaxed);
        s.tickets_leased = self.leased.load(Ordering::Relaxed);
        s.rejoins = self.rejoins.load(Ordering::Relaxed);
        s.claim_wait_nanos = self.claim_wait.load(Ordering::Relaxed);
        s.tickets = self.ledger.read();
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
