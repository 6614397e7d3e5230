//! `arrivals=poisson` through the binary: a paced run, a bad value and the shared
//! schedule's refusal (exit 2, never silently uniform).

#[path = "support/bin.rs"]
mod bin;

use bin::code_and_text as paceline;

#[test]
fn a_poisson_run_completes_its_cycles() {
    let (code, text) = paceline(&[
        "run",
        "driver=diag",
        "cycles=50",
        "rate=2000",
        "arrivals=poisson",
        "seed=7",
    ]);
    assert_eq!(code, 0, "{text}");
}

#[test]
fn a_bad_arrivals_value_exits_2_with_the_fix() {
    let (code, text) = paceline(&["run", "driver=diag", "cycles=1", "arrivals=sometimes"]);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains("`arrivals` is `uniform` or `poisson`") && text.contains("param"),
        "{text}"
    );
    let (code, text) = paceline(&["run", "driver=diag", "cycles=1", "seed=-1"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("`seed` must be a whole number"), "{text}");
}

// The shared schedule's refusal of Poisson arrivals is pinned at the engine
// (tests/seam.rs, `poisson_arrivals_on_a_shared_schedule_are_refused`): through
// the binary it needs a reachable Redis first, and the engine's `BadConfig` exits 2
// as `concurrency`'s does (tests/cli_concurrency.rs).
