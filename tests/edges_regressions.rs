//! Regressions from the session-16 audit (`H3`, `H4`) driven through the real
//! binary's `check`: no server is needed.

#[path = "support/bin.rs"]
mod bin;
use bin::{code_and_text, write_temp};

/// The plan's step lines (`  N. step: run ...`) of `paceline check ARGS`.
fn steps(args: &[&str]) -> Vec<String> {
    let (code, out) = code_and_text(args);
    assert_eq!(code, 0, "{out}");
    out.lines()
        .map(str::trim)
        .filter(|l| {
            l.split_once(". ")
                .is_some_and(|(n, _)| n.parse::<u32>().is_ok())
        })
        .map(String::from)
        .collect()
}

fn step<'a>(steps: &'a [String], name: &str) -> &'a str {
    steps
        .iter()
        .find(|l| {
            l.split_once(". ")
                .is_some_and(|(_, s)| s.starts_with(&format!("{name}:")))
        })
        .unwrap_or_else(|| panic!("no step {name} in {steps:?}"))
}

/// Audit p16 H4: the README's own command (`rate=1000 threads=2` on the bundled
/// redis-keyvalue) ran `main` unpaced on one thread: the pairs set the template
/// variables and were then dropped from the steps as if they were params.
#[test]
fn a_pair_named_as_a_template_variable_reaches_the_steps_that_use_it() {
    let s = steps(&["check", "redis-keyvalue", "rate=1000", "threads=2"]);
    let main = step(&s, "main");
    assert!(main.contains(" threads=2 "), "{main}");
    assert!(main.contains(" rate=1000,"), "{main}");
    // The rampup keeps its own rate variable, and the schema its own threads.
    let rampup = step(&s, "rampup");
    assert!(rampup.contains(" threads=2 "), "{rampup}");
    assert!(rampup.contains(" rate=10000,"), "{rampup}");
    assert!(step(&s, "schema").contains(" threads=1 "), "{s:?}");

    let s = steps(&["check", "postgres-keyvalue", "rate=2000"]);
    assert!(step(&s, "main").contains(" rate=2000,"), "{s:?}");
}

/// The NB5 convention (`cycles=TEMPLATE(cycles,..) threads=TEMPLATE(threads,..)
/// rate=TEMPLATE(rate,..)`): each pair reaches the step.
#[test]
fn nb5_convention_pairs_reach_the_step() {
    let f = write_temp(
        "nb.yaml",
        "scenarios:\n  default:\n    main: run driver=diag tags=block:main \
         cycles=TEMPLATE(cycles,1000) threads=TEMPLATE(threads,2) rate=TEMPLATE(rate,500)\n\
         blocks: {main: {ops: {o: \"x\"}}}\n",
    );
    let s = steps(&["check", &f]);
    let main = step(&s, "main");
    assert!(
        main.contains(" threads=2 ") && main.contains("cycles=0..1000"),
        "{main}"
    );
    assert!(main.contains(" rate=500,"), "{main}");
    let s = steps(&["check", &f, "cycles=50", "threads=3", "rate=100"]);
    let main = step(&s, "main");
    assert!(main.contains(" threads=3 "), "{main}");
    assert!(main.contains("cycles=0..50"), "{main}");
    assert!(main.contains(" rate=100,"), "{main}");
}

/// Audit p16 H3: non-ASCII text in a time binding panicked at load (exit 101).
#[test]
fn non_ascii_times_are_bad_input_not_a_panic() {
    for call in [
        "StartingEpochMillis('ab€cde')",
        "StartingEpochMillis('ab€cdeT000000Z')",
        "StartingEpochMillis('2017-01-01 01:00:00.250+€1')",
        "ToEpochTimeUUID('ab€cde')",
        "ToFinestTimeUUID('ab€cde')",
    ] {
        let f = write_temp(
            "sem.yaml",
            &format!(
                "params: {{driver: stdout, cycles: 2}}\nbindings:\n  t: {call}\nops:\n  o: \"{{t}}\"\n"
            ),
        );
        let (code, out) = code_and_text(&["check", &f]);
        assert_eq!(code, 2, "{call}: {out}");
        assert!(
            out.contains("sem.yaml:3:") && !out.contains("panicked"),
            "{call}: {out}"
        );
    }
}

/// Audit p16 M3: the verdict's `queue_ns` / `dispatch_ns` read 0 for a run with
/// no op, where every other figure of an empty distribution is null.
#[test]
fn a_run_without_ops_has_null_queue_and_dispatch_figures() {
    let json = bin::temp("z.json");
    let (code, out) = code_and_text(&[
        "run",
        "driver=diag",
        "cycles=0",
        "--summary-json",
        &json.display().to_string(),
    ]);
    assert_eq!(code, 0, "{out}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let v = &doc["activities"][0]["verdict"];
    for key in ["queue_ns", "dispatch_ns"] {
        for fig in ["min", "p50", "p99", "max"] {
            assert!(v[key][fig].is_null(), "{key}.{fig} in {v}");
        }
    }
    assert!(v["reason"].as_str().unwrap().contains("no op ran"), "{v}");
}
