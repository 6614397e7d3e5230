//! An op's fields, read once at load into an [`OpSpec`]: its form (a statement
//! prepared with `$n` parameters, or text rendered and sent as a simple query) and
//! its `expect_rows` check.

use super::super::db_params::RowRange;
use super::sql::{Slot, may_open_transaction, to_parameters};
use crate::activity::bindings::{BindingSet, Piece, Template, Value};
use crate::activity::model::{Field, Op};
use crate::activity::suggest;

/// The op fields `postgres` reads. `stmt` is a plain string op; `dmlread` and
/// `dmlwrite` are NoSQLBench jdbc's prepared forms (`query` and `update` in
/// its older docs), `ddl` its raw one (`execute`); `prep_stmt_val_arr` gives
/// the values of its `?` markers.
const FIELDS: &[&str] = &[
    "prepared",
    "raw",
    "stmt",
    "query",
    "update",
    "execute",
    "dmlread",
    "dmlwrite",
    "ddl",
    "prep_stmt_val_arr",
    "expect_rows",
];

/// The fields that hold the statement, and whether each is prepared.
const FORMS: &[(&str, bool)] = &[
    ("prepared", true),
    ("stmt", true),
    ("query", true),
    ("update", true),
    ("dmlread", true),
    ("dmlwrite", true),
    ("raw", false),
    ("execute", false),
    ("ddl", false),
];

/// NoSQLBench jdbc's forms, where a `?` outside strings and comments is a
/// JDBC parameter marker (`??` a literal `?`, as in the PostgreSQL JDBC
/// driver).
const JDBC_FORMS: &[&str] = &["query", "update", "execute", "dmlread", "dmlwrite", "ddl"];

/// One part of a `prep_stmt_val_arr` value.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum ValPart {
    Text(String),
    Binding(usize),
}

/// One parameter of a prepared statement: what its value is each cycle.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Arg {
    /// A `{binding}` placeholder in the SQL: the binding's value.
    Binding(usize),
    /// A `?` marker: value `n` (from 1) of `prep_stmt_val_arr`; exactly one
    /// `{binding}` gives that binding's value, anything else its text.
    Value { n: usize, parts: Vec<ValPart> },
}

impl Arg {
    /// The value for `cycle`.
    pub(super) fn eval(&self, cycle: u64, bindings: &BindingSet) -> Value {
        match self {
            Arg::Binding(b) => bindings.eval(*b, cycle),
            Arg::Value { parts, .. } => match parts.as_slice() {
                [ValPart::Binding(b)] => bindings.eval(*b, cycle),
                parts => {
                    let mut s = String::new();
                    for p in parts {
                        match p {
                            ValPart::Text(t) => s.push_str(t),
                            ValPart::Binding(b) => bindings.at(*b).render_into(cycle, &mut s),
                        }
                    }
                    Value::Str(s)
                }
            },
        }
    }

    /// What a message calls it: ``binding `k` ``, or for a `?` marker
    /// `` `prep_stmt_val_arr` value 2, binding `k` `` (the bindings its value
    /// is made of, if any).
    pub(super) fn describe(&self, bindings: &BindingSet) -> String {
        match self {
            Arg::Binding(b) => format!("binding `{}`", bindings.at(*b).name()),
            Arg::Value { n, parts } => {
                let mut names: Vec<&str> = Vec::new();
                for p in parts {
                    if let ValPart::Binding(b) = p {
                        let name = bindings.at(*b).name();
                        if !names.contains(&name) {
                            names.push(name);
                        }
                    }
                }
                let mut out = format!("`prep_stmt_val_arr` value {n}");
                match names.as_slice() {
                    [] => {}
                    [one] => out.push_str(&format!(", binding `{one}`")),
                    many => {
                        let list: Vec<String> = many.iter().map(|m| format!("`{m}`")).collect();
                        out.push_str(&format!(", bindings {}", list.join(", ")));
                    }
                }
                out
            }
        }
    }
}

/// How an op reaches the server.
#[derive(Debug, Clone)]
pub(super) enum Form {
    /// Prepared once per connection; each cycle binds `args` (one per `$n`,
    /// in order) with the server's parameter types.
    Prepared { sql: String, args: Vec<Arg> },
    /// Rendered with the values and sent by the simple query protocol;
    /// `barrier`: its text may leave the connection in a transaction block
    /// ([`may_open_transaction`]), so that with `pipeline: true` nothing is
    /// sent behind it until it ended (`run::Gate`).
    Raw { template: Template, barrier: bool },
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
    // The flag decides for NB5's forms; `raw:` and `prepared: SQL` say it
    // themselves. `?` markers with their values are a prepared statement in
    // NB5 whatever the flag says.
    let values = match op.field("prep_stmt_val_arr") {
        None => None,
        Some(f) => Some(values(f).map_err(|m| format!("field `prep_stmt_val_arr`: {m}"))?),
    };
    let prepared = match (field, flag) {
        _ if values.is_some() => true,
        ("raw", _) => false,
        (_, Some(f)) if field != "prepared" => f,
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
        let marks = values.is_some() || JDBC_FORMS.contains(&field);
        let (sql, slots) = to_parameters(&template, bindings, marks)
            .map_err(|m| format!("field `{field}`: {m}"))?;
        if sql.trim().is_empty() {
            return Err(format!("field `{field}`: the statement is empty"));
        }
        let mut values = values.unwrap_or_default().into_iter();
        let marked = slots.iter().filter(|s| **s == Slot::Mark).count();
        if marked != values.len() {
            return Err(format!(
                "field `{field}`: the statement has {marked} `?` marker{} but \
                 `prep_stmt_val_arr` gives {} value{}; give one value per `?`, separated by \
                 commas (`{{k}},{{v}}`), or write `??` for a literal `?`",
                if marked == 1 { "" } else { "s" },
                values.len(),
                if values.len() == 1 { "" } else { "s" },
            ));
        }
        let args = slots
            .into_iter()
            .map(|s| match s {
                Slot::Binding(b) => Arg::Binding(b),
                Slot::Mark => values.next().expect("counted above"),
            })
            .collect();
        Form::Prepared { sql, args }
    } else {
        let barrier = may_open_transaction(&template, bindings);
        Form::Raw { template, barrier }
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

/// A stand-in for an op the run never sends (not in its sequence), whose
/// fields this driver cannot read.
pub(super) fn unused(op: &Op) -> OpSpec {
    OpSpec {
        name: op.name.clone(),
        field: "raw",
        form: Form::Raw {
            template: Template::compile("", &BindingSet::default()).expect("empty text"),
            barrier: false,
        },
        expect_rows: None,
    }
}

/// NB5 jdbc's `prep_stmt_val_arr`: the values of the `?` markers, in order.
///
/// Text is split at each comma outside `(...)` and `[...]` (so a vector
/// `[0.1, 0.2]` or a call `point(1, 2)` stays one value), and each value is
/// trimmed. The split is made in the written text, before any binding's
/// value is put in: a value that holds a comma stays one value (NB5 splits the
/// rendered text). A list spells the values out.
fn values(f: &Field) -> Result<Vec<Arg>, String> {
    let mut out: Vec<Vec<ValPart>> = Vec::new();
    match f {
        Field::Text(t) => {
            let mut current: Vec<ValPart> = Vec::new();
            let mut depth = 0usize;
            let mut text = String::new();
            for p in t.pieces() {
                match p {
                    Piece::Binding(b) => {
                        if !text.is_empty() {
                            current.push(ValPart::Text(std::mem::take(&mut text)));
                        }
                        current.push(ValPart::Binding(b));
                    }
                    Piece::Text(s) => {
                        for c in s.chars() {
                            match c {
                                '(' | '[' => depth += 1,
                                ')' | ']' => depth = depth.saturating_sub(1),
                                ',' if depth == 0 => {
                                    if !text.is_empty() {
                                        current.push(ValPart::Text(std::mem::take(&mut text)));
                                    }
                                    out.push(std::mem::take(&mut current));
                                    continue;
                                }
                                _ => {}
                            }
                            text.push(c);
                        }
                    }
                }
            }
            if !text.is_empty() {
                current.push(ValPart::Text(text));
            }
            out.push(current);
        }
        Field::List(items) => {
            for item in items {
                out.push(match item {
                    Field::Text(t) => t
                        .pieces()
                        .map(|p| match p {
                            Piece::Text(s) => ValPart::Text(s.to_string()),
                            Piece::Binding(b) => ValPart::Binding(b),
                        })
                        .collect(),
                    Field::Literal(serde_json::Value::String(s)) => vec![ValPart::Text(s.clone())],
                    Field::Literal(v) => vec![ValPart::Text(v.to_string())],
                    _ => return Err("a value is a list or map; write each value as text".to_string()),
                });
            }
        }
        Field::Literal(serde_json::Value::String(s)) => out.push(vec![ValPart::Text(s.clone())]),
        Field::Literal(v) => out.push(vec![ValPart::Text(v.to_string())]),
        Field::Map(_) => {
            return Err("is a map; write the values as text, `{k},{v}`, or a list".to_string());
        }
    }
    // Trim each value's leading and trailing whitespace (a `|` block ends in a
    // line break); a value left empty is an error.
    let mut args = Vec::with_capacity(out.len());
    for (i, mut parts) in out.into_iter().enumerate() {
        if let Some(ValPart::Text(t)) = parts.first_mut() {
            *t = t.trim_start().to_string();
        }
        if let Some(ValPart::Text(t)) = parts.last_mut() {
            *t = t.trim_end().to_string();
        }
        parts.retain(|p| !matches!(p, ValPart::Text(t) if t.is_empty()));
        if parts.is_empty() {
            return Err(format!(
                "value {} is empty; write one value per `?`, separated by commas",
                i + 1
            ));
        }
        args.push(Arg::Value { n: i + 1, parts });
    }
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(matches!(spec(0).form, Form::Raw { .. }));
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
        assert!(matches!(spec(0).form, Form::Raw { .. }));
        assert!(matches!(&spec(1).form, Form::Prepared { sql, .. } if sql == "select $1"));
        assert!(matches!(spec(2).form, Form::Raw { .. }));
    }

    fn ops(yaml_ops: &str) -> crate::Activity {
        crate::Activity::from_str(
            &format!(
                "params: {{driver: postgres}}\nbindings: {{k: Mod(5), v: Hash()}}\nops:\n{yaml_ops}"
            ),
            "p.yaml",
            &["postgres"],
        )
        .unwrap()
    }

    #[test]
    fn nb5_jdbc_ddl_dmlread_and_dmlwrite_forms() {
        let a = ops(
            "  d: {ddl: 'create table t (k int)'}\n  r: {dmlread: 'select * from t where k = {k}'}\n  w: {dmlwrite: 'delete from t where k = {k}'}",
        );
        let spec = |i: usize| op_spec(&a.ops()[i], a.bindings()).unwrap();
        assert!(matches!(spec(0).form, Form::Raw { .. }));
        assert!(
            matches!(&spec(1).form, Form::Prepared { sql, args } if sql == "select * from t where k = $1" && args == &[Arg::Binding(0)])
        );
        assert!(matches!(&spec(2).form, Form::Prepared { .. }));
        assert_eq!(spec(2).field, "dmlwrite");
    }

    #[test]
    fn nb5_jdbc_question_marks_take_prep_stmt_val_arr_in_order() {
        // NB5's pgvector train op, `|` block and all; a vector stays one value.
        let a = ops(
            "  w:\n    dmlwrite: |\n      INSERT INTO t VALUES (?,?) -- why?\n      ON CONFLICT DO NOTHING;\n    prep_stmt_val_arr: |\n      {k},[{v}, 0.5]\n    prepared: true\n  \
             r: {dmlread: 'select ? = ''?'', {k}, f(?)', prep_stmt_val_arr: 'x{v}, point(1, 2)'}\n  \
             l: {query: 'select ?, ?', prep_stmt_val_arr: ['{k}', 7]}",
        );
        let spec = |i: usize| op_spec(&a.ops()[i], a.bindings()).unwrap();
        let Form::Prepared { sql, args } = spec(0).form else {
            panic!("prepared")
        };
        assert_eq!(
            sql,
            "INSERT INTO t VALUES ($1,$2) -- why?\nON CONFLICT DO NOTHING;\n"
        );
        let set = a.bindings();
        assert_eq!(
            args[0],
            Arg::Value {
                n: 1,
                parts: vec![ValPart::Binding(0)]
            }
        );
        assert_eq!(args[0].eval(7, set), Value::U64(2));
        let mut v = String::new();
        set.at(1).render_into(7, &mut v);
        assert_eq!(args[1].eval(7, set), Value::Str(format!("[{v}, 0.5]")));
        // A message names the bindings a value is made of (issue 22: "naming
        // the binding"), whole or inside text.
        assert_eq!(
            args[0].describe(set),
            "`prep_stmt_val_arr` value 1, binding `k`"
        );
        assert_eq!(
            args[1].describe(set),
            "`prep_stmt_val_arr` value 2, binding `v`"
        );
        let Form::Prepared { sql, args } = spec(1).form else {
            panic!("prepared")
        };
        assert_eq!(sql, "select $1 = '?', $2, f($3)");
        assert_eq!(args[1], Arg::Binding(0));
        assert_eq!(args[2].eval(0, set), Value::Str("point(1, 2)".into()));
        assert_eq!(args[2].describe(set), "`prep_stmt_val_arr` value 2");
        assert_eq!(
            args[0].describe(set),
            "`prep_stmt_val_arr` value 1, binding `v`"
        );
        let Form::Prepared { args, .. } = spec(2).form else {
            panic!("prepared")
        };
        assert_eq!(args[1].eval(0, set), Value::Str("7".into()));
    }

    /// Regression (issue 22, audit M4): a bind error on a `?` marker named
    /// the value's number, never the binding it came from.
    #[test]
    fn a_marker_value_is_described_by_the_bindings_it_is_made_of() {
        let a = ops(
            "  w: {dmlwrite: 'insert into t values (?, ?)', prep_stmt_val_arr: '{k}-{v}-{k},{k}'}",
        );
        let Form::Prepared { args, .. } = op_spec(&a.ops()[0], a.bindings()).unwrap().form else {
            panic!("prepared")
        };
        assert_eq!(
            args[0].describe(a.bindings()),
            "`prep_stmt_val_arr` value 1, bindings `k`, `v`"
        );
        assert_eq!(
            args[1].describe(a.bindings()),
            "`prep_stmt_val_arr` value 2, binding `k`"
        );
    }

    #[test]
    fn nb5_jdbc_marks_and_values_must_agree() {
        let a = ops(
            "  a: {dmlwrite: 'insert into t values (?, ?)', prep_stmt_val_arr: '{k}'}\n  \
             b: {dmlread: 'select * from t where k = ?'}\n  \
             c: {dmlread: 'select 1', prep_stmt_val_arr: '{k},,{v}'}\n  \
             d: {raw: 'select {k}', prep_stmt_val_arr: '{k}'}",
        );
        let err = |i: usize| op_spec(&a.ops()[i], a.bindings()).unwrap_err();
        assert!(
            err(0).contains("2 `?` markers but `prep_stmt_val_arr` gives 1 value;"),
            "{}",
            err(0)
        );
        assert!(
            err(1).contains("1 `?` marker but `prep_stmt_val_arr` gives 0 values"),
            "{}",
            err(1)
        );
        assert!(err(2).contains("value 2 is empty"), "{}", err(2));
        // `raw:` sends text: its values have no `?` to go to.
        assert!(err(3).contains("0 `?` markers"), "{}", err(3));
        // Native forms keep `?` as text (the jsonb operator).
        let a = ops("  a: {prepared: 'select doc ? {k}'}");
        assert!(
            matches!(&op_spec(&a.ops()[0], a.bindings()).unwrap().form, Form::Prepared { sql, .. } if sql == "select doc ? $1")
        );
    }
}
