//! A TCP fault proxy on a loopback port, between a client and a real server, so a
//! store fault is a deterministic test instead of a SIGSTOP of a shared server:
//!
//! - [`FaultProxy::stall`]: nothing goes through either way (the server looks
//!   stopped: connections are accepted, nothing is answered) until
//!   [`FaultProxy::resume`], which then delivers everything held, in order;
//! - [`FaultProxy::drop_replies`]: requests on the connections open now reach the
//!   server, their replies are thrown away (a reply lost after the request ran);
//!   connections opened later are untouched;
//! - [`FaultProxy::cut`]: every open connection is closed;
//! - [`FaultProxy::latency`]: each chunk of bytes is held this long before it is
//!   forwarded.
//!
//! Each accepted connection gets two pump threads; they end when either side closes.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Default)]
struct State {
    stalled: AtomicBool,
    latency_us: AtomicU64,
    /// Bumped by `cut`: a connection from an older generation closes.
    cut_gen: AtomicU64,
    /// Bumped by `drop_replies`: connections of an older generation lose replies.
    drop_gen: AtomicU64,
    drop_on: AtomicBool,
    /// Open connections (both ends), for `cut`.
    conns: Mutex<Vec<(TcpStream, TcpStream)>>,
    /// Connections accepted so far.
    accepted: AtomicU64,
    halt: AtomicBool,
}

/// The proxy; stops (closing every connection) on drop.
pub struct FaultProxy {
    addr: SocketAddr,
    state: Arc<State>,
}

impl FaultProxy {
    /// Listens on a free loopback port and forwards to `upstream` (`127.0.0.1:PORT`).
    pub fn start(upstream: u16) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let state = Arc::new(State::default());
        let st = state.clone();
        std::thread::Builder::new()
            .name("fault-proxy".into())
            .spawn(move || {
                while !st.halt.load(Ordering::Relaxed) {
                    match listener.accept() {
                        Ok((client, _)) => {
                            let _ = client.set_nonblocking(false);
                            let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                                continue;
                            };
                            st.accepted.fetch_add(1, Ordering::Relaxed);
                            Self::pump_pair(&st, client, server);
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(2)),
                    }
                }
            })?;
        Ok(Self { addr, state })
    }

    fn pump_pair(st: &Arc<State>, client: TcpStream, server: TcpStream) {
        let _ = client.set_nodelay(true);
        let _ = server.set_nodelay(true);
        let gen_at_open = st.drop_gen.load(Ordering::Relaxed);
        let cut_at_open = st.cut_gen.load(Ordering::Relaxed);
        if let (Ok(c), Ok(s)) = (client.try_clone(), server.try_clone()) {
            st.conns.lock().unwrap().push((c, s));
        }
        let (c2, s2) = match (client.try_clone(), server.try_clone()) {
            (Ok(c), Ok(s)) => (c, s),
            _ => return,
        };
        let a = st.clone();
        std::thread::spawn(move || pump(&a, client, server, false, gen_at_open, cut_at_open));
        let b = st.clone();
        std::thread::spawn(move || pump(&b, s2, c2, true, gen_at_open, cut_at_open));
    }

    /// The address to give the client.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `redis://127.0.0.1:PORT` through the proxy.
    pub fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    /// Holds every byte, both ways, until [`resume`](Self::resume).
    pub fn stall(&self) {
        self.state.stalled.store(true, Ordering::SeqCst);
    }

    /// Ends a stall (what was held is delivered) and a drop of replies.
    pub fn resume(&self) {
        self.state.drop_on.store(false, Ordering::SeqCst);
        self.state.stalled.store(false, Ordering::SeqCst);
    }

    /// Replies on the connections open now are thrown away (their requests still
    /// reach the server) until [`resume`](Self::resume); new connections are not
    /// touched.
    pub fn drop_replies(&self) {
        self.state.drop_gen.fetch_add(1, Ordering::SeqCst);
        self.state.drop_on.store(true, Ordering::SeqCst);
    }

    /// Closes every open connection.
    pub fn cut(&self) {
        self.state.cut_gen.fetch_add(1, Ordering::SeqCst);
        for (c, s) in self.state.conns.lock().unwrap().drain(..) {
            let _ = c.shutdown(Shutdown::Both);
            let _ = s.shutdown(Shutdown::Both);
        }
    }

    /// Holds each chunk this long before forwarding it.
    pub fn latency(&self, d: Duration) {
        self.state
            .latency_us
            .store(d.as_micros() as u64, Ordering::SeqCst);
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.state.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.state.halt.store(true, Ordering::SeqCst);
        self.state.stalled.store(false, Ordering::SeqCst);
        self.cut();
    }
}

/// Forwards `from` to `to` under the proxy's faults; `reply` is the server-to-client
/// direction.
fn pump(st: &State, mut from: TcpStream, mut to: TcpStream, reply: bool, opened: u64, cut: u64) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        while st.stalled.load(Ordering::SeqCst) && !st.halt.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(1));
        }
        if st.cut_gen.load(Ordering::SeqCst) != cut || st.halt.load(Ordering::Relaxed) {
            break;
        }
        let lat = st.latency_us.load(Ordering::Relaxed);
        if lat > 0 {
            std::thread::sleep(Duration::from_micros(lat));
        }
        if reply && st.drop_on.load(Ordering::SeqCst) && opened < st.drop_gen.load(Ordering::SeqCst)
        {
            continue;
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}

/// A fresh redis-server behind a fault proxy, or `None` (after printing
/// `skipping: ...`) when redis-server is not installed.
pub fn redis_behind_proxy() -> Option<(super::redis::RedisServer, FaultProxy)> {
    let redis = super::redis::server()?;
    let proxy = FaultProxy::start(redis.port()).expect("a loopback port for the proxy");
    Some((redis, proxy))
}
