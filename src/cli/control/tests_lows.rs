//! Regressions of the session-17 audit's low findings on the endpoint (L1, L8).

use super::super::routes::percent_decode;
use super::*;

/// Regression (audit p17, L8): `HEAD /metrics` answered 405; probes and health
/// checks use HEAD. It is GET's head, with GET's `Content-Length`, and no body.
#[test]
fn head_is_answered_as_get_without_a_body() {
    let fake = Arc::new(Fake::default());
    let server = start(&fake);
    let addr = server.local_addr();
    for path in ["/metrics", "/activities", "/activities/a"] {
        let (status, _, get_body) = send(addr, "GET", path, "");
        assert_eq!(status, 200, "GET {path}: {get_body}");
        let (status, head, body) = send(addr, "HEAD", path, "");
        assert_eq!(status, 200, "HEAD {path}: {head}");
        assert_eq!(body, "", "HEAD {path} has no body");
        assert!(
            head.contains(&format!("Content-Length: {}", get_body.len())),
            "HEAD {path}: {head}"
        );
    }
    // A 405 names HEAD beside GET.
    let (status, head, _) = send(addr, "POST", "/metrics", "");
    assert_eq!(status, 405);
    assert!(head.contains("Allow: GET, HEAD"), "{head}");
    // HEAD on a change route changes nothing.
    assert_eq!(send(addr, "HEAD", "/activities/a/stop", "").0, 405);
    assert!(fake.calls().is_empty(), "{:?}", fake.calls());
    server.shutdown();
}

/// Regression (audit p17, L8): `/activities/di%61g` was "no activity named
/// `di%61g`": an alias with a space or a `/` could not be addressed.
#[test]
fn path_segments_are_percent_decoded() {
    let fake = Arc::new(Fake::default());
    let server = start(&fake);
    let addr = server.local_addr();
    let (status, _, body) = send(addr, "GET", "/activities/%61", "");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"alias\": \"a\""), "{body}");
    let (status, _, body) = send(addr, "PUT", "/activities/%61/threads", "3");
    assert_eq!(status, 200, "{body}");
    assert_eq!(fake.calls(), ["threads 3"]);
    // `%2F` is part of the segment, not a separator: no such activity.
    let (status, _, body) = send(addr, "GET", "/activities/a%2Fb", "");
    assert_eq!(status, 404, "{body}");
    assert!(body.contains("`a/b`"), "{body}");
    let (status, _, body) = send(addr, "GET", "/activities/a%zz", "");
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("bad percent-encoding"), "{body}");
    server.shutdown();

    assert_eq!(percent_decode("di%61g").as_deref(), Some("diag"));
    assert_eq!(percent_decode("my%20run").as_deref(), Some("my run"));
    assert_eq!(percent_decode("%C3%A9").as_deref(), Some("é"));
    assert_eq!(percent_decode("a%"), None);
    assert_eq!(percent_decode("a%4"), None);
    assert_eq!(percent_decode("%FF"), None);
}

/// Regression (audit p17, L1): `PUT -d -0 .../rate` set the rate to `-0`, shown
/// as such; `1e-400` read as 0 and paused the activity.
#[test]
fn a_rate_body_of_minus_zero_is_zero_and_an_underflow_is_refused() {
    let fake = Arc::new(Fake::default());
    let server = start(&fake);
    let addr = server.local_addr();
    let (status, _, body) = send(addr, "PUT", "/activities/a/rate", "-0");
    assert_eq!(status, 200, "{body}");
    let calls = fake.calls();
    assert!(calls[0].starts_with("rate 0,"), "{calls:?}");
    let (status, _, body) = send(addr, "PUT", "/activities/a/rate", "1e-400");
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("too small to represent"), "{body}");
    assert_eq!(fake.calls().len(), 1, "{:?}", fake.calls());
    server.shutdown();
}

/// Audit p17, L10 over the endpoint: `PUT 100,thread` on an activity of a
/// shared schedule would be read as the schedule's total, in activity scope.
#[test]
fn thread_scope_is_refused_for_an_activity_on_a_shared_schedule() {
    let fake = Arc::new(Fake::default());
    let server = start(&fake);
    let addr = server.local_addr();
    // Alone, thread scope is taken.
    assert_eq!(send(addr, "PUT", "/activities/a/rate", "100,thread").0, 200);
    if let Ok(mut c) = fake.coordinated.lock() {
        *c = Some(serde_json::json!({"processes": 2}));
    }
    for body in ["100,thread", "100,1.0,thread over 5s"] {
        let (status, _, text) = send(addr, "PUT", "/activities/a/rate", body);
        assert_eq!(status, 400, "{body}: {text}");
        assert!(text.contains("runs on a shared schedule"), "{text}");
    }
    assert_eq!(send(addr, "PUT", "/activities/a/rate", "200").0, 200);
    assert_eq!(fake.calls().len(), 2, "{:?}", fake.calls());
    server.shutdown();
}
