//! The `postgres` driver's `tls_verify: false` and its summary JSON's rows per
//! op (audit of issues 21 and 22, gaps 7 and 10), against a real PostgreSQL
//! cluster with `ssl=on` that each test creates (`tests/support/postgres.rs`),
//! serving a certificate from a CA the run does not trust. Without the server
//! binaries each test prints `skipping: ...` and passes.
//!
//! As libpq, the driver checks a certificate against a root certificate
//! (`sslrootcert`, `ca_file`) and checks none without one. `tls_verify: false`
//! is refused beside a root certificate or a `verify-*` mode, which ask for the
//! check it would turn off; everywhere else nothing is checked already, and it
//! only turns the notice into a warning that says so (docs/drivers.md).
#![cfg(not(loom))]

mod support;

use paceline::{Drivers, Engine, ParamOverrides, StartError};
use serde_json::Value;
use support::postgres::PASSWORD;

/// Starts `yaml` (its `URL` replaced by `url`), which must be refused: the message.
fn refused(yaml: &str, url: &str) -> String {
    let d = Drivers::builtin();
    let a = d
        .loader()
        .from_str(&yaml.replace("URL", url), "pg.yaml")
        .unwrap_or_else(|e| panic!("{e}"));
    match d.start(&Engine::new(), &a, &ParamOverrides::default()) {
        Err(e @ StartError::Driver(_)) => e.to_string(),
        Err(e) => panic!("refused for another reason: {e}"),
        Ok(run) => panic!("started: {}", run.wait()),
    }
}

/// Three rows per op, from a connection that is encrypted (else none).
const ENCRYPTED_ROWS: &str = "select generate_series(1, 3) from pg_stat_ssl \
                              where pid = pg_backend_pid() and ssl";

#[test]
fn tls_verify_false_is_refused_beside_a_check_and_elsewhere_only_warns_once() {
    let ca = support::tls::TestCa::new();
    let leaf = ca.leaf(&["localhost"]);
    let Some(pg) = support::postgres::tls_server(&leaf.cert_pem, &leaf.key_pem) else {
        return;
    };
    // A root certificate that did not sign the server's: the check fails, and
    // the message says to point the file at the server's CA.
    let other = support::tls::TestCa::new();
    let other_file = support::bin::write_temp("pg-untrusted-ca.pem", &other.pem());
    let url = pg.url().replace("127.0.0.1", "localhost");
    let plain = "params: {driver: postgres, url: 'URL'}\nops: {o: 'select 1'}";
    for mode in ["require", "verify-ca", "verify-full"] {
        let msg = refused(
            plain,
            &format!("{url}?sslmode={mode}&sslrootcert={other_file}"),
        );
        assert!(
            msg.contains("the certificate chain check")
                && msg.contains("point sslrootcert (or ca_file) at the CA"),
            "{mode}: {msg}"
        );
        assert!(!msg.contains(PASSWORD), "{msg}");
    }
    // `tls_verify: false` beside a root certificate, or with a mode that asks
    // for the check: refused, saying which to drop.
    let msg = refused(
        &plain.replace("url: 'URL'", "url: 'URL', tls_verify: false"),
        &format!("{url}?sslmode=require&sslrootcert={other_file}"),
    );
    assert!(
        msg.contains("`tls_verify: false` contradict each other")
            && msg.contains("remove `tls_verify: false`"),
        "{msg}"
    );
    let msg = refused(
        &plain.replace("url: 'URL'", "url: 'URL', tls_verify: false"),
        &format!("{url}?sslmode=verify-full"),
    );
    assert!(
        msg.contains("`sslmode=verify-full` and `tls_verify: false` contradict each other")
            && msg.contains("use `sslmode=require` to encrypt without checking"),
        "{msg}"
    );

    // Through the binary, with no root certificate: the untrusted server is
    // taken with or without `tls_verify: false` (no mode that allows it checks
    // anything without a root), the traffic is encrypted unless `disable` (3
    // rows per op only on an encrypted connection), and the summary JSON has
    // the rows per op. What `tls_verify: false` changes is the message only
    // (docs/drivers.md): a warning, once, that certificates are not checked;
    // under `require` in place of the notice about require without a root
    // certificate; under `disable` nothing (review 1, 1.2: a run with it alone
    // could not tell it from one without).
    const WARNING: &str = "`tls_verify: false`: PostgreSQL certificates are not checked";
    const NOTICE: &str = "sslmode=require without a root certificate encrypts but does not \
                          check the server's certificate";
    // (sslmode, tls_verify: false given, warnings, notices, rows per op)
    for (mode, no_verify, warnings, notices, rows) in [
        ("require", true, 1, 0, 3),
        ("require", false, 0, 1, 3),
        ("prefer", true, 1, 0, 3),
        ("prefer", false, 0, 0, 3),
        ("disable", true, 0, 0, 0),
    ] {
        let case = format!("sslmode={mode}, tls_verify: false {no_verify}");
        let param = if no_verify { "tls_verify: false, " } else { "" };
        let yaml = support::bin::write_temp(
            &format!("pg-noverify-{mode}-{no_verify}.yaml"),
            &format!(
                "params: {{driver: postgres, alias: noverify, url: '{url}?sslmode={mode}', \
                 {param}cycles: 10, threads: 2}}\n\
                 ops: {{rows: {{query: '{ENCRYPTED_ROWS}', expect_rows: {rows}}}}}\n"
            ),
        );
        let json = support::bin::temp(&format!("pg-noverify-{mode}-{no_verify}.json"));
        let out = support::bin::run(&[
            "run",
            &yaml,
            "--no-progress",
            "--summary-json",
            json.to_str().unwrap(),
        ]);
        let (stdout, stderr) = (
            support::bin::text(&out.stdout),
            support::bin::text(&out.stderr),
        );
        assert_eq!(out.status.code(), Some(0), "{case}: {stderr}{stdout}");
        assert_eq!(
            (
                stderr.matches(WARNING).count(),
                stderr.matches(NOTICE).count()
            ),
            (warnings, notices),
            "{case}: {stderr}"
        );
        assert!(!stderr.contains(PASSWORD) && !stdout.contains(PASSWORD));
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let a = &v["activities"][0];
        assert_eq!(a["cycles"]["completed"], 10, "{case}: {a}");
        assert_eq!(a["cycles"]["errors"], 0, "{case}: {a}");
        assert_eq!(
            a["driver_stats"],
            serde_json::json!({"answered_ops": 10, "rows": 10 * rows, "rows_per_op": f64::from(rows)}),
            "{case}: {a}"
        );
        assert!(!v.to_string().contains(PASSWORD));
        let _ = std::fs::remove_file(json);
    }
}

#[test]
fn the_summary_json_has_the_rows_per_op_of_a_plain_run() {
    let Some(pg) = support::postgres::server() else {
        return;
    };
    // Ops of 0, 2 and 4 rows in turn: 2 per op.
    let yaml = support::bin::write_temp(
        "pg-rows.yaml",
        &format!(
            "params: {{driver: postgres, alias: rows, url: '{}', cycles: 9}}\n\
             bindings: {{n: \"Mod(3)\"}}\n\
             ops: {{rows: {{query: 'select generate_series(1, {{n}} * 2)'}}}}\n",
            pg.url()
        ),
    );
    let json = support::bin::temp("pg-rows.json");
    let out = support::bin::run(&[
        "run",
        &yaml,
        "--no-progress",
        "--summary-json",
        json.to_str().unwrap(),
    ]);
    let stdout = support::bin::text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{stdout}",
        support::bin::text(&out.stderr)
    );
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(
        v["activities"][0]["driver_stats"],
        serde_json::json!({"answered_ops": 9, "rows": 18, "rows_per_op": 2.0}),
        "{v}"
    );
    // The console says the same.
    assert!(
        stdout.contains("rows (postgres): 18 rows in 9 ops, 2.00 per op"),
        "{stdout}"
    );
    assert!(!v.to_string().contains(PASSWORD));
    let _ = std::fs::remove_file(json);
}
