//! The line each op renders, compiled once per run from params `format`,
//! `fields` and `template` into a [`Layout`] of slots: which value goes where.

use super::OpPlan;
use super::render::push_csv;
use crate::activity::bindings::{Token, tokenize};
use crate::activity::model::Op;
use crate::activity::suggest;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Text,
    Json,
    Csv,
}

/// Where one value of a line comes from, resolved per op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Slot {
    Cycle,
    Op,
    /// The op's field at this index of [`Op::fields`](crate::Op::fields).
    Field(usize),
    /// The op has no such field.
    Missing,
}

/// A piece of a text line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Part {
    Lit(String),
    Value(Slot),
    /// A value written as JSON (a field of a field-map op's object).
    Json(Slot),
}

/// How each op's line is built, compiled once per run.
#[derive(Debug)]
pub(super) enum Layout {
    /// Per op, the line's pieces.
    Text(Vec<Vec<Part>>),
    /// Per op, each key (as JSON, with its colon) and its value.
    Json(Vec<Vec<(String, Slot)>>),
    /// The header line, and per op one slot per column.
    Csv {
        header: String,
        rows: Vec<Vec<Slot>>,
    },
}

/// A name in `template` or `fields`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Name {
    Cycle,
    Op,
    Field(String),
}

impl Name {
    fn of(s: &str) -> Self {
        match s {
            "cycle" => Name::Cycle,
            "op" => Name::Op,
            f => Name::Field(f.to_string()),
        }
    }

    fn slot(&self, op: &Op) -> Slot {
        match self {
            Name::Cycle => Slot::Cycle,
            Name::Op => Slot::Op,
            Name::Field(f) => op
                .fields
                .iter()
                .position(|(k, _)| k == f)
                .map_or(Slot::Missing, Slot::Field),
        }
    }

    fn as_str(&self) -> &str {
        match self {
            Name::Cycle => "cycle",
            Name::Op => "op",
            Name::Field(f) => f,
        }
    }
}

/// A piece of a parsed template, before it is resolved per op.
enum Piece {
    Lit(String),
    Name(Name),
}

impl Layout {
    /// The layout the params of `plan` ask for, or what is wrong with them.
    pub(super) fn new(plan: &OpPlan) -> Result<Self, String> {
        let format = match plan.param("format") {
            None => Format::Text,
            Some(serde_json::Value::String(s)) => match s.as_str() {
                // NB5's formats shape the op it makes of a file's bindings
                // (that op's `stmt`); any op prints as its text.
                "text" | "assignments" | "readout" | "inlinejson" => Format::Text,
                "json" => Format::Json,
                "csv" => Format::Csv,
                other if other.contains('{') => {
                    return Err(format!(
                        "param `format`: `{other}` is not a format; use `text`, `json` or `csv` \
                         (for a line template, write `template: \"{other}\"`)"
                    ));
                }
                other => {
                    return Err(format!(
                        "param `format`: `{other}` is not a format; use `text`, `json` or `csv`"
                    ));
                }
            },
            Some(v) => {
                return Err(format!(
                    "param `format`: {v} is not a format; use `text`, `json` or `csv`"
                ));
            }
        };
        let known = Known::new(plan);
        let fields = match plan.param("fields") {
            None => None,
            Some(v) => Some(
                parse_fields(v)?
                    .iter()
                    .map(|f| known.check("param `fields`", f, false))
                    .collect::<Result<Vec<_>, _>>()?,
            ),
        };
        let template = match plan.param("template") {
            None => None,
            Some(serde_json::Value::String(s)) => Some(s.as_str()),
            Some(v) => {
                return Err(format!(
                    "param `template`: {v} is not text; write a line such as \"{{op}} {{stmt}}\""
                ));
            }
        };
        let ops = plan.ops();
        match (format, template, fields) {
            (Format::Text, Some(_), Some(_)) => Err(
                "set `template` or `fields`, not both (a template names its fields: \"{op} {stmt}\")"
                    .to_string(),
            ),
            (Format::Text, Some(t), None) => {
                // The placeholder rules of `Template`, through its tokenizer.
                let pieces = tokenize(t)
                    .into_iter()
                    .map(|token| match token {
                        Token::Text(text) => Ok(Piece::Lit(text)),
                        Token::Name { name, .. } => known
                            .check("param `template`", name, true)
                            .map(Piece::Name),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Layout::Text(
                    ops.iter().map(|op| template_line(&pieces, op)).collect(),
                ))
            }
            (Format::Text, None, fields) => Ok(Layout::Text(
                ops.iter()
                    .map(|op| fields_line(fields.as_deref(), op))
                    .collect(),
            )),
            (_, Some(_), _) => Err(
                "param `template` is for `format: text` only; for json or csv choose the values with `fields`"
                    .to_string(),
            ),
            (Format::Json, None, fields) => Ok(Layout::Json(
                ops.iter()
                    .map(|op| json_object(fields.as_deref(), op))
                    .collect(),
            )),
            (Format::Csv, None, fields) => {
                let columns: Vec<Name> = fields.unwrap_or_else(|| {
                    [Name::Cycle, Name::Op]
                        .into_iter()
                        .chain(
                            known
                                .fields
                                .iter()
                                .filter(|k| !matches!(**k, "cycle" | "op"))
                                .map(|k| Name::Field(k.to_string())),
                        )
                        .collect()
                });
                let mut header = String::new();
                for (i, c) in columns.iter().enumerate() {
                    if i > 0 {
                        header.push(',');
                    }
                    push_csv(c.as_str(), &mut header);
                }
                header.push('\n');
                let rows = ops
                    .iter()
                    .map(|op| columns.iter().map(|c| c.slot(op)).collect())
                    .collect();
                Ok(Layout::Csv { header, rows })
            }
        }
    }
}

/// A text line from a template, for `op`.
fn template_line(pieces: &[Piece], op: &Op) -> Vec<Part> {
    pieces
        .iter()
        .map(|p| match p {
            Piece::Lit(s) => Part::Lit(s.clone()),
            Piece::Name(n) => Part::Value(n.slot(op)),
        })
        .collect()
}

/// A text line of values joined by one space: `fields`, or by default the op's
/// `stmt` if it has one, its one field if it has one, else a JSON object of
/// its fields, names with values (an NB5 http or mongodb op written as a map:
/// `{"method":"GET","uri":"..."}`). An op's params are never op text.
fn fields_line(fields: Option<&[Name]>, op: &Op) -> Vec<Part> {
    let slots: Vec<Slot> = match fields {
        Some(f) => f.iter().map(|n| n.slot(op)).collect(),
        None => match op.fields.iter().position(|(k, _)| k == "stmt") {
            Some(i) => vec![Slot::Field(i)],
            // NB5's op params (`cl: LOCAL_QUORUM` of a block) are not op text.
            None => {
                let own: Vec<usize> = (0..op.fields.len())
                    .filter(|&i| !op.param_fields.contains(&op.fields[i].0))
                    .collect();
                // NB5's statement forms (cql's `raw: |`, jdbc's `dmlread:`):
                // that text is the op; the other fields are its op params
                // (`idempotent: true`), not op text.
                let statements: Vec<usize> = own
                    .iter()
                    .copied()
                    .filter(|&i| {
                        STATEMENT_KEYS.contains(&op.fields[i].0.as_str())
                            && matches!(op.fields[i].1, crate::activity::model::Field::Text(_))
                    })
                    .collect();
                if let [one] = statements[..] {
                    return vec![Part::Value(Slot::Field(one))];
                }
                if own.len() > 1 {
                    let mut parts = vec![Part::Lit("{".to_string())];
                    for (n, i) in own.into_iter().enumerate() {
                        let key = serde_json::Value::from(op.fields[i].0.as_str());
                        let sep = if n > 0 { "," } else { "" };
                        parts.push(Part::Lit(format!("{sep}{key}:")));
                        parts.push(Part::Json(Slot::Field(i)));
                    }
                    parts.push(Part::Lit("}".to_string()));
                    return parts;
                }
                own.into_iter().map(Slot::Field).collect()
            }
        },
    };
    let mut parts = Vec::with_capacity(slots.len() * 2);
    for (i, s) in slots.into_iter().enumerate() {
        if i > 0 {
            parts.push(Part::Lit(" ".to_string()));
        }
        parts.push(Part::Value(s));
    }
    parts
}

/// The fields NB5's drivers read an op's statement from (cql `raw`, `simple`,
/// `prepared`; jdbc `ddl`, `dmlread`, `dmlwrite` and the older `query`,
/// `update`, `execute`; NB5's generic `statement`; graph `gremlin`, `fluent`).
const STATEMENT_KEYS: &[&str] = &[
    "raw",
    "simple",
    "prepared",
    "statement",
    "ddl",
    "dmlread",
    "dmlwrite",
    "query",
    "update",
    "execute",
    "gremlin",
    "fluent",
];

/// A JSON object's keys and values for `op`: `fields` (those the op has), or by
/// default `cycle`, `op` and all the op's fields but its op params.
fn json_object(fields: Option<&[Name]>, op: &Op) -> Vec<(String, Slot)> {
    let key = |k: &str| format!("{}:", serde_json::Value::from(k));
    match fields {
        Some(f) => f
            .iter()
            .map(|n| (key(n.as_str()), n.slot(op)))
            .filter(|(_, s)| *s != Slot::Missing)
            .collect(),
        None => [(key("cycle"), Slot::Cycle), (key("op"), Slot::Op)]
            .into_iter()
            .chain(
                op.fields
                    .iter()
                    .enumerate()
                    .filter(|(_, (k, _))| !matches!(k.as_str(), "cycle" | "op"))
                    .filter(|(_, (k, _))| !op.param_fields.contains(k))
                    .map(|(i, (k, _))| (key(k), Slot::Field(i))),
            )
            .collect(),
    }
}

/// The names a line may use: every field any op has, in order of first
/// appearance (ops in the order written), besides `cycle` and `op`.
struct Known<'a> {
    fields: Vec<&'a str>,
    plan: &'a OpPlan,
}

impl<'a> Known<'a> {
    fn new(plan: &'a OpPlan) -> Self {
        let mut fields: Vec<&str> = Vec::new();
        for op in plan.ops() {
            for (k, _) in &op.fields {
                if !fields.contains(&k.as_str()) {
                    fields.push(k);
                }
            }
        }
        Self { fields, plan }
    }

    /// `name`, if known, as one of `what`'s names (a `{placeholder}` with `braces`);
    /// else an error with the closest known name and the list.
    fn check(&self, what: &str, name: &str, braces: bool) -> Result<Name, String> {
        let n = Name::of(name);
        let Name::Field(f) = &n else { return Ok(n) };
        if self.fields.contains(&f.as_str()) {
            return Ok(n);
        }
        let shown = |s: &str| {
            if braces {
                format!("`{{{s}}}`")
            } else {
                format!("`{s}`")
            }
        };
        let all = ["cycle", "op"]
            .into_iter()
            .chain(self.fields.iter().copied());
        let hint = match suggest::closest(f, all.clone()) {
            Some(s) => format!("did you mean {}? ", shown(s)),
            None if self.plan.bindings().index_of(f).is_some() => {
                format!("`{f}` is a binding: use it in an op field, then name the field; ")
            }
            None => String::new(),
        };
        let list = suggest::list(all);
        Err(format!(
            "{what}: {} is not a field of any op; {hint}write one of {list}",
            shown(f)
        ))
    }
}

/// The names in a `fields` param: a list of strings, or one string of names
/// separated by commas.
pub(super) fn parse_fields(v: &serde_json::Value) -> Result<Vec<String>, String> {
    let bad = || {
        format!(
            "param `fields`: {v} is not a list of field names; write `[cycle, op, stmt]` or `cycle,op,stmt`"
        )
    };
    let names: Vec<String> = match v {
        serde_json::Value::String(s) => s.split(',').map(|n| n.trim().to_string()).collect(),
        serde_json::Value::Array(items) => items
            .iter()
            .map(|i| i.as_str().map(|s| s.trim().to_string()).ok_or_else(bad))
            .collect::<Result<_, _>>()?,
        _ => return Err(bad()),
    };
    if names.iter().all(String::is_empty) {
        return Err(
            "param `fields`: is empty; name at least one value, such as `[cycle, op, stmt]`"
                .to_string(),
        );
    }
    if names.iter().any(String::is_empty) {
        return Err(format!(
            "param `fields`: {v} has an empty name; write names separated by commas, such as `cycle,op,stmt`"
        ));
    }
    for (i, n) in names.iter().enumerate() {
        if names[..i].contains(n) {
            return Err(format!(
                "param `fields`: `{n}` is listed twice; list each value once"
            ));
        }
    }
    Ok(names)
}
