//! The `redis` driver's failure paths against a real redis-server
//! (`tests/support/redis.rs`; without it each test prints `skipping: ...` and
//! passes): bad input at exit 2 through the binary, each `expect_reply` form
//! failing what it does not admit, and one reconnect per worker after a lost
//! connection (audit p15, L2, L5, L8).
#![cfg(all(feature = "redis", not(loom)))]

mod support;

use paceline::Snapshot;
use std::time::Duration;
use support::drive;
use support::redis::{RedisServer, server};
use support::redis_run::run;

/// Audit p15, L8: a bad Redis input through the real binary exits 2 with the
/// fix, and never prints the password.
#[test]
fn a_bad_redis_url_or_an_unreachable_server_exits_2_with_the_fix_and_hides_the_password() {
    let yaml = support::bin::write_temp(
        "redis-bad.yaml",
        "params: {driver: redis}\nops: {o: PING}\n",
    );
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let cases = [
        (
            format!("url=redis://:pa/ss@127.0.0.1:{port}/0"),
            "write redis://[:PASSWORD@]HOST:PORT/DB",
            "pa/ss",
        ),
        (
            format!("url=redis://:s3cr%2Fet@127.0.0.1:{port}/0"),
            "start redis-server there or fix HOST:PORT",
            "s3cr",
        ),
        (
            format!("url=redis://:s3cret@127.0.0.1:{port}/x"),
            "write redis://[:PASSWORD@]HOST:PORT/DB",
            "s3cret",
        ),
    ];
    for (url, fix, secret) in cases {
        let out = support::bin::run(&["run", &yaml, &url, "connect_timeout=2s"]);
        let err = support::bin::text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{url}: {err}");
        assert!(err.contains(fix), "{url}: {err}");
        assert!(err.contains("***@127.0.0.1"), "{url}: {err}");
        assert!(!err.contains(secret), "{url}: {err}");
        assert!(!err.contains("panicked"), "{url}: {err}");
    }
}

/// Runs `stmt` with `expect_reply: expect` for `cycles` (keys `k` in
/// `Mod(keys)`, errors counted): the `check` errors.
fn check_errors(r: &RedisServer, op: &str, cycles: u64, keys: u64) -> u64 {
    let t = run(
        &r.url(),
        &format!(
            "params: {{driver: redis, url: 'URL', cycles: {cycles}, errors: count}}\n\
             bindings: {{k: Mod({keys})}}\nops:\n  o: {op}\n"
        ),
    );
    assert_eq!(t.ops(), cycles);
    let others: Vec<_> = t.errors().filter(|(k, _)| *k != "check").collect();
    assert!(others.is_empty(), "{op}: {others:?}");
    t.errors_of("check")
}

/// Audit p15, L2: each `expect_reply` form fails a reply it does not admit
/// (before, only passing cases were run, so a check that admitted every reply
/// went unnoticed), the `{regex: ...}` form, and array replies.
#[test]
fn each_reply_check_fails_the_replies_it_does_not_admit() {
    let Some(r) = server() else { return };
    for k in ["n:0", "n:1"] {
        r.command(&["SET", k, "a"]).unwrap();
    }
    r.command(&["SET", "n:2", "b"]).unwrap();
    let cases: &[(&str, u64, u64, u64)] = &[
        // nil: fails every present key, passes every missing one.
        ("{stmt: 'GET n:{k}', expect_reply: nil}", 6, 3, 6),
        ("{stmt: 'GET none:{k}', expect_reply: nil}", 6, 3, 0),
        // not-nil: the other way round.
        ("{stmt: 'GET none:{k}', expect_reply: not-nil}", 6, 3, 6),
        ("{stmt: 'GET n:{k}', expect_reply: not-nil}", 6, 3, 0),
        // A value: equal passes; another value or nil fails.
        ("{stmt: 'GET n:{k}', expect_reply: a}", 6, 3, 2),
        ("{stmt: 'GET none:{k}', expect_reply: a}", 4, 2, 4),
        // The first pass of INCR over 5 keys replies 1, the second 2.
        ("{command: [INCR, 'c:{k}'], expect_reply: '2'}", 10, 5, 5),
        ("{command: [INCR, 'd:{k}'], expect_reply: 2}", 5, 5, 5),
        // {regex: ...} and /.../ (anywhere in the reply, unless anchored).
        ("{stmt: 'GET n:{k}', expect_reply: {regex: '^b$'}}", 6, 3, 4),
        (
            "{stmt: 'GET n:{k}', expect_reply: {regex: '[ab]'}}",
            6,
            3,
            0,
        ),
        ("{stmt: 'GET n:{k}', expect_reply: '/z/'}", 3, 3, 3),
        (
            "{stmt: 'GET none:{k}', expect_reply: {regex: '.*'}}",
            3,
            3,
            3,
        ),
        // Arrays read as `[a, b, nil]`.
        (
            "{stmt: 'MGET n:0 n:2 none', expect_reply: '[a, b, nil]'}",
            4,
            1,
            0,
        ),
        (
            "{stmt: 'MGET n:0 n:2 none', expect_reply: '[a, b, c]'}",
            4,
            1,
            4,
        ),
        (
            "{stmt: 'MGET n:0 none', expect_reply: '/^\\[a, nil\\]$/'}",
            3,
            1,
            0,
        ),
        (
            "{stmt: 'MGET n:{k} none', expect_reply: '[b, nil]'}",
            3,
            3,
            2,
        ),
        (
            "{command: [LRANGE, empty, '0', '-1'], expect_reply: '[]'}",
            2,
            1,
            0,
        ),
        (
            "{command: [LRANGE, empty, '0', '-1'], expect_reply: nil}",
            2,
            1,
            2,
        ),
    ];
    for &(op, cycles, keys, want) in cases {
        assert_eq!(check_errors(&r, op, cycles, keys), want, "{op}");
    }
}

/// Audit p15, L5: after a lost connection, every op that started while the
/// worker's connection was being reopened opened its own connection. Now one
/// connect runs per worker and the others wait for it: after a restart
/// mid-run, and after every worker's connection is killed while the server
/// holds each new connection's set-up for a second (`CLIENT PAUSE`), the
/// server has received one connection per worker.
#[test]
fn after_a_lost_connection_each_worker_reconnects_once_and_its_other_ops_wait() {
    let Some(mut r) = server() else { return };
    let run = drive::start(
        "reconnect.yaml",
        "params: {driver: redis, url: 'URL', cycles: 100000000, threads: 2, \
         concurrency: 50, rate: 4000, errors: count, connect_timeout: 10s, \
         timeout: 10s}\nbindings: {k: Identity()}\nops: {o: 'SET k:{k} v'}",
        &r.url(),
    );
    let totals = drive::totals;
    let wait_for = |what: &dyn Fn(&Snapshot) -> bool| {
        assert!(
            drive::wait_for(&run, Duration::from_secs(30), what),
            "{:?}",
            totals(&run).errors().collect::<Vec<_>>()
        );
    };
    // The workers' live connections: those that ran a SET.
    let workers = |r: &RedisServer| {
        let list = r.command(&["CLIENT", "LIST"]).unwrap();
        list.lines().filter(|l| l.contains("cmd=set")).count()
    };
    let received = |r: &RedisServer| {
        let info = r.command(&["INFO", "stats"]).unwrap();
        info.lines()
            .find_map(|l| l.strip_prefix("total_connections_received:"))
            .and_then(|n| n.trim().parse::<u64>().ok())
            .unwrap_or_else(|| panic!("{info}"))
    };
    wait_for(&|t| t.ops() >= 200);
    r.stop();
    let lost = |t: &Snapshot| t.errors_of("io") + t.errors_of("connect");
    wait_for(&|t| lost(t) >= 10);
    r.start_again().expect("redis-server starts again");
    let ok = totals(&run).ops() - lost(&totals(&run));
    wait_for(&|t| t.ops() - lost(t) >= ok + 500);
    assert!(
        workers(&r) <= 2,
        "{}",
        r.command(&["CLIENT", "LIST"]).unwrap()
    );
    // Kill both workers' connections and hold every new one's set-up (the
    // crate's `CLIENT SETINFO`) for a second: at 2000/s per worker, dozens of
    // ops start while each worker reconnects.
    let before = received(&r);
    let resp = |args: &[&str]| {
        let mut m = format!("*{}\r\n", args.len());
        for a in args {
            m.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        m
    };
    let mut s = std::net::TcpStream::connect(("127.0.0.1", r.port())).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let kill = resp(&["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"]);
    let pause = resp(&["CLIENT", "PAUSE", "1000", "ALL"]);
    std::io::Write::write_all(&mut s, format!("{kill}{pause}").as_bytes()).unwrap();
    let mut replies = String::new();
    let mut buf = [0u8; 256];
    while !replies.contains("+OK") {
        let n = std::io::Read::read(&mut s, &mut buf).expect("redis answers");
        assert!(n > 0, "closed after {replies:?}");
        replies.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    assert!(replies.starts_with(':'), "{replies}");
    drop(s);
    let connect_before = totals(&run).errors_of("connect");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let ok = totals(&run).ops() - lost(&totals(&run));
    wait_for(&|t| t.ops() - lost(t) >= ok + 500);
    // New connections: the workers', this probe's and the next INFO's.
    let opened = received(&r) - before - 2;
    run.stop();
    run.wait();
    assert!(
        (1..=2).contains(&opened),
        "{opened} connections for 2 workers"
    );
    // The ops that waited for the reconnect took its connection: none failed
    // to connect.
    let t = totals(&run);
    assert_eq!(
        t.errors_of("connect"),
        connect_before,
        "{:?}",
        t.errors().collect::<Vec<_>>()
    );
}
