//! Regressions from the session-17 audit's low findings (L1, L4, L5, L7, L10),
//! driven through the real binary where a run shows them; no server is needed.

#[path = "support/bin.rs"]
mod bin;
use bin::{code_and_text, run, text};

/// Audit p17, L1: `rate=1e-400` underflowed to 0 and the run started paused,
/// while `1e-7` was refused as out of range.
#[test]
fn a_positive_rate_that_reads_as_zero_is_refused() {
    // `check`, not `run`: a run that took it as a pause would never end.
    let (code, out) = code_and_text(&["check", "driver=diag", "cycles=3", "rate=1e-400"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("rate `1e-400` is positive but too small to represent"),
        "{out}"
    );
    for text in ["1e-400", "0.5e-330,1.0", "1e-400K"] {
        let err = paceline::RateSpec::parse(text).unwrap_err();
        assert!(
            err.to_string().contains("too small to represent"),
            "{text}: {err}"
        );
    }
    // 0 written any way is a pause, and -0 is 0.
    for text in ["0", "0.0", "0e-400", "-0", "-0.0,1.0"] {
        let spec = paceline::RateSpec::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert!(spec.is_paused(), "{text}");
        assert!(spec.rate().is_sign_positive(), "{text}: {}", spec.rate());
        assert!(spec.to_string().starts_with("0,"), "{text}: {spec}");
    }
    let minus = paceline::RateSpec::try_new(-0.0).unwrap_or_else(|e| panic!("{e}"));
    assert!(minus.rate().is_sign_positive());
}

/// Audit p17, L4: a window with no op due was told "wait p99 0 ns is under the
/// 1000 s bound; ops take 0 ns on average".
#[test]
fn a_window_with_no_op_due_says_so() {
    let f = paceline::Figures {
        target_rate: Some(0.001),
        elapsed_nanos: 1_000_000_000,
        threads: 2,
        ..Default::default()
    };
    let v = paceline::Verdict::from_figures(&f, Default::default(), Default::default());
    assert_eq!(v.kind, paceline::VerdictKind::OnSchedule);
    assert_eq!(
        v.reason,
        "no op finished in this 1.00 s window: at 0.001/s the slots are 1000 s apart, so \
         none was due, or the one due is still in flight"
    );
    // Slots within the edges' tolerance, none run: no figures of waits or ops.
    let f = paceline::Figures {
        target_rate: Some(1.0),
        elapsed_nanos: 1_500_000_000,
        threads: 1,
        ..Default::default()
    };
    let v = paceline::Verdict::from_figures(&f, Default::default(), Default::default());
    assert!(
        v.reason
            .starts_with("no op finished in this 1.50 s window, which held 1.5 slots"),
        "{v}"
    );
    assert!(!v.reason.contains("0 ns"), "{v}");
}

/// Audit p17, L5: `cycles=1..1` read "it never started: stopped during set-up
/// ... before the first slot": nothing stopped it, the range was empty.
#[test]
fn an_empty_cycle_range_says_there_was_nothing_to_run() {
    for cycles in ["cycles=1..1", "cycles=0"] {
        let (code, out) = code_and_text(&["run", "driver=diag", cycles, "--no-progress"]);
        assert_eq!(code, 0, "{out}");
        assert!(
            out.contains("; no cycles to run: its cycle range is empty"),
            "{cycles}: {out}"
        );
        assert!(
            out.contains("verdict: not-started: no cycles to run"),
            "{cycles}: {out}"
        );
        assert!(!out.contains("stopped during set-up"), "{cycles}: {out}");
    }
}

/// Audit p17, L7: text from outside reached the terminal raw (an ESC from a
/// server's error could move the cursor or recolour the terminal). Standard
/// error shows it escaped; here the text is a file name.
#[test]
fn control_characters_on_standard_error_are_escaped() {
    let out = run(&["run", "/nonexistent/x\u{1b}[2Jy\u{7}.yaml"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err:?}");
    assert!(err.contains("x\\u{1b}[2Jy\\u{7}.yaml"), "{err}");
}

/// Audit p17, L10: `rate=100,1.1,thread threads=2` on a shared schedule ran at
/// 100/s in total, in activity scope, without a word. Refused before the store
/// is asked (port 1 has no server).
#[test]
#[cfg(feature = "redis")]
fn thread_scope_on_a_shared_schedule_is_refused() {
    let (code, out) = code_and_text(&[
        "run",
        "driver=diag",
        "rate=100,1.1,thread",
        "threads=2",
        "duration=1s",
        "coordinate=redis://127.0.0.1:1/7",
    ]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("thread scope (`rate=100,1.1,thread`) is not supported on a shared schedule"),
        "{out}"
    );
}
