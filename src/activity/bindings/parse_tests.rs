//! The expression syntax: paceline's chains, and NB5's grammar as its ANTLR
//! parser reads the shipped bindings.

use super::*;

#[test]
fn parses_chains_and_arguments() {
    let c = parse("b", "Hash(); Mod(10K); Prefix('k-');").unwrap();
    assert_eq!(c.len(), 3);
    assert_eq!(c[1].args, vec![Arg::Int(10_000, 12)]);
    assert_eq!(c[2].args, vec![Arg::Str("k-".into(), 25)]);
    let t = parse("b", "Template('{}-{}', Hash(); Mod(7), Identity())").unwrap();
    match &t[0].args[1] {
        Arg::Chain(calls, _) => assert_eq!(calls.len(), 2),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        parse("b", "Normal(2.5K, 1e2)").unwrap()[0].args[1],
        Arg::Float(100.0, 13)
    );
}

#[test]
fn syntax_errors_say_where() {
    let at = |e: &str| match parse("b", e).unwrap_err() {
        BindingError::Syntax { at, .. } => at,
        other => panic!("{other:?}"),
    };
    assert_eq!(at("Hash(); Mod(100"), 15);
    assert_eq!(at("Hash() Mod(3"), 12);
    assert_eq!(at("Prefix('abc)"), 7);
    assert_eq!(at("Mod(1x)"), 4);
    assert_eq!(at(""), 0);
    assert_eq!(at("Hash"), 4);
}

/// NB5's typed lambdas (`ListSizedHashed.java`'s own example writes
/// `long->ToString()`): the input type is read and the function follows.
#[test]
fn typed_lambdas_name_the_function_after_the_arrow() {
    let c = parse("b", "ListSizedStepped(2, long->ToString(), int -> Hash())").unwrap();
    match &c[0].args[1] {
        Arg::Chain(calls, _) => assert_eq!(calls[0].name, "ToString"),
        other => panic!("{other:?}"),
    }
    match &c[0].args[2] {
        Arg::Chain(calls, _) => assert_eq!(calls[0].name, "Hash"),
        other => panic!("{other:?}"),
    }
    assert!(parse("b", "double->Hash()").is_err());
}

#[test]
fn java_literal_suffixes_read_as_nb5_writes_them() {
    assert_eq!(
        parse("b", "Add(100L)").unwrap()[0].args,
        vec![Arg::Int(100, 4)]
    );
    assert_eq!(
        parse("b", "Add(0.5f)").unwrap()[0].args,
        vec![Arg::Float(0.5, 4)]
    );
    assert_eq!(
        parse("b", "Add(-180d)").unwrap()[0].args,
        vec![Arg::Float(-180.0, 4)]
    );
}

fn names(calls: &[Call]) -> Vec<&str> {
    calls.iter().map(|c| c.name.as_str()).collect()
}

/// The shipped binding of NB5's `cql_vector_typed.yaml` (`vector_value`,
/// with its TEMPLATE default put in): CqlVector's `)` is missing, and NB5's
/// ANTLR recovery conjures it before the `;` (checked with NB5's
/// `VirtData.g4` under ANTLR: no error node), so NB5 builds
/// `CqlVector(ListSizedHashed(...)); NormalizeCqlVector()`.
#[test]
fn a_first_call_left_open_before_a_semicolon_is_closed_as_nb5_does() {
    let c = parse(
        "vector_value",
        "CqlVector(ListSizedHashed(5,HashRange(0.0f,100.0f)); NormalizeCqlVector();",
    )
    .unwrap();
    assert_eq!(names(&c), ["CqlVector", "NormalizeCqlVector"]);
    match &c[0].args[..] {
        [Arg::Chain(inner, 10)] => {
            assert_eq!(names(inner), ["ListSizedHashed"]);
            assert_eq!(inner[0].args.len(), 2);
        }
        other => panic!("{other:?}"),
    }
    // At the end too, and with no argument (ANTLR: no error node either).
    assert_eq!(names(&parse("b", "Mod(3").unwrap()), ["Mod"]);
    assert_eq!(parse("b", "Mod(3").unwrap()[0].args, vec![Arg::Int(3, 4)]);
    assert_eq!(names(&parse("b", "Hash(").unwrap()), ["Hash"]);
    assert_eq!(
        names(&parse("b", "Hash(; Mod(3)").unwrap()),
        ["Hash", "Mod"]
    );
}

/// NB5 refuses every other unclosed call (ANTLR makes error nodes there):
/// a later call, or a nested one with the outer also open.
#[test]
fn other_unclosed_calls_are_refused_as_nb5_refuses_them() {
    for e in ["Hash(); Mod(100", "A(B(1", "A(B(1; C()", "A(1) ; B(C(2"] {
        assert!(parse("b", e).is_err(), "{e}");
    }
    // A chain that parses as written keeps paceline's meaning: a chain
    // argument (NB5 has none) is not cut at its `;`.
    let t = parse("b", "Template('{}-{}', Hash(); Mod(7), Identity())").unwrap();
    assert_eq!(names(&t), ["Template"]);
}

/// The shipped bindings of NB5's `bindings_collections.yaml` (`list_sized`)
/// and `http-docsapi-crud-dataset.yaml` (`document_json`): a `)` too many,
/// which NB5's parser refuses too (an error node: "Error parsing input").
#[test]
fn a_paren_too_many_is_refused_saying_nb5_refuses_it_too() {
    for (e, at) in [
        (
            "ListSized(HashRange(3,4),Identity(),NumberNameToString()))",
            57,
        ),
        (
            "Discard(); FirstLines('data/docsapi-dataset.json', 1000));",
            56,
        ),
    ] {
        match parse("b", e).unwrap_err() {
            BindingError::Syntax {
                at: got, what, fix, ..
            } => {
                assert_eq!(got, at, "{e}");
                assert!(what.contains("`)` too many"), "{what}");
                assert!(fix.contains("NB5 cannot run this binding either"), "{fix}");
            }
            other => panic!("{other:?}"),
        }
    }
}

/// NB5's `compose` keyword (`text.yaml`'s shipped `phone` binding) and
/// calls side by side, both of NB5's `virtdataFlow` rule.
#[test]
fn compose_and_calls_side_by_side_read_as_nb5_reads_them() {
    let c = parse(
        "phone",
        "compose HashRange(10000000000L,99999999999L); \
         Combinations('0-9;0-9;0-9;-;0-9;0-9;0-9;-;0-9;0-9;0-9;0-9')",
    )
    .unwrap();
    assert_eq!(names(&c), ["HashRange", "Combinations"]);
    assert_eq!(c[0].at, 8);
    assert_eq!(c[0].args[0], Arg::Int(10_000_000_000, 18));
    assert_eq!(
        names(&parse("b", "Hash() Mod(3)").unwrap()),
        ["Hash", "Mod"]
    );
    assert_eq!(
        names(&parse("b", "Hash() -> long Mod(3); ToString()").unwrap()),
        ["Hash", "Mod", "ToString"]
    );
    // `compose` only as a word of its own before the chain, as NB5's lexer.
    assert!(parse("b", "Hash(); compose Mod(3)").is_err());
    assert_eq!(
        names(&parse("b", "composeHash()").unwrap()),
        ["composeHash"]
    );
    // Inside arguments calls are not side by side (NB5: mismatched input).
    assert!(parse("b", "A(B(1) C(2))").is_err());
}
