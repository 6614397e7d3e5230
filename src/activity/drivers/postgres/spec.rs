//! An op's fields, read once at load into an [`OpSpec`]: its form (a statement
//! prepared with `$n` parameters, or text rendered and sent as a simple query) and
//! its `expect_rows` check.

use super::super::db_params::RowRange;
use crate::activity::bindings::{BindingSet, Piece, Template};
use crate::activity::model::{Field, Op};
use crate::activity::suggest;

/// The op fields `postgres` reads. `stmt` is a plain string op; `query` and
/// `update` are NoSQLBench jdbc's prepared forms, `execute` its raw one.
const FIELDS: &[&str] = &[
    "prepared",
    "raw",
    "stmt",
    "query",
    "update",
    "execute",
    "expect_rows",
];

/// The fields that hold the statement, and whether each is prepared.
const FORMS: &[(&str, bool)] = &[
    ("prepared", true),
    ("stmt", true),
    ("query", true),
    ("update", true),
    ("raw", false),
    ("execute", false),
];

/// How an op reaches the server.
#[derive(Debug, Clone)]
pub(super) enum Form {
    /// Prepared once per connection; each cycle binds `args` (binding indexes,
    /// one per `$n`, in order) with the server's parameter types.
    Prepared { sql: String, args: Vec<usize> },
    /// Rendered with the values and sent by the simple query protocol.
    Raw(Template),
}

/// One op, as the driver runs it.
#[derive(Debug, Clone)]
pub(super) struct OpSpec {
    pub(super) name: String,
    /// The field the statement was written in (for messages that point at it).
    pub(super) field: &'static str,
    pub(super) form: Form,
    pub(super) expect_rows: Option<RowRange>,
}

/// Reads `op` (its field names checked, near misses suggested).
pub(super) fn op_spec(op: &Op, bindings: &BindingSet) -> Result<OpSpec, String> {
    for (name, _) in &op.fields {
        if !FIELDS.contains(&name.as_str()) {
            let hint = suggest::closest(name, FIELDS.iter().copied())
                .map(|s| format!("; did you mean `{s}`?"))
                .unwrap_or_else(|| {
                    format!(
                        "; `postgres` reads {}",
                        suggest::list(FIELDS.iter().copied())
                    )
                });
            return Err(format!("unknown field `{name}`{hint}"));
        }
    }
    // NB5 jdbc's `prepared: true|false` (often a block param) is a flag on the
    // op's statement, not a statement.
    let flag = match op.field("prepared") {
        Some(Field::Literal(serde_json::Value::Bool(b))) => Some(*b),
        Some(Field::Text(t)) if t.is_literal() => {
            match t.render(0, &BindingSet::default()).as_str() {
                "true" => Some(true),
                "false" => Some(false),
                _ => None,
            }
        }
        _ => None,
    };
    let given: Vec<&(&str, bool)> = FORMS
        .iter()
        .filter(|(f, _)| op.field(f).is_some() && !(*f == "prepared" && flag.is_some()))
        .collect();
    let (field, prepared) = match given.as_slice() {
        [one] => **one,
        [] => {
            return Err(
                "no statement; write `prepared: SQL` (values bound as parameters) or \
                 `raw: SQL` (values written into the text)"
                    .to_string(),
            );
        }
        [a, b, ..] => {
            return Err(format!(
                "field `{}`: give one statement; this op also has `{}`",
                b.0, a.0
            ));
        }
    };
    // The flag decides for NB5's forms; `raw:` and `prepared: SQL` say it themselves.
    let prepared = match (field, flag) {
        ("stmt" | "query" | "update" | "execute", Some(f)) => f,
        _ => prepared,
    };
    let template = match op.field(field) {
        Some(Field::Text(t)) => t.clone(),
        Some(Field::Literal(v)) => {
            return Err(format!(
                "field `{field}`: {v} is not SQL; write the statement as text"
            ));
        }
        _ => {
            return Err(format!(
                "field `{field}`: is a list or map; write the statement as text"
            ));
        }
    };
    let form = if prepared {
        let (sql, args) = to_parameters(&template).map_err(|m| format!("field `{field}`: {m}"))?;
        if sql.trim().is_empty() {
            return Err(format!("field `{field}`: the statement is empty"));
        }
        Form::Prepared { sql, args }
    } else {
        Form::Raw(template)
    };
    let expect_rows = match op.field("expect_rows") {
        None => None,
        Some(f) => {
            let v = f.render_json(0, bindings);
            if matches!(f, Field::Text(t) if !t.is_literal()) {
                return Err("field `expect_rows`: must be fixed, not a `{binding}`".to_string());
            }
            Some(RowRange::parse(&v).map_err(|m| format!("field `expect_rows`: {m}"))?)
        }
    };
    Ok(OpSpec {
        name: op.name.clone(),
        field,
        form,
        expect_rows,
    })
}

/// The statement with each `{binding}` turned into `$n` (one parameter per
/// placeholder, so a binding written twice may take two types) and the bindings
/// in parameter order. A placeholder that is a whole quoted literal, `'{key}'`,
/// loses its quotes: the value is bound, not spliced into a string. A
/// placeholder inside a longer quoted literal (`'user-{id}'`) would be no
/// parameter at all: that is an error.
pub(super) fn to_parameters(t: &Template) -> Result<(String, Vec<usize>), String> {
    let pieces: Vec<Piece<'_>> = t.pieces().collect();
    let mut sql = String::new();
    let mut args: Vec<usize> = Vec::new();
    // Whether the text so far leaves us inside a '...' literal ('' inside one
    // toggles twice, so it stays inside).
    let mut in_quote = false;
    let mut skip_quote = false;
    for (i, piece) in pieces.iter().enumerate() {
        match *piece {
            Piece::Text(text) => {
                let text = if skip_quote { &text[1..] } else { text };
                // A quote right before a placeholder that is closed right after it.
                // A quote that opens a literal right before a placeholder, closed
                // right after it.
                let odd = |t: &str| t.bytes().filter(|b| *b == b'\'').count() % 2 == 1;
                // (`''` right before is an escaped quote inside a literal.)
                let whole = text.ends_with('\'')
                    && !text[..text.len() - 1].ends_with('\'')
                    && !(in_quote ^ odd(&text[..text.len() - 1]))
                    && matches!(pieces.get(i + 1), Some(Piece::Binding(_)))
                    && matches!(pieces.get(i + 2), Some(Piece::Text(n)) if n.starts_with('\''));
                let kept = if whole { &text[..text.len() - 1] } else { text };
                in_quote ^= odd(kept);
                sql.push_str(kept);
                skip_quote = whole;
            }
            Piece::Binding(b) => {
                if in_quote {
                    return Err(format!(
                        "placeholder {} is inside a quoted string, where it would be no \
                         parameter; write it bare, or make it the whole literal `'{{name}}'` \
                         (a binding can build the whole value), or use `raw:` to write values \
                         into the text",
                        args.len() + 1
                    ));
                }
                args.push(b);
                sql.push('$');
                sql.push_str(&args.len().to_string());
                if skip_quote && !matches!(pieces.get(i + 1), Some(Piece::Text(_))) {
                    skip_quote = false;
                }
            }
        }
    }
    Ok((sql, args))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(text: &str, set: &BindingSet) -> Template {
        Template::compile(text, set).unwrap()
    }

    #[test]
    fn placeholders_become_numbered_parameters_one_per_binding() {
        let set = BindingSet::compile([("k", "Mod(10)"), ("v", "Hash()")]).unwrap();
        let (sql, args) = to_parameters(&t("insert into kv values ({k}, {v}, {k})", &set)).unwrap();
        assert_eq!(sql, "insert into kv values ($1, $2, $3)");
        assert_eq!(args, [0, 1, 0]);
    }

    #[test]
    fn a_quoted_placeholder_is_bound_without_its_quotes() {
        let set = BindingSet::compile([("k", "Mod(10)"), ("v", "Hash()")]).unwrap();
        let (sql, args) = to_parameters(&t(
            "select * from kv where k = '{k}' and v = 'it''s' and w = {v}",
            &set,
        ))
        .unwrap();
        assert_eq!(
            sql,
            "select * from kv where k = $1 and v = 'it''s' and w = $2"
        );
        assert_eq!(args, [0, 1]);
        let (sql, _) = to_parameters(&t("select '{k}'", &set)).unwrap();
        assert_eq!(sql, "select $1");
    }

    #[test]
    fn a_placeholder_inside_a_longer_literal_is_refused() {
        let set = BindingSet::compile([("k", "Mod(10)"), ("v", "Hash()")]).unwrap();
        let err =
            to_parameters(&t("select * from kv where k = {k} and v = 'x{v}'", &set)).unwrap_err();
        assert!(
            err.starts_with("placeholder 2 is inside a quoted string"),
            "{err}"
        );
        assert!(to_parameters(&t("select 'a''{k}'", &set)).is_err());
    }

    #[test]
    fn one_statement_field_per_op() {
        let a = crate::Activity::from_str(
            "params: {driver: postgres}\nops:\n  a: {raw: 'x', query: 'y'}\n  b: {expect_rows: 1}\n  c: {qeury: 'x'}",
            "p.yaml",
            &["postgres"],
        )
        .unwrap();
        let err = |i: usize| op_spec(&a.ops()[i], a.bindings()).unwrap_err();
        assert!(err(0).contains("give one statement"), "{}", err(0));
        assert!(err(1).contains("no statement"), "{}", err(1));
        assert!(err(2).contains("did you mean `query`?"), "{}", err(2));
    }

    #[test]
    fn nb5_jdbc_forms_map_to_raw_and_prepared() {
        let a = crate::Activity::from_str(
            "params: {driver: postgres}\nbindings: {k: Mod(5)}\nops:\n  e: {execute: 'create table t{k} (k int)'}\n  q: {query: 'select {k}', expect_rows: '1..'}\n  u: {update: 'delete from t where k = {k}'}\n  s: 'select 1'",
            "p.yaml",
            &["postgres"],
        )
        .unwrap();
        let spec = |i: usize| op_spec(&a.ops()[i], a.bindings()).unwrap();
        assert!(matches!(spec(0).form, Form::Raw(_)));
        assert!(matches!(&spec(1).form, Form::Prepared { sql, .. } if sql == "select $1"));
        assert_eq!(
            spec(1).expect_rows,
            Some(RowRange {
                lo: 1,
                hi: u64::MAX
            })
        );
        assert!(
            matches!(&spec(2).form, Form::Prepared { sql, .. } if sql == "delete from t where k = $1")
        );
        assert_eq!(spec(3).field, "stmt");
    }

    #[test]
    fn nb5_jdbc_prepared_flag_decides_for_its_forms() {
        let a = crate::Activity::from_str(
            "params: {driver: postgres}\nbindings: {k: Mod(5)}\nops:\n  a: {update: 'delete from t where k = {k}', prepared: false}\n  b: {execute: 'select {k}', prepared: true}\n  c: {raw: 'select 1', prepared: true}",
            "p.yaml",
            &["postgres"],
        )
        .unwrap();
        let spec = |i: usize| op_spec(&a.ops()[i], a.bindings()).unwrap();
        assert!(matches!(spec(0).form, Form::Raw(_)));
        assert!(matches!(&spec(1).form, Form::Prepared { sql, .. } if sql == "select $1"));
        assert!(matches!(spec(2).form, Form::Raw(_)));
    }
}
