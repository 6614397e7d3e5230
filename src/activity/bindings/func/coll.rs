//! NB5's lists and vectors: `ListSized*`, `List*`, `HashedFloatVectors`,
//! `CqlVector`/`ToCqlVector`, the normalizers and `CharBufImage`. A list is a
//! [`Value::List`], displayed as Java's `List.toString` (`[a, b]`), which is
//! also how the Cassandra driver's `CqlVector` prints. The `.fvec`/`.ivec`
//! readers are in `xvec`.

use super::compile::Ctx;
use super::norm::{Norm, normalize};
use super::{Chain, Func};
use crate::activity::bindings::error::BindingError;
use crate::activity::bindings::hash::{hash_keyed, seed_key, unit};
use crate::activity::bindings::nb5::char_sets;
use crate::activity::bindings::parse::Arg;
use crate::activity::bindings::value::{Kind, Value};
use std::sync::Arc;

/// The names compiled here.
pub(crate) const NAMES: &[&str] = &[
    "ListSized",
    "ListSizedStepped",
    "ListSizedHashed",
    "ListStepped",
    "ListHashed",
    "ListFunctions",
    "SetSized",
    "SetSizedStepped",
    "SetSizedHashed",
    "SetStepped",
    "SetHashed",
    "SetFunctions",
    "HashedFloatVectors",
    "HashedDoubleVectors",
    "DoubleVectors",
    "FloatVectors",
    "CqlVector",
    "ToCqlVector",
    "NormalizeCqlVector",
    "NormalizeFloatVector",
    "NormalizeDoubleVector",
    "CharBufImage",
];

/// How each function here is called, for messages.
pub(crate) fn usage(name: &str) -> Option<&'static str> {
    Some(match name {
        "ListSized" | "ListSizedStepped" | "ListSizedHashed" => {
            "`ListSizedStepped(SIZE, chain, ...)`: SIZE a number or a chain; one chain per \
             element, the last repeated"
        }
        "ListStepped" | "ListHashed" | "ListFunctions" => {
            "`ListStepped(chain, chain, ...)`: one element per chain"
        }
        "HashedFloatVectors" => {
            "`HashedFloatVectors(SIZE)`, `HashedFloatVectors(SIZE, min, max)` or \
             `HashedFloatVectors(SIZE, chain)`"
        }
        "SetSized" | "SetSizedStepped" | "SetSizedHashed" => {
            "`SetSized(SIZE, chain, ...)`: SIZE a number or a chain; a chain per element, the \
             last repeated"
        }
        "SetStepped" | "SetHashed" | "SetFunctions" => "`SetStepped(chain, ...)`: one per element",
        "DoubleVectors" | "FloatVectors" => {
            "`DoubleVectors('0-9*10')`: one position per character set (`;` or `,` between, \
             `*N` repeats one)"
        }
        "HashedDoubleVectors" => {
            "`HashedDoubleVectors(SIZE)`, `HashedDoubleVectors(SIZE, min, max)` or \
             `HashedDoubleVectors(SIZE, chain)`"
        }
        "CqlVector" => "`CqlVector(ListSizedHashed(5, HashRange(0.0, 1.0)))`: a list chain",
        "ToCqlVector" => "`ToCqlVector()` on a list of numbers",
        "NormalizeCqlVector" | "NormalizeFloatVector" | "NormalizeDoubleVector" => {
            "`NormalizeCqlVector()` on a list of numbers"
        }
        "CharBufImage" => {
            "`CharBufImage('A-Za-z0-9 ', IMAGE_SIZE, SIZE)` or `CharBufImage(size)`: SIZE a \
             number or a chain"
        }
        _ => return None,
    })
}

/// How the elements of a list get their inputs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Step {
    /// Every element from the input itself (`ListSized`, `ListFunctions`).
    Same,
    /// Element i from `input + i` (`ListSizedStepped`, `ListStepped`).
    Stepped,
    /// Element i from the input hashed i + 1 times (`ListSizedHashed`, `ListHashed`).
    Hashed,
}

/// A size: fixed, or a chain of the input.
#[derive(Debug, Clone)]
pub(crate) enum Size {
    Fixed(usize),
    Chain(Box<Chain>),
}

impl Size {
    fn of(&self, v: &Value) -> usize {
        match self {
            Size::Fixed(n) => *n,
            // Java's `(int)` of the chain's value; a negative size is none.
            Size::Chain(c) => usize::try_from(c.eval(v.clone()).as_u64() as i32).unwrap_or(0),
        }
    }
}

/// A compiled function of this file.
#[derive(Debug, Clone)]
pub(crate) enum Coll {
    /// A list, or (`set`) NB5's `new HashSet<>(size)` of the same elements:
    /// duplicates dropped, in Java's iteration order (`java.rs`).
    List {
        size: Size,
        funcs: Vec<Chain>,
        step: Step,
        set: bool,
    },
    /// `image + i` through `HashRange(min, max)` as floats (doubles when
    /// `double`), `image` the input's hash.
    HashedFloats {
        double: bool,
        size: Size,
        value: Option<Box<Chain>>,
        min: f64,
        span: f64,
    },
    /// NB5's `DoubleVectors`/`FloatVectors`: the input in mixed radix over
    /// the positions (`modulo` each position's weight), each digit as
    /// `(digit % steps) / steps`, `steps` the largest set's size.
    Steps {
        modulo: Vec<u64>,
        steps: u64,
        float: bool,
    },
    /// A list chain's list as it is (`CqlVector(...)`).
    Of(Box<Chain>),
    /// The list unchanged (`ToCqlVector()`).
    Same,
    /// Each element divided by the list's Euclidean length.
    /// Each element divided by the list's Euclidean length, as NB5's
    /// `NormalizeDoubleVector` (`Double`), `NormalizeFloatVector` (`Float`)
    /// or adapter-cqld4's `NormalizeCqlVector` (`Cql`).
    Normalize(Norm),
    /// The image as text (one byte per character when `ascii`) and its length
    /// in characters.
    CharBuf {
        image: Arc<String>,
        chars: usize,
        ascii: bool,
        size: Size,
    },
}

fn hash(x: u64) -> u64 {
    hash_keyed(x, seed_key(0))
}

impl Coll {
    pub(crate) fn apply(&self, v: Value) -> Value {
        match self {
            Coll::List {
                size,
                funcs,
                step,
                set,
            } => {
                let n = size.of(&v);
                let x = v.as_u64();
                let mut h = x;
                let items = (0..n)
                    .map(|i| {
                        let f = &funcs[i.min(funcs.len() - 1)];
                        let input = match step {
                            Step::Same => x,
                            Step::Stepped => x.wrapping_add(i as u64),
                            Step::Hashed => {
                                h = hash(h);
                                h
                            }
                        };
                        f.eval(Value::U64(input))
                    })
                    .collect();
                if *set {
                    Value::List(super::java::java_hash_set(items, n))
                } else {
                    Value::List(items)
                }
            }
            Coll::HashedFloats {
                double,
                size,
                value,
                min,
                span,
            } => {
                let n = size.of(&v);
                let image = hash(v.as_u64());
                let items = (0..n as u64)
                    .map(|i| {
                        let x = image.wrapping_add(i);
                        let d = match value {
                            Some(c) => c.eval(Value::U64(x)).as_f64(),
                            None => min + span * unit(hash(x)),
                        };
                        if *double {
                            Value::F64(d)
                        } else {
                            Value::F32(d as f32)
                        }
                    })
                    .collect();
                Value::List(items)
            }
            Coll::Steps {
                modulo,
                steps,
                float,
            } => {
                let mut x = v.as_u64();
                let items = modulo
                    .iter()
                    .map(|m| {
                        // Java: `(int) ((value / m) % Integer.MAX_VALUE)`.
                        let digit = (x / m) % (i32::MAX as u64);
                        x %= m;
                        let d = (digit % steps) as f64 / *steps as f64;
                        if *float {
                            Value::F32(d as f32)
                        } else {
                            Value::F64(d)
                        }
                    })
                    .collect();
                Value::List(items)
            }
            Coll::Of(chain) => chain.eval(v),
            Coll::Same => v,
            Coll::Normalize(norm) => match v {
                Value::List(items) => Value::List(normalize(items, *norm)),
                other => other,
            },
            Coll::CharBuf {
                image,
                chars,
                ascii,
                size,
            } => {
                let n = size.of(&v).min(*chars);
                let pos = ((hash(v.as_u64()) >> 33) % (chars - n + 1) as u64) as usize;
                Value::Str(if *ascii {
                    image[pos..pos + n].to_string()
                } else {
                    image.chars().skip(pos).take(n).collect()
                })
            }
        }
    }
}

/// Compiles a function of this file, or `None` when `name` is not one of them.
pub(crate) fn compile(cx: &Ctx<'_>, input: Kind) -> Option<Result<(Func, Kind), BindingError>> {
    NAMES.contains(&cx.name).then(|| compile_known(cx, input))
}

fn needs(cx: &Ctx<'_>, takes: &'static str, input: Kind) -> BindingError {
    BindingError::TypeMismatch {
        binding: cx.binding.to_string(),
        at: cx.call.at,
        function: cx.name.to_string(),
        takes,
        gets: input,
    }
}

/// Argument `i` as a size: a whole number, or a chain of the input.
fn size(cx: &Ctx<'_>, i: usize) -> Result<Size, BindingError> {
    match &cx.call.args[i] {
        Arg::Int(n, at) => usize::try_from(*n)
            .ok()
            .filter(|n| *n <= i32::MAX as usize)
            .map(Size::Fixed)
            .ok_or_else(|| cx.bad(*at, format!("needs a size from 0 to 2^31 - 1, not {n}"))),
        Arg::Chain(calls, at) => {
            let c = super::compile(cx.binding, calls, Kind::U64)?;
            if !c.out().is_int() {
                return Err(cx.bad(
                    *at,
                    format!("needs a size chain that gives an integer, not {}", c.out()),
                ));
            }
            Ok(Size::Chain(Box::new(c)))
        }
        other => Err(cx.wrong(i, other, "a size (a number or a chain)")),
    }
}

/// Arguments `from..` as element chains of a `long` input.
fn chains(cx: &Ctx<'_>, from: usize) -> Result<Vec<Chain>, BindingError> {
    let mut out = Vec::new();
    for (i, arg) in cx.call.args.iter().enumerate().skip(from) {
        match arg {
            Arg::Chain(calls, _) => out.push(super::compile(cx.binding, calls, Kind::U64)?),
            other => return Err(cx.wrong(i, other, "a function chain")),
        }
    }
    if out.is_empty() {
        return Err(cx.bad(cx.call.at, "needs at least one element chain"));
    }
    Ok(out)
}

fn compile_known(cx: &Ctx<'_>, input: Kind) -> Result<(Func, Kind), BindingError> {
    let name = cx.name;
    let list_in = matches!(
        name,
        "ToCqlVector" | "NormalizeCqlVector" | "NormalizeFloatVector" | "NormalizeDoubleVector"
    );
    if list_in && input != Kind::List {
        return Err(needs(cx, "a list (of numbers)", input));
    }
    if !list_in && !input.is_int() {
        return Err(needs(cx, "an integer", input));
    }
    let c = match name {
        // NB5's `from_long/to_collection/ListSized*.java` and `SetSized*.java`
        // (the same loop into a `new HashSet<>(size)`).
        "ListSized" | "ListSizedStepped" | "ListSizedHashed" | "SetSized" | "SetSizedStepped"
        | "SetSizedHashed" => {
            cx.arity(2, usize::MAX)?;
            let step = match name {
                "ListSized" | "SetSized" => Step::Same,
                "ListSizedStepped" | "SetSizedStepped" => Step::Stepped,
                _ => Step::Hashed,
            };
            Coll::List {
                size: size(cx, 0)?,
                funcs: chains(cx, 1)?,
                step,
                set: name.starts_with("Set"),
            }
        }
        // `ListStepped.java`, `SetStepped.java`, ...: one element per chain.
        "ListStepped" | "ListHashed" | "ListFunctions" | "SetStepped" | "SetHashed"
        | "SetFunctions" => {
            cx.arity(1, usize::MAX)?;
            let funcs = chains(cx, 0)?;
            let step = match name {
                "ListStepped" | "SetStepped" => Step::Stepped,
                "ListHashed" | "SetHashed" => Step::Hashed,
                _ => Step::Same,
            };
            Coll::List {
                size: Size::Fixed(funcs.len()),
                funcs,
                step,
                set: name.starts_with("Set"),
            }
        }
        // `virtdata-lib-vectors` `primitive/HashedFloatVectors.java` and
        // `HashedDoubleVectors.java`: one loop, `float` or `double` elements.
        "HashedFloatVectors" | "HashedDoubleVectors" => {
            cx.arity(1, 3)?;
            let double = name == "HashedDoubleVectors";
            let size = size(cx, 0)?;
            match cx.call.args.len() {
                1 => Coll::HashedFloats {
                    double,
                    size,
                    value: None,
                    min: 0.0,
                    span: 1.0,
                },
                2 => {
                    let value = chains(cx, 1)?.remove(0);
                    if !(value.out().is_int() || value.out() == Kind::F64) {
                        return Err(cx.bad(cx.at(1), "needs a value chain that gives a number"));
                    }
                    Coll::HashedFloats {
                        double,
                        size,
                        value: Some(Box::new(value)),
                        min: 0.0,
                        span: 1.0,
                    }
                }
                _ => {
                    let (min, max) = (cx.num(1)?, cx.num(2)?);
                    if min > max || !(max - min).is_finite() {
                        return Err(cx.bad(cx.at(1), format!("needs min <= max, not {min}, {max}")));
                    }
                    Coll::HashedFloats {
                        double,
                        size,
                        value: None,
                        min,
                        span: max - min,
                    }
                }
            }
        }
        // `virtdata-lib-vectors` `primitive/DoubleVectors.java` (a
        // `DoubleCombiner` over `UnitSteps`) and `FloatVectors.java`.
        "DoubleVectors" | "FloatVectors" => {
            cx.arity(1, 1)?;
            let sets = combiner_sets(&cx.string(0)?).map_err(|what| cx.bad(cx.at(0), what))?;
            let mut modulo = vec![0u64; sets.len()];
            let mut m = 1u64;
            for (slot, set) in modulo.iter_mut().zip(&sets).rev() {
                *slot = m;
                m = m
                    .checked_mul(set.len() as u64)
                    .ok_or_else(|| cx.bad(cx.at(0), "has more combinations than a long holds"))?;
            }
            let steps = sets.iter().map(Vec::len).max().unwrap_or(1) as u64;
            Coll::Steps {
                modulo,
                steps,
                float: name == "FloatVectors",
            }
        }
        "CqlVector" => {
            // NB5's `to_cqlvector/CqlVector.java` has one constructor, taking
            // the list function: its resolver finds none for `CqlVector()`.
            if cx.call.args.is_empty() {
                return Err(cx.bad(
                    cx.call.at,
                    "needs the function that makes the list: NB5's `CqlVector` has no form \
                     without it (its one constructor takes it), so NB5 cannot run this binding \
                     either",
                ));
            }
            cx.arity(1, 1)?;
            let chain = chains(cx, 0)?.remove(0);
            if chain.out() != Kind::List {
                return Err(cx.bad(
                    cx.at(0),
                    format!("needs a chain that gives a list, not {}", chain.out()),
                ));
            }
            Coll::Of(Box::new(chain))
        }
        "ToCqlVector" => {
            cx.arity(0, 0)?;
            Coll::Same
        }
        "NormalizeCqlVector" | "NormalizeFloatVector" | "NormalizeDoubleVector" => {
            cx.arity(0, 0)?;
            Coll::Normalize(match name {
                "NormalizeDoubleVector" => Norm::Double,
                "NormalizeFloatVector" => Norm::Float,
                _ => Norm::Cql,
            })
        }
        _ => char_buf(cx)?,
    };
    let out = match c {
        Coll::CharBuf { .. } => Kind::Str,
        _ => Kind::List,
    };
    Ok((Func::Coll(Box::new(c)), out))
}

/// NB5's `CharBufImage`: an image of `imgsize` characters built once, from
/// 1024-character chunks of hashed picks from a character set (or from a
/// chain's text at inputs 0, 1, ...), sampled per input at a hashed position.
fn char_buf(cx: &Ctx<'_>) -> Result<Coll, BindingError> {
    cx.arity(1, 4)?;
    if cx.call.args.len() == 1 {
        let n = match size(cx, 0)? {
            Size::Fixed(n) => n,
            Size::Chain(_) => return Err(cx.bad(cx.at(0), "needs a fixed size")),
        };
        return char_buf_of(cx, "a-zA-Z0-9 ", n, Size::Fixed(n), 0);
    }
    let imgsize = match size(cx, 1)? {
        Size::Fixed(n) if n > 0 => n,
        _ => return Err(cx.bad(cx.at(1), "needs an image size above 0")),
    };
    let sample = if cx.call.args.len() >= 3 {
        size(cx, 2)?
    } else {
        Size::Fixed(imgsize)
    };
    let seed = if cx.call.args.len() == 4 {
        cx.int(3)? as u64
    } else {
        0
    };
    match &cx.call.args[0] {
        Arg::Str(spec, _) => char_buf_of(cx, spec, imgsize, sample, seed),
        Arg::Chain(calls, _) => {
            let chain = super::compile(cx.binding, calls, Kind::U64)?;
            let mut image = Vec::with_capacity(imgsize);
            let mut s = seed;
            while image.len() < imgsize {
                let text = chain.eval(Value::U64(s)).into_string();
                s = s.wrapping_add(1);
                if text.is_empty() && s.wrapping_sub(seed) > 1024 {
                    return Err(cx.bad(cx.at(0), "gives only empty text: the image cannot fill"));
                }
                image.extend(text.chars().take(imgsize - image.len()));
            }
            Ok(image_of(image, sample))
        }
        other => Err(cx.wrong(0, other, "a character set such as 'A-Za-z0-9 ' or a chain")),
    }
}

fn char_buf_of(
    cx: &Ctx<'_>,
    spec: &str,
    imgsize: usize,
    size: Size,
    seed: u64,
) -> Result<Coll, BindingError> {
    let set: Vec<char> = char_sets(spec)
        .map_err(|what| cx.bad(cx.at(0), what))?
        .concat();
    let mut image = Vec::with_capacity(imgsize);
    let mut chunk_seed = seed;
    while image.len() < imgsize {
        // One 1024-character chunk: each pick from the next hash of the last.
        let mut h = chunk_seed;
        for _ in 0..1024.min(imgsize - image.len()) {
            h = hash(h);
            image.push(set[((h >> 1) % set.len() as u64) as usize]);
        }
        chunk_seed = chunk_seed.wrapping_add(1);
    }
    Ok(image_of(image, size))
}

fn image_of(image: Vec<char>, size: Size) -> Coll {
    let chars = image.len();
    let text: String = image.into_iter().collect();
    Coll::CharBuf {
        ascii: text.len() == chars,
        image: Arc::new(text),
        chars,
        size,
    }
}

/// NB5's `Combiner.parseSpec`: positions separated by `;` or `,`, a position
/// written `SET*N` repeated N times, each set as [`char_sets`] reads it.
pub(crate) fn combiner_sets(spec: &str) -> Result<Vec<Vec<char>>, String> {
    let mut out = Vec::new();
    for part in spec.split([',', ';']) {
        let (set, times) = match part.rsplit_once('*') {
            Some((set, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => (
                set,
                n.parse::<usize>()
                    .map_err(|_| format!("repeats `{part}` too often"))?,
            ),
            _ => (part, 1),
        };
        let chars = char_sets(set)?.concat();
        out.extend(std::iter::repeat_n(chars, times));
    }
    if out.is_empty() {
        return Err(format!("has no position in `{spec}`"));
    }
    Ok(out)
}
