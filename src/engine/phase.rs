//! A run's lifecycle: one state machine, kept under the motors lock.
//!
//! ```text
//!            pause                 stop / fail              last motor left
//!  Running ─────────► Paused ───────────────────► Stopping ─────────────────► Finished
//!     ▲    ◄─────────    │                           ▲                          ▲
//!     │      resume      └───────────────────────────┘                          │
//!     └──────────────────────────────── last motor left (input dry) ────────────┘
//! ```
//!
//! [`next`] is the whole decision, a pure function of the phase and what was
//! asked; `Shared::transition` applies its side effects (the pacer, the signals,
//! the timeline) in one place, under the motors lock. The first cause of a stop
//! wins: a failure reported while stopping (a retry cut short by the stop) does
//! not turn a stop into a failure, and nothing changes a finished run.

use super::runtime::Outcome;
use crate::nanos::Nanos;
use crate::pace::RateSpec;

/// The motor-visible mirror of the phase (see [`Phase::mirror`]).
pub(crate) const RUNNING: u8 = 0;
/// Paused: motors wait at their next checkpoint.
pub(crate) const PAUSED: u8 = 1;
/// Stopping or finished: motors leave at their next checkpoint.
pub(crate) const STOPPING: u8 = 2;

/// Why a run is stopping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Cause {
    /// [`Control::stop`](super::Control::stop) asked for it.
    Stop,
    /// The run reached its duration
    /// ([`ActivityConfig::duration`](super::ActivityConfig::duration)).
    Elapsed,
    /// A failure: the message, and the op error's kind when an op's error caused it.
    Fail { why: String, kind: Option<String> },
}

/// Where a run stands.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Phase {
    /// Motors run ops.
    Running,
    /// Motors wait; `resume` is the spec to restore (`None`: the run was unpaced),
    /// `since` when the pause began, on the pacer's time base.
    Paused {
        resume: Option<RateSpec>,
        since: Nanos,
    },
    /// Motors leave after their current op.
    Stopping { cause: Cause },
    /// Every motor has left, at `at` on the engine's clock; `kind` is the error kind
    /// of an op error that failed the run.
    Finished {
        outcome: Outcome,
        at: Nanos,
        kind: Option<String>,
    },
}

/// What a control verb or a motor asks of the phase.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ask {
    /// Pause, keeping `resume` for later (see [`Phase::Paused`]).
    Pause { resume: Option<RateSpec>, at: Nanos },
    /// Resume a paused run.
    Resume,
    /// Stop for good.
    Stop,
    /// Stop for good: the run's duration is over.
    Elapse,
    /// Stop for good because of a failure.
    Fail { why: String, kind: Option<String> },
    /// The last motor left at `at`; `dry` says whether every cycle was handed out.
    Drained { dry: bool, at: Nanos },
}

impl Phase {
    /// The byte motors read on their hot path.
    pub(crate) fn mirror(&self) -> u8 {
        match self {
            Self::Running => RUNNING,
            Self::Paused { .. } => PAUSED,
            Self::Stopping { .. } | Self::Finished { .. } => STOPPING,
        }
    }

    /// Whether every motor has left.
    pub(crate) fn is_finished(&self) -> bool {
        matches!(self, Self::Finished { .. })
    }

    /// The outcome, once finished.
    pub(crate) fn outcome(&self) -> Option<&Outcome> {
        match self {
            Self::Finished { outcome, .. } => Some(outcome),
            _ => None,
        }
    }
}

/// The phase after `ask`, or `None` when `ask` changes nothing.
pub(crate) fn next(phase: &Phase, ask: Ask) -> Option<Phase> {
    use Phase::*;
    match (phase, ask) {
        (Finished { .. }, _) => None,
        (Running, Ask::Pause { resume, at }) => Some(Paused { resume, since: at }),
        (Paused { .. }, Ask::Resume) => Some(Running),
        (Running | Paused { .. }, Ask::Stop) => Some(Stopping { cause: Cause::Stop }),
        (Running | Paused { .. }, Ask::Elapse) => Some(Stopping {
            cause: Cause::Elapsed,
        }),
        (Running | Paused { .. }, Ask::Fail { why, kind }) => Some(Stopping {
            cause: Cause::Fail { why, kind },
        }),
        (Running | Paused { .. }, Ask::Drained { dry, at }) => Some(Finished {
            // Every motor left with cycles unrun only when something stopped them.
            outcome: if dry {
                Outcome::Completed
            } else {
                Outcome::Stopped
            },
            at,
            kind: None,
        }),
        (Stopping { cause }, Ask::Drained { at, .. }) => Some(match cause {
            Cause::Stop => Finished {
                outcome: Outcome::Stopped,
                at,
                kind: None,
            },
            Cause::Elapsed => Finished {
                outcome: Outcome::Elapsed,
                at,
                kind: None,
            },
            Cause::Fail { why, kind } => Finished {
                outcome: Outcome::Failed(why.clone()),
                at,
                kind: kind.clone(),
            },
        }),
        // Pausing a paused run, resuming a running one, anything but the last
        // motor leaving while stopping: nothing to do.
        _ => None,
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn fail(why: &str) -> Ask {
        Ask::Fail {
            why: why.into(),
            kind: Some("k".into()),
        }
    }

    #[test]
    fn the_first_cause_of_a_stop_wins() {
        let stopping = next(&Phase::Running, Ask::Stop).unwrap();
        // A failure reported while stopping (a retry cut short) changes nothing.
        assert_eq!(next(&stopping, fail("cycle 3: boom")), None);
        let done = next(&stopping, Ask::Drained { dry: true, at: 9 }).unwrap();
        assert_eq!(done.outcome(), Some(&Outcome::Stopped));

        let failing = next(&Phase::Running, fail("cycle 3: boom")).unwrap();
        assert_eq!(next(&failing, Ask::Stop), None);
        let done = next(&failing, Ask::Drained { dry: false, at: 9 }).unwrap();
        assert_eq!(
            done,
            Phase::Finished {
                outcome: Outcome::Failed("cycle 3: boom".into()),
                at: 9,
                kind: Some("k".into())
            }
        );
    }

    #[test]
    fn a_duration_ends_a_run_as_elapsed_and_the_first_cause_wins() {
        let elapsing = next(&Phase::Running, Ask::Elapse).unwrap();
        assert_eq!(elapsing.mirror(), STOPPING);
        // A stop or a failure after the deadline changes nothing.
        assert_eq!(next(&elapsing, Ask::Stop), None);
        assert_eq!(next(&elapsing, fail("late")), None);
        let done = next(&elapsing, Ask::Drained { dry: false, at: 9 }).unwrap();
        assert_eq!(done.outcome(), Some(&Outcome::Elapsed));
        // A paused run elapses too; a stopping one keeps its cause.
        let paused = Phase::Paused {
            resume: None,
            since: 1,
        };
        assert!(next(&paused, Ask::Elapse).is_some());
        let stopping = next(&Phase::Running, Ask::Stop).unwrap();
        assert_eq!(next(&stopping, Ask::Elapse), None);
    }

    #[test]
    fn a_finished_run_never_changes() {
        let done = Phase::Finished {
            outcome: Outcome::Completed,
            at: 5,
            kind: None,
        };
        for ask in [
            Ask::Stop,
            Ask::Elapse,
            Ask::Resume,
            fail("x"),
            Ask::Pause {
                resume: None,
                at: 6,
            },
            Ask::Drained { dry: true, at: 7 },
        ] {
            assert_eq!(next(&done, ask), None);
        }
    }

    #[test]
    fn pause_and_resume_are_idempotent_and_draining_completes_only_when_dry() {
        let p = next(
            &Phase::Running,
            Ask::Pause {
                resume: None,
                at: 1,
            },
        )
        .unwrap();
        assert_eq!(p.mirror(), PAUSED);
        assert_eq!(
            next(
                &p,
                Ask::Pause {
                    resume: None,
                    at: 2
                }
            ),
            None
        );
        assert_eq!(next(&Phase::Running, Ask::Resume), None);
        assert_eq!(next(&p, Ask::Resume), Some(Phase::Running));
        let done = next(&p, Ask::Drained { dry: true, at: 3 }).unwrap();
        assert_eq!(done.outcome(), Some(&Outcome::Completed));
        let cut = next(&Phase::Running, Ask::Drained { dry: false, at: 3 }).unwrap();
        assert_eq!(cut.outcome(), Some(&Outcome::Stopped));
        assert_eq!(cut.mirror(), STOPPING);
    }
}
