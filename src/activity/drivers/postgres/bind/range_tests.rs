//! Issue 22's audit (M3): a narrowing conversion that would change the value
//! is a `bind` error, not a silent Infinity, zero or `infinity` date.

use super::*;

fn b(v: Value, ty: Type) -> Result<Bound, String> {
    bind(&v, &ty)
}

/// Regression (audit M3): `1e39` bound to `real` became Infinity and
/// `1e-50` became 0.
#[test]
fn real_refuses_what_it_cannot_hold_as_postgresql_does() {
    for v in [
        Value::Str("1e39".into()),
        Value::Str("-1e39".into()),
        Value::F64(1e39),
        Value::Str("1e-50".into()),
        Value::F64(-1e-50),
    ] {
        assert_eq!(
            b(v.clone(), Type::FLOAT4),
            Err("out of range for type real".into()),
            "{v:?}"
        );
    }
    // What real holds, subnormal values too (as float4in takes them), and
    // the infinities and NaN asked for by name.
    assert_eq!(
        b(Value::U64(u64::MAX), Type::FLOAT4),
        Ok(Bound::F32(1.8446744e19))
    );
    assert_eq!(
        b(Value::Str("3.4e38".into()), Type::FLOAT4),
        Ok(Bound::F32(3.4e38))
    );
    assert_eq!(
        b(Value::Str("1e-45".into()), Type::FLOAT4),
        Ok(Bound::F32(1e-45))
    );
    assert_eq!(
        b(Value::Str("0e5".into()), Type::FLOAT4),
        Ok(Bound::F32(0.0))
    );
    assert_eq!(
        b(Value::Str("-Infinity".into()), Type::FLOAT4),
        Ok(Bound::F32(f32::NEG_INFINITY))
    );
    assert_eq!(
        b(Value::F64(f64::INFINITY), Type::FLOAT4),
        Ok(Bound::F32(f32::INFINITY))
    );
    assert!(matches!(b(Value::Str("NaN".into()), Type::FLOAT4), Ok(Bound::F32(f)) if f.is_nan()));
}

/// A whole float bound to an integer: every one within `int8` converts
/// (9.21e18 was refused as "not a whole number"), past it is out of range.
#[test]
fn whole_floats_convert_up_to_int8s_range() {
    assert_eq!(
        b(Value::F64(9.21e18), Type::INT8),
        Ok(Bound::I64(9_210_000_000_000_000_000))
    );
    assert_eq!(
        b(Value::F64(i64::MIN as f64), Type::INT8),
        Ok(Bound::I64(i64::MIN))
    );
    assert_eq!(
        b(Value::F64(-(i64::MIN as f64)), Type::INT8),
        Err("out of range".into())
    );
    assert_eq!(
        b(Value::F64(f64::INFINITY), Type::INT8),
        Err("out of range".into())
    );
    assert_eq!(b(Value::F32(1e20), Type::INT8), Err("out of range".into()));
    assert_eq!(
        b(Value::F64(f64::NAN), Type::INT4),
        Err("not a whole number".into())
    );
    assert_eq!(
        b(Value::F32(2.5), Type::INT4),
        Err("not a whole number".into())
    );
    assert_eq!(b(Value::F64(-3.0), Type::INT2), Ok(Bound::I16(-3)));
}

/// The same for `double precision`, from text (a double value is exact).
#[test]
fn double_precision_text_past_its_range_is_refused() {
    for s in ["1e400", "-1.5E309", "1e-400", "0.000e-999999"] {
        let want = if s.starts_with("0.000") {
            Ok(Bound::F64(0.0))
        } else {
            Err("out of range for type double precision".to_string())
        };
        assert_eq!(b(Value::Str(s.into()), Type::FLOAT8), want, "{s}");
    }
    assert_eq!(
        b(Value::Str("inf".into()), Type::FLOAT8),
        Ok(Bound::F64(f64::INFINITY))
    );
    assert_eq!(
        b(Value::Str("1e-310".into()), Type::FLOAT8),
        Ok(Bound::F64(1e-310))
    );
}

/// A date past PostgreSQL's range was sent as days that the server reads
/// as `infinity` at `i32::MAX` (and refuses elsewhere): a bind error.
#[test]
fn dates_past_postgresqls_range_are_refused() {
    let day = 86_400_000_i64;
    let epoch_2000 = 946_684_800_000_i64;
    // The last day PostgreSQL holds, 5874897-12-31, and the one after.
    let last = epoch_2000 + 2_145_031_948 * day;
    assert_eq!(
        b(Value::I64(last), Type::DATE),
        Ok(Bound::Days(2_145_031_948))
    );
    assert!(
        b(Value::I64(last + day), Type::DATE)
            .unwrap_err()
            .starts_with("out of range for type date")
    );
    let first = epoch_2000 - 2_451_545 * day;
    assert_eq!(
        b(Value::I64(first), Type::DATE),
        Ok(Bound::Days(-2_451_545))
    );
    assert!(b(Value::I64(first - day), Type::DATE).is_err());
    assert!(
        b(
            Value::I64(epoch_2000 + i64::from(i32::MAX) * day),
            Type::DATE
        )
        .is_err()
    );
}

/// Epoch milliseconds past PostgreSQL's timestamps were sent and refused by
/// the server (`sql 22`): a `bind` error here, as a value that cannot take
/// its type is.
#[test]
fn timestamps_past_postgresqls_range_are_refused() {
    let epoch_2000_us = 946_684_800_000_000_i64;
    // 4714-11-24 00:00 BC, the first instant, in epoch milliseconds.
    let first = (-211_813_488_000_000_000 + epoch_2000_us) / 1000;
    assert_eq!(
        b(Value::I64(first), Type::TIMESTAMP),
        Ok(Bound::Micros(-211_813_488_000_000_000))
    );
    let err = b(Value::I64(first - 1), Type::TIMESTAMPTZ).unwrap_err();
    assert_eq!(
        err,
        "out of range for type timestamp (4713 BC to 294276 AD)"
    );
    // The last millisecond of 294276 AD (its microseconds past 2^63 since
    // 1970: the epoch is moved first), and the next.
    let end = 9_223_371_331_200_000_000 / 1000 + epoch_2000_us / 1000;
    assert!(b(Value::I64(end - 1), Type::TIMESTAMP).is_ok());
    assert!(b(Value::I64(end), Type::TIMESTAMP).is_err());
    assert!(b(Value::I64(i64::MAX), Type::TIMESTAMP).is_err());
}
