//! The binding functions: type checking at compile time, evaluation per cycle.

use super::error::BindingError;
use super::hash::{
    exp, exp_m1, hash_keyed, ln, ln_1p, mix64, normal_quantile, open_unit, seed_key, unit,
};
use super::nb5::{ALIASES, UNSUPPORTED, char_sets, number_name};
use super::parse::{Arg, Call};
use super::value::{Kind, Value};
use crate::activity::suggest;

/// Every function name, for messages.
pub(crate) const NAMES: &[&str] = &[
    "Identity",
    "Hash",
    "Mod",
    "Add",
    "Mul",
    "Div",
    "Range",
    "Uniform",
    "Normal",
    "Zipf",
    "Chance",
    "WeightedChoice",
    "Choice",
    "Uuid",
    "AlphaNum",
    "Template",
    "ToString",
    "ToFloat",
    "ToInt",
    "Round",
    "Prefix",
    "Suffix",
    "Constant",
    "HashRange",
    "NumberNameToString",
    "Combinations",
    "WeightedStrings",
    "FixedValues",
    "ToUUID",
    "Clamp",
    "Min",
    "Max",
];

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
        _ => "`Constant('text')` or `Constant(42)`",
    }
}

/// A compiled chain: functions applied in order to the cycle.
#[derive(Debug, Clone)]
pub(crate) struct Chain {
    funcs: Vec<Func>,
    out: Kind,
}

impl Chain {
    pub(crate) fn out(&self) -> Kind {
        self.out
    }

    #[inline]
    pub(crate) fn eval(&self, input: Value) -> Value {
        let mut v = input;
        for f in &self.funcs {
            v = f.apply(v);
        }
        v
    }
}

/// Rejection-inversion Zipf sampling (Hörmann and Derflinger, 1996), constants
/// computed once at compile time.
#[derive(Debug, Clone)]
pub(crate) struct Zipf {
    n: f64,
    exponent: f64,
    h_integral_x1: f64,
    h_integral_n: f64,
    s: f64,
}

impl Zipf {
    fn new(n: u64, exponent: f64) -> Self {
        let mut z = Zipf {
            n: n as f64,
            exponent,
            h_integral_x1: 0.0,
            h_integral_n: 0.0,
            s: 0.0,
        };
        z.h_integral_x1 = z.h_integral(1.5) - 1.0;
        z.h_integral_n = z.h_integral(n as f64 + 0.5);
        z.s = 2.0 - z.h_integral_inverse(z.h_integral(2.5) - z.h(2.0));
        z
    }

    fn h(&self, x: f64) -> f64 {
        exp(-self.exponent * ln(x))
    }

    fn h_integral(&self, x: f64) -> f64 {
        let log_x = ln(x);
        helper2((1.0 - self.exponent) * log_x) * log_x
    }

    fn h_integral_inverse(&self, x: f64) -> f64 {
        let t = (x * (1.0 - self.exponent)).max(-1.0);
        exp(helper1(t) * x)
    }

    /// The rank, 1..=n, for input `x`; each rejection round draws a fresh hash.
    fn sample(&self, x: u64) -> u64 {
        let mut k = 1.0;
        for round in 0..64u64 {
            let u01 = unit(hash_keyed(x, seed_key(round)));
            let u = self.h_integral_n + u01 * (self.h_integral_x1 - self.h_integral_n);
            let xx = self.h_integral_inverse(u);
            k = (xx + 0.5).floor().clamp(1.0, self.n);
            if k - xx <= self.s || u >= self.h_integral(k + 0.5) - self.h(k) {
                break;
            }
        }
        k as u64
    }
}

/// log(1 + x) / x, with its Taylor series near 0.
fn helper1(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        ln_1p(x) / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

/// (e^x - 1) / x, with its Taylor series near 0.
fn helper2(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        exp_m1(x) / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))
    }
}

#[derive(Debug, Clone)]
enum Func {
    Identity,
    Hash(u64),
    Mod(u64),
    Add(i64),
    Mul(u64),
    Div(u64),
    Range {
        min: i64,
        width: u64,
        signed: bool,
    },
    Uniform {
        min: f64,
        span: f64,
    },
    Normal {
        mean: f64,
        stddev: f64,
    },
    Zipf(Box<Zipf>),
    Chance(f64),
    Choice {
        items: Vec<String>,
        cumulative: Vec<f64>,
    },
    Uuid,
    AlphaNum(usize),
    Template {
        parts: Vec<String>,
        args: Vec<Chain>,
    },
    ToString,
    ToFloat,
    ToInt,
    Round(f64),
    /// `Round(0)`: half away from zero, as a signed integer.
    RoundInt,
    Prefix(String),
    Suffix(String),
    Constant(Value),
    /// `min + hash(x) mod width`: `Hash(); Range(min, max + 1)` in one step.
    HashRange {
        min: i64,
        width: u64,
        signed: bool,
    },
    NumberName,
    /// One character set per position; the last position turns fastest.
    Combinations(Vec<Vec<char>>),
    /// `items[x mod len]`.
    Pick(Vec<Value>),
    ToUuid,
    /// Integers clamped into `lo..=hi` (the input's kind kept).
    ClampInt {
        lo: i128,
        hi: i128,
    },
    ClampFloat {
        lo: f64,
        hi: f64,
    },
}

const ALPHANUM: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const UUID_SALT: u64 = 0x5555_AAAA_3333_CCCC;

impl Func {
    #[inline]
    fn apply(&self, v: Value) -> Value {
        match self {
            Func::Identity => v,
            Func::Hash(key) => Value::U64(hash_keyed(v.as_u64(), *key)),
            Func::Mod(n) => Value::U64(match v {
                Value::I64(i) => i.rem_euclid(*n as i64) as u64,
                other => other.as_u64() % n,
            }),
            Func::Add(n) => match v {
                Value::I64(i) => Value::I64(i.wrapping_add(*n)),
                other => Value::U64(other.as_u64().wrapping_add_signed(*n)),
            },
            Func::Mul(n) => match v {
                Value::I64(i) => Value::I64(i.wrapping_mul(*n as i64)),
                other => Value::U64(other.as_u64().wrapping_mul(*n)),
            },
            Func::Div(n) => match v {
                Value::I64(i) => Value::I64(i.div_euclid(*n as i64)),
                other => Value::U64(other.as_u64() / n),
            },
            Func::Range { min, width, signed } => {
                let off = v.as_u64() % width;
                let r = (*min as i128 + off as i128) as i64;
                if *signed {
                    Value::I64(r)
                } else {
                    Value::U64(r as u64)
                }
            }
            Func::Uniform { min, span } => Value::F64(min + span * unit(mix64(v.as_u64()))),
            Func::Normal { mean, stddev } => {
                Value::F64(mean + stddev * normal_quantile(open_unit(mix64(v.as_u64()))))
            }
            Func::Zipf(z) => Value::U64(z.sample(v.as_u64())),
            Func::Chance(p) => Value::Bool(unit(mix64(v.as_u64())) < *p),
            Func::Choice { items, cumulative } => {
                let total = cumulative[cumulative.len() - 1];
                let u = unit(mix64(v.as_u64())) * total;
                let i = cumulative.partition_point(|c| *c <= u).min(items.len() - 1);
                Value::Str(items[i].clone())
            }
            Func::Uuid => {
                let x = v.as_u64();
                let hi = (mix64(x) & !(0xF << 12)) | (0x4 << 12);
                let lo = (hash_keyed(x, UUID_SALT) & !(0b11 << 62)) | (0b10 << 62);
                Value::Str(format!(
                    "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
                    hi >> 32,
                    (hi >> 16) & 0xFFFF,
                    hi & 0xFFFF,
                    lo >> 48,
                    lo & 0xFFFF_FFFF_FFFF
                ))
            }
            Func::AlphaNum(len) => {
                let x = v.as_u64();
                let mut s = String::with_capacity(*len);
                let mut chunk = 0u64;
                while s.len() < *len {
                    let mut h = hash_keyed(x, seed_key(chunk + 1));
                    for _ in 0..10 {
                        if s.len() == *len {
                            break;
                        }
                        s.push(ALPHANUM[(h % 62) as usize] as char);
                        h /= 62;
                    }
                    chunk += 1;
                }
                Value::Str(s)
            }
            Func::Template { parts, args } => {
                use std::fmt::Write;
                let mut s = String::new();
                for (i, part) in parts.iter().enumerate() {
                    s.push_str(part);
                    if i + 1 < parts.len() {
                        let val = match args.get(i) {
                            Some(chain) => chain.eval(v.clone()),
                            None => v.clone(),
                        };
                        let _ = write!(s, "{val}");
                    }
                }
                Value::Str(s)
            }
            Func::ToString => Value::Str(v.into_string()),
            Func::ToFloat => Value::F64(v.as_f64()),
            Func::ToInt => Value::I64(match v {
                Value::U64(u) => u as i64,
                other => other.as_f64() as i64,
            }),
            Func::RoundInt => Value::I64(v.as_f64().round() as i64),
            Func::Round(factor) => Value::F64((v.as_f64() * factor).round() / factor),
            Func::Prefix(p) => {
                let mut s = p.clone();
                s.push_str(&v.into_string());
                Value::Str(s)
            }
            Func::Suffix(p) => {
                let mut s = v.into_string();
                s.push_str(p);
                Value::Str(s)
            }
            Func::Constant(c) => c.clone(),
            Func::HashRange { min, width, signed } => {
                let off = hash_keyed(v.as_u64(), seed_key(0)) % width;
                let r = (*min as i128 + off as i128) as i64;
                if *signed {
                    Value::I64(r)
                } else {
                    Value::U64(r as u64)
                }
            }
            Func::NumberName => Value::Str(match v {
                Value::I64(i) if i < 0 => format!("negative {}", number_name(i.unsigned_abs())),
                other => number_name(other.as_u64()),
            }),
            Func::Combinations(sets) => {
                let mut x = v.as_u64();
                let mut out = vec![' '; sets.len()];
                for (slot, set) in out.iter_mut().zip(sets).rev() {
                    let n = set.len() as u64;
                    *slot = set[(x % n) as usize];
                    x /= n;
                }
                Value::Str(out.into_iter().collect())
            }
            Func::Pick(items) => items[(v.as_u64() % items.len() as u64) as usize].clone(),
            Func::ToUuid => {
                let x = v.as_u64();
                let lo = (x & !(0b11 << 62)) | (0b10 << 62);
                Value::Str(format!(
                    "00000000-0000-4000-{:04x}-{:012x}",
                    lo >> 48,
                    lo & 0xFFFF_FFFF_FFFF
                ))
            }
            Func::ClampInt { lo, hi } => match v {
                Value::I64(i) => Value::I64((i as i128).clamp(*lo, *hi) as i64),
                other => Value::U64((other.as_u64() as i128).clamp(*lo, *hi) as u64),
            },
            Func::ClampFloat { lo, hi } => Value::F64(v.as_f64().clamp(*lo, *hi)),
        }
    }
}

/// Compiles parsed calls into a chain whose input is of kind `input`.
pub(crate) fn compile(binding: &str, calls: &[Call], input: Kind) -> Result<Chain, BindingError> {
    let mut kind = input;
    let mut funcs = Vec::with_capacity(calls.len());
    for call in calls {
        let (func, out) = compile_call(binding, call, kind)?;
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
        "double" | "Double" | "float" | "Float" => match out {
            Kind::F64 => Ok(None),
            Kind::U64 | Kind::I64 => Ok(Some((Func::ToFloat, Kind::F64))),
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

struct Ctx<'a> {
    binding: &'a str,
    call: &'a Call,
    /// The function's name here (an NB5 alias resolved).
    name: &'a str,
}

impl Ctx<'_> {
    fn bad(&self, at: usize, what: impl Into<String>) -> BindingError {
        BindingError::BadArguments {
            binding: self.binding.to_string(),
            at,
            function: self.call.name.clone(),
            what: what.into(),
            usage: usage(self.name),
        }
    }

    fn arity(&self, min: usize, max: usize) -> Result<(), BindingError> {
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

    fn int(&self, i: usize) -> Result<i128, BindingError> {
        match &self.call.args[i] {
            Arg::Int(v, _) => Ok(*v),
            other => Err(self.bad(
                other.at(),
                format!(
                    "needs an integer for argument {}, not {}",
                    i + 1,
                    other.describe()
                ),
            )),
        }
    }

    fn num(&self, i: usize) -> Result<f64, BindingError> {
        match &self.call.args[i] {
            Arg::Int(v, _) => Ok(*v as f64),
            Arg::Float(v, _) => Ok(*v),
            other => Err(self.bad(
                other.at(),
                format!(
                    "needs a number for argument {}, not {}",
                    i + 1,
                    other.describe()
                ),
            )),
        }
    }

    fn string(&self, i: usize) -> Result<String, BindingError> {
        match &self.call.args[i] {
            Arg::Str(s, _) => Ok(s.clone()),
            other => Err(self.bad(
                other.at(),
                format!(
                    "needs a quoted string for argument {}, not {}",
                    i + 1,
                    other.describe()
                ),
            )),
        }
    }

    fn at(&self, i: usize) -> usize {
        self.call.args[i].at()
    }
}

fn compile_call(binding: &str, call: &Call, input: Kind) -> Result<(Func, Kind), BindingError> {
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
    if !NAMES.contains(&name) {
        let known = NAMES.iter().chain(ALIASES.iter().map(|(n, _)| n)).copied();
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
                    other => {
                        return Err(cx.bad(
                            other.at(),
                            format!(
                                "needs a function chain for argument {}, not {}",
                                i + 1,
                                other.describe()
                            ),
                        ));
                    }
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
