//! [`Template`]: text with `{binding}` placeholders, compiled once, rendered per cycle.

use super::error::TemplateError;
use super::{BindingSet, Value};
use crate::activity::suggest;

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Text(String),
    Binding(usize),
}

/// One piece of a compiled [`Template`]: literal text, or a binding's index.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Piece<'a> {
    Text(&'a str),
    Binding(usize),
}

/// One piece of a template's text: literal text (`{{` already turned into `{`), or a
/// placeholder's name with its offset in characters.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Token<'a> {
    Text(String),
    Name { name: &'a str, at: usize },
}

/// Splits `text` into literal text and `{name}` placeholders, by the rules of
/// [`Template`]: a name is letters, digits, `_` or `-` closed by `}`; any other brace
/// is literal; `{{` is a literal `{`. Adjacent literal text comes as one token.
pub(crate) fn tokenize(text: &str) -> Vec<Token<'_>> {
    let mut tokens = Vec::new();
    let mut lit = String::new();
    let mut chars = text.char_indices().peekable();
    let mut char_pos = 0usize;
    while let Some((i, c)) = chars.next() {
        let at = char_pos;
        char_pos += 1;
        if c != '{' {
            lit.push(c);
            continue;
        }
        if chars.peek().map(|&(_, c)| c) == Some('{') {
            if let Some(expr) = inline_binding(&text[i + 2..]) {
                // `{{expr}}`: the expression, trimmed, is the binding's name.
                let len = text[i + 2..].find("}}").unwrap_or(0) + 2;
                let skipped = text[i + 1..i + 2 + len].chars().count();
                for _ in 0..skipped {
                    chars.next();
                }
                char_pos += skipped;
                if !lit.is_empty() {
                    tokens.push(Token::Text(std::mem::take(&mut lit)));
                }
                tokens.push(Token::Name { name: expr, at });
                continue;
            }
            chars.next();
            char_pos += 1;
            lit.push('{');
            continue;
        }
        let rest = &text[i + 1..];
        let name_len = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
            .unwrap_or(rest.len());
        if name_len == 0 || !rest[name_len..].starts_with('}') {
            lit.push('{');
            continue;
        }
        let name = &rest[..name_len];
        // The name and its `}` are skipped by characters: `name_len` counts bytes.
        let skipped = name.chars().count() + 1;
        for _ in 0..skipped {
            chars.next();
        }
        char_pos += skipped;
        if !lit.is_empty() {
            tokens.push(Token::Text(std::mem::take(&mut lit)));
        }
        tokens.push(Token::Name { name, at });
    }
    if !lit.is_empty() {
        tokens.push(Token::Text(lit));
    }
    tokens
}

/// The expression of an inline binding at the start of `rest` (the text after
/// `{{`): up to the next `}}`, a function call such as `Mod(10)` or a chain such
/// as `Hash(); Mod(10)`; `None` when `rest` does not hold one.
pub(crate) fn inline_binding(rest: &str) -> Option<&str> {
    let end = rest.find("}}")?;
    let expr = rest[..end].trim();
    (expr.starts_with(|c: char| c.is_ascii_alphabetic()) && expr.contains('(')).then_some(expr)
}

/// Whether a placeholder's name is an inline binding's expression (`{{Mod(10)}}`)
/// rather than a binding's name.
pub(crate) fn is_inline(name: &str) -> bool {
    name.contains('(')
}

/// Text with `{name}` placeholders, compiled against a [`BindingSet`].
///
/// A placeholder is `{` + a name of letters, digits, `_` or `-` + `}`. Any other
/// brace is literal text, so JSON bodies need no escaping; `{{` writes a literal
/// `{` (for the rare literal `{name}`, write `{{name}`), except `{{EXPR}}` where
/// `EXPR` is a function call: NoSQLBench's inline binding, which an activity
/// file's loader compiles (`{{Mod(10)}}`).
///
/// ```
/// use paceline::{BindingSet, Template};
/// let set = BindingSet::compile([("id", "Mod(100)")])?;
/// let t = Template::compile(r#"{"id": {id}, "tag": "{{id}"}"#, &set).unwrap();
/// assert_eq!(t.render(142, &set), r#"{"id": 42, "tag": "{id}"}"#);
/// # Ok::<(), paceline::BindingError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    parts: Vec<Part>,
}

impl Template {
    /// Compiles `text`; every unknown placeholder is reported, each with its offset.
    ///
    /// ```
    /// let set = paceline::BindingSet::default();
    /// assert_eq!(paceline::Template::compile("{a} {b}", &set).unwrap_err().len(), 2);
    /// ```
    pub fn compile(text: &str, bindings: &BindingSet) -> Result<Self, Vec<TemplateError>> {
        Self::compile_scoped(text, bindings, &[String::new()])
    }

    /// [`compile`](Self::compile) where a name `n` is looked up as `SCOPE` + `n`
    /// for each scope in order (an op's own bindings, then its block's, then the
    /// file's: `["main/read/", "main/", ""]`); an inline binding (`{{Mod(10)}}`)
    /// is looked up by its expression.
    pub(crate) fn compile_scoped(
        text: &str,
        bindings: &BindingSet,
        scopes: &[String],
    ) -> Result<Self, Vec<TemplateError>> {
        let mut parts = Vec::new();
        let mut errors = Vec::new();
        for token in tokenize(text) {
            match token {
                Token::Text(t) => parts.push(Part::Text(t)),
                Token::Name { name, at } => {
                    let found = if is_inline(name) {
                        bindings.index_of(name)
                    } else {
                        scopes
                            .iter()
                            .find_map(|s| bindings.index_of(&format!("{s}{name}")))
                    };
                    match found {
                        Some(idx) => parts.push(Part::Binding(idx)),
                        None => {
                            let mut known: Vec<String> = Vec::new();
                            for n in bindings.names() {
                                let visible = scopes.iter().find_map(|s| {
                                    n.strip_prefix(s.as_str())
                                        .filter(|rest| !rest.contains('/') && !is_inline(rest))
                                });
                                if let Some(v) = visible.filter(|v| !known.iter().any(|k| k == v)) {
                                    known.push(v.to_string());
                                }
                            }
                            let suggestion =
                                suggest::closest(name, known.iter().map(String::as_str))
                                    .map(str::to_string);
                            errors.push(TemplateError::UnknownBinding {
                                name: name.to_string(),
                                at,
                                known,
                                suggestion,
                            });
                        }
                    }
                }
            }
        }
        if errors.is_empty() {
            Ok(Self { parts })
        } else {
            Err(errors)
        }
    }

    /// Appends the text for `cycle` to `buf`; reuse one buffer across cycles.
    ///
    /// ```
    /// let set = paceline::BindingSet::compile([("n", "Mod(10)")])?;
    /// let t = paceline::Template::compile("n={n};", &set).unwrap();
    /// let mut buf = String::new();
    /// for cycle in 0..3 {
    ///     t.render_into(cycle, &set, &mut buf);
    /// }
    /// assert_eq!(buf, "n=0;n=1;n=2;");
    /// # Ok::<(), paceline::BindingError>(())
    /// ```
    pub fn render_into(&self, cycle: u64, bindings: &BindingSet, buf: &mut String) {
        for part in &self.parts {
            match part {
                Part::Text(t) => buf.push_str(t),
                Part::Binding(i) => bindings.at(*i).render_into(cycle, buf),
            }
        }
    }

    /// The text for `cycle`, in a new string.
    ///
    /// ```
    /// let set = paceline::BindingSet::compile([("n", "Mod(10)")])?;
    /// let t = paceline::Template::compile("n={n}", &set).unwrap();
    /// assert_eq!(t.render(12, &set), "n=2");
    /// # Ok::<(), paceline::BindingError>(())
    /// ```
    pub fn render(&self, cycle: u64, bindings: &BindingSet) -> String {
        let mut s = String::new();
        self.render_into(cycle, bindings, &mut s);
        s
    }

    /// The value for `cycle`: a template that is exactly one placeholder gives the
    /// binding's typed value (a number stays a number); anything else gives text.
    ///
    /// ```
    /// use paceline::{BindingSet, Template, Value};
    /// let set = BindingSet::compile([("n", "Mod(10)")])?;
    /// assert_eq!(Template::compile("{n}", &set).unwrap().value(3, &set), Value::U64(3));
    /// assert_eq!(Template::compile("#{n}", &set).unwrap().value(3, &set), Value::Str("#3".into()));
    /// # Ok::<(), paceline::BindingError>(())
    /// ```
    pub fn value(&self, cycle: u64, bindings: &BindingSet) -> Value {
        match self.parts.as_slice() {
            [Part::Binding(i)] => bindings.eval(*i, cycle),
            _ => Value::Str(self.render(cycle, bindings)),
        }
    }

    /// Whether the template has no placeholders (the text is the same every cycle).
    ///
    /// ```
    /// let set = paceline::BindingSet::default();
    /// assert!(paceline::Template::compile("plain {text", &set).unwrap().is_literal());
    /// ```
    pub fn is_literal(&self) -> bool {
        self.parts.iter().all(|p| matches!(p, Part::Text(_)))
    }

    /// The template's pieces in order: literal text, or a binding's index (what a
    /// driver that binds values itself, such as `postgres`, turns into parameters).
    pub(crate) fn pieces(&self) -> impl Iterator<Item = Piece<'_>> + '_ {
        self.parts.iter().map(|p| match p {
            Part::Text(t) => Piece::Text(t),
            Part::Binding(i) => Piece::Binding(*i),
        })
    }

    /// The indexes of the bindings the template uses, in order of appearance.
    ///
    /// ```
    /// let set = paceline::BindingSet::compile([("a", "Hash()"), ("b", "Hash()")])?;
    /// let t = paceline::Template::compile("{b}{a}{b}", &set).unwrap();
    /// assert_eq!(t.bindings().collect::<Vec<_>>(), [1, 0, 1]);
    /// # Ok::<(), paceline::BindingError>(())
    /// ```
    pub fn bindings(&self) -> impl Iterator<Item = usize> + '_ {
        self.parts.iter().filter_map(|p| match p {
            Part::Binding(i) => Some(*i),
            Part::Text(_) => None,
        })
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_text_and_names_with_character_offsets() {
        let text = r#"é {a} {{b} {"x": {c-1}} {} { d}"#;
        assert_eq!(
            tokenize(text),
            [
                Token::Text("é ".into()),
                Token::Name { name: "a", at: 2 },
                Token::Text(r#" {b} {"x": "#.into()),
                Token::Name {
                    name: "c-1",
                    at: 17
                },
                Token::Text("} {} { d}".into()),
            ]
        );
        assert_eq!(tokenize(""), []);
        assert_eq!(tokenize("{x}"), [Token::Name { name: "x", at: 0 }]);
    }

    /// Audit p16 H3 (grep): a non-ASCII name skipped its byte count in characters,
    /// so the text after it lost characters.
    #[test]
    fn a_non_ascii_name_keeps_the_text_after_it() {
        assert_eq!(
            tokenize("{été}xyz"),
            [
                Token::Name {
                    name: "été", at: 0
                },
                Token::Text("xyz".into())
            ]
        );
    }

    proptest::proptest! {
        /// Any text tokenizes without a panic, and text without `{{` comes back
        /// whole when its tokens are put back together (names in braces).
        #[test]
        fn tokenize_takes_any_text(s in "[a-zé€{}_ -]{0,30}") {
            let toks = tokenize(&s);
            let text: String = toks.iter().map(|t| match t {
                Token::Text(x) => x.clone(),
                Token::Name { name, .. } => format!("{{{name}}}"),
            }).collect();
            if !s.contains("{{") {
                proptest::prop_assert_eq!(text, s);
            }
        }
    }
}
