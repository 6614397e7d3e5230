//! [`RateSpec`]: the value that says how fast, how strictly, and how to apply a change.

use crate::error::RateSpecError;
use serde::de::{self, Deserializer};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The lowest positive rate, in ops per second (one op in about 11.6 days).
pub const MIN_RATE: f64 = 1e-6;
/// The highest rate, in ops per second (one op per nanosecond).
pub const MAX_RATE: f64 = 1e9;
/// The default strictness: a 10 % burst allowance, NoSQLBench's default.
pub const DEFAULT_STRICTNESS: f64 = 1.1;

/// How a new spec is applied to a running limiter.
///
/// ```
/// use paceline::{RateSpec, Verb};
/// assert_eq!(RateSpec::parse("10,restart").unwrap().verb_value(), Verb::Restart);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verb {
    /// Keep lag, idle and the backlog across the change (the default). The same as
    /// [`Configure`](Verb::Configure); the name reads better for a first spec.
    #[default]
    Start,
    /// Keep lag, idle and the backlog across the change.
    Configure,
    /// Re-anchor the schedule at now: lag, idle and backlog start again from zero.
    Restart,
}

/// Whether all threads share one schedule or each thread has its own.
///
/// ```
/// use paceline::{RateSpec, Scope};
/// assert_eq!(RateSpec::parse("10,thread").unwrap().scope_value(), Scope::Thread);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// One schedule shared by every thread: the rate is the total (the default).
    #[default]
    Activity,
    /// One schedule per calling thread, each at the full rate.
    Thread,
}

/// The regime a strictness value selects; see `docs/pacing.md` for timelines.
///
/// ```
/// use paceline::{Mode, RateSpec};
/// assert_eq!(RateSpec::new(5.0).strictness(0.0).mode(), Mode::Average);
/// assert_eq!(RateSpec::new(5.0).strictness(0.3).mode(), Mode::Compensate { shift: 2 });
/// assert_eq!(RateSpec::new(5.0).strictness(1.0).mode(), Mode::Strict);
/// assert_eq!(RateSpec::new(5.0).mode(), Mode::Burst { ratio: 1.1 });
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mode {
    /// s = 0: late ops catch up as fast as callers can; nothing is forfeited.
    Average,
    /// 0 < s < 1: each late acquire forfeits `lateness >> shift` to idle, where
    /// `2^-shift` is s rounded down to a power of two.
    Compensate {
        /// log2 of the divisor: 2 for s = 0.25 (a quarter of the gap is closed).
        shift: u32,
    },
    /// s = 1: a late acquire forfeits all its lateness; starts are never closer than
    /// one slice.
    Strict,
    /// s > 1: slots stay put; late ops start no closer than slice / s to each other.
    Burst {
        /// s: the most the catch-up rate may exceed the rate by, as a ratio.
        ratio: f64,
    },
}

/// A validated rate specification: rate, strictness, verb and scope.
///
/// Written as `rate[,strictness][,verb][,scope]`: `1000`, `10K,1.0`, `2.5M,0.0,restart`,
/// `50,thread`. A rate of 0 pauses. The parts after the rate may come in any order.
///
/// ```
/// use paceline::{RateSpec, Scope, Verb};
/// let spec = RateSpec::parse("2.5K,1.0,restart,thread")?;
/// assert_eq!(spec.rate(), 2500.0);
/// assert_eq!(spec.strictness_value(), 1.0);
/// assert_eq!(spec.verb_value(), Verb::Restart);
/// assert_eq!(spec.scope_value(), Scope::Thread);
/// assert_eq!(spec.to_string(), "2500,1,restart,thread");
/// assert_eq!(spec, spec.to_string().parse()?);
/// # Ok::<(), paceline::RateSpecError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateSpec {
    rate: f64,
    strictness: f64,
    verb: Verb,
    scope: Scope,
}

impl RateSpec {
    /// A spec for `rate` ops per second with the default strictness (1.1), verb
    /// (`start`) and scope (`activity`).
    ///
    /// # Panics
    ///
    /// If `rate` is NaN, negative, or not 0 and outside 1e-6..=1e9. Use
    /// [`try_new`](Self::try_new) for rates that come from users.
    ///
    /// ```
    /// let spec = paceline::RateSpec::new(50_000.0);
    /// assert_eq!(spec.slice_nanos(), Some(20_000.0));
    /// ```
    pub fn new(rate: f64) -> Self {
        match Self::try_new(rate) {
            Ok(s) => s,
            Err(e) => panic!("RateSpec::new: {e}"),
        }
    }

    /// A spec for `rate` ops per second, or why the rate is not valid.
    ///
    /// ```
    /// assert!(paceline::RateSpec::try_new(f64::NAN).is_err());
    /// assert!(paceline::RateSpec::try_new(0.0).unwrap().is_paused());
    /// ```
    pub fn try_new(rate: f64) -> Result<Self, RateSpecError> {
        validate_rate(rate)?;
        Ok(Self {
            // -0.0 is 0 (audit p17, L1: `-0` was shown as a rate of `-0`).
            rate: rate + 0.0,
            strictness: DEFAULT_STRICTNESS,
            verb: Verb::Start,
            scope: Scope::Activity,
        })
    }

    /// A paused spec (rate 0): `acquire` blocks until the rate is positive again.
    ///
    /// ```
    /// assert!(paceline::RateSpec::paused().is_paused());
    /// ```
    pub fn paused() -> Self {
        Self::new(0.0)
    }

    /// Sets the strictness; see [`Mode`]. By default, 1.1.
    ///
    /// # Panics
    ///
    /// If `s` is NaN, infinite or negative; see [`try_strictness`](Self::try_strictness).
    ///
    /// ```
    /// let spec = paceline::RateSpec::new(10.0).strictness(1.0);
    /// assert_eq!(spec.strictness_value(), 1.0);
    /// ```
    pub fn strictness(self, s: f64) -> Self {
        match self.try_strictness(s) {
            Ok(spec) => spec,
            Err(e) => panic!("RateSpec::strictness: {e}"),
        }
    }

    /// Sets the strictness, or says why `s` is not valid. By default, 1.1.
    ///
    /// ```
    /// assert!(paceline::RateSpec::new(10.0).try_strictness(-1.0).is_err());
    /// ```
    pub fn try_strictness(mut self, s: f64) -> Result<Self, RateSpecError> {
        if !s.is_finite() || s < 0.0 {
            return Err(RateSpecError::BadStrictness {
                text: s.to_string(),
            });
        }
        self.strictness = s;
        Ok(self)
    }

    /// Sets how the spec is applied to a running limiter. By default, [`Verb::Start`].
    ///
    /// ```
    /// use paceline::{RateSpec, Verb};
    /// assert_eq!(RateSpec::new(1.0).verb(Verb::Restart).verb_value(), Verb::Restart);
    /// ```
    pub fn verb(mut self, verb: Verb) -> Self {
        self.verb = verb;
        self
    }

    /// Sets whether threads share one schedule. By default, [`Scope::Activity`].
    ///
    /// ```
    /// use paceline::{RateSpec, Scope};
    /// assert_eq!(RateSpec::new(1.0).scope(Scope::Thread).scope_value(), Scope::Thread);
    /// ```
    pub fn scope(mut self, scope: Scope) -> Self {
        self.scope = scope;
        self
    }

    /// Returns the same spec with another rate (0 pauses), or why the rate is invalid.
    ///
    /// ```
    /// let spec = paceline::RateSpec::new(10.0).strictness(1.0).with_rate(20.0)?;
    /// assert_eq!((spec.rate(), spec.strictness_value()), (20.0, 1.0));
    /// # Ok::<(), paceline::RateSpecError>(())
    /// ```
    pub fn with_rate(mut self, rate: f64) -> Result<Self, RateSpecError> {
        validate_rate(rate)?;
        self.rate = rate + 0.0;
        Ok(self)
    }

    /// Ops per second; 0 means paused.
    ///
    /// ```
    /// assert_eq!(paceline::RateSpec::new(7.5).rate(), 7.5);
    /// ```
    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// The strictness number.
    ///
    /// ```
    /// assert_eq!(paceline::RateSpec::new(1.0).strictness_value(), 1.1);
    /// ```
    pub fn strictness_value(&self) -> f64 {
        self.strictness
    }

    /// The verb.
    ///
    /// ```
    /// assert_eq!(paceline::RateSpec::new(1.0).verb_value(), paceline::Verb::Start);
    /// ```
    pub fn verb_value(&self) -> Verb {
        self.verb
    }

    /// The scope.
    ///
    /// ```
    /// assert_eq!(paceline::RateSpec::new(1.0).scope_value(), paceline::Scope::Activity);
    /// ```
    pub fn scope_value(&self) -> Scope {
        self.scope
    }

    /// Whether the rate is 0.
    ///
    /// ```
    /// assert!(!paceline::RateSpec::new(1.0).is_paused());
    /// ```
    pub fn is_paused(&self) -> bool {
        self.rate == 0.0
    }

    /// The slice, 1e9 / rate nanoseconds, unrounded; `None` when paused.
    ///
    /// ```
    /// assert_eq!(paceline::RateSpec::new(3.0).slice_nanos(), Some(1e9 / 3.0));
    /// ```
    pub fn slice_nanos(&self) -> Option<f64> {
        (!self.is_paused()).then(|| 1e9 / self.rate)
    }

    /// The regime the strictness selects.
    ///
    /// ```
    /// use paceline::{Mode, RateSpec};
    /// assert_eq!(RateSpec::new(1.0).strictness(0.125).mode(), Mode::Compensate { shift: 3 });
    /// ```
    pub fn mode(&self) -> Mode {
        let s = self.strictness;
        if s == 0.0 {
            Mode::Average
        } else if s < 1.0 {
            // s rounded down to a power of two: 2^-shift <= s.
            let shift = (-s.log2()).ceil() as u32;
            Mode::Compensate {
                shift: shift.clamp(1, 63),
            }
        } else if s == 1.0 {
            Mode::Strict
        } else {
            Mode::Burst { ratio: s }
        }
    }

    /// Parses `rate[,strictness][,verb][,scope]`; see the type's docs.
    ///
    /// ```
    /// use paceline::RateSpec;
    /// assert_eq!(RateSpec::parse("10K")?.rate(), 10_000.0);
    /// assert_eq!(RateSpec::parse(" 2.5M , 0 ")?.strictness_value(), 0.0);
    /// assert!(RateSpec::parse("-5").is_err());
    /// assert!(RateSpec::parse("100,sometimes").is_err());
    /// # Ok::<(), paceline::RateSpecError>(())
    /// ```
    pub fn parse(text: &str) -> Result<Self, RateSpecError> {
        let mut parts = text.split(',').map(str::trim);
        let rate_text = parts.next().unwrap_or("");
        if rate_text.is_empty() {
            return Err(RateSpecError::Empty);
        }
        let mut spec = Self::try_new(parse_rate(rate_text)?)?;
        let (mut seen_s, mut seen_verb, mut seen_scope) = (false, false, false);
        for part in parts {
            let lower = part.to_ascii_lowercase();
            let (seen, name) = match lower.as_str() {
                "start" | "configure" | "restart" => {
                    spec.verb = match lower.as_str() {
                        "start" => Verb::Start,
                        "configure" => Verb::Configure,
                        _ => Verb::Restart,
                    };
                    (&mut seen_verb, "verb")
                }
                "activity" | "thread" => {
                    spec.scope = if lower == "thread" {
                        Scope::Thread
                    } else {
                        Scope::Activity
                    };
                    (&mut seen_scope, "scope")
                }
                _ if looks_numeric(part) => {
                    let s: f64 = part.parse().map_err(|_| RateSpecError::BadStrictness {
                        text: part.to_string(),
                    })?;
                    spec = spec
                        .try_strictness(s)
                        .map_err(|_| RateSpecError::BadStrictness {
                            text: part.to_string(),
                        })?;
                    (&mut seen_s, "strictness")
                }
                _ => {
                    return Err(RateSpecError::UnknownWord {
                        word: part.to_string(),
                    });
                }
            };
            if *seen {
                return Err(RateSpecError::Repeated { part: name });
            }
            *seen = true;
        }
        Ok(spec)
    }
}

fn looks_numeric(s: &str) -> bool {
    s.starts_with(|c: char| c.is_ascii_digit() || c == '.' || c == '-' || c == '+')
        || s.eq_ignore_ascii_case("nan")
        || s.eq_ignore_ascii_case("inf")
}

fn validate_rate(rate: f64) -> Result<(), RateSpecError> {
    if rate == 0.0 || (MIN_RATE..=MAX_RATE).contains(&rate) {
        Ok(())
    } else {
        Err(RateSpecError::RateOutOfRange { rate })
    }
}

/// Parses a rate with an optional K/M/G/B suffix (case-insensitive).
fn parse_rate(text: &str) -> Result<f64, RateSpecError> {
    let bad = || RateSpecError::BadRate {
        text: text.to_string(),
    };
    let (digits, mult) = match text.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() && !text.eq_ignore_ascii_case("inf") => {
            let m = match c.to_ascii_lowercase() {
                'k' => 1e3,
                'm' => 1e6,
                'g' | 'b' => 1e9,
                _ => return Err(bad()),
            };
            (&text[..i], m)
        }
        _ => (text, 1.0),
    };
    let digits = digits.trim_end();
    if digits.is_empty() || !looks_numeric(digits) {
        return Err(bad());
    }
    let v: f64 = digits.parse().map_err(|_| bad())?;
    if v.is_nan() || v.is_infinite() || v < 0.0 {
        return Err(RateSpecError::RateOutOfRange { rate: v });
    }
    // A positive text that reads as 0 (`1e-400` underflows) is not a pause
    // (audit p17, L1); `-0` is 0, never shown as `-0`.
    if v == 0.0 {
        if underflowed(digits) {
            return Err(RateSpecError::RateUnderflow {
                text: text.to_string(),
            });
        }
        return Ok(0.0);
    }
    Ok(v * mult)
}

/// Whether the decimal `digits` (which parsed to 0) name a number other than 0:
/// a non-zero digit in the mantissa (`1e-400`, `0.5e-330`).
fn underflowed(digits: &str) -> bool {
    let mantissa = digits.split(['e', 'E']).next().unwrap_or("");
    mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b))
}

impl FromStr for RateSpec {
    type Err = RateSpecError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for RateSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verb = match self.verb {
            Verb::Start => "start",
            Verb::Configure => "configure",
            Verb::Restart => "restart",
        };
        let scope = match self.scope {
            Scope::Activity => "activity",
            Scope::Thread => "thread",
        };
        write!(f, "{},{},{verb},{scope}", self.rate, self.strictness)
    }
}

impl Serialize for RateSpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(4))?;
        m.serialize_entry("rate", &self.rate)?;
        m.serialize_entry("strictness", &self.strictness)?;
        m.serialize_entry("verb", &self.verb)?;
        m.serialize_entry("scope", &self.scope)?;
        m.end()
    }
}

/// What a spec may look like in a configuration file.
#[derive(Deserialize)]
#[serde(untagged)]
enum SpecRepr {
    Number(f64),
    Text(String),
    Map(SpecMap),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SpecMap {
    rate: RateField,
    #[serde(default)]
    strictness: Option<f64>,
    #[serde(default)]
    verb: Option<String>,
    #[serde(default)]
    scope: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RateField {
    Number(f64),
    Text(String),
}

impl<'de> Deserialize<'de> for RateSpec {
    /// Accepts a number (`1000`), a spec string (`"10K,1.0,restart"`) or a map
    /// (`{rate: 10K, strictness: 1.0, verb: restart, scope: thread}`).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let repr = SpecRepr::deserialize(d).map_err(|_| {
            de::Error::custom(
                "a rate spec is a number, a string such as \"10K,1.1,restart,thread\", \
                 or a map with keys rate, strictness, verb, scope",
            )
        })?;
        let spec = match repr {
            SpecRepr::Number(r) => RateSpec::try_new(r),
            SpecRepr::Text(t) => RateSpec::parse(&t),
            SpecRepr::Map(m) => {
                let mut text = match m.rate {
                    RateField::Number(r) => r.to_string(),
                    RateField::Text(t) => t,
                };
                if let Some(s) = m.strictness {
                    text.push_str(&format!(",{s}"));
                }
                for word in [m.verb, m.scope].into_iter().flatten() {
                    text.push(',');
                    text.push_str(&word);
                }
                RateSpec::parse(&text)
            }
        };
        spec.map_err(de::Error::custom)
    }
}
