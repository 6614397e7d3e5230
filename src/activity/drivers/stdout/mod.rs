//! The `stdout` driver: renders each op's fields as text, JSON or CSV, the dry run
//! of any workload.
//!
//! Each runner renders its lines into a buffer of its own and writes whole
//! batches (about 64 KiB, and what is left in
//! [`OpRunner::finish`](crate::OpRunner::finish)) through one shared lock, so
//! the hot path takes no lock per op and lines never interleave.
//!
//! Split by what runs where: `layout` compiles the params into a [`Layout`]
//! once per run; `render` fills in and writes each cycle's line.

mod layout;
mod render;
#[cfg(all(test, not(loom)))]
mod tests;

use super::{Driver, DriverError, OpPlan};
use crate::engine::Workload;
use crate::sync::threads::Arc;
use layout::Layout;
use render::{Shared, StdoutWork};
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
/// | `filename` | a path (created, or truncated; a device or a FIFO is written as it is), or `-` for standard output | `-` |
///
/// What a line holds, by format:
///
/// - **`text`**: with `template`, the template filled in; with `fields`, their
///   values joined by one space; by default the op's `stmt` if it has one, its
///   one NB5 statement field (cql's `raw`/`simple`/`prepared`, jdbc's
///   `ddl`/`dmlread`/`dmlwrite`, ...) when it has one (its other fields are op
///   params), its one field if it has one, else one JSON object of its fields, names with
///   values (`{"method":"GET","uri":"..."}`, as an NB5 http or mongodb op
///   written as a map reads best). With `template` or `fields`, text fields are written as
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
/// policy decides (by default `stop`); a failed last batch, written as a worker
/// leaves, goes to the same policy.
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
/// `bindings` is NB5's: the regex that picks the bindings of the op made for a
/// file without ops (read when the file loads).
const PARAMS: &[&str] = &["format", "fields", "template", "filename", "bindings"];

/// A runner writes its buffer once it holds this many bytes.
const FLUSH_AT: usize = 64 * 1024;

impl Driver for Stdout {
    fn name(&self) -> &str {
        "stdout"
    }

    fn error_kinds(&self, _: &OpPlan) -> Option<Vec<String>> {
        Some(vec!["io".to_string(), "closed".to_string()])
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
        // A FIFO is opened at the first write: opening it waits for a reader, and
        // a run prepares its activity (and `check` validates it) without one.
        Some(serde_json::Value::String(s)) if is_fifo(s) => Ok((
            Box::new(OpenedOnFirstWrite {
                path: s.into(),
                file: None,
            }),
            format!("`{s}`"),
        )),
        Some(serde_json::Value::String(s)) if !s.is_empty() => match std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(s)
        {
            Ok(f) => {
                // Only a regular file is emptied: a character device
                // (`/dev/null`) or a FIFO cannot be, and need not be.
                let regular = f.metadata().is_ok_and(|m| m.is_file());
                Ok((Box::new(EmptiedOnFirstWrite(f, !regular)), format!("`{s}`")))
            }
            Err(e) => Err(format!(
                "param `filename`: cannot create `{s}`: {e}; check that the directory exists and is writable"
            )),
        },
        Some(v) => Err(format!(
            "param `filename`: {v} is not a path; write a path such as `ops.txt`, or `-` for standard output"
        )),
    }
}

/// Whether `path` is a FIFO (a named pipe).
fn is_fifo(path: &str) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        std::fs::metadata(path).is_ok_and(|m| m.file_type().is_fifo())
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        false
    }
}

/// A FIFO, opened for writing at the first write (which waits for a reader).
struct OpenedOnFirstWrite {
    path: std::path::PathBuf,
    file: Option<std::fs::File>,
}

impl Write for OpenedOnFirstWrite {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let file = match &mut self.file {
            Some(f) => f,
            None => self
                .file
                .insert(std::fs::OpenOptions::new().write(true).open(&self.path)?),
        };
        file.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        // Nothing written, nothing to flush: no wait for a reader.
        self.file.as_mut().map_or(Ok(()), Write::flush)
    }
}

/// A file that is emptied just before the first write or flush through it
/// (the flag says it has been, or needs not be).
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
