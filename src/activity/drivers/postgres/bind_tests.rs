//! `bind.rs`'s tests: each type's values and refusals, the Bind message
//! against `postgres_protocol`'s encoders, text slots reused.

use super::*;
use proptest::prelude::*;

/// A value of each kind `Bound` has.
fn any_bound() -> impl Strategy<Value = Bound> {
    prop_oneof![
        any::<i16>().prop_map(Bound::I16),
        any::<i32>().prop_map(Bound::I32),
        any::<i64>().prop_map(Bound::I64),
        any::<u32>().prop_map(Bound::U32),
        any::<f32>().prop_map(Bound::F32),
        any::<f64>().prop_map(Bound::F64),
        any::<bool>().prop_map(Bound::Bool),
        proptest::collection::vec(any::<u8>(), 0..40).prop_map(Bound::Bytes),
        "[a-z{}:\\[\\]0-9 ]{0,30}".prop_map(|s| Bound::Jsonb(s.into_bytes())),
        any::<[u8; 16]>().prop_map(Bound::Uuid),
        any::<i64>().prop_map(Bound::Micros),
        any::<i32>().prop_map(Bound::Days),
        ".{0,30}".prop_map(Bound::Text),
    ]
}

/// What `postgres_types` writes for the Rust value each kind stands for
/// (`jsonb`: its version byte, then the text).
fn reference(
    v: &Bound,
    buf: &mut bytes::BytesMut,
) -> Result<postgres_protocol::IsNull, Box<dyn std::error::Error + Sync + Send>> {
    use postgres_types::ToSql;
    match v {
        Bound::I16(x) => x.to_sql(&Type::INT2, buf),
        Bound::I32(x) | Bound::Days(x) => x.to_sql(&Type::INT4, buf),
        Bound::I64(x) | Bound::Micros(x) => x.to_sql(&Type::INT8, buf),
        Bound::U32(x) => x.to_sql(&Type::OID, buf),
        Bound::F32(x) => x.to_sql(&Type::FLOAT4, buf),
        Bound::F64(x) => x.to_sql(&Type::FLOAT8, buf),
        Bound::Bool(x) => x.to_sql(&Type::BOOL, buf),
        Bound::Bytes(x) => x.as_slice().to_sql(&Type::BYTEA, buf),
        Bound::Jsonb(x) => {
            buf.extend_from_slice(&[1]);
            x.as_slice().to_sql(&Type::BYTEA, buf)
        }
        Bound::Uuid(x) => x.as_slice().to_sql(&Type::BYTEA, buf),
        Bound::Text(x) => x.as_str().to_sql(&Type::TEXT, buf),
    }?;
    Ok(postgres_protocol::IsNull::No)
}

/// The op's fast path for text parameters: a slot reused op after op
/// keeps its buffer (no allocation once it holds the longest value), and
/// a string value is copied into it once (not cloned, then copied).
#[test]
fn a_text_parameter_reuses_its_slots_buffer() {
    let mut slot = Bound::Bool(false);
    bind_into(&Value::Str("key-000000001".into()), &Type::TEXT, &mut slot).unwrap();
    let Bound::Bytes(b) = &slot else {
        panic!("{slot:?}")
    };
    let (at, cap) = (b.as_ptr(), b.capacity());
    for v in [
        Value::Str("k2".into()),
        Value::U64(123_456),
        Value::Str("key-000000003".into()),
    ] {
        bind_into(&v, &Type::VARCHAR, &mut slot).unwrap();
        let Bound::Bytes(b) = &slot else {
            panic!("{slot:?}")
        };
        assert_eq!((b.as_ptr(), b.capacity()), (at, cap), "{v:?}");
        assert_eq!(b, v.to_string().as_bytes());
    }
}

/// The op's fast path for integer keys (`int_param`): an integer value in
/// range of an `int2`, `int4` or `int8` parameter takes it, and binds as
/// `bind` does; a value out of range, of another kind or for another type
/// does not (`bind` gives the value or says why).
#[test]
fn an_integer_in_range_takes_the_integer_path() {
    for (v, ty) in [
        (Value::U64(7), Type::INT4),
        (Value::I64(-7), Type::INT2),
        (Value::U64(i64::MAX as u64), Type::INT8),
        (Value::I64(i32::MIN.into()), Type::INT4),
    ] {
        assert_eq!(
            int_param(&v, &ty),
            Some(bind(&v, &ty).unwrap()),
            "{v:?} {ty}"
        );
    }
    for (v, ty) in [
        (Value::U64(u64::MAX), Type::INT8),
        (Value::U64(70_000), Type::INT2),
        (Value::I64(i64::from(i32::MAX) + 1), Type::INT4),
        (Value::Str("7".into()), Type::INT4),
        (Value::F64(7.0), Type::INT8),
        (Value::U64(7), Type::NUMERIC),
        (Value::U64(7), Type::TEXT),
        (Value::U64(7), Type::OID),
    ] {
        assert_eq!(int_param(&v, &ty), None, "{v:?} {ty}");
    }
}

/// Any binding value: each kind, strings with spaces and non-ASCII.
fn any_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<u64>().prop_map(Value::U64),
        any::<i64>().prop_map(Value::I64),
        any::<f64>().prop_map(Value::F64),
        any::<f32>().prop_map(Value::F32),
        any::<bool>().prop_map(Value::Bool),
        ".{0,40}".prop_map(Value::Str),
        proptest::collection::vec(any::<i64>().prop_map(Value::I64), 0..4).prop_map(Value::List),
    ]
}

proptest! {
    /// A parameter bound into a slot another value used (the pool's
    /// scratch, reused op after op) is what binding it afresh gives, or
    /// the same error, for every type the op's path treats apart.
    #[test]
    fn binding_into_a_reused_slot_is_binding_afresh(
        before in any_value(),
        value in any_value(),
        ty in prop_oneof![
            Just(Type::TEXT), Just(Type::VARCHAR), Just(Type::BPCHAR), Just(Type::NAME),
            Just(Type::UNKNOWN), Just(Type::INT2), Just(Type::INT4), Just(Type::INT8),
            Just(Type::BYTEA),
            Just(Type::JSON), Just(Type::NUMERIC),
        ],
        before_ty in prop_oneof![Just(Type::TEXT), Just(Type::INT4), Just(Type::BYTEA)],
    ) {
        let mut slot = bind(&before, &before_ty).unwrap_or(Bound::Bool(false));
        let kept = slot.clone();
        match (bind_into(&value, &ty, &mut slot), bind(&value, &ty)) {
            (Ok(()), Ok(fresh)) => prop_assert_eq!(slot, fresh),
            (Err(a), Err(b)) => {
                prop_assert_eq!(a, b);
                prop_assert_eq!(slot, kept);
            }
            (a, b) => prop_assert!(false, "into {:?}, afresh {:?}", a, b),
        }
    }

    /// The op's messages, written in place (`wire::hot::bind_execute_sync`),
    /// are byte for byte what `postgres_protocol`'s encoders write for
    /// the same values, after whatever the buffer held.
    #[test]
    fn the_bind_message_is_the_protocol_crates_byte_for_byte(
        values in proptest::collection::vec(any_bound(), 0..6),
        name in "s[0-9]{1,3}",
        before in proptest::collection::vec(any::<u8>(), 0..8),
    ) {
        use postgres_protocol::message::frontend;
        let mut ours = bytes::BytesMut::from(&before[..]);
        super::super::wire::hot::bind_execute_sync(&name, &values, &mut ours).unwrap();
        let mut theirs = bytes::BytesMut::from(&before[..]);
        frontend::bind(
            "",
            &name,
            values.iter().map(|v| i16::from(v.binary())),
            values.iter(),
            reference,
            None::<i16>,
            &mut theirs,
        )
        .map_err(|_| "the reference encoder failed")
        .unwrap();
        frontend::execute("", 0, &mut theirs).unwrap();
        frontend::sync(&mut theirs);
        prop_assert_eq!(&ours[..], &theirs[..]);
    }
}

fn b(v: Value, ty: Type) -> Result<Bound, String> {
    bind(&v, &ty)
}

#[test]
fn integers_take_their_kind_and_range() {
    assert_eq!(b(Value::U64(7), Type::INT4), Ok(Bound::I32(7)));
    assert_eq!(b(Value::Str(" -3 ".into()), Type::INT2), Ok(Bound::I16(-3)));
    assert_eq!(b(Value::F64(2.0), Type::INT8), Ok(Bound::I64(2)));
    assert!(
        b(Value::U64(70_000), Type::INT2)
            .unwrap_err()
            .contains("out of range")
    );
    assert!(
        b(Value::Str("x".into()), Type::INT4)
            .unwrap_err()
            .contains("not an integer")
    );
    assert!(b(Value::F64(1.5), Type::INT4).is_err());
    assert_eq!(
        b(Value::U64(u64::MAX), Type::INT8),
        Err("out of range".into())
    );
}

#[test]
fn floats_text_and_bools() {
    assert_eq!(b(Value::U64(3), Type::FLOAT8), Ok(Bound::F64(3.0)));
    assert_eq!(
        b(Value::Str("1.5".into()), Type::FLOAT4),
        Ok(Bound::F32(1.5))
    );
    assert_eq!(
        b(Value::U64(42), Type::TEXT),
        Ok(Bound::Bytes(b"42".to_vec()))
    );
    assert_eq!(
        b(Value::Str("on".into()), Type::BOOL),
        Ok(Bound::Bool(true))
    );
    assert!(b(Value::U64(2), Type::BOOL).is_err());
}

#[test]
fn numeric_is_checked_then_sent_as_text() {
    assert_eq!(
        b(Value::Str("-12.50".into()), Type::NUMERIC),
        Ok(Bound::Text("-12.50".into()))
    );
    assert_eq!(
        b(Value::Str("1e-3".into()), Type::NUMERIC),
        Ok(Bound::Text("1e-3".into()))
    );
    assert_eq!(b(Value::U64(9), Type::NUMERIC), Ok(Bound::Text("9".into())));
    assert!(b(Value::Str("12,5".into()), Type::NUMERIC).is_err());
    assert!(b(Value::Str(".".into()), Type::NUMERIC).is_err());
}

#[test]
fn uuid_bytea_and_json() {
    let u = b(
        Value::Str("123e4567-e89b-12d3-a456-426614174000".into()),
        Type::UUID,
    )
    .unwrap();
    assert_eq!(
        u,
        Bound::Uuid([
            0x12, 0x3e, 0x45, 0x67, 0xe8, 0x9b, 0x12, 0xd3, 0xa4, 0x56, 0x42, 0x66, 0x14, 0x17,
            0x40, 0x00
        ])
    );
    assert!(b(Value::Str("123e4567".into()), Type::UUID).is_err());
    assert_eq!(
        b(Value::Str("\\x00ff".into()), Type::BYTEA),
        Ok(Bound::Bytes(vec![0, 255]))
    );
    assert!(b(Value::Str("\\x0g".into()), Type::BYTEA).is_err());
    assert_eq!(
        b(Value::Str("{\"a\":1}".into()), Type::JSONB),
        Ok(Bound::Jsonb(b"{\"a\":1}".to_vec()))
    );
    assert!(
        b(Value::Str("{a".into()), Type::JSON)
            .unwrap_err()
            .starts_with("not JSON")
    );
    assert_eq!(
        b(Value::U64(5), Type::JSON),
        Ok(Bound::Bytes(b"5".to_vec()))
    );
}

#[test]
fn timestamps_and_dates_from_epoch_millis_or_text() {
    // 2000-01-01T00:00:00.001Z is 1 ms after PostgreSQL's epoch.
    assert_eq!(
        b(Value::U64(946_684_800_001), Type::TIMESTAMPTZ),
        Ok(Bound::Micros(1000))
    );
    assert_eq!(
        b(Value::U64(0), Type::TIMESTAMP),
        Ok(Bound::Micros(-946_684_800_000_000))
    );
    assert_eq!(
        b(Value::U64(946_684_800_000 + 86_400_000), Type::DATE),
        Ok(Bound::Days(1))
    );
    assert_eq!(b(Value::I64(-1), Type::DATE), Ok(Bound::Days(-10_958)));
    assert_eq!(
        b(
            Value::Str("2024-02-29 12:00:00.5+01:00".into()),
            Type::TIMESTAMPTZ
        ),
        Ok(Bound::Text("2024-02-29 12:00:00.5+01:00".into()))
    );
    assert!(b(Value::Str("yesterday".into()), Type::TIMESTAMP).is_err());
    assert!(b(Value::Str("2024/02/29".into()), Type::DATE).is_err());
}

#[test]
fn arrays_from_json_checked_per_element() {
    let int4s = Type::INT4_ARRAY;
    assert_eq!(
        b(Value::Str("[1, 2, null]".into()), int4s.clone()),
        Ok(Bound::Text("{\"1\",\"2\",NULL}".into()))
    );
    assert!(
        b(Value::Str("[1, \"x\"]".into()), int4s.clone())
            .unwrap_err()
            .starts_with("element 1")
    );
    assert_eq!(
        b(Value::Str("{1,2}".into()), int4s.clone()),
        Ok(Bound::Text("{1,2}".into()))
    );
    assert_eq!(
        b(Value::Str(r#"["a\"b"]"#.into()), Type::TEXT_ARRAY),
        Ok(Bound::Text(r#"{"a\"b"}"#.into()))
    );
    assert!(b(Value::U64(1), int4s).is_err());
}

/// Audit p16 H3: non-ASCII text bound to a timestamp panicked (`&s[..10]` inside a
/// character) instead of failing as a bind error.
#[test]
fn non_ascii_text_is_no_timestamp_and_no_panic() {
    for s in ["abcdefghi€x", "2024-01-0€", "2024-01-01€00:00"] {
        assert!(b(Value::Str(s.into()), Type::TIMESTAMP).is_err(), "{s}");
        assert!(b(Value::Str(s.into()), Type::TIMESTAMPTZ).is_err(), "{s}");
    }
}

proptest! {
    /// Any text binds to a timestamp or date, or fails with a message: no panic.
    #[test]
    fn any_text_binds_or_fails_as_a_timestamp(s in "\\PC{0,24}") {
        let _ = b(Value::Str(s.clone()), Type::TIMESTAMP);
        let _ = b(Value::Str(s), Type::DATE);
    }
}
