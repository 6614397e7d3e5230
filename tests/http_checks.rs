//! The `http` driver's response checks (`expect_status`, `expect_body`) and
//! its `uri` field against a real nginx on a loopback port.
//!
//! Without nginx installed, each test prints `skipping: nginx not installed
//! (...)` and passes. `.ci/run` installs it when missing.

mod support;

use paceline::{Http, Outcome};
use support::drive::start_text;
use support::nginx::{Nginx, server as nginx};

/// Runs `cycles` of `op` against nginx with `errors: count`: the outcome and
/// the errors by kind.
fn counted(nginx: &Nginx, alias: &str, cycles: u64, op: &str) -> (Outcome, Vec<(String, u64)>) {
    let yaml = format!(
        "params: {{driver: http, alias: {alias}, base_url: '{}', cycles: {cycles}, errors: count}}\n\
         ops:\n  o: {op}\n",
        nginx.base_url()
    );
    let run = start_text(&format!("{alias}.yaml"), &yaml);
    let outcome = run.wait();
    let errors = run
        .snapshot()
        .errors()
        .map(|(k, n)| (k.to_string(), n))
        .collect();
    (outcome, errors)
}

/// Runs one cycle of `op` with the default error policy (stop at the first
/// error): the failure's message.
fn first_failure(nginx: &Nginx, alias: &str, op: &str) -> String {
    let yaml = format!(
        "params: {{driver: http, alias: {alias}, base_url: '{}', cycles: 1}}\nops:\n  o: {op}\n",
        nginx.base_url()
    );
    match start_text(&format!("{alias}.yaml"), &yaml).wait() {
        Outcome::Failed(m) => m,
        other => panic!("expected a failure, got {other}"),
    }
}

#[test]
fn expect_status_takes_a_code_a_class_or_a_list_and_fails_as_check() {
    let Some(nginx) = nginx() else { return };
    // 404 is outside `2xx`: a check error each time, counted under `check`.
    assert_eq!(
        counted(
            &nginx,
            "st-class",
            10,
            "{path: /missing, expect_status: 2xx}"
        ),
        (Outcome::Completed, vec![("check".to_string(), 10)])
    );
    // A list that holds it: no error, although `success` (2xx,3xx) would fail it.
    assert_eq!(
        counted(
            &nginx,
            "st-list",
            10,
            "{path: /missing, expect_status: [200, 404]}"
        ),
        (Outcome::Completed, vec![])
    );
    assert_eq!(
        counted(&nginx, "st-code", 10, "{path: /ok, expect_status: 200}"),
        (Outcome::Completed, vec![])
    );
    let m = first_failure(&nginx, "st-stop", "{path: /fail, expect_status: 200}");
    assert_eq!(
        m,
        format!(
            "cycle 0: check: {}/fail: expected status 200, got 503",
            nginx.base_url()
        )
    );
    // Only complete answers were counted, all of them.
    assert_eq!(Http::stats("st-class").unwrap().status(404), 10);
}

#[test]
fn expect_body_regex_reads_the_whole_body() {
    let Some(nginx) = nginx() else { return };
    assert_eq!(
        counted(
            &nginx,
            "re-ok",
            20,
            "{path: '/echo/{n}', expect_body: '^/echo/[0-9]+\\n$'}\nbindings:\n  n: Identity()"
        ),
        (Outcome::Completed, vec![])
    );
    assert_eq!(
        counted(&nginx, "re-count", 5, "{path: /ok, expect_body: '^fine'}"),
        (Outcome::Completed, vec![("check".to_string(), 5)])
    );
    let m = first_failure(
        &nginx,
        "re-stop",
        "{path: /ok, expect_body: {regex: '^fine'}}",
    );
    assert_eq!(
        m,
        format!(
            "cycle 0: check: {}/ok: the body does not match `^fine`: `ok\\n`",
            nginx.base_url()
        )
    );
}

#[test]
fn expect_body_json_pointer_compares_the_value() {
    let Some(nginx) = nginx() else { return };
    assert_eq!(
        counted(
            &nginx,
            "jp-ok",
            10,
            "{path: /json, expect_status: 200, expect_body: {pointer: /status, value: up}}"
        ),
        (Outcome::Completed, vec![])
    );
    assert_eq!(
        counted(
            &nginx,
            "jp-num",
            3,
            "{path: /json, expect_body: {pointer: /items/1, value: 2}}"
        ),
        (Outcome::Completed, vec![])
    );
    let m = first_failure(
        &nginx,
        "jp-stop",
        "{path: /json, expect_body: {pointer: /items/0, value: 3}}",
    );
    assert_eq!(
        m,
        format!(
            "cycle 0: check: {}/json: the body holds 1 at `/items/0`, expected 3",
            nginx.base_url()
        )
    );
    let m = first_failure(
        &nginx,
        "jp-html",
        "{path: /ok, expect_body: {pointer: /status, value: up}}",
    );
    assert!(m.contains("the body is not JSON"), "{m}");
}

#[test]
fn uri_is_an_alias_of_url_as_in_nb5_workloads() {
    let Some(nginx) = nginx() else { return };
    let op = format!("{{method: GET, uri: '{}/ok'}}", nginx.base_url());
    assert_eq!(counted(&nginx, "uri", 5, &op), (Outcome::Completed, vec![]));
    assert_eq!(Http::stats("uri").unwrap().status(200), 5);
}

#[test]
fn the_example_activity_runs_with_its_checks_passing() {
    let Some(nginx) = nginx() else { return };
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/activities/http-checks.yaml");
    let yaml = std::fs::read_to_string(path)
        .unwrap()
        .replace("http://127.0.0.1:8080", &nginx.base_url())
        .replace("cycles: 10K", "cycles: 200")
        .replace("rate: 500", "rate: 5000");
    let run = start_text("http-checks.yaml", &yaml);
    assert_eq!(run.wait(), Outcome::Completed);
    let totals = run.snapshot();
    assert_eq!(
        (totals.ops(), totals.errors().collect::<Vec<_>>()),
        (200, vec![])
    );
    let http = Http::stats("http-checks").unwrap();
    assert_eq!(http.status(200), 200, "{http}");
}

#[test]
fn the_error_policy_applies_to_failed_checks() {
    let Some(nginx) = nginx() else { return };
    // A failed check is not retryable (the same request gets the same answer),
    // so it is retried only when named: `check:retry:2` sends each failing op
    // twice more, then counts it and goes on.
    let yaml = format!(
        "params: {{driver: http, alias: retried, base_url: '{}', cycles: 3, errors: 'check:retry:2'}}\n\
         ops:\n  o: {{path: /missing, expect_status: 200}}\n",
        nginx.base_url()
    );
    let run = start_text("retried.yaml", &yaml);
    assert_eq!(run.wait(), Outcome::Completed);
    let totals = run.snapshot();
    assert_eq!(
        totals.errors().collect::<Vec<_>>(),
        vec![("check", 3)],
        "retries {}",
        totals.retries()
    );
    assert_eq!(totals.retries(), 6);
    assert_eq!(Http::stats("retried").unwrap().status(404), 9);
}
