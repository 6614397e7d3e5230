//! The timeline: control events in time order.

use crate::nanos::{NANOS_PER_SEC, Nanos};
use std::fmt;

/// Something the control plane did to an activity, for the timeline.
///
/// ```
/// use paceline::Event;
/// assert_eq!(Event::Threads { from: 4, to: 8 }.to_string(), "threads 4 -> 8");
/// assert_eq!(Event::Rate { from: f64::INFINITY, to: 100.0 }.to_string(), "rate unpaced -> 100");
/// assert_eq!(Event::Note("warm-up done".into()).to_string(), "warm-up done");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Event {
    /// The activity started.
    Started,
    /// The activity stopped (finished its cycles or was stopped).
    Stopped,
    /// The rate changed, in ops per second (0 means paused).
    Rate {
        /// The rate before.
        from: f64,
        /// The rate after.
        to: f64,
    },
    /// A ramp began: the rate moves to `to` over `over` nanoseconds.
    Ramp {
        /// The rate the ramp ends at.
        to: f64,
        /// How long the ramp takes, in nanoseconds.
        over: Nanos,
    },
    /// The number of worker threads changed.
    Threads {
        /// Threads before.
        from: usize,
        /// Threads after.
        to: usize,
    },
    /// Free text, such as a scenario step's name.
    Note(String),
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Started => f.write_str("started"),
            Self::Stopped => f.write_str("stopped"),
            // An unpaced schedule's rate is infinite: `unpaced`, not `inf`
            // (audit L9: `rate inf -> 100`).
            Self::Rate { from, to } => write!(f, "rate {} -> {}", Paced(*from), Paced(*to)),
            Self::Ramp { to, over } => write!(f, "ramp to {to} over {}", Secs(*over)),
            Self::Threads { from, to } => write!(f, "threads {from} -> {to}"),
            Self::Note(text) => f.write_str(text),
        }
    }
}

/// A rate in full precision, or `unpaced` when infinite.
struct Paced(f64);

impl fmt::Display for Paced {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_infinite() {
            f.write_str("unpaced")
        } else {
            write!(f, "{}", self.0)
        }
    }
}

/// Nanoseconds shown as seconds with millisecond precision.
struct Secs(Nanos);

impl fmt::Display for Secs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0 / 1_000_000;
        write!(f, "{}.{:03}s", self.0 / NANOS_PER_SEC, ms % 1000)
    }
}

/// One timeline entry: an [`Event`] at a time, in nanoseconds on the activity's clock.
///
/// Displays as `SECONDS.MILLISs EVENT`.
///
/// ```
/// use paceline::{Event, TimelineEntry};
/// let e = TimelineEntry { at: 61_250_000_000, event: Event::Stopped };
/// assert_eq!(e.to_string(), "61.250s stopped");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct TimelineEntry {
    /// When, in nanoseconds since the clock's origin.
    pub at: Nanos,
    /// What happened.
    pub event: Event,
}

impl fmt::Display for TimelineEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", Secs(self.at), self.event)
    }
}
