//! Bindings: golden values (a change in the hash or the math is caught here),
//! determinism and range properties, parse errors that say where and how to fix.

use paceline::{Binding, BindingError, BindingSet, Kind, Template, Value};
use proptest::prelude::*;

const EXPRS: &[&str] = &[
    "Hash()",
    "Hash(7)",
    "Hash(); Mod(1000000); ToString(); Prefix('key-')",
    "Range(10, 20)",
    "Hash(); Range(-5, 5)",
    "Uniform(0, 100)",
    "Normal(50, 10); Round(3)",
    "Zipf(1000, 1.1)",
    "WeightedChoice('red:3,green:1,blue')",
    "Choice('a', 'b', 'c')",
    "Uuid()",
    "AlphaNum(12)",
    "Template('user-{}-{}', Hash(); Mod(100), Identity())",
    "Chance(0.3)",
    "Add(-3); Mul(2); Div(3); Suffix('!')",
];

/// (expression index, cycle, value as text), computed once and committed: these
/// must never change, on any machine, or every stored workload changes its data.
const GOLDEN: &[(usize, u64, &str)] = &[
    (0, 0, "16294208416658607535"),
    (0, 1, "10451216379200822465"),
    (0, 2, "10905525725756348110"),
    (0, 1000, "4332104999045480776"),
    (0, 123456789, "2466975172287755897"),
    (0, 18446744073709551615, "16490336266968443936"),
    (1, 0, "13309476754707697221"),
    (1, 1, "4414019431610648415"),
    (1, 2, "5090977316425868581"),
    (1, 1000, "6785964006689842358"),
    (1, 123456789, "6095463055192736410"),
    (1, 18446744073709551615, "12225420764836534112"),
    (2, 0, "key-607535"),
    (2, 1, "key-822465"),
    (2, 2, "key-348110"),
    (2, 1000, "key-480776"),
    (2, 123456789, "key-755897"),
    (2, 18446744073709551615, "key-443936"),
    (3, 0, "10"),
    (3, 1, "11"),
    (3, 2, "12"),
    (3, 1000, "10"),
    (3, 123456789, "19"),
    (3, 18446744073709551615, "15"),
    (4, 0, "0"),
    (4, 1, "0"),
    (4, 2, "-5"),
    (4, 1000, "1"),
    (4, 123456789, "2"),
    (4, 18446744073709551615, "1"),
    (5, 0, "88.33108082136427"),
    (5, 1, "56.65615751722809"),
    (5, 2, "59.11897341980794"),
    (5, 1000, "23.48438825700212"),
    (5, 123456789, "13.373499206310925"),
    (5, 18446744073709551615, "89.39429202831845"),
    (6, 0, "61.917"),
    (6, 1, "51.676"),
    (6, 2, "52.306"),
    (6, 1000, "42.77"),
    (6, 123456789, "38.911"),
    (6, 18446744073709551615, "62.478"),
    (7, 0, "1"),
    (7, 1, "7"),
    (7, 2, "6"),
    (7, 1000, "98"),
    (7, 123456789, "249"),
    (7, 18446744073709551615, "1"),
    (8, 0, "blue"),
    (8, 1, "red"),
    (8, 2, "red"),
    (8, 1000, "red"),
    (8, 123456789, "red"),
    (8, 18446744073709551615, "blue"),
    (9, 0, "c"),
    (9, 1, "b"),
    (9, 2, "b"),
    (9, 1000, "a"),
    (9, 123456789, "a"),
    (9, 18446744073709551615, "c"),
    (10, 0, "e220a839-7b1d-4daf-9562-91d4669cc7be"),
    (10, 1, "910a2dec-8902-4cc1-9b10-e8087112a049"),
    (10, 2, "975835de-1c97-46ce-8bb8-59cb3efe7430"),
    (10, 1000, "3c1eba8b-4dcc-4148-b73b-58f7daead4e2"),
    (10, 123456789, "223c74d9-3deb-4679-b60e-6343c597012b"),
    (
        10,
        18446744073709551615,
        "e4d97177-1b65-4c20-9369-9b8a97704f90",
    ),
    (11, 0, "y5XTLwkxi5iq"),
    (11, 1, "GBvCybNMW5bi"),
    (11, 2, "dSrHRw1TFD35"),
    (11, 1000, "gXkBZxvX6NMH"),
    (11, 123456789, "iel2kwJMovFF"),
    (11, 18446744073709551615, "4vi7rwlVLCbq"),
    (12, 0, "user-35-0"),
    (12, 1, "user-65-1"),
    (12, 2, "user-10-2"),
    (12, 1000, "user-76-1000"),
    (12, 123456789, "user-97-123456789"),
    (12, 18446744073709551615, "user-36-18446744073709551615"),
    (13, 0, "false"),
    (13, 1, "false"),
    (13, 2, "false"),
    (13, 1000, "true"),
    (13, 123456789, "true"),
    (13, 18446744073709551615, "false"),
    (14, 0, "6148914691236517203!"),
    (14, 1, "6148914691236517204!"),
    (14, 2, "6148914691236517204!"),
    (14, 1000, "664!"),
    (14, 123456789, "82304524!"),
    (14, 18446744073709551615, "6148914691236517202!"),
];

#[test]
fn golden_values_are_stable() {
    for &(i, cycle, want) in GOLDEN {
        let b = Binding::parse("g", EXPRS[i]).unwrap();
        assert_eq!(
            b.eval(cycle).to_string(),
            want,
            "`{}` at cycle {cycle}",
            EXPRS[i]
        );
    }
}

#[test]
fn uuids_are_version_4_shaped() {
    let b = Binding::parse("u", "Uuid()").unwrap();
    for cycle in 0..1000 {
        let u = b.eval(cycle).to_string();
        let parts: Vec<_> = u.split('-').map(str::len).collect();
        assert_eq!(parts, [8, 4, 4, 4, 12]);
        assert_eq!(&u[14..15], "4");
        assert!("89ab".contains(&u[19..20]), "{u}");
    }
}

#[test]
fn distributions_have_the_right_shape() {
    let n = 200_000u64;
    let normal = Binding::parse("n", "Normal(50, 10)").unwrap();
    let xs: Vec<f64> = (0..n)
        .map(|c| match normal.eval(c) {
            Value::F64(v) => v,
            other => panic!("{other:?}"),
        })
        .collect();
    let mean = xs.iter().sum::<f64>() / n as f64;
    let sd = (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
    assert!((mean - 50.0).abs() < 0.1, "mean {mean}");
    assert!((sd - 10.0).abs() < 0.1, "sd {sd}");
    let within_1sd = xs.iter().filter(|x| (**x - 50.0).abs() < 10.0).count() as f64 / n as f64;
    assert!((within_1sd - 0.6827).abs() < 0.01, "{within_1sd}");

    let zipf = Binding::parse("z", "Zipf(100, 1.2)").unwrap();
    let mut counts = [0u64; 101];
    for c in 0..n {
        match zipf.eval(c) {
            Value::U64(k) => counts[k as usize] += 1,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(counts[0], 0, "ranks start at 1");
    let h: f64 = (1..=100).map(|k| (k as f64).powf(-1.2)).sum();
    for k in [1usize, 2, 5, 10] {
        let want = (k as f64).powf(-1.2) / h;
        let got = counts[k] as f64 / n as f64;
        assert!(
            (got - want).abs() / want < 0.05,
            "rank {k}: {got} vs {want}"
        );
    }

    let choice = Binding::parse("c", "WeightedChoice('a:3,b:1,none:0')").unwrap();
    let a = (0..n)
        .filter(|&c| choice.eval(c) == Value::Str("a".into()))
        .count() as f64;
    let none = (0..n)
        .filter(|&c| choice.eval(c) == Value::Str("none".into()))
        .count();
    assert!((a / n as f64 - 0.75).abs() < 0.01);
    assert_eq!(none, 0);
}

#[test]
fn errors_name_the_binding_the_place_and_the_fix() {
    let cases: &[(&str, usize, &str)] = &[
        ("Hash(); Mdo(3)", 8, "did you mean `Mod`?"),
        ("Hash(); Mod(0)", 12, "use `Mod(n)` with an integer n > 0"),
        (
            // Text that is no number's (NB5 reads a number's text back).
            "Prefix('k'); Mod(3)",
            13,
            "takes an integer but the step before gives a string",
        ),
        (
            "Mod('x')",
            4,
            "needs an integer for argument 1, not a string",
        ),
        ("Hash(); Mod(3", 13, "expected `,` or `)`"),
        ("Uniform(5, 1)", 8, "needs min < max"),
        ("Template('{}-{}', Hash())", 0, "has 2 `{}` but 1 chain(s)"),
        ("Prefix(abc)", 10, "or quote text: `'abc'`"),
        (
            "Uniform(0, 'x')",
            11,
            "needs a number for argument 2, not a string",
        ),
        (
            "Prefix(7)",
            7,
            "needs a quoted string for argument 1, not an integer",
        ),
        (
            "Template('{}', 7)",
            15,
            "needs a function chain for argument 2, not an integer",
        ),
    ];
    for &(expr, at, needle) in cases {
        let err = Binding::parse("mykey", expr).unwrap_err();
        assert_eq!(err.offset(), at, "{expr}: {err}");
        let text = err.to_string();
        assert!(text.starts_with("binding `mykey`, at character"), "{text}");
        assert!(text.contains(needle), "{expr}: {text}");
    }
    // Even a far name gets the nearest function (issue 17).
    assert!(matches!(
        Binding::parse("k", "Nope()").unwrap_err(),
        BindingError::UnknownFunction {
            suggestion: Some(_),
            ..
        }
    ));
}

#[test]
fn templates_render_placeholders_and_keep_other_braces() {
    let set = BindingSet::compile([
        ("key", "Mod(1000); ToString(); Prefix('k')"),
        ("n", "Mod(10)"),
    ])
    .unwrap();
    let t = Template::compile(r#"{"key": "{key}", "n": {n}, "x": {{n}}"#, &set).unwrap();
    assert_eq!(t.render(1234, &set), r#"{"key": "k234", "n": 4, "x": {n}}"#);
    let errs = Template::compile("{key} {nn} {zzz}", &set).unwrap_err();
    assert_eq!(errs.len(), 2);
    assert_eq!(errs[0].offset(), 6);
    assert!(errs[0].to_string().contains("did you mean `n`?"));
    assert!(errs[1].to_string().contains("known bindings: `key`, `n`"));
    assert_eq!(set.at(1).kind(), Kind::U64);
}

proptest! {
    #[test]
    fn same_cycle_same_value(cycle in any::<u64>(), i in 0..EXPRS.len()) {
        let a = Binding::parse("a", EXPRS[i]).unwrap();
        let b = Binding::parse("b", EXPRS[i]).unwrap();
        prop_assert_eq!(a.eval(cycle), b.eval(cycle));
    }

    #[test]
    fn ranges_are_respected(cycle in any::<u64>(), lo in -1000i64..1000, width in 1i64..1000, n in 1u64..10_000) {
        let r = Binding::parse("r", &format!("Hash(); Range({lo}, {})", lo + width)).unwrap();
        let v = match r.eval(cycle) { Value::U64(v) => v as i64, Value::I64(v) => v, other => panic!("{other:?}") };
        prop_assert!(lo <= v && v < lo + width);
        let m = Binding::parse("m", &format!("Hash(); Mod({n})")).unwrap();
        prop_assert!(matches!(m.eval(cycle), Value::U64(v) if v < n));
        let u = Binding::parse("u", &format!("Uniform({lo}, {})", lo + width)).unwrap();
        prop_assert!(matches!(u.eval(cycle), Value::F64(v) if lo as f64 <= v && v < (lo + width) as f64));
        let z = Binding::parse("z", &format!("Zipf({n}, 0.9)")).unwrap();
        prop_assert!(matches!(z.eval(cycle), Value::U64(v) if 1 <= v && v <= n));
        let s = Binding::parse("s", &format!("AlphaNum({})", n % 100)).unwrap();
        prop_assert_eq!(s.eval(cycle).to_string().len() as u64, n % 100);
    }
}
