//! Tag filters (`tags=`, NB5's `tags` selector): which of a file's ops a run
//! keeps. Parsed once when the activity is loaded and matched once per op when
//! the run's op sequence is built; nothing here runs per cycle.

use super::ParamError;
use std::fmt;

/// A tag filter, as NoSQLBench writes it: `block:rampup`, `block:"main.*"`,
/// `name:read,block:main`. Each comma-separated condition is `KEY:REGEX` (the
/// tag `KEY` exists and the whole of its value matches `REGEX`; quotes around
/// the regex are dropped) or `KEY` alone (the tag exists). An op is selected
/// when it meets every condition.
///
/// ```
/// use paceline::TagFilter;
/// use std::collections::BTreeMap;
/// let f = TagFilter::parse(r#"block:"main.*",phase"#)?;
/// let mut tags = BTreeMap::new();
/// tags.insert("block".to_string(), "main-read".to_string());
/// assert!(!f.matches(&tags)); // no `phase` tag
/// tags.insert("phase".to_string(), "x".to_string());
/// assert!(f.matches(&tags));
/// assert!(!TagFilter::parse("block:main")?.matches(&tags)); // the whole value must match
/// assert_eq!(f.to_string(), r#"block:"main.*",phase"#);
/// # Ok::<(), paceline::ParamError>(())
/// ```
#[derive(Debug, Clone)]
pub struct TagFilter {
    text: String,
    conditions: Vec<(String, Option<regex::Regex>)>,
    conjugate: Conjugate,
}

impl PartialEq for TagFilter {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl TagFilter {
    /// Parses a filter; see the type's docs.
    ///
    /// ```
    /// assert!(paceline::TagFilter::parse("block:(").is_err());
    /// ```
    pub fn parse(text: &str) -> Result<Self, ParamError> {
        let bad = |why: String| ParamError::BadTags {
            text: text.to_string(),
            why,
        };
        // NB5's forms: the whole filter quoted (`'block:main.*'`), a
        // conjunction around it (`any(...)`, `all(...)`, `none(...)`).
        let mut body = unquote(text.trim());
        let mut conjugate = Conjugate::All;
        for (word, c) in [
            ("any(", Conjugate::Any),
            ("all(", Conjugate::All),
            ("none(", Conjugate::None),
        ] {
            if let Some(inner) = body.strip_prefix(word).and_then(|b| b.strip_suffix(')')) {
                body = inner;
                conjugate = c;
            }
        }
        let mut conditions = Vec::new();
        let parts = split_outside_quotes(body, ',');
        let last = parts.len() - 1;
        for (i, part) in parts.into_iter().enumerate() {
            let part = part.trim();
            if part.is_empty() {
                // A trailing comma (NB5 drops it, as Java's split does).
                if i == last && i > 0 {
                    continue;
                }
                return Err(bad("a condition is empty".into()));
            }
            // `key:regex` or NB5's `key=regex`.
            let (key, re) = match part.find([':', '=']) {
                Some(at) => (part[..at].trim(), Some(part[at + 1..].trim())),
                None => (part, None),
            };
            if key.is_empty() {
                return Err(bad(format!("`{part}` has no tag name before `:`")));
            }
            let re = match re {
                None => None,
                Some(v) => {
                    let v = unquote(v);
                    let re = regex::Regex::new(&format!("^(?:{v})$")).map_err(|e| {
                        bad(format!(
                            "`{v}` is not a regular expression: {}",
                            crate::activity::error::regex_reason(&e)
                        ))
                    })?;
                    Some(re)
                }
            };
            conditions.push((key.to_string(), re));
        }
        Ok(Self {
            text: text.trim().to_string(),
            conditions,
            conjugate,
        })
    }

    /// Whether an op with `tags` meets the conditions: every one (the
    /// default, NB5's `all(...)`), at least one (`any(...)`) or none
    /// (`none(...)`). A condition on a tag the op lacks whose name ends in `s`
    /// reads the singular (NB5's `blocks:` is `block:`).
    ///
    /// See the type's docs for an example.
    pub fn matches(&self, tags: &std::collections::BTreeMap<String, String>) -> bool {
        let met = self
            .conditions
            .iter()
            .filter(|(k, re)| {
                let value = tags
                    .get(k)
                    .or_else(|| k.strip_suffix('s').and_then(|singular| tags.get(singular)));
                match (value, re) {
                    (None, _) => false,
                    (Some(_), None) => true,
                    (Some(v), Some(re)) => re.is_match(v),
                }
            })
            .count();
        match self.conjugate {
            Conjugate::All => met == self.conditions.len(),
            Conjugate::Any => met > 0 || self.conditions.is_empty(),
            Conjugate::None => met == 0,
        }
    }
}

/// How a filter's conditions combine (NB5's conjugates).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Conjugate {
    All,
    Any,
    None,
}

/// `text` without one pair of matching outer quotes.
fn unquote(text: &str) -> &str {
    for q in ['"', '\''] {
        if let Some(inner) = text.strip_prefix(q).and_then(|t| t.strip_suffix(q))
            && !inner.contains(q)
        {
            return inner;
        }
    }
    text
}

impl fmt::Display for TagFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// `text` split at `sep` where it is not inside double or single quotes.
fn split_outside_quotes(text: &str, sep: char) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut quote = None;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (None, '"' | '\'') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, c) if c == sep => {
                parts.push(&text[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}
