//! NB5's `FVecReader` and `IVecReader`: records of the `.fvec`/`.ivec` vector
//! datasets (a little-endian 4-byte dimension, then that many little-endian
//! `f32`s or `i32`s), record `input mod count`, read per cycle from the file.

use super::Func;
use super::compile::Ctx;
use crate::activity::bindings::error::BindingError;
use crate::activity::bindings::value::{Kind, Value};
use crate::sync::ParkingMutex as Mutex;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::sync::Arc;

/// The names compiled here.
pub(crate) const NAMES: &[&str] = &["FVecReader", "IVecReader"];

/// How each function here is called, for messages.
pub(crate) fn usage(name: &str) -> Option<&'static str> {
    Some(match name {
        "FVecReader" => {
            "`FVecReader('FILE.fvec')` or `FVecReader('FILE.fvec', dimensions, records)` (0: \
             from the file)"
        }
        "IVecReader" => {
            "`IVecReader('FILE.ivec')` or `IVecReader('FILE.ivec', dimensions, records)`"
        }
        _ => return None,
    })
}

/// An open dataset.
#[derive(Debug, Clone)]
pub(crate) struct XVec {
    path: String,
    file: Arc<Mutex<File>>,
    dims: usize,
    records: u64,
    ints: bool,
}

impl XVec {
    pub(crate) fn apply(&self, v: Value) -> Value {
        let rec = v.as_u64() % self.records;
        let reclen = 4 + 4 * self.dims as u64;
        let mut buf = vec![0u8; reclen as usize];
        let read = {
            let mut f = self.file.lock();
            f.seek(SeekFrom::Start(rec * reclen))
                .and_then(|_| f.read_exact(&mut buf))
        };
        // The file was checked when the binding was made: a failure here is the
        // file changing under the run, reported in the value (NB5 throws).
        if let Err(e) = read {
            return Value::Str(format!("error reading `{}`: {e}", self.path));
        }
        let word = |i: usize| [buf[4 * i], buf[4 * i + 1], buf[4 * i + 2], buf[4 * i + 3]];
        let dim = u32::from_le_bytes(word(0)) as usize;
        if dim != self.dims {
            return Value::Str(format!(
                "error: `{}` has dimension {dim} at record {rec}, not {}",
                self.path, self.dims
            ));
        }
        Value::List(
            (1..=self.dims)
                .map(|i| {
                    if self.ints {
                        Value::I64(i32::from_le_bytes(word(i)).into())
                    } else {
                        Value::F32(f32::from_le_bytes(word(i)))
                    }
                })
                .collect(),
        )
    }
}

/// Compiles a function of this file, or `None` when `name` is not one of them.
pub(crate) fn compile(cx: &Ctx<'_>, input: Kind) -> Option<Result<(Func, Kind), BindingError>> {
    NAMES.contains(&cx.name).then(|| compile_known(cx, input))
}

fn compile_known(cx: &Ctx<'_>, input: Kind) -> Result<(Func, Kind), BindingError> {
    cx.int_input(input)?;
    if cx.call.args.len() == 2 {
        return Err(cx.bad(cx.call.at, "takes 1 or 3 argument(s), not 2"));
    }
    cx.arity(1, 3)?;
    let path = cx.string(0)?;
    let (want_dims, limit) = if cx.call.args.len() == 3 {
        (cx.int(1)?, cx.int(2)?)
    } else {
        (0, 0)
    };
    let ints = cx.name == "IVecReader";
    let kind = if ints { "ivec" } else { "fvec" };
    let mut file = File::open(&path).map_err(|e| {
        cx.bad(
            cx.at(0),
            format!(
                "cannot read the {kind} file `{path}` ({e}, from {}); NB5's users download the \
                 vector datasets (the `*_base_vectors.fvec`, `*_query_vectors.fvec`, \
                 `*_indices_query.ivec`, `*_distances_count.fvec` sets named in the workload's \
                 description) into `testdata/` beside the run: copy the file there, or give \
                 the workload's `dataset=`/`datafile=` template variable",
                std::env::current_dir()
                    .map(|d| d.display().to_string())
                    .unwrap_or_else(|_| "the working directory".into())
            ),
        )
    })?;
    let bad = |what: String| cx.bad(cx.at(0), format!("reads `{path}`: {what}"));
    let size = file.metadata().map_err(|e| bad(e.to_string()))?.len();
    let mut head = [0u8; 4];
    file.read_exact(&mut head)
        .map_err(|_| bad("the file is shorter than one record's dimension".into()))?;
    let dims = i32::from_le_bytes(head);
    if dims <= 0 {
        return Err(bad(format!("the first record's dimension is {dims}")));
    }
    if want_dims > 0 && want_dims != i128::from(dims) {
        return Err(bad(format!(
            "the dimension is {dims}, but {want_dims} was asked"
        )));
    }
    let reclen = 4 + 4 * dims as u64;
    if size % reclen != 0 {
        return Err(bad(format!(
            "its size ({size} bytes) is not a multiple of the record length ({reclen} bytes)"
        )));
    }
    let total = size / reclen;
    if limit < 0 || limit as u64 > total {
        return Err(bad(format!(
            "{limit} records were asked, and the file has {total}"
        )));
    }
    let records = if limit == 0 { total } else { limit as u64 };
    let x = XVec {
        path,
        file: Arc::new(Mutex::new(file)),
        dims: dims as usize,
        records,
        ints,
    };
    Ok((Func::XVec(Box::new(x)), Kind::List))
}
