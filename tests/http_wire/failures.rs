//! Broken answers and how they count: garbage for a status line, a body cut
//! short or that stops coming, and the summary's first message per error kind.

use crate::server::{Reply, Server, errors, run};

#[test]
fn garbage_instead_of_a_status_line_is_a_protocol_error() {
    let server = Server::start(|req| match req.target() {
        "/garbage" => Reply::raw("FOO\r\n\r\n"),
        _ => Reply::ok("ok"),
    });
    let (totals, stats) = run(
        "wire-garbage",
        &server.base,
        2,
        "",
        "{bad: GET /garbage, good: GET /good}",
    );
    assert_eq!(totals.ops(), 2);
    assert_eq!(errors(&totals), [("protocol".to_string(), 1)]);
    assert_eq!((stats.status(200), stats.statuses.len()), (1, 1));
    // The connection that carried garbage is not used again.
    assert_eq!(server.connections(), [0, 1]);
}

#[test]
fn a_body_cut_short_of_its_content_length_is_an_io_error() {
    let server = Server::start(|_| {
        Reply::raw("HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nforty bytes of the hundred promised here")
            .then_close()
    });
    let (totals, stats) = run("wire-short", &server.base, 1, "", "{a: GET /short}");
    assert_eq!(totals.ops(), 1);
    assert_eq!(errors(&totals), [("io".to_string(), 1)]);
    // A status is counted only for a complete answer (issue 18).
    assert_eq!((stats.responses, stats.statuses.len()), (0, 0));
}

#[test]
fn a_chunked_body_cut_short_counts_no_status() {
    let server = Server::start(|_| {
        Reply::raw("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n8\r\nonly")
            .then_close()
    });
    let (totals, stats) = run("wire-short-chunked", &server.base, 2, "", "{a: GET /c}");
    assert_eq!(errors(&totals), [("io".to_string(), 2)]);
    assert_eq!((stats.responses, stats.statuses.len()), (0, 0));
}

#[test]
fn a_body_that_stops_coming_times_out_and_counts_no_status() {
    // The head and part of the body, then nothing: the connection stays open.
    let server = Server::start(|_| {
        Reply::raw("HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nthe first few bytes")
    });
    let (totals, stats) = run(
        "wire-body-timeout",
        &server.base,
        1,
        "timeout: 300ms",
        "{a: GET /stall}",
    );
    assert_eq!(errors(&totals), [("timeout".to_string(), 1)]);
    assert_eq!((stats.responses, stats.statuses.len()), (0, 0));
    assert_eq!(stats.bytes_received, 19);
}

// The driver against misbehaving servers (issue 18): each of these failed
// before its fix.

#[test]
fn the_summary_shows_each_error_kinds_first_message_and_says_what_it_measured() {
    // Issue 17 part 2 item 7, through the real binary: under `errors=count`
    // the first message of each kind is shown; the times say they include the
    // failed ops; the http line claims no keep-alive (with `keepalive: false`)
    // and prints its statuses.
    let server = Server::start(|req| match req.target() {
        "/fail" => Reply::raw("HTTP/1.1 503 Busy\r\ncontent-length: 0\r\n\r\n"),
        _ => Reply::ok("ok"),
    });
    let dir = std::env::temp_dir().join(format!("paceline-wire-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("summary.yaml");
    std::fs::write(
        &file,
        format!(
            "params: {{driver: http, alias: web, base_url: '{}', cycles: 4, errors: count, \
             keepalive: false}}\nops: {{ok: GET /ok, fail: GET /fail}}\n",
            server.base
        ),
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_paceline"))
        .args(["run", file.to_str().unwrap()])
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{all}");
    let first = format!("    first http 5xx: {}/fail answered 503\n", server.base);
    assert!(all.contains(&first), "{all}");
    assert!(
        all.contains("  the times above include the 2 failed ops\n"),
        "{all}"
    );
    let http = all
        .lines()
        .find(|l| l.starts_with("web (http): "))
        .unwrap_or_else(|| panic!("no http line in {all}"));
    // Then the connect time, which varies; `keepalive: false` opens nothing
    // up front.
    assert!(
        http.starts_with(
            "web (http): 4 requests over 4 connections (1.0 per connection), 4 bytes received; \
             statuses 200: 2, 503: 2; connect "
        ) && http.ends_with("ms mean, 0 of 4 opened before the first op"),
        "{http}"
    );
}
