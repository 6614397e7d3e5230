//! The `postgres` driver's start against a real PostgreSQL cluster
//! (`tests/support/postgres.rs`) and against servers that refuse it: refused
//! statements and placeholders, credentials, unreachable or wrong servers,
//! libpq's sslmodes. Without the server binaries each test prints
//! `skipping: ...` and passes. The runs themselves are in
//! `postgres_driver.rs`.
#![cfg(not(loom))]

mod support;

use paceline::{Drivers, ParamOverrides, StartError};
use support::pg_run::{refused, run_yaml_url};
use support::postgres::{PASSWORD, server};

#[test]
fn a_statement_the_server_refuses_stops_the_start_at_its_op() {
    let Some(pg) = server() else { return };
    let msg = refused(
        "params: {driver: postgres, url: 'URL'}\nbindings: {k: Identity()}\nops:\n  read:\n    prepared: 'select v from missing where k = {k}'",
        &pg.url(),
    );
    assert!(
        msg.contains("pg.yaml:5:5: op `read`: field `prepared`: the server refused the statement: SQLSTATE 42P01: relation \"missing\" does not exist"),
        "{msg}"
    );
}

#[test]
fn a_placeholder_inside_a_quoted_literal_is_refused_at_load() {
    let d = Drivers::builtin();
    let a = d
        .loader()
        .from_str(
            "params: {driver: postgres, url: 'postgres://u@127.0.0.1:1/x'}\nbindings: {k: Identity()}\n\
             ops:\n  put: \"insert into kv values ({k}, 'v{k}')\"",
            "pg.yaml",
        )
        .unwrap();
    let Err(err) = d.prepare(&a, &ParamOverrides::default()) else {
        panic!("accepted")
    };
    let StartError::Driver(e) = &err else {
        panic!("{err}")
    };
    assert_eq!(a.position_of(e), Some((4, 3)));
    assert!(
        err.to_string()
            .contains("op `put`: field `stmt`: placeholder `{k}` is inside a quoted string"),
        "{err}"
    );
}

#[test]
fn bad_credentials_and_an_unreachable_server_say_the_fix_and_hide_the_password() {
    let Some(pg) = server() else { return };
    let yaml = "params: {driver: postgres, url: 'URL'}\nops: {o: 'select 1'}";
    let wrong = pg.url().replace(PASSWORD, "wrong-pw");
    let msg = refused(yaml, &wrong);
    assert!(
        msg.contains("refused user `postgres` (SQLSTATE 28P01"),
        "{msg}"
    );
    assert!(msg.contains("postgres://postgres:***@127.0.0.1"), "{msg}");
    assert!(!msg.contains("wrong-pw"), "{msg}");
    let nodb = format!(
        "postgres://postgres:{PASSWORD}@127.0.0.1:{}/nodb",
        pg.port()
    );
    let msg = refused(yaml, &nodb);
    assert!(msg.contains("createdb nodb"), "{msg}");
    let port = pg.port();
    drop(pg);
    let msg = refused(
        yaml,
        &format!("postgres://postgres:{PASSWORD}@127.0.0.1:{port}/postgres"),
    );
    assert!(
        msg.contains("cannot reach PostgreSQL at postgres://postgres:***@127.0.0.1"),
        "{msg}"
    );
    assert!(!msg.contains(PASSWORD), "{msg}");
}

#[test]
fn a_refused_start_exits_2_with_the_place_from_the_command_line() {
    let Some(pg) = server() else { return };
    let file = support::bin::temp("refused.yaml");
    std::fs::write(
        &file,
        "params: {driver: postgres}\nops:\n  read:\n    query: 'select * from missing'\n",
    )
    .unwrap();
    let url = format!("url={}", pg.url());
    let out = support::bin::run(&["run", file.to_str().unwrap(), &url]);
    let err = support::bin::text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("refused.yaml:4:5: op `read`: field `query`"),
        "{err}"
    );
    assert!(!err.contains(PASSWORD), "{err}");
}

/// Issue 22: libpq's sslmodes against a server with `ssl=on` whose
/// certificate (for `localhost` only) a test CA signed.
#[test]
fn sslmodes_check_what_libpq_checks() {
    let ca = support::tls::TestCa::new();
    let other_ca = support::tls::TestCa::new();
    let leaf = ca.leaf(&["localhost"]);
    let Some(pg) = support::postgres::tls_server(&leaf.cert_pem, &leaf.key_pem) else {
        return;
    };
    let ca_file = support::bin::temp("pg-ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();
    let wrong_file = support::bin::temp("pg-other-ca.pem");
    std::fs::write(&wrong_file, other_ca.pem()).unwrap();
    let (ca_file, wrong_file) = (ca_file.display(), wrong_file.display());
    let by_ip = pg.url();
    let by_name = pg.url().replace("127.0.0.1", "localhost");
    let encrypted = "ops: {ssl: {query: 'select 1 from pg_stat_ssl where pid = pg_backend_pid() \
                     and ssl', expect_rows: 1}}";
    let passes = |url: &str, extra: &str| {
        let yaml =
            format!("params: {{driver: postgres, url: 'URL', cycles: 5{extra}}}\n{encrypted}");
        let t = run_yaml_url(&yaml, url);
        assert_eq!(
            (t.ops(), t.errors().count()),
            (5, 0),
            "{url}{extra}: {:?}",
            t.errors().collect::<Vec<_>>()
        );
    };
    // require, prefer, allow: encrypted, no check without a root certificate.
    for mode in ["require", "prefer", "allow"] {
        passes(&format!("{by_ip}?sslmode={mode}"), "");
    }
    // verify-ca: the chain, not the name (the URL's 127.0.0.1 is not in it).
    passes(
        &format!("{by_ip}?sslmode=verify-ca&sslrootcert={ca_file}"),
        "",
    );
    passes(
        &format!("{by_ip}?sslmode=verify-ca"),
        &format!(", ca_file: '{ca_file}'"),
    );
    // verify-full: the chain and the name.
    passes(
        &format!("{by_name}?sslmode=verify-full&sslrootcert={ca_file}"),
        "",
    );
    let plain = "params: {driver: postgres, url: 'URL'}\nops: {o: 'select 1'}";
    let msg = refused(
        plain,
        &format!("{by_ip}?sslmode=verify-full&sslrootcert={ca_file}"),
    );
    assert!(
        msg.contains("the host name check (sslmode=verify-full) failed"),
        "{msg}"
    );
    assert!(msg.contains("not for `127.0.0.1`"), "{msg}");
    assert!(
        msg.contains("sslmode=verify-ca to check the chain only"),
        "{msg}"
    );
    // A wrong CA fails verify-ca, verify-full, and require given a root.
    for mode in ["verify-ca", "verify-full", "require"] {
        let msg = refused(
            plain,
            &format!("{by_name}?sslmode={mode}&sslrootcert={wrong_file}"),
        );
        assert!(
            msg.contains("the certificate chain check") && msg.contains(&wrong_file.to_string()),
            "{mode}: {msg}"
        );
        assert!(
            msg.contains("point sslrootcert (or ca_file) at the CA"),
            "{msg}"
        );
        assert!(!msg.contains(PASSWORD), "{msg}");
    }
    // verify-* without a root certificate: refused with the fix.
    let msg = refused(plain, &format!("{by_ip}?sslmode=verify-ca"));
    assert!(msg.contains("give `sslrootcert=/path/to/ca.pem`"), "{msg}");
    // disable: plain, though the server offers TLS.
    let t = run_yaml_url(
        "params: {driver: postgres, url: 'URL', cycles: 3}\n\
         ops: {plain: {query: 'select 1 from pg_stat_ssl where pid = pg_backend_pid() and not ssl', \
         expect_rows: 1}}",
        &format!("{by_ip}?sslmode=disable"),
    );
    assert_eq!((t.ops(), t.errors().count()), (3, 0));
}

/// `sslmode=require` against a server without TLS: refused, saying so.
#[test]
fn sslmode_require_against_a_server_without_tls_says_so() {
    let Some(pg) = server() else { return };
    let plain = "params: {driver: postgres, url: 'URL'}\nops: {o: 'select 1'}";
    let msg = refused(plain, &format!("{}?sslmode=require", pg.url()));
    assert!(
        msg.contains("does not offer TLS, which sslmode=require needs"),
        "{msg}"
    );
    // prefer falls back to plain.
    let t = run_yaml_url(
        "params: {driver: postgres, url: 'URL', cycles: 2}\nops: {o: 'select 1'}",
        &format!("{}?sslmode=prefer", pg.url()),
    );
    assert_eq!((t.ops(), t.errors().count()), (2, 0));
}

/// A loopback server that answers every connection with `answer` (what a
/// redis or an HTTP server says to a PostgreSQL client), held open; its port.
fn not_postgres(answer: &'static [u8]) -> u16 {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            std::thread::spawn(move || {
                let mut buf = [0u8; 512];
                let _ = s.read(&mut buf);
                let _ = s.write_all(answer);
                std::thread::sleep(std::time::Duration::from_secs(10));
            });
        }
    });
    port
}

/// Regression (issue 22 review): a `url` at a redis or HTTP port had its
/// answer read as a message of ~1.4 GB (allocated per attempt), then timed
/// out and blamed a slow server. Now the start exits 2 at once, saying
/// what answered and what to check.
#[test]
fn a_url_at_a_server_that_is_not_postgresql_exits_2_naming_it() {
    let file = support::bin::temp("notpg.yaml");
    std::fs::write(&file, "params: {driver: postgres}\nops: {o: 'select 1'}\n").unwrap();
    for (answer, got) in [
        (
            &b"-ERR unknown command '\\x00', with args beginning with: \r\n"[..],
            "-ERR unknown",
        ),
        (
            &b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n"[..],
            "HTTP/1.1 400",
        ),
    ] {
        let port = not_postgres(answer);
        for mode in ["prefer", "disable"] {
            let url = format!("url=postgres://app:pw@127.0.0.1:{port}/db?sslmode={mode}");
            let t0 = std::time::Instant::now();
            let out = support::bin::run(&["run", file.to_str().unwrap(), &url]);
            let err = support::bin::text(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{err}");
            assert!(
                err.contains(&format!(
                    "127.0.0.1:{port} did not answer as a PostgreSQL server (got \"{got}"
                )) && err.contains("check the url's host and port"),
                "{mode}: {err}"
            );
            // Well within the default 5 s connect_timeout: no wait blamed.
            assert!(t0.elapsed() < std::time::Duration::from_secs(4), "{err}");
        }
    }
}
