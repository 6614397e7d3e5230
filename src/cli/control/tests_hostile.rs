//! Clients that misbehave on the wire: raw bytes, conflicting lengths, a slow
//! or stalled client, oversized heads, chunked bodies and a connection flood.
//! Each is refused or timed out without stalling control or shutdown, and
//! changes nothing.

use super::*;

/// Sends raw bytes and reads the answer's status (0 if none came).
fn raw(addr: SocketAddr, bytes: &[u8]) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap_or_else(|e| panic!("connect: {e}"));
    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
    let _ = s.write_all(bytes);
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let status = raw
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, raw)
}

/// Issue 25, item 12: two different Content-Length values are a 400 (RFC 9112),
/// not the first one applied; repeating the same value is one length.
#[test]
fn item12_two_different_content_lengths_are_a_400_and_change_nothing() {
    let fake = Arc::new(Fake::default());
    let server = start(&fake);
    let addr = server.local_addr();
    for head in [
        "Content-Length: 3\r\nContent-Length: 4",
        "Content-Length: 3, 4",
    ] {
        let req = format!("PUT /activities/a/threads HTTP/1.1\r\nHost: x\r\n{head}\r\n\r\n8000");
        let (status, text) = raw(addr, req.as_bytes());
        assert_eq!(status, 400, "{head}: {text}");
        assert!(
            text.contains("two different Content-Length values"),
            "{text}"
        );
    }
    assert!(fake.calls().is_empty(), "{:?}", fake.calls());
    let same = "PUT /activities/a/threads HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 1\r\nConnection: close\r\n\r\n8";
    let (status, text) = raw(addr, same.as_bytes());
    assert_eq!(status, 200, "{text}");
    server.shutdown();
}

/// Issue 18.2: a client that never sends its body, or sends it a byte at a
/// time, delays no other request, and shutdown does not wait for it.
#[test]
fn a_slow_client_stalls_neither_control_nor_shutdown() {
    let fake = Arc::new(Fake::default());
    let server = start(&fake);
    let addr = server.local_addr();
    // Promises a 2000-byte body (over 1 KiB) and sends 3 bytes.
    let mut silent = TcpStream::connect(addr).unwrap();
    silent
        .write_all(b"PUT /activities/a/rate HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\n500")
        .unwrap();
    // Sends a header one byte at a time, never finishing.
    let mut dribble = TcpStream::connect(addr).unwrap();
    dribble
        .write_all(b"GET /activities HTTP/1.1\r\nX-Slow: ")
        .unwrap();
    std::thread::sleep(Duration::from_millis(50));
    for _ in 0..3 {
        let t0 = Instant::now();
        let (status, _, body) = send(addr, "PUT", "/activities/a/threads", "3");
        assert_eq!((status, body.as_str()), (200, "a: threads set to 3\n"));
        assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
        let _ = dribble.write_all(b"x");
    }
    let t0 = Instant::now();
    server.shutdown();
    assert!(
        t0.elapsed() < SHUTDOWN_WAIT + Duration::from_millis(500),
        "{:?}",
        t0.elapsed()
    );
    drop((silent, dribble));
}

#[test]
fn a_request_that_never_arrives_whole_times_out_with_408() {
    let fake = Arc::new(Fake::default());
    let server = start(&fake);
    let addr = server.local_addr();
    let t0 = Instant::now();
    let (status, raw) = raw(
        addr,
        b"PUT /activities/a/rate HTTP/1.1\r\nContent-Length: 10\r\n\r\n50",
    );
    // The client's write side stays open; the server gives up at its limit.
    assert_eq!(status, 408, "{raw}");
    assert!(raw.contains("send it whole"), "{raw}");
    let took = t0.elapsed();
    assert!(
        took >= REQUEST_TIMEOUT - Duration::from_millis(100)
            && took < REQUEST_TIMEOUT + Duration::from_secs(2),
        "{took:?}"
    );
    assert!(fake.calls().is_empty());
}

#[test]
fn oversized_heads_chunked_bodies_and_a_connection_flood_are_refused() {
    let fake = Arc::new(Fake::default());
    let server = start(&fake);
    let addr = server.local_addr();
    let long = format!(
        "GET /activities HTTP/1.1\r\nX-Big: {}\r\n\r\n",
        "a".repeat(64 * 1024)
    );
    let (status, body) = raw(addr, long.as_bytes());
    assert_eq!(status, 431, "{body}");
    assert!(body.contains("at most 8192 bytes"), "{body}");
    let many: String = (0..150).map(|i| format!("X-H{i}: v\r\n")).collect();
    let (status, _) = raw(
        addr,
        format!("GET /activities HTTP/1.1\r\n{many}\r\n").as_bytes(),
    );
    assert_eq!(status, 431);
    let (status, body) = raw(
        addr,
        b"PUT /activities/a/threads HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n8\r\n0\r\n\r\n",
    );
    assert_eq!(status, 411, "{body}");
    // curl's way with a body over 1 KiB: the head, then the body after 100.
    let mut c = TcpStream::connect(addr).unwrap();
    let _ = c.set_read_timeout(Some(Duration::from_secs(10)));
    c.write_all(
        b"PUT /activities/a/threads HTTP/1.1\r\nContent-Length: 1\r\nExpect: 100-continue\r\n\r\n",
    )
    .unwrap();
    let mut first = [0u8; 25];
    c.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"HTTP/1.1 100 Continue\r\n\r\n");
    c.write_all(b"8").unwrap();
    let mut rest = String::new();
    let _ = c.read_to_string(&mut rest);
    assert!(rest.starts_with("HTTP/1.1 200 OK"), "{rest}");
    assert!(rest.ends_with("a: threads set to 8\n"), "{rest}");
    // Idle connections up to the cap; the next one is refused at once.
    let idle: Vec<TcpStream> = (0..MAX_CONNECTIONS)
        .map(|_| TcpStream::connect(addr).unwrap())
        .collect();
    let until = Instant::now() + Duration::from_secs(5);
    while server.connections() < MAX_CONNECTIONS {
        assert!(Instant::now() < until, "{} served", server.connections());
        std::thread::sleep(Duration::from_millis(10));
    }
    let (status, body) = raw(addr, b"GET /activities HTTP/1.1\r\n\r\n");
    assert_eq!(status, 503, "{body}");
    drop(idle);
    // They go away and control works again.
    let until = Instant::now() + Duration::from_secs(5);
    while send(addr, "GET", "/activities", "").0 != 200 {
        assert!(Instant::now() < until, "still refused");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(fake.calls(), ["threads 8"]);
    server.shutdown();
}
