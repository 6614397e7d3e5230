//! The async pool against a real redis-server (tests/support/redis.rs), on a
//! current_thread runtime with many commands in flight on one connection;
//! and the hot path's pieces (`run.rs`) without one.

use super::run::{RedisAsync, reply_text};
use super::{Pool, Shared, shared};
use crate::activity::drivers::OpPlan;
use crate::sync::threads::Arc;
use std::borrow::Cow;
use std::rc::Rc;

#[path = "../../../../tests/support/redis.rs"]
mod redis_support;

fn plan(yaml: &str) -> Arc<OpPlan> {
    let a = crate::Drivers::builtin()
        .loader()
        .from_str(yaml, "r.yaml")
        .unwrap_or_else(|e| panic!("{e}\n{yaml}"));
    Arc::new(OpPlan::new(&a, &Default::default()))
}

fn shared_of(yaml: &str) -> Shared {
    shared(plan(yaml)).unwrap_or_else(|e| panic!("{e}"))
}

fn packed(cmd: &redis::Cmd) -> String {
    String::from_utf8(cmd.get_packed_command()).unwrap()
}

#[test]
fn commands_in_flight_share_one_multiplexed_connection() {
    let Some(server) = redis_support::server() else {
        return;
    };
    let shared = shared_of(&format!(
        "params: {{driver: redis, url: '{}', cycles: 200}}\nbindings: {{k: Mod(100)}}\n\
         ops: {{incr: {{stmt: 'INCR n:{{k}}', expect_reply: '/^[12]$/'}}}}",
        server.url()
    ));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    let errors = local.block_on(&rt, async move {
        let pool = Rc::new(Pool::open(Arc::new(shared), None).await.unwrap());
        let tasks: Vec<_> = (0..200u64)
            .map(|c| {
                let pool = pool.clone();
                tokio::task::spawn_local(async move { pool.run(c).await })
            })
            .collect();
        let mut errors = 0;
        for t in tasks {
            errors += usize::from(t.await.unwrap().is_err());
        }
        errors
    });
    assert_eq!(errors, 0);
    assert_eq!(server.command(&["GET", "n:42"]).unwrap(), "$1\r\n2\r\n");
    assert_eq!(server.integer(&["DBSIZE"]), 100);
}

/// Regression (issue 22, redis paced at 80 %): the crate leaves TCP_NODELAY
/// off, so a paced run's lone commands could wait on Nagle for the server's
/// ACK; `redis://` connections now set it (no server needed to see it).
#[test]
fn plain_connections_set_tcp_nodelay() {
    let shared =
        shared_of("params: {driver: redis, url: 'redis://127.0.0.1:1/0'}\nops: {get: 'GET k'}");
    assert!(shared.client.get_connection_info().tcp_settings().nodelay());
}

/// An op whose words are all fixed text (`command:` literals too) has its
/// command built once at load, the same words as one built per op; an op
/// with a binding has none.
#[test]
fn a_fixed_command_is_built_once_and_sends_the_same_words() {
    let shared = Arc::new(shared_of(
        "params: {driver: redis, url: 'redis://127.0.0.1:1/0'}\nbindings: {k: Mod(10)}\n\
         ops:\n  fixed: 'SET  key:__rand_int__   xxx'\n  list: {command: [HSET, h, f, 1]}\n  \
         bound: 'GET key:{k}'\n",
    ));
    let fixed = shared.fixed[0].as_ref().expect("built at load");
    assert_eq!(
        packed(fixed),
        "*3\r\n$3\r\nSET\r\n$16\r\nkey:__rand_int__\r\n$3\r\nxxx\r\n"
    );
    let list = shared.fixed[1].as_ref().expect("built at load");
    assert_eq!(
        packed(list),
        "*4\r\n$4\r\nHSET\r\n$1\r\nh\r\n$1\r\nf\r\n$1\r\n1\r\n"
    );
    assert!(shared.fixed[2].is_none());
    // The per-op builder makes the same bytes for the fixed ops.
    let pool = Pool::unopened(shared.clone());
    for i in 0..2 {
        assert_eq!(
            packed(&pool.command(&shared.ops[i], 7)),
            packed(shared.fixed[i].as_ref().unwrap())
        );
    }
}

/// A command built in a spare (an ended op's, its buffers kept) holds this
/// op's words only, a bound value with spaces as one argument.
#[test]
fn a_reused_command_holds_only_this_ops_words() {
    let shared = Arc::new(shared_of(
        "params: {driver: redis, url: 'redis://127.0.0.1:1/0'}\n\
         bindings: {k: Mod(100), v: \"Identity(); Template('a value with spaces {}')\"}\n\
         ops:\n  set: 'SET key:{k} {v}'\n  get: 'GET key:{k}'\n",
    ));
    let pool = Pool::unopened(shared.clone());
    let set = pool.command(&shared.ops[0], 42);
    assert_eq!(
        packed(&set),
        "*3\r\n$3\r\nSET\r\n$6\r\nkey:42\r\n$22\r\na value with spaces 42\r\n"
    );
    pool.give_back(set);
    let get = pool.command(&shared.ops[1], 7);
    assert_eq!(packed(&get), "*2\r\n$3\r\nGET\r\n$5\r\nkey:7\r\n");
}

#[test]
fn reply_text_borrows_what_it_can_and_reads_as_before() {
    use redis::Value as V;
    let bulk = V::BulkString(b"xxx".to_vec());
    assert!(matches!(reply_text(&bulk), Some(Cow::Borrowed("xxx"))));
    assert!(matches!(reply_text(&V::Okay), Some(Cow::Borrowed("OK"))));
    let status = V::SimpleString("PONG".into());
    assert!(matches!(reply_text(&status), Some(Cow::Borrowed("PONG"))));
    assert_eq!(reply_text(&V::Nil), None);
    assert_eq!(reply_text(&V::Int(-3)).as_deref(), Some("-3"));
    assert_eq!(
        reply_text(&V::BulkString(vec![b'a', 0xff])).as_deref(),
        Some("a\u{fffd}")
    );
    let arr = V::Array(vec![V::BulkString(b"a".to_vec()), V::Nil, V::Int(2)]);
    assert_eq!(reply_text(&arr).as_deref(), Some("[a, nil, 2]"));
    // RESP3's own types (tests/redis_tls.rs runs them against a server).
    let map = V::Map(vec![
        (V::BulkString(b"f".to_vec()), V::BulkString(b"v".to_vec())),
        (V::SimpleString("g".into()), V::Nil),
    ]);
    assert_eq!(reply_text(&map).as_deref(), Some("{f: v, g: nil}"));
    let verbatim = V::VerbatimString {
        format: redis::VerbatimFormat::Text,
        text: "# Server".into(),
    };
    assert!(matches!(
        reply_text(&verbatim),
        Some(Cow::Borrowed("# Server"))
    ));
    assert_eq!(reply_text(&V::Double(1.5)).as_deref(), Some("1.5"));
    // Review A, finding 6: Rust's Display wrote `1000000000000000000000` and
    // `NaN` where RESP2 reads `1e+21` and `nan`.
    for (d, text) in [
        (1e21, "1e+21"),
        (-2.5e-7, "-2.5e-07"),
        (1e17, "1e+17"),
        (1e16, "10000000000000000"),
        (0.0001, "0.0001"),
        (3.0, "3"),
        (-0.0, "-0"),
        (f64::NAN, "nan"),
        (f64::INFINITY, "inf"),
        (f64::NEG_INFINITY, "-inf"),
    ] {
        assert_eq!(reply_text(&V::Double(d)).as_deref(), Some(text), "{d:?}");
    }
    let big = V::BigNumber(b"12345678901234567890".to_vec());
    assert_eq!(reply_text(&big).as_deref(), Some("12345678901234567890"));
    let attr = V::Attribute {
        data: Box::new(V::Okay),
        attributes: vec![],
    };
    assert_eq!(reply_text(&attr).as_deref(), Some("OK"));
}

/// An op's future is allocated whole at each start: past the allocator's
/// per-thread cache (1,032 bytes in glibc) it takes the slow path, and it is
/// copied into its box. The reconnect, which most ops never reach, is boxed.
#[test]
fn an_ops_future_fits_the_allocators_thread_cache() {
    use crate::engine::AsyncOpRunner;
    let shared = shared_of(
        "params: {driver: redis, url: 'redis://127.0.0.1:1/0'}\nbindings: {k: Mod(10)}\n\
         ops: {get: {stmt: 'GET k:{k}', expect_reply: not-nil}}",
    );
    let runner = RedisAsync(Rc::new(Pool::unopened(Arc::new(shared))));
    let op = runner.start(0);
    let size = std::mem::size_of_val(&*op);
    eprintln!("op future: {size} bytes");
    assert!(
        size <= 1_032,
        "an op's future is {size} bytes (a debug build's; the limit is the allocator's \
         thread-cache class): box the new await point, as run.rs's reconnect is"
    );
}

/// The id of the server's client blocked in `BLPOP`, if one is.
fn blocked_client(server: &redis_support::RedisServer) -> Option<String> {
    let list = server.command(&["CLIENT", "LIST"]).unwrap();
    list.lines()
        .find(|l| l.contains(" cmd=blpop"))
        .and_then(|l| l.split(' ').find_map(|f| f.strip_prefix("id=")))
        .map(|id| {
            id.trim_start_matches(|c: char| !c.is_ascii_digit())
                .to_string()
        })
}

/// Regression (session 15): an op that ran on a connection another op has
/// since replaced (the old one broke, the next op reconnected) put its old,
/// broken connection back as the worker's when it ended, and the op after it
/// failed on it. Now only an op on the current connection drops it. The late
/// op runs through the op path: it is blocked in `BLPOP` on the first
/// connection, the worker moves to a second, then the server kills the first
/// and the op fails on it.
#[test]
fn a_late_op_on_a_replaced_connection_leaves_the_new_one() {
    let Some(server) = redis_support::server() else {
        return;
    };
    let shared = shared_of(&format!(
        "params: {{driver: redis, url: '{}', timeout: 20s, seq: concat}}\n\
         ops:\n  slow: 'BLPOP empty 10'\n  ping: {{stmt: PING, expect_reply: PONG}}\n",
        server.url()
    ));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        let pool = Rc::new(Pool::open(Arc::new(shared), None).await.unwrap());
        let (_, first) = pool.connection().await.unwrap();
        let p = pool.clone();
        let late = tokio::task::spawn_local(async move { p.run(0).await });
        let mut id = None;
        for _ in 0..500 {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            id = blocked_client(&server);
            if id.is_some() {
                break;
            }
        }
        let id = id.expect("the BLPOP reached the server");
        // Another op found the first connection broken and dropped it; the
        // next one reconnects.
        pool.drop_connection(first);
        assert!(pool.run(1).await.is_ok());
        let (mut con, fresh) = pool.connection().await.unwrap();
        assert!(fresh > first);
        let fresh_id: i64 = redis::cmd("CLIENT")
            .arg("ID")
            .query_async(&mut con.con)
            .await
            .unwrap();
        drop(con);
        // The late op's connection dies under it: it fails through `op()`.
        server.command(&["CLIENT", "KILL", "ID", &id]).unwrap();
        let err = late.await.unwrap().expect_err("the killed BLPOP failed");
        eprintln!("the late op failed: {} ({err})", err.kind());
        assert_ne!(err.kind(), "timeout");
        let (mut con, now) = pool.connection().await.unwrap();
        let now_id: i64 = redis::cmd("CLIENT")
            .arg("ID")
            .query_async(&mut con.con)
            .await
            .unwrap();
        assert_eq!(
            (now_id, now),
            (fresh_id, fresh),
            "the late op dropped the new connection (the worker reconnected)"
        );
        assert!(pool.run(1).await.is_ok());
    });
}

/// Pins "no tokio timer per op on a real clock": with a book of deadlines
/// the connection gets no response timeout from the crate (both would arm a
/// timer at every op, and both end as `timeout`, so only this sees it); on a
/// clock that is not real it does.
#[test]
fn a_real_clock_arms_no_crate_timer_and_a_manual_one_does() {
    use crate::engine::worker_wait::Driver;
    let Some(server) = redis_support::server() else {
        return;
    };
    let yaml = format!(
        "params: {{driver: redis, url: '{}', timeout: 300ms}}
ops: {{ping: PING}}",
        server.url()
    );
    let clock: Arc<dyn crate::Clock> = Arc::new(crate::clock::MonotonicClock::new());
    let driver = Driver::install(clock.clone()).unwrap();
    let ctx = crate::WorkerContext::new(0, "t", clock);
    let real = driver
        .block_on(Pool::open(Arc::new(shared_of(&yaml)), Some(&ctx)))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(real.response_timeout(), None);
    drop(real);
    drop(driver);
    let manual: Arc<dyn crate::Clock> = Arc::new(crate::ManualClock::new());
    let ctx = crate::WorkerContext::new(0, "t", manual);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    let timeout = local.block_on(&rt, async move {
        let pool = Pool::open(Arc::new(shared_of(&yaml)), Some(&ctx)).await;
        pool.unwrap().response_timeout()
    });
    assert_eq!(timeout, Some(std::time::Duration::from_millis(300)));
}

/// Off a real clock (the `ManualClock`, or no worker context) the op timeout
/// is the crate's timer: a `BLPOP` the server holds 5 s fails as `timeout`
/// after 300 ms, and the next command gets a new connection and its answer
/// at once.
#[test]
fn off_a_real_clock_a_command_past_its_timeout_fails_on_the_crates_timer() {
    let Some(server) = redis_support::server() else {
        return;
    };
    let shared = shared_of(&format!(
        "params: {{driver: redis, url: '{}', cycles: 2, timeout: 300ms, seq: concat}}\n\
         ops:\n  slow: 'BLPOP empty 5'\n  set: {{stmt: 'SET k v', expect_reply: OK}}\n",
        server.url()
    ));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        let pool = Pool::open(Arc::new(shared), None).await.unwrap();
        let t0 = std::time::Instant::now();
        let err = pool.run(0).await.expect_err("BLPOP held past the timeout");
        let ms = t0.elapsed().as_millis();
        assert_eq!(err.kind(), "timeout", "{err}");
        assert!((300..1_500).contains(&ms), "timed out after {ms} ms");
        let t1 = std::time::Instant::now();
        pool.run(1).await.unwrap_or_else(|e| panic!("{e}"));
        assert!(t1.elapsed().as_millis() < 1_000, "{:?}", t1.elapsed());
    });
    assert_eq!(server.command(&["GET", "k"]).unwrap(), "$1\r\nv\r\n");
}

/// Runs `yaml`'s ops for cycles 0 and 1, one after the other, through the
/// driver's own `async_runner` on an async worker installed on the real
/// clock: each op's error kind and how long it took.
fn two_ops_on_a_real_worker(yaml: &str) -> Vec<(Option<String>, u64)> {
    use crate::Workload;
    use crate::engine::worker_wait::Driver;
    use std::cell::RefCell;
    let clock: Arc<dyn crate::Clock> = Arc::new(crate::clock::MonotonicClock::new());
    let driver = Driver::install(clock.clone()).unwrap();
    let ctx = crate::WorkerContext::new(0, "t", clock.clone());
    let work = super::RedisWork(Arc::new(shared_of(yaml)));
    let started = super::super::postgres::deadline::STARTED.with(std::cell::Cell::get);
    let runner = driver
        .block_on(work.async_runner(&ctx, 1).expect("an async runner"))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        super::super::postgres::deadline::STARTED.with(std::cell::Cell::get),
        started + 1,
        "the runner did not start its book of deadlines"
    );
    let runner = Rc::new(runner);
    let out = Rc::new(RefCell::new(Vec::new()));
    let (o, c, r) = (out.clone(), clock.clone(), runner.clone());
    let t0 = clock.now();
    driver.start(Box::pin(async move {
        for cycle in 0..2 {
            let start = c.now();
            let res = r.start(cycle).await;
            o.borrow_mut()
                .push((res.err().map(|e| e.kind().to_string()), c.now() - start));
        }
    }));
    while out.borrow().len() < 2 && clock.now() < t0 + 20_000_000_000 {
        driver.wait_until(
            clock.now() + 1_000_000,
            &crate::Waiting::default(),
            &crate::clock::Signal::new(),
        );
    }
    let r = out.borrow().clone();
    drop(driver);
    r
}

/// On a real-clock worker the op timeout is the book's (no tokio timer per
/// op): a `BLPOP` held 5 s by the server fails as `timeout` at its start +
/// 300 ms (not before, nor at the server's 5 s), and the next command gets a
/// fresh connection and its answer at once rather than queue behind it.
#[test]
fn a_command_past_its_timeout_fails_as_timeout_on_the_book_and_the_next_reconnects() {
    let Some(server) = redis_support::server() else {
        return;
    };
    let yaml = format!(
        "params: {{driver: redis, url: '{}', cycles: 2, timeout: 300ms, seq: concat}}\n\
         ops:\n  slow: 'BLPOP empty 5'\n  set: {{stmt: 'SET k v', expect_reply: OK}}\n",
        server.url()
    );
    let ends = two_ops_on_a_real_worker(&yaml);
    assert_eq!(ends.len(), 2, "{ends:?}");
    assert_eq!(ends[0].0.as_deref(), Some("timeout"), "{ends:?}");
    let ms = ends[0].1 / 1_000_000;
    assert!((300..1_500).contains(&ms), "timed out after {ms} ms");
    assert_eq!(ends[1].0, None, "{ends:?}");
    assert!(
        ends[1].1 < 1_000_000_000,
        "the next op took {} ns",
        ends[1].1
    );
    assert_eq!(server.command(&["GET", "k"]).unwrap(), "$1\r\nv\r\n");
}

/// Audit p17 M3: `expect_reply` written as a YAML list matches an array
/// reply element by element (nil as nil, a nested list a nested array, a
/// regex element anywhere in its element), and a RESP3 set in any order;
/// before, it was the JSON text `["nil","nil"]` and matched nothing.
#[test]
fn a_list_check_matches_array_replies_element_by_element() {
    use super::run::mismatch;
    use redis::Value as V;
    let want = |yaml: &str| {
        let a = crate::Drivers::builtin()
            .loader()
            .from_str(
                &format!(
                    "params: {{driver: redis}}\nops:\n  o: {{stmt: 'X', expect_reply: {yaml}}}\n"
                ),
                "r.yaml",
            )
            .unwrap_or_else(|e| panic!("{e}"));
        super::spec::op_spec(&a.ops()[0], a.bindings())
            .unwrap()
            .expect
            .unwrap()
    };
    let bulk = |s: &str| V::BulkString(s.as_bytes().to_vec());
    let nils = V::Array(vec![V::Nil, V::Nil]);
    assert_eq!(mismatch(&want("[nil, nil]"), &nils), None);
    assert_eq!(
        mismatch(&want("[~, not-nil]"), &nils).as_deref(),
        Some("element 2 is nil")
    );
    assert_eq!(
        mismatch(&want("[nil]"), &nils).as_deref(),
        Some("it has 2 elements, not 1")
    );
    assert_eq!(
        mismatch(&want("[a]"), &bulk("a")).as_deref(),
        Some("it is not an array")
    );
    assert_eq!(
        mismatch(&want("[a]"), &V::Nil).as_deref(),
        Some("it is nil, not an array")
    );
    // ZRANGE z 0 -1 WITHSCORES: flat over RESP2, pairs with doubles over RESP3.
    let resp2 = V::Array(vec![bulk("m"), bulk("0.1")]);
    let resp3 = V::Array(vec![V::Array(vec![bulk("m"), V::Double(0.1)])]);
    assert_eq!(mismatch(&want("[m, '0.1']"), &resp2), None);
    assert_eq!(mismatch(&want("[m, 0.1]"), &resp2), None);
    assert_eq!(mismatch(&want("[[m, 0.1]]"), &resp3), None);
    assert_eq!(
        mismatch(&want("[[m, '/^0\\.2/']]"), &resp3).as_deref(),
        Some("element 1 (`[m, 0.1]`): element 2 is `0.1`")
    );
    // An element written as text matches a nested array's text too.
    assert_eq!(mismatch(&want("['[m, 0.1]']"), &resp3), None);
    // A RESP3 set: any order; an array keeps its order.
    let set = V::Set(vec![bulk("b"), bulk("a")]);
    assert_eq!(mismatch(&want("[a, b]"), &set), None);
    assert_eq!(
        mismatch(&want("[a, a]"), &set).as_deref(),
        Some("no element of the set is left for the list's element 2 (a)")
    );
    let arr = V::Array(vec![bulk("b"), bulk("a")]);
    assert_eq!(
        mismatch(&want("[a, b]"), &arr).as_deref(),
        Some("element 1 is `b`")
    );
    // A map reply is checked as text, not as a list.
    let map = V::Map(vec![(bulk("f"), V::Int(1))]);
    assert_eq!(mismatch(&want("'{f: 1}'"), &map), None);
    assert!(mismatch(&want("[f, 1]"), &map).is_some());
}
