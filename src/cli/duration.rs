//! Human durations on the command line and the control endpoint: `500ms`, `30s`, `2m`.

use std::error::Error;
use std::fmt;
use std::time::Duration;

/// Why a duration was not understood.
#[derive(Debug, Clone, PartialEq)]
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

/// Parses `NUMBER UNIT` (spaces allowed between): units `ns`, `us`/`µs`, `ms`, `s`,
/// `m`, `h`; the number may have a fraction (`1.5s`). A bare number is refused: it
/// is too easy to mean milliseconds and get seconds.
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(DurationError::Empty {
            text: text.to_string(),
        });
    }
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = (&t[..split], t[split..].trim());
    let value: f64 = num.parse().map_err(|_| DurationError::BadNumber {
        text: text.to_string(),
    })?;
    let scale = match unit {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
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

#[cfg(test)]
mod tests {
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
}
