//! The request the driver writes: request line, `host` and `user-agent`, bodies
//! and their `content-type` and `content-length`, and op headers over param
//! headers.

use crate::server::{Reply, Server, errors, run};

#[test]
fn the_request_line_host_and_user_agent_are_as_written() {
    let server = Server::start(|_| Reply::ok("ok"));
    let (totals, _) = run(
        "wire-request-line",
        &server.base,
        1,
        "",
        "{a: 'GET /path?q=1'}",
    );
    assert_eq!((totals.ops(), errors(&totals)), (1, vec![]));
    let seen = server.requests();
    assert_eq!(seen.len(), 1);
    let req = &seen[0];
    assert_eq!(req.line(), "GET /path?q=1 HTTP/1.1");
    assert_eq!(req.headers("host"), [server.authority()]);
    let agent = req.header("user-agent").unwrap_or("");
    assert!(agent.starts_with("paceline/"), "{:?}", req.head);
    assert!(req.body.is_empty());
}

#[test]
fn a_json_body_goes_with_its_content_type_and_length() {
    let server = Server::start(|_| Reply::ok("ok"));
    let (totals, _) = run(
        "wire-json",
        &server.base,
        1,
        "",
        "{a: {method: POST, path: /items, body: {id: 7, tags: [a, b], name: 'x y'}}}",
    );
    assert_eq!((totals.ops(), errors(&totals)), (1, vec![]));
    let seen = server.requests();
    let req = &seen[0];
    assert_eq!(req.line(), "POST /items HTTP/1.1");
    assert_eq!(req.headers("content-type"), ["application/json"]);
    assert_eq!(
        req.headers("content-length"),
        [req.body.len().to_string().as_str()]
    );
    let body: serde_json::Value = serde_json::from_slice(&req.body).unwrap();
    assert_eq!(
        body,
        serde_json::json!({"id": 7, "tags": ["a", "b"], "name": "x y"})
    );
}

#[test]
fn an_op_header_replaces_a_param_header_of_the_same_name_in_any_case() {
    let server = Server::start(|_| Reply::ok("ok"));
    let (totals, _) = run(
        "wire-headers",
        &server.base,
        2,
        "headers: {x-token: from-param, x-run: r1}",
        "{a: {path: /a, headers: {X-Token: from-op}}, b: GET /b}",
    );
    assert_eq!((totals.ops(), errors(&totals)), (2, vec![]));
    let seen = server.requests();
    assert_eq!(
        seen[0].headers("x-token"),
        ["from-op"],
        "{:?}",
        seen[0].head
    );
    assert_eq!(seen[0].headers("x-run"), ["r1"]);
    assert_eq!(
        seen[1].headers("x-token"),
        ["from-param"],
        "{:?}",
        seen[1].head
    );
    assert_eq!(seen[1].headers("x-run"), ["r1"]);
}

#[test]
fn a_text_body_arrives_byte_for_byte() {
    let server = Server::start(|_| Reply::ok("ok"));
    let text = "line one\nline two, ünïcode and trailing spaces  ";
    let ops = format!("{{a: {{method: POST, path: /text, body: {text:?}}}}}");
    let (totals, stats) = run("wire-text-body", &server.base, 1, "", &ops);
    assert_eq!((totals.ops(), errors(&totals)), (1, vec![]));
    assert_eq!(stats.status(200), 1);
    let seen = server.requests();
    assert_eq!(
        seen[0].body,
        text.as_bytes(),
        "{:?}",
        String::from_utf8_lossy(&seen[0].raw)
    );
    assert_eq!(
        seen[0].headers("content-length"),
        [text.len().to_string().as_str()]
    );
}

// What the driver's own HTTP/1.1 client does where the ureq-based driver it
// replaced did not (each of these failed or differed before).

#[test]
fn a_post_without_a_body_says_content_length_zero() {
    let server = Server::start(|_| Reply::ok("ok"));
    let (totals, _) = run(
        "wire-empty-post",
        &server.base,
        2,
        "",
        "{a: {method: POST, path: /p}, b: {method: DELETE, path: /d}}",
    );
    assert_eq!(errors(&totals), vec![]);
    let seen = server.requests();
    assert_eq!(seen[0].header("content-length"), Some("0"));
    assert_eq!(seen[0].header("transfer-encoding"), None);
    assert_eq!(seen[1].header("content-length"), None, "DELETE has no body");
}
