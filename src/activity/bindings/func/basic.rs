//! The basic functions (paceline's own and NB5's arithmetic, choices,
//! templates and conversions): the kind each takes, its arguments checked,
//! compiled into a [`Func`]. NB5's others are compiled in the files named
//! in `compile.rs`.

use super::Func;
use super::ctx::Ctx;
use super::zipf::Zipf;
use crate::activity::bindings::error::BindingError;
use crate::activity::bindings::hash::seed_key;
use crate::activity::bindings::nb5::char_sets;
use crate::activity::bindings::parse::Arg;
use crate::activity::bindings::value::{Kind, Value};

/// Compiles one of the basic functions (a name in [`super::NAMES`]) over an
/// input of kind `input`.
pub(super) fn compile(cx: &Ctx<'_>, input: Kind) -> Result<(Func, Kind), BindingError> {
    let (binding, call, name) = (cx.binding, cx.call, cx.name);
    let takes: Option<&'static str> = match name {
        "Hash" | "Mod" | "Add" | "Mul" | "Div" | "Range" | "Uniform" | "Normal" | "Levy"
        | "Zipf" | "Chance" | "WeightedChoice" | "Choice" | "Uuid" | "AlphaNum" | "HashRange"
        | "NumberNameToString" | "Combinations" | "WeightedStrings" | "WeightedLongs"
        | "FixedValues" | "ToUUID" => (!input.is_int()).then_some("an integer"),
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
        // NB5's `curves4` `Levy(mu, c)`: commons-statistics'
        // `LevyDistribution` sampled at a hashed unit value by its inverse
        // CDF, `mu + c / (2 erfcinv(p)^2)`, which is `mu + c / q^2` with q the
        // normal quantile of p / 2.
        "Levy" => {
            cx.arity(2, 2)?;
            let (mu, c) = (cx.num(0)?, cx.num(1)?);
            if c <= 0.0 || !c.is_finite() || !mu.is_finite() {
                return Err(cx.bad(cx.at(1), format!("needs a scale c > 0, not {c}")));
            }
            (Func::Levy { mu, c }, Kind::F64)
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
        "WeightedChoice" => {
            cx.arity(1, 1)?;
            let spec = cx.string(0)?;
            let (items, weights) = weighted(cx, spec.split(',').map(str::to_string).collect())?;
            let items = items.into_iter().map(Value::Str).collect();
            (choice(cx, items, weights)?, Kind::Str)
        }
        // NB5's `from_long/to_string/WeightedStrings.java` and
        // `from_long/to_long/WeightedLongs.java`: items split at `;` (and `,`
        // for strings) as Java's `String.split` splits, trailing empty items
        // dropped; each `value:weight` split at its first `:`.
        "WeightedStrings" | "WeightedLongs" => {
            cx.arity(1, 1)?;
            let spec = cx.string(0)?;
            let longs = name == "WeightedLongs";
            let (items, weights) = weighted(
                cx,
                java_split(&spec, if longs { &[';'] } else { &[';', ','] }),
            )?;
            if longs {
                let items = items
                    .iter()
                    .map(|item| {
                        item.parse::<i64>().map(Value::I64).map_err(|_| {
                            cx.bad(
                                cx.at(0),
                                format!("has `{item}`, which is not a long integer"),
                            )
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                (choice(cx, items, weights)?, Kind::I64)
            } else {
                let items = items.into_iter().map(Value::Str).collect();
                (choice(cx, items, weights)?, Kind::Str)
            }
        }
        "Choice" => {
            cx.arity(1, usize::MAX)?;
            let items = (0..call.args.len())
                .map(|i| cx.string(i))
                .collect::<Result<Vec<_>, _>>()?;
            let weights = vec![1.0; items.len()];
            let items = items.into_iter().map(Value::Str).collect();
            (choice(cx, items, weights)?, Kind::Str)
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
                    Arg::Chain(calls, _) => {
                        args.push(super::compile::compile(binding, calls, input)?)
                    }
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
        // NB5's `util/Stringify.java`: `String.valueOf`, an array as
        // `Arrays.toString` (`[1.0, 2.5]`), which is how a list prints here.
        "ToString" | "Stringify" => {
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
                .map(|i| literal(cx, i))
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

fn choice(cx: &Ctx<'_>, items: Vec<Value>, weights: Vec<f64>) -> Result<Func, BindingError> {
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

/// Items of a weighted spec, `value:weight` or `value` (weight 1), trimmed.
/// A weight is read at the first `:`, as NB5's `split(":", 2)`.
fn weighted(cx: &Ctx<'_>, parts: Vec<String>) -> Result<(Vec<String>, Vec<f64>), BindingError> {
    let mut items = Vec::new();
    let mut weights = Vec::new();
    for part in &parts {
        let part = part.trim();
        let (item, w) = match part.split_once(':') {
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
    Ok((items, weights))
}

/// Java's `String.split` at any of `seps`: empty parts kept, except the
/// trailing ones (`'a;b;'` is two parts).
pub(crate) fn java_split(text: &str, seps: &[char]) -> Vec<String> {
    let mut parts: Vec<String> = text
        .split(|c| seps.contains(&c))
        .map(str::to_string)
        .collect();
    while parts.len() > 1 && parts.last().is_some_and(String::is_empty) {
        parts.pop();
    }
    parts
}
