//! Issue 22: "a password is never printed: `***` in messages and reports".
//! Through the real binary against real servers (`tests/support/`; without
//! them each test prints `skipping: ...` and passes):
//!
//! - the recorded command line in the summary JSON, the JUnit XML and the HTML
//!   report holds `***`, never the password (audit p15, H1);
//! - a PostgreSQL password holding `/`, `?` or an encoded `@` connects, and a
//!   wrong or unreachable one is never printed (H2); a raw `@` says to
//!   percent-encode it (L6).
#![cfg(all(feature = "redis", not(loom)))]

mod support;

use support::bin::{run, temp, text, write_temp};

fn read(p: &std::path::Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Runs `args` plus `--summary-json`, `--junit` and `--html` into files
/// named after `tag`; asserts exit 0 and that neither the output nor any of
/// the three files holds `secret`, and that each file holds `shown`. The
/// summary JSON's command line.
fn reports_hide(tag: &str, args: &[&str], secret: &str, shown: &str) -> String {
    let files = [
        temp(&format!("{tag}.json")),
        temp(&format!("{tag}.xml")),
        temp(&format!("{tag}.html")),
    ];
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let mut all: Vec<&str> = args.to_vec();
    all.extend([
        "--no-progress",
        "--summary-json",
        &names[0],
        "--junit",
        &names[1],
        "--html",
        &names[2],
    ]);
    let out = run(&all);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        !stdout.contains(secret) && !stderr.contains(secret),
        "{stdout}{stderr}"
    );
    for f in &files {
        let t = read(f);
        assert!(!t.contains(secret), "{}: {t}", f.display());
        assert!(t.contains(shown), "{}: no `{shown}` in {t}", f.display());
    }
    let doc: serde_json::Value = serde_json::from_str(&read(&files[0])).unwrap();
    doc["command_line"].as_str().unwrap_or("").to_string()
}

/// Regression (audit p15, H1): the README's one command put
/// `url=postgres://USER:PASSWORD@...` verbatim into every report file.
#[test]
fn the_bundled_postgres_command_records_no_password_in_any_report() {
    use support::postgres::{PASSWORD, server};
    let Some(pg) = server() else { return };
    let url = format!("url={}", pg.url());
    let cmd = reports_hide(
        "pg-secret",
        &[
            "run",
            "postgres-keyvalue",
            &url,
            "keycount=50",
            "main_cycles=50",
            "threads=2",
            "rampup_rate=3000",
            "rate=3000",
        ],
        PASSWORD,
        "postgres:***@127.0.0.1",
    );
    // The rest of the line as typed.
    assert!(
        cmd.contains(&format!(
            " run postgres-keyvalue 'url=postgres://postgres:***@127.0.0.1:{}/postgres' \
             keycount=50 main_cycles=50 threads=2 rampup_rate=3000 rate=3000 --no-progress \
             --summary-json ",
            pg.port()
        )),
        "{cmd}"
    );
}

/// Regression (audit p15, H1), for Redis.
#[test]
fn the_bundled_redis_command_records_no_password_in_any_report() {
    let Some(r) = support::redis::server() else {
        return;
    };
    let secret = "redis-s3cret-pw";
    r.command(&["CONFIG", "SET", "requirepass", secret])
        .unwrap();
    let url = format!("url=redis://:{secret}@127.0.0.1:{}/0", r.port());
    let cmd = reports_hide(
        "redis-secret",
        &[
            "run",
            "redis-keyvalue",
            &url,
            "keycount=50",
            "main_cycles=50",
            "rampup_rate=3000",
            "rate=3000",
        ],
        secret,
        ":***@127.0.0.1",
    );
    assert!(
        cmd.contains(" run redis-keyvalue 'url=redis://:***@127.0.0.1:"),
        "{cmd}"
    );
    // `coordinate=`, the shared schedule's URL, on the same server.
    let coordinate = format!("coordinate=redis://:{secret}@127.0.0.1:{}/hidden", r.port());
    let cmd = reports_hide(
        "coordinate-secret",
        &["run", "driver=diag", "cycles=20", "rate=200", &coordinate],
        secret,
        ":***@127.0.0.1",
    );
    assert!(
        cmd.contains(" run driver=diag cycles=20 rate=200 'coordinate=redis://:***@127.0.0.1:"),
        "{cmd}"
    );
}

/// Regression (audit p15, H2): tokio-postgres takes the user info to the
/// first `@`, so a password holding `/` or `?` connects; `masked` ended it at
/// the first `/` or `?` and printed it in every load message.
#[test]
fn a_postgres_password_holding_slash_question_mark_or_at_connects_and_is_never_printed() {
    use support::postgres::server;
    let Some(pg) = server() else { return };
    pg.psql("create role odd login password 'pa/ss?x@y'");
    let yaml = write_temp(
        "odd.yaml",
        "params: {driver: postgres, cycles: 3}\nops: {o: {query: 'select 1', expect_rows: 1}}\n",
    );
    let at = |pw: &str| format!("url=postgres://odd:{pw}@127.0.0.1:{}/postgres", pg.port());
    // The right password, its `@` percent-encoded: it connects.
    let out = run(&["run", &yaml, &at("pa/ss?x%40y"), "--no-progress"]);
    let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{all}");
    assert!(!all.contains("pa/ss"), "{all}");
    // NB5 jdbc's `user=` and `password=` params on the command line: the
    // reports record `password=***`.
    let cmd = reports_hide(
        "pg-param",
        &[
            "run",
            &yaml,
            &format!("url=jdbc:postgresql://127.0.0.1:{}/postgres", pg.port()),
            "user=odd",
            "password=pa/ss?x@y",
        ],
        "pa/ss",
        "password=***",
    );
    assert!(
        cmd.contains(" user=odd 'password=***' --no-progress"),
        "{cmd}"
    );
    // A wrong one: refused, exit 2, the fix, and no part of it shown.
    let out = run(&["run", &yaml, &at("wr/ong?pw%40z")]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("refused user `odd` (SQLSTATE 28P01"), "{err}");
    assert!(err.contains("postgres://odd:***@127.0.0.1"), "{err}");
    for part in ["wr/ong", "ong?", "pw%40z"] {
        assert!(!err.contains(part), "{part}: {err}");
    }
    // A raw `@`: the parser takes `pa` as the password and `ss@127.0.0.1` as
    // the host; the message says to percent-encode it, and hides it.
    let out = run(&["run", &yaml, &at("pa@ss"), "connect_timeout=3s"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("percent-encoded, as `%40`"), "{err}");
    assert!(err.contains("postgres://odd:***@127.0.0.1"), "{err}");
    assert!(!err.contains("pa@ss") && !err.contains("ss@127"), "{err}");
    // The server gone: unreachable, and still hidden.
    let url = at("pa/ss?x%40y");
    drop(pg);
    let out = run(&["run", &yaml, &url]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("cannot reach PostgreSQL at postgres://odd:***@127.0.0.1"),
        "{err}"
    );
    assert!(!err.contains("pa/ss") && !err.contains("x%40y"), "{err}");
}
