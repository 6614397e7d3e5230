//! The engine's errors.

use std::fmt;

/// Why the engine refused to start an activity.
///
/// ```
/// use paceline::{ActivityConfig, Engine, EngineError, OpError, OpRunner, Workload, WorkerContext};
/// struct Nop;
/// impl Workload for Nop {
///     fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> { unreachable!() }
/// }
/// let err = Engine::new().start(ActivityConfig::new("a").stride(0), Nop).unwrap_err();
/// assert!(matches!(err, EngineError::BadConfig { .. }));
/// assert_eq!(err.to_string(), "activity `a`: bad stride: stride 0: use 1 to 2^32");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EngineError {
    /// A setting is out of range; the message says which and the accepted values.
    BadConfig {
        /// The activity.
        alias: String,
        /// The setting.
        what: String,
        /// What was wrong and how to fix it.
        why: String,
    },
    /// An activity with this alias is already running in this engine: give the new
    /// one another alias.
    DuplicateAlias {
        /// The alias.
        alias: String,
    },
    /// The OS would not start a worker thread.
    Spawn {
        /// The OS's message.
        message: String,
    },
    /// The activity could not join its shared schedule
    /// ([`ActivityConfig::coordinate`](super::ActivityConfig::coordinate)): the store
    /// cannot be reached, or the schedule there is for another cycle range. The
    /// message says which and how to fix it.
    Coordinate {
        /// The activity.
        alias: String,
        /// What went wrong and how to fix it.
        message: String,
    },
    /// The engine was closed ([`Engine::close`](super::Engine::close), as on an
    /// interrupt): it starts nothing more.
    Closed {
        /// The activity that was not started.
        alias: String,
    },
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadConfig { alias, what, why } => {
                write!(f, "activity `{alias}`: bad {what}: {why}")
            }
            Self::DuplicateAlias { alias } => write!(
                f,
                "an activity called `{alias}` is already running: give the new one another alias"
            ),
            Self::Spawn { message } => write!(f, "could not start a worker thread: {message}"),
            Self::Coordinate { alias, message } => {
                write!(
                    f,
                    "activity `{alias}` cannot join its shared schedule: {message}"
                )
            }
            Self::Closed { alias } => write!(
                f,
                "activity `{alias}` was not started: the run is stopping (interrupted)"
            ),
        }
    }
}

impl std::error::Error for EngineError {}

/// Why a control request was refused. The activity goes on unchanged.
///
/// ```
/// let e = paceline::ControlError::Finished { alias: "a".into() };
/// assert_eq!(e.to_string(), "activity `a` has already finished");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ControlError {
    /// The activity has finished or was stopped; nothing can change it now.
    Finished {
        /// The activity.
        alias: String,
    },
    /// A value is out of range; the message says the accepted values.
    BadValue {
        /// What was wrong and how to fix it.
        why: String,
    },
    /// The OS would not start a worker thread.
    Spawn {
        /// The OS's message.
        message: String,
    },
}

impl fmt::Display for ControlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Finished { alias } => write!(f, "activity `{alias}` has already finished"),
            Self::BadValue { why } => f.write_str(why),
            Self::Spawn { message } => write!(f, "could not start a worker thread: {message}"),
        }
    }
}

impl std::error::Error for ControlError {}
