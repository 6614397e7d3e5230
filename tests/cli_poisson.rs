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

/// Audit of issue 22, H3: the summary sets a Poisson run's achieved rate beside
/// its drawn slots' own rate (what the verdict judges it against), and the JSON
/// carries it as `rate.drawn`; a uniform run has none.
#[test]
fn issue22_h3_the_summary_and_json_give_the_drawn_slots_rate() {
    for (arrivals, drawn) in [("poisson", true), ("uniform", false)] {
        let json = bin::temp(&format!("drawn-{arrivals}.json"));
        let (code, text) = paceline(&[
            "run",
            "driver=diag",
            "cycles=200",
            "rate=1000",
            &format!("arrivals={arrivals}"),
            "seed=0",
            "--summary-json",
            json.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{text}");
        assert_eq!(text.contains("(drawn Poisson slots "), drawn, "{text}");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let rate = &v["activities"][0]["rate"];
        assert_eq!(rate["drawn"].is_f64(), drawn, "{rate}");
        if drawn {
            // seed 0's first 200 slots: 1116/s (`arrivals_engine.rs`)
            let d = rate["drawn"].as_f64().unwrap();
            assert!((d - 1116.0).abs() < 1.0, "{rate}");
            assert!(rate["achieved"].as_f64().unwrap() <= d, "{rate}");
        }
    }
}

/// Audit of issue 22, L7: `arrivals=poisson` without a `rate` runs unpaced (a
/// rate set later paces it at the seed's slots), and says so at start in one
/// line; with a rate it says nothing.
#[test]
fn issue22_l7_the_cli_says_at_start_that_poisson_waits_for_a_rate() {
    let (code, text) = paceline(&["run", "driver=diag", "cycles=3", "arrivals=poisson"]);
    assert_eq!(code, 0, "{text}");
    let note = "note: activity `diag`: `arrivals: poisson` without a `rate` runs unpaced";
    assert_eq!(text.matches(note).count(), 1, "{text}");
    let (code, text) = paceline(&[
        "run",
        "driver=diag",
        "cycles=3",
        "rate=100",
        "arrivals=poisson",
    ]);
    assert_eq!(code, 0, "{text}");
    assert!(!text.contains("without a `rate`"), "{text}");
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
