//! Session 18 (branch `meds`): findings of the p17 audit (M4, M7, M8, L11,
//! L13), each through the real binary: what was wrong, and what it says or
//! does now. The redis ones need no server (a refused port, or a refusal at
//! load); M4's needs a redis-server (skipped without one).

mod support;

use support::bin::{code_and_text, write_temp};

/// Audit p17 M8: `timeout=1ns` hung a redis or postgres run in its set-up
/// (the op timeout's watchdog re-armed 1 ns ahead, never yielding, so the
/// worker's connect never ran) until Ctrl-C. Now an op timeout under 100 µs
/// is refused at load, exit 2, with the param's place and the fix.
#[test]
fn op_timeout_refused_below_its_floor() {
    for (driver, url) in [
        ("redis", "url=redis://127.0.0.1:1/0"),
        ("postgres", "url=postgres://u@127.0.0.1:1/db"),
    ] {
        for t in ["1ns", "2ns", "99us"] {
            let timeout = format!("timeout={t}");
            let (code, out) =
                code_and_text(&["run", &format!("driver={driver}"), url, "op=PING", &timeout]);
            assert_eq!(code, 2, "{driver} {t}: {out}");
            assert!(
                out.contains("param `timeout`")
                    && out.contains("below 100µs")
                    && out.contains("write `100us` or more"),
                "{driver} {t}: {out}"
            );
            assert!(!out.contains("panicked"), "{out}");
        }
    }
}

/// Audit p17 M7: `errors=.*:count` (NB5's "count everything") stopped the run
/// at the first error (`.*` was a glob: a dot, then anything); and
/// `Timeout.*:retry;.*:count` retried every error 10 times. Now `.*` is NB5's
/// regex, and a chain maps link by link.
#[test]
fn nb5_regex_error_rules_count_and_retry_what_they_name() {
    let run = |errors: &str| {
        code_and_text(&[
            "run",
            "driver=diag",
            "cycles=200",
            "error_rate=0.05",
            &format!("errors={errors}"),
        ])
    };
    let (code, out) = run(".*:count");
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("errors 11, retries 0"), "{out}");
    // `diag` errors are of kind `diag`: a `Diag.*` link retries them, the
    // bare last link counts the rest.
    let (code, out) = run("Diag.*:retry;.*:count");
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("retries ") && !out.contains("retries 0"),
        "{out}"
    );
    // A link for kinds this driver never gives (`Timeout.*`) is refused: it
    // would never apply.
    let (code, out) = run("Timeout.*:retry;.*:count");
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("NB5's regex `Timeout.*`") && out.contains("matches none of driver `diag`'s"),
        "{out}"
    );
}

/// Audit p17 L11: NB5's handler words (`warn`) ran as a policy without a
/// word; a file's `errors` now gets a note saying how it was read.
#[test]
fn nb5_handler_words_are_read_with_a_note() {
    let file = write_temp(
        "nb5_errors.yaml",
        "params: {driver: diag, cycles: 20, errors: 'counter,warn'}\nops: {o: x}\n",
    );
    let (code, out) = code_and_text(&["run", &file]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("note: errors `counter,warn` (NB5's handlers) read as `count`"),
        "{out}"
    );
}

/// Audit p17 L13: a second `start alias=x` while `x` still ran was found
/// only when its step ran, after the first step's ops. Now a note at load names
/// both steps and the fix; it is not refused there (review p18, M-2: the first
/// may have ended by then, and the engine then runs it). Here `x` (20 cycles
/// at 5/s) still runs, and the step fails when it runs.
#[test]
fn a_duplicate_running_alias_is_noted_at_load() {
    let file = write_temp(
        "dup_start.yaml",
        "params: {driver: diag, cycles: 20, rate: 5}\nops: {o: x}\nscenarios:\n  default:\n    \
         - start alias=x\n    - start alias=x\n",
    );
    let (code, out) = code_and_text(&["run", &file]);
    assert_ne!(code, 0, "{out}");
    assert!(
        out.contains("step `2` (start) is of activity `x`, which step `1` started")
            && out.contains("`await x`"),
        "{out}"
    );
    // After an `await`, or under another alias, there is no note.
    let ok = write_temp(
        "dup_start_ok.yaml",
        "params: {driver: diag, cycles: 20}\nops: {o: x}\nscenarios:\n  default:\n    \
         - start alias=x\n    - await x\n    - start alias=x\n    - run alias=y\n    \
         - run alias=y\n",
    );
    let (code, out) = code_and_text(&["run", &ok]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("is of activity"), "{out}");
}

/// Audit p17 M4: a step's own bad param (its `url`) was placed at the file's
/// param (line 1), which held a good one. Now at the step's command, or the
/// command line when that set it.
#[cfg(feature = "redis")]
#[test]
fn a_steps_bad_param_is_placed_at_the_step() {
    let Some(server) = support::redis::server() else {
        return;
    };
    let file = write_temp(
        "step_url.yaml",
        &format!(
            "params: {{driver: redis, url: '{}'}}\nops: {{o: PING}}\nscenarios:\n  default:\n    \
             - run cycles=10 alias=one\n    - run cycles=10 alias=two url=redis://127.0.0.1:1/0\n",
            server.url()
        ),
    );
    let (code, out) = code_and_text(&["run", &file]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("step 2: driver `redis`: ") && out.contains("step_url.yaml:6:7: param `url`"),
        "{out}"
    );
    assert!(!out.contains("step_url.yaml:1:"), "{out}");
}
