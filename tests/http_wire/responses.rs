//! How the driver reads an answer framed each way HTTP/1.1 allows: chunked
//! (extensions, trailers), close-delimited, bodiless (`HEAD`, 204, 304), after a
//! `100 Continue`, a few bytes at a time, large bodies and long or folded headers.

use crate::server::{Reply, Request, Server, errors, run};
use paceline::{Drivers, Engine, Outcome, ParamOverrides};
use std::collections::BTreeMap;

#[test]
fn a_chunked_body_with_extensions_and_trailers_is_read_whole_and_the_connection_reused() {
    // 5 + 7 + 10 (hex `a`) = 22 decoded bytes.
    let answer = "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ntrailer: x-sum\r\n\r\n\
                  5\r\nhello\r\n\
                  7;x=y\r\n, world\r\n\
                  a\r\n0123456789\r\n\
                  0\r\nx-sum: 42\r\n\r\n";
    let server = Server::start(move |_| Reply::raw(answer));
    let (totals, stats) = run("wire-chunked", &server.base, 3, "", "{a: GET /c}");
    assert_eq!((totals.ops(), errors(&totals)), (3, vec![]));
    assert_eq!((stats.status(200), stats.bytes_received), (3, 3 * 22));
    assert_eq!(server.connections(), [0, 0, 0], "one kept-alive connection");
    assert_eq!(stats.connections, 1);
}

#[test]
fn a_close_delimited_body_is_read_to_the_close_and_the_next_request_opens_a_new_connection() {
    let server = Server::start(|_| {
        Reply::raw("HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n\r\nuntil close").then_close()
    });
    let (totals, stats) = run("wire-close-delimited", &server.base, 3, "", "{a: GET /d}");
    assert_eq!((totals.ops(), errors(&totals)), (3, vec![]));
    assert_eq!((stats.status(200), stats.bytes_received), (3, 3 * 11));
    assert_eq!(server.connections(), [0, 1, 2]);
    assert_eq!(stats.connections, 3);
}

#[test]
fn a_head_answer_has_no_body_whatever_its_content_length_says() {
    // HEAD and GET alternate on one connection: the GET's answer is read right
    // only if no body was expected after the HEAD's head.
    let server = Server::start(|req| match req.method() {
        "HEAD" => Reply::raw("HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n"),
        _ => Reply::ok("body"),
    });
    let (totals, stats) = run("wire-head", &server.base, 4, "", "{h: HEAD /h, g: GET /g}");
    assert_eq!((totals.ops(), errors(&totals)), (4, vec![]));
    assert_eq!((stats.status(200), stats.bytes_received), (4, 2 * 4));
    let methods = server.each(Request::method);
    assert_eq!(methods, ["HEAD", "GET", "HEAD", "GET"]);
    assert_eq!(server.connections(), [0, 0, 0, 0]);
    assert_eq!(stats.connections, 1);
}

#[test]
fn no_content_and_not_modified_answers_have_no_body_and_keep_the_connection() {
    let server = Server::start(|req| match req.target() {
        "/204" => Reply::raw("HTTP/1.1 204 No Content\r\n\r\n"),
        "/304" => Reply::raw("HTTP/1.1 304 Not Modified\r\netag: \"v1\"\r\n\r\n"),
        _ => Reply::ok("fine"),
    });
    let (totals, stats) = run(
        "wire-no-body",
        &server.base,
        6,
        "",
        "{a: GET /204, b: GET /304, c: GET /200}",
    );
    assert_eq!((totals.ops(), errors(&totals)), (6, vec![]));
    assert_eq!(
        (stats.status(204), stats.status(304), stats.status(200)),
        (2, 2, 2)
    );
    assert_eq!(stats.bytes_received, 2 * 4);
    assert_eq!(server.connections(), [0; 6]);
    assert_eq!(stats.connections, 1);
}

#[test]
fn a_100_continue_before_the_answer_is_skipped() {
    // Unasked for (the request has no `expect`), as a client must accept.
    let server = Server::start(|_| {
        Reply::raw("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nafter")
    });
    let (totals, stats) = run("wire-continue", &server.base, 2, "", "{a: GET /c}");
    assert_eq!((totals.ops(), errors(&totals)), (2, vec![]));
    assert_eq!(
        stats.statuses,
        BTreeMap::from([(200, 2)]),
        "100 is no answer"
    );
    assert_eq!(stats.bytes_received, 2 * 5);
    assert_eq!(server.connections(), [0, 0]);
}

#[test]
fn an_answer_arriving_a_few_bytes_at_a_time_is_read_whole() {
    let server = Server::start(|req| match req.target() {
        "/chunked" => Reply::raw(
            "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n\
             4\r\nslow\r\n6\r\n bytes\r\n0\r\n\r\n",
        )
        .trickled(),
        _ => Reply::ok("slow bytes").trickled(),
    });
    let (totals, stats) = run(
        "wire-trickle",
        &server.base,
        2,
        "",
        "{a: GET /length, b: GET /chunked}",
    );
    assert_eq!((totals.ops(), errors(&totals)), (2, vec![]));
    assert_eq!((stats.status(200), stats.bytes_received), (2, 2 * 10));
    assert_eq!(server.connections(), [0, 0]);
}

#[test]
fn a_one_mebibyte_body_is_counted_exactly() {
    const SIZE: usize = 1 << 20;
    let mut answer = format!("HTTP/1.1 200 OK\r\ncontent-length: {SIZE}\r\n\r\n").into_bytes();
    answer.extend((0..SIZE).map(|i| (i % 251) as u8));
    let server = Server::start(move |_| Reply::raw(answer.clone()));
    let (totals, stats) = run("wire-mebibyte", &server.base, 2, "", "{a: GET /big}");
    assert_eq!((totals.ops(), errors(&totals)), (2, vec![]));
    assert_eq!(stats.bytes_received, 2 * SIZE as u64);
    assert_eq!(server.connections(), [0, 0]);
}

// What the driver's own HTTP/1.1 client does where the ureq-based driver it
// replaced did not (each of these failed or differed before).

#[test]
fn a_folded_header_line_is_accepted() {
    let server = Server::start(|_| {
        Reply::raw("HTTP/1.1 200 OK\r\nx-a: one\r\n two\r\ncontent-length: 2\r\n\r\nok")
    });
    let (totals, stats) = run("wire-folded", &server.base, 2, "", "{a: GET /x}");
    assert_eq!((totals.ops(), errors(&totals)), (2, vec![]));
    assert_eq!((stats.bytes_received, stats.connections), (4, 1));
}

// The driver against misbehaving servers (issue 18): each of these failed
// before its fix.

#[test]
fn a_64_kib_header_line_and_150_headers_are_read_and_past_the_limit_the_error_names_it() {
    let long = format!(
        "HTTP/1.1 200 OK\r\nx-long: {}\r\ncontent-length: 2\r\n\r\nok",
        "a".repeat(64 * 1024)
    );
    let many = |n: usize| {
        let fields: String = (0..n).map(|i| format!("x-{i}: v\r\n")).collect();
        format!("HTTP/1.1 200 OK\r\n{fields}content-length: 2\r\n\r\nok")
    };
    let (many_150, many_600) = (many(150), many(600));
    let server = Server::start(move |req| match req.target() {
        "/long" => Reply::raw(long.clone()),
        "/many" => Reply::raw(many_150.clone()),
        _ => Reply::raw(many_600.clone()),
    });
    let (totals, stats) = run(
        "wire-header-limits",
        &server.base,
        3,
        "",
        "{a: GET /long, b: GET /many, c: GET /too-many}",
    );
    assert_eq!(errors(&totals), [("protocol".to_string(), 1)]);
    assert_eq!(stats.statuses, BTreeMap::from([(200, 2)]));
    // The message names the limit.
    let yaml = format!(
        "params: {{driver: http, alias: wire-header-limit-message, base_url: '{}', cycles: 1, \
         timeout: 2s}}\nops: {{c: GET /too-many}}\n",
        server.base
    );
    let drivers = Drivers::builtin();
    let activity = drivers.loader().from_str(&yaml, "limits.yaml").unwrap();
    let run = drivers
        .start(&Engine::new(), &activity, &ParamOverrides::default())
        .unwrap();
    assert_eq!(
        run.wait(),
        Outcome::Failed(format!(
            "cycle 0: protocol: {}/too-many: the response has more than 512 header fields, \
             the most this client reads",
            server.base
        ))
    );
}
