//! [`Value`]: what a binding produces, and [`Kind`], its type.

use std::fmt;

/// The type of a binding's output, known when the binding is compiled.
///
/// ```
/// use paceline::{Binding, Kind};
/// assert_eq!(Binding::parse("id", "Hash(); Mod(10)")?.kind(), Kind::U64);
/// assert_eq!(Binding::parse("name", "Hash(); ToString()")?.kind(), Kind::Str);
/// # Ok::<(), paceline::BindingError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// An unsigned 64-bit integer (the cycle itself is one).
    U64,
    /// A signed 64-bit integer.
    I64,
    /// A double.
    F64,
    /// A boolean.
    Bool,
    /// A string.
    Str,
    /// A list of values (NB5's `List`, `float[]`, `int[]`, `CqlVector`).
    List,
}

impl Kind {
    pub(crate) fn is_int(self) -> bool {
        matches!(self, Kind::U64 | Kind::I64)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::U64 => "an unsigned integer",
            Kind::I64 => "a signed integer",
            Kind::F64 => "a float",
            Kind::Bool => "a boolean",
            Kind::Str => "a string",
            Kind::List => "a list",
        })
    }
}

/// A binding's value for one cycle. Numbers and booleans never allocate.
///
/// Displays as the plain value (`42`, `-3`, `2.5`, `true`, `text`); converts to
/// JSON with [`to_json`](Self::to_json).
///
/// ```
/// use paceline::Value;
/// assert_eq!(Value::U64(42).to_string(), "42");
/// assert_eq!(Value::Str("k-1".into()).to_json(), serde_json::json!("k-1"));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// An unsigned integer.
    U64(u64),
    /// A signed integer.
    I64(i64),
    /// A double.
    F64(f64),
    /// A boolean.
    Bool(bool),
    /// A string.
    Str(String),
    /// A single-precision float (NB5's `float`, the elements of its float
    /// vectors): of [`Kind::F64`], displayed with `float` precision (`0.1`).
    F32(f32),
    /// A list: displayed as Java's `List.toString` (`[1, 2.5, a]`), JSON as an array.
    List(Vec<Value>),
}

impl Value {
    /// The value's [`Kind`].
    ///
    /// ```
    /// assert_eq!(paceline::Value::F64(1.5).kind(), paceline::Kind::F64);
    /// ```
    pub fn kind(&self) -> Kind {
        match self {
            Value::U64(_) => Kind::U64,
            Value::I64(_) => Kind::I64,
            Value::F64(_) | Value::F32(_) => Kind::F64,
            Value::Bool(_) => Kind::Bool,
            Value::Str(_) => Kind::Str,
            Value::List(_) => Kind::List,
        }
    }

    /// The value as JSON: numbers stay numbers (a non-finite float becomes `null`).
    ///
    /// ```
    /// use paceline::Value;
    /// assert_eq!(Value::I64(-2).to_json(), serde_json::json!(-2));
    /// assert_eq!(Value::Bool(true).to_json(), serde_json::json!(true));
    /// ```
    pub fn to_json(&self) -> serde_json::Value {
        self.clone().into_json()
    }

    /// [`to_json`](Self::to_json) for a value no longer needed: a string moves into
    /// the JSON value instead of being copied (the per-cycle rendering path).
    pub(crate) fn into_json(self) -> serde_json::Value {
        match self {
            Value::U64(v) => v.into(),
            Value::I64(v) => v.into(),
            Value::F64(v) => serde_json::Number::from_f64(v)
                .map_or(serde_json::Value::Null, serde_json::Value::Number),
            Value::Bool(v) => v.into(),
            Value::Str(s) => s.into(),
            Value::F32(v) => serde_json::Number::from_f64(java_f32_as_f64(v))
                .map_or(serde_json::Value::Null, serde_json::Value::Number),
            Value::List(items) => {
                serde_json::Value::Array(items.into_iter().map(Value::into_json).collect())
            }
        }
    }

    /// The value as an integer bit pattern, for integer functions.
    pub(crate) fn as_u64(&self) -> u64 {
        match self {
            Value::U64(v) => *v,
            Value::I64(v) => *v as u64,
            Value::F64(v) => *v as u64,
            Value::F32(v) => *v as u64,
            Value::Bool(v) => u64::from(*v),
            Value::Str(_) | Value::List(_) => 0,
        }
    }

    pub(crate) fn as_f64(&self) -> f64 {
        match self {
            Value::U64(v) => *v as f64,
            Value::I64(v) => *v as f64,
            Value::F64(v) => *v,
            Value::F32(v) => f64::from(*v),
            Value::Bool(v) => f64::from(u8::from(*v)),
            Value::Str(_) | Value::List(_) => 0.0,
        }
    }

    pub(crate) fn into_string(self) -> String {
        match self {
            Value::Str(s) => s,
            other => other.to_string(),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::U64(v) => write!(f, "{v}"),
            Value::I64(v) => write!(f, "{v}"),
            Value::F64(v) => write!(f, "{v}"),
            Value::F32(v) => f.write_str(&java_float(format!("{v:e}"), v.is_finite(), *v < 0.0)),
            Value::Bool(v) => write!(f, "{v}"),
            Value::Str(s) => f.write_str(s),
            Value::List(items) => {
                f.write_str("[")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    match item {
                        Value::F64(v) => f.write_str(&java_double(*v))?,
                        other => write!(f, "{other}")?,
                    }
                }
                f.write_str("]")
            }
        }
    }
}

/// An `f32` as the `f64` whose shortest decimal is the `f32`'s (`0.1f32` is
/// `0.1`, not `0.10000000149011612`): for JSON.
fn java_f32_as_f64(v: f32) -> f64 {
    format!("{v:e}").parse().unwrap_or(f64::from(v))
}

/// A double as Java's `Double.toString` writes it: `5.0`, `0.001`, `1.0E7`,
/// `1.5E-4`, with the shortest digits that read back to the same double.
///
/// ```
/// use paceline::Value;
/// assert_eq!(Value::List(vec![Value::F64(5.0), Value::F64(1e7)]).to_string(), "[5.0, 1.0E7]");
/// ```
pub(crate) fn java_double(v: f64) -> String {
    java_float(format!("{v:e}"), v.is_finite(), v < 0.0)
}

/// Java's `Float.toString`/`Double.toString` from Rust's shortest `{:e}` form
/// (`1.25e-4`): plain from 10^-3 to below 10^7, else `d.dddE±n`.
fn java_float(sci: String, finite: bool, negative: bool) -> String {
    if !finite {
        return match sci.as_str() {
            "NaN" => "NaN".to_string(),
            _ if negative => "-Infinity".to_string(),
            _ => "Infinity".to_string(),
        };
    }
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let zero = digits.bytes().all(|b| b == b'0');
    if zero {
        return format!("{sign}0.0");
    }
    if (-3..7).contains(&exp) {
        if exp >= 0 {
            let point = exp as usize + 1;
            let mut int = digits.clone();
            while int.len() < point {
                int.push('0');
            }
            let frac = &int[point..];
            let frac = if frac.is_empty() { "0" } else { frac };
            format!("{sign}{}.{frac}", &int[..point])
        } else {
            let zeros = "0".repeat((-exp - 1) as usize);
            format!("{sign}0.{zeros}{digits}")
        }
    } else {
        let rest = if digits.len() > 1 { &digits[1..] } else { "0" };
        format!("{sign}{}.{rest}E{exp}", &digits[..1])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Java's `Float.toString` and `Double.toString` (JDK 19+, shortest digits).
    #[test]
    fn floats_display_as_java_writes_them() {
        let f = |v: f32| Value::F32(v).to_string();
        assert_eq!(f(1.0), "1.0");
        assert_eq!(f(3.873_855_8), "3.8738558");
        assert_eq!(f(0.1), "0.1");
        assert_eq!(f(-2.5e-5), "-2.5E-5");
        assert_eq!(f(1.0e7), "1.0E7");
        assert_eq!(f(1234567.0), "1234567.0");
        assert_eq!(f(0.001), "0.001");
        assert_eq!(f(0.0), "0.0");
        assert_eq!(f(f32::NAN), "NaN");
        assert_eq!(java_double(f64::NEG_INFINITY), "-Infinity");
        assert_eq!(java_double(100.0), "100.0");
        assert_eq!(java_double(123_456_789.0), "1.23456789E8");
        assert_eq!(java_double(0.000_12), "1.2E-4");
        let list = Value::List(vec![Value::U64(1), Value::Str("a".into()), Value::F64(2.0)]);
        assert_eq!(list.to_string(), "[1, a, 2.0]");
        assert_eq!(list.to_json(), serde_json::json!([1, "a", 2.0]));
        assert_eq!(Value::F32(0.1).to_json(), serde_json::json!(0.1));
    }
}
