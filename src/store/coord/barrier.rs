//! The start barrier (`min_members: N`): a process that joins a schedule not yet
//! open waits until N processes are live on it (or its timeout), so that no slot
//! is granted and no cycle claimed before they are all there. The process that
//! finds them all opens the schedule with its first slot [`LEAD`] ahead: every
//! waiting process hears of it first (the nudge, or its next look within
//! [`POLL`]), and the first second looks like the rest.

use super::calls::num;
use super::session::{Coordination, POLL};
use crate::nanos::Nanos;
use crate::store::error::StoreError;
use std::time::{Duration, Instant};

/// How far ahead of the opening the schedule's first slot is, ns: above
/// [`POLL`], the longest a waiting process takes to look again.
pub(super) const LEAD: Nanos = 100_000_000;
const _: () = assert!(
    LEAD as u128 > POLL.as_nanos(),
    "every process hears of it first"
);

impl Coordination {
    /// Waits at the start barrier until the schedule is open (at once when it is,
    /// or when this process is the `need`-th), or `timeout`.
    pub(super) fn await_members(&self, need: u64, timeout: Duration) -> Result<(), StoreError> {
        let t0 = Instant::now();
        let args = self.args([need.to_string(), LEAD.to_string(), self.channel.clone()]);
        // The most processes seen at once: one that gave up just before is still
        // one that came.
        let mut came = 0;
        loop {
            let g = self.signal.generation();
            let r = self
                .call(&self.scripts.barrier, Some("barrier"), &args, None)
                .map_err(|reason| StoreError::Unreachable {
                    url: self.url.clone(),
                    reason,
                    io: None,
                })?;
            match r.first().map(String::as_str) {
                Some("open") => {
                    // The opening's epoch is read with the spec (the listener may
                    // have read it already).
                    let _ = self.refresh_spec(false);
                    return Ok(());
                }
                Some("wait") => {
                    let waited = t0.elapsed();
                    came = came.max(num(&r, 1));
                    if waited >= timeout {
                        return Err(StoreError::TooFewMembers {
                            url: self.url.clone(),
                            came,
                            need: num(&r, 2),
                            waited,
                        });
                    }
                    // The nudge of an opening wakes this (the listener reads the
                    // new version); else look again within POLL.
                    self.signal
                        .wait_change_for(g, POLL.min(timeout.saturating_sub(waited)));
                }
                _ => {
                    return Err(StoreError::BadReply {
                        reply: format!("{r:?}"),
                    });
                }
            }
        }
    }
}
