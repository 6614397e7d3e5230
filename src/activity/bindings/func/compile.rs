//! Compiling a binding's calls into a [`Chain`]: the kinds along the chain,
//! NoSQLBench aliases, names NB5 has that paceline refuses, `-> type`
//! annotations, and the dispatch of each call to the file that compiles it
//! (`basic.rs` for the basic functions, one file per NB5 family).

use super::{Chain, Func, NAMES};
use crate::activity::bindings::error::BindingError;
use crate::activity::bindings::nb5::{ALIASES, UNSUPPORTED};
use crate::activity::bindings::parse::{Arg, Call};
use crate::activity::bindings::value::{Kind, Value};
use crate::activity::suggest;

/// The compilers' shared context, where each compiler has long found it.
pub(crate) use super::ctx::Ctx;

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
    // Whether the value is a number's text (`ToString()` of a number).
    let mut numeric_text = false;
    // The names `Save*` saved in this chain, and whether the value since.
    let mut saved: Vec<(String, bool)> = Vec::new();
    for (i, call) in calls.iter().enumerate() {
        let (func, out) = if call.name == "TypeOf" {
            type_of(binding, call, i.checked_sub(1).map(|p| &calls[p]), kind)?
        } else if call.name == "Show" {
            super::show::compile(binding, call, &saved)?
        } else {
            match compile_call(binding, call, kind, int_uniform[i]) {
                // NB5's composer feeds a function of a long with another
                // object's text as `Double.valueOf(text).longValue()`
                // (`ComposerForLongFunction`): a number's text reads back.
                Err(BindingError::TypeMismatch { takes, .. })
                    if numeric_text && kind == Kind::Str && takes.contains("integer") =>
                {
                    funcs.push(Func::TextToLong);
                    compile_call(binding, call, Kind::I64, int_uniform[i])?
                }
                other => other?,
            }
        };
        numeric_text = call.name == "ToString" && (kind.is_int() || kind == Kind::F64);
        super::show::track(&mut saved, call);
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

/// NB5's `diagnostics/TypeOf.java`: the canonical name of the Java class of
/// the value NB5's previous function gives (`prev`, with its `-> type`), or
/// of the cycle, a `long` boxed, when it is the first.
fn type_of(
    binding: &str,
    call: &Call,
    prev: Option<&Call>,
    kind: Kind,
) -> Result<(Func, Kind), BindingError> {
    if !call.args.is_empty() {
        return Err(BindingError::BadArguments {
            binding: binding.to_string(),
            at: call.at,
            function: call.name.clone(),
            what: format!("takes 0 argument(s), not {}", call.args.len()),
            usage: super::ctx::usage("TypeOf"),
        });
    }
    let by_type = |ty: &str| {
        Some(match ty.rsplit('.').next().unwrap_or(ty) {
            "int" | "Integer" => "java.lang.Integer",
            "long" | "Long" => "java.lang.Long",
            "short" | "Short" => "java.lang.Short",
            "byte" | "Byte" => "java.lang.Byte",
            "double" | "Double" => "java.lang.Double",
            "float" | "Float" => "java.lang.Float",
            "boolean" | "Boolean" => "java.lang.Boolean",
            "String" | "string" => "java.lang.String",
            _ => return None,
        })
    };
    let by_name = |name: &str| {
        Some(match name {
            "ToJavaInstant" => "java.time.Instant",
            "ToDate" => "java.util.Date",
            "ToJodaDateTime" => "org.joda.time.DateTime",
            "ToEpochTimeUUID" | "ToFinestTimeUUID" | "ToUUID" | "ToHashedUUID" => "java.util.UUID",
            "ToInt" => "java.lang.Integer",
            "ToBigDecimal" => "java.math.BigDecimal",
            "HashedFloatVectors" => "float[]",
            "HashedDoubleVectors" => "double[]",
            "CqlVector" | "ToCqlVector" | "NormalizeCqlVector" => {
                "com.datastax.oss.driver.api.core.data.CqlVector"
            }
            _ => return None,
        })
    };
    let class = prev
        .and_then(|p| {
            p.ty.as_ref()
                .and_then(|(ty, _)| by_type(ty))
                .or_else(|| by_name(&p.name))
        })
        .unwrap_or(match kind {
            Kind::U64 | Kind::I64 => "java.lang.Long",
            Kind::F64 => "java.lang.Double",
            Kind::Bool => "java.lang.Boolean",
            Kind::Str => "java.lang.String",
            Kind::List => "java.util.ArrayList",
        });
    Ok((Func::Constant(Value::Str(class.to_string())), Kind::Str))
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
        .or_else(|| super::csv::compile(&cx, input))
        .or_else(|| super::decimal::compile(&cx, input))
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
            .chain(super::csv::NAMES)
            .chain(super::decimal::NAMES)
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
    super::basic::compile(&cx, input)
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
