//! NB5's lists, vectors, dates and overloads (issue 26, items 2 and 6): values
//! pinned against NB5's Java sources (named in each test), with paceline's
//! hash where NB5 hashes.

use paceline::{Binding, Value};

fn eval(expr: &str, cycle: u64) -> Value {
    Binding::parse("b", expr)
        .unwrap_or_else(|e| panic!("{expr}: {e}"))
        .eval(cycle)
}

fn err(expr: &str) -> String {
    Binding::parse("b", expr)
        .err()
        .unwrap_or_else(|| panic!("{expr} compiled"))
        .to_string()
}

fn list(v: Value) -> Vec<Value> {
    match v {
        Value::List(items) => items,
        other => panic!("not a list: {other:?}"),
    }
}

/// `from_long/to_collection/ListSizedStepped.java`, `ListSized.java`,
/// `ListStepped.java`, `ListFunctions.java`: element i from `input + i`, from
/// the input, one per function, the last function repeated.
#[test]
fn stepped_and_plain_lists_take_their_inputs_as_nb5() {
    let v = eval("ListSizedStepped(3, long->ToString())", 5);
    assert_eq!(
        v,
        Value::List(vec![
            Value::Str("5".into()),
            Value::Str("6".into()),
            Value::Str("7".into())
        ])
    );
    assert_eq!(v.to_string(), "[5, 6, 7]", "Java's List.toString");
    assert_eq!(
        eval("ListSizedStepped(4, Identity(), Add(10))", 1).to_string(),
        "[1, 12, 13, 14]"
    );
    assert_eq!(eval("ListSized(2, Identity())", 9).to_string(), "[9, 9]");
    assert_eq!(
        eval("ListFunctions(Identity(), Add(1))", 4).to_string(),
        "[4, 5]"
    );
    assert_eq!(
        eval("ListStepped(Identity(), Identity())", 4).to_string(),
        "[4, 5]"
    );
    // The size from a chain of the input: 7 mod 3 is 1.
    assert_eq!(
        list(eval("ListSizedStepped(Mod(3), Identity())", 7)).len(),
        1
    );
    assert_eq!(eval("ListSizedStepped(0, Identity())", 7).to_string(), "[]");
    assert_eq!(
        eval("ListSizedStepped(2, Identity())", 3).to_json(),
        serde_json::json!([3, 4])
    );
}

/// `ListSizedHashed.java`, `ListHashed.java`: element i from the input hashed
/// i + 1 times (`Hash()` here).
#[test]
fn hashed_lists_rehash_for_each_element() {
    let Value::U64(h1) = eval("Hash()", 11) else {
        panic!()
    };
    let Value::U64(h2) = eval("Hash()", h1) else {
        panic!()
    };
    assert_eq!(
        eval("ListSizedHashed(2, Identity())", 11),
        Value::List(vec![Value::U64(h1), Value::U64(h2)])
    );
    assert_eq!(
        eval("ListHashed(Identity(), Identity())", 11),
        eval("ListSizedHashed(2, Identity())", 11)
    );
    // `HashRange(0.0f, 100.0f) -> float` elements: single-precision floats.
    for x in list(eval(
        "ListSizedHashed(5, HashRange(0.0f, 100.0f) -> float)",
        3,
    )) {
        let Value::F32(f) = x else { panic!("{x:?}") };
        assert!((0.0..100.0).contains(&f));
    }
}

/// `virtdata-lib-vectors/.../HashedFloatVectors.java`: `size` floats from
/// `HashRange(0.0, 1.0)` (or min, max) of `hash(input) + i`, as `float`s.
#[test]
fn hashed_float_vectors_are_floats_in_range() {
    let v = list(eval("HashedFloatVectors(4)", 2));
    assert_eq!(v.len(), 4);
    for x in &v {
        let Value::F32(f) = x else { panic!("{x:?}") };
        assert!((0.0..1.0).contains(f));
        // Float.toString: the shortest digits that read back to the float.
        assert_eq!(x.to_string().parse::<f32>().unwrap(), *f);
    }
    assert_ne!(v[0], v[1]);
    for x in list(eval("HashedFloatVectors(3, 10.0, 20.0)", 9)) {
        assert!((10.0..20.0).contains(&x_f64(&x)));
    }
    assert_eq!(list(eval("HashedFloatVectors(Mod(5))", 13)).len(), 3);
}

fn x_f64(v: &Value) -> f64 {
    match v {
        Value::F32(f) => f64::from(*f),
        Value::F64(f) => *f,
        other => panic!("{other:?}"),
    }
}

/// `adapter-cqld4/.../CqlVector.java`, `from_number_list/ToCqlVector.java`,
/// `geometry/NormalizeCqlVector.java`: the list as a vector (the driver's
/// `CqlVector` prints as the list does), normalized to length 1.
#[test]
fn cql_vectors_are_the_list_and_normalize_to_unit_length() {
    let inner = "ListSizedHashed(3, HashRange(0.0f, 100.0f))";
    assert_eq!(eval(&format!("CqlVector({inner})"), 4), eval(inner, 4));
    assert_eq!(eval(&format!("{inner}; ToCqlVector()"), 4), eval(inner, 4));
    let n = list(eval(
        &format!("CqlVector({inner}); NormalizeCqlVector()"),
        4,
    ));
    let len: f64 = n.iter().map(|x| x_f64(x) * x_f64(x)).sum::<f64>().sqrt();
    // Each element rounded to a float, as NB5's (doubles too): 1 to 1e-7.
    assert!((len - 1.0).abs() < 1e-7, "{len}");
    assert!(err("Mod(3); ToCqlVector()").contains("takes a list"));
    assert!(err("CqlVector(Hash())").contains("needs a chain that gives a list"));
}

/// `from_long/to_string/CharBufImage.java`: a slice of a prebuilt image, its
/// size from the size argument, at a hashed position.
#[test]
fn char_buf_image_slices_an_image_of_the_character_set() {
    for c in 0..50 {
        let Value::Str(s) = eval("CharBufImage('A-C', 1000, 10)", c) else {
            panic!()
        };
        assert_eq!(s.len(), 10);
        assert!(s.chars().all(|ch| ('A'..='C').contains(&ch)), "{s}");
        let Value::Str(s) = eval("CharBufImage('a-z', 2000, HashRange(5, 9))", c) else {
            panic!()
        };
        assert!((5..=9).contains(&s.len()), "{s}");
    }
    assert_eq!(
        eval("CharBufImage('A-C', 1000, 10)", 3),
        eval("CharBufImage('A-C', 1000, 10)", 3)
    );
    // `CharBufImage(size)`: the whole image, of `a-zA-Z0-9 `.
    let Value::Str(s) = eval("CharBufImage(8)", 1) else {
        panic!()
    };
    assert_eq!(s.len(), 8);
}

fn write_xvec(name: &str, records: &[Vec<[u8; 4]>]) -> String {
    let dir = std::env::temp_dir().join(format!("paceline-xvec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    let mut bytes = Vec::new();
    for r in records {
        bytes.extend_from_slice(&(r.len() as u32).to_le_bytes());
        for w in r {
            bytes.extend_from_slice(w);
        }
    }
    std::fs::write(&path, bytes).unwrap();
    path.display().to_string()
}

/// `virtdata-lib-io/.../FVecReader.java`, `IVecReader.java`: record `input mod
/// count` (or the limit given), little-endian, the dimension checked.
#[test]
fn fvec_and_ivec_readers_read_the_record_of_the_input() {
    let f = |x: f32| x.to_le_bytes();
    let fvec = write_xvec(
        "base.fvec",
        &[
            vec![f(0.5), f(-1.0)],
            vec![f(0.25), f(2.0)],
            vec![f(0.1), f(3.0)],
        ],
    );
    assert_eq!(
        eval(&format!("FVecReader('{fvec}')"), 4).to_string(),
        "[0.25, 2.0]"
    );
    assert_eq!(
        eval(&format!("FVecReader('{fvec}')"), 2),
        Value::List(vec![Value::F32(0.1), Value::F32(3.0)])
    );
    // A record limit of 2: cycle 2 is record 0.
    assert_eq!(
        eval(&format!("FVecReader('{fvec}', 2, 2)"), 2).to_string(),
        "[0.5, -1.0]"
    );
    assert!(
        err(&format!("FVecReader('{fvec}', 3, 0)")).contains("the dimension is 2, but 3 was asked")
    );
    assert!(err(&format!("FVecReader('{fvec}', 2, 9)")).contains("9 records were asked"));
    let i = |x: i32| x.to_le_bytes();
    let ivec = write_xvec("idx.ivec", &[vec![i(7), i(-3), i(9)]]);
    assert_eq!(
        eval(&format!("IVecReader('{ivec}')"), 5),
        Value::List(vec![Value::I64(7), Value::I64(-3), Value::I64(9)])
    );
    let missing = err("FVecReader('testdata/glove_1000_base_vectors.fvec')");
    assert!(
        missing.contains("cannot read the fvec file `testdata/glove_1000_base_vectors.fvec`"),
        "{missing}"
    );
    assert!(missing.contains("into `testdata/`"), "{missing}");
    // A file whose size is not whole records.
    let torn = write_xvec("torn.fvec", &[vec![f(1.0), f(2.0)]]);
    let mut bytes = std::fs::read(&torn).unwrap();
    bytes.push(0);
    std::fs::write(&torn, bytes).unwrap();
    assert!(err(&format!("FVecReader('{torn}')")).contains("is not a multiple of the record"));
    let _ = std::fs::remove_dir_all(std::path::Path::new(&fvec).parent().unwrap());
}

/// `from_long/to_time_types/ToJavaInstant.java`, `ToDate.java`:
/// `input * spacing / repeat` epoch milliseconds, printed as `Instant.toString`
/// and `Date.toString` (UTC); `StringDateWrapper.java`: a Joda-Time pattern.
#[test]
fn dates_render_as_java_prints_them() {
    assert_eq!(
        eval("ToJavaInstant()", 1_517_461_200_123),
        Value::Str("2018-02-01T05:00:00.123Z".into())
    );
    assert_eq!(
        eval("ToJavaInstant(86400000)", 1).to_string(),
        "1970-01-02T00:00:00Z"
    );
    assert_eq!(
        eval("ToJavaInstant(86400000, 2)", 3).to_string(),
        "1970-01-02T12:00:00Z"
    );
    assert_eq!(
        eval("Mul(100L); Div(10000L); ToJavaInstant()", 12_345).to_string(),
        "1970-01-01T00:00:00.123Z"
    );
    assert_eq!(
        eval("ToDate()", 0).to_string(),
        "Thu Jan 01 00:00:00 UTC 1970"
    );
    assert_eq!(
        eval(
            "StartingEpochMillis('2018-02-01 05:00:00'); StringDateWrapper(\"yyyy-MM-dd HH:mm:ss.SSS\")",
            61_001
        )
        .to_string(),
        "2018-02-01 05:01:01.001"
    );
    assert_eq!(
        eval(
            "StringDateWrapper(\"yyyy-MM-dd'T'hh:mm:ss'Z\")",
            13 * 3_600_000
        )
        .to_string(),
        "1970-01-01T01:00:00Z"
    );
    let e = err("StringDateWrapper('yyyy-ww')");
    assert!(
        e.contains("the letter `w` of the date pattern `yyyy-ww`"),
        "{e}"
    );
    assert!(err("Prefix('t'); ToJavaInstant()").contains("epoch milliseconds"));
}

/// NB5's resolver picks the overload that fits the chain: `to_double.Add`
/// after a double (`dynamodb-timeseries2.yaml`'s `Normal(0.0,5.0); Add(100.0)`),
/// `to_double.Div` (`bindings_bigdecimal.yaml`), and curves4's discrete
/// `long_long/Uniform` (min to max, both included) where an integer is needed.
#[test]
fn overloads_follow_the_type_of_the_chain() {
    assert_eq!(eval("ToDouble(); Div(100.0d)", 250), Value::F64(2.5));
    assert_eq!(eval("Add(0.5)", 2), Value::F64(2.5));
    assert!(matches!(eval("Normal(0.0, 5.0); Add(100.0)", 9), Value::F64(v) if v > 50.0));
    assert!(matches!(
        eval("Hash(); Uniform(0, 1000); Hash()", 9),
        Value::U64(_)
    ));
    let seen: std::collections::BTreeSet<u64> = (0..300)
        .map(|c| match eval("Uniform(3, 5) -> int", c) {
            Value::U64(v) => v,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        seen,
        [3, 4, 5].into(),
        "max included, as NB5's discrete form"
    );
    // Alone, paceline's `Uniform` stays the float it always was.
    assert!(matches!(eval("Uniform(0, 9)", 1), Value::F64(_)));
    assert_eq!(eval("Discard()", 3), Value::Str("discard".into()));
}

/// `virtdata-lib-realer/.../FirstNames.java`, `LastNames.java`, `FullNames.java`
/// (`Template("{} {}", FirstNames(), LastNames())`: input, then input + 1),
/// `CountryCodes.java`: draws from the bundled census and country lists.
#[test]
fn names_and_country_codes_come_from_the_bundled_lists() {
    let b = |e: &str| Binding::parse("b", e).unwrap();
    let (fst, lst, full, cc) = (
        b("FirstNames()"),
        b("LastNames()"),
        b("FullNames()"),
        b("CountryCodes()"),
    );
    let first: std::collections::BTreeSet<String> =
        (0..400).map(|c| fst.eval(c).to_string()).collect();
    assert!(first.len() > 100, "{}", first.len());
    // Mary is 2.6 % of the women, about 1.3 % of the draws: in 2000 draws, some.
    let marys = (0..2000)
        .filter(|c| fst.eval(*c).to_string() == "Mary")
        .count();
    assert!((5..70).contains(&marys), "{marys}");
    for c in 0..50 {
        let full = full.eval(c).to_string();
        assert_eq!(full, format!("{} {}", fst.eval(c), lst.eval(c + 1)));
        let code = cc.eval(c).to_string();
        assert!(
            code.len() == 2 && code.chars().all(|ch| ch.is_ascii_uppercase()),
            "{code}"
        );
    }
    let smiths = (0..5000)
        .filter(|c| lst.eval(*c).to_string() == "Smith")
        .count();
    // Smith is 1.006 % of 79.59 % weighted: about 1.26 %, 63 of 5000.
    assert!((30..110).contains(&smiths), "{smiths}");
}

/// `virtdata-lib-realer/.../Cities.java`, `Counties.java` (both
/// `CSVSampler("city", "n/a", "name", "data/simplemaps/uszips.csv")`: distinct
/// names, equal weights), `StateNames.java`, `StateCodes.java`,
/// `CountryNames.java` (`CSVSampler("COUNTRY_NAME", ..., "data/countries.csv")`):
/// draws from the bundled census places, states and NB5's country list
/// (`src/activity/bindings/data/README.md`). `ZipCodes.java` and the
/// `*ByPopulation` ones read only `uszips.csv`, which NB5's repository does not
/// carry: refused, naming it.
#[test]
fn place_functions_draw_from_the_bundled_census_and_country_lists() {
    let b = |e: &str| Binding::parse("b", e).unwrap();
    let (cities, counties) = (b("Cities()"), b("Counties()"));
    let seen: std::collections::BTreeSet<String> =
        (0..500).map(|c| cities.eval(c).to_string()).collect();
    assert!(
        seen.len() > 450,
        "19,577 names, equal weights: {}",
        seen.len()
    );
    for c in 0..50 {
        let city = cities.eval(c).to_string();
        assert!(!city.is_empty() && !city.ends_with(" city") && !city.ends_with(" CDP"));
        assert_eq!(
            counties.eval(c).to_string(),
            city,
            "NB5's Counties: the city column"
        );
    }
    let states: std::collections::BTreeSet<String> = (0..2000)
        .map(|c| b("StateNames()").eval(c).to_string())
        .collect();
    assert_eq!(
        states.len(),
        52,
        "50 states, DC and Puerto Rico, each drawn"
    );
    assert!(states.contains("New York") && states.contains("District of Columbia"));
    let code = b("StateCodes()").eval(7).to_string();
    assert!(code.len() == 2 && code.chars().all(|c| c.is_ascii_uppercase()));
    let countries: std::collections::BTreeSet<String> = (0..3000)
        .map(|c| b("CountryNames()").eval(c).to_string())
        .collect();
    assert!(countries.len() > 230 && countries.contains("Afghanistan"));
    assert!(err("ZipCodes()").contains("uszips.csv"));
    assert!(err("CitiesByPopulation()").contains("`population` column"));
    assert!(err("TimeZones()").contains("uszips.csv"));
}

/// `unary_string/FirstLines.java` (n = 1: the first line; else the first n - 1
/// lines joined), `from_long/to_string/ModuloLineToString.java` (line `input mod
/// count`), `stateful/SaveString.java` (the value passes through).
#[test]
fn first_lines_modulo_lines_and_saves() {
    let dir = std::env::temp_dir().join(format!("paceline-lines-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("msg.txt");
    std::fs::write(&path, "one\ntwo\r\nthree\n").unwrap();
    let p = path.display();
    assert_eq!(eval(&format!("FirstLines('{p}')"), 9).to_string(), "one");
    assert_eq!(
        eval(&format!("Discard(); FirstLines('{p}', 3)"), 9).to_string(),
        "onetwo"
    );
    assert_eq!(
        eval(&format!("FirstLines('{p}', 10)"), 9).to_string(),
        "onetwo"
    );
    assert_eq!(
        eval(&format!("ModuloLineToString('{p}')"), 4).to_string(),
        "two"
    );
    assert_eq!(
        eval("Template('user-{}', ToString()); SaveString('userid')", 7).to_string(),
        "user-7"
    );
    assert!(err(&format!("FirstLines('{p}', 0)")).contains("needs n >= 1"));
    assert!(err("FirstLines('data/nope-not-here.txt')").contains("data/nope-not-here.txt"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `from_long/to_long/HashRangeScaled.java`: `(hash(x) % x) * scale`, 0 for 0.
#[test]
fn hash_range_scaled_stays_below_the_input_times_the_scale() {
    assert_eq!(eval("HashRangeScaled()", 0), Value::I64(0));
    for c in 1..300u64 {
        let Value::I64(v) = eval("HashRangeScaled()", c) else {
            panic!()
        };
        assert!((0..c as i64).contains(&v), "{c}: {v}");
        let Value::I64(h) = eval("HashRangeScaled(0.5d)", c) else {
            panic!()
        };
        assert_eq!(h, (v as f64 * 0.5) as i64);
    }
}

/// `from_long/to_object/CoinFunc.java`: `HashRange(0.0, 1.0)` of the input
/// below the threshold takes the first function, else the second, both of the
/// input. The bindings are NB5's `http-docsapi-search-basic.yaml`'s `match1`
/// and `match2` (its `match-ratio` default, 0.01, put in).
#[test]
fn coin_func_takes_the_first_function_for_its_share_of_the_inputs() {
    let m1 = Binding::parse(
        "match1",
        "Identity(); CoinFunc(0.01, FixedValue(0), FixedValue(1000))",
    )
    .unwrap();
    let zeros = (0..20_000).filter(|c| m1.eval(*c) == Value::U64(0)).count();
    assert!((120..280).contains(&zeros), "about 1 % of 20,000: {zeros}");
    assert!((0..200).all(|c| matches!(m1.eval(c), Value::U64(0 | 1000))));
    let m2 = Binding::parse(
        "match2",
        r#"Identity(); CoinFunc(0.01, FixedValue("true"), FixedValue("false"))"#,
    )
    .unwrap();
    // The same coin for the same input: `true` exactly where match1 is 0.
    for c in 0..2000 {
        let first = m1.eval(c) == Value::U64(0);
        assert_eq!(m2.eval(c).to_string(), if first { "true" } else { "false" });
    }
    // Kinds that differ come out as text, as NB5's `Object` prints.
    let mixed = Binding::parse("b", "CoinFunc(0.5, Identity(), NumberNameToString())").unwrap();
    assert!((0..20).all(|c| matches!(mixed.eval(c), Value::Str(_))));
    assert!(err("CoinFunc(0.5, 1, 2)").contains("a function"));
}

/// `to_cqlvector/CqlVector.java` has one constructor, taking the list
/// function: NB5 cannot resolve the shipped `cqlvectors.yaml`'s
/// `simple_vector: CqlVector()` either, and the error says so.
#[test]
fn cql_vector_without_its_list_function_is_refused_as_nb5_refuses_it() {
    let e = err("CqlVector()");
    assert!(e.contains("NB5 cannot run this binding either"), "{e}");
    assert!(e.contains("CqlVector(ListSizedHashed("), "{e}");
}
