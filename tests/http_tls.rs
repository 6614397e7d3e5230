//! The `http` driver over TLS against a real nginx, with certificates each
//! test makes on the spot (`tests/support/tls.rs`).
//!
//! Without nginx, or with an nginx that cannot serve TLS, each test prints
//! `skipping: ...` and passes. `.ci/run` installs nginx when missing.

mod support;

use paceline::{Http, Outcome};
use support::drive::start_text;
use support::nginx::{Nginx, Options, PemFile};
use support::tls::{Leaf, TestCa, self_signed_ca_leaf};

/// nginx serving TLS with `leaf`, or `None` after printing why the test skips.
fn nginx_tls(leaf: &Leaf) -> Option<Nginx> {
    nginx_tls_with(Options::default(), leaf)
}

fn nginx_tls_with(opts: Options, leaf: &Leaf) -> Option<Nginx> {
    support::nginx::tls_or_skip(opts, &leaf.cert_pem, &leaf.key_pem)
}

/// `ca`'s certificate in a file of its own, removed with the guard.
fn ca_file(ca: &TestCa, name: &str) -> PemFile {
    PemFile::holding(&ca.pem(), name)
}

/// Runs one request with the default error policy (stop at the first error)
/// and returns how the run ended.
fn first_error(params: &str, url: &str, alias: &str) -> Outcome {
    let yaml = format!(
        "params: {{driver: http, alias: {alias}, cycles: 1, timeout: 5s, {params}}}\nops: {{get: 'GET {url}'}}"
    );
    let run = start_text(&format!("{alias}.yaml"), &yaml);
    run.wait()
}

fn failed(outcome: Outcome) -> String {
    match outcome {
        Outcome::Failed(m) => {
            eprintln!("run failed as expected: {m}");
            m
        }
        other => panic!("expected a failure, got {other}"),
    }
}

#[test]
fn https_with_a_ca_file_reuses_one_tls_connection() {
    let ca = TestCa::new();
    let Some(nginx) = nginx_tls(&ca.leaf(&["localhost"])) else {
        return;
    };
    let file = ca_file(&ca, "happy");
    let yaml = format!(
        "params: {{driver: http, alias: tls-happy, base_url: 'https://localhost:{}', ca_file: '{}', \
         threads: 2, cycles: 200, errors: count}}\nops: {{ok: GET /ok, echo: 'GET /echo/{{cycle}}'}}\n\
         bindings: {{cycle: Identity()}}",
        nginx.port(),
        file.path()
    );
    let run = start_text("tls-happy.yaml", &yaml);
    assert_eq!(run.wait(), Outcome::Completed);
    let totals = run.snapshot();
    assert_eq!(
        (totals.ops(), totals.errors().collect::<Vec<_>>()),
        (200, vec![])
    );
    let http = Http::stats("tls-happy").unwrap();
    assert_eq!(http.status(200), 200);
    // One kept-alive TLS connection per worker carried every request.
    assert_eq!(http.connections, 2, "{http}");
    // The answers were read through TLS: nginx's logged the request lines.
    let log = nginx.access_log();
    assert_eq!(log.len(), 200);
    assert!(log.iter().any(|l| l.contains("GET /echo/")), "{log:?}");
}

#[test]
fn new_connections_resume_the_tls_session() {
    let ca = TestCa::new();
    let Some(nginx) = nginx_tls(&ca.leaf(&["localhost"])) else {
        return;
    };
    let file = ca_file(&ca, "resume");
    let yaml = format!(
        "params: {{driver: http, alias: tls-resume, base_url: 'https://localhost:{}', ca_file: '{}', \
         keepalive: false, cycles: 20}}\nops: {{ok: GET /ok}}",
        nginx.port(),
        file.path()
    );
    let run = start_text("tls-resume.yaml", &yaml);
    assert_eq!(run.wait(), Outcome::Completed);
    let http = Http::stats("tls-resume").unwrap();
    assert_eq!((http.connections, http.status(200)), (20, 20), "{http}");
    // The first handshake is a full one; nginx allows resumption, and the
    // driver resumes (each ticket is used once, and nginx sends new ones).
    assert!(
        http.tls_resumed >= 10 && http.tls_resumed < 20,
        "resumed {} of 20",
        http.tls_resumed
    );
}

#[test]
fn a_tls_connection_the_server_closed_while_idle_is_replaced_without_errors() {
    // nginx closes a kept-alive connection after 10 ms idle (with its
    // close_notify); requests come 20 ms apart: each finds its connection
    // closed, and goes on a new one without an error.
    let ca = TestCa::new();
    let opts = Options {
        keepalive_timeout: "10ms",
        ..Options::default()
    };
    let Some(nginx) = nginx_tls_with(opts, &ca.leaf(&["localhost"])) else {
        return;
    };
    let file = ca_file(&ca, "idle");
    let yaml = format!(
        "params: {{driver: http, alias: tls-idle, base_url: 'https://localhost:{}', ca_file: '{}', \
         cycles: 15, rate: 50, errors: count}}\nops: {{ok: GET /ok}}",
        nginx.port(),
        file.path()
    );
    let run = start_text("tls-idle.yaml", &yaml);
    assert_eq!(run.wait(), Outcome::Completed);
    let totals = run.snapshot();
    assert_eq!(
        (totals.ops(), totals.errors().collect::<Vec<_>>()),
        (15, vec![])
    );
    let http = Http::stats("tls-idle").unwrap();
    assert_eq!(http.status(200), 15, "{http}");
    // Most connections were closed by nginx in between (the first slots may
    // come closer together).
    assert!(http.connections >= 8, "{http}");
}

#[test]
fn a_certificate_for_another_name_is_a_tls_error() {
    let ca = TestCa::new();
    let Some(nginx) = nginx_tls(&ca.leaf(&["other.test"])) else {
        return;
    };
    let file = ca_file(&ca, "name");
    let url = format!("https://localhost:{}/ok", nginx.port());
    let m = failed(first_error(
        &format!("ca_file: '{}'", file.path()),
        &url,
        "tls-name",
    ));
    assert!(
        m.starts_with("cycle 0: tls: ") && m.contains("certificate is not for that name"),
        "{m}"
    );
}

#[test]
fn an_expired_certificate_is_a_tls_error() {
    let ca = TestCa::new();
    let Some(nginx) = nginx_tls(&ca.expired_leaf(&["localhost"])) else {
        return;
    };
    let file = ca_file(&ca, "expired");
    let url = format!("https://localhost:{}/ok", nginx.port());
    let m = failed(first_error(
        &format!("ca_file: '{}'", file.path()),
        &url,
        "tls-expired",
    ));
    assert!(
        m.starts_with("cycle 0: tls: ") && m.contains("has expired"),
        "{m}"
    );
}

#[test]
fn an_unknown_issuer_is_a_tls_error_unless_verification_is_off() {
    let ca = TestCa::new();
    let Some(nginx) = nginx_tls(&ca.leaf(&["localhost"])) else {
        return;
    };
    let url = format!("https://localhost:{}/ok", nginx.port());
    // The platform's roots do not hold the test CA (or there are none: the
    // message then says how to install them or set `ca_file`).
    let m = failed(first_error("errors: stop", &url, "tls-issuer"));
    assert!(
        m.starts_with("cycle 0: tls: ")
            && (m.contains("not signed by a certificate this run trusts")
                || m.contains("found no root certificates")),
        "{m}"
    );
    // `tls_verify: false` takes the certificate as it is.
    assert_eq!(
        first_error("tls_verify: false", &url, "tls-noverify"),
        Outcome::Completed
    );
}

#[test]
fn plain_http_on_the_tls_port_is_a_tls_error() {
    let Some(nginx) = support::nginx::server() else {
        return;
    };
    let url = format!("https://127.0.0.1:{}/ok", nginx.port());
    let m = failed(first_error("tls_verify: false", &url, "tls-plain"));
    assert!(
        m.starts_with("cycle 0: tls: ") && m.contains("does not speak TLS"),
        "{m}"
    );
}

#[test]
fn nothing_listening_on_the_tls_port_is_a_connect_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("https://127.0.0.1:{port}/ok");
    let m = failed(first_error("tls_verify: false", &url, "tls-refused"));
    assert!(m.starts_with("cycle 0: connect: "), "{m}");
}

/// The binary runs `https://` with `tls_verify=false` from the command line,
/// and says once, on stderr, that certificates are not checked.
#[test]
fn the_binary_warns_when_certificates_are_not_checked() {
    let ca = TestCa::new();
    let Some(nginx) = nginx_tls(&ca.leaf(&["localhost"])) else {
        return;
    };
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_paceline"))
        .args([
            "run",
            "driver=http",
            &format!("base_url=https://localhost:{}", nginx.port()),
            "tls_verify=false",
            "op=GET /ok",
            "cycles=20",
            "--no-progress",
        ])
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        stderr
            .matches("`tls_verify: false`: https certificates are not checked")
            .count(),
        1,
        "{stderr}"
    );
    assert!(
        stdout.contains("http (http): 20 requests over 1 connection"),
        "{stdout}"
    );
}

#[test]
fn a_self_signed_ca_certificate_given_as_ca_file_is_trusted_as_curl_trusts_it() {
    // Issue 24 item 12: the usual test certificate (`openssl req -x509`,
    // `CA:TRUE`) was refused with a raw `CaUsedAsEndEntity` even when given as
    // `ca_file`, which curl's `--cacert` accepts.
    let leaf = self_signed_ca_leaf(&["localhost"], (2025, 1, 1), (2035, 1, 1));
    let Some(nginx) = nginx_tls(&leaf) else {
        return;
    };
    let file = PemFile::holding(&leaf.cert_pem, "self-signed");
    let yaml = format!(
        "params: {{driver: http, alias: tls-self, base_url: 'https://localhost:{}', ca_file: '{}', \
         cycles: 20}}\nops: {{ok: GET /ok}}",
        nginx.port(),
        file.path()
    );
    let run = start_text("tls-self.yaml", &yaml);
    assert_eq!(run.wait(), Outcome::Completed);
    assert_eq!(Http::stats("tls-self").unwrap().status(200), 20);
    // Without the file, the error says what the certificate is and what to do.
    let url = format!("https://localhost:{}/ok", nginx.port());
    let m = failed(first_error("", &url, "tls-self-platform"));
    assert!(
        m.starts_with("cycle 0: tls: ")
            && m.contains("presents a CA certificate")
            && m.contains("set param `ca_file` to that certificate's PEM file"),
        "{m}"
    );
}

#[test]
fn a_certificate_trusted_as_itself_still_needs_its_name_and_dates() {
    // Trusting the certificate in `ca_file` as it is skips only the chain:
    // a self-signed certificate for another name, or expired, still fails,
    // each with its advice.
    let other = self_signed_ca_leaf(&["elsewhere.test"], (2025, 1, 1), (2035, 1, 1));
    if let Some(nginx) = nginx_tls(&other) {
        let file = PemFile::holding(&other.cert_pem, "self-other");
        let url = format!("https://localhost:{}/ok", nginx.port());
        let m = failed(first_error(
            &format!("ca_file: '{}'", file.path()),
            &url,
            "tls-self-other",
        ));
        assert!(m.contains("certificate is not for that name"), "{m}");
    }
    let old = self_signed_ca_leaf(&["localhost"], (2020, 1, 1), (2021, 1, 1));
    if let Some(nginx) = nginx_tls(&old) {
        let file = PemFile::holding(&old.cert_pem, "self-old");
        let url = format!("https://localhost:{}/ok", nginx.port());
        let m = failed(first_error(
            &format!("ca_file: '{}'", file.path()),
            &url,
            "tls-self-old",
        ));
        assert!(m.contains("has expired"), "{m}");
    }
}

#[test]
fn the_first_https_op_pays_no_connect_or_handshake() {
    // Issue 24 item 5: the first op paid the TLS handshake (and the reading
    // of the certificates) in its service time. Each worker now connects
    // before its first op, even to hosts named only in the ops' URLs.
    let ca = TestCa::new();
    let Some(nginx) = nginx_tls(&ca.leaf(&["localhost"])) else {
        return;
    };
    let file = ca_file(&ca, "first");
    let yaml = format!(
        "params: {{driver: http, alias: tls-first, ca_file: '{}', threads: 2, cycles: 10, \
         rate: 100}}\nops: {{ok: 'GET https://localhost:{}/ok'}}",
        file.path(),
        nginx.port()
    );
    let run = start_text("tls-first.yaml", &yaml);
    assert_eq!(run.wait(), Outcome::Completed);
    let http = Http::stats("tls-first").unwrap();
    assert_eq!(http.status(200), 10);
    assert_eq!(
        (http.connections, http.connections_before_start),
        (2, 2),
        "{http}"
    );
    assert!(http.connect_mean().unwrap() > std::time::Duration::ZERO);
}
