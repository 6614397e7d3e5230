//! Time inside paceline is plain nanoseconds: a `u64` counted from an origin.
//!
//! [`Duration`] and [`Instant`](std::time::Instant) appear only at the edges of the
//! public API. Inside, every reading, slot and deadline is a [`Nanos`], which keeps
//! the hot path free of conversions and makes arithmetic exact.

use std::error::Error;
use std::fmt;
use std::time::Duration;

/// Nanoseconds since an origin (a limiter's or a clock's), or a span of nanoseconds.
///
/// A `u64` holds 584 years of nanoseconds, so a schedule never overflows in practice.
///
/// ```
/// use paceline::Nanos;
/// let slot: Nanos = 1_500_000; // 1.5 ms after the origin
/// assert_eq!(paceline::nanos::to_duration(slot).as_micros(), 1500);
/// ```
pub type Nanos = u64;

/// Nanoseconds in one second.
///
/// ```
/// assert_eq!(paceline::nanos::NANOS_PER_SEC, 1_000_000_000);
/// ```
pub const NANOS_PER_SEC: u64 = 1_000_000_000;

/// Converts a [`Duration`] to nanoseconds, saturating at `u64::MAX` (584 years).
///
/// ```
/// use std::time::Duration;
/// assert_eq!(paceline::nanos::from_duration(Duration::from_millis(3)), 3_000_000);
/// assert_eq!(paceline::nanos::from_duration(Duration::MAX), u64::MAX);
/// ```
pub fn from_duration(d: Duration) -> Nanos {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// A span of nanoseconds in human units with three significant digits, the
/// number and the unit apart by `sep`: `523ns`, `1.23µs`, `45.6ms`, `2.00s`;
/// past 1000 s, whole seconds (`1234s`). A value that rounds up to 1000 of a unit
/// is written in the next (999.95 µs is `1.00ms`). The one formatter of the
/// reports, the verdicts' reasons and the thresholds' values.
///
/// ```
/// use paceline::nanos::human;
/// assert_eq!(human(850.0, " "), "850 ns");
/// assert_eq!(human(12_345.0, ""), "12.3µs");
/// assert_eq!(human(999_500.0, ""), "1.00ms");
/// assert_eq!(human(2e9, " "), "2.00 s");
/// assert_eq!(human(1_234e9, ""), "1234s");
/// ```
pub fn human(nanos: f64, sep: &str) -> String {
    const UNITS: [(f64, &str); 3] = [(1e3, "µs"), (1e6, "ms"), (1e9, "s")];
    if nanos < 999.5 {
        return format!("{:.0}{sep}ns", nanos.max(0.0));
    }
    for (i, &(scale, unit)) in UNITS.iter().enumerate() {
        let v = nanos / scale;
        // Decide the decimals on the rounded value: 9.996 is "10.0", not "10.00".
        let decimals = if v >= 99.95 {
            0
        } else if v >= 9.995 {
            1
        } else {
            2
        };
        let text = format!("{v:.decimals$}");
        if i == UNITS.len() - 1 || text.parse::<f64>().unwrap_or(0.0) < 1000.0 {
            return format!("{text}{sep}{unit}");
        }
    }
    unreachable!("the last unit always returns")
}

/// Converts nanoseconds to a [`Duration`].
///
/// ```
/// assert_eq!(paceline::nanos::to_duration(2_000).as_micros(), 2);
/// ```
pub fn to_duration(n: Nanos) -> Duration {
    Duration::from_nanos(n)
}

/// Why a duration was not understood.
///
/// ```
/// let err = paceline::nanos::parse_duration("10 parsecs").unwrap_err();
/// assert!(err.to_string().contains("no known unit"));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum DurationError {
    /// Nothing was given. Write a number and a unit, such as `30s`.
    Empty {
        /// The text (only spaces).
        text: String,
    },
    /// The number part was missing or not a non-negative number. Write it as
    /// `500ms`, `1.5s` or `2m`.
    BadNumber {
        /// The text given.
        text: String,
    },
    /// The unit was missing or unknown. Use `ns`, `us` (or `µs`), `ms`, `s`, `m` or `h`.
    BadUnit {
        /// The text given.
        text: String,
    },
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const HOW: &str =
            "write a number and a unit (ns, us, ms, s, m, h), such as 500ms, 30s or 2m";
        match self {
            Self::Empty { .. } => write!(f, "empty duration: {HOW}"),
            Self::BadNumber { text } => write!(f, "`{text}` is not a duration: {HOW}"),
            Self::BadUnit { text } => {
                write!(f, "`{text}` has no known unit: {HOW}")
            }
        }
    }
}

impl Error for DurationError {}

/// Parses a human duration, `NUMBER UNIT`: units `ns`, `us` (or `µs`), `ms`, `s`,
/// `m` (or `min`) and `h`; the number may have a fraction (`1.5s`) and `_` separators
/// (`1_000ms`), and spaces may stand between number and unit. A bare number is
/// refused: it is too easy to mean milliseconds and get seconds. The command line and
/// the control endpoint read durations with this.
///
/// ```
/// use paceline::nanos::parse_duration;
/// use std::time::Duration;
/// assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
/// assert_eq!(parse_duration("2 m"), Ok(Duration::from_secs(120)));
/// assert!(parse_duration("10").is_err());
/// ```
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    parse(text, false)
}

/// [`parse_duration`], but a bare number is seconds: the grammar of activity
/// parameters (`timeout: 2` in YAML means two seconds, as in most tools' files).
///
/// ```
/// use paceline::nanos::parse_duration_or_seconds;
/// use std::time::Duration;
/// assert_eq!(parse_duration_or_seconds("2"), Ok(Duration::from_secs(2)));
/// assert_eq!(parse_duration_or_seconds("250us"), Ok(Duration::from_micros(250)));
/// ```
pub fn parse_duration_or_seconds(text: &str) -> Result<Duration, DurationError> {
    parse(text, true)
}

/// The shared grammar; `bare_seconds`: a number without a unit is seconds
/// (otherwise an error).
fn parse(text: &str, bare_seconds: bool) -> Result<Duration, DurationError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(DurationError::Empty {
            text: text.to_string(),
        });
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    let (num, unit) = (&t[..split], t[split..].trim());
    let value: f64 = num
        .replace('_', "")
        .parse()
        .map_err(|_| DurationError::BadNumber {
            text: text.to_string(),
        })?;
    let scale = match unit {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "" if bare_seconds => 1.0,
        _ => {
            return Err(DurationError::BadUnit {
                text: text.to_string(),
            });
        }
    };
    Duration::try_from_secs_f64(value * scale).map_err(|_| DurationError::BadNumber {
        text: text.to_string(),
    })
}

#[cfg(all(test, not(loom)))]
mod duration_tests {
    use super::*;

    #[test]
    fn durations_with_units() {
        let ok = [
            ("500ms", Duration::from_millis(500)),
            ("30s", Duration::from_secs(30)),
            (" 2m ", Duration::from_secs(120)),
            ("1h", Duration::from_secs(3600)),
            ("1.5s", Duration::from_millis(1500)),
            ("250us", Duration::from_micros(250)),
            ("250µs", Duration::from_micros(250)),
            ("100ns", Duration::from_nanos(100)),
            ("10 s", Duration::from_secs(10)),
            ("0s", Duration::ZERO),
        ];
        for (text, want) in ok {
            assert_eq!(parse_duration(text), Ok(want), "{text}");
        }
    }

    #[test]
    fn bad_durations_say_how_to_fix_them() {
        assert!(matches!(
            parse_duration("10"),
            Err(DurationError::BadUnit { .. })
        ));
        assert!(matches!(
            parse_duration("10 parsecs"),
            Err(DurationError::BadUnit { .. })
        ));
        assert!(matches!(
            parse_duration("-5s"),
            Err(DurationError::BadNumber { .. })
        ));
        assert!(matches!(
            parse_duration("s"),
            Err(DurationError::BadNumber { .. })
        ));
        assert!(matches!(
            parse_duration("1.2.3s"),
            Err(DurationError::BadNumber { .. })
        ));
        assert!(matches!(
            parse_duration("  "),
            Err(DurationError::Empty { .. })
        ));
        assert_eq!(
            parse_duration("10")
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default(),
            "`10` has no known unit: write a number and a unit (ns, us, ms, s, m, h), \
             such as 500ms, 30s or 2m"
        );
    }

    #[test]
    fn activity_parameters_take_a_bare_number_as_seconds() {
        assert_eq!(parse_duration_or_seconds("2"), Ok(Duration::from_secs(2)));
        assert_eq!(
            parse_duration_or_seconds("0.5"),
            Ok(Duration::from_millis(500))
        );
        assert_eq!(
            parse_duration_or_seconds("1_000ms"),
            Ok(Duration::from_secs(1))
        );
        assert_eq!(parse_duration("1_000ms"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_duration("3 min"), Ok(Duration::from_secs(180)));
        assert!(matches!(
            parse_duration_or_seconds("2 fortnights"),
            Err(DurationError::BadUnit { .. })
        ));
    }
}

/// The proleptic Gregorian date `(year, month, day)` of `days` since
/// 1970-01-01, as java.time and ISO 8601 count (Howard Hinnant's published
/// algorithm, re-derived: eras of 400 years, March-based years).
///
/// ```
/// use paceline::nanos::civil_from_days;
/// assert_eq!(civil_from_days(0), (1970, 1, 1));
/// assert_eq!(civil_from_days(-1), (1969, 12, 31));
/// assert_eq!(civil_from_days(11_016), (2000, 2, 29));
/// ```
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}
