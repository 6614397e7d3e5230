//! Redirects: relative and absolute locations, the method and body each status
//! keeps or drops, the limit and its error, and the credentials and `host`
//! header that stay behind when a redirect leaves the host.

use crate::server::{Reply, Request, Server, errors, run};
use paceline::{Drivers, Engine, Outcome, ParamOverrides};
use std::collections::BTreeMap;

#[test]
fn a_302_to_a_relative_location_is_followed_and_the_final_answer_counted_once() {
    let server = Server::start(|req| match req.target() {
        "/start" => Reply::redirect(302, "/next"),
        _ => Reply::ok("landed"),
    });
    let (totals, stats) = run(
        "wire-redirect-relative",
        &server.base,
        1,
        "redirects: 3",
        "{a: GET /start}",
    );
    assert_eq!((totals.ops(), errors(&totals)), (1, vec![]));
    // The op's answer is counted, once; the hop's 302 is not an answer.
    assert_eq!(stats.statuses, BTreeMap::from([(200, 1)]));
    assert_eq!(stats.bytes_received, 6);
    let seen = server.each(Request::line);
    assert_eq!(seen, ["GET /start HTTP/1.1", "GET /next HTTP/1.1"]);
    let next = &server.requests()[1];
    assert_eq!(next.header("host"), Some(server.authority()));
}

#[test]
fn a_303_after_a_post_is_followed_with_a_get_without_body() {
    let server = Server::start(|req| match req.target() {
        "/form" => Reply::redirect(303, "/result"),
        _ => Reply::ok("done"),
    });
    let (totals, stats) = run(
        "wire-redirect-303",
        &server.base,
        1,
        "redirects: 3",
        "{a: {method: POST, path: /form, body: 'name=x'}}",
    );
    assert_eq!((totals.ops(), errors(&totals)), (1, vec![]));
    assert_eq!(stats.status(200), 1);
    let seen = server.requests();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(
        (seen[0].line(), &seen[0].body[..]),
        ("POST /form HTTP/1.1", &b"name=x"[..])
    );
    assert_eq!(seen[1].line(), "GET /result HTTP/1.1");
    assert!(seen[1].body.is_empty(), "{seen:?}");
}

#[test]
fn a_redirect_to_an_absolute_url_reaches_the_other_server() {
    let other = Server::start(|_| Reply::ok("over here"));
    let location = format!("{}/there", other.base);
    let server = Server::start(move |_| Reply::redirect(302, &location));
    let (totals, stats) = run(
        "wire-redirect-absolute",
        &server.base,
        1,
        "redirects: 3",
        "{a: GET /here}",
    );
    assert_eq!((totals.ops(), errors(&totals)), (1, vec![]));
    assert_eq!((stats.status(200), stats.bytes_received), (1, 9));
    assert_eq!(server.requests().len(), 1);
    let there = other.requests();
    assert_eq!(there.len(), 1);
    assert_eq!(there[0].line(), "GET /there HTTP/1.1");
    assert_eq!(there[0].header("host"), Some(other.authority()));
}

#[test]
fn without_redirects_a_302_is_the_answer_and_a_success() {
    let server = Server::start(|req| match req.target() {
        "/start" => Reply::redirect(302, "/next"),
        _ => Reply::ok("not reached"),
    });
    let (totals, stats) = run("wire-redirect-none", &server.base, 2, "", "{a: GET /start}");
    assert_eq!((totals.ops(), errors(&totals)), (2, vec![]));
    assert_eq!((stats.status(302), stats.status(200)), (2, 0));
    let targets = server.each(Request::target);
    assert_eq!(targets, ["/start", "/start"]);
    assert_eq!(server.connections(), [0, 0]);
}

#[test]
fn running_out_of_redirects_is_an_error_of_its_own_kind() {
    // /r0 → /r1 → … → /r5 → /r6: with 5 redirects allowed, the answer from /r5
    // still sends the request on. That is an error of kind `redirects`, not a
    // success; the last answer is counted as the status seen (issue 18).
    let server = Server::start(|req| {
        let n: u32 = req.target().trim_start_matches("/r").parse().unwrap();
        Reply::redirect(302, &format!("/r{}", n + 1))
    });
    let (totals, stats) = run(
        "wire-redirect-limit",
        &server.base,
        2,
        "redirects: 5",
        "{a: GET /r0}",
    );
    assert_eq!(totals.ops(), 2);
    assert_eq!(errors(&totals), [("redirects".to_string(), 2)]);
    assert_eq!(stats.statuses, BTreeMap::from([(302, 2)]));
    let targets = server.each(Request::target);
    assert_eq!(targets[..6], ["/r0", "/r1", "/r2", "/r3", "/r4", "/r5"]);
    assert_eq!(targets.len(), 12);
}

#[test]
fn running_out_of_redirects_says_where_it_was_sent_and_how_to_fix_it() {
    let server = Server::start(|_| Reply::redirect(301, "/loop"));
    let yaml = format!(
        "params: {{driver: http, alias: wire-redirect-message, base_url: '{}', cycles: 1, \
         redirects: 2, timeout: 2s}}\nops: {{a: GET /loop}}\n",
        server.base
    );
    let drivers = Drivers::builtin();
    let activity = drivers.loader().from_str(&yaml, "loop.yaml").unwrap();
    let run = drivers
        .start(&Engine::new(), &activity, &ParamOverrides::default())
        .unwrap();
    assert_eq!(
        run.wait(),
        Outcome::Failed(format!(
            "cycle 0: redirects: {}/loop answered 301 after 2 redirects, to `/loop`; \
             raise param `redirects` (now 2) or look for a redirect loop",
            server.base
        ))
    );
}

// What the driver's own HTTP/1.1 client does where the ureq-based driver it
// replaced did not (each of these failed or differed before).

#[test]
fn a_307_and_a_308_resend_the_method_and_body() {
    let server = Server::start(|req| match req.target() {
        "/old" => Reply::redirect(307, "/new"),
        "/form" => Reply::redirect(308, "/moved"),
        "/gone" => Reply::redirect(307, "/away"),
        _ => Reply::ok("ok"),
    });
    let (totals, stats) = run(
        "wire-redirect-307",
        &server.base,
        3,
        "redirects: 3",
        "{a: {method: PUT, path: /old, body: 'same body'}, \
          b: {method: POST, path: /form, body: 'form body'}, \
          c: {method: DELETE, path: /gone}}",
    );
    assert_eq!((totals.ops(), errors(&totals)), (3, vec![]));
    assert_eq!(
        (stats.requests, stats.responses, stats.status(200)),
        (3, 3, 3)
    );
    let seen = server.requests();
    let lines: Vec<(&str, &[u8])> = seen.iter().map(|r| (r.line(), &r.body[..])).collect();
    assert_eq!(
        lines,
        [
            ("PUT /old HTTP/1.1", &b"same body"[..]),
            ("PUT /new HTTP/1.1", b"same body"),
            ("POST /form HTTP/1.1", b"form body"),
            ("POST /moved HTTP/1.1", b"form body"),
            ("DELETE /gone HTTP/1.1", b""),
            ("DELETE /away HTTP/1.1", b""),
        ]
    );
    assert_eq!(server.connections(), [0; 6], "one connection throughout");
}

#[test]
fn a_redirect_without_a_location_is_the_answer() {
    let server = Server::start(|_| Reply::raw("HTTP/1.1 302 Found\r\ncontent-length: 0\r\n\r\n"));
    let (totals, stats) = run(
        "wire-redirect-nowhere",
        &server.base,
        2,
        "redirects: 3",
        "{a: GET /x}",
    );
    assert_eq!((totals.ops(), errors(&totals)), (2, vec![]));
    assert_eq!((stats.responses, stats.status(302)), (2, 2));
    assert_eq!(server.connections(), [0, 0]);
}

#[test]
fn a_303_leaves_the_body_and_its_content_type_behind() {
    let server = Server::start(|req| match req.target() {
        "/api/form" => Reply::redirect(303, "result"),
        _ => Reply::ok("done"),
    });
    let (totals, _) = run(
        "wire-redirect-303-json",
        &server.base,
        1,
        "redirects: 1",
        "{a: {method: POST, path: /api/form, body: {id: 1}}}",
    );
    assert_eq!(errors(&totals), vec![]);
    let seen = server.requests();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[0].header("content-type"), Some("application/json"));
    // `result` is relative to `/api/form`.
    assert_eq!(seen[1].line(), "GET /api/result HTTP/1.1");
    assert_eq!(seen[1].header("content-type"), None);
    assert_eq!(seen[1].header("content-length"), None);
    assert!(seen[1].body.is_empty());
}

#[test]
fn credentials_stay_behind_when_a_redirect_leaves_the_host() {
    let other = Server::start(|_| Reply::ok("there"));
    let location = format!("{}/there", other.base);
    let server = Server::start(move |req| match req.target() {
        "/here" => Reply::redirect(302, "/again"),
        _ => Reply::redirect(302, &location),
    });
    let (totals, _) = run(
        "wire-redirect-credentials",
        &server.base,
        1,
        "redirects: 2, headers: {authorization: 'Bearer t', x-run: r1}",
        "{a: GET /here}",
    );
    assert_eq!(errors(&totals), vec![]);
    let here = server.requests();
    assert_eq!(here.len(), 2);
    assert!(
        here.iter()
            .all(|r| r.header("authorization") == Some("Bearer t"))
    );
    let there = other.requests();
    assert_eq!(there.len(), 1);
    assert_eq!(there[0].header("authorization"), None);
    assert_eq!(there[0].header("x-run"), Some("r1"));
    assert_eq!(there[0].header("host"), Some(other.authority()));
}

#[test]
fn an_op_host_header_stays_behind_when_a_redirect_leaves_the_host() {
    let other = Server::start(|_| Reply::ok("there"));
    let location = format!("{}/there", other.base);
    let server = Server::start(move |_| Reply::redirect(302, &location));
    let (totals, _) = run(
        "wire-redirect-host",
        &server.base,
        1,
        "redirects: 1",
        "{a: {path: /here, headers: {host: api.example}}}",
    );
    assert_eq!(errors(&totals), vec![]);
    assert_eq!(server.requests()[0].headers("host"), ["api.example"]);
    assert_eq!(other.requests()[0].headers("host"), [other.authority()]);
}
