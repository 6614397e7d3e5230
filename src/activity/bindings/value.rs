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
            Value::F64(_) => Kind::F64,
            Value::Bool(_) => Kind::Bool,
            Value::Str(_) => Kind::Str,
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
        }
    }

    /// The value as an integer bit pattern, for integer functions.
    pub(crate) fn as_u64(&self) -> u64 {
        match self {
            Value::U64(v) => *v,
            Value::I64(v) => *v as u64,
            Value::F64(v) => *v as u64,
            Value::Bool(v) => u64::from(*v),
            Value::Str(_) => 0,
        }
    }

    pub(crate) fn as_f64(&self) -> f64 {
        match self {
            Value::U64(v) => *v as f64,
            Value::I64(v) => *v as f64,
            Value::F64(v) => *v,
            Value::Bool(v) => f64::from(u8::from(*v)),
            Value::Str(_) => 0.0,
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
            Value::Bool(v) => write!(f, "{v}"),
            Value::Str(s) => f.write_str(s),
        }
    }
}
