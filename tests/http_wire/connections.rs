//! When the driver keeps a connection and when it opens a new one: HTTP/1.0 and
//! `connection: close` answers, `keepalive: false`, a pooled connection the
//! server closes as a request arrives (sent again only when safe), an idle
//! timeout racing each request, and a server that refuses an upload mid-body.

use crate::server::{Reply, Request, Server, errors, run};
use paceline::{Drivers, Engine, Outcome, ParamOverrides};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::Mutex;
use std::time::Duration;

#[test]
fn an_http_1_0_answer_without_keep_alive_is_not_reused() {
    // The server leaves the connection open: the client must not send another
    // request on it all the same (an HTTP/1.0 answer without keep-alive ends it).
    let server = Server::start(|_| Reply::raw("HTTP/1.0 200 OK\r\ncontent-length: 4\r\n\r\nold!"));
    let (totals, stats) = run("wire-http10", &server.base, 3, "", "{a: GET /old}");
    assert_eq!((totals.ops(), errors(&totals)), (3, vec![]));
    assert_eq!((stats.status(200), stats.bytes_received), (3, 12));
    assert_eq!(server.connections(), [0, 1, 2]);
    assert_eq!(stats.connections, 3);
}

#[test]
fn an_answer_with_connection_close_is_not_reused() {
    // As above: the server leaves the connection open after saying `close`.
    let server = Server::start(|_| {
        Reply::raw("HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 3\r\n\r\nbye")
    });
    let (totals, stats) = run("wire-conn-close", &server.base, 3, "", "{a: GET /bye}");
    assert_eq!((totals.ops(), errors(&totals)), (3, vec![]));
    assert_eq!((stats.status(200), stats.bytes_received), (3, 9));
    assert_eq!(server.connections(), [0, 1, 2]);
    assert_eq!(stats.connections, 3);
}

#[test]
fn keepalive_off_says_connection_close_on_every_request() {
    let server = Server::start(|_| Reply::ok("ok"));
    let (totals, stats) = run(
        "wire-keepalive-off",
        &server.base,
        2,
        "keepalive: false",
        "{a: GET /x}",
    );
    assert_eq!((totals.ops(), errors(&totals)), (2, vec![]));
    let seen = server.requests();
    assert_eq!(seen.len(), 2);
    for req in &seen {
        let conn = req.header("connection").unwrap_or("").to_ascii_lowercase();
        assert!(
            conn.split(',').any(|t| t.trim() == "close"),
            "{:?}",
            req.head
        );
    }
    assert_eq!(server.connections(), [0, 1]);
    assert_eq!(stats.connections, 2);
}

// What the driver's own HTTP/1.1 client does where the ureq-based driver it
// replaced did not (each of these failed or differed before).

#[test]
fn a_request_that_says_connection_close_is_not_followed_by_another_on_its_connection() {
    // The server does not echo `close`; the client must not reuse the
    // connection it promised to close (RFC 9112 §9.6).
    let server = Server::start(|_| Reply::ok("ok"));
    let (totals, stats) = run(
        "wire-op-close",
        &server.base,
        3,
        "",
        "{a: {path: /x, headers: {Connection: close}}}",
    );
    assert_eq!((totals.ops(), errors(&totals)), (3, vec![]));
    assert_eq!(server.connections(), [0, 1, 2]);
    assert_eq!(stats.connections, 3);
}

// The driver against misbehaving servers (issue 18): each of these failed
// before its fix.

/// A server that answers the first request on each connection, then closes
/// the connection when the next request arrives, without answering it: a
/// kept-alive connection the server gave up on just as the request came.
fn closing_on_the_second_request() -> Server {
    let served = Mutex::new(std::collections::HashSet::new());
    Server::start(move |req| {
        if served.lock().unwrap().insert(req.conn) {
            Reply::ok("ok")
        } else {
            Reply::raw("").then_close()
        }
    })
}

#[test]
fn a_get_on_a_pooled_connection_closed_as_it_arrives_is_sent_again_on_a_new_one() {
    // 10 ms apart, so each reused connection has been idle long enough that it
    // used to be probed (the probe found it open) and its break was then an
    // `io` error: now an idempotent request is sent once more, however long
    // the connection was idle.
    let server = closing_on_the_second_request();
    let (totals, stats) = run(
        "wire-closed-on-arrival",
        &server.base,
        6,
        "rate: 100",
        "{a: GET /x}",
    );
    assert_eq!((totals.ops(), errors(&totals)), (6, vec![]));
    assert_eq!(stats.statuses, BTreeMap::from([(200, 6)]));
    assert_eq!((stats.requests, stats.connections), (6, 6));
    // Each GET after the first went out twice: on the closed connection, then
    // on a new one.
    assert_eq!(server.connections(), [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5]);
}

#[test]
fn a_post_on_a_pooled_connection_closed_as_it_arrives_is_not_sent_again() {
    let server = closing_on_the_second_request();
    let yaml = format!(
        "params: {{driver: http, alias: wire-closed-post, base_url: '{}', cycles: 3, \
         rate: 100, timeout: 2s}}\nops: {{a: {{method: POST, path: /p, body: x}}}}\n",
        server.base
    );
    let drivers = Drivers::builtin();
    let activity = drivers.loader().from_str(&yaml, "post.yaml").unwrap();
    let run = drivers
        .start(&Engine::new(), &activity, &ParamOverrides::default())
        .unwrap();
    let Outcome::Failed(why) = run.wait() else {
        panic!("the POST must fail")
    };
    let start = format!(
        "cycle 1: io: {}/p: the server closed the kept-alive connection before answering (",
        server.base
    );
    assert!(why.starts_with(&start), "{why}");
    assert!(
        why.ends_with("); it is not idempotent, so it is not sent twice"),
        "{why}"
    );
    assert_eq!(server.each(Request::method), ["POST", "POST"]);
    assert_eq!(server.connections(), [0, 0]);
}

#[test]
fn a_server_whose_10ms_idle_timeout_fires_as_each_request_arrives_costs_no_errors_at_90_per_second()
{
    // Requests 11.1 ms apart against a 10 ms idle timeout that fires as each
    // request on a kept-alive connection arrives: every reused connection
    // breaks before answering, and every GET is sent once more on a new
    // connection, which answers. Before, each of them was an `io` error.
    let server = Server::start_with(Some(Duration::from_millis(10)), |_| Reply::ok("ok"));
    let (totals, stats) = run(
        "wire-idle-10ms",
        &server.base,
        30,
        "rate: 90",
        "{a: GET /x}",
    );
    assert_eq!((totals.ops(), errors(&totals)), (30, vec![]));
    assert_eq!(stats.statuses, BTreeMap::from([(200, 30)]));
    // Each request that met the timeout went out twice, on a new connection
    // the second time (pacing jitter leaves some gaps under 10 ms).
    assert_eq!(stats.requests, 30);
    assert!(stats.connections > 10, "{stats:?}");
    assert_eq!(server.requests().len() as u64, 30 + stats.connections - 1);
}

/// A server that reads each request's head only, answers `413` with
/// `connection: close` and closes the connection, leaving the body unread.
fn refusing_uploads() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            std::thread::spawn(move || {
                let mut w = stream.try_clone().unwrap();
                let mut r = BufReader::new(stream);
                let mut line = String::new();
                while r.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
                    line.clear();
                }
                let _ = w.write_all(
                    b"HTTP/1.1 413 Payload Too Large\r\nconnection: close\r\n\
                      content-length: 9\r\n\r\ntoo large",
                );
            });
        }
    });
    base
}

#[test]
fn a_413_to_the_head_of_a_large_upload_is_read_and_counted() {
    let base = refusing_uploads();
    let body = "x".repeat(4 << 20);
    let ops = format!("{{a: {{method: PUT, path: /upload, body: '{body}'}}}}");
    let (totals, stats) = run("wire-413", &base, 10, "", &ops);
    assert_eq!(totals.ops(), 10);
    assert_eq!(errors(&totals), [("http 4xx".to_string(), 10)]);
    assert_eq!(stats.statuses, BTreeMap::from([(413, 10)]));
    assert_eq!((stats.connections, stats.bytes_received), (10, 90));
}
