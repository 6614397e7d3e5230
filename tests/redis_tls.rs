//! The `redis` driver's `rediss://` connections against a real redis-server
//! serving both plain TCP and TLS (its own certificate from a test CA), and
//! the gaps a demanding user would hit that the other redis tests do not
//! reach. Without redis-server (or one built without TLS) each test prints
//! `skipping: ...` and passes.
#![cfg(all(feature = "redis", not(loom)))]

mod support;

use paceline::{Control, Drivers, Engine, Outcome, ParamOverrides, Snapshot};
use std::io::{Read, Write};
use std::time::{Duration, Instant};

/// A redis-server listening on a plain port and a TLS port, with a leaf of
/// its own test CA; killed on drop.
struct BothRedis {
    child: std::process::Child,
    plain: u16,
    tls: u16,
    /// The CA's certificate, for `ca_file`.
    ca_file: std::path::PathBuf,
}

impl Drop for BothRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

impl BothRedis {
    /// Starts one, or says why it cannot (no redis-server, or one built
    /// without TLS).
    fn start(tag: &str) -> Result<Self, String> {
        Self::start_asking(tag, "no")
    }

    /// [`start`](Self::start) with redis-server's `tls-auth-clients` set to
    /// `auth_clients` (`yes`: a client certificate is required).
    fn start_asking(tag: &str, auth_clients: &str) -> Result<Self, String> {
        let bin = support::redis::binary()
            .map_err(|why| format!("redis-server not installed ({why})"))?;
        let ca = support::tls::TestCa::new();
        let leaf = ca.leaf(&["127.0.0.1", "localhost"]);
        let (cert, key, ca_file) = (
            support::bin::temp(&format!("rediss-{tag}.crt")),
            support::bin::temp(&format!("rediss-{tag}.key")),
            support::bin::temp(&format!("rediss-{tag}-ca.pem")),
        );
        std::fs::write(&cert, &leaf.cert_pem).unwrap();
        std::fs::write(&key, &leaf.key_pem).unwrap();
        std::fs::write(&ca_file, ca.pem()).unwrap();
        let (plain, tls) = (free_port(), free_port());
        let child = std::process::Command::new(bin)
            .args(["--port", &plain.to_string()])
            .args(["--tls-port", &tls.to_string()])
            .args(["--bind", "127.0.0.1"])
            .arg("--tls-cert-file")
            .arg(&cert)
            .arg("--tls-key-file")
            .arg(&key)
            // Client certificates asked for as `auth_clients` says; redis-server
            // wants a CA file to start TLS either way.
            .arg("--tls-ca-cert-file")
            .arg(&ca_file)
            .args(["--tls-auth-clients", auth_clients])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot run redis-server: {e}"))?;
        let server = BothRedis {
            child,
            plain,
            tls,
            ca_file,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", tls)).is_err()
            || !server.command(&["PING"]).is_ok_and(|r| r == "+PONG\r\n")
        {
            if Instant::now() > deadline {
                return Err("redis-server did not listen with TLS (built without it?)".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(server)
    }

    fn url(&self, tls: bool) -> String {
        match tls {
            true => format!("rediss://127.0.0.1:{}/0", self.tls),
            false => format!("redis://127.0.0.1:{}/0", self.plain),
        }
    }

    /// The params that reach it: its URL and, over TLS, its CA.
    fn params(&self, tls: bool) -> String {
        match tls {
            true => format!(
                "url: '{}', ca_file: '{}'",
                self.url(true),
                self.ca_file.display()
            ),
            false => format!("url: '{}'", self.url(false)),
        }
    }

    /// Sends one command on a fresh plain connection: the raw reply.
    fn command(&self, args: &[&str]) -> Result<String, String> {
        let mut s =
            std::net::TcpStream::connect(("127.0.0.1", self.plain)).map_err(|e| e.to_string())?;
        s.set_read_timeout(Some(Duration::from_secs(5)))
            .map_err(|e| e.to_string())?;
        let mut req = format!("*{}\r\n", args.len());
        for a in args {
            req.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        s.write_all(req.as_bytes()).map_err(|e| e.to_string())?;
        let mut out = Vec::new();
        let mut buf = [0u8; 8192];
        // One read may end mid-reply (a long CLIENT LIST): read until the
        // server has nothing more for a moment.
        loop {
            let n = s.read(&mut buf).map_err(|e| e.to_string())?;
            out.extend_from_slice(&buf[..n]);
            if n == 0 || reply_complete(&out) {
                break;
            }
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// The server's clients other than the one asking.
    fn clients(&self) -> Vec<String> {
        let list = self.command(&["CLIENT", "LIST"]).unwrap();
        list.lines()
            .filter(|l| l.contains("id=") && !l.contains("cmd=client"))
            .map(str::to_string)
            .collect()
    }
}

/// Whether `out` holds one whole RESP reply (a simple one, or a bulk string
/// of its stated length).
fn reply_complete(out: &[u8]) -> bool {
    let text = String::from_utf8_lossy(out);
    match text.strip_prefix('$') {
        Some(rest) => rest
            .split_once("\r\n")
            .is_some_and(|(len, body)| len.parse::<usize>().is_ok_and(|len| body.len() >= len + 2)),
        None => text.ends_with("\r\n"),
    }
}

fn start(yaml: &str) -> Control {
    let d = Drivers::builtin();
    let a = d
        .loader()
        .from_str(yaml, "r.yaml")
        .unwrap_or_else(|e| panic!("{e}\n{yaml}"));
    d.start(&Engine::new(), &a, &ParamOverrides::default())
        .unwrap_or_else(|e| panic!("{e}"))
}

fn run(yaml: &str) -> Snapshot {
    let run = start(yaml);
    assert_eq!(run.wait(), Outcome::Completed);
    run.snapshot()
}

fn totals(run: &Control) -> Snapshot {
    run.snapshot();
    run.totals()
}

/// Waits up to `secs` for `what` of the run's totals.
fn wait_for(run: &Control, secs: u64, what: &dyn Fn(&Snapshot) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !what(&totals(run)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        what(&totals(run)),
        "{:?}",
        totals(run).errors().collect::<Vec<_>>()
    );
}

/// A connection dropped after a timed-out blocking command closes its
/// socket, and with it the server's client, once the last clone of it is
/// dropped, on `redis://` and `rediss://` alike: after forty timeouts of
/// `BLPOP q 0` the server holds no more clients than the workers' live
/// connections. Two ops in flight per worker: the one still in flight on a
/// dropped connection keeps it until its own end (its kind `timeout`, as on
/// `redis://`, not `io`). The driver adds nothing for it: the `redis` crate
/// closes its sink with commands in flight from 1.2.1 on (Cargo.toml's
/// floor), and this guards against a crate that does not (up to 1.2.0 each
/// timeout left one server client behind until the server answered). It
/// passed before the rediss branch too, with the crate this project locks.
#[test]
fn a_timed_out_blocking_command_leaves_no_server_client_behind_on_rediss_as_on_redis() {
    let server = match BothRedis::start("timeout") {
        Ok(s) => s,
        Err(why) => return eprintln!("skipping: {why}"),
    };
    for tls in [false, true] {
        let threads = 2;
        let run = start(&format!(
            "params: {{driver: redis, {}, cycles: 1000000000, threads: {threads}, \
             concurrency: 4, rate: 50, timeout: 100ms, errors: count}}\n\
             ops: {{wait: 'BLPOP q 0'}}\n",
            server.params(tls)
        ));
        wait_for(&run, 60, &|t| t.errors_of("timeout") >= 40);
        // Per worker, its connection and at most one it has dropped that an
        // op still in flight holds (each op starts about 40 ms after the one
        // before it, and times out 100 ms after its start).
        let most = 2 * threads;
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut clients = server.clients();
        while clients.len() > most && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
            clients = server.clients();
        }
        let t = totals(&run);
        run.stop();
        run.wait();
        assert!(
            clients.len() <= most,
            "{} (tls {tls}): {} server clients for {threads} workers after {} timeouts:\n{}",
            server.url(tls),
            clients.len(),
            t.errors_of("timeout"),
            clients.join("\n")
        );
        let others: Vec<_> = t.errors().filter(|(k, _)| *k != "timeout").collect();
        assert!(others.is_empty(), "{others:?}");
        // Once the run has ended, none.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !server.clients().is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(server.clients(), Vec::<String>::new());
    }
}

/// Before, a connection the server closed while the worker waited for its
/// next slot (the server's `timeout` for idle clients, a proxy's idle
/// timeout, a restart between ops) still took the next command: it failed as
/// `io` without reaching the server (and a bare `retry:N` does not retry
/// `io`). Now the worker sees the connection's task has ended and opens a
/// new one first: every op of a run paced slower than the server's idle
/// timeout passes, on `redis://` and `rediss://` alike.
#[test]
fn a_connection_the_server_closed_while_idle_is_replaced_before_the_next_command() {
    let server = match BothRedis::start("idle") {
        Ok(s) => s,
        Err(why) => return eprintln!("skipping: {why}"),
    };
    // Idle clients are closed after 1 s (checked about every 100 ms); the
    // worker sends one command every 2.5 s.
    assert_eq!(
        server.command(&["CONFIG", "SET", "timeout", "1"]).unwrap(),
        "+OK\r\n"
    );
    for tls in [false, true] {
        let t = run(&format!(
            "params: {{driver: redis, {}, cycles: 3, threads: 1, rate: 0.4, \
             errors: count}}\nbindings: {{k: Identity()}}\n\
             ops: {{set: {{stmt: 'SET idle:{{k}} v', expect_reply: OK}}}}\n",
            server.params(tls)
        ));
        assert_eq!(
            (t.ops(), t.errors().collect::<Vec<_>>()),
            (3, vec![]),
            "{}",
            server.url(tls)
        );
    }
}

/// Before, an error reply without a code (a script's
/// `redis.error_reply('out of stock')`, answered as `-out of stock`) counted
/// under its first word (`out`): a kind no `errors=` rule can name, and one
/// more for each new first word. Now an error whose first word is not a code
/// (capitals, digits, `_`) counts as `ERR`; a module's own code stays its own.
#[test]
fn an_error_reply_without_a_code_counts_as_err_and_a_modules_code_as_itself() {
    let server = match BothRedis::start("codes") {
        Ok(s) => s,
        Err(why) => return eprintln!("skipping: {why}"),
    };
    let t = run(&format!(
        "params: {{driver: redis, {}, cycles: 4, errors: count, seq: concat}}\n\
         ops:\n  \
         plain: {{command: [EVAL, \"return redis.error_reply('out of stock')\", '0']}}\n  \
         number: {{command: [EVAL, \"return redis.error_reply('5 left')\", '0']}}\n  \
         module: {{command: [EVAL, \"return redis.error_reply('MYMOD_2 broke')\", '0']}}\n  \
         server: {{command: [EVAL, \"return redis.error_reply('WRONGTYPE no')\", '0']}}\n",
        server.params(false)
    ));
    let mut kinds: Vec<(String, u64)> = t.errors().map(|(k, n)| (k.to_string(), n)).collect();
    kinds.sort();
    assert_eq!(
        kinds,
        [
            ("ERR".to_string(), 2),
            ("MYMOD_2".to_string(), 1),
            ("WRONGTYPE".to_string(), 1)
        ]
    );
}

/// Before, `expect_reply` read a RESP3 reply (`?protocol=resp3` in the URL)
/// that RESP2 has no type for as its debug form (`map([(bulk-string(...`):
/// no check written as the docs say could pass. Now a map reads as
/// `{f: v, ...}`, a verbatim string (`INFO`) as its text, a double as its
/// number, as the same replies read over RESP2 where they have a form there.
#[test]
fn resp3_replies_read_as_text_for_expect_reply() {
    let server = match BothRedis::start("resp3") {
        Ok(s) => s,
        Err(why) => return eprintln!("skipping: {why}"),
    };
    server.command(&["HSET", "h", "f", "v"]).unwrap();
    server.command(&["ZADD", "z", "1.5", "m"]).unwrap();
    for tls in [false, true] {
        let params = server.params(tls).replace("/0'", "/0?protocol=resp3'");
        let t = run(&format!(
            "params: {{driver: redis, {params}, cycles: 3, errors: count, seq: concat}}\n\
             ops:\n  \
             map: {{stmt: 'HGETALL h', expect_reply: '{{f: v}}'}}\n  \
             info: {{stmt: 'INFO server', expect_reply: '/^# Server\\r\\nredis_version:/'}}\n  \
             double: {{stmt: 'ZSCORE z m', expect_reply: '1.5'}}\n"
        ));
        assert_eq!(
            (t.ops(), t.errors().collect::<Vec<_>>()),
            (3, vec![]),
            "{params}"
        );
    }
}

/// Audit p17 L2: a server that requires a client certificate (redis-server's
/// `tls-auth-clients yes`; over TLS 1.3 it refuses the client with the alert
/// `CertificateRequired` after the handshake) was reported as "cannot reach
/// Redis ... start redis-server there or fix HOST:PORT". Now the start is
/// refused saying what the server asked for and the fix.
#[test]
fn a_server_requiring_a_client_certificate_is_named_with_the_fix() {
    let server = match BothRedis::start_asking("certreq", "yes") {
        Ok(s) => s,
        Err(why) => return eprintln!("skipping: {why}"),
    };
    let yaml = format!(
        "params: {{driver: redis, {}, cycles: 3}}\nops: {{ping: PING}}\n",
        server.params(true)
    );
    let d = Drivers::builtin();
    let a = d.loader().from_str(&yaml, "r.yaml").unwrap();
    let Err(e) = d.start(&Engine::new(), &a, &ParamOverrides::default()) else {
        panic!("a server requiring a client certificate was reached");
    };
    let e = e.to_string();
    assert!(!e.contains("start redis-server there"), "{e}");
    assert!(
        e.contains("requires a client certificate")
            && e.contains("`tls-auth-clients no` or `optional`"),
        "{e}"
    );
}

/// Audit p17 M3: `expect_reply` written as a YAML list was read as its JSON
/// text (`["nil","nil"]`) and every op failed `check`. Now it matches an
/// array reply element by element, over RESP2 and RESP3, on `redis://` and
/// `rediss://`: nil elements, a flat `ZRANGE ... WITHSCORES` (RESP2) and its
/// pairs (RESP3), a set in any order over RESP3.
#[test]
fn a_list_expect_reply_matches_array_replies_over_resp2_and_resp3() {
    let server = match BothRedis::start("lists") {
        Ok(s) => s,
        Err(why) => return eprintln!("skipping: {why}"),
    };
    server.command(&["SADD", "s", "b", "a"]).unwrap();
    server.command(&["ZADD", "z", "0.5", "m"]).unwrap();
    for (tls, resp3) in [(false, false), (true, false), (false, true), (true, true)] {
        let mut params = server.params(tls);
        let zrange = if resp3 {
            params = params.replace("/0'", "/0?protocol=resp3'");
            // Each member with its score, as a pair; the set in any order.
            "[[m, 0.5]]}\n  smembers: {stmt: 'SMEMBERS s', expect_reply: [a, b]"
        } else {
            "[m, '0.5']}\n  smembers: {stmt: 'SMEMBERS s', expect_reply: [not-nil, '/^[ab]$/']"
        };
        let t = run(&format!(
            "params: {{driver: redis, {params}, cycles: 3, errors: count, seq: concat}}\n\
             ops:\n  \
             mget: {{command: [MGET, nokey1, nokey2], expect_reply: [nil, ~]}}\n  \
             zr: {{stmt: 'ZRANGE z 0 -1 WITHSCORES', expect_reply: {zrange}}}\n"
        ));
        assert_eq!(
            (t.ops(), t.errors().collect::<Vec<_>>()),
            (3, vec![]),
            "{params}"
        );
    }
    // A list that does not match says which element.
    let t = run(&format!(
        "params: {{driver: redis, {}, cycles: 1, errors: count}}\n\
         ops: {{mget: {{command: [MGET, nokey1, nokey2], expect_reply: [nil, not-nil]}}}}\n",
        server.params(false)
    ));
    assert_eq!(t.errors().collect::<Vec<_>>(), [("check", 1)]);
}
