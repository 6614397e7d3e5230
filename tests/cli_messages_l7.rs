//! Audit L7: messages that named the wrong thing, each now says what is
//! wrong, where, and how to fix it (the control route's `//` is pinned in
//! `src/cli/control/tests.rs`).

#[path = "support/bin.rs"]
mod bin;
use bin::code_and_text;

#[test]
fn audit_l7_a_duration_with_an_unknown_unit_says_so() {
    // It said "`duration` must be a time of more than 0" for a unit that does
    // not exist.
    let (code, out) = code_and_text(&["run", "driver=diag", "duration=99999999999999d"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("param 2: `duration`: `99999999999999d` has no known unit")
            && out.contains("(ns, us, ms, s, m, h)"),
        "{out}"
    );
    assert!(!out.contains("more than 0"), "{out}");
}
