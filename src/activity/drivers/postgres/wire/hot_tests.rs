//! The hot path against a scripted server on a loopback port: what the
//! client sends per op, and answers split, interleaved, failed or cut off.
//! The real server's side (SCRAM, TLS, prepare) is in `postgres::tests`.

use super::super::frame::Frames;
use super::super::{Prepared, Stream, WireError};
use super::{Answer, Conn};
use postgres_types::Type;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};

pub(in super::super::super) fn msg(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![tag];
    m.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
    m.extend_from_slice(body);
    m
}

/// Reads frontend messages until `syncs` Sync (or Query) messages came; each
/// read's byte count too.
pub(in super::super::super) fn read_until(
    s: &mut TcpStream,
    syncs: usize,
) -> (Vec<(u8, Vec<u8>)>, Vec<usize>) {
    let mut buf = Vec::new();
    let mut out = Vec::new();
    let mut reads = Vec::new();
    let mut seen = 0;
    while seen < syncs {
        let mut chunk = [0u8; 4096];
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "client closed");
        reads.push(n);
        buf.extend_from_slice(&chunk[..n]);
        while buf.len() >= 5 {
            let len = u32::from_be_bytes([buf[1], buf[2], buf[3], buf[4]]) as usize;
            if buf.len() < 1 + len {
                break;
            }
            let m: Vec<u8> = buf.drain(..1 + len).collect();
            if matches!(m[0], b'S' | b'Q') {
                seen += 1;
            }
            out.push((m[0], m[5..].to_vec()));
        }
    }
    (out, reads)
}

/// A server on a free loopback port running `script` on its one connection.
pub(in super::super::super) fn fake(
    script: impl FnOnce(TcpStream) + Send + 'static,
) -> (u16, std::thread::JoinHandle<()>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let h = std::thread::spawn(move || {
        let (s, _) = l.accept().unwrap();
        s.set_nodelay(true).unwrap();
        script(s);
    });
    (port, h)
}

/// The tests' values: `int4`, in the binary format.
impl super::Param for i32 {
    fn binary(&self) -> bool {
        true
    }
    fn put(&self, out: &mut bytes::BytesMut) {
        out.extend_from_slice(&self.to_be_bytes());
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

async fn conn(port: u16) -> Conn {
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let stmt = Prepared {
        name: "s0".into(),
        params: vec![Type::INT4],
        returns_rows: true,
    };
    Conn::new(
        Stream::Tcp(tcp),
        Frames::default(),
        bytes::BytesMut::new(),
        vec![Some(stmt)],
    )
}

fn row() -> Vec<u8> {
    msg(b'D', b"\x00\x01\x00\x00\x00\x011")
}

fn answer(rows: usize) -> Vec<u8> {
    let mut a = msg(b'2', b"");
    for _ in 0..rows {
        a.extend(row());
    }
    a.extend(msg(b'C', format!("SELECT {rows}\0").as_bytes()));
    a.extend(msg(b'Z', b"I"));
    a
}

fn error(code: &str) -> Vec<u8> {
    let mut e = msg(
        b'E',
        format!("SERROR\0VERROR\0C{code}\0Mduplicate key\0\0").as_bytes(),
    );
    e.extend(msg(b'Z', b"I"));
    e
}

#[test]
fn an_op_is_one_write_and_its_answer_one_read() {
    let (port, server) = fake(|mut s| {
        for _ in 0..3 {
            let (msgs, reads) = read_until(&mut s, 1);
            // Bind (the statement, one binary int4 = 42), Execute, Sync: in
            // one write, which a quiet loopback delivers in one read.
            let tags: Vec<u8> = msgs.iter().map(|m| m.0).collect();
            assert_eq!(tags, b"BES");
            assert_eq!(reads.len(), 1, "{reads:?}");
            let bind = &msgs[0].1;
            assert!(
                bind.starts_with(b"\0s0\0\x00\x01\x00\x01\x00\x01\x00\x00\x00\x04\x00\x00\x00\x2a")
            );
            s.write_all(&answer(3)).unwrap();
        }
    });
    rt().block_on(async {
        let c = conn(port).await;
        let mut capacities = None;
        for i in 0..3 {
            assert!(!c.is_closed());
            let reads = c.inner.borrow().frames.reads;
            let a = c.send_prepared(0, &[42i32]).unwrap().await.unwrap();
            assert_eq!(
                a,
                Answer {
                    rows: 3,
                    described: false,
                    completed: 3
                }
            );
            let g = c.inner.borrow();
            // The answer, written in one piece, came in one read.
            assert_eq!(g.frames.reads - reads, 1, "op {i}");
            // No buffer grew after the first op.
            let now = (g.out.capacity(), g.frames.capacity(), g.queue.capacity());
            assert_eq!(*capacities.get_or_insert(now), now, "op {i}");
        }
        // The buffers are reused: nothing is queued, nothing left unread.
        let g = c.inner.borrow();
        assert!(g.queue.is_empty() && g.out.is_empty() && g.frames.is_empty());
    });
    server.join().unwrap();
}

#[test]
fn an_answer_split_across_reads_is_put_together() {
    let (port, server) = fake(|mut s| {
        read_until(&mut s, 1);
        let a = answer(2);
        for b in &a {
            s.write_all(&[*b]).unwrap();
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
    });
    rt().block_on(async {
        let c = conn(port).await;
        let a = c.send_prepared(0, &[1i32]).unwrap().await.unwrap();
        assert_eq!(a.rows, 2);
    });
    server.join().unwrap();
}

#[test]
fn notices_parameter_status_and_notifications_between_answers_are_skipped() {
    let (port, server) = fake(|mut s| {
        read_until(&mut s, 2);
        let mut out = msg(b'N', b"SWARNING\0C01000\0Mmind\0\0");
        out.extend(answer(1));
        out.extend(msg(b'S', b"TimeZone\0UTC\0"));
        out.extend(msg(b'A', b"\0\0\0\x07chan\0hello\0"));
        out.extend(msg(b'N', b"SNOTICE\0C00000\0Mnote\0\0"));
        out.extend(answer(2));
        s.write_all(&out).unwrap();
    });
    rt().block_on(async {
        let c = conn(port).await;
        let a = c.send_prepared(0, &[1i32]).unwrap();
        let b = c.send_prepared(0, &[2i32]).unwrap();
        let (a, b) = tokio::join!(a, b);
        assert_eq!((a.unwrap().rows, b.unwrap().rows), (1, 2));
    });
    server.join().unwrap();
}

#[test]
fn an_error_mid_pipeline_fails_only_its_op() {
    let (port, server) = fake(|mut s| {
        read_until(&mut s, 3);
        let mut out = answer(1);
        out.extend(error("23505"));
        out.extend(answer(3));
        s.write_all(&out).unwrap();
        // Open until the client leaves.
        let _ = s.read(&mut [0u8; 1]);
    });
    rt().block_on(async {
        let c = conn(port).await;
        let a = c.send_prepared(0, &[1i32]).unwrap();
        let b = c.send_prepared(0, &[2i32]).unwrap();
        let d = c.send_prepared(0, &[3i32]).unwrap();
        // Polled in reverse: the last op reads every answer and hands them
        // out in the order they were sent.
        let (d, b, a) = tokio::join!(d, b, a);
        assert_eq!(a.unwrap().rows, 1);
        assert!(
            matches!(&b, Err(WireError::Db { code, fatal: false, .. }) if code == "23505"),
            "{b:?}"
        );
        assert_eq!(d.unwrap().rows, 3);
        assert!(!c.is_closed());
    });
    server.join().unwrap();
}

#[test]
fn a_dropped_op_s_answer_is_read_and_thrown_away() {
    let (port, server) = fake(|mut s| {
        read_until(&mut s, 2);
        let mut out = answer(5);
        out.extend(answer(1));
        s.write_all(&out).unwrap();
    });
    rt().block_on(async {
        let c = conn(port).await;
        let first = c.send_prepared(0, &[1i32]).unwrap();
        let second = c.send_prepared(0, &[2i32]).unwrap();
        drop(first);
        assert_eq!(second.await.unwrap().rows, 1);
        assert!(c.inner.borrow().queue.is_empty());
    });
    server.join().unwrap();
}

#[test]
fn a_close_while_idle_is_seen_before_the_next_op() {
    let (port, server) = fake(|mut s| {
        read_until(&mut s, 1);
        s.write_all(&answer(1)).unwrap();
        // The server's goodbye (pg_terminate_backend, a fast shutdown),
        // then the end of the stream, while the client is idle.
        s.write_all(&msg(
            b'E',
            b"SFATAL\0VFATAL\0C57P01\0Mterminating connection\0\0",
        ))
        .unwrap();
    });
    rt().block_on(async {
        let c = conn(port).await;
        c.send_prepared(0, &[1i32]).unwrap().await.unwrap();
        server.join().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !c.is_closed() {
            assert!(std::time::Instant::now() < deadline, "never seen closed");
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        // An op on it fails at once, without a write.
        assert!(c.send_prepared(0, &[1i32]).is_err());
    });
}

#[test]
fn a_server_lost_mid_op_fails_every_op_in_flight_as_io() {
    let (port, server) = fake(|mut s| {
        read_until(&mut s, 2);
        let a = answer(1);
        s.write_all(&a[..a.len() - 3]).unwrap();
    });
    rt().block_on(async {
        let c = conn(port).await;
        let a = c.send_prepared(0, &[1i32]).unwrap();
        let b = c.send_prepared(0, &[2i32]).unwrap();
        let (a, b) = tokio::join!(a, b);
        assert!(matches!(a, Err(WireError::Closed)), "{a:?}");
        assert!(matches!(b, Err(WireError::Closed)), "{b:?}");
        assert!(c.is_closed());
        let kind = super::super::super::conn::op_error(&WireError::Closed);
        assert_eq!(kind.kind(), "io");
    });
    server.join().unwrap();
}

#[test]
fn a_simple_query_counts_rows_or_the_tags_and_copy_is_refused() {
    let (port, server) = fake(|mut s| {
        let (msgs, _) = read_until(&mut s, 1);
        assert_eq!(msgs[0].0, b'Q');
        let mut out = msg(b'C', b"BEGIN\0");
        out.extend(msg(b'C', b"INSERT 0 2\0"));
        out.extend(msg(b'C', b"UPDATE 3\0"));
        out.extend(msg(b'C', b"COMMIT\0"));
        out.extend(msg(b'Z', b"I"));
        s.write_all(&out).unwrap();
        read_until(&mut s, 1);
        let mut out = msg(b'T', b"\x00\x00");
        out.extend(msg(b'C', b"SELECT 0\0"));
        out.extend(msg(b'Z', b"I"));
        s.write_all(&out).unwrap();
        read_until(&mut s, 1);
        s.write_all(&msg(b'G', b"\0\0\0")).unwrap();
    });
    rt().block_on(async {
        let c = conn(port).await;
        let a = c
            .send_simple("begin; insert ...; update ...; commit")
            .unwrap();
        let a = a.await.unwrap();
        assert_eq!((a.rows, a.described, a.completed), (0, false, 5));
        let a = c
            .send_simple("select 1 where false")
            .unwrap()
            .await
            .unwrap();
        assert_eq!((a.rows, a.described), (0, true));
        let e = c.send_simple("copy t from stdin").unwrap().await;
        assert!(
            matches!(&e, Err(WireError::Protocol(m)) if m.contains("COPY")),
            "{e:?}"
        );
        assert!(c.is_closed());
    });
    server.join().unwrap();
}

/// An op timed out partway through its answer (a DataRow cut in two) on a
/// shared (pipelined) connection: the next op sent on it gets its own
/// answer, not the rest of the old one.
#[test]
fn an_op_dropped_partway_through_its_answer_leaves_the_next_op_its_own() {
    let (port, server) = fake(|mut s| {
        read_until(&mut s, 1);
        let old = answer(4);
        // Two rows and half of the third, then nothing until the next op.
        let cut = msg(b'2', b"").len() + 2 * row().len() + 3;
        s.write_all(&old[..cut]).unwrap();
        read_until(&mut s, 1);
        s.write_all(&old[cut..]).unwrap();
        s.write_all(&answer(1)).unwrap();
    });
    rt().block_on(async {
        let c = conn(port).await;
        let first = c.send_prepared(0, &[1i32]).unwrap();
        let timed_out = tokio::time::timeout(std::time::Duration::from_millis(100), first).await;
        assert!(timed_out.is_err(), "the answer was cut: {timed_out:?}");
        let next = c.send_prepared(0, &[2i32]).unwrap().await.unwrap();
        assert_eq!(
            next,
            Answer {
                rows: 1,
                described: false,
                completed: 1
            }
        );
        assert!(c.inner.borrow().queue.is_empty());
    });
    server.join().unwrap();
}

/// A waker that counts its wakes.
#[derive(Default)]
struct Counting(crate::sync::threads::AtomicU64);

impl std::task::Wake for Counting {
    fn wake(self: std::sync::Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &std::sync::Arc<Self>) {
        self.0.fetch_add(1, crate::sync::threads::Ordering::Relaxed);
    }
}

/// One op on `c` polled by hand with a counting waker: the references to
/// that waker held while the op waits (tokio's registration, the op's
/// slot), and the wakes made during the poll that reads its answer.
async fn one_op_by_hand(c: &Conn, counting: &std::sync::Arc<Counting>) -> (usize, u64) {
    use crate::sync::threads::Ordering;
    use std::future::Future;
    let waker = std::task::Waker::from(counting.clone());
    let mut cx = std::task::Context::from_waker(&waker);
    let mut req = std::pin::pin!(c.send_prepared(0, &[42i32]).unwrap());
    assert!(req.as_mut().poll(&mut cx).is_pending());
    // Held elsewhere while the op waits: all but the caller's `counting`
    // and `waker`.
    let held = std::sync::Arc::strong_count(counting) - 2;
    // tokio's reactor wakes the op once the answer came.
    while counting.0.load(Ordering::Relaxed) == 0 {
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    let before = counting.0.load(Ordering::Relaxed);
    let std::task::Poll::Ready(answer) = req.as_mut().poll(&mut cx) else {
        panic!("the answer came but the op is pending")
    };
    assert_eq!(answer.unwrap().rows, 3);
    (held, counting.0.load(Ordering::Relaxed) - before)
}

/// Regression (session 16): an op that read its own answer woke itself
/// (the waker its slot kept), which queued its worker's slot for a poll of
/// nothing; and an op alone on its connection kept a clone of its waker
/// that no one but itself could use. Now the poll that reads an op's answer
/// wakes no one, and an op on a connection that carries one op at a time
/// (`Conn::one_op_at_a_time`, the pool without `pipeline`) is held by
/// tokio's registration only.
#[test]
fn an_op_reading_its_own_answer_wakes_no_one_and_a_lone_one_keeps_no_waker() {
    let (port, server) = fake(|mut s| {
        for _ in 0..2 {
            read_until(&mut s, 1);
            std::thread::sleep(std::time::Duration::from_millis(5));
            s.write_all(&answer(3)).unwrap();
        }
    });
    let (port2, server2) = fake(|mut s| {
        read_until(&mut s, 1);
        std::thread::sleep(std::time::Duration::from_millis(5));
        s.write_all(&answer(3)).unwrap();
    });
    rt().block_on(async {
        let lone = conn(port).await.one_op_at_a_time();
        for _ in 0..2 {
            let counting = Default::default();
            assert_eq!(one_op_by_hand(&lone, &counting).await, (1, 0), "lone");
        }
        let shared = conn(port2).await;
        let counting = Default::default();
        assert_eq!(one_op_by_hand(&shared, &counting).await, (2, 0), "shared");
    });
    server.join().unwrap();
    server2.join().unwrap();
}

/// The check for a close while idle (`Conn::is_closed`, before every op)
/// registers no waker over TCP: tokio keeps the last op's (no lock taken, no
/// waker swapped for a no-op one and back by the next op), and a close is
/// still seen.
#[test]
fn the_idle_check_registers_no_waker() {
    let (port, server) = fake(|mut s| {
        read_until(&mut s, 1);
        std::thread::sleep(std::time::Duration::from_millis(5));
        s.write_all(&answer(3)).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
        // Then the server goes.
    });
    rt().block_on(async {
        let c = conn(port).await.one_op_at_a_time();
        let counting = std::sync::Arc::new(Counting::default());
        assert_eq!(one_op_by_hand(&c, &counting).await, (1, 0));
        // The wake took tokio's clone; a read that finds nothing gives it
        // one again.
        assert_eq!(std::sync::Arc::strong_count(&counting), 1);
        {
            let waker = std::task::Waker::from(counting.clone());
            let mut cx = std::task::Context::from_waker(&waker);
            let mut g = c.inner.borrow_mut();
            let g = &mut *g;
            assert!(g.frames.poll_read_from(&mut g.stream, &mut cx).is_pending());
        }
        assert_eq!(std::sync::Arc::strong_count(&counting), 2);
        // The check leaves it registered.
        assert!(!c.is_closed());
        assert_eq!(std::sync::Arc::strong_count(&counting), 2);
        let t0 = std::time::Instant::now();
        while !c.is_closed() {
            assert!(
                t0.elapsed() < std::time::Duration::from_secs(10),
                "close not seen"
            );
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
        // The close woke the waker tokio kept.
        assert_eq!(counting.0.load(crate::sync::threads::Ordering::Relaxed), 2);
    });
    server.join().unwrap();
}
