//! Wildcard patterns: `*` for any run of characters and, where asked for, `?`
//! for exactly one.
//!
//! One matcher serves every place that takes a pattern from a user: the error
//! policy's kinds (`sql *`, `http 5*`, ASCII case ignored, `?` an ordinary
//! character) and the hlog paths `paceline report --merge` expands (`pod-?.hlog`,
//! case kept, as a shell would). A pattern matches the whole text, never a part
//! of it; there are no character classes and no escapes.
//!
//! ```
//! use paceline::wildcard::{Case, Wildcard};
//!
//! let kinds = Wildcard::star(Case::AsciiBlind);
//! assert!(kinds.matches("http 5*", "HTTP 503"));
//! assert!(!kinds.matches("http 5?3", "http 503")); // `?` is a plain character here
//!
//! let files = Wildcard::shell(Case::Sensitive);
//! assert!(files.matches("pod-?.hlog", "pod-7.hlog"));
//! assert!(!files.matches("pod-?.hlog", "pod-10.hlog"));
//! assert!(!files.matches("*.HLOG", "pod-0.hlog"));
//! ```

/// Whether letters must agree in case.
///
/// ```
/// use paceline::wildcard::{Case, Wildcard};
/// assert!(Wildcard::star(Case::AsciiBlind).matches("Timeout", "TIMEOUT"));
/// assert!(!Wildcard::star(Case::Sensitive).matches("Timeout", "TIMEOUT"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Case {
    /// Characters match only themselves.
    Sensitive,
    /// ASCII letters match either case; every other character only itself
    /// (`é` does not match `É`).
    AsciiBlind,
}

/// A wildcard dialect: which characters are wild, and whether case counts.
///
/// `*` always stands for any run of characters, the empty one included. With
/// [`shell`](Self::shell), `?` stands for exactly one character (a character,
/// not a byte: `?` matches `é`); with [`star`](Self::star) it is an ordinary
/// character. A `*` or `?` in the text is an ordinary character.
///
/// ```
/// use paceline::wildcard::{Case, Wildcard};
/// let w = Wildcard::shell(Case::Sensitive);
/// assert!(w.matches("a*b*c", "aXbYbZc"));
/// assert!(w.matches("*", ""));
/// assert!(w.matches("caf?", "café"));
/// assert!(!w.matches("a*b", "a"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Wildcard {
    case: Case,
    one: bool,
}

impl Wildcard {
    /// `*` only: `?` is an ordinary character.
    ///
    /// ```
    /// use paceline::wildcard::{Case, Wildcard};
    /// assert!(Wildcard::star(Case::AsciiBlind).matches("why?", "WHY?"));
    /// ```
    pub const fn star(case: Case) -> Self {
        Self { case, one: false }
    }

    /// `*` and `?`, as a shell's file-name patterns.
    ///
    /// ```
    /// use paceline::wildcard::{Case, Wildcard};
    /// assert!(Wildcard::shell(Case::Sensitive).matches("run-??.hlog", "run-12.hlog"));
    /// ```
    pub const fn shell(case: Case) -> Self {
        Self { case, one: true }
    }

    /// Whether the whole of `text` matches `pattern`.
    ///
    /// Takes at worst the product of the two lengths: a mismatch after a `*`
    /// lets that star take one more character and tries again from just after
    /// it, never from an earlier star (a later star can take whatever an
    /// earlier one could have).
    ///
    /// ```
    /// use paceline::wildcard::{Case, Wildcard};
    /// let w = Wildcard::star(Case::AsciiBlind);
    /// assert!(w.matches("*out", "timeout"));
    /// assert!(!w.matches("sql 4", "sql 40"));
    /// ```
    pub fn matches(self, pattern: &str, text: &str) -> bool {
        // Byte offsets into both, always on character boundaries. `star`: the
        // pattern offset just after the last `*` seen, and the text offset
        // where that star's run ends so far.
        let (mut i, mut j) = (0, 0);
        let mut star: Option<(usize, usize)> = None;
        while let Some(t) = text[j..].chars().next() {
            if let Some(p) = pattern[i..].chars().next() {
                if p == '*' {
                    i += 1;
                    star = Some((i, j));
                    continue;
                }
                if (self.one && p == '?') || self.same(p, t) {
                    i += p.len_utf8();
                    j += t.len_utf8();
                    continue;
                }
            }
            let Some((after, run_end)) = star else {
                return false;
            };
            // The star takes one more character; match again from after it.
            let taken = text[run_end..].chars().next().map_or(0, char::len_utf8);
            i = after;
            j = run_end + taken;
            star = Some((after, j));
        }
        pattern[i..].chars().all(|c| c == '*')
    }

    fn same(self, p: char, t: char) -> bool {
        match self.case {
            Case::Sensitive => p == t,
            Case::AsciiBlind => p.eq_ignore_ascii_case(&t),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Case, Wildcard};
    use proptest::prelude::*;

    /// The obvious recursive matcher, exponential at worst: the reference the
    /// real one must agree with.
    fn reference(w: Wildcard, p: &[char], t: &[char]) -> bool {
        match p.split_first() {
            None => t.is_empty(),
            Some(('*', rest)) => (0..=t.len()).any(|k| reference(w, rest, &t[k..])),
            Some((&c, rest)) => match t.split_first() {
                Some((&d, t_rest)) if (w.one && c == '?') || w.same(c, d) => {
                    reference(w, rest, t_rest)
                }
                _ => false,
            },
        }
    }

    const DIALECTS: [Wildcard; 4] = [
        Wildcard::star(Case::Sensitive),
        Wildcard::star(Case::AsciiBlind),
        Wildcard::shell(Case::Sensitive),
        Wildcard::shell(Case::AsciiBlind),
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn agrees_with_the_reference_matcher(
            p in "[aAbé*?]{0,8}",
            t in "[aAbéÉ*?]{0,10}",
        ) {
            let (pc, tc): (Vec<char>, Vec<char>) = (p.chars().collect(), t.chars().collect());
            for w in DIALECTS {
                prop_assert_eq!(w.matches(&p, &t), reference(w, &pc, &tc), "{:?} {:?} {:?}", w, p, t);
            }
        }
    }

    #[test]
    fn ascii_case_blind_folds_ascii_letters_only() {
        let w = Wildcard::star(Case::AsciiBlind);
        assert!(w.matches("SQL 40", "sql 40"));
        assert!(!w.matches("é", "É"));
        assert!(!Wildcard::star(Case::Sensitive).matches("a", "A"));
    }

    #[test]
    fn question_mark_takes_one_character_not_one_byte() {
        let w = Wildcard::shell(Case::Sensitive);
        assert!(w.matches("?", "é"));
        assert!(!w.matches("??", "é"));
        assert!(w.matches("*?", "é"));
        assert!(!Wildcard::star(Case::Sensitive).matches("?", "é"));
    }

    /// Regression: `report --merge`'s own matcher compared a pattern's `*` with
    /// a literal `*` in a file name before treating it as wild, so `*a` did not
    /// match `*ba`.
    #[test]
    fn a_star_in_the_text_is_an_ordinary_character() {
        let w = Wildcard::shell(Case::Sensitive);
        assert!(w.matches("*a", "*ba"));
        assert!(w.matches("*", "*"));
        assert!(!w.matches("a", "*"));
    }

    #[test]
    fn many_stars_stay_polynomial() {
        let text = "a".repeat(2_000);
        let pattern = format!("{}b", "*a".repeat(20));
        assert!(!Wildcard::shell(Case::Sensitive).matches(&pattern, &text));
    }
}
