//! The shared schedule: several processes pace one activity at one aggregate rate
//! and share its cycle range, through Redis (`coordinate=redis://HOST:PORT/NAME`).
//!
//! `docs/scale-out.md` explains the design; `../shared/REFERENCE.md` §5 is the
//! contract. In short:
//!
//! - **Tickets.** One ticket counter in the store; slot k of the epoch in force is
//!   `base + floor((k - first) × slice)` on the schedule's time base (nanoseconds
//!   since the schedule's origin, a reading of the server's `TIME`). A process leases
//!   tickets in batches of about 1 ms of its own ops with one script call, and paces
//!   them locally at nanosecond precision. Strictness is applied by the lease script
//!   from the server's clock (a late lease forfeits, or moves the shared burst
//!   anchor), and again locally between leases.
//! - **Epochs.** A rate change, pause or resume installs a new epoch at the ticket
//!   counter, atomically: every ticket leased after it is on the new spec, every one
//!   leased before keeps its slot. A pub/sub nudge (and a version read at every
//!   heartbeat) tells the other processes.
//! - **Cycles.** Claimed in chunks with a lease that the owner renews, carrying how
//!   far it has run; an expired claim is taken over by another process, which runs
//!   its unfinished part again and counts it as re-run.
//! - **Time base.** Each process maps its clock to the store's time with the offset of
//!   its best recent `TIME` round trip; half that round trip is the error it reports.
//!
//! | piece | file |
//! |---|---|
//! | the URL, the public status | this file |
//! | the scripts (join, lease, change, heartbeat, claim, leave) | `scripts.rs` |
//! | the slot arithmetic and local strictness, pure | `slots.rs` |
//! | the time base: offset samples and their error | `timebase.rs` |
//! | chunks of cycles: hand-out, give-back, the done watermark | `chunks.rs` |
//! | `Coordination`: join, leave, the run's end, status | `session.rs` |
//! | store calls: retry for the grace, request numbers, the lost-store message | `calls.rs` |
//! | heartbeat and membership, the spec read and changed, the nudge listener | `membership.rs` |
//! | cycles: claims, strides, what ran | `cycles.rs` |
//! | the engine's seams (`Coordinator`, `SlotSource`, `CycleSource`) | `engine_seam.rs` |
//! | leased tickets paced locally, prefetch | `pacing.rs` |
//! | the start barrier (`min_members`) | `barrier.rs` |
//! | the global start rate: each process's starts, their sums, pure | `starts.rs` |

mod barrier;
mod calls;
mod chunks;
mod cycles;
mod engine_seam;
mod membership;
mod pacing;
mod scripts;
mod session;
mod slots;
mod starts;
mod timebase;
#[cfg(all(test, not(loom)))]
mod twice_tests;

use super::error::{StoreError, redact};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// Where a shared schedule lives: a Redis server and a schedule name, written
/// `redis://HOST:PORT/NAME` (a password as `redis://:PASSWORD@HOST:PORT/NAME`).
///
/// Every process that runs an activity with the same `Coordinate` paces it on one
/// schedule at the activity's rate in total, and runs each cycle once across them.
///
/// ```
/// use paceline::Coordinate;
/// let c: Coordinate = "redis://127.0.0.1:6379/demo".parse()?;
/// assert_eq!((c.server(), c.name()), ("redis://127.0.0.1:6379", "demo"));
/// assert_eq!(c.to_string(), "redis://127.0.0.1:6379/demo");
/// let err = "redis://127.0.0.1:6379".parse::<Coordinate>().unwrap_err();
/// assert!(err.to_string().contains("redis://HOST:PORT/NAME"), "{err}");
/// # Ok::<(), paceline::StoreError>(())
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Coordinate {
    server: String,
    name: String,
    min_members: u64,
    min_members_timeout: Duration,
}

/// How long the start barrier waits for `min_members` processes by default: 120 s
/// (pods scheduled on several nodes, their images pulled, start far apart).
///
/// ```
/// let c = paceline::Coordinate::parse("redis://127.0.0.1:6379/demo")?;
/// assert_eq!(c.min_members_timeout(), paceline::DEFAULT_MIN_MEMBERS_TIMEOUT);
/// # Ok::<(), paceline::StoreError>(())
/// ```
pub const DEFAULT_MIN_MEMBERS_TIMEOUT: Duration = Duration::from_secs(120);

impl Coordinate {
    /// Parses `redis://HOST:PORT/NAME`. The name is 1 to 64 letters, digits, `-`, `_`
    /// or `.`; no server is contacted.
    ///
    /// ```
    /// assert!(paceline::Coordinate::parse("redis://h:1/a b").is_err());
    /// ```
    pub fn parse(url: &str) -> Result<Self, StoreError> {
        let bad = |reason: &str| StoreError::BadCoordinate {
            url: redact(url),
            reason: reason.to_string(),
        };
        let rest = url
            .strip_prefix("redis://")
            .ok_or_else(|| bad("it must start with redis://"))?;
        let (authority, name) = rest
            .split_once('/')
            .ok_or_else(|| bad("it names no schedule after the host and port"))?;
        if authority.is_empty() || authority.ends_with('@') {
            return Err(bad("it names no host"));
        }
        if name.is_empty() {
            return Err(bad("the schedule name after the last `/` is empty"));
        }
        if name.len() > 64
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            return Err(bad(
                "the schedule name must be 1 to 64 letters, digits, `-`, `_` or `.`",
            ));
        }
        let server = format!("redis://{authority}");
        redis::Client::open(server.as_str()).map_err(|e| bad(&e.to_string()))?;
        Ok(Self {
            server,
            name: name.to_string(),
            min_members: 1,
            min_members_timeout: DEFAULT_MIN_MEMBERS_TIMEOUT,
        })
    }

    /// A start barrier (`min_members: N`): no slot of the schedule is granted, and
    /// no cycle claimed, until `n` processes have joined it; a process that waited
    /// `timeout` for them fails to start, saying how many came. When they are all
    /// there, the schedule's first slot is set a moment ahead, so that every
    /// process starts on time. A schedule already started is not held. `n` of 0
    /// or 1: no barrier (the default).
    ///
    /// ```
    /// use std::time::Duration;
    /// let c = paceline::Coordinate::parse("redis://127.0.0.1:6379/demo")?
    ///     .min_members(3, Duration::from_secs(30));
    /// assert_eq!((c.min_members_count(), c.min_members_timeout()), (3, Duration::from_secs(30)));
    /// assert_eq!(c.to_string(), "redis://127.0.0.1:6379/demo");
    /// # Ok::<(), paceline::StoreError>(())
    /// ```
    pub fn min_members(mut self, n: u64, timeout: Duration) -> Self {
        self.min_members = n.max(1);
        self.min_members_timeout = timeout;
        self
    }

    /// How many processes the start barrier waits for (1: no barrier).
    ///
    /// See [`min_members`](Self::min_members) for an example.
    pub fn min_members_count(&self) -> u64 {
        self.min_members
    }

    /// How long the start barrier waits.
    ///
    /// See [`min_members`](Self::min_members) for an example.
    pub fn min_members_timeout(&self) -> Duration {
        self.min_members_timeout
    }

    /// The server's URL, `redis://HOST:PORT` (with the password, if one was given).
    ///
    /// See [`Coordinate`] for an example.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The schedule's name.
    ///
    /// See [`Coordinate`] for an example.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The prefix of every key of this schedule: hash-tagged, so that a Redis Cluster
    /// keeps them in one slot (the scripts touch them together).
    pub(crate) fn key_prefix(&self) -> String {
        format!("{{paceline:sched:{}}}", self.name)
    }
}

impl fmt::Display for Coordinate {
    /// The URL with any password replaced by `***`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", redact(&self.server), self.name)
    }
}

impl fmt::Debug for Coordinate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Coordinate({self})")
    }
}

impl FromStr for Coordinate {
    type Err = StoreError;
    fn from_str(s: &str) -> Result<Self, StoreError> {
        Self::parse(s)
    }
}
