//! The `http` driver's async client (`client: async`) over HTTPS against a real
//! nginx, and its redirects against the scripted server of tests/http_wire,
//! each beside what the sync client does with the same activity.
//!
//! Without nginx, or with an nginx that cannot serve TLS, the TLS tests print
//! `skipping: ...` and pass. `.ci/run` installs nginx when missing.

mod support;

#[allow(dead_code)]
#[path = "http_wire/server.rs"]
mod server;

use paceline::{Http, HttpStats, Outcome, Snapshot};
use server::{Reply, Server, errors};
use std::collections::BTreeMap;
use support::drive;
use support::nginx::{Nginx, Options, PemFile};
use support::tls::{Leaf, TestCa};

/// nginx serving TLS with `leaf`, or `None` after printing why the test skips.
fn nginx_tls(leaf: &Leaf) -> Option<Nginx> {
    support::nginx::tls_or_skip(Options::default(), &leaf.cert_pem, &leaf.key_pem)
}

/// `ca`'s certificate in a file of its own, removed with the guard.
fn ca_file(ca: &TestCa, name: &str) -> PemFile {
    PemFile::holding(&ca.pem(), &format!("async-{name}"))
}

/// Runs `params` (flow-style entries) and `ops` as activity `alias` to its end:
/// how it ended, its totals and the driver's stats, and whether it ran on the
/// async runner.
fn run(alias: &str, params: &str, ops: &str) -> (Outcome, Snapshot, HttpStats, bool) {
    let yaml =
        format!("params: {{driver: http, alias: {alias}, timeout: 5s, {params}}}\nops: {ops}\n");
    let run = drive::start_text(&format!("{alias}.yaml"), &yaml);
    let outcome = run.wait();
    let stats = Http::stats(alias).expect("stats for the alias");
    (outcome, run.snapshot(), stats, run.is_async())
}

/// The two clients, as the params that pick each: `(name, params)`.
const CLIENTS: [(&str, &str); 2] = [
    ("sync", "client: sync"),
    ("async", "client: async, concurrency: 4"),
];

#[test]
fn the_async_client_completes_tls_handshakes_with_a_ca_file_as_the_sync_client_does() {
    let ca = TestCa::new();
    let Some(nginx) = nginx_tls(&ca.leaf(&["localhost"])) else {
        return;
    };
    let file = ca_file(&ca, "happy");
    for (client, params) in CLIENTS {
        let alias = format!("async-tls-{client}");
        let (outcome, totals, http, on_async) = run(
            &alias,
            &format!(
                "base_url: 'https://localhost:{}', ca_file: '{}', threads: 1, cycles: 40, \
                 rate: 2000, errors: count, {params}",
                nginx.port(),
                file.path()
            ),
            "{ok: GET /ok}",
        );
        assert_eq!(outcome, Outcome::Completed, "{client}");
        assert_eq!(on_async, client == "async", "{client}");
        assert_eq!(
            (totals.ops(), errors(&totals)),
            (40, vec![]),
            "{client}: {http}"
        );
        assert_eq!(http.status(200), 40, "{client}: {http}");
        // The answers were read through TLS: nginx logged each request.
        assert!(http.connections >= 1, "{client}: {http}");
        if client == "async" {
            // The async client opened its connections (with their handshakes)
            // before the first op: one per op in flight.
            assert_eq!(http.connections_before_start, 4, "{http}");
        }
    }
    assert_eq!(nginx.access_log().len(), 80);
}

#[test]
fn an_untrusted_certificate_is_a_tls_error_on_the_async_client_as_on_the_sync_one() {
    let ca = TestCa::new();
    let Some(nginx) = nginx_tls(&ca.leaf(&["localhost"])) else {
        return;
    };
    // Another CA in `ca_file`: the server's chain leads to none this run trusts.
    let other = TestCa::new();
    let file = ca_file(&other, "untrusted");
    let mut messages = BTreeMap::new();
    for (client, params) in CLIENTS {
        let alias = format!("async-untrusted-{client}");
        let (outcome, totals, http, _) = run(
            &alias,
            &format!(
                "base_url: 'https://localhost:{}', ca_file: '{}', threads: 1, cycles: 3, \
                 errors: count, {params}",
                nginx.port(),
                file.path()
            ),
            "{ok: GET /ok}",
        );
        assert_eq!(outcome, Outcome::Completed, "{client}");
        // Every op failed with kind `tls`; nothing was answered.
        assert_eq!(
            errors(&totals),
            [("tls".to_string(), 3)],
            "{client}: {http}"
        );
        assert_eq!(http.status(200), 0, "{client}: {http}");
        assert!(nginx.access_log().is_empty());
        // With the default policy the run stops and says why.
        let (outcome, ..) = run(
            &format!("{alias}-stop"),
            &format!(
                "base_url: 'https://localhost:{}', ca_file: '{}', threads: 1, cycles: 1, \
                 {params}",
                nginx.port(),
                file.path()
            ),
            "{ok: GET /ok}",
        );
        let Outcome::Failed(m) = outcome else {
            panic!("{client}: expected a failure, got {outcome}");
        };
        assert!(
            m.starts_with("cycle 0: tls: ")
                && m.contains("not signed by a certificate this run trusts"),
            "{client}: {m}"
        );
        messages.insert(client, m);
    }
    // The same message on both clients.
    assert_eq!(messages["sync"], messages["async"]);
}

#[test]
fn the_async_client_follows_a_302_and_a_303_as_the_sync_client_does() {
    let server = Server::start(|req| match req.target() {
        "/start" => Reply::redirect(302, "/next"),
        "/form" => Reply::redirect(303, "/result"),
        _ => Reply::ok("landed"),
    });
    let mut seen = BTreeMap::new();
    for (client, params) in CLIENTS {
        let before = server.requests().len();
        let (outcome, totals, stats, on_async) = run(
            &format!("async-redirect-{client}"),
            &format!(
                "base_url: '{}', threads: 1, cycles: 2, errors: count, redirects: 3, {params}",
                server.base
            ),
            "{a: GET /start, b: {method: POST, path: /form, body: 'name=x'}}",
        );
        // Each variant ran on the runner it names (review 1, 1.5).
        assert_eq!(on_async, client == "async", "{client}");
        assert_eq!(outcome, Outcome::Completed, "{client}");
        assert_eq!((totals.ops(), errors(&totals)), (2, vec![]), "{client}");
        // Each op's final answer is counted once; the hops' 3xx are not answers.
        assert_eq!(
            stats.statuses,
            BTreeMap::from([(200, 2)]),
            "{client}: {stats}"
        );
        assert_eq!(stats.bytes_received, 12, "{client}: {stats}");
        let mut requests: Vec<(String, Vec<u8>)> = server.requests()[before..]
            .iter()
            .map(|r| (r.line().to_string(), r.body.clone()))
            .collect();
        // The async client may send the two ops' requests in either order.
        requests.sort();
        assert_eq!(
            requests,
            [
                ("GET /next HTTP/1.1".to_string(), vec![]),
                ("GET /result HTTP/1.1".to_string(), vec![]),
                ("GET /start HTTP/1.1".to_string(), vec![]),
                ("POST /form HTTP/1.1".to_string(), b"name=x".to_vec()),
            ],
            "{client}"
        );
        seen.insert(client, requests);
    }
    assert_eq!(seen["sync"], seen["async"]);
}

#[test]
fn running_out_of_redirects_is_the_same_error_on_the_async_client() {
    // /r0 -> /r1 -> ...: with 2 redirects allowed, /r2's answer still sends the
    // request on: an error of kind `redirects`, the last answer counted.
    let server = Server::start(|req| {
        let n: u32 = req.target().trim_start_matches("/r").parse().unwrap();
        Reply::redirect(302, &format!("/r{}", n + 1))
    });
    let mut messages = BTreeMap::new();
    for (client, params) in CLIENTS {
        let before = server.requests().len();
        let (outcome, totals, stats, on_async) = run(
            &format!("async-redirect-limit-{client}"),
            &format!(
                "base_url: '{}', threads: 1, cycles: 2, errors: count, redirects: 2, {params}",
                server.base
            ),
            "{a: GET /r0}",
        );
        // Each variant ran on the runner it names (review 1, 1.5).
        assert_eq!(on_async, client == "async", "{client}");
        assert_eq!(outcome, Outcome::Completed, "{client}");
        assert_eq!(
            (totals.ops(), errors(&totals)),
            (2, vec![("redirects".to_string(), 2)]),
            "{client}"
        );
        assert_eq!(stats.statuses, BTreeMap::from([(302, 2)]), "{client}");
        let mut targets: Vec<String> = server.requests()[before..]
            .iter()
            .map(|r| r.target().to_string())
            .collect();
        targets.sort();
        assert_eq!(
            targets,
            ["/r0", "/r0", "/r1", "/r1", "/r2", "/r2"],
            "{client}"
        );
        // With the default policy, the message names the place and the fix.
        let (outcome, ..) = run(
            &format!("async-redirect-limit-{client}-stop"),
            &format!(
                "base_url: '{}', threads: 1, cycles: 1, redirects: 2, {params}",
                server.base
            ),
            "{a: GET /r0}",
        );
        let Outcome::Failed(m) = outcome else {
            panic!("{client}: expected a failure, got {outcome}");
        };
        assert_eq!(
            m,
            format!(
                "cycle 0: redirects: {}/r2 answered 302 after 2 redirects, to `/r3`; \
                 raise param `redirects` (now 2) or look for a redirect loop",
                server.base
            ),
            "{client}"
        );
        messages.insert(client, m);
    }
    assert_eq!(messages["sync"], messages["async"]);
}

#[test]
fn a_redirect_to_another_server_is_followed_by_the_async_client() {
    // The async client opens a connection to the redirect's host on the way.
    let other = Server::start(|_| Reply::ok("over here"));
    let location = format!("{}/there", other.base);
    let server = Server::start(move |_| Reply::redirect(302, &location));
    let (outcome, totals, stats, on_async) = run(
        "async-redirect-absolute",
        &format!(
            "base_url: '{}', threads: 1, cycles: 3, errors: count, redirects: 1, {}",
            server.base, CLIENTS[1].1
        ),
        "{a: GET /here}",
    );
    assert!(on_async);
    assert_eq!(outcome, Outcome::Completed);
    assert_eq!((totals.ops(), errors(&totals)), (3, vec![]));
    assert_eq!((stats.status(200), stats.bytes_received), (3, 27));
    let there = other.requests();
    assert_eq!(there.len(), 3);
    assert!(
        there
            .iter()
            .all(|r| r.line() == "GET /there HTTP/1.1"
                && r.header("host") == Some(other.authority())),
        "{there:?}"
    );
}

/// The TLS tests skip only on an nginx built without TLS, not on any start
/// error that mentions "ssl" (review 1, 1.6): a bad key or certificate must
/// fail them.
#[test]
fn only_a_missing_tls_module_skips_the_tls_tests() {
    use support::nginx::lacks_tls_module;
    assert!(lacks_tls_module(
        "nginx exited (exit status: 1): nginx: [emerg] the \"ssl\" parameter requires \
         ngx_http_ssl_module in /tmp/x/nginx.conf:19"
    ));
    assert!(lacks_tls_module(
        "nginx: [emerg] unknown directive \"ssl_certificate\" in /tmp/x/nginx.conf:20"
    ));
    for real in [
        "nginx: [emerg] cannot load certificate key \"/tmp/x/key.pem\": PEM_read_bio_PrivateKey() \
         failed (SSL: error:1E08010C:DECODER routines::unsupported)",
        "nginx: [emerg] SSL_CTX_use_PrivateKey(\"/tmp/x/key.pem\") failed",
        "nginx: [emerg] bind() to 127.0.0.1:443 failed (98: Address already in use)",
    ] {
        assert!(!lacks_tls_module(real), "{real}");
    }
}
