//! NB5's functions over whole files and its `Save*` functions: `FirstLines`,
//! `ModuloLineToString`, and `SaveString`/`SaveLong`/... (the value passes
//! through; the `Load*` that would read it back are not supported, so nothing
//! here can observe the saved state).

use super::Func;
use super::compile::Ctx;
use crate::activity::bindings::error::BindingError;
use crate::activity::bindings::value::{Kind, Value};

/// The names compiled here.
pub(crate) const NAMES: &[&str] = &[
    "FirstLines",
    "ModuloLineToString",
    "Save",
    "SaveString",
    "SaveLong",
    "SaveDouble",
    "SaveInteger",
    "SaveFloat",
];

/// How each function here is called, for messages.
pub(crate) fn usage(name: &str) -> Option<&'static str> {
    Some(match name {
        "FirstLines" => "`FirstLines('FILE')` or `FirstLines('FILE', n)` with n >= 1",
        "ModuloLineToString" => "`ModuloLineToString('FILE')`: line `input mod lines`",
        n if n.starts_with("Save") => "`SaveString('name')`: the value passes through",
        _ => return None,
    })
}

/// Lines of a file, as NB5's `NBIO.readLines`: split at line ends, a final
/// line end ending the last line.
fn lines(text: &str) -> Vec<String> {
    text.lines().map(str::to_string).collect()
}

/// Compiles a function of this file, or `None` when `name` is not one of them.
pub(crate) fn compile(cx: &Ctx<'_>, input: Kind) -> Option<Result<(Func, Kind), BindingError>> {
    NAMES.contains(&cx.name).then(|| compile_known(cx, input))
}

fn compile_known(cx: &Ctx<'_>, input: Kind) -> Result<(Func, Kind), BindingError> {
    match cx.name {
        // `unary_string/FirstLines.java`: the first line for n = 1; else the
        // first n - 1 lines joined with nothing between (NB5 takes
        // `subList(0, n - 1)`), n capped at the line count.
        "FirstLines" => {
            cx.arity(1, 2)?;
            let path = cx.string(0)?;
            let n = if cx.call.args.len() == 2 {
                cx.int(1)?
            } else {
                1
            };
            if n < 1 {
                return Err(cx.bad(cx.at(1), format!("needs n >= 1, not {n}")));
            }
            let all = lines(&super::extra::read_file(cx, &path)?);
            if all.is_empty() {
                return Err(cx.bad(cx.at(0), format!("reads `{path}`, which is empty")));
            }
            let text = if n == 1 {
                all[0].clone()
            } else {
                let n = (n as usize).min(all.len());
                all[..n - 1].concat()
            };
            Ok((Func::Constant(Value::Str(text)), Kind::Str))
        }
        // `from_long/to_string/ModuloLineToString.java`: line `input mod count`.
        "ModuloLineToString" => {
            cx.arity(1, 1)?;
            cx.int_input(input)?;
            let path = cx.string(0)?;
            let all = lines(&super::extra::read_file(cx, &path)?);
            if all.is_empty() {
                return Err(cx.bad(cx.at(0), format!("reads `{path}`, which is empty")));
            }
            let items = all.into_iter().map(Value::Str).collect();
            Ok((Func::Pick(items), Kind::Str))
        }
        _ => {
            cx.arity(1, 1)?;
            cx.string(0)?;
            Ok((Func::Identity, input))
        }
    }
}
