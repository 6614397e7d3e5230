//! A prepared op's SQL read with PostgreSQL's lexical rules, to find which
//! placeholders are parameters.
//!
//! The text is scanned once at load. Outside strings and comments, each
//! `{binding}` becomes `$n`, and (for NoSQLBench jdbc's forms) each JDBC `?`
//! marker too, `??` being a literal `?` as in the PostgreSQL JDBC driver. What
//! the scanner knows of the text around them:
//!
//! - `'...'` literals, `''` inside one being a quote; `E'...'` literals, where
//!   `\'` is a quote too;
//! - `"..."` identifiers, `""` inside one being a quote;
//! - `$$...$$` and `$tag$...$tag$` strings (function bodies): `$` opens one
//!   only where it cannot be part of a name or a `$1` parameter;
//! - `-- ...` comments to the end of the line, and `/* ... */` comments, which
//!   nest in PostgreSQL.
//!
//! A placeholder that is a whole `'...'` literal, `'{key}'`, is bound without
//! its quotes (the value is bound, not spliced into a string). Any other
//! placeholder inside a literal, an identifier or a `$`-quoted string could be
//! no parameter: that is an error at load. A placeholder or `?` in a comment
//! is no parameter either, and is left in the comment as it was written.

use crate::activity::bindings::{BindingSet, Piece, Template};

/// One parameter of a prepared statement, in `$n` order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Slot {
    /// A `{binding}` placeholder: the binding's index.
    Binding(usize),
    /// A JDBC `?` marker: the next value of `prep_stmt_val_arr`.
    Mark,
}

/// Where the scan is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ctx {
    Code,
    /// A `'...'` literal; `backslash`: an `E'...'` one, where `\` escapes.
    Quote {
        backslash: bool,
    },
    /// A `"..."` identifier.
    Ident,
    /// A `$tag$...$tag$` string; the delimiter, `$$` or `$tag$`.
    Dollar(String),
    /// A `--` comment, to the end of the line.
    Line,
    /// A `/* */` comment, this many deep.
    Block(u32),
}

impl Ctx {
    /// Why a placeholder here is no parameter, and what to write instead.
    fn refusal(&self, name: &str) -> Option<String> {
        let what = match self {
            Ctx::Code | Ctx::Line | Ctx::Block(_) => return None,
            Ctx::Quote { .. } => "inside a quoted string",
            Ctx::Ident => "inside a double-quoted identifier",
            Ctx::Dollar(tag) => {
                return Some(format!(
                    "placeholder `{{{name}}}` is inside a {tag}-quoted string, where it would be \
                     no parameter; write it outside the quotes, or use `raw:` to write values \
                     into the text"
                ));
            }
        };
        Some(format!(
            "placeholder `{{{name}}}` is {what}, where it would be no parameter; write it bare, \
             or make it the whole literal `'{{{name}}}'` (a binding can build the whole value), \
             or use `raw:` to write values into the text"
        ))
    }
}

/// The text pieces of `t` with adjacent text joined (`{{` escapes split it).
enum Seg<'a> {
    Text(String),
    Binding(usize, &'a str),
}

fn segments<'a>(t: &Template, bindings: &'a BindingSet) -> Vec<Seg<'a>> {
    let mut segs: Vec<Seg<'a>> = Vec::new();
    for p in t.pieces() {
        match p {
            Piece::Text(s) => match segs.last_mut() {
                Some(Seg::Text(last)) => last.push_str(s),
                _ => segs.push(Seg::Text(s.to_string())),
            },
            Piece::Binding(b) => {
                let full = bindings.at(b).name();
                // A scoped name (`main/read/k`) as it was written.
                let name = full.rsplit('/').next().unwrap_or(full);
                segs.push(Seg::Binding(b, name));
            }
        }
    }
    segs
}

/// Whether `c` may be part of a name (so a `$` after it is not a quote).
fn word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

/// The `$tag$` delimiter at the start of `s` (which starts with `$`), if any.
fn dollar_tag(s: &str) -> Option<&str> {
    let rest = &s[1..];
    let end = rest.find('$')?;
    let tag = &rest[..end];
    let mut chars = tag.chars();
    let ok = match chars.next() {
        None => true,
        Some(first) => {
            (first.is_alphabetic() || first == '_')
                && chars.all(|c| c.is_alphanumeric() || c == '_')
        }
    };
    ok.then(|| &s[..end + 2])
}

/// A piece of the text as [`scan`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok<'s> {
    /// Code, as written: one character, or `??` (one JDBC escape).
    Code(&'s str),
    /// The opening delimiter of a literal, an identifier, a `$`-quoted string
    /// or a comment (`'`, `"`, `$tag$`, `--`, `/*`).
    Open(&'s str),
    /// Text inside one of those, its closing delimiter included.
    Inside(&'s str),
    /// A `{binding}` placeholder: its index and its name as written.
    Binding(usize, &'s str),
    /// A placeholder that is a whole `'...'` literal, `'{key}'`: its index
    /// (the quotes are no piece).
    Whole(usize),
}

/// Reads `segs` with the lexical rules of the module's doc, once, handing
/// each piece in order to `visit` with the context it stands in (for a
/// delimiter, the one before it); stops at `visit`'s first error. The one
/// reading that both [`to_parameters`] and [`may_open_transaction`] ask their
/// question of, so that they cannot disagree on where code ends.
fn scan<'s>(
    segs: &'s [Seg<'s>],
    mut visit: impl FnMut(Tok<'s>, &Ctx) -> Result<(), String>,
) -> Result<(), String> {
    let mut ctx = Ctx::Code;
    // The last two characters read in code (for `E'` and a `$` after a name):
    // a binding in code reads as `0`; inside a string or comment, the
    // characters read as a space.
    let (mut prev, mut prev2): (Option<char>, Option<char>) = (None, None);
    // The text that follows starts with the closing quote of a whole `'{key}'`.
    let mut skip_quote = false;
    for (i, seg) in segs.iter().enumerate() {
        let text = match seg {
            Seg::Binding(b, name) => {
                let tok = if skip_quote {
                    Tok::Whole(*b)
                } else {
                    Tok::Binding(*b, name)
                };
                visit(tok, &ctx)?;
                if ctx == Ctx::Code {
                    (prev2, prev) = (prev, Some('0'));
                }
                continue;
            }
            Seg::Text(t) if skip_quote => {
                skip_quote = false;
                &t[1..]
            }
            Seg::Text(t) => t.as_str(),
        };
        let mut j = 0;
        while j < text.len() {
            let rest = &text[j..];
            let c = rest.chars().next().expect("j is below the length");
            let mut step = c.len_utf8();
            // The piece read here and the context after it (`None`: the same).
            let (tok, next) = match &mut ctx {
                Ctx::Code => {
                    let (tok, next) = match c {
                        '\'' => {
                            let e_string =
                                matches!(prev, Some('E' | 'e')) && !prev2.is_some_and(word_char);
                            let whole = !e_string
                                && step == rest.len()
                                && matches!(segs.get(i + 1), Some(Seg::Binding(..)))
                                && matches!(segs.get(i + 2),
                                    Some(Seg::Text(n)) if n.starts_with('\'') && !n.starts_with("''"));
                            if whole {
                                skip_quote = true;
                                (None, None)
                            } else {
                                let quote = Ctx::Quote {
                                    backslash: e_string,
                                };
                                (Some(Tok::Open(&rest[..1])), Some(quote))
                            }
                        }
                        '"' => (Some(Tok::Open(&rest[..1])), Some(Ctx::Ident)),
                        '-' if rest.starts_with("--") => {
                            step = 2;
                            (Some(Tok::Open(&rest[..2])), Some(Ctx::Line))
                        }
                        '/' if rest.starts_with("/*") => {
                            step = 2;
                            (Some(Tok::Open(&rest[..2])), Some(Ctx::Block(1)))
                        }
                        '$' if !prev.is_some_and(word_char) && dollar_tag(rest).is_some() => {
                            let tag = dollar_tag(rest).expect("checked");
                            step = tag.len();
                            (Some(Tok::Open(tag)), Some(Ctx::Dollar(tag.to_string())))
                        }
                        '?' if rest.starts_with("??") => {
                            step = 2;
                            (Some(Tok::Code(&rest[..2])), None)
                        }
                        _ => (Some(Tok::Code(&rest[..step])), None),
                    };
                    (prev2, prev) = (prev, Some(c));
                    (tok, next)
                }
                Ctx::Quote { backslash } => {
                    if *backslash && c == '\\' {
                        // The escaped character, whatever it is.
                        step = 1 + rest[1..].chars().next().map_or(0, char::len_utf8);
                    } else if rest.starts_with("''") {
                        step = 2;
                    }
                    let closes = step == 1 && c == '\'';
                    (
                        Some(Tok::Inside(&rest[..step])),
                        closes.then_some(Ctx::Code),
                    )
                }
                Ctx::Ident => {
                    if rest.starts_with("\"\"") {
                        step = 2;
                    }
                    let closes = step == 1 && c == '"';
                    (
                        Some(Tok::Inside(&rest[..step])),
                        closes.then_some(Ctx::Code),
                    )
                }
                Ctx::Dollar(tag) => {
                    let closes = rest.starts_with(tag.as_str());
                    if closes {
                        step = tag.len();
                    }
                    (
                        Some(Tok::Inside(&rest[..step])),
                        closes.then_some(Ctx::Code),
                    )
                }
                Ctx::Line => (
                    Some(Tok::Inside(&rest[..step])),
                    (c == '\n').then_some(Ctx::Code),
                ),
                Ctx::Block(depth) => {
                    if rest.starts_with("/*") {
                        step = 2;
                        *depth += 1;
                    } else if rest.starts_with("*/") {
                        step = 2;
                        *depth -= 1;
                    }
                    let closes = *depth == 0;
                    (
                        Some(Tok::Inside(&rest[..step])),
                        closes.then_some(Ctx::Code),
                    )
                }
            };
            if let Some(tok) = tok {
                visit(tok, &ctx)?;
            }
            if let Some(next) = next {
                ctx = next;
            }
            if ctx != Ctx::Code {
                (prev2, prev) = (None, Some(' '));
            }
            j += step;
        }
    }
    Ok(())
}

/// The statement with each parameter written `$n`, and the parameters in
/// order. With `marks`, a `?` outside strings and comments is a parameter too
/// (`??` a literal `?`).
pub(super) fn to_parameters(
    t: &Template,
    bindings: &BindingSet,
    marks: bool,
) -> Result<(String, Vec<Slot>), String> {
    let segs = segments(t, bindings);
    let mut sql = String::new();
    let mut slots: Vec<Slot> = Vec::new();
    let mut param = |sql: &mut String, slot: Slot| {
        slots.push(slot);
        sql.push('$');
        sql.push_str(&slots.len().to_string());
    };
    scan(&segs, |tok, ctx| {
        match tok {
            Tok::Code("?") if marks => param(&mut sql, Slot::Mark),
            Tok::Code("??") if marks => sql.push('?'),
            Tok::Code(s) | Tok::Open(s) | Tok::Inside(s) => sql.push_str(s),
            Tok::Whole(b) => param(&mut sql, Slot::Binding(b)),
            Tok::Binding(b, name) => match ctx {
                Ctx::Code => param(&mut sql, Slot::Binding(b)),
                Ctx::Line | Ctx::Block(_) => {
                    sql.push('{');
                    sql.push_str(name);
                    sql.push('}');
                }
                other => return Err(other.refusal(name).expect("not code or comment")),
            },
        }
        Ok(())
    })?;
    Ok((sql, slots))
}

/// Whether a `raw:` text may leave its connection in a transaction block
/// (a failure there leaves it aborted: `sql 25` for every op sent behind it
/// until a `ROLLBACK`), so that with `pipeline: true` it is a barrier
/// (`run::Gate`). The rule, on the text outside strings and comments, as
/// [`to_parameters`] reads them (the same [`scan`]):
///
/// - several statements (a `;` with a statement after it), or
/// - a statement whose first word is `BEGIN`, `START` (`START TRANSACTION`)
///   or `SAVEPOINT` (ASCII case ignored), or which starts with a
///   `{binding}` (its value could be either).
///
/// Any other text is one statement, which the server runs in an implicit
/// transaction that it ends (rolled back if it failed) before its
/// ReadyForQuery: the connection is idle after it, failed or not. A binding
/// elsewhere is a value written into the statement, not statements.
pub(super) fn may_open_transaction(t: &Template, bindings: &BindingSet) -> bool {
    // The code, strings and comments each a space, a binding `\u{1}`.
    let mut code = String::new();
    let segs = segments(t, bindings);
    let read = scan(&segs, |tok, ctx| {
        match tok {
            Tok::Code(s) => code.push_str(s),
            Tok::Open(_) | Tok::Whole(_) => code.push(' '),
            Tok::Inside(_) => {}
            Tok::Binding(..) => {
                if *ctx == Ctx::Code {
                    code.push('\u{1}');
                }
            }
        }
        Ok(())
    });
    debug_assert!(read.is_ok(), "this visit refuses nothing");
    let statements: Vec<&str> = code
        .split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    statements.len() > 1
        || statements.iter().any(|s| {
            let first: String = s
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '\u{1}')
                .collect();
            first.starts_with('\u{1}')
                || ["begin", "start", "savepoint"]
                    .iter()
                    .any(|w| first.eq_ignore_ascii_case(w))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set() -> BindingSet {
        BindingSet::compile([("k", "Mod(10)"), ("v", "Hash()")]).unwrap()
    }

    fn params(text: &str) -> Result<(String, Vec<Slot>), String> {
        let set = set();
        to_parameters(&Template::compile(text, &set).unwrap(), &set, false)
    }

    fn marks(text: &str) -> Result<(String, Vec<Slot>), String> {
        let set = set();
        to_parameters(&Template::compile(text, &set).unwrap(), &set, true)
    }

    use Slot::{Binding as B, Mark as M};

    #[test]
    fn placeholders_become_numbered_parameters_one_per_use() {
        let (sql, slots) = params("insert into kv values ({k}, {v}, {k})").unwrap();
        assert_eq!(sql, "insert into kv values ($1, $2, $3)");
        assert_eq!(slots, [B(0), B(1), B(0)]);
    }

    #[test]
    fn a_whole_quoted_placeholder_is_bound_without_its_quotes() {
        let (sql, slots) =
            params("select * from kv where k = '{k}' and v = 'it''s' and w = {v}").unwrap();
        assert_eq!(
            sql,
            "select * from kv where k = $1 and v = 'it''s' and w = $2"
        );
        assert_eq!(slots, [B(0), B(1)]);
        assert_eq!(params("select '{k}'").unwrap().0, "select $1");
        // `'{k}''x'` is one literal: the value, then `'x`.
        assert!(params("select '{k}''x'").is_err());
    }

    #[test]
    fn a_placeholder_inside_a_longer_literal_is_refused() {
        let err = params("select * from kv where k = {k} and v = 'x{v}'").unwrap_err();
        assert!(
            err.starts_with("placeholder `{v}` is inside a quoted string"),
            "{err}"
        );
        assert!(params("select 'a''{k}'").is_err());
        // In an E'' string `\'` is a quote, so the literal is still open.
        assert!(params(r"select E'a\'', {k}").is_ok());
        assert!(params(r"select E'a\'{k}'").is_err());
        // E'{k}' would leave E$1: it is a placeholder inside a string.
        assert!(params("select E'{k}'").is_err());
        // ...but a name ending in e is not an E'' prefix.
        assert_eq!(params("select name'{k}'").unwrap().0, "select name$1");
    }

    #[test]
    fn a_placeholder_in_a_quoted_identifier_is_refused() {
        let err = params(r#"select "col{k}" from t"#).unwrap_err();
        assert!(err.contains("inside a double-quoted identifier"), "{err}");
        let (sql, _) = params(r#"select "a""b", {k} from t"#).unwrap();
        assert_eq!(sql, r#"select "a""b", $1 from t"#);
    }

    /// Regression: `$$` and `$tag$` strings were not known, so a quote inside
    /// a function body (`$$ ... 'x' ... $$`) flipped the check, and a
    /// placeholder inside one was taken for a parameter.
    #[test]
    fn dollar_quoted_strings_are_strings() {
        let body = "do $$ begin perform 'it''s'; end $$; select {k}";
        assert_eq!(
            params(body).unwrap().0,
            "do $$ begin perform 'it''s'; end $$; select $1"
        );
        // An apostrophe alone inside $$: the text after is still code.
        let (sql, slots) = params("select $$don't$$, {k}").unwrap();
        assert_eq!((sql.as_str(), slots.len()), ("select $$don't$$, $1", 1));
        let (sql, _) = params("select $fn$ it's $$ {{k} $fn$ || {v}").unwrap();
        assert_eq!(sql, "select $fn$ it's $$ {k} $fn$ || $1");
        let err = params("select $q$ {k} $q$").unwrap_err();
        assert!(err.contains("inside a $q$-quoted string"), "{err}");
        let err = params("do $$ begin perform {k}; end $$").unwrap_err();
        assert!(err.contains("inside a $$-quoted string"), "{err}");
        // `$1` is a parameter and `a$b` a name, neither a quote.
        let (sql, slots) = params("select a$b$, $1, {k}").unwrap();
        assert_eq!((sql.as_str(), slots), ("select a$b$, $1, $1", vec![B(0)]));
    }

    /// Regression: a quote inside a comment (`-- don't`) opened a literal, so
    /// every placeholder after it was refused.
    #[test]
    fn comments_are_no_code() {
        let (sql, slots) = params("select {k} -- don't\n, {v}").unwrap();
        assert_eq!(sql, "select $1 -- don't\n, $2");
        assert_eq!(slots, [B(0), B(1)]);
        let (sql, slots) = params("select /* it's /* nested */ {k} */ {v}").unwrap();
        assert_eq!(sql, "select /* it's /* nested */ {k} */ $1");
        assert_eq!(slots, [B(1)]);
        // A placeholder in a line comment is no parameter and stays as written.
        let (sql, slots) = params("select 1 -- by {k}\n").unwrap();
        assert_eq!((sql.as_str(), slots.len()), ("select 1 -- by {k}\n", 0));
        // `-` and `/` alone are operators.
        assert_eq!(params("select {k}-1/{v}").unwrap().0, "select $1-1/$2");
        // Quotes inside literals do not open comments.
        assert_eq!(
            params("select '--', '/*', {k}").unwrap().0,
            "select '--', '/*', $1"
        );
    }

    #[test]
    fn jdbc_marks_are_parameters_outside_strings_and_comments() {
        let (sql, slots) = marks("insert into t values (?, {k}, '?', ?) -- ?\n").unwrap();
        assert_eq!(sql, "insert into t values ($1, $2, '?', $3) -- ?\n");
        assert_eq!(slots, [M, B(0), M]);
        // `??` is the jsonb operator `?`, as in the JDBC driver.
        let (sql, slots) = marks("select doc ?? 'k' from t where id = ?").unwrap();
        assert_eq!(
            (sql.as_str(), slots),
            ("select doc ? 'k' from t where id = $1", vec![M])
        );
        // Without marks, `?` is text.
        assert_eq!(params("select doc ? 'k'").unwrap().0, "select doc ? 'k'");
    }
    fn barrier(text: &str) -> bool {
        may_open_transaction(&Template::compile(text, &set()).unwrap(), &set())
    }

    /// Regression (review p17 M1): only a text that may leave its
    /// connection in a transaction block is a pipeline barrier.
    #[test]
    fn a_raw_text_is_a_barrier_only_if_it_may_open_a_transaction() {
        for one in [
            "select 1",
            "insert into t values ({k}, 'begin; x')",
            "select 1; ",
            "select 1 -- ; begin",
            "/* begin; */ update t set v = 1",
            "do $$ begin perform 1; end $$",
            "select E'\\'; begin'",
            "create table begin_log (k int)",
            "select {k}",
        ] {
            assert!(!barrier(one), "{one}");
        }
        for open in [
            "begin; insert into t values ({k}); commit",
            "BEGIN",
            "start transaction isolation level serializable",
            "  Savepoint a",
            "select 1; select 2",
            "{k}",
            "select 1;{k}",
        ] {
            assert!(barrier(open), "{open}");
        }
    }

    /// One text with a literal holding `;`, `--` and `$$`, an `E''` literal
    /// with `\'`, a quoted identifier, a `$tag$` body with a quote and a `;`,
    /// and both kinds of comment (one nested, one holding a `'` and `{k}`):
    /// only the placeholders in code become parameters, and everything else is
    /// written as it was.
    #[test]
    fn parameters_are_found_past_quotes_dollar_quotes_and_comments() {
        let text = "select '; -- $$', E'it\\'s {{v}', \"a\"\"{{k}\", {k} -- don't {v}\n\
             , $f$ it's; $$ $f$, /* a /* {v} */ ' */ {v}";
        let (sql, slots) = marks(text).unwrap();
        assert_eq!(
            sql,
            "select '; -- $$', E'it\\'s {v}', \"a\"\"{k}\", $1 -- don't {v}\n\
             , $f$ it's; $$ $f$, /* a /* {v} */ ' */ $2"
        );
        assert_eq!(slots, [B(0), B(1)]);
    }

    /// The same kinds of text for the other question: what is inside a
    /// literal, an identifier, a `$`-quoted string or a comment is no
    /// statement and no `BEGIN`.
    #[test]
    fn a_transaction_is_read_past_quotes_dollar_quotes_and_comments() {
        for one in [
            "select '; begin', E'\\'; begin', \"x;begin\" from t",
            "do $f$ begin; perform 'it''s'; $$ end $f$",
            "/* a /* nested; */ begin; */ select 1 -- ; begin\n",
            // Regression: a placeholder just before a comment's end read as a
            // name to the transaction scan (not to the parameters'), so the
            // `$$` after it was code and its `;` a second statement.
            "select /*{k}*/$$a;b$$",
            "select 1 --{k}\n$$a;b$$",
        ] {
            assert!(!barrier(one), "{one}");
        }
        for open in [
            "select 'a''b'; begin",
            "select $$x$$; select 2",
            "/* it's */ begin",
            "-- don't\nsavepoint s",
        ] {
            assert!(barrier(open), "{open}");
        }
    }
}
