//! NB5's binding functions over text, files and times (issue 26, item 2): the
//! values pinned, and each missing input a message naming what is missing.

use paceline::{Binding, Value};
use std::path::Path;

fn eval(expr: &str, cycle: u64) -> Value {
    Binding::parse("b", expr)
        .unwrap_or_else(|e| panic!("{expr}: {e}"))
        .eval(cycle)
}

fn data(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/nb5/data")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn hashed_line_to_string_picks_a_line_of_the_file() {
    let expr = format!("HashedLineToString('{}')", data("words.txt"));
    let lines = ["alpha", "beta", "gamma"];
    let mut seen = std::collections::BTreeSet::new();
    for c in 0..200 {
        let Value::Str(s) = eval(&expr, c) else {
            panic!("a string")
        };
        assert!(lines.contains(&s.as_str()), "{s:?}: the `\\r` is dropped");
        seen.insert(s);
    }
    assert_eq!(seen.len(), 3, "every line is reached");
    // The same cycle gives the same line: the hash of HashRange (docs/nb5.md).
    assert_eq!(eval(&expr, 7), eval(&expr, 7));
}

#[test]
fn hashed_file_extract_has_the_size_asked_and_is_a_slice_of_the_text() {
    let text = std::fs::read_to_string(data("extract.txt")).unwrap();
    let expr = format!("HashedFileExtractToString('{}', 5, 9)", data("extract.txt"));
    for c in 0..200 {
        let Value::Str(s) = eval(&expr, c) else {
            panic!("a string")
        };
        assert!((5..=9).contains(&s.len()), "{s:?}");
        assert!(text.contains(&s), "{s:?}");
    }
    // A size chain: sizes past the text wrap modulo its length, as NB5.
    let expr = format!(
        "HashedFileExtractToString('{}', Mod(1000))",
        data("extract.txt")
    );
    assert_eq!(eval(&expr, 0), Value::Str(String::new()));
    let Value::Str(s) = eval(&expr, 50) else {
        panic!()
    };
    assert_eq!(s.len(), 50 % text.len());
}

#[test]
fn a_missing_file_names_the_function_the_file_and_how_to_supply_it() {
    for expr in [
        "HashedLineToString('data/variable_words.txt')",
        "HashedFileExtractToString('data/lorem_ipsum_full.txt', 50, 150)",
    ] {
        let e = Binding::parse("b", expr).unwrap_err().to_string();
        let (f, file) = expr.split_once("('").unwrap();
        let file = file.split('\'').next().unwrap();
        assert!(e.contains(&format!("`{f}`")), "{e}");
        assert!(e.contains(&format!("`{file}`")), "{e}");
        assert!(e.contains("virtdata-lib-basics/src/main/resources/"), "{e}");
        assert!(e.contains("copy that file"), "{e}");
    }
}

#[test]
fn dataset_readers_name_the_file_they_need() {
    let e = Binding::parse(
        "b",
        "HdfFileToFloatList(\"testdata/glove-25-angular.hdf5\", \"/test\")",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("`testdata/glove-25-angular.hdf5` (dataset `/test`)"),
        "{e}"
    );
    assert!(e.contains("no HDF5, fvec or ivec reader"), "{e}");
    let e = Binding::parse("b", "FVecReader('testdata/x_base_vectors.fvec', 25, 0)")
        .unwrap_err()
        .to_string();
    assert!(e.contains("`testdata/x_base_vectors.fvec`"), "{e}");
}

#[test]
fn starting_epoch_millis_adds_the_utc_epoch_of_the_time() {
    let base = 1_517_461_200_000i64; // 2018-02-01T05:00:00Z
    assert_eq!(
        eval("StartingEpochMillis('2018-02-01 05:00:00')", 0),
        Value::I64(base)
    );
    assert_eq!(
        eval("StartingEpochMillis('2018-02-01 05:00:00')", 1234),
        Value::I64(base + 1234)
    );
    let e = Binding::parse("b", "StartingEpochMillis('soon')")
        .unwrap_err()
        .to_string();
    assert!(e.contains("cannot read the time `soon`"), "{e}");
}

#[test]
fn text_and_number_functions_give_nb5s_values() {
    assert_eq!(eval("ModuloToBoolean()", 4), Value::Bool(true));
    assert_eq!(eval("ModuloToBoolean()", 5), Value::Bool(false));
    assert_eq!(eval("ToHexString()", 255), Value::Str("ff".into()));
    assert_eq!(
        eval("Add(-1); ToHexString()", 0),
        Value::Str("ffffffffffffffff".into()),
        "Long.toHexString is unsigned"
    );
    // Long 1 as 8 big-endian bytes, base64.
    assert_eq!(
        eval("ToBase64String()", 1),
        Value::Str("AAAAAAAAAAE=".into())
    );
    assert_eq!(
        eval("Template('a b&c'); URLEncode()", 0),
        Value::Str("a+b%26c".into())
    );
    assert_eq!(
        eval("Template('say \"x\"/'); EscapeJSON()", 0),
        Value::Str("say \\\"x\\\"\\/".into())
    );
    // Regex escapes in quoted strings are kept for the regex (issue 26, item 6).
    assert_eq!(
        eval(
            "Template('[\"a\",\"b\"]'); ReplaceAll('\\[', ''); ReplaceAll('\\]', '')",
            0
        ),
        Value::Str("\"a\",\"b\"".into())
    );
    assert_eq!(
        eval("Template('{x}'); ReplaceRegex('^\\{(.)', '<$1')", 0),
        Value::Str("<x}".into())
    );
    // AddHashRange(min, max): the input plus HashRange(min, max), max included.
    for c in 0..100 {
        let Value::U64(v) = eval("AddHashRange(0, 10)", c) else {
            panic!()
        };
        assert!((c..=c + 10).contains(&v));
    }
    let Value::I64(t) = eval("ElapsedNanoTime()", 0) else {
        panic!()
    };
    assert!(t >= 0);
}
