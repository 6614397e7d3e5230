//! The `redis` driver against a real redis-server on a loopback port
//! (`tests/support/redis.rs`); without redis-server each test prints
//! `skipping: ...` and passes.
#![cfg(all(feature = "redis", not(loom)))]

mod support;

use paceline::{Drivers, Engine, Outcome, ParamOverrides, Snapshot, StartError};
use support::redis::RedisServer;

fn server() -> Option<RedisServer> {
    if let Err(why) = support::redis::binary() {
        eprintln!("skipping: redis-server not installed ({why})");
        return None;
    }
    Some(RedisServer::start().expect("redis-server is installed and must start"))
}

fn run(url: &str, yaml: &str) -> Snapshot {
    let d = Drivers::builtin();
    let a = d
        .loader()
        .from_str(&yaml.replace("URL", url), "r.yaml")
        .unwrap_or_else(|e| panic!("{e}"));
    let run = d
        .start(&Engine::new(), &a, &ParamOverrides::default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(run.wait(), Outcome::Completed);
    run.snapshot()
}

fn refused(url: &str, yaml: &str) -> String {
    let d = Drivers::builtin();
    let a = d
        .loader()
        .from_str(&yaml.replace("URL", url), "r.yaml")
        .unwrap();
    match d.start(&Engine::new(), &a, &ParamOverrides::default()) {
        Err(e @ StartError::Driver(_)) => e.to_string(),
        Err(e) => panic!("refused for another reason: {e}"),
        Ok(_) => panic!("started"),
    }
}

/// `GET key` on a fresh connection, as the raw reply.
fn get(r: &RedisServer, key: &str) -> String {
    r.command(&["GET", key]).expect("redis answers")
}

#[test]
fn a_paced_run_sets_exactly_its_cycles_and_values_with_spaces_stay_one_argument() {
    let Some(r) = server() else { return };
    let t = run(
        &r.url(),
        "params: {driver: redis, url: 'URL', cycles: 700, threads: 3, rate: 2000}\n\
         bindings: {k: Identity(), v: \"Template('value of {}', Identity())\"}\n\
         ops: {put: 'SET key:{k} {v}'}",
    );
    assert_eq!(t.ops(), 700);
    assert_eq!(
        t.errors().count(),
        0,
        "{:?}",
        t.errors().collect::<Vec<_>>()
    );
    assert_eq!(r.integer(&["DBSIZE"]), 700);
    assert_eq!(get(&r, "key:41"), "$11\r\nvalue of 41\r\n");
}

#[test]
fn command_lists_and_reply_checks() {
    let Some(r) = server() else { return };
    let t = run(
        &r.url(),
        "params: {driver: redis, url: 'URL', cycles: 20, errors: count}\n\
         bindings: {k: Mod(10)}\n\
         ops:\n  incr: {command: [INCR, 'n:{k}'], expect_reply: '/^1$/'}",
    );
    // The second pass over keys 0..10 replies 2.
    assert_eq!(t.errors_of("check"), 10);
    let t = run(
        &r.url(),
        "params: {driver: redis, url: 'URL', cycles: 4, errors: count}\n\
         bindings: {k: Mod(2)}\n\
         ops:\n  miss: {stmt: 'GET none:{k}', expect_reply: nil}\n  hit: {stmt: 'GET n:{k}', expect_reply: not-nil}\n",
    );
    assert_eq!(
        t.errors().count(),
        0,
        "{:?}",
        t.errors().collect::<Vec<_>>()
    );
}

#[test]
fn server_errors_count_under_their_kind() {
    let Some(r) = server() else { return };
    r.command(&["LPUSH", "list", "x"]).unwrap();
    let t = run(
        &r.url(),
        "params: {driver: redis, url: 'URL', cycles: 3, errors: count}\nops: {bad: 'GET list'}",
    );
    assert_eq!(t.errors_of("WRONGTYPE"), 3);
}

#[test]
fn an_unreachable_server_or_a_refused_password_stops_the_start_with_the_fix() {
    let Some(mut r) = server() else { return };
    let yaml = "params: {driver: redis, url: 'URL'}\nops: {o: PING}";
    r.command(&["CONFIG", "SET", "requirepass", "s3cret"])
        .unwrap();
    let msg = refused(&r.url(), yaml);
    assert!(msg.contains("refused the password (NOAUTH"), "{msg}");
    let wrong = format!("redis://:wrong@127.0.0.1:{}/0", r.port());
    let msg = refused(&wrong, yaml);
    assert!(msg.contains("redis://:***@127.0.0.1"), "{msg}");
    assert!(!msg.contains("wrong"), "{msg}");
    let right = format!("redis://:s3cret@127.0.0.1:{}/0", r.port());
    assert_eq!(
        run(
            &right,
            "params: {driver: redis, url: 'URL', cycles: 5}\nops: {o: PING}"
        )
        .ops(),
        5
    );
    r.stop();
    let msg = refused(&right, yaml);
    assert!(
        msg.contains("cannot reach Redis at redis://:***@127.0.0.1"),
        "{msg}"
    );
}

#[test]
fn a_server_lost_mid_run_is_counted_per_op_and_the_next_op_reconnects() {
    let Some(mut r) = server() else { return };
    let d = Drivers::builtin();
    let a = d
        .loader()
        .from_str(
            &format!(
                "params: {{driver: redis, url: '{}', cycles: 1000000, rate: 500, errors: count, \
                 connect_timeout: 1s, timeout: 2s}}\nbindings: {{k: Identity()}}\nops: {{o: 'SET k:{{k}} v'}}",
                r.url()
            ),
            "lost.yaml",
        )
        .unwrap();
    let run = d
        .start(&Engine::new(), &a, &ParamOverrides::default())
        .unwrap();
    // `snapshot` takes what happened since the last one; `totals` sums them.
    let totals = |run: &paceline::Control| {
        run.snapshot();
        run.totals()
    };
    let wait_for = |what: &dyn Fn(&Snapshot) -> bool| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while !what(&totals(&run)) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    };
    wait_for(&|t| t.ops() >= 20);
    r.stop();
    let lost = |t: &Snapshot| t.errors_of("io") + t.errors_of("connect");
    wait_for(&|t| lost(t) >= 10);
    let failed = lost(&totals(&run));
    assert!(
        failed >= 10,
        "{:?}",
        totals(&run).errors().collect::<Vec<_>>()
    );
    r.start_again().expect("redis-server starts again");
    // Ops succeed again: the keys come back.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while r.integer(&["DBSIZE"]) < 20 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    run.stop();
    run.wait();
    assert!(r.integer(&["DBSIZE"]) >= 20);
}

#[test]
fn the_bundled_redis_keyvalue_runs_with_one_command() {
    let Some(r) = server() else { return };
    // A key of someone else's survives the schema step.
    r.command(&["SET", "other", "x"]).unwrap();
    let url = format!("url={}", r.url());
    let out = support::bin::run(&[
        "run",
        "redis-keyvalue",
        &url,
        "keycount=300",
        "main_cycles=400",
        "threads=2",
        "rampup_rate=3000",
        "rate=3000",
        "--no-progress",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        support::bin::text(&out.stderr)
    );
    assert_eq!(r.integer(&["DBSIZE"]), 301);
    // Run again: the schema step clears the last run's keys first.
    let again = support::bin::run(&[
        "run",
        "redis-keyvalue",
        &url,
        "keycount=100",
        "main_cycles=10",
        "--no-progress",
    ]);
    assert_eq!(
        again.status.code(),
        Some(0),
        "{}",
        support::bin::text(&again.stderr)
    );
    assert_eq!(r.integer(&["DBSIZE"]), 101);
}

#[test]
fn rediss_runs_over_tls_trusting_ca_file() {
    let bin = match support::redis::binary() {
        Ok(b) => b,
        Err(why) => return eprintln!("skipping: redis-server not installed ({why})"),
    };
    let ca = support::tls::TestCa::new();
    let leaf = ca.leaf(&["127.0.0.1", "localhost"]);
    let (cert, key, ca_file) = (
        support::bin::temp("redis-tls.crt"),
        support::bin::temp("redis-tls.key"),
        support::bin::temp("redis-ca.pem"),
    );
    std::fs::write(&cert, &leaf.cert_pem).unwrap();
    std::fs::write(&key, &leaf.key_pem).unwrap();
    std::fs::write(&ca_file, ca.pem()).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = std::process::Command::new(bin)
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
        .arg("--tls-ca-cert-file")
        .arg(&ca_file)
        .args([
            "--tls-auth-clients",
            "no",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return eprintln!("skipping: redis-server did not listen with TLS (built without it?)");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let url = format!("rediss://127.0.0.1:{port}/0");
    let t = run(
        &url,
        &format!(
            "params: {{driver: redis, url: 'URL', cycles: 30, ca_file: '{}'}}\n\
             bindings: {{k: Identity()}}\nops: {{o: {{stmt: 'SET k:{{k}} v', expect_reply: OK}}}}",
            ca_file.display()
        ),
    );
    assert_eq!(
        (t.ops(), t.errors().count()),
        (30, 0),
        "{:?}",
        t.errors().collect::<Vec<_>>()
    );
    // Without the CA the platform's roots do not know the server.
    let msg = refused(&url, "params: {driver: redis, url: 'URL'}\nops: {o: PING}");
    assert!(msg.contains("rediss://127.0.0.1"), "{msg}");
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn on_the_async_runner_commands_in_flight_share_each_workers_connection() {
    let Some(r) = server() else { return };
    let t = run(
        &r.url(),
        "params: {driver: redis, url: 'URL', cycles: 2000, threads: 2, concurrency: 50, rate: 20000}\n\
         bindings: {k: Identity()}\nops: {put: {stmt: 'SET k:{k} {k}', expect_reply: OK}}",
    );
    assert_eq!(
        (t.ops(), t.errors().count()),
        (2000, 0),
        "{:?}",
        t.errors().collect::<Vec<_>>()
    );
    assert_eq!(r.integer(&["DBSIZE"]), 2000);
    // Two workers, one multiplexed connection each (and this one asking).
    let clients = r.command(&["CLIENT", "LIST"]).unwrap();
    assert!(
        clients.lines().filter(|l| l.contains("cmd=")).count() <= 3,
        "{clients}"
    );
}
