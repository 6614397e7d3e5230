//! Review p18's findings fixed on branch `fixr`, through the real binary:
//! M-2 (a started alias run again is noted at load, not refused) and L-3
//! (`check`'s op JSON stays JSON).

mod support;

use support::bin::{code_and_text, write_temp};

/// Regression (review p18, M-2): `start` of `x`, a `wait` in which it ends,
/// then `run` of `x` again was refused at load (exit 2), though the engine
/// runs it (it refuses an alias only while its activity still runs). Now it
/// runs, with a note at load naming both steps and the fix.
#[test]
fn a_started_alias_run_again_after_it_ended_runs_with_a_note() {
    let file = write_temp(
        "fixr_rerun.yaml",
        "params: {driver: diag, cycles: 5}\nops: {o: x}\nscenarios:\n  default:\n    \
         - start alias=x\n    - wait: 500ms\n    - run alias=x\n",
    );
    let (code, out) = code_and_text(&["run", &file]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(
            "note: scenario `default` step `3` (run) is of activity `x`, which step `1` started"
        ) && out.contains("put `await x` before step `3`"),
        "{out}"
    );
}

/// Regression (review p18, L-3): `check` printed an op holding DEL or a bidi
/// override as `"a\u{7f}b"`, which is not JSON (and not the op's text). It is
/// JSON's `\u007f` now: the line's JSON reads back to the op's text.
#[test]
fn checks_op_json_stays_valid_json() {
    let file = write_temp(
        "fixr_check.yaml",
        "params: {driver: diag}\nops:\n  o: {stmt: \"a\\x7fb\\u202Ec\"}\n",
    );
    let (code, out) = code_and_text(&["check", &file]);
    assert_eq!(code, 0, "{out}");
    let line = out
        .lines()
        .find(|l| l.contains("\"stmt\""))
        .unwrap_or_else(|| panic!("no op line: {out}"));
    assert!(!line.contains("\\u{"), "{line}");
    let json = &line[line.find('{').unwrap()..];
    let v: serde_json::Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {line}"));
    assert_eq!(v["stmt"], "a\u{7f}b\u{202e}c", "{line}");
}
