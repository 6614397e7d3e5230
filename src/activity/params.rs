//! Value types for an activity's parameters: cycles, sequencing, error handling;
//! the tag filter is in `params_tags.rs`.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

#[path = "params_tags.rs"]
mod tags;

pub use tags::TagFilter;

/// A closed-open range of cycles, `start..end`.
///
/// Written `N` (for `0..N`) or `A..B`, each number with an optional suffix K, M or
/// B (thousand, million, billion) and `_` to group digits: `1M`, `10K..20K`,
/// `1_000_000`.
///
/// ```
/// use paceline::Cycles;
/// let c: Cycles = "10K..1M".parse()?;
/// assert_eq!((c.start(), c.end(), c.len()), (10_000, 1_000_000, 990_000));
/// assert_eq!(Cycles::parse("5")?, Cycles::new(0, 5)?);
/// assert!(Cycles::parse("9..3").is_err());
/// # Ok::<(), paceline::ParamError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cycles {
    start: u64,
    end: u64,
    /// NoSQLBench's `UNDEF`: each op of the run's sequence once, resolved when
    /// the run's ops are known (`start..end` is `0..0` until then).
    undef: bool,
}

impl Cycles {
    /// The cycles `start..end`, or an error if `start > end`.
    ///
    /// ```
    /// assert!(paceline::Cycles::new(3, 3)?.is_empty());
    /// # Ok::<(), paceline::ParamError>(())
    /// ```
    pub fn new(start: u64, end: u64) -> Result<Self, ParamError> {
        if start > end {
            return Err(ParamError::BadCycles {
                text: format!("{start}..{end}"),
                why: "the start is after the end",
            });
        }
        Ok(Self {
            start,
            end,
            undef: false,
        })
    }

    /// NoSQLBench's `cycles=UNDEF`: each op of the run's op sequence once
    /// (`0..L` for a sequence of length L, after any tag filter), resolved when
    /// the run starts.
    ///
    /// ```
    /// let c = paceline::Cycles::parse("UNDEF")?;
    /// assert!(c.is_undef() && c == paceline::Cycles::undef());
    /// assert_eq!(c.to_string(), "UNDEF");
    /// # Ok::<(), paceline::ParamError>(())
    /// ```
    pub fn undef() -> Self {
        Self {
            start: 0,
            end: 0,
            undef: true,
        }
    }

    /// Whether these are [`Cycles::undef`], not yet resolved.
    ///
    /// ```
    /// assert!(!paceline::Cycles::parse("5")?.is_undef());
    /// # Ok::<(), paceline::ParamError>(())
    /// ```
    pub fn is_undef(&self) -> bool {
        self.undef
    }

    /// Parses `N` or `A..B` (or `UNDEF`, see [`Cycles::undef`]); see the type's docs.
    ///
    /// ```
    /// assert_eq!(paceline::Cycles::parse("2.5K")?.end(), 2_500);
    /// # Ok::<(), paceline::ParamError>(())
    /// ```
    pub fn parse(text: &str) -> Result<Self, ParamError> {
        let bad = |why| ParamError::BadCycles {
            text: text.to_string(),
            why,
        };
        if text.trim() == "UNDEF" {
            return Ok(Self::undef());
        }
        // A lowercase `m` reads as a minute to a k6 user (`1m`): cycles are a
        // count, so the million is written `M` (issue 24, item 18: `cycles=1m`
        // silently ran a million).
        if text.split("..").any(|p| p.trim().ends_with('m')) {
            return Err(bad(
                "a lowercase `m` is not a unit of cycles: cycles are a count, not a time; \
                 write `M` for a million (`1M`)",
            ));
        }
        match text.split_once("..") {
            Some((a, b)) => {
                let a = count(a).ok_or_else(|| bad("the start is not a count"))?;
                let b = count(b).ok_or_else(|| bad("the end is not a count"))?;
                Self::new(a, b).map_err(|_| bad("the start is after the end"))
            }
            None => Self::new(0, count(text).ok_or_else(|| bad("it is not a count"))?),
        }
    }

    /// The first cycle.
    ///
    /// ```
    /// assert_eq!(paceline::Cycles::parse("4..9")?.start(), 4);
    /// # Ok::<(), paceline::ParamError>(())
    /// ```
    pub fn start(&self) -> u64 {
        self.start
    }

    /// One past the last cycle.
    ///
    /// ```
    /// assert_eq!(paceline::Cycles::parse("4..9")?.end(), 9);
    /// # Ok::<(), paceline::ParamError>(())
    /// ```
    pub fn end(&self) -> u64 {
        self.end
    }

    /// How many cycles.
    ///
    /// ```
    /// assert_eq!(paceline::Cycles::parse("4..9")?.len(), 5);
    /// # Ok::<(), paceline::ParamError>(())
    /// ```
    pub fn len(&self) -> u64 {
        self.end - self.start
    }

    /// Whether there are none.
    ///
    /// ```
    /// assert!(paceline::Cycles::parse("0")?.is_empty());
    /// # Ok::<(), paceline::ParamError>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }
}

impl Default for Cycles {
    /// One cycle, `0..1`: a smoke run.
    fn default() -> Self {
        Self {
            start: 0,
            end: 1,
            undef: false,
        }
    }
}

impl FromStr for Cycles {
    type Err = ParamError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for Cycles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.undef {
            return f.write_str("UNDEF");
        }
        write!(f, "{}..{}", self.start, self.end)
    }
}

/// A count with an optional K/M/B suffix: `1M`, `2.5K`, `1_000`.
pub(crate) fn count(text: &str) -> Option<u64> {
    let t: String = text.trim().chars().filter(|&c| c != '_').collect();
    let (digits, mult) = match t.chars().last()? {
        'k' | 'K' => (&t[..t.len() - 1], 1e3),
        'm' | 'M' => (&t[..t.len() - 1], 1e6),
        'b' | 'B' | 'g' | 'G' => (&t[..t.len() - 1], 1e9),
        _ => (t.as_str(), 1.0),
    };
    if let Ok(v) = digits.parse::<u64>() {
        return v.checked_mul(mult as u64);
    }
    if !digits.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let v: f64 = digits.parse().ok()?;
    let v = v * mult;
    (v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v < 1.8e19).then_some(v as u64)
}

/// How ops with ratios are interleaved into the op sequence, as NoSQLBench does.
///
/// With ratios A:3 and B:2:
///
/// ```text
/// concat    A A A B B     each op's share in one run, in order
/// bucket    A B A B A     round-robin: one of each that has any left, until all drain
/// interval  A B A B A     each op spread evenly over the sequence by its ratio
/// ```
///
/// (`bucket` and `interval` differ for uneven ratios: A:1, B:3 gives
/// `A B B B` by bucket and `A B B B` by interval, but A:2, B:5 gives
/// `A B A B B B B` by bucket and `A B B B A B B` by interval.)
///
/// ```
/// use paceline::SeqType;
/// assert_eq!(SeqType::Concat.sequence(&[3, 2]), [0, 0, 0, 1, 1]);
/// assert_eq!(SeqType::Bucket.sequence(&[3, 2]), [0, 1, 0, 1, 0]);
/// assert_eq!(SeqType::Interval.sequence(&[3, 2]), [0, 1, 0, 1, 0]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SeqType {
    /// Round-robin: take one of each op that has any left, until all drain (the default).
    #[default]
    Bucket,
    /// Each op's whole share in a row, in the order the ops are written.
    Concat,
    /// Each op's slots spread evenly over the sequence: op k's i-th slot sits at
    /// i / ratio_k of the way through; ties go to the op written first.
    Interval,
}

impl SeqType {
    /// The op sequence for `ratios` (op index per position); ops with ratio 0 are
    /// left out, and the length is the sum of the ratios.
    ///
    /// ```
    /// use paceline::SeqType;
    /// assert_eq!(SeqType::Interval.sequence(&[2, 5]), [0, 1, 1, 1, 0, 1, 1]);
    /// assert_eq!(SeqType::Bucket.sequence(&[0, 2]), [1, 1]);
    /// ```
    pub fn sequence(self, ratios: &[u64]) -> Vec<usize> {
        let total: u64 = ratios.iter().sum();
        let mut out = Vec::with_capacity(total as usize);
        match self {
            SeqType::Concat => {
                for (op, &r) in ratios.iter().enumerate() {
                    out.extend(std::iter::repeat_n(op, r as usize));
                }
            }
            SeqType::Bucket => {
                let mut left = ratios.to_vec();
                while out.len() < total as usize {
                    for (op, l) in left.iter_mut().enumerate() {
                        if *l > 0 {
                            *l -= 1;
                            out.push(op);
                        }
                    }
                }
            }
            SeqType::Interval => {
                let mut slots: Vec<(u64, u64, usize)> = Vec::with_capacity(total as usize);
                for (op, &r) in ratios.iter().enumerate() {
                    for i in 0..r {
                        slots.push((i, r, op));
                    }
                }
                // Order by i / r exactly (cross-multiplied), then by op.
                slots.sort_by(|&(i, r, a), &(j, s, b)| {
                    (u128::from(i) * u128::from(s))
                        .cmp(&(u128::from(j) * u128::from(r)))
                        .then(a.cmp(&b))
                });
                out.extend(slots.into_iter().map(|(_, _, op)| op));
            }
        }
        out
    }

    /// Parses `bucket`, `concat` or `interval`.
    ///
    /// ```
    /// assert_eq!(paceline::SeqType::parse("concat")?, paceline::SeqType::Concat);
    /// # Ok::<(), paceline::ParamError>(())
    /// ```
    pub fn parse(text: &str) -> Result<Self, ParamError> {
        match text.trim() {
            "bucket" => Ok(Self::Bucket),
            "concat" => Ok(Self::Concat),
            "interval" => Ok(Self::Interval),
            other => Err(ParamError::BadSeq {
                text: other.to_string(),
            }),
        }
    }
}

impl fmt::Display for SeqType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Bucket => "bucket",
            Self::Concat => "concat",
            Self::Interval => "interval",
        })
    }
}

/// Parses a duration: a number with a unit `ns`, `us`, `ms`, `s`, `m` or `h`
/// (`500ms`, `1.5s`, `2m`); a bare number is seconds. The one grammar of
/// [`crate::nanos::parse_duration_or_seconds`].
pub(crate) fn duration(text: &str) -> Option<Duration> {
    crate::nanos::parse_duration_or_seconds(text).ok()
}

/// Why a parameter value was rejected.
///
/// ```
/// let err = paceline::Cycles::parse("lots").unwrap_err();
/// assert!(err.to_string().contains("`lots`"));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ParamError {
    /// Cycles must be `N` or `A..B` with `A <= B`, counts with an optional K/M/B
    /// suffix: `1M`, `0..10K`.
    BadCycles {
        /// The text given.
        text: String,
        /// What was wrong.
        why: &'static str,
    },
    /// `seq` must be `bucket`, `concat` or `interval`.
    BadSeq {
        /// The text given.
        text: String,
    },
    /// A tag filter is `KEY:REGEX` or `KEY` conditions separated by commas:
    /// `block:rampup`, `block:"main.*",name:read`.
    BadTags {
        /// The text given.
        text: String,
        /// What was wrong.
        why: String,
    },
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadCycles { text, why } => write!(
                f,
                "`{text}` is not a cycle range ({why}): write `N` or `A..B` with A <= B, \
                 counts with an optional K, M or B suffix, such as `1M` or `10K..20K`"
            ),
            Self::BadSeq { text } => write!(
                f,
                "`{text}` is not a sequencing: use `bucket`, `concat` or `interval`"
            ),
            Self::BadTags { text, why } => write!(
                f,
                "`{text}` is not a tag filter ({why}): write `KEY:REGEX` conditions separated \
                 by commas, such as `block:rampup` or `block:\"main.*\"`"
            ),
        }
    }
}

impl std::error::Error for ParamError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_durations() {
        assert_eq!(count("1M"), Some(1_000_000));
        // Issue 24, item 18: `cycles=1m` is refused (a minute to k6 users).
        for text in ["1m", "0..1m", "1m..2M"] {
            let e = Cycles::parse(text).unwrap_err().to_string();
            assert!(e.contains("lowercase `m`"), "{text}: {e}");
        }
        assert_eq!(Cycles::parse("1M").map(|c| c.end()), Ok(1_000_000));
        assert_eq!(count("2.5K"), Some(2_500));
        assert_eq!(count("1_000"), Some(1_000));
        assert_eq!(count("1B"), Some(1_000_000_000));
        assert_eq!(count("1.5"), None);
        assert_eq!(count("x"), None);
        assert_eq!(duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(duration("2m"), Some(Duration::from_secs(120)));
        assert_eq!(duration("1.5"), Some(Duration::from_millis(1500)));
        assert_eq!(duration("3 days"), None);
    }

    #[test]
    fn sequences_follow_nosqlbench() {
        assert_eq!(SeqType::Concat.sequence(&[3, 2]), [0, 0, 0, 1, 1]);
        assert_eq!(SeqType::Bucket.sequence(&[3, 2]), [0, 1, 0, 1, 0]);
        assert_eq!(SeqType::Bucket.sequence(&[2, 5]), [0, 1, 0, 1, 1, 1, 1]);
        assert_eq!(SeqType::Interval.sequence(&[2, 5]), [0, 1, 1, 1, 0, 1, 1]);
        assert_eq!(SeqType::Interval.sequence(&[1, 1, 2]), [0, 1, 2, 2]);
        for seq in [SeqType::Bucket, SeqType::Concat, SeqType::Interval] {
            let s = seq.sequence(&[4, 0, 7, 1]);
            assert_eq!(s.len(), 12);
            for (op, want) in [(0, 4), (1, 0), (2, 7), (3, 1)] {
                assert_eq!(s.iter().filter(|&&o| o == op).count(), want, "{seq}");
            }
            assert!(seq.sequence(&[]).is_empty());
        }
    }
}

/// NoSQLBench's error handler chain (`errors=counter,warn`, `retry,warn`,
/// `stop`, or `PATTERN:handlers;...`) as paceline's policy: a chain that
/// stops stops, one that retries retries up to NB5's default `maxtries` (10),
/// any other (`warn`, `counter`, `timer`, `ignore`, ...) counts the error and
/// goes on, as NB5's chains without `stop` do. `None` for a word NB5 has no
/// handler for.
pub(crate) fn nb5_errors(text: &str) -> Option<crate::engine::ErrorPolicy> {
    nb5_rules(text).and_then(|t| crate::engine::ErrorPolicy::parse(&t).ok())
}

/// NB5's handler chain `text` written as paceline's rules, link by link, as
/// NB5 walks it (the first link whose pattern matches the error's name
/// decides): a link's patterns are its kinds (NB5's regexes, matched against
/// paceline's kinds: `Timeout.*` matches `timeout`; a link of `.*` alone, or
/// without a pattern, is a bare rule, so a `retry` there retries only what
/// the driver calls retryable); its verbs give the action: `stop` stops, with
/// `retry` after up to NB5's default `maxtries` (10) tries, `retry` alone
/// retries then counts, any other verb (`warn`, `counter`, `timer`,
/// `ignore`, a result code) counts. An error no link matches is ignored by
/// NB5 (the run goes on): a chain whose last link has a pattern gets `;count`.
/// `None` for a word NB5 has no handler for.
pub(crate) fn nb5_rules(text: &str) -> Option<String> {
    const HANDLERS: &[&str] = &[
        "stop",
        "warn",
        "ignore",
        "counter",
        "count",
        "histogram",
        "meter",
        "timer",
        "retry",
        "code",
        "verbose",
        "ok",
    ];
    let mut rules = Vec::new();
    let mut open_end = true;
    for link in text.split(';').map(str::trim).filter(|l| !l.is_empty()) {
        // `PATTERN,PATTERN:handler,handler` or the handlers alone.
        let (patterns, handlers) = match link.rsplit_once(':') {
            Some((p, h)) => (Some(p.trim()), h),
            None => (None, link),
        };
        let (mut stop, mut retry) = (false, false);
        for h in handlers.split(',').map(str::trim).filter(|h| !h.is_empty()) {
            let word = h.split('=').next().unwrap_or(h).to_ascii_lowercase();
            // A bare number is NB5's short form of `code=N`.
            if !HANDLERS.contains(&word.as_str()) && word.parse::<u32>().is_err() {
                return None;
            }
            stop |= word == "stop";
            retry |= word == "retry";
        }
        let action = match (retry, stop) {
            (true, true) => "retry:10,stop",
            (true, false) => "retry:10",
            (false, true) => "stop",
            (false, false) => "count",
        };
        let patterns = patterns.filter(|p| !p.split(',').all(|k| matches!(k.trim(), ".*" | "*")));
        open_end = patterns.is_some();
        rules.push(match patterns {
            Some(p) => format!("{p}:{action}"),
            None => action.to_string(),
        });
    }
    if rules.is_empty() {
        return None;
    }
    if open_end {
        rules.push("count".to_string());
    }
    Some(rules.join(";"))
}

#[cfg(test)]
mod nb5_errors_tests {
    use super::nb5_errors;

    #[test]
    fn nb5_handler_chains_map_onto_policies() {
        let show = |t: &str| nb5_errors(t).map(|p| p.to_string());
        assert_eq!(show("counter,warn").as_deref(), Some("count"));
        assert_eq!(show("timer,warn").as_deref(), Some("count"));
        assert_eq!(show("retry,warn").as_deref(), Some("retry:10"));
        // Audit p17 M7: a chain was one policy for every kind (its `retry`
        // retried every error 10 times); now each link is a rule.
        assert_eq!(
            show("Timeout.*:retry,stop;.*:stop").as_deref(),
            Some("Timeout.*:retry:10,stop;stop")
        );
        assert_eq!(
            show("Timeout.*:retry;.*:count").as_deref(),
            Some("Timeout.*:retry:10;count")
        );
        // NB5 ignores an error no link matches: counted here, the run goes on.
        assert_eq!(
            show("Invalid.*:ignore;Runtime.*:warn,histogram").as_deref(),
            Some("Invalid.*:count;Runtime.*:count;count")
        );
        assert_eq!(show(".*:warn,counter").as_deref(), Some("count"));
        assert_eq!(
            show("RuntimeException:33,warn").as_deref(),
            Some("RuntimeException:count;count")
        );
        assert_eq!(show("explode"), None);
    }
}
