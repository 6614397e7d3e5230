//! The overloads NB5's resolver picks by type: `Add`, `Mul` and `Div` over a
//! float (`Normal(0.0, 5.0); Add(100.0)`, `ToDouble(); Div(100.0d)`), and
//! `Uniform(min, max)` over integers as NB5's discrete `long->long` form where
//! the chain needs an integer (`Uniform(0, 9); Hash()`, `Uniform(0, 9) -> int`).
//! With them NB5's `HashRangeScaled`, whose range is the input itself.

use super::Func;
use super::compile::Ctx;
use crate::activity::bindings::error::BindingError;
use crate::activity::bindings::parse::{Arg, Call};
use crate::activity::bindings::value::Kind;

/// Float arithmetic: `x + n`, `x * n`, `x / n`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum FloatOp {
    Add,
    Mul,
    Div,
}

/// `Uniform` with two integer arguments: the call NB5 resolves to its
/// discrete `long->long` form when the chain needs an integer.
pub(crate) fn is_int_uniform(call: &Call) -> bool {
    call.name == "Uniform"
        && call.args.len() == 2
        && call.args.iter().all(|a| matches!(a, Arg::Int(..)))
}

/// Whether a `-> type` annotation asks for an integer.
pub(crate) fn wants_int(call: &Call) -> bool {
    call.ty.as_ref().is_some_and(|(t, _)| {
        matches!(
            t.rsplit('.').next().unwrap_or(t),
            "int" | "Integer" | "long" | "Long" | "short" | "Short" | "byte" | "Byte"
        )
    })
}

/// Compiles an overload of this file, or `None` when the call is not one.
pub(crate) fn compile(
    cx: &Ctx<'_>,
    input: Kind,
    int_uniform: bool,
) -> Option<Result<(Func, Kind), BindingError>> {
    let call = cx.call;
    match cx.name {
        "Add" | "Mul" | "Div"
            if call.args.len() == 1
                && (input == Kind::F64 || matches!(call.args[0], Arg::Float(..)))
                && (input.is_int() || input == Kind::F64) =>
        {
            Some(cx.num(0).and_then(|n| {
                let op = match cx.name {
                    "Add" => FloatOp::Add,
                    "Mul" => FloatOp::Mul,
                    _ if n == 0.0 => return Err(cx.bad(cx.at(0), "needs n != 0 (it divides)")),
                    _ => FloatOp::Div,
                };
                Ok((Func::FloatOp(op, n), Kind::F64))
            }))
        }
        "Uniform" if int_uniform && input.is_int() && is_int_uniform(call) => {
            Some(cx.int(0).and_then(|min| {
                let max = cx.int(1)?;
                if min > max || min < i64::MIN as i128 || max > i64::MAX as i128 {
                    return Err(cx.bad(
                        cx.at(0),
                        format!("needs min <= max within signed 64-bit integers, not {min}, {max}"),
                    ));
                }
                let f = Func::UniformInt {
                    min: min as i64,
                    width: (max - min + 1) as u128,
                };
                Ok((f, if min < 0 { Kind::I64 } else { Kind::U64 }))
            }))
        }
        // `from_long/to_long/HashRangeScaled.java`: `(hash(x) % x) * scale`,
        // truncated to a long; 0 for 0.
        "HashRangeScaled" if input.is_int() => Some(cx.arity(0, 1).and_then(|_| {
            let scale = if call.args.is_empty() {
                1.0
            } else {
                cx.num(0)?
            };
            Ok((Func::HashRangeScaled(scale), Kind::I64))
        })),
        _ => None,
    }
}
