//! A binding's value bound to a prepared statement's parameter, with the type the
//! server reported for it.
//!
//! Integers, floats, booleans, text, bytea, uuid, json, jsonb and (from epoch
//! milliseconds) timestamps and dates go in the binary format, encoded here;
//! numeric, timestamps and dates given as text, arrays and any other type go in
//! the text format, checked here where a check is cheap and then parsed by the
//! server's own input function. A value that cannot take the type is refused
//! here, before anything is sent.

use super::wire::hot::Param;
use crate::activity::bindings::Value;
use postgres_types::{Kind, Type};

/// Seconds between 1970-01-01 and PostgreSQL's epoch, 2000-01-01.
const PG_EPOCH_SECS: i64 = 946_684_800;

mod arrays;

/// One parameter's value, ready to send.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Bound {
    I16(i16),
    I32(i32),
    I64(i64),
    /// An `oid`.
    U32(u32),
    F32(f32),
    F64(f64),
    Bool(bool),
    /// Text, or bytes sent as they are (text kinds, bytea, json).
    Bytes(Vec<u8>),
    /// jsonb: a version byte, then the JSON text.
    Jsonb(Vec<u8>),
    Uuid([u8; 16]),
    /// Microseconds since 2000-01-01 (timestamp, timestamptz).
    Micros(i64),
    /// Days since 2000-01-01 (date).
    Days(i32),
    /// The server parses this text with the type's input function.
    Text(String),
}

impl Param for Bound {
    fn binary(&self) -> bool {
        !matches!(self, Bound::Text(_))
    }

    #[inline]
    fn put(&self, out: &mut bytes::BytesMut) {
        match self {
            Bound::I16(v) => out.extend_from_slice(&v.to_be_bytes()),
            Bound::I32(v) => out.extend_from_slice(&v.to_be_bytes()),
            Bound::I64(v) | Bound::Micros(v) => out.extend_from_slice(&v.to_be_bytes()),
            Bound::U32(v) => out.extend_from_slice(&v.to_be_bytes()),
            Bound::F32(v) => out.extend_from_slice(&v.to_be_bytes()),
            Bound::F64(v) => out.extend_from_slice(&v.to_be_bytes()),
            Bound::Bool(v) => out.extend_from_slice(&[u8::from(*v)]),
            Bound::Bytes(b) => out.extend_from_slice(b),
            Bound::Jsonb(b) => {
                out.extend_from_slice(&[1]);
                out.extend_from_slice(b);
            }
            Bound::Uuid(u) => out.extend_from_slice(u),
            Bound::Days(d) => out.extend_from_slice(&d.to_be_bytes()),
            Bound::Text(t) => out.extend_from_slice(t.as_bytes()),
        }
    }
}

/// [`bind`] into `slot`, reusing its bytes: a text-kind parameter (`text`,
/// `varchar`, `bpchar`, `name`, `unknown`) is written into the buffer the
/// slot's last text value left, so binding one per op allocates nothing once
/// the buffer has grown to the longest value; every other type is [`bind`]'s.
/// The value is the one [`bind`] gives
/// (`tests::binding_into_a_reused_slot_is_binding_afresh`). On an error the
/// slot is left as it was.
pub(super) fn bind_into(value: &Value, ty: &Type, slot: &mut Bound) -> Result<(), String> {
    if let Some(b) = int_param(value, ty) {
        *slot = b;
        return Ok(());
    }
    if matches!(
        *ty,
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN
    ) {
        let Bound::Bytes(buf) = slot else {
            *slot = Bound::Bytes(Vec::new());
            return bind_into(value, ty, slot);
        };
        buf.clear();
        match value {
            Value::Str(s) => buf.extend_from_slice(s.as_bytes()),
            v => {
                use std::io::Write;
                // Writing to a Vec cannot fail.
                let _ = write!(buf, "{v}");
            }
        }
        return Ok(());
    }
    *slot = bind(value, ty)?;
    Ok(())
}

/// An integer value in range of an integer parameter (`int2`, `int4`,
/// `int8`): the key of most ops, bound without [`bind`]'s general match;
/// `None` for anything else (out of range included: [`bind`] says why). The
/// value is the one [`bind`] gives
/// (`tests::an_integer_in_range_takes_the_integer_path`,
/// `tests::binding_into_a_reused_slot_is_binding_afresh`).
#[inline]
pub(super) fn int_param(value: &Value, ty: &Type) -> Option<Bound> {
    let n = match *value {
        Value::U64(n) => i64::try_from(n).ok()?,
        Value::I64(n) => n,
        _ => return None,
    };
    match *ty {
        Type::INT8 => Some(Bound::I64(n)),
        Type::INT4 => i32::try_from(n).ok().map(Bound::I32),
        Type::INT2 => i16::try_from(n).ok().map(Bound::I16),
        _ => None,
    }
}

/// `value` as a parameter of type `ty`, or why it cannot be one (the caller
/// names the binding and the type).
pub(super) fn bind(value: &Value, ty: &Type) -> Result<Bound, String> {
    let text = || value.to_string();
    let int = || -> Result<i64, String> {
        match value {
            Value::U64(n) => i64::try_from(*n).map_err(|_| "out of range".to_string()),
            Value::I64(n) => Ok(*n),
            Value::F64(f) => whole(*f),
            Value::F32(f) => whole(f64::from(*f)),
            Value::Bool(_) => Err("a boolean is not a number".to_string()),
            Value::Str(s) => s.trim().parse().map_err(|_| "not an integer".to_string()),
            Value::List(_) => Err("a list is not a number".to_string()),
        }
    };
    let float = || -> Result<f64, String> {
        match value {
            Value::U64(n) => Ok(*n as f64),
            Value::I64(n) => Ok(*n as f64),
            Value::F64(f) => Ok(*f),
            Value::F32(f) => Ok(f64::from(*f)),
            Value::Bool(_) => Err("a boolean is not a number".to_string()),
            Value::Str(s) => float_text(s.trim()),
            Value::List(_) => Err("a list is not a number".to_string()),
        }
    };
    let range = |n: i64, lo: i64, hi: i64| {
        if (lo..=hi).contains(&n) {
            Ok(n)
        } else {
            Err(format!("out of range ({lo} to {hi})"))
        }
    };
    Ok(match *ty {
        Type::INT2 => Bound::I16(range(int()?, i16::MIN.into(), i16::MAX.into())? as i16),
        Type::INT4 => Bound::I32(range(int()?, i32::MIN.into(), i32::MAX.into())? as i32),
        Type::INT8 => Bound::I64(int()?),
        Type::OID => Bound::U32(range(int()?, 0, u32::MAX.into())? as u32),
        Type::FLOAT4 => Bound::F32(real(float()?)?),
        Type::FLOAT8 => Bound::F64(float()?),
        Type::NUMERIC => match value {
            Value::Bool(_) => return Err("a boolean is not a number".to_string()),
            Value::F64(f) if !f.is_finite() => Bound::Text(text()),
            Value::Str(s) if !is_decimal(s.trim()) => {
                return Err("not a decimal number".to_string());
            }
            _ => Bound::Text(text().trim().to_string()),
        },
        Type::BOOL => Bound::Bool(match value {
            Value::Bool(b) => *b,
            Value::U64(0) | Value::I64(0) => false,
            Value::U64(1) | Value::I64(1) => true,
            Value::Str(s) => match s.trim().to_ascii_lowercase().as_str() {
                "true" | "t" | "yes" | "y" | "on" | "1" => true,
                "false" | "f" | "no" | "n" | "off" | "0" => false,
                _ => return Err("not a boolean (true/false)".to_string()),
            },
            _ => return Err("not a boolean (true/false, or 1/0)".to_string()),
        }),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => {
            Bound::Bytes(text().into_bytes())
        }
        Type::BYTEA => Bound::Bytes(match value {
            Value::Str(s) if s.starts_with("\\x") => {
                hex(&s[2..]).ok_or("`\\x` is followed by something other than hex pairs")?
            }
            _ => text().into_bytes(),
        }),
        Type::UUID => Bound::Uuid(uuid(&text()).ok_or("not a uuid (8-4-4-4-12 hex digits)")?),
        Type::JSON | Type::JSONB => {
            let t = match value {
                Value::Str(s) => {
                    serde_json::from_str::<serde_json::Value>(s)
                        .map_err(|e| format!("not JSON ({e})"))?;
                    s.clone()
                }
                v => v.to_json().to_string(),
            };
            if *ty == Type::JSON {
                Bound::Bytes(t.into_bytes())
            } else {
                Bound::Jsonb(t.into_bytes())
            }
        }
        Type::TIMESTAMP | Type::TIMESTAMPTZ => {
            match value {
                Value::Str(s) if is_timestamp(s.trim()) => Bound::Text(s.trim().to_string()),
                Value::Str(_) => {
                    return Err("not a timestamp (YYYY-MM-DD HH:MM:SS[.ffffff][+HH:MM], or epoch milliseconds)".to_string());
                }
                _ => {
                    let ms =
                        int().map_err(|e| format!("{e}; a number here is epoch milliseconds"))?;
                    Bound::Micros(
                        ms.checked_sub(PG_EPOCH_SECS * 1000)
                            .and_then(|since_2000| since_2000.checked_mul(1000))
                            .filter(|us| TIMESTAMPS.contains(us))
                            .ok_or("out of range for type timestamp (4713 BC to 294276 AD)")?,
                    )
                }
            }
        }
        Type::DATE => match value {
            Value::Str(s) if is_date(s.trim()) => Bound::Text(s.trim().to_string()),
            Value::Str(_) => {
                return Err("not a date (YYYY-MM-DD, or epoch milliseconds)".to_string());
            }
            _ => {
                let ms = int().map_err(|e| format!("{e}; a number here is epoch milliseconds"))?;
                let days = ms.div_euclid(86_400_000) - PG_EPOCH_SECS / 86_400;
                Bound::Days(date_days(days)?)
            }
        },
        _ => match ty.kind() {
            Kind::Array(elem) => Bound::Text(arrays::array(value, elem)?),
            // Enums, intervals, inet, ranges, ...: the server's input function
            // reads the text (a bad value fails as `sql 22`).
            _ => Bound::Text(text()),
        },
    })
}

/// A whole float as `i64`: a fraction (or NaN) is not a whole number; from
/// 2^63 on (or an infinity) it is out of `int8`'s range, and below it every
/// whole float converts exactly.
fn whole(f: f64) -> Result<i64, String> {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    if f.is_nan() || (f.is_finite() && f.fract() != 0.0) {
        Err("not a whole number".to_string())
    } else if (-LIMIT..LIMIT).contains(&f) {
        Ok(f as i64)
    } else {
        Err("out of range".to_string())
    }
}

/// A float's text as `f64`, refusing what would silently become another
/// value, as PostgreSQL's `float8in` does: a finite number past the range
/// (read as infinity) or a non-zero one below it (read as zero).
fn float_text(s: &str) -> Result<f64, String> {
    let f: f64 = s.parse().map_err(|_| "not a number".to_string())?;
    let mantissa = s.split(['e', 'E']).next().unwrap_or("");
    let digits = mantissa.bytes().any(|b| b.is_ascii_digit());
    let non_zero = mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b));
    if (f.is_infinite() && digits) || (f == 0.0 && non_zero) {
        return Err("out of range for type double precision".to_string());
    }
    Ok(f)
}

/// `f` as `real`, refusing a finite value past its range (about ±3.4e38,
/// which `as` makes infinite) or a non-zero one too small for it (made zero),
/// as PostgreSQL's `float4in` does; subnormal values are taken, as there.
fn real(f: f64) -> Result<f32, String> {
    let r = f as f32;
    if (f.is_finite() && r.is_infinite()) || (f != 0.0 && r == 0.0) {
        return Err("out of range for type real".to_string());
    }
    Ok(r)
}

/// The microseconds since 2000-01-01 PostgreSQL's timestamps hold:
/// 4714-11-24 00:00 BC up to 294277-01-01 (its `MIN_TIMESTAMP` and
/// `END_TIMESTAMP`); the server refuses the binary value of any other.
const TIMESTAMPS: std::ops::Range<i64> = -211_813_488_000_000_000..9_223_371_331_200_000_000;

/// Days since 2000-01-01 as a `date`, within PostgreSQL's range (4713 BC to
/// 5874897 AD): past it the binary value would be refused by the server or,
/// at either end of `i32`, read as `-infinity`/`infinity`.
fn date_days(days: i64) -> Result<i32, String> {
    const FIRST: i64 = -2_451_545; // 4714-11-24 BC, Julian day 0
    const END: i64 = 2_145_031_949; // 5874898-01-01
    if (FIRST..END).contains(&days) {
        Ok(days as i32)
    } else {
        Err("out of range for type date (4713 BC to 5874897 AD)".to_string())
    }
}

fn is_decimal(s: &str) -> bool {
    let s = s.strip_prefix(['-', '+']).unwrap_or(s);
    if matches!(s.to_ascii_lowercase().as_str(), "nan" | "infinity" | "inf") {
        return true;
    }
    let (mantissa, exp) = match s.split_once(['e', 'E']) {
        Some((m, e)) => (m, Some(e)),
        None => (s, None),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = |d: &str| d.bytes().all(|b| b.is_ascii_digit());
    (!int.is_empty() || !frac.is_empty())
        && digits(int)
        && digits(frac)
        && exp.is_none_or(|e| {
            let e = e.strip_prefix(['-', '+']).unwrap_or(e);
            !e.is_empty() && digits(e)
        })
}

fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

fn is_timestamp(s: &str) -> bool {
    if !s.get(..10).is_some_and(is_date) {
        return false;
    }
    let rest = &s[10..];
    if rest.is_empty() {
        return true;
    }
    let rest = match rest.strip_prefix([' ', 'T']) {
        Some(r) => r,
        None => return false,
    };
    let b = rest.as_bytes();
    b.len() >= 5
        && b[2] == b':'
        && rest
            .bytes()
            .all(|c| c.is_ascii_digit() || matches!(c, b':' | b'.' | b'+' | b'-' | b'Z' | b' '))
}

fn hex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

fn uuid(s: &str) -> Option<[u8; 16]> {
    let s = s.trim().trim_start_matches('{').trim_end_matches('}');
    let h: String = s.chars().filter(|c| *c != '-').collect();
    if h.len() != 32 || (s.len() != 32 && s.len() != 36) {
        return None;
    }
    hex(&h)?.try_into().ok()
}

#[cfg(test)]
#[path = "bind_tests.rs"]
mod tests;

#[cfg(test)]
mod range_tests;
