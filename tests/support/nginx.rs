//! A real nginx on a loopback port, for the `http` driver's tests, the
//! coordinated-omission demo and the HTTP bench (examples include this file with
//! `#[path]`).
//!
//! One process (`master_process off`), so a stall is one `kill -STOP`. Config,
//! pid, logs and temp paths live in a fresh temp directory, removed on drop;
//! the process is killed on drop.
//!
//! [`Nginx::start_tls`] serves the same over TLS with a certificate and key the
//! test made (see `tests/support/tls.rs`); [`tls_or_skip`] starts it for a test
//! that skips without it, and [`PemFile`] holds the CA a client trusts.
//!
//! Routes: `/ok` 200 `ok`, `/slow` `ok` after 50 ms (with [`Options::slow`]), `/json` 200 `{"status":"up","items":[1,2]}`, `/missing` 404, `/fail` 503, `/echo/...` 200 with the
//! request URI as body; anything else 404. The access log line is
//! `$connection $connection_requests $status "$request" "$http_x_run" $request_length`.

#![allow(dead_code)]

// Each server module includes it, so that examples and benches can include one
// server module alone (`#[path]`); tests that have both get two copies.
#[allow(clippy::duplicate_mod)]
#[path = "find.rs"]
mod find;

use std::fmt::Write as _;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A running nginx.
pub struct Nginx {
    child: Child,
    dir: PathBuf,
    port: u16,
    /// Serves TLS.
    tls: bool,
}

/// How to start it.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Write the access log (off for the bench: a write per request).
    pub access_log: bool,
    /// nginx's `keepalive_timeout`: how long a kept-alive connection may stay
    /// idle, such as `10ms`.
    pub keepalive_timeout: &'static str,
    /// Load the echo module (`libnginx-mod-http-echo`, see [`echo_module`])
    /// and answer `/slow` with `ok` after 50 ms (`echo_sleep 0.05`); room
    /// for 8192 connections.
    pub slow: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            access_log: true,
            keepalive_timeout: "75s",
            slow: false,
        }
    }
}

/// The nginx binary, or why there is none.
pub fn binary() -> Result<PathBuf, String> {
    find::binary(
        "nginx",
        "NGINX",
        &["/usr/sbin", "/usr/local/sbin", "/usr/local/nginx/sbin"],
        "no `nginx` on PATH or in /usr/sbin; install it (`apt-get install nginx-light`, \
         as .ci/run does) or set NGINX=/path/to/nginx",
    )
}

/// The echo module's file, or why there is none.
pub fn echo_module() -> Result<PathBuf, String> {
    let p = PathBuf::from(
        std::env::var("NGINX_ECHO_MODULE")
            .unwrap_or_else(|_| "/usr/lib/nginx/modules/ngx_http_echo_module.so".into()),
    );
    if p.is_file() {
        Ok(p)
    } else {
        Err(format!(
            "no nginx echo module at {} (for `/slow`); install it (`apt-get install \
             libnginx-mod-http-echo`, as .ci/run does) or set NGINX_ECHO_MODULE",
            p.display()
        ))
    }
}

static SERIAL: AtomicU64 = AtomicU64::new(0);

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// Whether `error` (from [`Nginx::start_tls`]) says this nginx was built
/// without TLS: the `ssl` listen parameter needs `ngx_http_ssl_module`, or an
/// `ssl_*` directive is unknown. Any other start failure is a real one, which
/// a test must not skip.
pub fn lacks_tls_module(error: &str) -> bool {
    error.contains("requires ngx_http_ssl_module") || error.contains("unknown directive \"ssl_")
}

fn config(dir: &Path, port: u16, opts: Options, tls: bool) -> String {
    let d = dir.display();
    let listen = if tls {
        format!(
            "listen 127.0.0.1:{port} ssl;\n        ssl_certificate {d}/cert.pem;\n        \
             ssl_certificate_key {d}/key.pem;\n        ssl_session_cache shared:SSL:1m;"
        )
    } else {
        format!("listen 127.0.0.1:{port};")
    };
    let mut c = String::new();
    let (module, slow, connections) = match echo_module() {
        Ok(m) if opts.slow => (
            format!(
                "load_module {};\nworker_rlimit_nofile 20000;\n",
                m.display()
            ),
            "location = /slow { echo_sleep 0.05; echo ok; }",
            8192,
        ),
        _ => (String::new(), "", 1024),
    };
    c.push_str(&module);
    let _ = write!(
        c,
        r#"daemon off;
master_process off;
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections {connections}; }}
http {{
    client_body_temp_path {d}/body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    log_format paceline '$connection $connection_requests $status "$request" "$http_x_run" $request_length';
    access_log {log};
    keepalive_requests 1000000;
    keepalive_timeout {keepalive};
    default_type text/plain;
    server {{
        {listen}
        location = /ok {{ return 200 "ok\n"; }}
        location = /json {{ default_type application/json; return 200 '{{"status":"up","items":[1,2]}}'; }}
        location = /missing {{ return 404; }}
        location = /fail {{ return 503; }}
        location /echo/ {{ return 200 "$request_uri\n"; }}
        {slow}
        location / {{ return 404; }}
    }}
}}
"#,
        log = if opts.access_log {
            format!("{d}/access.log paceline")
        } else {
            "off".to_string()
        },
        keepalive = opts.keepalive_timeout
    );
    c
}

impl Nginx {
    /// Starts nginx with the access log on, or says why it cannot.
    pub fn start() -> Result<Self, String> {
        Self::start_with(Options::default())
    }

    /// Starts nginx with `opts`, or says why it cannot.
    pub fn start_with(opts: Options) -> Result<Self, String> {
        Self::start_inner(opts, None)
    }

    /// Starts nginx serving TLS with `cert_pem` (the chain, leaf first) and
    /// `key_pem`, or says why it cannot (its error log says when this nginx
    /// has no TLS module).
    pub fn start_tls(cert_pem: &str, key_pem: &str) -> Result<Self, String> {
        Self::start_inner(Options::default(), Some((cert_pem, key_pem)))
    }

    /// [`start_tls`](Self::start_tls) with `opts`.
    pub fn start_tls_with(opts: Options, cert_pem: &str, key_pem: &str) -> Result<Self, String> {
        Self::start_inner(opts, Some((cert_pem, key_pem)))
    }

    fn start_inner(opts: Options, tls: Option<(&str, &str)>) -> Result<Self, String> {
        let bin = binary()?;
        let mut last = String::new();
        for _ in 0..3 {
            let dir = std::env::temp_dir().join(format!(
                "paceline-nginx-{}-{}",
                std::process::id(),
                SERIAL.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).map_err(|e| format!("temp dir: {e}"))?;
            let port = free_port();
            std::fs::write(
                dir.join("nginx.conf"),
                config(&dir, port, opts, tls.is_some()),
            )
            .map_err(|e| format!("writing nginx.conf: {e}"))?;
            if let Some((cert, key)) = tls {
                std::fs::write(dir.join("cert.pem"), cert)
                    .and_then(|()| std::fs::write(dir.join("key.pem"), key))
                    .map_err(|e| format!("writing the certificate: {e}"))?;
            }
            let child = Command::new(&bin)
                .arg("-p")
                .arg(&dir)
                .arg("-c")
                .arg(dir.join("nginx.conf"))
                .arg("-e")
                .arg(dir.join("error.log"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
            let mut n = Nginx {
                child,
                dir,
                port,
                tls: tls.is_some(),
            };
            match n.wait_ready() {
                Ok(()) => return Ok(n),
                Err(e) => last = e, // the port was taken in between: try another
            }
        }
        Err(last)
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                let log = std::fs::read_to_string(self.dir.join("error.log")).unwrap_or_default();
                let mut err = String::new();
                if let Some(mut e) = self.child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut e, &mut err);
                }
                return Err(format!("nginx exited ({status}): {err}{log}"));
            }
            if TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Err("nginx did not listen within 5 s".to_string())
    }

    /// `http://127.0.0.1:PORT`, or `https://127.0.0.1:PORT` when it serves TLS.
    pub fn base_url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}", self.port)
    }

    /// The port it listens on (loopback).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The process id (the one process that serves).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The access log's lines, once it has stopped growing.
    ///
    /// nginx writes a request's line after sending its answer, so a client can
    /// have every answer before the last lines are written: this waits (up to
    /// 5 s) until the log stops growing for 50 ms, and callers compare counts.
    pub fn access_log(&self) -> Vec<String> {
        let read = || {
            std::fs::read_to_string(self.dir.join("access.log"))
                .unwrap_or_default()
                .lines()
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        let start = Instant::now();
        let mut lines = read();
        while start.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(50));
            let now = read();
            if now.len() == lines.len() {
                break;
            }
            lines = now;
        }
        lines
    }

    /// Sends `signal` (`STOP`, `CONT`) to the serving process with `kill`.
    pub fn signal(&self, signal: &str) {
        let ok = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(self.pid().to_string())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(ok, "kill -{signal} {} failed", self.pid());
    }

    /// Stops the server for `d` (SIGSTOP, sleep, SIGCONT): connections stay
    /// open, the kernel queues requests, nothing is answered.
    pub fn stall(&self, d: Duration) {
        self.signal("STOP");
        std::thread::sleep(d);
        self.signal("CONT");
    }

    /// CPU time (user + system) the server has used, in seconds.
    pub fn cpu_seconds(&self) -> f64 {
        proc_cpu_seconds(self.pid()).unwrap_or(0.0)
    }
}

/// CPU time (utime + stime) of process `pid` from `/proc/PID/stat`, in seconds,
/// assuming the usual 100 clock ticks per second.
pub fn proc_cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // utime is field 14, stime 15
    stat_seconds(&stat, 14, 15)
}

/// The sum of fields `a` and `b` (numbered as in proc(5), from 1) of a
/// `/proc/PID/stat` line, in seconds at 100 clock ticks per second.
pub fn stat_seconds(stat: &str, a: usize, b: usize) -> Option<f64> {
    // Fields after the command (which is in parentheses and may hold spaces); the
    // first of them is field 3.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    let x: f64 = f.get(a - 3)?.parse().ok()?;
    let y: f64 = f.get(b - 3)?.parse().ok()?;
    Some((x + y) / 100.0)
}

/// A running nginx, or `None` after printing why the test skips (`skipping:
/// nginx not installed (...)`). Installed but failing to start is a failure,
/// not a skip.
pub fn server() -> Option<Nginx> {
    if let Err(why) = binary() {
        eprintln!("skipping: nginx not installed ({why})");
        return None;
    }
    Some(Nginx::start().expect("nginx is installed and must start"))
}

/// nginx serving TLS with a test's certificate chain and key (PEM), or `None`
/// after printing why the test skips (`skipping: ...`): no nginx installed, or
/// one without TLS. An nginx that has TLS and does not start fails the test.
pub fn tls_or_skip(opts: Options, cert_pem: &str, key_pem: &str) -> Option<Nginx> {
    if let Err(why) = binary() {
        eprintln!("skipping: nginx not installed ({why})");
        return None;
    }
    match Nginx::start_tls_with(opts, cert_pem, key_pem) {
        Ok(n) => Some(n),
        Err(e) if lacks_tls_module(&e) => {
            eprintln!("skipping: this nginx cannot serve TLS ({e})");
            None
        }
        Err(e) => panic!("nginx is installed and must start: {e}"),
    }
}

/// A PEM (a CA certificate for a client's `ca_file`) in a temp file of its
/// own, named after the test binary's process and `name`; removed on drop.
pub struct PemFile(PathBuf);

impl PemFile {
    /// Writes `pem` to the file.
    pub fn holding(pem: &str, name: &str) -> Self {
        let p = std::env::temp_dir().join(format!("paceline-ca-{}-{name}.pem", std::process::id()));
        std::fs::write(&p, pem).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        PemFile(p)
    }

    /// Its path, for a `ca_file` param.
    pub fn path(&self) -> String {
        self.0.display().to_string()
    }
}

impl Drop for PemFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Starts nginx with its access log off for an example, or says why it cannot and
/// exits with status 2.
pub fn start_or_exit() -> Nginx {
    Nginx::start_with(Options {
        access_log: false,
        ..Options::default()
    })
    .unwrap_or_else(|e| {
        eprintln!("cannot start nginx: {e}");
        std::process::exit(2);
    })
}

/// wrk's totals from its report: the request count (`N requests in ...`) and the
/// rate (`Requests/sec: R`).
pub fn wrk_totals(text: &str) -> (Option<u64>, Option<f64>) {
    let requests = text
        .lines()
        .find(|l| l.contains("requests in"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok());
    let rate = text
        .lines()
        .find(|l| l.starts_with("Requests/sec:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse().ok());
    (requests, rate)
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGKILL ends a stopped process too; continuing it first lets a test
        // that panicked mid-stall leave no stopped process behind even if the
        // kill below fails.
        let _ = Command::new("kill")
            .arg("-CONT")
            .arg(self.pid().to_string())
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
