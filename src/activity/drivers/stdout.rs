//! The `stdout` driver: renders each op's fields as text, JSON or CSV, the dry run
//! of any workload.
//!
//! Each runner renders its lines into a buffer of its own and writes whole
//! batches (about 64 KiB, and what is left in [`OpRunner::finish`]) through one
//! shared lock, so the hot path takes no lock per op and lines never interleave.

use super::{Driver, DriverError, OpPlan};
use crate::activity::bindings::{Token, tokenize};
use crate::activity::model::Op;
use crate::activity::suggest;
use crate::engine::{OpError, OpRunner, WorkerContext, Workload};
use crate::sync::threads::{Arc, Mutex, lock};
use std::fmt::Write as _;
use std::io::Write;

/// The `stdout` driver: writes one line per cycle describing the op the cycle
/// runs, to standard output or a file, as text, JSON or CSV. Nothing is sent
/// anywhere: it is the dry run of any workload (point an `http` activity at it
/// with `driver=stdout` to see exactly what each cycle would send).
///
/// Params (all optional):
///
/// | param | value | default |
/// |---|---|---|
/// | `format` | `text`, `json` or `csv` | `text` |
/// | `fields` | which values, in order: a list `[cycle, op, stmt]` or a string `cycle,op,stmt`; `cycle` is the cycle number, `op` the op's name, any other name an op field | by format, below |
/// | `template` | `text` only: the line, with `{cycle}`, `{op}` and `{field}` placeholders, such as `"{op} {cycle} {stmt}"` | |
/// | `filename` | a path (created, or truncated), or `-` for standard output | `-` |
///
/// What a line holds, by format:
///
/// - **`text`**: with `template`, the template filled in; with `fields`, their
///   values joined by one space; by default the op's `stmt` if it has one, else
///   all its fields' values joined by one space. Text fields are written as
///   rendered, other fields (numbers, lists, maps) as compact JSON, a field the
///   op lacks as nothing. Values are written as they are: a value with a newline
///   spans lines (use `json` or `csv` for those).
/// - **`json`**: one object per line. By default `{"cycle": N, "op": "name", ...}`
///   with all the op's fields in the order written; with `fields`, exactly those
///   keys (a field the op lacks is left out). A field that is exactly one
///   `{binding}` keeps the binding's type (`{"n": 42}`, not `{"n": "42"}`).
/// - **`csv`**: a header line, then one row per cycle (RFC 4180 quoting of
///   commas, quotes and line breaks; lines end in `\n`). By default the columns
///   are `cycle`, `op`, then every field any op has, in order of first appearance
///   (ops in the order written); a field the op lacks is an empty cell. The
///   header is written exactly once per output, by whichever runner writes first.
///
/// In a template, `{name}` is a placeholder when `name` is letters, digits, `_`
/// or `-`; any other brace is literal, and `{{` writes `{`. Every name in
/// `template` and `fields` must be `cycle`, `op` or a field of some op (typos are
/// errors when the activity starts). An op field called `cycle` or `op` is hidden
/// by the driver's own.
///
/// Order: with `threads: 1` lines come in cycle order. With more threads each
/// worker's lines are in its own cycle order, and batches of whole lines from
/// different workers interleave in no set order; sort by cycle if it matters.
///
/// Errors: a path that cannot be created fails the start with a message naming
/// the path and the OS error. A failed write (a closed pipe after `| head`, a
/// full disk) never panics: the op that triggered the write fails with an error
/// of kind `io`, the unwritten batch is dropped, and the activity's `errors`
/// policy decides (by default `stop`).
///
/// ```
/// use paceline::{Drivers, Engine, ManualClock, ParamOverrides};
/// let path = std::env::temp_dir().join(format!("paceline-doc-stdout-{}.csv", std::process::id()));
/// let d = Drivers::builtin();
/// let a = d.loader().from_str(r#"
/// params: {driver: stdout, cycles: 3, format: csv}
/// bindings: {n: Mod(10)}
/// ops:
///   get: 'GET k{n}'
///   put: {stmt: 'PUT k{n}', body: {v: '{n}'}}
/// "#, "kv.yaml")?;
/// let mut o = ParamOverrides::default();
/// o.driver_params.insert("filename".into(), path.display().to_string().into());
/// d.start(&Engine::with_clock(ManualClock::new()), &a, &o)?.wait();
/// assert_eq!(std::fs::read_to_string(&path)?, "\
/// cycle,op,stmt,body
/// 0,get,GET k0,
/// 1,put,PUT k1,\"{\"\"v\"\":1}\"
/// 2,get,GET k2,
/// ");
/// # std::fs::remove_file(&path)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Stdout;

/// The params `stdout` accepts.
const PARAMS: &[&str] = &["format", "fields", "template", "filename"];

/// A runner writes its buffer once it holds this many bytes.
const FLUSH_AT: usize = 64 * 1024;

impl Driver for Stdout {
    fn name(&self) -> &str {
        "stdout"
    }

    fn params(&self) -> Option<&[&str]> {
        Some(PARAMS)
    }

    fn workload(&self, plan: Arc<OpPlan>) -> Result<Box<dyn Workload>, DriverError> {
        let layout = Layout::new(&plan).map_err(|m| DriverError::new("stdout", m))?;
        let (out, dest) = open(&plan).map_err(|m| DriverError::new("stdout", m))?;
        Ok(Box::new(StdoutWork(Arc::new(Shared::new(
            plan, layout, out, dest, FLUSH_AT,
        )))))
    }
}

/// Opens the output `filename` names: the writer and how messages name it.
fn open(plan: &OpPlan) -> Result<(Box<dyn Write + Send>, String), String> {
    match plan.param("filename").filter(|v| v.as_str() != Some("-")) {
        None => Ok((Box::new(std::io::stdout()), "standard output".to_string())),
        // Opened without truncating, so a bad path fails now while preparing an
        // activity that is only checked (`paceline check`) loses nothing: the file
        // is emptied at the first write or flush of a run.
        Some(serde_json::Value::String(s)) if !s.is_empty() => match std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(s)
        {
            Ok(f) => Ok((Box::new(EmptiedOnFirstWrite(f, false)), format!("`{s}`"))),
            Err(e) => Err(format!(
                "param `filename`: cannot create `{s}`: {e}; check that the directory exists and is writable"
            )),
        },
        Some(v) => Err(format!(
            "param `filename`: {v} is not a path; write a path such as `ops.txt`, or `-` for standard output"
        )),
    }
}

/// A file that is emptied just before the first write or flush through it.
struct EmptiedOnFirstWrite(std::fs::File, bool);

impl EmptiedOnFirstWrite {
    fn empty_once(&mut self) -> std::io::Result<()> {
        if !self.1 {
            self.0.set_len(0)?;
            self.1 = true;
        }
        Ok(())
    }
}

impl Write for EmptiedOnFirstWrite {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.empty_once()?;
        self.0.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.empty_once()?;
        self.0.flush()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Text,
    Json,
    Csv,
}

/// Where one value of a line comes from, resolved per op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Cycle,
    Op,
    /// The op's field at this index of [`Op::fields`](crate::Op::fields).
    Field(usize),
    /// The op has no such field.
    Missing,
}

/// A piece of a text line.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Lit(String),
    Value(Slot),
}

/// How each op's line is built, compiled once per run.
#[derive(Debug)]
enum Layout {
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
    fn new(plan: &OpPlan) -> Result<Self, String> {
        let format = match plan.param("format") {
            None => Format::Text,
            Some(serde_json::Value::String(s)) => match s.as_str() {
                "text" => Format::Text,
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
/// `stmt` if it has one, else all its fields.
fn fields_line(fields: Option<&[Name]>, op: &Op) -> Vec<Part> {
    let slots: Vec<Slot> = match fields {
        Some(f) => f.iter().map(|n| n.slot(op)).collect(),
        None => match op.fields.iter().position(|(k, _)| k == "stmt") {
            Some(i) => vec![Slot::Field(i)],
            None => (0..op.fields.len()).map(Slot::Field).collect(),
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

/// A JSON object's keys and values for `op`: `fields` (those the op has), or by
/// default `cycle`, `op` and all the op's fields.
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
fn parse_fields(v: &serde_json::Value) -> Result<Vec<String>, String> {
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

/// Appends `cell` to `buf` as one CSV field: as is, or quoted with inner quotes
/// doubled when it holds a comma, a quote or a line break (RFC 4180).
fn push_csv(cell: &str, buf: &mut String) {
    if !cell.contains([',', '"', '\n', '\r']) {
        buf.push_str(cell);
        return;
    }
    buf.push('"');
    let mut parts = cell.split('"');
    if let Some(first) = parts.next() {
        buf.push_str(first);
    }
    for p in parts {
        buf.push_str("\"\"");
        buf.push_str(p);
    }
    buf.push('"');
}

/// The output, shared by all runners of one run.
struct Sink {
    out: Box<dyn Write + Send>,
    /// The CSV header, until someone has written it.
    header: Option<String>,
}

struct Shared {
    plan: Arc<OpPlan>,
    layout: Layout,
    /// JSON strings of the op names, by op index.
    op_json: Vec<String>,
    sink: Mutex<Sink>,
    /// How messages name the output.
    dest: String,
    flush_at: usize,
}

impl Shared {
    fn new(
        plan: Arc<OpPlan>,
        layout: Layout,
        out: Box<dyn Write + Send>,
        dest: String,
        flush_at: usize,
    ) -> Self {
        let op_json = plan
            .ops()
            .iter()
            .map(|op| serde_json::Value::from(op.name.as_str()).to_string())
            .collect();
        let header = match &layout {
            Layout::Csv { header, .. } => Some(header.clone()),
            _ => None,
        };
        Self {
            plan,
            layout,
            op_json,
            sink: Mutex::new(Sink { out, header }),
            dest,
            flush_at,
        }
    }

    /// Appends the line of `cycle` to `buf`; `cell` is scratch space.
    fn render(&self, cycle: u64, buf: &mut String, cell: &mut String) {
        let index = self.plan.op_index(cycle);
        match &self.layout {
            Layout::Text(lines) => {
                let start = buf.len();
                for part in &lines[index] {
                    match part {
                        Part::Lit(s) => buf.push_str(s),
                        Part::Value(slot) => self.text(cycle, index, *slot, buf),
                    }
                }
                // A `|` block already ends its text with a line break: that one
                // ends the line.
                if buf.len() > start && buf.ends_with('\n') {
                    return;
                }
            }
            Layout::Json(objects) => {
                buf.push('{');
                for (i, (key, slot)) in objects[index].iter().enumerate() {
                    if i > 0 {
                        buf.push(',');
                    }
                    buf.push_str(key);
                    self.json(cycle, index, *slot, buf);
                }
                buf.push('}');
            }
            Layout::Csv { rows, .. } => {
                for (i, slot) in rows[index].iter().enumerate() {
                    if i > 0 {
                        buf.push(',');
                    }
                    cell.clear();
                    self.text(cycle, index, *slot, cell);
                    push_csv(cell, buf);
                }
            }
        }
        buf.push('\n');
    }

    /// Appends a value as text: text fields as rendered, others as compact JSON.
    fn text(&self, cycle: u64, index: usize, slot: Slot, buf: &mut String) {
        let op = &self.plan.ops()[index];
        match slot {
            Slot::Cycle => {
                let _ = write!(buf, "{cycle}");
            }
            Slot::Op => buf.push_str(&op.name),
            Slot::Field(i) => op.fields[i]
                .1
                .render_text_into(cycle, self.plan.bindings(), buf),
            Slot::Missing => {}
        }
    }

    /// Appends a value as JSON.
    fn json(&self, cycle: u64, index: usize, slot: Slot, buf: &mut String) {
        match slot {
            Slot::Cycle => {
                let _ = write!(buf, "{cycle}");
            }
            Slot::Op => buf.push_str(&self.op_json[index]),
            Slot::Field(i) => {
                let f = &self.plan.ops()[index].fields[i].1;
                let _ = write!(buf, "{}", f.render_json(cycle, self.plan.bindings()));
            }
            Slot::Missing => buf.push_str("null"),
        }
    }

    /// Writes `buf` (after the CSV header, if no one has written it yet) and
    /// empties it, written or not.
    fn write(&self, buf: &mut String) -> Result<(), OpError> {
        let result = {
            let mut sink = lock(&self.sink);
            let sink = &mut *sink;
            let header = sink.header.take();
            header
                .as_deref()
                .map_or(Ok(()), |h| sink.out.write_all(h.as_bytes()))
                .and_then(|()| sink.out.write_all(buf.as_bytes()))
                .and_then(|()| sink.out.flush())
        };
        buf.clear();
        result.map_err(|e| {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                // The reader went away (`| head`): nothing more can be shown, so
                // the run ends whatever the error policy says.
                OpError::new("closed", format!("{} was closed by its reader", self.dest)).fatal()
            } else {
                OpError::new("io", format!("writing to {}: {e}", self.dest))
            }
        })
    }
}

struct StdoutWork(Arc<Shared>);

impl Workload for StdoutWork {
    fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
        Ok(Box::new(StdoutRunner {
            shared: self.0.clone(),
            buf: String::with_capacity(self.0.flush_at + 1024),
            cell: String::new(),
        }))
    }
}

struct StdoutRunner {
    shared: Arc<Shared>,
    buf: String,
    cell: String,
}

impl OpRunner for StdoutRunner {
    #[inline]
    fn run(&mut self, cycle: u64) -> Result<(), OpError> {
        self.shared.render(cycle, &mut self.buf, &mut self.cell);
        if self.buf.len() >= self.shared.flush_at {
            self.shared.write(&mut self.buf)?;
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<(), OpError> {
        self.shared.write(&mut self.buf)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::clock::ManualClock;
    use std::io;

    fn plan(yaml: &str) -> Arc<OpPlan> {
        super::super::testing::plan(&Stdout, yaml)
    }

    fn err(yaml: &str) -> String {
        super::super::testing::refusal(&Stdout, yaml)
    }

    /// A writer into a shared byte vector.
    #[derive(Clone, Default)]
    struct Capture(Arc<Mutex<Vec<u8>>>);

    impl Write for Capture {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            lock(&self.0).extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Capture {
        fn text(&self) -> String {
            String::from_utf8(lock(&self.0).clone()).unwrap()
        }
    }

    fn shared(yaml: &str, out: Box<dyn Write + Send>, flush_at: usize) -> Arc<Shared> {
        let p = plan(yaml);
        let layout = Layout::new(&p).unwrap();
        Arc::new(Shared::new(p, layout, out, "test".into(), flush_at))
    }

    fn runner(s: &Arc<Shared>) -> Box<dyn OpRunner> {
        let ctx = WorkerContext::new(0, "a", Arc::new(ManualClock::new()));
        StdoutWork(s.clone()).runner(&ctx).unwrap()
    }

    /// The output of `cycles` on one runner.
    fn render(yaml: &str, cycles: std::ops::Range<u64>) -> String {
        let cap = Capture::default();
        let s = shared(yaml, Box::new(cap.clone()), FLUSH_AT);
        let mut r = runner(&s);
        for c in cycles {
            r.run(c).unwrap();
        }
        r.finish().unwrap();
        cap.text()
    }

    const KV: &str = r#"
params: {driver: stdout, FORMAT}
bindings:
  n: Mod(100)
  key: Mod(1000); ToString(); Prefix('key:')
  f: Mod(10); ToFloat()
ops:
  get: {stmt: 'GET {key}'}
  put: {stmt: 'SET {key} {n}', n: '{n}', size: 3, body: {id: '{n}', tags: [a, '#{n}'], f: '{f}'}}
  ping: {method: HEAD, uri: '/p/{n}'}
"#;

    fn kv(format: &str) -> String {
        KV.replace("FORMAT", format)
    }

    #[test]
    fn text_renders_stmt_or_all_fields() {
        assert_eq!(
            render(&kv("format: text"), 1001..1004),
            "HEAD /p/1\nGET key:2\nSET key:3 3\n"
        );
        assert_eq!(
            render(&kv("template: '{cycle} {op}: {stmt}|{uri}'"), 4..7),
            "4 put: SET key:4 4|\n5 ping: |/p/5\n6 get: GET key:6|\n"
        );
        assert_eq!(
            render(&kv("fields: [op, size, body]"), 1..3),
            "put 3 {\"f\":1.0,\"id\":1,\"tags\":[\"a\",\"#1\"]}\nping  \n"
        );
        assert_eq!(render(&kv("fields: 'cycle, n'"), 0..2), "0 \n1 1\n");
    }

    #[test]
    fn templates_keep_other_braces() {
        assert_eq!(
            render(
                &kv("template: '{{op} {op} { x } {} {\"a\": {cycle}}'"),
                0..1
            ),
            "{op} get { x } {} {\"a\": 0}\n"
        );
    }

    #[test]
    fn json_renders_one_typed_object_per_line() {
        assert_eq!(
            render(&kv("format: json"), 1..4),
            concat!(
                r##"{"cycle":1,"op":"put","stmt":"SET key:1 1","n":1,"size":3,"body":{"f":1.0,"id":1,"tags":["a","#1"]}}"##,
                "\n",
                r#"{"cycle":2,"op":"ping","method":"HEAD","uri":"/p/2"}"#,
                "\n",
                r#"{"cycle":3,"op":"get","stmt":"GET key:3"}"#,
                "\n",
            )
        );
        assert_eq!(
            render(&kv("format: json, fields: [n, op]"), 0..2),
            "{\"op\":\"get\"}\n{\"n\":1,\"op\":\"put\"}\n"
        );
    }

    #[test]
    fn csv_has_a_header_and_quotes_what_needs_it() {
        assert_eq!(
            render(&kv("format: csv"), 0..3),
            concat!(
                "cycle,op,stmt,n,size,body,method,uri\n",
                "0,get,GET key:0,,,,,\n",
                "1,put,SET key:1 1,1,3,\"{\"\"f\"\":1.0,\"\"id\"\":1,\"\"tags\"\":[\"\"a\"\",\"\"#1\"\"]}\",,\n",
                "2,ping,,,,,HEAD,/p/2\n",
            )
        );
        let yaml = r#"
params: {driver: stdout, format: csv, fields: [op, s, t]}
ops:
  o: {s: "say \"hi\"\nbye", t: 'a,b'}
  p: {s: plain, t: "x\ry"}
"#;
        assert_eq!(
            render(yaml, 0..2),
            "op,s,t\no,\"say \"\"hi\"\"\nbye\",\"a,b\"\np,plain,\"x\ry\"\n"
        );
    }

    #[test]
    fn the_csv_header_is_written_once_by_the_first_writer() {
        let cap = Capture::default();
        let s = shared(
            &kv("format: csv, fields: [cycle]"),
            Box::new(cap.clone()),
            4,
        );
        let mut a = runner(&s);
        let mut b = runner(&s);
        let mut c = runner(&s);
        b.run(1).unwrap();
        a.run(0).unwrap();
        b.run(3).unwrap();
        a.finish().unwrap();
        b.finish().unwrap();
        c.finish().unwrap();
        assert_eq!(cap.text(), "cycle\n1\n3\n0\n");

        // A run with no rows still gets its header.
        let cap = Capture::default();
        let s = shared(
            &kv("format: csv, fields: [cycle]"),
            Box::new(cap.clone()),
            4,
        );
        runner(&s).finish().unwrap();
        assert_eq!(cap.text(), "cycle\n");

        // Many threads, each writing often: still one header, first.
        let cap = Capture::default();
        let s = shared(
            &kv("format: csv, fields: [cycle]"),
            Box::new(cap.clone()),
            16,
        );
        std::thread::scope(|scope| {
            for t in 0..4 {
                let s = s.clone();
                scope.spawn(move || {
                    let mut r = runner(&s);
                    for c in (t..400).step_by(4) {
                        r.run(c).unwrap();
                    }
                    r.finish().unwrap();
                });
            }
        });
        let text = cap.text();
        let mut lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.remove(0), "cycle");
        let mut cycles: Vec<u64> = lines.iter().map(|l| l.parse().unwrap()).collect();
        cycles.sort_unstable();
        assert_eq!(cycles, (0..400).collect::<Vec<_>>());
    }

    #[test]
    fn lines_wait_in_the_buffer_until_it_fills() {
        let cap = Capture::default();
        let s = shared(&kv("fields: cycle"), Box::new(cap.clone()), 6);
        let mut r = runner(&s);
        r.run(10).unwrap();
        assert_eq!(cap.text(), "");
        r.run(11).unwrap();
        assert_eq!(cap.text(), "10\n11\n");
        r.run(12).unwrap();
        r.finish().unwrap();
        assert_eq!(cap.text(), "10\n11\n12\n");
    }

    /// A closed pipe.
    struct Broken;

    impl Write for Broken {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::from(io::ErrorKind::BrokenPipe))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_broken_pipe_is_a_fatal_closed_error_not_a_panic() {
        let s = shared(&kv("format: text"), Box::new(Broken), 1);
        let mut r = runner(&s);
        let e = r.run(0).unwrap_err();
        assert_eq!(e.kind(), "closed");
        assert!(e.is_fatal());
        assert_eq!(e.message(), "test was closed by its reader");
        assert_eq!(r.run(1).unwrap_err().kind(), "closed");
        assert!(r.finish().is_ok(), "the failed batches were dropped");
    }

    #[test]
    fn bad_params_say_what_to_write() {
        assert_eq!(
            err(&kv("format: xml")),
            "driver `stdout`: param `format`: `xml` is not a format; use `text`, `json` or `csv`"
        );
        assert_eq!(
            err(&kv("format: '{stmt}'")),
            "driver `stdout`: param `format`: `{stmt}` is not a format; use `text`, `json` or `csv` \
             (for a line template, write `template: \"{stmt}\"`)"
        );
        assert_eq!(
            err(&kv("fields: [op, stm]")),
            "driver `stdout`: param `fields`: `stm` is not a field of any op; did you mean `stmt`? \
             write one of `cycle`, `op`, `stmt`, `n`, `size`, `body`, `method`, `uri`"
        );
        assert_eq!(
            err(&kv("template: '{op} {kye}'")),
            "driver `stdout`: param `template`: `{kye}` is not a field of any op; \
             write one of `cycle`, `op`, `stmt`, `n`, `size`, `body`, `method`, `uri`"
        );
        assert_eq!(
            err(&kv("template: '{key} {urj}'")),
            "driver `stdout`: param `template`: `{key}` is not a field of any op; \
             `key` is a binding: use it in an op field, then name the field; \
             write one of `cycle`, `op`, `stmt`, `n`, `size`, `body`, `method`, `uri`"
        );
        assert!(err(&kv("template: '{urj}'")).contains("did you mean `{uri}`? "));
        assert_eq!(
            err(&kv("fields: [op, op]")),
            "driver `stdout`: param `fields`: `op` is listed twice; list each value once"
        );
        assert_eq!(
            err(&kv("fields: []")),
            "driver `stdout`: param `fields`: is empty; name at least one value, such as `[cycle, op, stmt]`"
        );
        assert_eq!(
            err(&kv("fields: 3")),
            "driver `stdout`: param `fields`: 3 is not a list of field names; write `[cycle, op, stmt]` or `cycle,op,stmt`"
        );
        assert_eq!(
            err(&kv("format: json, template: '{op}'")),
            "driver `stdout`: param `template` is for `format: text` only; for json or csv choose the values with `fields`"
        );
        assert_eq!(
            err(&kv("template: '{op}', fields: [op]")),
            "driver `stdout`: set `template` or `fields`, not both (a template names its fields: \"{op} {stmt}\")"
        );
        assert_eq!(
            err(&kv("filename: 7")),
            "driver `stdout`: param `filename`: 7 is not a path; write a path such as `ops.txt`, or `-` for standard output"
        );
        let dir = std::env::temp_dir().join(format!("paceline-no-such-dir-{}", std::process::id()));
        let path = dir.join("out.txt").display().to_string();
        let e = err(&kv(&format!("filename: '{path}'")));
        assert!(
            e.starts_with(&format!(
                "driver `stdout`: param `filename`: cannot create `{path}`: "
            )),
            "{e}"
        );
        assert!(e.contains("os error"), "{e}");
    }

    #[test]
    fn typos_in_param_names_are_caught_at_load() {
        let e = crate::activity::Loader::new(&["stdout"])
            .driver_params("stdout", PARAMS)
            .from_str(
                "params: {driver: stdout, fromat: json}\nops: {o: x}",
                "t.yaml",
            )
            .unwrap_err();
        assert!(e.to_string().contains("did you mean `format`?"), "{e}");
    }

    #[test]
    fn the_parsers() {
        assert_eq!(
            parse_fields(&serde_json::json!(" a , b ")).unwrap(),
            ["a", "b"]
        );
        assert!(parse_fields(&serde_json::json!("a,,b")).is_err());
        let mut s = String::new();
        push_csv("a\rb", &mut s);
        push_csv("\"", &mut s);
        assert_eq!(s, "\"a\rb\"\"\"\"\"");
    }
}
