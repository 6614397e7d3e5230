//! Error types shared across paceline's layers.
//!
//! Each is a small enum with a lower-case message that says what was wrong and how to
//! fix it. "Not yet" is not an error: a refused [`try_acquire`](crate::RateLimiter::try_acquire)
//! returns a [`Refused`](crate::Refused) value instead.

use std::error::Error;
use std::fmt;

/// Why a rate specification was rejected.
///
/// A spec is `rate[,strictness][,verb][,scope]`, for example `10K`, `2500,1.0`,
/// `2.5M,0.0,restart` or `100,thread`.
///
/// ```
/// use paceline::{RateSpec, RateSpecError};
/// let err = RateSpec::parse("fast").unwrap_err();
/// assert!(matches!(err, RateSpecError::BadRate { .. }));
/// assert!(err.to_string().contains("ops per second"));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RateSpecError {
    /// The spec was empty. Give at least a rate, such as `1000`.
    Empty,
    /// The rate was not a number. Write ops per second as a number with an optional
    /// suffix: `500`, `2.5K`, `10M`, `1e6`.
    BadRate {
        /// The text that was read as the rate.
        text: String,
    },
    /// The rate was NaN, infinite, negative, or outside 1e-6..=1e9 (0 is allowed and
    /// means "paused"). Pick a rate in range.
    RateOutOfRange {
        /// The rate that was given.
        rate: f64,
    },
    /// The rate was written as a positive number too small to represent, so it
    /// would read as 0 (a pause): `1e-400`. Write 0 to pause, or a rate from
    /// 1e-6 up.
    RateUnderflow {
        /// The text that was read as the rate.
        text: String,
    },
    /// The strictness was NaN, infinite or negative. Use 0 (average), a fraction below
    /// 1 (burst compensation), 1 (strict) or above 1 (burst allowance, default 1.1).
    BadStrictness {
        /// The strictness that was given, as text.
        text: String,
    },
    /// A word after the rate was none of the accepted ones. Accepted: a strictness
    /// number, `start`, `configure` or `restart`, and `activity` or `thread`.
    UnknownWord {
        /// The word that was not understood.
        word: String,
    },
    /// The same kind of part appeared twice (two strictness values, two verbs or two
    /// scopes). Give each at most once.
    Repeated {
        /// Which part was repeated: `strictness`, `verb` or `scope`.
        part: &'static str,
    },
}

impl fmt::Display for RateSpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Empty => f.write_str(
                "empty rate spec: give at least a rate in ops per second, such as `1000` or `10K`",
            ),
            Self::BadRate { text } => write!(
                f,
                "`{text}` is not a rate: write ops per second as a number with an optional \
                 suffix K, M or G (`500`, `2.5K`, `10M`, `1e6`), or 0 to pause"
            ),
            Self::RateOutOfRange { rate } => {
                // Far from 1, in scientific notation: `1e-300`, not 300 zeros.
                let shown = if *rate != 0.0 && !(1e-6..1e15).contains(&rate.abs()) {
                    format!("{rate:e}")
                } else {
                    format!("{rate}")
                };
                write!(
                    f,
                    "rate {shown} is out of range: use 0 (pause) or a rate from 0.000001 to \
                     1000000000 ops per second"
                )
            }
            Self::RateUnderflow { text } => write!(
                f,
                "rate `{text}` is positive but too small to represent: it would read as 0, \
                 which pauses; write 0 to pause, or a rate from 0.000001 to 1000000000 ops \
                 per second"
            ),
            Self::BadStrictness { text } => write!(
                f,
                "`{text}` is not a strictness: use 0 (average), a fraction below 1 (burst \
                 compensation), 1 (strict) or a number above 1 (burst allowance, such as 1.1)"
            ),
            Self::UnknownWord { word } => write!(
                f,
                "unknown word `{word}` in rate spec: after the rate give a strictness number, \
                 a verb (`start`, `configure`, `restart`) or a scope (`activity`, `thread`), \
                 as in `1000,1.1,restart,thread`"
            ),
            Self::Repeated { part } => {
                write!(
                    f,
                    "the {part} is given twice in the rate spec: give it once"
                )
            }
        }
    }
}

impl Error for RateSpecError {}
