//! Why an activity file was rejected.

use std::error::Error;
use std::fmt;
use std::path::PathBuf;

/// One problem in an activity file, at a position.
///
/// Displays as `FILE:LINE:COLUMN: MESSAGE` and, when there is one, `; HELP`.
///
/// ```
/// let err = paceline::Activity::from_str("params: {driver: d, thread: 4}\nops: {o: x}", "a.yaml", &["d"])
///     .unwrap_err();
/// let p = &err.problems()[0];
/// assert_eq!((p.line, p.column), (1, 21));
/// assert_eq!(p.to_string(), "a.yaml:1:21: unknown param `thread`; did you mean `threads`?");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file (or the name given for text).
    pub source: String,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// What was wrong.
    pub message: String,
    /// How to fix it, if there is more to say than the message.
    pub help: Option<String>,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: {}",
            self.source, self.line, self.column, self.message
        )?;
        if let Some(h) = &self.help {
            write!(f, "; {h}")?;
        }
        Ok(())
    }
}

/// Why an activity could not be loaded.
///
/// ```
/// let err = paceline::Activity::load("no/such/file.yaml", &["diag"]).unwrap_err();
/// assert!(matches!(err, paceline::ActivityError::Read { .. }));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum ActivityError {
    /// The file could not be read. Check the path and its permissions.
    Read {
        /// The path.
        path: PathBuf,
        /// Why.
        error: std::io::Error,
    },
    /// The file was read but did not validate: every problem found, in file order.
    /// Fix each at the position given; nothing runs until all are fixed.
    Invalid {
        /// The problems, at least one.
        problems: Vec<Problem>,
    },
}

impl ActivityError {
    /// The problems, if the file did not validate (empty for a read error).
    ///
    /// ```
    /// let err = paceline::Activity::from_str("ops: {}", "a", &["d"]).unwrap_err();
    /// assert!(err.problems().len() >= 2); // no driver, no ops
    /// ```
    pub fn problems(&self) -> &[Problem] {
        match self {
            Self::Read { .. } => &[],
            Self::Invalid { problems } => problems,
        }
    }
}

impl fmt::Display for ActivityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Read { path, error } => {
                write!(f, "cannot read activity file {}: {error}", path.display())
            }
            Self::Invalid { problems } => {
                let n = problems.len();
                write!(
                    f,
                    "{n} problem{} in the activity file:",
                    if n == 1 { "" } else { "s" }
                )?;
                for p in problems {
                    write!(f, "\n  {p}")?;
                }
                Ok(())
            }
        }
    }
}

impl Error for ActivityError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            Self::Read { error, .. } => Some(error),
            Self::Invalid { .. } => None,
        }
    }
}

/// A regex's parse error on one line: `regex`'s own text spans several (the
/// pattern, a caret under the place, the reason), and every line of a message
/// that refuses input must name its place. Gives "REASON at character N of
/// the pattern" (1-based) when the error marks a place.
pub(crate) fn regex_reason(e: &regex::Error) -> String {
    let text = e.to_string();
    let lines: Vec<&str> = text.lines().collect();
    let Some(reason) = lines.iter().find_map(|l| l.strip_prefix("error: ")) else {
        return lines.join("; ");
    };
    // The pattern is printed indented by four spaces with the caret line under it.
    let at = lines
        .iter()
        .position(|l| l.starts_with("regex parse error"))
        .and_then(|i| {
            let caret = lines.get(i + 2)?;
            let col = caret.find('^')?;
            (caret.trim().chars().all(|c| c == '^') && col >= 4)
                .then(|| caret[4..col].chars().count() + 1)
        });
    match at {
        Some(n) => format!("{reason} at character {n} of the pattern"),
        None => reason.to_string(),
    }
}

#[cfg(test)]
mod regex_tests {
    use super::regex_reason;

    #[test]
    fn a_regex_error_is_one_line_naming_the_character() {
        // Regression (fuzz seed 25, case 81): regex's three-line error made an
        // exit-2 message whose later lines named no place.
        // Built at run time: clippy refuses a literal bad regex.
        let pattern = String::from("^/echo/[items/[0-9]+");
        let e = regex::Regex::new(&pattern).unwrap_err();
        let r = regex_reason(&e);
        assert_eq!(r, "unclosed character class at character 8 of the pattern");
        assert!(!r.contains('\n'));
    }

    #[test]
    fn a_regex_error_without_a_place_keeps_its_reason_on_one_line() {
        let e = regex::RegexBuilder::new("a{1000}{1000}")
            .size_limit(100)
            .build()
            .unwrap_err();
        assert!(!regex_reason(&e).contains('\n'), "{}", regex_reason(&e));
    }
}
