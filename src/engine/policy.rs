//! What an op's error does: the error policy.

use std::fmt;
use std::str::FromStr;

/// What an op's error does once its retries are spent.
///
/// ```
/// assert_eq!(paceline::ErrorAction::default(), paceline::ErrorAction::Stop);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ErrorAction {
    /// Count the error (by kind) and go on with the next cycle.
    Count,
    /// Count the error and stop the activity (the default, as in NoSQLBench).
    #[default]
    Stop,
}

/// What an op's error does: retry up to N times, then count it or stop.
///
/// Written `count`, `stop`, `retry:N` (retry up to N times, then count) or
/// `retry:N,stop` (retry up to N times, then stop). Every failed attempt counts as
/// one error of its kind; every retry counts as one retry.
///
/// ```
/// use paceline::{ErrorAction, ErrorPolicy};
/// let p = ErrorPolicy::parse("retry:3")?;
/// assert_eq!((p.retries(), p.then()), (3, ErrorAction::Count));
/// assert_eq!(ErrorPolicy::parse("stop")?, ErrorPolicy::default());
/// assert_eq!(ErrorPolicy::parse("retry:2,stop")?.to_string(), "retry:2,stop");
/// assert!(ErrorPolicy::parse("retry").is_err());
/// # Ok::<(), paceline::BadErrorPolicy>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ErrorPolicy {
    retries: u32,
    then: ErrorAction,
}

impl ErrorPolicy {
    /// Retry up to `retries` times, then do `then`.
    ///
    /// ```
    /// let p = paceline::ErrorPolicy::new(2, paceline::ErrorAction::Count);
    /// assert_eq!(p.to_string(), "retry:2");
    /// ```
    pub fn new(retries: u32, then: ErrorAction) -> Self {
        Self { retries, then }
    }

    /// How many times a failed op is retried before `then` applies.
    ///
    /// ```
    /// assert_eq!(paceline::ErrorPolicy::default().retries(), 0);
    /// ```
    pub fn retries(&self) -> u32 {
        self.retries
    }

    /// What happens when the retries are spent.
    ///
    /// ```
    /// assert_eq!(paceline::ErrorPolicy::default().then(), paceline::ErrorAction::Stop);
    /// ```
    pub fn then(&self) -> ErrorAction {
        self.then
    }

    /// Parses the syntax in the type's docs.
    ///
    /// ```
    /// let err = paceline::ErrorPolicy::parse("ignore").unwrap_err();
    /// assert!(err.to_string().contains("use `count`, `stop`"));
    /// ```
    pub fn parse(text: &str) -> Result<Self, BadErrorPolicy> {
        let bad = || BadErrorPolicy {
            text: text.to_string(),
        };
        let t = text.trim();
        match t {
            "count" => return Ok(Self::new(0, ErrorAction::Count)),
            "stop" => return Ok(Self::new(0, ErrorAction::Stop)),
            _ => {}
        }
        let rest = t.strip_prefix("retry:").ok_or_else(bad)?;
        let (n, then) = match rest.split_once(',') {
            Some((n, "stop")) => (n, ErrorAction::Stop),
            Some((n, "count")) => (n, ErrorAction::Count),
            Some(_) => return Err(bad()),
            None => (rest, ErrorAction::Count),
        };
        let n: u32 = n.trim().parse().map_err(|_| bad())?;
        Ok(Self::new(n, then))
    }
}

impl FromStr for ErrorPolicy {
    type Err = BadErrorPolicy;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for ErrorPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.retries, self.then) {
            (0, ErrorAction::Count) => f.write_str("count"),
            (0, ErrorAction::Stop) => f.write_str("stop"),
            (n, ErrorAction::Count) => write!(f, "retry:{n}"),
            (n, ErrorAction::Stop) => write!(f, "retry:{n},stop"),
        }
    }
}

/// An error policy that could not be parsed. Fix: write `count`, `stop`,
/// `retry:N` or `retry:N,stop`.
///
/// ```
/// let err = "retry:x".parse::<paceline::ErrorPolicy>().unwrap_err();
/// assert_eq!(err.text(), "retry:x");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadErrorPolicy {
    text: String,
}

impl BadErrorPolicy {
    /// The text that was given.
    ///
    /// ```
    /// assert_eq!(paceline::ErrorPolicy::parse("x").unwrap_err().text(), "x");
    /// ```
    pub fn text(&self) -> &str {
        &self.text
    }
}

impl fmt::Display for BadErrorPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` is not an error policy: use `count`, `stop`, `retry:N` (then count) \
             or `retry:N,stop`",
            self.text
        )
    }
}

impl std::error::Error for BadErrorPolicy {}
