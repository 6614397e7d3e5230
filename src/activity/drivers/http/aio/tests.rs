//! The async client on a tokio `current_thread` runtime of its own, against
//! scripted loopback servers (`super::super::tests`): what it shares with the
//! sync client (statuses, error kinds, the idle-close retry, timeouts,
//! checks), and what it adds (many requests in flight, connections opened
//! before the first op, cancelling).

use super::super::tests::{Mode, plan, serve, serve_like};
use super::super::{Http, HttpStats, shared};
use super::*;
use crate::activity::drivers::Driver;
use crate::clock::ManualClock;
use crate::engine::{WorkerContext, Workload};
use crate::sync::threads::Ordering;
use std::time::Duration;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Worker 0's async runner of `yaml` (which must say `client: async`), with
/// `in_flight` connections opened up front.
fn runner(
    rt: &tokio::runtime::Runtime,
    alias: &str,
    yaml: &str,
    in_flight: usize,
) -> Box<dyn AsyncOpRunner> {
    let work = Http.workload(plan(yaml)).unwrap();
    let ctx = WorkerContext::new(0, alias, Arc::new(ManualClock::new()));
    let made = work
        .async_runner(&ctx, in_flight)
        .expect("client: async offers one");
    rt.block_on(made).unwrap()
}

fn stats(alias: &str) -> HttpStats {
    Http::stats(alias).unwrap()
}

#[test]
fn the_sync_client_offers_no_async_runner_and_a_bad_choice_says_what_to_write() {
    let work = Http
        .workload(plan(
            "params: {driver: http, client: sync}\nops: {o: 'http://h/'}",
        ))
        .unwrap();
    let ctx = WorkerContext::new(0, "a", Arc::new(ManualClock::new()));
    assert!(work.async_runner(&ctx, 1).is_none());
    let e = crate::activity::drivers::testing::refusal(
        &Http,
        "params: {driver: http, client: fast}\nops: {o: 'http://h/'}",
    );
    assert!(
        e.contains("param `client`: \"fast\" is not a choice"),
        "{e}"
    );
}

#[test]
fn many_requests_are_in_flight_at_once_on_connections_opened_before_the_first_op() {
    // Each answer takes 50 ms; 20 in flight on one thread take about 50 ms
    // together, where one at a time would take a second.
    let (base, conns) = serve_like(Mode::Slow(Duration::from_millis(50)));
    let yaml = format!(
        "params: {{driver: http, client: async, base_url: '{base}'}}\nops: {{a: 'GET /x'}}"
    );
    let rt = rt();
    let r = runner(&rt, "async-flight", &yaml, 20);
    let s = stats("async-flight");
    assert_eq!((s.connections, s.connections_before_start), (20, 20));
    assert!(s.connect_nanos > 0);
    for round in 0..2 {
        let t0 = Instant::now();
        let ops: Vec<_> = (0..20).map(|c| r.start(round * 20 + c)).collect();
        let out = rt.block_on(join_all(ops));
        let took = t0.elapsed();
        assert!(out.iter().all(Result::is_ok), "{out:?}");
        // Wide: a busy machine; one at a time would be 1 s.
        assert!(took < Duration::from_millis(600), "round {round}: {took:?}");
    }
    let s = stats("async-flight");
    assert_eq!((s.requests, s.responses, s.status(200)), (40, 40, 40));
    assert_eq!(
        s.connections, 20,
        "every request on a connection opened up front"
    );
    // Every connection carried requests, so the server has accepted each.
    assert_eq!(conns.load(Ordering::Relaxed), 20);
    rt.block_on(r.finish()).unwrap();
}

#[test]
fn statuses_error_kinds_and_checks_are_the_sync_clients() {
    let (base, seen, _) = serve();
    let yaml = format!(
        "params: {{driver: http, client: async, base_url: '{base}'}}\n\
         ops:\n  ok: 'GET /x'\n  missing: 'GET /404'\n  \
         checked: {{stmt: 'POST /y', body: 'b1', expect_body: 'POST /z'}}"
    );
    let rt = rt();
    let r = runner(&rt, "async-kinds", &yaml, 2);
    assert_eq!(rt.block_on(r.start(0)), Ok(()));
    let e = rt.block_on(r.start(1)).unwrap_err();
    assert_eq!(e.kind(), "http 4xx", "{e}");
    assert!(e.to_string().contains("answered 404"), "{e}");
    let e = rt.block_on(r.start(2)).unwrap_err();
    assert_eq!(e.kind(), "check", "{e}");
    assert!(
        e.to_string().contains("the body does not match `POST /z`"),
        "{e}"
    );
    let s = stats("async-kinds");
    assert_eq!((s.status(200), s.status(404)), (2, 1));
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen[0], "GET /x HTTP/1.1");
    assert_eq!(seen[2], "POST /y HTTP/1.1 | b1");
}

#[test]
fn an_idle_connection_the_server_closed_is_replaced_and_the_request_sent_again() {
    let (base, conns) = serve_like(Mode::IdleClose(Duration::from_millis(30)));
    let yaml = format!("params: {{driver: http, client: async}}\nops: {{a: '{base}/x'}}");
    let rt = rt();
    let r = runner(&rt, "async-idle", &yaml, 1);
    rt.block_on(r.start(0)).unwrap();
    rt.block_on(r.start(1)).unwrap();
    std::thread::sleep(Duration::from_millis(150));
    rt.block_on(r.start(2)).unwrap();
    rt.block_on(r.start(3)).unwrap();
    let s = stats("async-idle");
    assert_eq!((s.requests, s.responses), (4, 4));
    assert_eq!(s.connections, 2, "reused, then replaced once");
    assert_eq!(conns.load(Ordering::Relaxed), 2);
}

#[test]
fn a_connection_closed_after_each_answer_is_replaced_every_time() {
    let (base, conns) = serve_like(Mode::CloseSilently);
    let yaml = format!("params: {{driver: http, client: async}}\nops: {{a: '{base}/x'}}");
    let rt = rt();
    let r = runner(&rt, "async-close", &yaml, 1);
    for c in 0..10 {
        rt.block_on(r.start(c)).unwrap();
    }
    let s = stats("async-close");
    assert_eq!((s.requests, s.responses, s.connections), (10, 10, 10));
    assert_eq!(conns.load(Ordering::Relaxed), 10);
}

#[test]
fn a_slow_answer_times_out_at_the_timeout_and_its_connection_is_not_reused() {
    let (slow, conns) = serve_like(Mode::Slow(Duration::from_millis(400)));
    let yaml =
        format!("params: {{driver: http, client: async, timeout: 150ms}}\nops: {{a: '{slow}/x'}}");
    let rt = rt();
    let r = runner(&rt, "async-timeout", &yaml, 1);
    let t0 = Instant::now();
    let e = rt.block_on(r.start(0)).unwrap_err();
    let took = t0.elapsed();
    assert_eq!(e.kind(), "timeout", "{e}");
    assert!(
        e.to_string()
            .contains("no complete answer within the timeout"),
        "{e}"
    );
    assert!(
        took >= Duration::from_millis(150) && took < Duration::from_millis(700),
        "{took:?}"
    );
    let _ = conns;
    rt.block_on(r.finish()).unwrap();
}

#[test]
fn a_timed_out_exchange_leaves_no_connection_in_the_pool() {
    let (slow, _) = serve_like(Mode::Slow(Duration::from_millis(400)));
    let yaml = format!(
        "params: {{driver: http, client: async, timeout: 100ms, base_url: '{slow}'}}\nops: {{a: 'GET /x'}}"
    );
    let rt = rt();
    let r = rt.block_on(AsyncHttp::start(
        shared(plan(&yaml)).unwrap(),
        "async-timeout-pool",
        0,
        1,
    ));
    assert_eq!(r.idle(), 1);
    assert_eq!(rt.block_on(r.start(0)).unwrap_err().kind(), "timeout");
    assert_eq!(
        r.idle(),
        0,
        "a connection with an answer still coming is dropped"
    );
}

#[test]
fn a_cancelled_op_closes_its_connection_and_the_next_op_opens_another() {
    let (base, conns) = serve_like(Mode::Slow(Duration::from_millis(200)));
    let yaml = format!(
        "params: {{driver: http, client: async, base_url: '{base}'}}\nops: {{a: 'GET /x'}}"
    );
    let rt = rt();
    let shared_runner = rt.block_on(AsyncHttp::start(
        shared(plan(&yaml)).unwrap(),
        "async-cancel",
        0,
        1,
    ));
    assert_eq!(shared_runner.idle(), 1);
    // Dropped after 20 ms, mid-exchange (a stop's deadline).
    let cut = rt.block_on(async {
        tokio::time::timeout(Duration::from_millis(20), shared_runner.start(0)).await
    });
    assert!(cut.is_err());
    assert_eq!(
        shared_runner.idle(),
        0,
        "the half-read connection is not pooled"
    );
    rt.block_on(shared_runner.start(1)).unwrap();
    assert_eq!(shared_runner.idle(), 1);
    assert_eq!(conns.load(Ordering::Relaxed), 2);
}

/// A server that answers one request on one connection with `200 ok`, then,
/// once told, does `then` on it: sends bytes nobody asked for, or closes it.
fn serve_once_then(then: Option<&'static [u8]>) -> (SocketAddr, std::sync::mpsc::Sender<()>) {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (go, wait_go) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut w = stream.try_clone().unwrap();
        let mut r = BufReader::new(stream);
        let mut line = String::new();
        while r.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
            line.clear();
        }
        w.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
            .unwrap();
        let _ = wait_go.recv();
        match then {
            Some(bytes) => {
                w.write_all(bytes).unwrap();
                // Held open until the client is done.
                let _ = wait_go.recv();
            }
            None => drop((w, r)),
        }
    });
    (addr, go)
}

/// One connection to `addr` that has carried one `GET` to the end.
async fn used_once(addr: SocketAddr) -> AsyncConn {
    let authority = addr.to_string();
    let (mut c, _) = AsyncConn::open(&[addr], &authority, Duration::from_secs(5), None)
        .await
        .unwrap();
    let req = format!("GET / HTTP/1.1\r\nhost: {authority}\r\n\r\n");
    let head = round_trip(&mut c, req.as_bytes(), false).await.unwrap();
    let mut bytes = 0;
    drain(&mut c, head.body, &mut bytes, None).await.unwrap();
    assert_eq!((head.status, bytes), (200, 2));
    c
}

#[test]
fn how_a_pooled_connection_is_looked_at() {
    use conn::{Look, how_to_look};
    let fresh = u64::try_from(crate::activity::drivers::http::transport::FRESH.as_nanos()).unwrap();
    let long = Duration::from_millis(5);
    // A request that must not repeat is always peeked at.
    assert_eq!(how_to_look(true, Duration::ZERO, Some(0)), Look::Peek);
    // An idempotent one trusts readiness the reactor has just refreshed...
    assert_eq!(how_to_look(false, long, Some(fresh - 1)), Look::IfReadable);
    // ...or on a connection used under FRESH ago (the sync client's rule)...
    assert_eq!(
        how_to_look(false, Duration::from_micros(99), None),
        Look::IfReadable
    );
    // ...and peeks when neither holds: a reactor polled FRESH or more ago, or
    // none known (no async worker: tokio's readiness may be as old as the
    // connection's idle time).
    assert_eq!(how_to_look(false, long, Some(fresh)), Look::Peek);
    assert_eq!(how_to_look(false, long, None), Look::Peek);
}

#[test]
fn a_quiet_pooled_connection_is_reused_without_a_system_call() {
    let (addr, go) = serve_once_then(Some(b""));
    let rt = rt();
    let mut c = rt.block_on(async {
        let c = used_once(addr).await;
        // The reactor polls the socket while the connection idles.
        tokio::time::sleep(Duration::from_millis(20)).await;
        c
    });
    // The answer's last read was short: readiness cleared, nothing since.
    assert!(rt.block_on(async { c.reusable_after(conn::Look::IfReadable) }));
    assert_eq!(c.looks, 0, "no system call");
    assert!(rt.block_on(async { c.reusable_after(conn::Look::Peek) }));
    assert_eq!(c.looks, 1);
    drop(go);
}

#[test]
fn bytes_sent_unasked_make_a_pooled_connection_unusable_by_readiness_too() {
    // Issue 18's unasked answer, and a close, on an idle pooled connection:
    // the reactor has seen them arrive, so the look that trusts readiness
    // peeks and drops the connection (the request then goes on a new one).
    for then in [
        Some(&b"HTTP/1.1 500 Oops\r\ncontent-length: 0\r\n\r\n"[..]),
        None,
    ] {
        let (addr, go) = serve_once_then(then);
        let rt = rt();
        let mut c = rt.block_on(async {
            let c = used_once(addr).await;
            go.send(()).unwrap();
            tokio::time::sleep(Duration::from_millis(50)).await;
            c
        });
        assert!(
            !rt.block_on(async { c.reusable_after(conn::Look::IfReadable) }),
            "{then:?}"
        );
        assert_eq!(c.looks, 1, "{then:?}: peeked because readable");
        let _ = go.send(());
    }
}

#[test]
fn an_ops_future_fits_the_allocators_thread_cache() {
    // Each op allocates its future and writes it there at its start: at 2224
    // bytes (a connect's TLS handshake inline) it missed glibc's per-thread
    // cache (chunks up to 1032 bytes) and was copied whole; a connect, which
    // few ops make, is boxed on its own (`Inner::open_boxed`).
    let yaml = "params: {driver: http, client: async, base_url: 'https://127.0.0.1:9'}\nops: {a: 'GET /x'}";
    let rt = rt();
    let r = runner(&rt, "future-size", yaml, 0);
    let f = r.start(0);
    let size = std::mem::size_of_val(&*f);
    assert!(size <= 1024, "an http op's future is {size} bytes");
}
