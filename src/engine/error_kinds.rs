//! The error kinds a run can produce ([`KnownKinds`]), and the check that each
//! kind an `errors=` rule names is one of them
//! ([`ErrorPolicy::check_kinds`]): a misspelt kind (`sql 4O`, `timout`) matches
//! no error, so its rule would never apply, silently.

use super::policy::ErrorPolicy;
use std::fmt;

/// The kinds the engine itself gives an op's error, whatever the driver: an op
/// cancelled at a stop, a panic, the shared schedule lost.
pub const ENGINE_ERROR_KINDS: &[&str] = &["cancelled", "panic", "shared-schedule"];

/// The error kinds a run's driver (and the engine) can produce. A kind may hold
/// `#`, which stands for one ASCII digit (`http ###`: every status); case is
/// ignored, as the policy ignores it.
///
/// ```
/// let k = paceline::KnownKinds::new("http", ["connect", "timeout", "http ###"]);
/// assert!(k.knows("timeout") && k.knows("HTTP 503") && k.knows("cancelled"));
/// assert!(!k.knows("timout") && !k.knows("http 5"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KnownKinds {
    driver: String,
    kinds: Vec<String>,
}

impl KnownKinds {
    /// The kinds of `driver`, with the engine's own ([`ENGINE_ERROR_KINDS`]).
    ///
    /// See [`KnownKinds`] for an example.
    pub fn new(driver: &str, kinds: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let mut all: Vec<String> = kinds.into_iter().map(Into::into).collect();
        for k in ENGINE_ERROR_KINDS {
            if !all.iter().any(|a| a == k) {
                all.push((*k).to_string());
            }
        }
        Self {
            driver: driver.to_string(),
            kinds: all,
        }
    }

    /// Whether an error of kind `kind` can come.
    ///
    /// See [`KnownKinds`] for an example.
    pub fn knows(&self, kind: &str) -> bool {
        self.kinds.iter().any(|k| fits(k, kind))
    }

    /// The known kind nearest to `kind` (fewest single-character edits, case
    /// ignored, `#` read as the digit written), if one is near enough to be a
    /// misspelling: at most a third of its length away.
    ///
    /// ```
    /// let k = paceline::KnownKinds::new("postgres", ["sql 40", "sql 23", "timeout"]);
    /// assert_eq!(k.closest("sql 4O").as_deref(), Some("sql 40"));
    /// assert_eq!(k.closest("timout").as_deref(), Some("timeout"));
    /// assert_eq!(k.closest("bananas"), None);
    /// ```
    pub fn closest(&self, kind: &str) -> Option<String> {
        let want = kind.to_ascii_lowercase();
        self.kinds
            .iter()
            .map(|k| {
                let k = k.to_ascii_lowercase();
                (edits(&k, &want), k)
            })
            .filter(|(d, k)| *d <= (k.len().max(want.len()) / 3).max(1))
            .min_by_key(|(d, _)| *d)
            .map(|(_, k)| k)
    }
}

/// Whether `kind` is `pattern`, ASCII case ignored, `#` standing for one digit.
fn fits(pattern: &str, kind: &str) -> bool {
    let (p, k) = (pattern.as_bytes(), kind.as_bytes());
    p.len() == k.len()
        && p.iter().zip(k).all(|(&a, &b)| {
            if a == b'#' {
                b.is_ascii_digit()
            } else {
                a.eq_ignore_ascii_case(&b)
            }
        })
}

/// Levenshtein distance over bytes, `#` in `a` costing nothing against a digit.
fn edits(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, &x) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, &y) in b.iter().enumerate() {
            let same = x == y || (x == b'#' && y.is_ascii_digit());
            cur[j + 1] = (prev[j] + usize::from(!same))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Most `#`s of a known kind whose digit forms [`any_digits`] tries one by
/// one (10^4 texts); a kind with more is taken to match.
const MAX_DIGITS_TRIED: u32 = 4;

/// Whether `f` holds for some text `k` stands for, each `#` in it a digit
/// (review p18, M-1: only the all-`0` form was tried, so `http 5.*` matched
/// no `http ###` and was refused).
fn any_digits(k: &str, mut f: impl FnMut(&str) -> bool) -> bool {
    let holes = k.matches('#').count() as u32;
    if holes == 0 {
        return f(k);
    }
    if holes > MAX_DIGITS_TRIED {
        return true;
    }
    let mut text = String::with_capacity(k.len());
    (0..10u32.pow(holes)).any(|mut n| {
        text.clear();
        // The last `#` takes the lowest digit of `n`.
        let mut digits = [0u8; MAX_DIGITS_TRIED as usize];
        for d in digits[..holes as usize].iter_mut().rev() {
            *d = (n % 10) as u8;
            n /= 10;
        }
        let mut next = digits.iter();
        for c in k.chars() {
            match (c, c == '#') {
                (_, true) => text.push(char::from(b'0' + next.next().copied().unwrap_or(0))),
                (c, false) => text.push(c),
            }
        }
        f(&text)
    })
}

impl ErrorPolicy {
    /// Checks that every kind a rule names is one `known` can produce; a kind
    /// with `*` (a wildcard: `sql *`, `http 5*`) is taken as written. A run
    /// refuses a policy that fails this at load: a misspelt kind would never
    /// match, and its errors would fall to the next rule unseen.
    ///
    /// ```
    /// use paceline::{ErrorPolicy, KnownKinds};
    /// let known = KnownKinds::new("postgres", ["sql 40", "sql 23", "timeout"]);
    /// assert!(ErrorPolicy::parse("sql 40:retry:5;sql *:count;stop")?.check_kinds(&known).is_ok());
    /// let err = ErrorPolicy::parse("sql 4O:retry:5")?.check_kinds(&known).unwrap_err();
    /// assert_eq!(err.kind(), "sql 4O");
    /// assert!(err.to_string().contains("did you mean `sql 40`?"), "{err}");
    /// # Ok::<(), paceline::BadErrorPolicy>(())
    /// ```
    pub fn check_kinds(&self, known: &KnownKinds) -> Result<(), UnknownErrorKind> {
        for (rule, kind) in self.named_kinds() {
            // NB5's regex (`Timeout.*`) must match one of the kinds (a `#` in
            // one read as any digit: `http 5.*` matches `http ###`'s `http 503`),
            // or its rule would never apply.
            if super::policy::is_regex(kind) {
                let re = super::policy::kind_regex(kind);
                if re.is_ok_and(|re| {
                    known
                        .kinds
                        .iter()
                        .any(|k| any_digits(k, |t| re.is_match(t)))
                }) {
                    continue;
                }
            } else if kind.contains('*') || known.knows(kind) {
                continue;
            }
            return Err(UnknownErrorKind {
                rule,
                kind: kind.to_string(),
                closest: known.closest(kind),
                driver: known.driver.clone(),
                known: known.kinds.clone(),
            });
        }
        Ok(())
    }
}

/// An `errors=` rule names a kind no error of the run can have. Fix: write the
/// kind as the driver names it (the message lists them), or match several with
/// `*` (`sql 4*`).
///
/// ```
/// let known = paceline::KnownKinds::new("http", ["timeout", "connect"]);
/// let err = paceline::ErrorPolicy::parse("timout:retry:3")?.check_kinds(&known).unwrap_err();
/// assert_eq!((err.rule(), err.kind()), ("timout:retry:3", "timout"));
/// # Ok::<(), paceline::BadErrorPolicy>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownErrorKind {
    rule: String,
    kind: String,
    closest: Option<String>,
    driver: String,
    known: Vec<String>,
}

impl UnknownErrorKind {
    /// The rule, as written back (`sql 4O:retry:5`).
    ///
    /// See [`UnknownErrorKind`] for an example.
    pub fn rule(&self) -> &str {
        &self.rule
    }

    /// The kind that no error can have.
    ///
    /// See [`UnknownErrorKind`] for an example.
    pub fn kind(&self) -> &str {
        &self.kind
    }
}

impl fmt::Display for UnknownErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if super::policy::is_regex(&self.kind) {
            return write!(
                f,
                "param `errors`: rule `{}` is for the error kinds NB5's regex `{}` matches \
                 (the whole kind, case ignored), and it matches none of driver `{}`'s: {} \
                 (`#` is a digit); fix the pattern, or end with a bare rule (`;count`) for \
                 every kind",
                self.rule,
                self.kind,
                self.driver,
                self.known.join(", ")
            );
        }
        write!(
            f,
            "param `errors`: rule `{}` is for error kind `{}`, which driver `{}` never \
             gives an error",
            self.rule, self.kind, self.driver
        )?;
        if let Some(c) = &self.closest {
            write!(f, " (did you mean `{c}`?)")?;
        }
        write!(
            f,
            "; its kinds are {} (`#` is a digit); fix the kind, or match several with `*` \
             (`{}*`)",
            self.known.join(", "),
            self.kind
                .split_whitespace()
                .next()
                .filter(|w| *w != self.kind)
                .map_or_else(|| self.kind.chars().take(2).collect(), |w| format!("{w} "))
        )
    }
}

impl std::error::Error for UnknownErrorKind {}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression (review p18, M-1): NB5 regex kinds were tried against a
    /// `#` kind read with every `#` as `0`, so `http 5.*` (and `http 5\d\d`)
    /// was refused for http's `http ###` though `http 503` errors match it.
    #[test]
    fn a_regex_kind_matches_a_hash_kind_at_any_digits() {
        let http = KnownKinds::new("http", ["connect", "timeout", "http ###"]);
        for ok in [r"http 5.*", r"http 5\d\d", r"http 50[0-9]", r"http 0.*"] {
            let p = ErrorPolicy::parse(&format!("{ok}:retry:3;count")).unwrap();
            assert!(p.check_kinds(&http).is_ok(), "{ok}");
        }
        let p = ErrorPolicy::parse(r"http 6\d\d\d.*:count").unwrap();
        assert!(p.check_kinds(&http).is_err());
        assert!(any_digits("a#b#", |t| t == "a9b1"));
        assert!(!any_digits("a#", |t| t == "ab"));
    }

    fn postgres() -> KnownKinds {
        KnownKinds::new(
            "postgres",
            [
                "connect", "io", "timeout", "tls", "bind", "check", "sql 23", "sql 40",
            ],
        )
    }

    #[test]
    fn issue22_a_misspelt_kind_is_refused_with_the_closest_and_the_list() {
        let err = ErrorPolicy::parse("sql 40:retry:5;sql 4O:retry:3;count")
            .unwrap()
            .check_kinds(&postgres())
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "param `errors`: rule `sql 4O:retry:3` is for error kind `sql 4O`, which driver \
             `postgres` never gives an error (did you mean `sql 40`?); its kinds are connect, \
             io, timeout, tls, bind, check, sql 23, sql 40, cancelled, panic, shared-schedule \
             (`#` is a digit); fix the kind, or match several with `*` (`sql *`)"
        );
        let err = ErrorPolicy::parse("timout:retry:3")
            .unwrap()
            .check_kinds(&postgres())
            .unwrap_err();
        assert_eq!(err.kind(), "timout");
        assert!(
            err.to_string().contains("(did you mean `timeout`?)"),
            "{err}"
        );
    }

    #[test]
    fn wildcards_case_and_digit_patterns_keep_working() {
        let http = KnownKinds::new("http", ["timeout", "http #xx", "http ###"]);
        for ok in [
            "*:count",
            "http 5*:retry:3",
            "HTTP 503:retry:2;http 4xx:count",
            "TIMEOUT,cancelled:stop",
            "count",
            "retry:3",
        ] {
            let p = ErrorPolicy::parse(ok).unwrap();
            assert_eq!(p.check_kinds(&http), Ok(()), "{ok}");
        }
        for bad in ["http 50:count", "http 5OO:count", "htp 503:count"] {
            let p = ErrorPolicy::parse(bad).unwrap();
            assert!(p.check_kinds(&http).is_err(), "{bad}");
        }
    }

    #[test]
    fn far_kinds_have_no_closest() {
        assert_eq!(postgres().closest("wrongtype"), None);
        assert_eq!(postgres().closest("SQL 42"), Some("sql 40".into()));
    }
}
