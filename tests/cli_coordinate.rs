//! `coordinate=redis://HOST:PORT/NAME` on the real binary: a bad URL (on the
//! command line, in a file, in a scenario step) or a server that does not answer
//! exits 2 with a message that names the URL and the fix, quickly and before
//! anything runs; `check` shows the schedule without contacting it; `findmax`
//! refuses a shared schedule. The tests that need a server start their own
//! (`tests/support/redis.rs`) and skip with a printed reason without one.
#![cfg(feature = "redis")]

mod support;

use std::process::{Command, Output};
use std::time::{Duration, Instant};
use support::redis::server;

use support::bin::{temp, text};

fn paceline(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_paceline"))
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("the binary runs: {e}"))
}

/// Exit 2, one message on stderr, nothing on stdout, no panic.
fn refused(out: &Output) -> String {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(text(&out.stdout).is_empty(), "{}", text(&out.stdout));
    err
}

/// URLs that are not `redis://HOST:PORT/NAME`, and what the message says is wrong.
const BAD: [(&str, &str); 4] = [
    (
        "redis://127.0.0.1:6379",
        "it names no schedule after the host and port",
    ),
    ("http://127.0.0.1:6379/demo", "it must start with redis://"),
    (
        "redis://127.0.0.1:6379/a+b",
        "the schedule name must be 1 to 64 letters, digits, `-`, `_` or `.`",
    ),
    (
        "redis://127.0.0.1:6379/",
        "the schedule name after the last `/` is empty",
    ),
];

const FIX: &str = "write it as redis://HOST:PORT/NAME, such as redis://127.0.0.1:6379/demo";

#[test]
fn a_bad_url_on_the_command_line_exits_2_naming_it_and_the_fix() {
    for (url, why) in BAD {
        let arg = format!("coordinate={url}");
        let out = paceline(&["run", "driver=diag", "cycles=10", &arg]);
        let err = refused(&out);
        assert_eq!(
            err,
            format!("paceline: param 3: coordinate URL `{url}` is not usable: {why}; {FIX}\n")
        );
    }
}

#[test]
fn a_password_in_a_bad_url_is_not_printed() {
    let out = paceline(&[
        "run",
        "driver=diag",
        "coordinate=redis://:hunter2@127.0.0.1:6379",
    ]);
    let err = refused(&out);
    assert!(err.contains("`redis://:***@127.0.0.1:6379`"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
}

#[test]
fn a_bad_url_in_a_file_is_named_at_its_line_and_column() {
    let path = temp("bad.yaml");
    let p = path.to_str().unwrap_or_default();
    for (url, why) in BAD {
        std::fs::write(
            &path,
            format!("params:\n  driver: diag\n  cycles: 10\n  coordinate: {url}\nops: {{o: x}}\n"),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        for cmd in ["run", "check"] {
            let err = refused(&paceline(&[cmd, p]));
            assert!(
                err.starts_with(&format!(
                    "{p}:4:15: coordinate URL `{url}` is not usable: {why}"
                )),
                "{cmd}: {err}"
            );
            assert!(err.contains(FIX), "{err}");
        }
    }
}

#[test]
fn a_bad_url_in_an_nb5_scenario_step_points_at_the_pair() {
    let path = temp("nb5.yaml");
    let p = path.to_str().unwrap_or_default();
    std::fs::write(
        &path,
        "params: {driver: diag}\nops: {o: x}\nscenarios:\n  default:\n    \
         main: run cycles=10 cyclerate=100 coordinate=redis://h:1/a/b\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let err = refused(&paceline(&["run", p]));
    assert!(
        err.starts_with(&format!("{p}:5:39: coordinate URL `redis://h:1/a/b`")),
        "{err}"
    );
}

#[test]
fn a_server_that_does_not_answer_exits_2_at_once_before_anything_runs() {
    // Port 1 on loopback: nothing listens. A scenario whose second step names it
    // runs neither step.
    let path = temp("down.yaml");
    let p = path.to_str().unwrap_or_default();
    std::fs::write(
        &path,
        "params: {driver: diag, cycles: 10}\nops: {o: x}\nscenarios:\n  default:\n    \
         - run alias=first\n    - run alias=second coordinate=redis://127.0.0.1:1/x\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let json = temp("down.json");
    let started = Instant::now();
    let out = paceline(&[
        "run",
        p,
        "--summary-json",
        json.to_str().unwrap_or_default(),
    ]);
    let took = started.elapsed();
    let err = refused(&out);
    assert_eq!(
        err,
        format!(
            "paceline: {p}: scenario `default` step 2: cannot reach redis at redis://127.0.0.1:1 \
             for the shared schedule redis://127.0.0.1:1/x ({}); start redis-server there, or fix \
             the host and port in `coordinate=`\n",
            err.split_once(" (")
                .and_then(|(_, rest)| rest.split_once(");"))
                .map_or("", |(why, _)| why)
        )
    );
    assert!(!json.exists(), "nothing ran, no report was written");

    let started = Instant::now();
    let out = paceline(&["run", "driver=diag", "coordinate=redis://127.0.0.1:1/x"]);
    let one = started.elapsed();
    let err = refused(&out);
    assert!(
        err.starts_with(
            "paceline: command line: params: cannot reach redis at redis://127.0.0.1:1 "
        ),
        "{err}"
    );
    eprintln!("refused in {took:?} (scenario) and {one:?} (params alone)");
    // A refused connection answers at once; the bound is for a loaded machine.
    assert!(
        took < Duration::from_secs(5) && one < Duration::from_secs(5),
        "{took:?} {one:?}"
    );
}

#[test]
fn check_shows_the_schedule_without_contacting_it() {
    let path = temp("check.yaml");
    std::fs::write(
        &path,
        "params: {driver: diag}\nops: {o: x}\nscenarios:\n  s: run cycles=5 coordinate===redis://127.0.0.1:1/step\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let p = path.to_str().unwrap_or_default();
    // Nothing listens on port 1: check does not ask.
    let out = paceline(&["check", p, "coordinate=redis://127.0.0.1:1/demo"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("\n  shared schedule redis://127.0.0.1:1/demo: "),
        "{stdout}"
    );
    // A step's own schedule, locked with `===`, is shown with the step.
    assert!(
        stdout.contains("  1. run cycles=0..5 coordinate===redis://127.0.0.1:1/step\n"),
        "{stdout}"
    );
}

#[test]
fn findmax_refuses_a_shared_schedule() {
    let started = Instant::now();
    let out = paceline(&[
        "findmax",
        "driver=diag",
        "coordinate=redis://127.0.0.1:1/demo",
    ]);
    let err = refused(&out);
    assert!(
        err.starts_with(
            "paceline: findmax steps the rate of this one process, so it cannot search the \
             shared schedule redis://127.0.0.1:1/demo"
        ),
        "{err}"
    );
    assert!(err.contains("leave `coordinate` out"), "{err}");
    assert!(err.contains("PUT /activities/ALIAS/rate"), "{err}");
    // Refused before any server is contacted or any step runs.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn a_server_that_answers_lets_the_run_go_ahead() {
    let Some(server) = server() else { return };
    let json = temp("up.json");
    let url = format!("coordinate={}/up", server.url());
    let out = paceline(&[
        "run",
        "driver=diag",
        "cycles=200",
        "rate=2K",
        &url,
        "--summary-json",
        json.to_str().unwrap_or_default(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap_or_default())
            .unwrap_or_default();
    // One process alone in the schedule runs every cycle.
    let a = &doc["activities"][0];
    assert_eq!(a["cycles"]["completed"], 200, "{doc}");
    assert_eq!(a["coordinated"]["global_completed"], 200, "{doc}");
    assert_eq!(a["coordinated"]["processes_seen"], 1, "{doc}");
    assert_eq!(a["coordinated"]["member"], 1, "{doc}");
}

#[test]
fn a_server_that_wants_a_password_is_named_with_that_fix() {
    let Some(server) = server() else { return };
    let set = server.command(&["CONFIG", "SET", "requirepass", "sesame"]);
    assert_eq!(set.as_deref(), Ok("+OK\r\n"), "{set:?}");
    let url = format!("coordinate={}/demo", server.url());
    let err = refused(&paceline(&["run", "driver=diag", &url]));
    assert!(
        err.contains("cannot reach redis at redis://127.0.0.1:"),
        "{err}"
    );
    assert!(
        err.ends_with(
            "the server wants a password: give it in `coordinate=` \
             (redis://:PASSWORD@HOST:PORT/NAME)\n"
        ),
        "{err}"
    );
    let wrong = format!("coordinate=redis://:open@127.0.0.1:{}/demo", server.port());
    let err = refused(&paceline(&["run", "driver=diag", &wrong]));
    assert!(err.contains("redis://:***@127.0.0.1:"), "{err}");
    assert!(!err.contains(":open@"), "{err}");
    assert!(err.contains("the server wants a password"), "{err}");
    // With the password, the run goes ahead.
    let right = format!(
        "coordinate=redis://:sesame@127.0.0.1:{}/demo",
        server.port()
    );
    let out = paceline(&["run", "driver=diag", "cycles=10", &right]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn a_server_that_is_not_redis_is_named_as_such_on_one_line() {
    // An HTTP server where Redis was expected: it answers the PING with its own words.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap_or_else(|e| panic!("{e}"));
    let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
    let answer = std::thread::spawn(move || {
        if let Ok((mut conn, _)) = listener.accept() {
            use std::io::{Read, Write};
            let mut buf = [0u8; 256];
            let _ = conn.read(&mut buf);
            let _ = conn.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
        }
    });
    let url = format!("coordinate=redis://127.0.0.1:{port}/demo");
    let err = refused(&paceline(&["run", "driver=diag", &url]));
    let _ = answer.join();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!(
            "paceline: command line: params: cannot reach redis at redis://127.0.0.1:{port} "
        )),
        "{err}"
    );
    assert!(
        err.ends_with(
            "what answered there does not speak Redis: fix the host and port in `coordinate=`\n"
        ),
        "{err}"
    );
}
