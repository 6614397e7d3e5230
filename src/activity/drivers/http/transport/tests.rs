use super::connect::{connect_failure, shown};
use super::shared::BUFFER;
#[cfg(target_os = "linux")]
use super::shared::nothing_waiting;
use super::*;
use std::net::SocketAddr;
use std::net::TcpListener;

const MS: Duration = Duration::from_millis(1);

#[test]
fn the_socket_timeout_changes_only_when_it_must() {
    // A new socket, a 10 s deadline: seven eighths of it.
    assert_eq!(arm(None, 10_000 * MS), Some(8_750 * MS));
    // The next requests, deadlines a little later or earlier: kept.
    assert_eq!(arm(Some(8_750 * MS), 9_999 * MS), None);
    assert_eq!(arm(Some(8_750 * MS), 10_000 * MS), None);
    // A request past an eighth of its budget: lowered, never above the time left.
    assert_eq!(arm(Some(8_750 * MS), 8_000 * MS), Some(7_000 * MS));
    // Far shorter than what is left (after a slow request): raised again.
    assert_eq!(arm(Some(7 * MS), 10_000 * MS), Some(8_750 * MS));
    // Tiny budgets stay within the budget.
    let tiny = Duration::from_nanos(5);
    assert_eq!(arm(None, tiny), Some(tiny));
    for left in [1, 7, 8, 999, 1_000, 123_456_789] {
        let left = Duration::from_nanos(left);
        let set = arm(None, left).unwrap();
        assert!(set <= left && !set.is_zero(), "{left:?} -> {set:?}");
    }
}

fn pair() -> (Conn, TcpStream) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let deadline = Deadline::new(Instant::now(), Duration::from_secs(5));
    let c = Conn::connect(&[addr], "test", Duration::from_secs(5), &deadline).unwrap();
    let (server, _) = listener.accept().unwrap();
    (c, server)
}

fn deadline(d: Duration) -> Deadline {
    Deadline::new(Instant::now(), d)
}

#[test]
fn a_pooled_connection_the_server_closed_is_not_reused() {
    let (mut c, server) = pair();
    assert!(c.reusable(true, Instant::now()));
    drop(server);
    std::thread::sleep(10 * MS);
    assert!(!c.reusable(false, Instant::now()));
}

#[test]
fn a_fresh_connection_skips_the_check_unless_the_request_must_not_repeat() {
    let (mut c, server) = pair();
    drop(server);
    std::thread::sleep(10 * MS);
    let now = Instant::now();
    // The last request began just now: taken as it is (a close met on the
    // way is Stale, and the request goes again).
    c.last_request = now;
    assert!(c.reusable(false, now + FRESH / 2));
    // A request that must not repeat is always checked...
    assert!(!c.reusable(true, now + FRESH / 2));
    // ...and so is any once FRESH has passed.
    assert!(!c.reusable(false, now + FRESH));
}

#[test]
fn bytes_nobody_asked_for_make_a_pooled_connection_unusable() {
    // However recently the connection was used: an answer that arrives
    // while no request is out must not be read as the next one's.
    let (mut c, mut server) = pair();
    server
        .write_all(b"HTTP/1.1 500 X\r\ncontent-length: 0\r\n\r\n")
        .unwrap();
    std::thread::sleep(10 * MS);
    assert!(!c.reusable(false, c.last_request + FRESH));
}

#[test]
fn a_connection_with_unread_bytes_is_not_reused() {
    let (mut c, mut server) = pair();
    server.write_all(b"extra").unwrap();
    assert_eq!(c.fill(&deadline(Duration::from_secs(1))).unwrap(), 5);
    assert!(!c.reusable(true, Instant::now()));
    c.consume(5);
    assert!(c.reusable(true, Instant::now()));
}

#[test]
fn a_pooled_connection_closed_before_answering_is_stale() {
    let (mut c, server) = pair();
    assert!(c.reusable(true, Instant::now()));
    drop(server);
    let e = c.fill(&deadline(Duration::from_secs(1))).unwrap_err();
    assert!(matches!(e, Failure::Stale(_)), "{e}");
    assert_eq!(e.kind(), "io");
    // A new connection's end of stream is a plain 0.
    let (mut c, server) = pair();
    drop(server);
    assert_eq!(c.fill(&deadline(Duration::from_secs(1))).unwrap(), 0);
}

#[test]
fn a_silent_server_times_out_at_the_deadline_not_before_nor_much_after() {
    let (mut c, _server) = pair();
    // The socket holds a long timeout from an earlier request...
    c.read = Some(Duration::from_secs(5));
    c.stream.set_read_timeout(c.read).unwrap();
    // ...and this request has 120 ms left: the read must not wait 5 s.
    let t0 = Instant::now();
    let e = c.fill(&deadline(120 * MS)).unwrap_err();
    let took = t0.elapsed();
    assert!(matches!(e, Failure::Timeout), "{e}");
    assert!(took >= 120 * MS && took < 400 * MS, "{took:?}");
}

#[test]
fn an_early_socket_timeout_waits_on_until_the_deadline() {
    let (mut c, mut server) = pair();
    // The socket holds 200 ms (kept: at least half of the 390 ms left), the
    // answer comes at 300 ms: the socket's timeout expires first, and the
    // read waits on for the rest of the deadline instead of failing.
    c.read = Some(200 * MS);
    c.stream.set_read_timeout(c.read).unwrap();
    let writer = std::thread::spawn(move || {
        std::thread::sleep(300 * MS);
        server.write_all(b"late").unwrap();
        server
    });
    assert_eq!(c.fill(&deadline(390 * MS)).unwrap(), 4);
    assert_eq!(c.data(), b"late");
    drop(writer.join().unwrap());
}

#[test]
fn reads_and_writes_set_the_socket_timeouts_once_over_many_requests() {
    let (mut c, mut server) = pair();
    let mut first = None;
    for i in 0..50u8 {
        c.send(&[i], &deadline(Duration::from_secs(10))).unwrap();
        let mut b = [0];
        server.read_exact(&mut b).unwrap();
        server.write_all(&b).unwrap();
        assert_eq!(c.fill(&deadline(Duration::from_secs(10))).unwrap(), 1);
        assert_eq!(c.data(), [i]);
        c.consume(1);
        let now = (
            c.read,
            c.write,
            c.stream.read_timeout().unwrap(),
            c.stream.write_timeout().unwrap(),
        );
        assert_eq!(*first.get_or_insert(now), now, "request {i}");
    }
    let set = c.read.unwrap();
    assert!(set > 8_740 * MS && set <= 8_750 * MS, "{set:?}");
}

#[test]
fn a_head_larger_than_the_buffer_grows_it_and_unused_bytes_move_to_the_front() {
    let (mut c, mut server) = pair();
    let d = deadline(Duration::from_secs(5));
    let big = vec![b'a'; BUFFER + 10];
    server.write_all(&big).unwrap();
    let mut got = 0;
    while got < big.len() {
        got += c.fill(&d).unwrap();
    }
    assert_eq!(c.data().len(), big.len());
    assert!(c.input.buf.len() >= 2 * BUFFER);
    // Used bytes at the front make room without growing.
    c.consume(big.len() - 3);
    let len = c.input.buf.len();
    c.input.end = len;
    c.input.start = len - 3;
    server.write_all(b"xyz").unwrap();
    c.fill(&d).unwrap();
    assert_eq!(c.input.buf.len(), len);
    assert_eq!(&c.data()[3..], b"xyz");
}

#[test]
fn durations_in_messages_read_as_written() {
    let ns = Duration::from_nanos;
    assert_eq!(shown(ns(499_999_950)), "500ms");
    assert_eq!(shown(Duration::from_secs(5)), "5s");
    assert_eq!(shown(1_500 * MS), "1.5s");
    assert_eq!(shown(ns(2_250_000_400)), "2.25s");
    assert_eq!(shown(ns(250_400)), "250µs");
    assert_eq!(shown(ns(999_999)), "999µs");
}

#[test]
fn connect_failures_name_the_host_once_and_the_budget_as_set() {
    let budget = Duration::from_nanos(499_999_950);
    let m = |addrs, last: Option<&str>, spent| {
        connect_failure("h:80", addrs, last.map(str::to_string), spent, budget)
    };
    assert_eq!(
        m(1, Some("127.0.0.1:80 did not accept within 500ms"), true),
        "`h:80` did not accept a connection within 500ms"
    );
    assert_eq!(
        m(2, Some("[::1]:80 did not accept within 250ms"), true),
        "`h:80` did not accept a connection within 500ms ([::1]:80 did not accept within 250ms)"
    );
    assert_eq!(
        m(1, Some("connection refused"), false),
        "cannot connect to `h:80`: connection refused"
    );
    assert_eq!(m(0, None, false), "`h:80` resolves to no address");
}

#[test]
fn a_refused_first_address_leaves_the_budget_to_the_next() {
    let refused = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addrs = [refused, listener.local_addr().unwrap()];
    let d = deadline(Duration::from_secs(5));
    assert!(Conn::connect(&addrs, "two", Duration::from_secs(5), &d).is_ok());
    // A deadline far in the future does not overflow the clock.
    let _ = Deadline::new(Instant::now(), Duration::MAX).left().unwrap();
}

#[test]
fn a_refused_address_is_a_connect_failure_naming_it() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let e = Conn::connect(
        &[addr],
        "here",
        Duration::from_secs(1),
        &deadline(Duration::from_secs(1)),
    )
    .unwrap_err();
    assert_eq!(e.kind(), "connect");
    assert!(e.to_string().contains("cannot connect to `here`"), "{e}");
    let e = Conn::connect(
        &[],
        "none",
        Duration::from_secs(1),
        &deadline(Duration::from_secs(1)),
    )
    .unwrap_err();
    assert!(e.to_string().contains("resolves to no address"), "{e}");
}

/// Regression: the message for a server that closes the connection in the middle
/// of the handshake had a run of spaces in it (a lost line continuation).
#[test]
fn a_server_that_closes_during_the_handshake_is_named_in_one_clean_sentence() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        // Read the whole ClientHello (bytes left unread would make the close a
        // reset), then close without answering.
        let _ = s.set_read_timeout(Some(Duration::from_millis(300)));
        let mut hello = [0u8; 4096];
        while matches!(s.read(&mut hello), Ok(n) if n > 0) {}
    });
    let deadline = deadline(Duration::from_secs(5));
    let mut c = Conn::connect(&[addr], "test:443", Duration::from_secs(5), &deadline).unwrap();
    let config = std::sync::Arc::new(
        rustls::ClientConfig::builder()
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth(),
    );
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let err = c.secure(&config, name, &deadline).unwrap_err();
    server.join().unwrap();
    let text = err.to_string();
    assert_eq!(
        text,
        "`test:443` closed the connection during the TLS handshake; check that it serves \
         TLS on this port"
    );
}

#[path = "../../../../../tests/support/tls.rs"]
mod certs;

/// A TLS server on its own thread for one connection: it answers `rounds`
/// requests with `ANSWER`. Before each request, a moment after the handshake or
/// the last answer, it sends a key update (and its session tickets went out
/// after the handshake): records the client finds waiting on its pooled
/// connection that are no answer.
/// A TLS server that, for each of `rounds`, waits for the test's go, sends a key
/// update unasked, then answers one request with [`ANSWER`].
fn tls_server(
    rounds: usize,
) -> (
    SocketAddr,
    std::sync::Arc<rustls::ClientConfig>,
    std::sync::mpsc::Sender<()>,
) {
    let (go, go_rx) = std::sync::mpsc::channel::<()>();
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let ca = certs::TestCa::new();
    let leaf = ca.leaf(&["localhost"]);
    let cert = CertificateDer::from_pem_slice(leaf.cert_pem.as_bytes()).unwrap();
    let key = PrivateKeyDer::from_pem_slice(leaf.key_pem.as_bytes()).unwrap();
    let server = std::sync::Arc::new(
        rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(vec![cert], key)
            .unwrap(),
    );
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca.pem().as_bytes()).unwrap())
        .unwrap();
    let client = std::sync::Arc::new(
        rustls::ClientConfig::builder()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    );
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut tls = rustls::ServerConnection::new(server).unwrap();
        let flush = |tls: &mut rustls::ServerConnection, s: &mut TcpStream| {
            while tls.wants_write() {
                tls.write_tls(s).unwrap();
            }
        };
        while tls.is_handshaking() {
            tls.complete_io(&mut s).unwrap();
        }
        flush(&mut tls, &mut s);
        for _ in 0..rounds {
            // On the test's go, not after a delay: a busy machine could read
            // the previous answer late, together with this record.
            if go_rx.recv().is_err() {
                return;
            }
            tls.refresh_traffic_keys().unwrap();
            flush(&mut tls, &mut s);
            let mut got = Vec::new();
            while !got.ends_with(b"\r\n\r\n") {
                let mut buf = [0u8; 512];
                match tls.reader().read(&mut buf) {
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        if tls.read_tls(&mut s).unwrap() == 0 {
                            return;
                        }
                        tls.process_new_packets().unwrap();
                    }
                    Err(e) => panic!("{e}"),
                }
            }
            tls.writer().write_all(ANSWER).unwrap();
            flush(&mut tls, &mut s);
        }
        // Hold the connection until the client is done with it.
        let mut rest = [0u8; 64];
        let _ = s.read(&mut rest);
    });
    (addr, client, go)
}

const ANSWER: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";

/// Regression (issue 21, "the reuse check eats a byte"): the check before a
/// pooled connection is reused read one byte off the socket. On a TLS
/// connection that byte was the first of a record the server sent unasked
/// but harmless (its session tickets after the handshake, a key update), so
/// the records read next were corrupt and a good connection was dropped, every
/// time it had idled. The check now peeks; the records are read whole.
#[test]
fn the_reuse_check_takes_no_byte_from_a_tls_connection() {
    let (addr, config, go) = tls_server(2);
    let d = deadline(Duration::from_secs(10));
    let mut c = Conn::connect(&[addr], "localhost", Duration::from_secs(5), &d).unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    c.secure(&config, name, &d).unwrap();
    for round in 0..2 {
        // The records nobody asked for arrive (a key update; in round 0 the
        // session tickets too).
        go.send(()).unwrap();
        let t0 = Instant::now();
        while nothing_waiting(&c.stream) {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "round {round}: nothing came"
            );
            std::thread::sleep(MS);
        }
        // Each look reads them as housekeeping, whole, and keeps the connection.
        while !nothing_waiting(&c.stream) {
            assert!(c.reusable(true, Instant::now()), "round {round}");
            assert!(t0.elapsed() < Duration::from_secs(10), "round {round}");
            std::thread::sleep(MS);
        }
        c.send(b"GET / HTTP/1.1\r\nhost: localhost\r\n\r\n", &d)
            .unwrap();
        while c.data().len() < ANSWER.len() {
            assert!(c.fill(&d).unwrap() > 0, "round {round}: closed");
        }
        assert_eq!(c.data(), ANSWER, "round {round}");
        c.consume(ANSWER.len());
    }
}

/// The look before reuse leaves what it finds on the socket (a plain
/// connection with bytes waiting is not reused, and they are still there).
#[test]
fn the_reuse_check_only_peeks() {
    let (mut c, mut server) = pair();
    server.write_all(b"xy").unwrap();
    std::thread::sleep(10 * MS);
    assert!(!nothing_waiting(&c.stream));
    assert!(!nothing_waiting(&c.stream));
    assert!(!c.reusable(true, Instant::now()));
    assert_eq!(c.fill(&deadline(Duration::from_secs(1))).unwrap(), 2);
    assert_eq!(c.data(), b"xy");
}
