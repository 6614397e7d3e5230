//! Compiling a binding's calls into a [`Chain`]: arity, argument and kind
//! checks, NoSQLBench aliases and `-> type` annotations, each with a message
//! that says how the function is called.

use super::zipf::Zipf;
use super::{Chain, Func, NAMES};
use crate::activity::bindings::error::BindingError;
use crate::activity::bindings::hash::seed_key;
use crate::activity::bindings::nb5::{ALIASES, UNSUPPORTED, char_sets};
use crate::activity::bindings::parse::{Arg, Call};
use crate::activity::bindings::value::{Kind, Value};
use crate::activity::suggest;

/// How each function is called, for messages.
fn usage(name: &str) -> &'static str {
    match name {
        "Identity" => "`Identity()`",
        "Hash" => "`Hash()` or `Hash(seed)` with an integer seed",
        "Mod" => "`Mod(n)` with an integer n > 0",
        "Add" => "`Add(n)` with an integer n",
        "Mul" => "`Mul(n)` with an integer n >= 0",
        "Div" => "`Div(n)` with an integer n > 0",
        "Range" => "`Range(min, max)` or `Range(max)` with integers min < max (max excluded)",
        "Uniform" => "`Uniform(min, max)` with numbers min < max",
        "Normal" => "`Normal(mean, stddev)` with stddev > 0",
        "Zipf" => "`Zipf(n, exponent)` with an integer n >= 1 and exponent > 0",
        "Chance" => "`Chance(p)` with 0 <= p <= 1",
        "WeightedChoice" => "`WeightedChoice('a:3,b:1,c')` (weight 1 when left out)",
        "Choice" => "`Choice('a', 'b', 'c')` with at least one string",
        "Uuid" => "`Uuid()`",
        "AlphaNum" => "`AlphaNum(length)` with a length from 0 to 65536",
        "Template" => "`Template('user-{}-{}', Mod(100), Hash())`: one chain per `{}`, or none",
        "ToString" => "`ToString()`",
        "ToFloat" => "`ToFloat()`",
        "ToInt" => "`ToInt()`",
        "Round" => "`Round(digits)` with 0 <= digits <= 15",
        "Prefix" => "`Prefix('text')`",
        "Suffix" => "`Suffix('text')`",
        "HashRange" => {
            "`HashRange(max)` or `HashRange(min, max)` with integers, min <= max (max included)"
        }
        "NumberNameToString" => "`NumberNameToString()`",
        "Combinations" => {
            "`Combinations('A-Z;0-9')`: one set of characters per position, separated by `;`"
        }
        "WeightedStrings" => "`WeightedStrings('a:3;b:1;c')` (weight 1 when left out)",
        "FixedValues" => "`FixedValues(1, 5, 9)` or `FixedValues('a', 'b')`: literals of one type",
        "ToUUID" => "`ToUUID()`",
        "Clamp" => "`Clamp(min, max)` with min <= max",
        "Min" => "`Min(n)`",
        "Max" => "`Max(n)`",
        "Discard" => "`Discard()`",
        "Token" => "`Token('TOKEN', 'AUTH_URI', 'UID', 'PASSWORD')` with the token given",
        other => super::extra::usage(other)
            .or_else(|| super::time::usage(other))
            .or_else(|| super::coll::usage(other))
            .or_else(|| super::xvec::usage(other))
            .or_else(|| super::names::usage(other))
            .or_else(|| super::text::usage(other))
            .or_else(|| super::coin::usage(other))
            .unwrap_or("`Constant('text')` or `Constant(42)`"),
    }
}

/// Compiles parsed calls into a chain whose input is of kind `input`.
///
/// `Uniform(min, max)` with integers is NB5's discrete form (an integer from
/// min to max) where the chain needs an integer: a `-> int` after it, or a
/// next function that refuses a float (NB5's resolver picks the overload that
/// makes the chain valid).
pub(crate) fn compile(binding: &str, calls: &[Call], input: Kind) -> Result<Chain, BindingError> {
    let mut int_uniform: Vec<bool> = calls.iter().map(super::overload::wants_int).collect();
    loop {
        match compile_with(binding, calls, input, &int_uniform) {
            Err(BindingError::TypeMismatch { at, .. })
                if calls.iter().position(|c| c.at == at).is_some_and(|i| {
                    i > 0 && !int_uniform[i - 1] && super::overload::is_int_uniform(&calls[i - 1])
                }) =>
            {
                let i = calls.iter().position(|c| c.at == at).unwrap_or(0);
                int_uniform[i - 1] = true;
            }
            other => return other,
        }
    }
}

fn compile_with(
    binding: &str,
    calls: &[Call],
    input: Kind,
    int_uniform: &[bool],
) -> Result<Chain, BindingError> {
    let mut kind = input;
    let mut funcs = Vec::with_capacity(calls.len());
    for (i, call) in calls.iter().enumerate() {
        let (func, out) = compile_call(binding, call, kind, int_uniform[i])?;
        funcs.push(func);
        kind = out;
        if let Some((ty, at)) = &call.ty {
            if let Some((func, out)) = annotation(binding, kind, ty, *at)? {
                funcs.push(func);
                kind = out;
            }
        }
    }
    Ok(Chain { funcs, out: kind })
}

/// The conversion a NoSQLBench `-> type` annotation asks of a value of kind
/// `out`, and the kind after it: `String` converts to text, integer types
/// (`int`, `long`, `short`, `byte`) convert a float by truncation and keep an
/// integer as it is, `double` and `float` convert a number to a float, `boolean`
/// checks, and `Object` (or `UUID`) accepts the value as the chain gives it.
/// Java's boxed and `java.lang.` names are the same types.
fn annotation(
    binding: &str,
    out: Kind,
    ty: &str,
    at: usize,
) -> Result<Option<(Func, Kind)>, BindingError> {
    let short = ty.rsplit('.').next().unwrap_or(ty);
    let bad = |takes: &'static str| BindingError::TypeMismatch {
        binding: binding.to_string(),
        at,
        function: format!("-> {ty}"),
        takes,
        gets: out,
    };
    match short {
        "String" | "string" | "CharSequence" => {
            Ok((out != Kind::Str).then_some((Func::ToString, Kind::Str)))
        }
        "int" | "Integer" | "long" | "Long" | "short" | "Short" | "byte" | "Byte" => match out {
            Kind::U64 | Kind::I64 => Ok(None),
            Kind::F64 => Ok(Some((Func::ToInt, Kind::I64))),
            _ => Err(bad("a number")),
        },
        "double" | "Double" => match out {
            Kind::F64 => Ok(None),
            Kind::U64 | Kind::I64 => Ok(Some((Func::ToFloat, Kind::F64))),
            _ => Err(bad("a number")),
        },
        // Java's `float`: single precision, displayed as `Float.toString`.
        "float" | "Float" => match out {
            Kind::F64 | Kind::U64 | Kind::I64 => Ok(Some((Func::ToF32, Kind::F64))),
            _ => Err(bad("a number")),
        },
        "boolean" | "Boolean" | "bool" => match out {
            Kind::Bool => Ok(None),
            _ => Err(bad("a boolean")),
        },
        "Object" | "UUID" => Ok(None),
        _ => Err(BindingError::Syntax {
            binding: binding.to_string(),
            at,
            what: format!("unknown type `{ty}` after `->`"),
            fix: "use `String`, `int`, `long`, `double`, `float`, `boolean` or `Object` \
                  (see docs/nb5.md)"
                .to_string(),
        }),
    }
}

pub(crate) struct Ctx<'a> {
    pub(crate) binding: &'a str,
    pub(crate) call: &'a Call,
    /// The function's name here (an NB5 alias resolved).
    pub(crate) name: &'a str,
}

impl Ctx<'_> {
    pub(crate) fn bad(&self, at: usize, what: impl Into<String>) -> BindingError {
        BindingError::BadArguments {
            binding: self.binding.to_string(),
            at,
            function: self.call.name.clone(),
            what: what.into(),
            usage: usage(self.name),
        }
    }

    pub(crate) fn arity(&self, min: usize, max: usize) -> Result<(), BindingError> {
        let n = self.call.args.len();
        if n < min || n > max {
            let want = if min == max {
                format!("{min}")
            } else {
                format!("{min} to {max}")
            };
            return Err(self.bad(self.call.at, format!("takes {want} argument(s), not {n}")));
        }
        Ok(())
    }

    /// Argument `i`, `other`, is not the kind the function needs.
    pub(crate) fn wrong(&self, i: usize, other: &Arg, needs: &str) -> BindingError {
        self.bad(
            other.at(),
            format!(
                "needs {needs} for argument {}, not {}",
                i + 1,
                other.describe()
            ),
        )
    }

    pub(crate) fn int(&self, i: usize) -> Result<i128, BindingError> {
        match &self.call.args[i] {
            Arg::Int(v, _) => Ok(*v),
            other => Err(self.wrong(i, other, "an integer")),
        }
    }

    pub(crate) fn num(&self, i: usize) -> Result<f64, BindingError> {
        match &self.call.args[i] {
            Arg::Int(v, _) => Ok(*v as f64),
            Arg::Float(v, _) => Ok(*v),
            other => Err(self.wrong(i, other, "a number")),
        }
    }

    pub(crate) fn string(&self, i: usize) -> Result<String, BindingError> {
        match &self.call.args[i] {
            Arg::Str(s, _) => Ok(s.clone()),
            other => Err(self.wrong(i, other, "a quoted string")),
        }
    }

    pub(crate) fn at(&self, i: usize) -> usize {
        self.call.args[i].at()
    }
}

fn compile_call(
    binding: &str,
    call: &Call,
    input: Kind,
    int_uniform: bool,
) -> Result<(Func, Kind), BindingError> {
    let name = ALIASES
        .iter()
        .find(|(nb5, _)| *nb5 == call.name)
        .map_or(call.name.as_str(), |(_, ours)| ours);
    if let Some((_, instead)) = UNSUPPORTED.iter().find(|(n, _)| *n == name) {
        return Err(BindingError::Unsupported {
            binding: binding.to_string(),
            at: call.at,
            name: name.to_string(),
            instead,
        });
    }
    let cx = Ctx {
        binding,
        call,
        name,
    };
    if let Some(dataset) = dataset_reader(&cx).filter(|_| !super::xvec::NAMES.contains(&name)) {
        return Err(dataset);
    }
    if let Some(out) = super::overload::compile(&cx, input, int_uniform)
        .or_else(|| super::extra::compile(&cx, input))
        .or_else(|| super::time::compile(&cx, input))
        .or_else(|| super::coll::compile(&cx, input))
        .or_else(|| super::xvec::compile(&cx, input))
        .or_else(|| super::names::compile(&cx, input))
        .or_else(|| super::text::compile(&cx, input))
        .or_else(|| super::coin::compile(&cx, input))
    {
        return out;
    }
    if !NAMES.contains(&name) {
        let known = NAMES
            .iter()
            .chain(super::extra::NAMES)
            .chain(super::time::NAMES)
            .chain(super::coll::NAMES)
            .chain(super::xvec::NAMES)
            .chain(super::names::NAMES)
            .chain(super::text::NAMES)
            .chain(super::coin::NAMES)
            .chain(ALIASES.iter().map(|(n, _)| n))
            .copied();
        return Err(BindingError::UnknownFunction {
            binding: binding.to_string(),
            at: call.at,
            name: name.to_string(),
            suggestion: suggest::nearest(name, known).map(str::to_string),
        });
    }
    let takes: Option<&'static str> = match name {
        "Hash" | "Mod" | "Add" | "Mul" | "Div" | "Range" | "Uniform" | "Normal" | "Zipf"
        | "Chance" | "WeightedChoice" | "Choice" | "Uuid" | "AlphaNum" | "HashRange"
        | "NumberNameToString" | "Combinations" | "WeightedStrings" | "FixedValues" | "ToUUID" => {
            (!input.is_int()).then_some("an integer")
        }
        "ToFloat" | "ToInt" | "Clamp" | "Min" | "Max" => {
            (!(input.is_int() || input == Kind::F64)).then_some("a number")
        }
        "Round" => (input != Kind::F64).then_some("a float"),
        _ => None,
    };
    if let Some(takes) = takes {
        return Err(BindingError::TypeMismatch {
            binding: binding.to_string(),
            at: call.at,
            function: name.to_string(),
            takes,
            gets: input,
        });
    }
    let out = match name {
        "Identity" => {
            cx.arity(0, 0)?;
            (Func::Identity, input)
        }
        "Hash" => {
            cx.arity(0, 1)?;
            let seed = if call.args.is_empty() { 0 } else { cx.int(0)? };
            let seed = u64::try_from(seed).map_err(|_| cx.bad(cx.at(0), "needs a seed >= 0"))?;
            (Func::Hash(seed_key(seed)), Kind::U64)
        }
        "Mod" | "Div" => {
            cx.arity(1, 1)?;
            let n = cx.int(0)?;
            if n <= 0 || n > i64::MAX as i128 {
                return Err(cx.bad(cx.at(0), format!("needs n > 0, not {n}")));
            }
            let f = if name == "Mod" {
                Func::Mod(n as u64)
            } else {
                Func::Div(n as u64)
            };
            let out = if name == "Mod" { Kind::U64 } else { input };
            (f, out)
        }
        "Add" => {
            cx.arity(1, 1)?;
            let n = i64::try_from(cx.int(0)?)
                .map_err(|_| cx.bad(cx.at(0), "needs n to fit a signed 64-bit integer"))?;
            (Func::Add(n), input)
        }
        "Mul" => {
            cx.arity(1, 1)?;
            let n = cx.int(0)?;
            if n < 0 || n > i64::MAX as i128 {
                return Err(cx.bad(cx.at(0), format!("needs 0 <= n <= 2^63 - 1, not {n}")));
            }
            (Func::Mul(n as u64), input)
        }
        "Range" => {
            cx.arity(1, 2)?;
            let (min, max) = match call.args.len() {
                1 => (0, cx.int(0)?),
                _ => (cx.int(0)?, cx.int(1)?),
            };
            if min >= max || min < i64::MIN as i128 || max > i64::MAX as i128 {
                return Err(cx.bad(
                    cx.at(0),
                    format!("needs min < max within signed 64-bit integers, not {min}, {max}"),
                ));
            }
            let f = Func::Range {
                min: min as i64,
                width: (max - min) as u64,
                signed: min < 0,
            };
            (f, if min < 0 { Kind::I64 } else { Kind::U64 })
        }
        "Uniform" => {
            cx.arity(2, 2)?;
            let (min, max) = (cx.num(0)?, cx.num(1)?);
            if min >= max || !(max - min).is_finite() {
                return Err(cx.bad(cx.at(0), format!("needs min < max, not {min}, {max}")));
            }
            (
                Func::Uniform {
                    min,
                    span: max - min,
                },
                Kind::F64,
            )
        }
        "Normal" => {
            cx.arity(2, 2)?;
            let (mean, stddev) = (cx.num(0)?, cx.num(1)?);
            if stddev <= 0.0 || !stddev.is_finite() {
                return Err(cx.bad(cx.at(1), format!("needs stddev > 0, not {stddev}")));
            }
            (Func::Normal { mean, stddev }, Kind::F64)
        }
        "Zipf" => {
            cx.arity(2, 2)?;
            let n = cx.int(0)?;
            let s = cx.num(1)?;
            if !(1..=1i128 << 53).contains(&n) {
                return Err(cx.bad(cx.at(0), format!("needs 1 <= n <= 2^53, not {n}")));
            }
            if s <= 0.0 || s > 100.0 {
                return Err(cx.bad(cx.at(1), format!("needs 0 < exponent <= 100, not {s}")));
            }
            (Func::Zipf(Box::new(Zipf::new(n as u64, s))), Kind::U64)
        }
        "Chance" => {
            cx.arity(1, 1)?;
            let p = cx.num(0)?;
            if !(0.0..=1.0).contains(&p) {
                return Err(cx.bad(cx.at(0), format!("needs 0 <= p <= 1, not {p}")));
            }
            (Func::Chance(p), Kind::Bool)
        }
        "WeightedChoice" | "WeightedStrings" => {
            cx.arity(1, 1)?;
            let spec = cx.string(0)?;
            let sep = if name == "WeightedStrings" { ';' } else { ',' };
            let mut items = Vec::new();
            let mut weights = Vec::new();
            for part in spec.split(sep) {
                let part = part.trim();
                let (item, w) = match part.rsplit_once(':') {
                    Some((item, w)) => {
                        let w: f64 = w.trim().parse().map_err(|_| {
                            cx.bad(
                                cx.at(0),
                                format!("has a bad weight `{}` in `{part}`", w.trim()),
                            )
                        })?;
                        (item.trim(), w)
                    }
                    None => (part, 1.0),
                };
                if !(w.is_finite() && w >= 0.0) {
                    return Err(cx.bad(cx.at(0), format!("needs weights >= 0, not `{part}`")));
                }
                items.push(item.to_string());
                weights.push(w);
            }
            (choice(&cx, items, weights)?, Kind::Str)
        }
        "Choice" => {
            cx.arity(1, usize::MAX)?;
            let items = (0..call.args.len())
                .map(|i| cx.string(i))
                .collect::<Result<Vec<_>, _>>()?;
            let weights = vec![1.0; items.len()];
            (choice(&cx, items, weights)?, Kind::Str)
        }
        "Uuid" => {
            cx.arity(0, 0)?;
            (Func::Uuid, Kind::Str)
        }
        "AlphaNum" => {
            cx.arity(1, 1)?;
            let n = cx.int(0)?;
            if !(0..=65_536).contains(&n) {
                return Err(cx.bad(cx.at(0), format!("needs 0 <= length <= 65536, not {n}")));
            }
            (Func::AlphaNum(n as usize), Kind::Str)
        }
        "Template" => {
            cx.arity(1, usize::MAX)?;
            let text = cx.string(0)?;
            let parts: Vec<String> = text.split("{}").map(str::to_string).collect();
            let holes = parts.len() - 1;
            let mut args = Vec::new();
            for (i, arg) in call.args.iter().enumerate().skip(1) {
                match arg {
                    Arg::Chain(calls, _) => args.push(compile(binding, calls, input)?),
                    other => return Err(cx.wrong(i, other, "a function chain")),
                }
            }
            if !args.is_empty() && args.len() != holes {
                return Err(cx.bad(
                    call.at,
                    format!(
                        "has {holes} `{{}}` but {} chain(s) to fill them",
                        args.len()
                    ),
                ));
            }
            (Func::Template { parts, args }, Kind::Str)
        }
        "ToString" => {
            cx.arity(0, 0)?;
            (Func::ToString, Kind::Str)
        }
        "ToFloat" => {
            cx.arity(0, 0)?;
            (Func::ToFloat, Kind::F64)
        }
        "ToInt" => {
            cx.arity(0, 0)?;
            (Func::ToInt, Kind::I64)
        }
        "Round" => {
            cx.arity(1, 1)?;
            let d = cx.int(0)?;
            if !(0..=15).contains(&d) {
                return Err(cx.bad(cx.at(0), format!("needs 0 <= digits <= 15, not {d}")));
            }
            if d == 0 {
                // A whole number is an integer (`248`, not `248.0`).
                return Ok((Func::RoundInt, Kind::I64));
            }
            let factor = (0..d).fold(1.0, |f, _| f * 10.0);
            (Func::Round(factor), Kind::F64)
        }
        // NB5's `Discard()` (`from_long/to_object/Discard.java`): the input is
        // dropped; the value is the text `discard`.
        "Discard" => {
            cx.arity(0, 0)?;
            (Func::Constant(Value::Str("discard".into())), Kind::Str)
        }
        // NB5's `Token(token, uri, uid, password)`: the token given; NB5
        // fetches one from a Stargate auth service when none is.
        "Token" => {
            cx.arity(4, 4)?;
            let token = cx.string(0)?;
            let token = if token.trim().is_empty() {
                let (uri, uid, pw) = (cx.string(1)?, cx.string(2)?, cx.string(3)?);
                super::extra::fetch_token(uri.trim(), uid.trim(), pw.trim()).map_err(|why| {
                    cx.bad(
                        cx.at(0),
                        format!(
                            "has no token, and fetching one failed: {why}. NB5 fetches it from \
                             this auth service too, when the binding is made; start the service, \
                             or give a token: `auth_token=TOKEN` on the command line (the file's \
                             template variable), or as the first argument"
                        ),
                    )
                })?
            } else {
                token.trim().to_string()
            };
            (Func::Constant(Value::Str(token)), Kind::Str)
        }
        "Prefix" | "Suffix" => {
            cx.arity(1, 1)?;
            let s = cx.string(0)?;
            let f = if name == "Prefix" {
                Func::Prefix(s)
            } else {
                Func::Suffix(s)
            };
            (f, Kind::Str)
        }
        // NB5's `to_double.HashRange(double, double)`: floats given, a hashed
        // float from min (included) to max.
        "HashRange" if call.args.iter().any(|a| matches!(a, Arg::Float(..))) => {
            cx.arity(2, 2)?;
            let (min, max) = (cx.num(0)?, cx.num(1)?);
            if min > max || !(max - min).is_finite() {
                return Err(cx.bad(cx.at(0), format!("needs min <= max, not {min}, {max}")));
            }
            (
                Func::Uniform {
                    min,
                    span: max - min,
                },
                Kind::F64,
            )
        }
        "HashRange" => {
            cx.arity(1, 2)?;
            let (min, max) = match call.args.len() {
                1 => (0, cx.int(0)? - 1),
                _ => (cx.int(0)?, cx.int(1)?),
            };
            if min > max || min < i64::MIN as i128 || max >= i64::MAX as i128 {
                return Err(cx.bad(
                    cx.at(0),
                    format!("needs min <= max within signed 64-bit integers, not {min}, {max}"),
                ));
            }
            let f = Func::HashRange {
                min: min as i64,
                width: (max - min + 1) as u64,
                signed: min < 0,
            };
            (f, if min < 0 { Kind::I64 } else { Kind::U64 })
        }
        "NumberNameToString" => {
            cx.arity(0, 0)?;
            (Func::NumberName, Kind::Str)
        }
        "Combinations" => {
            cx.arity(1, 1)?;
            let sets = char_sets(&cx.string(0)?).map_err(|what| cx.bad(cx.at(0), what))?;
            (Func::Combinations(sets), Kind::Str)
        }
        "FixedValues" => {
            cx.arity(1, usize::MAX)?;
            let items = (0..call.args.len())
                .map(|i| literal(&cx, i))
                .collect::<Result<Vec<_>, _>>()?;
            let kind = items[0].kind();
            if let Some(i) = items.iter().position(|v| v.kind() != kind) {
                return Err(cx.bad(
                    cx.at(i),
                    format!(
                        "needs values of one type: argument 1 is {kind}, argument {} is {}",
                        i + 1,
                        items[i].kind()
                    ),
                ));
            }
            (Func::Pick(items), kind)
        }
        "ToUUID" => {
            cx.arity(0, 0)?;
            (Func::ToUuid, Kind::Str)
        }
        "Clamp" | "Min" | "Max" => {
            let n = if name == "Clamp" { 2 } else { 1 };
            cx.arity(n, n)?;
            if input == Kind::F64 {
                let (lo, hi) = match name {
                    "Clamp" => (cx.num(0)?, cx.num(1)?),
                    "Min" => (f64::NEG_INFINITY, cx.num(0)?),
                    _ => (cx.num(0)?, f64::INFINITY),
                };
                if lo.is_nan() || hi.is_nan() || lo > hi {
                    return Err(cx.bad(call.at, format!("needs min <= max, not {lo}, {hi}")));
                }
                (Func::ClampFloat { lo, hi }, Kind::F64)
            } else {
                let (tmin, tmax) = if input == Kind::I64 {
                    (i64::MIN as i128, i64::MAX as i128)
                } else {
                    (0, u64::MAX as i128)
                };
                let (lo, hi) = match name {
                    "Clamp" => (cx.int(0)?, cx.int(1)?),
                    "Min" => (tmin, cx.int(0)?),
                    _ => (cx.int(0)?, tmax),
                };
                if lo > hi {
                    return Err(cx.bad(call.at, format!("needs min <= max, not {lo}, {hi}")));
                }
                (
                    Func::ClampInt {
                        lo: lo.clamp(tmin, tmax),
                        hi: hi.clamp(tmin, tmax),
                    },
                    input,
                )
            }
        }
        _ => {
            cx.arity(1, 1)?;
            let v = match &call.args[0] {
                Arg::Str(s, _) => Value::Str(s.clone()),
                Arg::Int(i, _) if *i >= 0 => Value::U64(*i as u64),
                Arg::Int(i, _) => Value::I64(*i as i64),
                Arg::Float(f, _) => Value::F64(*f),
                other => return Err(cx.bad(other.at(), "needs a literal, not a function chain")),
            };
            let k = v.kind();
            (Func::Constant(v), k)
        }
    };
    Ok(out)
}

/// Argument `i` as a literal value.
fn literal(cx: &Ctx<'_>, i: usize) -> Result<Value, BindingError> {
    Ok(match &cx.call.args[i] {
        Arg::Str(s, _) => Value::Str(s.clone()),
        Arg::Int(v, _) if *v >= 0 => Value::U64(*v as u64),
        Arg::Int(v, _) => Value::I64(*v as i64),
        Arg::Float(f, _) => Value::F64(*f),
        other => return Err(cx.bad(other.at(), "needs a literal, not a function chain")),
    })
}

fn choice(cx: &Ctx<'_>, items: Vec<String>, weights: Vec<f64>) -> Result<Func, BindingError> {
    let mut total = 0.0;
    let cumulative: Vec<f64> = weights
        .iter()
        .map(|w| {
            total += w;
            total
        })
        .collect();
    if items.is_empty() || total <= 0.0 {
        return Err(cx.bad(cx.call.at, "needs at least one item with a weight above 0"));
    }
    Ok(Func::Choice { items, cumulative })
}

/// NB5's readers of vector datasets (HDF5, fvec, ivec): not here. The error
/// names the file the step needs, and where NB5's users get it.
fn dataset_reader(cx: &Ctx<'_>) -> Option<BindingError> {
    const READERS: &[&str] = &[
        "HdfFileToFloatList",
        "HdfFileToFloatArray",
        "HdfFileToIntArray",
        "HdfFileToLongArray",
        "HdfFileToLongList",
        "HdfFileToIntList",
        "HdfDatasetToStrings",
        "HdfDatasetToString",
        "FVecReader",
        "IVecReader",
    ];
    if !READERS.contains(&cx.name) {
        return None;
    }
    let file = match cx.call.args.first() {
        Some(Arg::Str(s, _)) => format!("`{s}`"),
        _ => "a dataset file".to_string(),
    };
    let dataset = match cx.call.args.get(1) {
        Some(Arg::Str(s, _)) => format!(" (dataset `{s}`)"),
        _ => String::new(),
    };
    Some(BindingError::Syntax {
        binding: cx.binding.to_string(),
        at: cx.call.at,
        what: format!(
            "`{}` reads vectors from {file}{dataset}, and paceline has no HDF5, fvec or ivec \
             reader",
            cx.name
        ),
        fix: "NB5's users download these files (ann-benchmarks' `*.hdf5`, the `*.fvec` and \
              `*.ivec` sets) into `testdata/`; to render this step here, write a synthetic \
              binding in its place (docs/nb5.md)"
            .to_string(),
    })
}
