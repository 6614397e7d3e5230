//! Why a limiter's configuration was rejected.

use crate::nanos::Nanos;
use std::error::Error;
use std::fmt;

/// Why a [`Limit`](crate::Limit), [`KeyConfig`](crate::KeyConfig) or limiter could not
/// be built. Each variant says how to fix it.
///
/// ```
/// use paceline::{Limit, LimitError, PackedSlidingWindow, ManualClock};
/// let limit = Limit::per_second(100_000)?;
/// let err = PackedSlidingWindow::with_clock(limit, ManualClock::new()).unwrap_err();
/// assert!(matches!(err, LimitError::TooMany { max: 65_535, .. }));
/// assert!(err.to_string().starts_with("100000 permits"));
/// # Ok::<(), LimitError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum LimitError {
    /// The limit admits zero permits per window. Give at least 1; to refuse everything,
    /// do not call a limiter at all.
    ZeroPermits,
    /// The window is shorter than one nanosecond. Give a positive window, such as one
    /// second.
    ZeroWindow,
    /// The burst is zero, so nothing could ever pass. Give at least 1, or leave the
    /// burst at its default (one window's permits).
    ZeroBurst,
    /// A count does not fit the packed field that holds it. Lower it to `max`, or use
    /// the wider or mutex-based type the message names.
    TooMany {
        /// What was too large, with the type to use instead.
        what: &'static str,
        /// The value given.
        given: u64,
        /// The most the field holds.
        max: u64,
    },
    /// The token pool's backfill rate is negative, NaN, infinite or above 16. Use a
    /// proportion such as 0.25 ("25 % faster while catching up"), or 0 for none.
    BadBackfill {
        /// The rate given.
        rate: f64,
    },
    /// A keyed limiter's granularity is zero, does not divide the window, or cuts it
    /// into more than 4096 buckets. Pick a divisor of the window, such as a sixtieth.
    BadGranularity {
        /// The granularity given, in nanoseconds.
        granularity: Nanos,
        /// The window given, in nanoseconds.
        window: Nanos,
    },
}

impl fmt::Display for LimitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ZeroPermits => {
                f.write_str("a limit of zero permits admits nothing: give at least 1")
            }
            Self::ZeroWindow => {
                f.write_str("the window is zero: give a window of at least one nanosecond")
            }
            Self::ZeroBurst => {
                f.write_str("a burst of zero admits nothing: give at least 1, or keep the default")
            }
            Self::TooMany { what, given, max } => {
                write!(f, "{given} {what}: the most it holds is {max}")
            }
            Self::BadBackfill { rate } => write!(
                f,
                "backfill rate {rate} is not usable: give a proportion from 0 to 16, such as 0.25"
            ),
            Self::BadGranularity {
                granularity,
                window,
            } => write!(
                f,
                "granularity {granularity} ns does not fit window {window} ns: it must be \
                 positive, divide the window, and cut it into at most 4096 buckets"
            ),
        }
    }
}

impl Error for LimitError {}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn messages_are_lower_case_and_say_how_to_fix() {
        let all = [
            LimitError::ZeroPermits,
            LimitError::ZeroWindow,
            LimitError::ZeroBurst,
            LimitError::TooMany {
                what: "permits",
                given: 9,
                max: 8,
            },
            LimitError::BadBackfill { rate: -1.0 },
            LimitError::BadGranularity {
                granularity: 7,
                window: 10,
            },
        ];
        for e in all {
            let s = e.to_string();
            assert!(
                s.chars().next().unwrap().is_lowercase() || s.starts_with('9'),
                "{s}"
            );
            assert!(
                s.contains("give") || s.contains("most") || s.contains("must"),
                "{s}"
            );
            assert!(e.source().is_none());
        }
    }
}
