//! The binding functions: type checking at compile time, evaluation per cycle.
//!
//! Split by what runs where: `compile` checks each call's arguments and the
//! kinds along a chain once, when the bindings load (the chain, its `-> type`
//! annotations and the dispatch by name), into the [`Func`]s here; `ctx` holds
//! the argument readers and messages every compiler shares, `basic` compiles
//! the basic functions, and the other files NB5's families (each its own
//! compile and apply). [`Func::apply`] runs them per cycle. The Zipf sampler is
//! in `zipf`.

mod basic;
mod coin;
mod coll;
mod compile;
mod csv;
mod ctx;
mod decimal;
mod extra;
mod java;
mod names;
mod norm;
mod overload;
mod show;
mod text;
mod time;
mod token;
mod xvec;
mod zipf;

pub(crate) use compile::compile;

use super::hash::{hash_keyed, mix64, normal_quantile, open_unit, seed_key, unit};
use super::nb5::number_name;
use super::value::{Kind, Value};
use zipf::Zipf;

/// Every function name, for messages (with `extra::NAMES`).
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
    "Discard",
    "Token",
    "WeightedLongs",
    "Stringify",
    "TypeOf",
    "Levy",
    "Show",
];

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
    /// NB5's Lévy distribution: location `mu`, scale `c`.
    Levy {
        mu: f64,
        c: f64,
    },
    Chance(f64),
    /// `items[i]` for the first cumulative weight above a hashed unit value.
    Choice {
        items: Vec<Value>,
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
    /// NB5's functions over text, files and times (`extra.rs`).
    Extra(Box<extra::Extra>),
    /// NB5's dates (`time.rs`).
    Time(Box<time::Time>),
    /// NB5's lists and vectors (`coll.rs`).
    Coll(Box<coll::Coll>),
    /// NB5's `Show` (`show.rs`).
    Show(Box<show::Show>),
    /// NB5's `ToBigDecimal` (`decimal.rs`).
    Decimal(Box<decimal::ToDecimal>),
    /// NB5's `.fvec`/`.ivec` readers (`xvec.rs`).
    XVec(Box<xvec::XVec>),
    /// NB5's `CoinFunc` (`coin.rs`).
    Coin(Box<coin::Coin>),
    /// `-> float`: a single-precision float, as Java's `float`.
    ToF32,
    /// A number's text read back as NB5's composer reads it into a function
    /// of a long: `Double.valueOf(text).longValue()` (truncated, saturating).
    TextToLong,
    /// `Add`, `Mul`, `Div` over floats.
    FloatOp(overload::FloatOp, f64),
    /// NB5's `HashRangeScaled(scale)`.
    HashRangeScaled(f64),
    /// NB5's discrete `Uniform(min, max)`: min to max, both included.
    UniformInt {
        min: i64,
        width: u128,
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
            Func::Levy { mu, c } => {
                let q = normal_quantile(open_unit(mix64(v.as_u64())) / 2.0);
                Value::F64(mu + c / (q * q))
            }
            Func::Chance(p) => Value::Bool(unit(mix64(v.as_u64())) < *p),
            Func::Choice { items, cumulative } => {
                let total = cumulative[cumulative.len() - 1];
                let u = unit(mix64(v.as_u64())) * total;
                let i = cumulative.partition_point(|c| *c <= u).min(items.len() - 1);
                items[i].clone()
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
            Func::Extra(e) => e.apply(v),
            Func::Time(t) => t.apply(v),
            Func::Coll(c) => c.apply(v),
            Func::Coin(c) => c.apply(v),
            Func::XVec(x) => x.apply(v),
            Func::Decimal(d) => d.apply(v),
            Func::Show(s) => s.apply(v),
            Func::FloatOp(op, n) => Value::F64(match op {
                overload::FloatOp::Add => v.as_f64() + n,
                overload::FloatOp::Mul => v.as_f64() * n,
                overload::FloatOp::Div => v.as_f64() / n,
            }),
            Func::HashRangeScaled(scale) => {
                let x = match v {
                    Value::I64(i) => i,
                    other => other.as_u64() as i64,
                };
                if x == 0 {
                    Value::I64(0)
                } else {
                    // NB5's hash is a positive long: the top 63 bits here.
                    let h = (hash_keyed(x as u64, 0) >> 1) as i64;
                    Value::I64(((h % x) as f64 * scale) as i64)
                }
            }
            Func::UniformInt { min, width } => {
                let off = ((u128::from(mix64(v.as_u64()) >> 11) * width) >> 53) as i128;
                let r = (*min as i128 + off) as i64;
                if *min < 0 {
                    Value::I64(r)
                } else {
                    Value::U64(r as u64)
                }
            }
            // Only after `ToString()` of a number (`compile_with`): the text
            // always reads.
            Func::TextToLong => Value::I64(
                v.into_string()
                    .trim()
                    .parse::<f64>()
                    .map_or(0, |d| d as i64),
            ),
            Func::ToF32 => match v {
                Value::List(items) => {
                    Value::List(items.into_iter().map(|x| Func::ToF32.apply(x)).collect())
                }
                other => Value::F32(other.as_f64() as f32),
            },
        }
    }
}
