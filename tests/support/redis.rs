//! A real `redis-server` on a loopback port, for the store tests and the Redis bench
//! (benches and examples include this file with `#[path]`).
//!
//! No persistence (`--save ''`, `--appendonly no`) unless started with
//! [`RedisServer::start_persistent`], its working directory a fresh temp
//! directory removed on drop; the process is killed on drop. [`RedisServer::stop`] and
//! [`RedisServer::start_again`] stop it and start it on the same port, for fault tests.
//!
//! Redis cannot bind port 0 and report it, so the port is picked by binding
//! 127.0.0.1:0 and closing; if another process takes it in between, redis fails to
//! bind and another port is tried.

#![allow(dead_code)]

// Each server module includes it, so that examples and benches can include one
// server module alone (`#[path]`); tests that have both get two copies.
#[allow(clippy::duplicate_mod)]
#[path = "find.rs"]
mod find;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A running (or stopped) redis-server.
pub struct RedisServer {
    child: Option<Child>,
    bin: PathBuf,
    dir: PathBuf,
    port: u16,
    /// Append-only file, fsynced on every write: a restart keeps every acknowledged
    /// write.
    persistent: bool,
}

/// The redis-server binary, or why there is none.
pub fn binary() -> Result<PathBuf, String> {
    find::binary(
        "redis-server",
        "REDIS_SERVER",
        &["/usr/bin", "/usr/sbin", "/usr/local/bin"],
        "no `redis-server` on PATH or in /usr/bin; install it (`apt-get install \
         redis-server`, as .ci/run does) or set REDIS_SERVER=/path/to/redis-server",
    )
}

/// A running redis-server, or `None` after printing why the test skips: the
/// one way every test that needs Redis gets one. Installed but failing to
/// start is a failure, not a skip.
pub fn server() -> Option<RedisServer> {
    if let Err(why) = binary() {
        eprintln!("skipping: redis-server not installed ({why})");
        return None;
    }
    Some(
        RedisServer::start()
            .unwrap_or_else(|e| panic!("redis-server is installed and must start: {e}")),
    )
}

static SERIAL: AtomicU64 = AtomicU64::new(0);

/// An empty temp directory `PREFIX-PID-N` of this process's own.
fn fresh_dir(prefix: &str) -> Result<PathBuf, String> {
    let dir = std::env::temp_dir().join(format!(
        "{prefix}-{}-{}",
        std::process::id(),
        SERIAL.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("temp dir: {e}"))?;
    Ok(dir)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

impl RedisServer {
    /// Starts redis-server on a free loopback port, or says why it cannot.
    pub fn start() -> Result<Self, String> {
        Self::start_with(false)
    }

    /// Like [`start`](Self::start), with an append-only file fsynced on every write
    /// (`--appendonly yes --appendfsync always`), so that
    /// [`start_again`](Self::start_again) finds every acknowledged write.
    pub fn start_persistent() -> Result<Self, String> {
        Self::start_with(true)
    }

    fn start_with(persistent: bool) -> Result<Self, String> {
        let bin = binary()?;
        let dir = fresh_dir("paceline-redis")?;
        let mut server = RedisServer {
            child: None,
            bin,
            dir,
            port: 0,
            persistent,
        };
        let mut last = String::new();
        for _ in 0..5 {
            server.port = free_port();
            match server.spawn() {
                Ok(()) => return Ok(server),
                Err(e) => last = e, // the port was taken in between: try another
            }
        }
        Err(last)
    }

    fn spawn(&mut self) -> Result<(), String> {
        let child = Command::new(&self.bin)
            .args(["--port", &self.port.to_string()])
            .args(["--bind", "127.0.0.1"])
            .args(["--save", ""])
            .args(["--appendonly", if self.persistent { "yes" } else { "no" }])
            .args(["--appendfsync", "always"])
            .args(["--daemonize", "no"])
            .args(["--loglevel", "warning"])
            .arg("--dir")
            .arg(&self.dir)
            .arg("--logfile")
            .arg(self.dir.join("redis.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", self.bin.display()))?;
        self.child = Some(child);
        self.wait_ready()
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            let child = self.child.as_mut().expect("spawned");
            if let Ok(Some(status)) = child.try_wait() {
                let mut out =
                    std::fs::read_to_string(self.dir.join("redis.log")).unwrap_or_default();
                if let Some(mut e) = child.stderr.take() {
                    let _ = e.read_to_string(&mut out);
                }
                self.child = None;
                return Err(format!("redis-server exited ({status}): {out}"));
            }
            if self
                .command(&["PING"])
                .is_ok_and(|r| r.starts_with("+PONG"))
            {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Err("redis-server did not answer PING within 5 s".to_string())
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The port it listens on (loopback).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Sends one command (RESP, arguments without spaces or line breaks) on a fresh
    /// connection and returns the raw reply, such as `+PONG\r\n` or `:1500\r\n`.
    pub fn command(&self, args: &[&str]) -> Result<String, String> {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).map_err(|e| e.to_string())?;
        s.set_read_timeout(Some(Duration::from_secs(2)))
            .map_err(|e| e.to_string())?;
        let mut req = format!("*{}\r\n", args.len());
        for a in args {
            req.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        s.write_all(req.as_bytes()).map_err(|e| e.to_string())?;
        let mut buf = [0u8; 4096];
        let n = s.read(&mut buf).map_err(|e| e.to_string())?;
        Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
    }

    /// An integer reply (`:N`) to `args`, or panics with the reply.
    pub fn integer(&self, args: &[&str]) -> i64 {
        let r = self.command(args).expect("redis answers");
        r.strip_prefix(':')
            .and_then(|r| r.trim_end().parse().ok())
            .unwrap_or_else(|| panic!("{args:?}: not an integer reply: {r:?}"))
    }

    /// Stops the server (SIGKILL): every connection drops, and new ones are refused.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts the server again on the same port (empty unless started with
    /// [`start_persistent`](Self::start_persistent)), retrying for
    /// up to 5 s while the port is still held.
    pub fn start_again(&mut self) -> Result<(), String> {
        self.stop();
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            match self.spawn() {
                Ok(()) => return Ok(()),
                Err(e) if Instant::now() >= deadline => return Err(e),
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    /// The process id, while running.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A redis-server serving TLS only (`--port 0 --tls-port P`) with a leaf
/// certificate and key (PEM); killed on drop, its temp directory (the
/// certificate and key files) removed.
pub struct TlsRedis {
    child: Child,
    dir: PathBuf,
    port: u16,
}

impl Drop for TlsRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl TlsRedis {
    /// Starts one serving `cert_pem` with `key_pem`, or says why it cannot (no
    /// redis-server, or one that exits or does not get ready: built without
    /// TLS, say; the message holds its exit status and log). As for
    /// [`RedisServer`], a server that exits (such as when another process took
    /// the port between [`free_port`] and its bind) is tried again on another
    /// port, five times in all. It is ready when its own log says it accepts
    /// connections, so a stranger on the port does not pass for it. A failure
    /// to write the certificate files fails the test (it is no skip).
    pub fn start(cert_pem: &str, key_pem: &str) -> Result<Self, String> {
        let bin = binary().map_err(|why| format!("redis-server not installed ({why})"))?;
        let dir = fresh_dir("paceline-redis-tls").unwrap_or_else(|e| panic!("{e}"));
        let (cert, key) = (dir.join("redis.crt"), dir.join("redis.key"));
        for (path, pem) in [(&cert, cert_pem), (&key, key_pem)] {
            std::fs::write(path, pem).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        }
        let log = dir.join("redis.log");
        let mut last = String::new();
        for _ in 0..5 {
            let _ = std::fs::remove_file(&log);
            let port = free_port();
            let child = Command::new(&bin)
                .args([
                    "--port",
                    "0",
                    "--tls-port",
                    &port.to_string(),
                    "--bind",
                    "127.0.0.1",
                ])
                .arg("--tls-cert-file")
                .arg(&cert)
                .arg("--tls-key-file")
                .arg(&key)
                // No client certificates asked for; redis-server still wants a CA
                // file to start TLS.
                .arg("--tls-ca-cert-file")
                .arg(&cert)
                .args([
                    "--tls-auth-clients",
                    "no",
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                ])
                .arg("--logfile")
                .arg(&log)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn();
            let child = match child {
                Ok(c) => c,
                Err(e) => {
                    let _ = std::fs::remove_dir_all(&dir);
                    return Err(format!("cannot run {}: {e}", bin.display()));
                }
            };
            // A failed try drops it: killed and reaped (its `dir` is cleared
            // first, so the certificate files stay for the next try).
            let mut server = TlsRedis {
                child,
                dir: dir.clone(),
                port,
            };
            let deadline = Instant::now() + Duration::from_secs(5);
            last = loop {
                if let Ok(Some(status)) = server.child.try_wait() {
                    let mut out = std::fs::read_to_string(&log).unwrap_or_default();
                    if let Some(mut e) = server.child.stderr.take() {
                        let _ = e.read_to_string(&mut out);
                    }
                    break format!("redis-server exited ({status}): {out}");
                }
                let said = std::fs::read_to_string(&log).unwrap_or_default();
                if said.contains("Ready to accept connections") {
                    return Ok(server);
                }
                if Instant::now() > deadline {
                    break format!("redis-server did not get ready with TLS in 5 s: {said}");
                }
                std::thread::sleep(Duration::from_millis(20));
            };
            // Keep `dir` (the certificate files) for the next try.
            server.dir = PathBuf::new();
        }
        let _ = std::fs::remove_dir_all(&dir);
        Err(last)
    }

    /// `rediss://127.0.0.1:PORT/0`.
    pub fn url(&self) -> String {
        format!("rediss://127.0.0.1:{}/0", self.port)
    }

    /// The port it listens on (loopback, TLS only).
    pub fn port(&self) -> u16 {
        self.port
    }
}

/// Starts redis-server for an example or bench, or says why it cannot and exits with
/// status 2.
pub fn start_or_exit() -> RedisServer {
    RedisServer::start().unwrap_or_else(|e| {
        eprintln!("cannot start redis-server: {e}");
        std::process::exit(2);
    })
}
