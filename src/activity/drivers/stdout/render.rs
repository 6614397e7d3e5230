//! The hot path: each runner fills in its op's [`Layout`] for a cycle into a
//! buffer of its own, and writes whole batches through the one shared [`Sink`].

use super::OpPlan;
use super::layout::{Layout, Part, Slot};
use crate::engine::{OpError, OpRunner, WorkerContext, Workload};
use crate::sync::threads::{Arc, Mutex, lock};
use std::fmt::Write as _;
use std::io::Write;

/// Appends `cell` to `buf` as one CSV field: as is, or quoted with inner quotes
/// doubled when it holds a comma, a quote or a line break (RFC 4180).
pub(super) fn push_csv(cell: &str, buf: &mut String) {
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

pub(super) struct Shared {
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
    pub(super) fn new(
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
                        Part::Json(slot) => self.json(cycle, index, *slot, buf),
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

pub(super) struct StdoutWork(pub(super) Arc<Shared>);

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
