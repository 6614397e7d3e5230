//! What an op's error does: the error policy, by error kind.
//!
//! A policy is a list of rules, tried in order; the first whose kinds match the
//! error's kind decides. A rule is an action (`count`, `stop`, `retry:N`,
//! `retry:N,stop`), with or without the kinds it is for (`sql 40:retry:5`).
//! The decision is a pure function of the policy, the error and the tries so
//! far ([`ErrorPolicy::retries_again`], [`ErrorPolicy::action`]); both runners
//! apply it in their retry loop.

use super::workload::OpError;
use crate::wildcard::{Case, Wildcard};
use std::fmt;
use std::str::FromStr;

/// What an op's error does once its retries are spent (or when it is not
/// retried).
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

/// One rule: the kinds it is for (`None`: any) and what it does.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Rule {
    kinds: Option<Vec<Kind>>,
    retries: u32,
    then: ErrorAction,
}

impl Rule {
    fn matches(&self, kind: &str) -> bool {
        self.kinds
            .as_ref()
            .is_none_or(|ks| ks.iter().any(|k| k.matches(kind)))
    }
}

/// A kind as a rule names it: a glob (`sql 40`, `http 5*`), or NB5's regular
/// expression (`.*`, `Timeout.*`: a pattern with a regex character), matched
/// against the whole kind. Compared and hashed by its text.
#[derive(Debug, Clone)]
struct Kind {
    text: String,
    regex: Option<regex::Regex>,
}

impl PartialEq for Kind {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Eq for Kind {}

impl std::hash::Hash for Kind {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.text.hash(h);
    }
}

impl Kind {
    /// `text` as a glob, or as a regex when it holds a regex character;
    /// the reason a regex does not compile.
    fn new(text: String) -> Result<Self, String> {
        let regex = match is_regex(&text) {
            false => None,
            true => Some(kind_regex(&text)?),
        };
        Ok(Self { text, regex })
    }

    fn matches(&self, kind: &str) -> bool {
        match &self.regex {
            Some(re) => re.is_match(kind),
            None => glob(&self.text, kind),
        }
    }
}

/// Whether a rule's kind is NB5's regular expression rather than a glob: it
/// holds a character no error kind has and a glob gives no meaning to
/// (`.`, `\`, `[`, `(`, `|`, `^`, `$`, `+`, `?`, `{`). NB5 names errors by
/// Java exception and matches them with regexes (`.*:count`, `Timeout.*`).
pub(crate) fn is_regex(kind: &str) -> bool {
    kind.contains(['.', '\\', '[', '(', '|', '^', '$', '+', '?', '{'])
}

/// NB5's regex `pattern` as it matches a kind: the whole kind, ASCII case
/// ignored (so `Timeout.*` matches `timeout`).
pub(crate) fn kind_regex(pattern: &str) -> Result<regex::Regex, String> {
    regex::RegexBuilder::new(&format!("^(?:{pattern})$"))
        .case_insensitive(true)
        .build()
        .map_err(|e| {
            format!(
                "`{pattern}` is not a regular expression: {}",
                e.to_string().lines().last().unwrap_or("")
            )
        })
}

/// Whether `kind` matches `pattern`, ASCII case ignored; `*` stands for any
/// run of characters (`sql *`, `http 5*`, `*`).
fn glob(pattern: &str, kind: &str) -> bool {
    Wildcard::star(Case::AsciiBlind).matches(pattern, kind)
}

/// What an op's error does: retry it up to N times, then count it or stop, chosen
/// by the error's kind.
///
/// Written as rules separated by `;`, tried in order; the first that matches
/// the error's kind decides:
///
/// | rule | matches | does |
/// |---|---|---|
/// | `count`, `stop` | any kind | count the error and go on / count it and stop the activity |
/// | `retry:N` (`retry:N,count`), `retry:N,stop` | any kind | retry an error its driver calls retryable ([`OpError::is_retryable`]) up to N times, then count / stop; an error its driver calls not retryable goes straight to the count / stop |
/// | `KIND,KIND:ACTION` | the kinds named (ASCII case ignored, `*` for any run of characters: `sql *`, `http 5*`, `*`; a kind with a regex character, `.*` or `Timeout.*`, is NB5's regular expression, matched against the whole kind) | the action; a `retry:N` here retries the named kinds whatever the driver says, since you asked for them by name |
///
/// An error that no rule matches stops the activity (as the default `stop`
/// does): end with a bare rule (`...;count`) to count the rest. Every failed
/// attempt that is tried again counts one retry; only the op's last failure
/// counts as an error of its kind. A fatal error ([`OpError::fatal`]) stops the
/// activity whatever the policy says.
///
/// ```
/// use paceline::{ErrorAction, ErrorPolicy, OpError};
/// let p = ErrorPolicy::parse("retry:3")?;
/// let serialization = OpError::new("sql 40", "could not serialize").retryable(true);
/// let duplicate = OpError::new("sql 23", "duplicate key").retryable(false);
/// assert!(p.retries_again(&serialization, 2));
/// assert!(!p.retries_again(&serialization, 3));
/// assert!(!p.retries_again(&duplicate, 0)); // the same values fail again
/// assert_eq!(p.action(&duplicate), ErrorAction::Count);
///
/// // By kind: retry serialization failures, count duplicates, stop on the rest.
/// let p = ErrorPolicy::parse("sql 40:retry:5; sql 23:count; stop")?;
/// assert_eq!(p.action(&duplicate), ErrorAction::Count);
/// assert_eq!(p.action(&OpError::new("sql 42", "syntax")), ErrorAction::Stop);
/// assert_eq!(p.to_string(), "sql 40:retry:5;sql 23:count;stop");
/// assert_eq!(ErrorPolicy::parse("stop")?, ErrorPolicy::default());
/// assert!(ErrorPolicy::parse("retry").is_err());
/// # Ok::<(), paceline::BadErrorPolicy>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ErrorPolicy {
    rules: Vec<Rule>,
}

impl Default for ErrorPolicy {
    /// `stop`.
    fn default() -> Self {
        Self::new(0, ErrorAction::Stop)
    }
}

impl ErrorPolicy {
    /// One rule for every kind: retry an error its driver calls retryable up to
    /// `retries` times, then do `then`.
    ///
    /// ```
    /// let p = paceline::ErrorPolicy::new(2, paceline::ErrorAction::Count);
    /// assert_eq!(p.to_string(), "retry:2");
    /// ```
    pub fn new(retries: u32, then: ErrorAction) -> Self {
        Self {
            rules: vec![Rule {
                kinds: None,
                retries,
                then,
            }],
        }
    }

    /// Each kind a rule names, with that rule as written back (`sql 40:retry:5`),
    /// for the check against the kinds a run can produce
    /// ([`check_kinds`](Self::check_kinds)).
    pub(crate) fn named_kinds(&self) -> Vec<(String, &str)> {
        let mut out = Vec::new();
        for r in &self.rules {
            let text = Self {
                rules: vec![r.clone()],
            }
            .to_string();
            for k in r.kinds.iter().flatten() {
                out.push((text.clone(), k.text.as_str()));
            }
        }
        out
    }

    /// The rule that decides for an error of `kind`, if any.
    fn rule(&self, kind: &str) -> Option<&Rule> {
        self.rules.iter().find(|r| r.matches(kind))
    }

    /// Whether an op that failed with `e` after `tries` retries is tried again:
    /// its rule retries, fewer than its N retries were made, the error is not
    /// fatal, and either the rule names the kind or the driver does not call the
    /// error not retryable.
    ///
    /// ```
    /// use paceline::{ErrorPolicy, OpError};
    /// let p = ErrorPolicy::parse("check:retry:1; retry:4")?;
    /// let check = OpError::new("check", "0 rows").retryable(false);
    /// assert!(p.retries_again(&check, 0)); // named: retried
    /// assert!(!p.retries_again(&check, 1));
    /// assert!(p.retries_again(&OpError::new("down", "unclassified"), 3));
    /// assert!(!p.retries_again(&OpError::new("down", "gone").fatal(), 0));
    /// # Ok::<(), paceline::BadErrorPolicy>(())
    /// ```
    pub fn retries_again(&self, e: &OpError, tries: u32) -> bool {
        if e.is_fatal() {
            return false;
        }
        match self.rule(e.kind()) {
            Some(r) => tries < r.retries && (r.kinds.is_some() || e.is_retryable() != Some(false)),
            None => false,
        }
    }

    /// What an op's last failure `e` does: its rule's action (`stop` when no
    /// rule matches or the error is fatal).
    ///
    /// ```
    /// use paceline::{ErrorAction, ErrorPolicy, OpError};
    /// let p = ErrorPolicy::parse("timeout:count")?;
    /// assert_eq!(p.action(&OpError::new("timeout", "slow")), ErrorAction::Count);
    /// assert_eq!(p.action(&OpError::new("io", "reset")), ErrorAction::Stop);
    /// # Ok::<(), paceline::BadErrorPolicy>(())
    /// ```
    pub fn action(&self, e: &OpError) -> ErrorAction {
        if e.is_fatal() {
            return ErrorAction::Stop;
        }
        self.rule(e.kind()).map_or(ErrorAction::Stop, |r| r.then)
    }

    /// Parses the syntax in the type's docs.
    ///
    /// ```
    /// let err = paceline::ErrorPolicy::parse("sql 40:retry:x;count").unwrap_err();
    /// assert!(err.to_string().contains("rule `sql 40:retry:x`"), "{err}");
    /// assert!(err.to_string().contains("use `count`, `stop`"), "{err}");
    /// ```
    pub fn parse(text: &str) -> Result<Self, BadErrorPolicy> {
        let bad = |rule: &str, why: String| BadErrorPolicy {
            text: text.to_string(),
            why: if rule.trim() == text.trim() {
                why
            } else {
                format!("rule `{}`: {why}", rule.trim())
            },
        };
        let mut rules = Vec::new();
        for rule in text.split(';') {
            let r = rule.trim();
            if r.is_empty() {
                if text.trim().is_empty() {
                    return Err(bad(rule, "it is empty".to_string()));
                }
                continue;
            }
            if let Some((retries, then)) = action(r) {
                rules.push(Rule {
                    kinds: None,
                    retries,
                    then,
                });
                continue;
            }
            if r.starts_with("retry:") || r == "retry" {
                return Err(bad(
                    r,
                    format!("`{r}` is not an action: write `retry:N` with a whole N (`retry:3`)"),
                ));
            }
            let Some((kinds, act)) = r.split_once(':') else {
                return Err(bad(r, format!("`{r}` is not an action")));
            };
            let Some((retries, then)) = action(act.trim()) else {
                return Err(bad(r, format!("`{}` is not an action", act.trim())));
            };
            let kinds: Vec<String> = kinds
                .split(',')
                .map(|k| k.split_whitespace().collect::<Vec<_>>().join(" "))
                .collect();
            if kinds.iter().any(String::is_empty) {
                return Err(bad(
                    r,
                    "an empty error kind before `:`; name kinds such as `sql 40` or \
                     `timeout`, comma-separated"
                        .to_string(),
                ));
            }
            let kinds = kinds
                .into_iter()
                .map(Kind::new)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|why| bad(r, why))?;
            rules.push(Rule {
                kinds: Some(kinds),
                retries,
                then,
            });
        }
        if rules.is_empty() {
            return Err(bad(text, "it has no rule".to_string()));
        }
        Ok(Self { rules })
    }
}

/// `count`, `stop`, `retry:N`, `retry:N,count`, `retry:N,stop` as (N, then).
fn action(t: &str) -> Option<(u32, ErrorAction)> {
    match t {
        "count" => return Some((0, ErrorAction::Count)),
        "stop" => return Some((0, ErrorAction::Stop)),
        _ => {}
    }
    let rest = t.strip_prefix("retry:")?;
    let (n, then) = match rest.split_once(',') {
        Some((n, then)) => match then.trim() {
            "stop" => (n, ErrorAction::Stop),
            "count" => (n, ErrorAction::Count),
            _ => return None,
        },
        None => (rest, ErrorAction::Count),
    };
    Some((n.trim().parse().ok()?, then))
}

impl FromStr for ErrorPolicy {
    type Err = BadErrorPolicy;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for ErrorPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.rules.iter().enumerate() {
            if i > 0 {
                f.write_str(";")?;
            }
            if let Some(kinds) = &r.kinds {
                let texts: Vec<&str> = kinds.iter().map(|k| k.text.as_str()).collect();
                write!(f, "{}:", texts.join(","))?;
            }
            match (r.retries, r.then) {
                (0, ErrorAction::Count) => f.write_str("count")?,
                (0, ErrorAction::Stop) => f.write_str("stop")?,
                (n, ErrorAction::Count) => write!(f, "retry:{n}")?,
                (n, ErrorAction::Stop) => write!(f, "retry:{n},stop")?,
            }
        }
        Ok(())
    }
}

/// An error policy that could not be parsed. Fix: write `count`, `stop`,
/// `retry:N`, `retry:N,stop`, or rules by kind (`sql 40:retry:3;count`).
///
/// ```
/// let err = "retry:x".parse::<paceline::ErrorPolicy>().unwrap_err();
/// assert_eq!(err.text(), "retry:x");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadErrorPolicy {
    text: String,
    why: String,
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
            "`{}` is not an error policy: {}; use `count`, `stop`, `retry:N` (then count) \
             or `retry:N,stop`, each alone or after the error kinds it is for, rules \
             separated by `;` (`sql 40:retry:3;sql 23:count;stop`)",
            self.text, self.why
        )
    }
}

impl std::error::Error for BadErrorPolicy {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_whole_kinds_case_blind() {
        assert!(glob("sql 40", "SQL 40"));
        assert!(!glob("sql 4", "sql 40"));
        assert!(glob("sql *", "sql 23"));
        assert!(glob("*", ""));
        assert!(glob("http 5*", "http 503"));
        assert!(!glob("http 5*", "http 404"));
        assert!(glob("*out", "timeout"));
        assert!(glob("a*b*c", "axxbyyc"));
        assert!(!glob("a*b*c", "axxbyy"));
    }

    #[test]
    fn round_trips_and_rejects() {
        for t in [
            "count",
            "stop",
            "retry:3",
            "retry:3,stop",
            "sql 40:retry:5;count",
            "sql 40,sql 23:retry:2,stop;timeout:count;stop",
        ] {
            assert_eq!(ErrorPolicy::parse(t).unwrap().to_string(), t);
        }
        assert_eq!(
            ErrorPolicy::parse(" sql  40 : retry:1 ; count ")
                .unwrap()
                .to_string(),
            "sql 40:retry:1;count"
        );
        for (t, why) in [
            ("", "it is empty"),
            (";", "it has no rule"),
            ("retry", "`retry` is not an action"),
            ("retry:", "`retry:` is not an action"),
            ("retry:2,maybe", "`retry:2,maybe` is not an action"),
            (
                "sql 40:retry:x;count",
                "rule `sql 40:retry:x`: `retry:x` is not an action",
            ),
            (":count", "an empty error kind"),
            (
                "count;sql 40,:stop",
                "rule `sql 40,:stop`: an empty error kind",
            ),
        ] {
            let e = ErrorPolicy::parse(t).unwrap_err().to_string();
            assert!(e.contains(why), "{t}: {e}");
        }
    }

    #[test]
    fn the_first_matching_rule_decides_and_unmatched_kinds_stop() {
        let p = ErrorPolicy::parse("sql 40:retry:2;sql *:count").unwrap();
        let ser = OpError::new("sql 40", "serialize").retryable(true);
        let dup = OpError::new("sql 23", "dup").retryable(false);
        let io = OpError::new("io", "reset");
        assert!(p.retries_again(&ser, 1) && !p.retries_again(&ser, 2));
        assert_eq!(p.action(&ser), ErrorAction::Count);
        assert!(!p.retries_again(&dup, 0));
        assert_eq!(p.action(&dup), ErrorAction::Count);
        assert!(!p.retries_again(&io, 0));
        assert_eq!(p.action(&io), ErrorAction::Stop);
    }

    #[test]
    fn a_bare_retry_follows_the_driver_and_a_named_one_overrides_it() {
        let bare = ErrorPolicy::parse("retry:3,stop").unwrap();
        let yes = OpError::new("x", "").retryable(true);
        let no = OpError::new("x", "").retryable(false);
        let unset = OpError::new("x", "");
        assert!(bare.retries_again(&yes, 2));
        assert!(!bare.retries_again(&no, 0));
        assert_eq!(bare.action(&no), ErrorAction::Stop);
        // An embedder's error that says nothing is retried, as before kinds.
        assert!(bare.retries_again(&unset, 2));
        let named = ErrorPolicy::parse("X:retry:3").unwrap();
        assert!(named.retries_again(&no, 2));
        let star = ErrorPolicy::parse("*:retry:1").unwrap();
        assert!(star.retries_again(&no, 0));
        assert!(!star.retries_again(&no.clone().fatal(), 0));
        assert_eq!(star.action(&no.fatal()), ErrorAction::Stop);
    }

    /// Audit p17 M7: `.*:count` (NB5's "count everything") was read as the
    /// glob `.*` (a dot, then anything), which matches no kind: the run
    /// stopped at the first error. A kind with a regex character is NB5's
    /// regex now, matched against the whole kind, case ignored.
    #[test]
    fn nb5_regex_kinds_match_whole_kinds() {
        let p = ErrorPolicy::parse(".*:count").unwrap();
        assert_eq!(p.action(&OpError::new("diag", "x")), ErrorAction::Count);
        let p = ErrorPolicy::parse("Timeout.*:retry:2;sql 4[0-9]:count").unwrap();
        assert!(p.retries_again(&OpError::new("timeout", "slow"), 1));
        assert!(!p.retries_again(&OpError::new("io", "reset"), 0));
        assert_eq!(p.action(&OpError::new("sql 42", "x")), ErrorAction::Count);
        assert_eq!(p.action(&OpError::new("sql 420", "x")), ErrorAction::Stop);
        assert_eq!(p.to_string(), "Timeout.*:retry:2;sql 4[0-9]:count");
        let e = ErrorPolicy::parse("(:count").unwrap_err().to_string();
        assert!(e.contains("`(` is not a regular expression"), "{e}");
    }
}
