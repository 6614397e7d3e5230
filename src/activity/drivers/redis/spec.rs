//! An op's command, read once at load: its words (each fixed text, or rendered
//! per cycle) and its `expect_reply` check.

use crate::activity::bindings::{BindingSet, Piece};
use crate::activity::model::{Field, Op};
use crate::activity::suggest;
use regex::Regex;

/// The op fields `redis` reads.
const FIELDS: &[&str] = &["stmt", "command", "expect_reply"];

/// One part of a word.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Part {
    Text(String),
    Binding(usize),
    /// A word written out in `command:` that is a list or map: its JSON.
    Field(Field),
}

/// One argument of the command.
pub(super) type Word = Vec<Part>;

/// What `expect_reply` asks of the reply.
#[derive(Debug, Clone)]
pub(super) enum Expect {
    Nil,
    NotNil,
    Equals(String),
    Matches(Regex),
    /// A YAML list: an array reply (a RESP3 set or push too) of as many
    /// elements, each passing its check (run.rs, `check`, applies it).
    List(Vec<Expect>),
}

impl Expect {
    /// Whether `reply` (as text; `None` for nil) passes. A list never admits
    /// text: it is matched against the reply's elements, not its text.
    pub(super) fn admits(&self, reply: Option<&str>) -> bool {
        match (self, reply) {
            (Expect::Nil, r) => r.is_none(),
            (Expect::NotNil, r) => r.is_some(),
            (Expect::Equals(want), Some(r)) => r == want,
            (Expect::Matches(re), Some(r)) => re.is_match(r),
            (Expect::List(_), _) | (_, None) => false,
        }
    }
}

impl std::fmt::Display for Expect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Expect::Nil => f.write_str("nil"),
            Expect::NotNil => f.write_str("not-nil"),
            Expect::Equals(v) => write!(f, "`{v}`"),
            Expect::Matches(re) => write!(f, "a match of /{}/", re.as_str()),
            Expect::List(items) => {
                f.write_str("the list ")?;
                write_items(f, items)
            }
        }
    }
}

/// A list's checks as they are written, `[a, nil, /re/, [b]]`.
fn write_items(f: &mut std::fmt::Formatter<'_>, items: &[Expect]) -> std::fmt::Result {
    f.write_str("[")?;
    for (i, e) in items.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{}", Written(e))?;
    }
    f.write_str("]")
}

/// One check as a list element is written: `a`, `nil`, `/re/`, `[b, c]`.
pub(super) struct Written<'a>(pub(super) &'a Expect);

impl std::fmt::Display for Written<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Expect::Equals(v) => f.write_str(v),
            Expect::Matches(re) => write!(f, "/{}/", re.as_str()),
            Expect::List(items) => write_items(f, items),
            other => write!(f, "{other}"),
        }
    }
}

/// One op, as the driver runs it.
#[derive(Debug, Clone)]
pub(super) struct OpSpec {
    pub(super) name: String,
    pub(super) words: Vec<Word>,
    pub(super) expect: Option<Expect>,
}

/// Reads `op`: `stmt` (a command line, split into words before rendering, so a
/// value with spaces stays one argument) or `command` (the words as a list).
pub(super) fn op_spec(op: &Op, bindings: &BindingSet) -> Result<OpSpec, String> {
    for (name, _) in &op.fields {
        if !FIELDS.contains(&name.as_str()) {
            let hint = suggest::closest(name, FIELDS.iter().copied())
                .map(|s| format!("; did you mean `{s}`?"))
                .unwrap_or_else(|| {
                    format!("; `redis` reads {}", suggest::list(FIELDS.iter().copied()))
                });
            return Err(format!("unknown field `{name}`{hint}"));
        }
    }
    let words = match (op.field("stmt"), op.field("command")) {
        (Some(_), Some(_)) => {
            return Err("field `command`: give `stmt` or `command`, not both".to_string());
        }
        (Some(Field::Text(t)), None) => split(t.pieces()),
        (Some(_), None) => {
            return Err("field `stmt`: write the command as text, `SET {key} {value}`".to_string());
        }
        (None, Some(Field::List(items))) => items
            .iter()
            .map(|f| match f {
                Field::Text(t) => t
                    .pieces()
                    .map(|p| match p {
                        Piece::Text(s) => Part::Text(s.to_string()),
                        Piece::Binding(b) => Part::Binding(b),
                    })
                    .collect(),
                Field::Literal(v) => vec![Part::Text(match v {
                    serde_json::Value::String(s) => s.clone(),
                    v => v.to_string(),
                })],
                other => vec![Part::Field(other.clone())],
            })
            .collect(),
        (None, Some(_)) => {
            return Err(
                "field `command`: write the words as a list, `[SET, \"{key}\", \"{value}\"]`"
                    .to_string(),
            );
        }
        (None, None) => {
            return Err(
                "no command; write one, `SET {key} {value}`, or `command: [SET, \"{key}\", \"{value}\"]`"
                    .to_string(),
            );
        }
    };
    if words.is_empty() {
        return Err("the command is empty; write one, `GET {key}`".to_string());
    }
    let expect = match op.field("expect_reply") {
        None => None,
        Some(f) => Some(expect(f, bindings).map_err(|m| format!("field `expect_reply`: {m}"))?),
    };
    Ok(OpSpec {
        name: op.name.clone(),
        words,
        expect,
    })
}

fn expect(f: &Field, bindings: &BindingSet) -> Result<Expect, String> {
    let regex = |re: &str| {
        Regex::new(re).map(Expect::Matches).map_err(|e| {
            format!(
                "`{re}` is not a regular expression: {}",
                crate::activity::error::regex_reason(&e)
            )
        })
    };
    match f {
        Field::Text(t) if !t.is_literal() => Err("must be fixed, not a `{binding}`".to_string()),
        Field::Map(entries) => match entries.as_slice() {
            [(k, v)] if k == "regex" => regex(v.render_json(0, bindings).as_str().unwrap_or("")),
            _ => Err(
                "write a value, `nil`, `not-nil`, `/REGEX/`, `{regex: REGEX}` or a list; \
                 a RESP3 map reply is checked as text: `expect_reply: \"{f: 1, g: 2}\"`"
                    .to_string(),
            ),
        },
        Field::List(items) => items
            .iter()
            .enumerate()
            .map(|(i, f)| expect(f, bindings).map_err(|m| format!("element {}: {m}", i + 1)))
            .collect::<Result<Vec<_>, _>>()
            .map(Expect::List),
        Field::Literal(serde_json::Value::Null) => Ok(Expect::Nil),
        other => {
            let v = other.render_json(0, bindings);
            let s = match &v {
                serde_json::Value::String(s) => s.clone(),
                v => v.to_string(),
            };
            match s.as_str() {
                "nil" => Ok(Expect::Nil),
                "not-nil" => Ok(Expect::NotNil),
                s if s.len() >= 2 && s.starts_with('/') && s.ends_with('/') => {
                    regex(&s[1..s.len() - 1])
                }
                _ => Ok(Expect::Equals(s)),
            }
        }
    }
}

/// A command line's pieces split into words at whitespace in the literal text;
/// a binding's value never splits a word.
fn split<'a>(pieces: impl Iterator<Item = Piece<'a>>) -> Vec<Word> {
    let mut words: Vec<Word> = Vec::new();
    let mut current: Word = Vec::new();
    for p in pieces {
        match p {
            Piece::Binding(b) => current.push(Part::Binding(b)),
            Piece::Text(t) => {
                let mut lit = String::new();
                for c in t.chars() {
                    if c.is_whitespace() {
                        if !lit.is_empty() {
                            current.push(Part::Text(std::mem::take(&mut lit)));
                        }
                        if !current.is_empty() {
                            words.push(std::mem::take(&mut current));
                        }
                    } else {
                        lit.push(c);
                    }
                }
                if !lit.is_empty() {
                    current.push(Part::Text(lit));
                }
            }
        }
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(yaml_ops: &str) -> Result<OpSpec, String> {
        let a = crate::Activity::from_str(
            &format!("params: {{driver: redis}}\nbindings: {{k: Mod(10), v: Identity(); ToString()}}\nops:\n{yaml_ops}"),
            "r.yaml",
            &["redis"],
        )
        .unwrap();
        op_spec(&a.ops()[0], a.bindings())
    }

    #[test]
    fn a_command_line_is_split_before_rendering() {
        let s = spec("  o: 'SET  key:{k}  {v}'").unwrap();
        assert_eq!(
            s.words,
            [
                vec![Part::Text("SET".into())],
                vec![Part::Text("key:".into()), Part::Binding(0)],
                vec![Part::Binding(1)],
            ]
        );
    }

    #[test]
    fn command_lists_and_checks() {
        let s = spec("  o: {command: [HSET, 'h{k}', f, 1], expect_reply: '/^[01]$/'}").unwrap();
        assert_eq!(s.words.len(), 4);
        assert_eq!(s.words[3], vec![Part::Text("1".into())]);
        let e = s.expect.unwrap();
        assert!(e.admits(Some("1")) && !e.admits(Some("2")) && !e.admits(None));
        assert!(matches!(
            spec("  o: {stmt: 'GET x', expect_reply: nil}")
                .unwrap()
                .expect,
            Some(Expect::Nil)
        ));
        assert!(matches!(
            spec("  o: {stmt: 'GET x', expect_reply: not-nil}")
                .unwrap()
                .expect,
            Some(Expect::NotNil)
        ));
        assert!(
            matches!(spec("  o: {stmt: 'GET x', expect_reply: OK}").unwrap().expect, Some(Expect::Equals(s)) if s == "OK")
        );
        assert!(
            spec("  o: {stmt: 'GET x', expect_reply: '/(/'}")
                .unwrap_err()
                .contains("not a regular expression")
        );
        assert!(
            spec("  o: {stmt: 'GET x', comand: x}")
                .unwrap_err()
                .contains("did you mean `command`?")
        );
        assert!(
            spec("  o: {expect_reply: OK}")
                .unwrap_err()
                .contains("no command")
        );
    }

    /// Audit p17 M3: a YAML list was taken as the text of its JSON
    /// (`["nil","nil"]`), which no reply reads as: every op failed `check`.
    /// Now it is a list of checks, each element read as `expect_reply` is.
    #[test]
    fn a_yaml_list_is_a_list_of_checks() {
        let e = spec("  o: {stmt: 'MGET a b c', expect_reply: [nil, ~, '/^x/', [m, 0.1], 3]}")
            .unwrap()
            .expect
            .unwrap();
        let Expect::List(items) = &e else {
            panic!("{e:?}")
        };
        assert!(matches!(items[0], Expect::Nil) && matches!(items[1], Expect::Nil));
        assert!(matches!(&items[2], Expect::Matches(re) if re.as_str() == "^x"));
        assert!(matches!(&items[3], Expect::List(inner) if inner.len() == 2));
        assert!(matches!(&items[4], Expect::Equals(v) if v == "3"));
        assert_eq!(e.to_string(), "the list [nil, nil, /^x/, [m, 0.1], 3]");
        assert!(
            spec("  o: {stmt: 'MGET a', expect_reply: [a, '{k}']}")
                .unwrap_err()
                .contains("field `expect_reply`: element 2: must be fixed")
        );
        assert!(
            spec("  o: {stmt: 'HGETALL h', expect_reply: {f: 1}}")
                .unwrap_err()
                .contains("expect_reply: \"{f: 1, g: 2}\"")
        );
    }
}
