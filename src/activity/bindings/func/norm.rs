//! NB5's three vector normalizers, each with its own arithmetic:
//! `NormalizeDoubleVector` and `NormalizeFloatVector` (`virtdata-lib-vectors`
//! `primitive/`) and adapter-cqld4's `geometry/NormalizeCqlVector`.

use crate::activity::bindings::value::Value;

/// Which of NB5's normalizers: each has its own arithmetic.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Norm {
    /// `x / sqrt(sum x*x)` in doubles.
    Double,
    /// The squares summed as `float` products, `(float) (x / scale)`.
    Float,
    /// `x * (1 / sqrt(sum x*x))` rounded to `float` (for `Double` elements
    /// too, kept as the double of that float).
    Cql,
}

/// A normalized list, as the normalizer `norm` computes it. A zero vector is
/// NaNs, as in Java (0 / 0).
pub(crate) fn normalize(items: Vec<Value>, norm: Norm) -> Vec<Value> {
    let sum: f64 = items
        .iter()
        .map(|x| match (norm, x) {
            (Norm::Float, Value::F32(f)) => f64::from(f * f),
            (_, x) => x.as_f64() * x.as_f64(),
        })
        .sum();
    let scale = sum.sqrt();
    let factor = 1.0 / scale;
    items
        .into_iter()
        .map(|x| match (norm, x) {
            (Norm::Double, x) => Value::F64(x.as_f64() / scale),
            (Norm::Float, Value::F32(f)) => Value::F32((f64::from(f) / scale) as f32),
            (Norm::Float, x) => Value::F32((x.as_f64() / scale) as f32),
            (Norm::Cql, Value::F32(f)) => Value::F32((f64::from(f) * factor) as f32),
            (Norm::Cql, x) => Value::F64(f64::from((x.as_f64() * factor) as f32)),
        })
        .collect()
}
