//! Array parameters: a list binding (`ListSized...` and kin) or a JSON array
//! as PostgreSQL's array text, each element checked with the element type as
//! [`bind`] checks a value, and written as that type's input function reads
//! it.

use super::{Bound, bind};
use crate::activity::bindings::Value;
use postgres_types::Type;

/// An array parameter as PostgreSQL's array text, from a list (`ListSized...`
/// and kin) or a JSON array (`[1, 2, null]`), each element checked against
/// `elem` (a nested list or array is one dimension more), or array text as
/// written (`{1,2}`).
pub(super) fn array(value: &Value, elem: &Type) -> Result<String, String> {
    let mut out = String::new();
    match value {
        Value::List(items) => list_text(items, elem, &mut out)?,
        Value::Str(s) if s.trim().starts_with('{') => return Ok(s.trim().to_string()),
        Value::Str(s) => match serde_json::from_str::<serde_json::Value>(s.trim()) {
            Ok(serde_json::Value::Array(items)) => json_text(&items, elem, &mut out)?,
            _ => return Err(not_an_array()),
        },
        _ => return Err(not_an_array()),
    }
    Ok(out)
}

fn not_an_array() -> String {
    "not an array; write a JSON array `[1, 2]` or `{1,2}`, or give a list binding \
     (`ListSizedStepped(...)`)"
        .to_string()
}

/// A list's elements as `{...}` onto `out`.
fn list_text(items: &[Value], elem: &Type, out: &mut String) -> Result<(), String> {
    out.push('{');
    for (i, v) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        match v {
            Value::List(inner) => list_text(inner, elem, out),
            v => element(v, elem, out),
        }
        .map_err(|e| format!("element {i}: {e}"))?;
    }
    out.push('}');
    Ok(())
}

/// A JSON array's elements as `{...}` onto `out` (`null` is NULL).
fn json_text(items: &[serde_json::Value], elem: &Type, out: &mut String) -> Result<(), String> {
    out.push('{');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let v = match item {
            serde_json::Value::Null => {
                out.push_str("NULL");
                continue;
            }
            serde_json::Value::Array(inner) => {
                json_text(inner, elem, out).map_err(|e| format!("element {i}: {e}"))?;
                continue;
            }
            serde_json::Value::String(s) => Value::Str(s.clone()),
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
                (Some(u), _, _) => Value::U64(u),
                (_, Some(i), _) => Value::I64(i),
                (_, _, Some(f)) => Value::F64(f),
                _ => Value::Str(n.to_string()),
            },
            other => Value::Str(other.to_string()),
        };
        element(&v, elem, out).map_err(|e| format!("element {i}: {e}"))?;
    }
    out.push('}');
    Ok(())
}

/// One element, checked against `elem`, quoted onto `out`.
fn element(v: &Value, elem: &Type, out: &mut String) -> Result<(), String> {
    let bound = bind(v, elem)?;
    out.push('"');
    for c in element_text(v, &bound, elem).chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    Ok(())
}

/// An element's text as the server's input function for `elem` reads it,
/// from what it was bound as: numbers as numbers (a whole float bound to an
/// integer type as the integer), booleans as `t`/`f`, epoch milliseconds as
/// ISO text (UTC); anything else as its own text.
fn element_text(v: &Value, bound: &Bound, elem: &Type) -> String {
    let float = |f: f64| match f {
        f64::INFINITY => "Infinity".to_string(),
        f64::NEG_INFINITY => "-Infinity".to_string(),
        f => f.to_string(),
    };
    match bound {
        Bound::I16(n) => n.to_string(),
        Bound::I32(n) => n.to_string(),
        Bound::I64(n) => n.to_string(),
        Bound::U32(n) => n.to_string(),
        // An f32's own shortest text (`0.1`, not the f64's `0.10000000149...`).
        Bound::F32(f) if f.is_finite() => f.to_string(),
        Bound::F32(f) => float(f64::from(*f)),
        Bound::F64(f) => float(*f),
        Bound::Bool(b) => (if *b { "t" } else { "f" }).to_string(),
        Bound::Micros(us) => {
            let (secs, frac) = (us.div_euclid(1_000_000), us.rem_euclid(1_000_000));
            let day = secs.rem_euclid(86_400);
            let zone = if *elem == Type::TIMESTAMPTZ {
                "+00"
            } else {
                ""
            };
            let (date, era) = civil(secs.div_euclid(86_400));
            format!(
                "{date} {:02}:{:02}:{:02}.{frac:06}{zone}{era}",
                day / 3600,
                day / 60 % 60,
                day % 60
            )
        }
        Bound::Days(d) => {
            let (date, era) = civil(i64::from(*d));
            format!("{date}{era}")
        }
        _ => v.to_string(),
    }
}

/// Days since 2000-01-01 as `YYYY-MM-DD` and its era (` BC` before year 1),
/// in the proleptic Gregorian calendar PostgreSQL uses.
fn civil(days: i64) -> (String, &'static str) {
    // Shifted to start on 0000-03-01, in 400-year eras of 146,097 days.
    let z = days + 730_425; // 2000-01-01 is day 730,425 after 0000-03-01
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    // Year 0 is 1 BC.
    let (y, bc) = if y <= 0 { (1 - y, " BC") } else { (y, "") };
    (format!("{y:04}-{m:02}-{d:02}"), bc)
}

/// Issue 22's audit (M2): lists bind to array parameters.
#[cfg(test)]
mod tests {
    use super::*;

    fn b(v: Value, ty: Type) -> Result<Bound, String> {
        bind(&v, &ty)
    }

    /// Regression (audit M2): a list binding was refused for an array
    /// parameter ("not an array").
    #[test]
    fn lists_bind_to_arrays_element_by_element() {
        let list = Value::List(vec![Value::U64(1), Value::I64(-2), Value::F64(3.0)]);
        assert_eq!(
            b(list.clone(), Type::INT4_ARRAY),
            Ok(Bound::Text(r#"{"1","-2","3"}"#.into()))
        );
        assert_eq!(
            b(list, Type::TEXT_ARRAY),
            Ok(Bound::Text(r#"{"1","-2","3"}"#.into()))
        );
        // The element's errors, named by its place.
        let bad = Value::List(vec![Value::U64(1), Value::U64(70_000)]);
        assert_eq!(
            b(bad, Type::INT2_ARRAY),
            Err("element 1: out of range (-32768 to 32767)".into())
        );
        let words = Value::List(vec![
            Value::Str("a \"b\"".into()),
            Value::Str("c\\d".into()),
        ]);
        assert_eq!(
            b(words, Type::TEXT_ARRAY),
            Ok(Bound::Text(r#"{"a \"b\"","c\\d"}"#.into()))
        );
        // NB5's float vectors (f32 elements) keep their own shortest text.
        let v = Value::List(vec![Value::F32(0.1), Value::F32(2.5)]);
        assert_eq!(
            b(v.clone(), Type::FLOAT4_ARRAY),
            Ok(Bound::Text(r#"{"0.1","2.5"}"#.into()))
        );
        assert_eq!(
            b(v, Type::FLOAT8_ARRAY),
            Ok(Bound::Text(r#"{"0.10000000149011612","2.5"}"#.into()))
        );
        // A nested list is a dimension more; so is a nested JSON array.
        let square = Value::List(vec![
            Value::List(vec![Value::U64(1), Value::U64(2)]),
            Value::List(vec![Value::U64(3), Value::U64(4)]),
        ]);
        assert_eq!(
            b(square, Type::INT8_ARRAY),
            Ok(Bound::Text(r#"{{"1","2"},{"3","4"}}"#.into()))
        );
        assert_eq!(
            b(Value::Str("[[1, null], [3, 4]]".into()), Type::INT8_ARRAY),
            Ok(Bound::Text(r#"{{"1",NULL},{"3","4"}}"#.into()))
        );
        assert!(
            b(Value::Bool(true), Type::INT4_ARRAY)
                .unwrap_err()
                .contains("give a list binding")
        );
    }

    /// Elements are written as the element type's input reads them: a whole
    /// float as an integer, booleans as `t`/`f`, epoch milliseconds as UTC
    /// text (not the number, which `timestamp`'s input refuses).
    #[test]
    fn array_elements_are_written_as_their_type_reads_them() {
        let ms = Value::List(vec![
            Value::U64(946_684_800_001),
            Value::I64(-62_135_596_800_000),
        ]);
        assert_eq!(
            b(ms.clone(), Type::TIMESTAMPTZ_ARRAY),
            Ok(Bound::Text(
                r#"{"2000-01-01 00:00:00.001000+00","0001-01-01 00:00:00.000000+00"}"#.into()
            ))
        );
        assert_eq!(
            b(ms, Type::DATE_ARRAY),
            Ok(Bound::Text(r#"{"2000-01-01","0001-01-01"}"#.into()))
        );
        // The day before 0001-01-01 is 1 BC; 2024-02-29 is a leap day.
        let days = Value::List(vec![
            Value::I64(-62_135_596_800_000 - 86_400_000),
            Value::U64(1_709_164_800_000),
        ]);
        assert_eq!(
            b(days, Type::DATE_ARRAY),
            Ok(Bound::Text(r#"{"0001-12-31 BC","2024-02-29"}"#.into()))
        );
        let flags = Value::List(vec![Value::Bool(true), Value::U64(0)]);
        assert_eq!(
            b(flags, Type::BOOL_ARRAY),
            Ok(Bound::Text(r#"{"t","f"}"#.into()))
        );
        assert_eq!(
            b(Value::List(vec![Value::F32(7.0)]), Type::INT4_ARRAY),
            Ok(Bound::Text(r#"{"7"}"#.into()))
        );
        assert_eq!(
            b(Value::Str(r#"["1e400"]"#.into()), Type::FLOAT8_ARRAY),
            Err("element 0: out of range for type double precision".into())
        );
    }
}
