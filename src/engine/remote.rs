//! A run on a shared schedule (`coordinate=`): changes made by other processes
//! applied here, the stop that reaches every process, and leaving the schedule.
//!
//! A watcher thread per run receives the schedule's [`Remote`] changes and applies
//! them through the same state machine as local control verbs (under the motors
//! lock). The pacer's own `set_spec` then finds the spec already in force and does
//! not publish it again, so a change made anywhere is applied once everywhere.

use super::error::EngineError;
use super::phase::{Ask, Phase};
use super::runtime::Shared;
use super::seam::{Coordinated, Remote};
use crate::metrics::Event;
use crate::pace::Verb;
use crate::sync::threads::{self, Arc, Ordering};
use crossbeam_channel::{Receiver, RecvTimeoutError};
use std::time::Duration;

impl Shared {
    /// Starts the watcher thread of a shared schedule's changes.
    pub(crate) fn watch(self: &Arc<Self>, rx: Receiver<Remote>) -> Result<(), EngineError> {
        let weak = Arc::downgrade(self);
        let spawned = std::thread::Builder::new()
            .name(format!("{}-shared", self.alias))
            .spawn(move || {
                loop {
                    let got = rx.recv_timeout(Duration::from_millis(100));
                    let Some(shared) = weak.upgrade() else {
                        return;
                    };
                    match got {
                        Ok(r) => shared.apply_remote(r),
                        Err(RecvTimeoutError::Timeout) => {}
                        Err(RecvTimeoutError::Disconnected) => return,
                    }
                    if shared.is_finished() {
                        shared.leave_schedule();
                        return;
                    }
                }
            });
        match spawned {
            Ok(_) => Ok(()),
            Err(e) => {
                self.leave_schedule();
                Err(EngineError::Spawn {
                    message: e.to_string(),
                })
            }
        }
    }

    /// How long this process waited for cycles others' claims held since the
    /// last call (`None` for a local pacer): the run's snapshots take it.
    pub(crate) fn claim_wait_delta(&self) -> Option<crate::nanos::Nanos> {
        let mut seen = threads::lock(&self.claim_wait_seen);
        let now = self.pacer.claim_wait_nanos()?;
        let last = seen.replace(now).unwrap_or(0);
        Some(now.saturating_sub(last))
    }

    /// Applies a change made elsewhere.
    fn apply_remote(&self, r: Remote) {
        match r {
            Remote::Lost(why) => self.fail(why, Some("shared-schedule")),
            Remote::Stop => self.stop_here(),
            Remote::Note(text) => self.metrics.mark(self.clock.now(), Event::Note(text)),
            Remote::Pause => {
                let mut m = threads::lock(&self.motors);
                let ask = Ask::Pause {
                    resume: self.spec(),
                    at: self.pacer.now(),
                };
                self.transition_remote(&mut m, ask);
            }
            Remote::Resume(spec) => {
                let mut m = threads::lock(&self.motors);
                if let Phase::Paused { resume, .. } = &mut m.phase {
                    *resume = Some(spec.verb(Verb::Configure));
                }
                self.transition_remote(&mut m, Ask::Resume);
            }
            Remote::Spec(spec, marked) => {
                let mut m = threads::lock(&self.motors);
                if m.phase.is_finished() {
                    return;
                }
                let from = if self.is_paced() {
                    self.pacer.spec().rate()
                } else {
                    f64::INFINITY
                };
                if let Phase::Paused { resume, .. } = &mut m.phase {
                    *resume = Some(spec);
                } else {
                    if !self.is_paced() {
                        self.restart_missed();
                        self.paced.store(true, Ordering::Relaxed);
                    }
                    // A rate set to 0, or raised from 0, elsewhere: the rate-0
                    // stretch begins or ends here too (motors, then missed).
                    self.rate_set_missed(spec.rate());
                }
                if marked {
                    self.metrics.mark(
                        self.clock.now(),
                        Event::Rate {
                            from,
                            to: spec.rate(),
                        },
                    );
                }
            }
        }
    }

    /// Stops the run for every process on its shared schedule (a control `stop`),
    /// or this run alone when it paces alone.
    pub(crate) fn stop_everywhere(&self) {
        if self.pacer.is_shared() && !self.is_finished() {
            self.pacer.stop_everywhere();
        }
        self.stop_here();
    }

    /// Leaves the shared schedule once the run has finished: the last counts and
    /// claims are written, unused tickets given back. Idempotent, and a second
    /// caller waits for the first to finish; nothing to do for a run that paces
    /// alone.
    pub(crate) fn leave_schedule(&self) {
        if self.pacer.is_shared() {
            let mut left = threads::lock(&self.left);
            if !*left {
                self.pacer.leave();
                *left = true;
            }
        }
    }

    /// The shared schedule's status, if the run is on one. Once the run has
    /// finished, the numbers are those of the last heartbeat, written as this
    /// process left (the watcher thread may still be leaving: this waits for it).
    pub(crate) fn coordinated(&self) -> Option<Coordinated> {
        if !self.pacer.is_shared() {
            return None;
        }
        if self.is_finished() {
            self.leave_schedule();
        }
        self.pacer.status()
    }
}
