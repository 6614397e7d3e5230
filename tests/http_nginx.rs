//! The `http` driver against a real nginx on a loopback port.
//!
//! Each test starts its own nginx (`tests/support/nginx.rs`); without nginx
//! installed, each prints `skipping: nginx not installed (...)` and passes.
//! `.ci/run` installs it when missing.

mod support;

use paceline::{Control, Drivers, Engine, Http, OpPlan, Outcome, ParamOverrides};
use std::collections::BTreeMap;
use std::time::Instant;
use support::nginx::{Nginx, server as nginx};

fn start(yaml: &str, name: &str) -> (Control, OpPlan) {
    let d = Drivers::builtin();
    let a = d.loader().from_str(yaml, name).expect("valid activity");
    let plan = OpPlan::new(&a, &ParamOverrides::default());
    let run = d
        .start(&Engine::new(), &a, &ParamOverrides::default())
        .expect("starts");
    (run, plan)
}

/// Access log fields: connection serial, requests on it, status, request line, x-run.
struct Line {
    connection: u64,
    status: u16,
    request: String,
    run: String,
}

fn parse(line: &str) -> Line {
    let mut quoted = line.split('"');
    let head: Vec<&str> = quoted.next().unwrap().split_whitespace().collect();
    let request = quoted.next().unwrap().to_string();
    let run = quoted.nth(1).unwrap().to_string();
    Line {
        connection: head[0].parse().unwrap(),
        status: head[2].parse().unwrap(),
        request,
        run,
    }
}

#[test]
fn a_paced_run_achieves_its_rate() {
    let Some(nginx) = nginx() else { return };
    let yaml = format!(
        "params: {{driver: http, base_url: '{}', threads: 4, cycles: 1000, rate: 500}}\nops: {{ok: GET /ok}}",
        nginx.base_url()
    );
    let t0 = Instant::now();
    let (run, _) = start(&yaml, "paced.yaml");
    assert_eq!(run.wait(), Outcome::Completed);
    let secs = t0.elapsed().as_secs_f64();
    let totals = run.snapshot();
    assert_eq!((totals.ops(), totals.error_count()), (1000, 0));
    // 1000 ops at 500/s: the last slot is at 1.998 s.
    let rate = 1000.0 / secs;
    assert!(
        (460.0..=510.0).contains(&rate),
        "achieved {rate:.1}/s in {secs:.3} s"
    );
    // No backlog: a schedule that fell behind for good would wait seconds. The
    // bound leaves room for a busy machine's scheduler (a 2-core machine
    // shared by builds once saw a 15 ms median: issue 25).
    assert!(
        totals.wait().p50() < 100_000_000,
        "median wait {} ns",
        totals.wait().p50()
    );
}

#[test]
fn statuses_are_counted_by_class_and_exactly() {
    let Some(nginx) = nginx() else { return };
    // bucket order: ok missing fail ok ok, repeated: per 5 cycles 3 ok, 1 404, 1 503.
    let yaml = format!(
        "params: {{driver: http, base_url: '{}', threads: 2, cycles: 500, errors: count}}\n\
         ops:\n  ok: {{ratio: 3, path: /ok}}\n  missing: /missing\n  fail: {{url: /fail}}",
        nginx.base_url()
    );
    let (run, plan) = start(&yaml, "statuses.yaml");
    assert_eq!(run.wait(), Outcome::Completed);
    let mut expect: BTreeMap<&str, u64> = BTreeMap::new();
    for c in 0..500 {
        *expect.entry(&plan.op_for_cycle(c).name).or_insert(0) += 1;
    }
    assert_eq!(
        (expect["ok"], expect["missing"], expect["fail"]),
        (300, 100, 100)
    );
    let totals = run.snapshot();
    assert_eq!(totals.ops(), 500);
    let errors: Vec<(&str, u64)> = totals.errors().collect();
    assert_eq!(errors, [("http 4xx", 100), ("http 5xx", 100)]);
    let stats = Http::stats("statuses").expect("stats for the alias");
    assert_eq!((stats.requests, stats.responses), (500, 500));
    assert_eq!(
        (stats.status(200), stats.status(404), stats.status(503)),
        (300, 100, 100)
    );
    let log = nginx.access_log();
    assert_eq!(log.len(), 500);
    let by_status =
        log.iter()
            .map(|l| parse(l).status)
            .fold(BTreeMap::<u16, u64>::new(), |mut m, s| {
                *m.entry(s).or_insert(0) += 1;
                m
            });
    assert_eq!(
        by_status,
        BTreeMap::from([(200, 300), (404, 100), (503, 100)])
    );
}

#[test]
fn templates_reach_the_server_as_rendered() {
    let Some(nginx) = nginx() else { return };
    let yaml = format!(
        r#"params: {{driver: http, base_url: '{}', threads: 3, cycles: 300, headers: {{x-run: "r-7"}}}}
bindings:
  id: Hash(); Mod(100000)
  tag: Mod(7); Prefix('t')
ops:
  get: "GET /echo/{{id}}?tag={{tag}}"
  put:
    method: PUT
    path: "/echo/items/{{id}}"
    headers: {{x-run: "put-{{tag}}"}}
    body: {{id: "{{id}}", tag: "{{tag}}"}}
"#,
        nginx.base_url()
    );
    let (run, plan) = start(&yaml, "templates.yaml");
    assert_eq!(run.wait(), Outcome::Completed);
    assert_eq!(run.snapshot().error_count(), 0);
    let mut expected: Vec<(String, String)> = (0..300)
        .map(|c| match plan.op_for_cycle(c).name.as_str() {
            "get" => (
                format!("{} HTTP/1.1", plan.render_field(c, "stmt").unwrap()),
                "r-7".to_string(),
            ),
            _ => (
                format!("PUT {} HTTP/1.1", plan.render_field(c, "path").unwrap()),
                format!("put-t{}", c % 7),
            ),
        })
        .collect();
    let mut seen: Vec<(String, String)> = nginx
        .access_log()
        .iter()
        .map(|l| {
            let l = parse(l);
            (l.request, l.run)
        })
        .collect();
    expected.sort();
    seen.sort();
    assert_eq!(seen.len(), 300);
    assert_eq!(seen, expected);
}

#[test]
fn each_worker_reuses_one_connection() {
    let Some(nginx) = nginx() else { return };
    let yaml = format!(
        "params: {{driver: http, base_url: '{}', threads: 4, cycles: 2000, rate: 2000}}\nops: {{ok: GET /ok}}",
        nginx.base_url()
    );
    let (run, _) = start(&yaml, "reuse.yaml");
    assert_eq!(run.wait(), Outcome::Completed);
    let stats = Http::stats("reuse").unwrap();
    assert_eq!((stats.workers, stats.requests), (4, 2000));
    assert_eq!(stats.connections, 4, "{stats:?}");
    assert_eq!(stats.requests_per_connection(), 500.0);
    let log = nginx.access_log();
    let mut server_side: Vec<u64> = log.iter().map(|l| parse(l).connection).collect();
    server_side.sort_unstable();
    server_side.dedup();
    assert_eq!(
        server_side.len(),
        4,
        "nginx saw these connections: {server_side:?}"
    );

    // And with keepalive off, one connection per request.
    let yaml = format!(
        "params: {{driver: http, base_url: '{}', threads: 2, cycles: 100, keepalive: false}}\nops: {{ok: GET /ok}}",
        nginx.base_url()
    );
    let (run, _) = start(&yaml, "close.yaml");
    assert_eq!(run.wait(), Outcome::Completed);
    let stats = Http::stats("close").unwrap();
    assert_eq!((stats.requests, stats.connections), (100, 100));
}

/// A stall longer than the timeout: the requests it catches fail as `timeout`
/// after the timeout (not when the stall ends), and the run goes on over new
/// connections. The driver's transport keeps the socket's timeout from request
/// to request and resets it only when the deadline needs it, so this is the
/// check that no read blocks past a request's deadline against a real server.
#[test]
fn a_stall_longer_than_the_timeout_times_out_at_the_timeout_and_recovers() {
    let Some(nginx) = nginx() else { return };
    let yaml = format!(
        "params: {{driver: http, base_url: '{}', threads: 2, cycles: 600, rate: 300, \
         timeout: 300ms, errors: count}}\nops: {{ok: GET /ok}}",
        nginx.base_url()
    );
    let (run, _) = start(&yaml, "stall-timeout.yaml");
    std::thread::sleep(std::time::Duration::from_millis(500));
    nginx.stall(std::time::Duration::from_secs(1));
    assert_eq!(run.wait(), Outcome::Completed);
    let totals = run.snapshot();
    assert_eq!(totals.ops(), 600);
    let errors: Vec<(&str, u64)> = totals.errors().collect();
    assert_eq!(errors.len(), 1, "only timeouts: {errors:?}");
    let (kind, timeouts) = errors[0];
    assert_eq!(kind, "timeout");
    // Each worker is caught by the stall at least twice (1 s of it, 300 ms each).
    assert!((4..=20).contains(&timeouts), "{timeouts} timeouts");
    let max = totals.service().max();
    assert!(
        (300_000_000..700_000_000).contains(&max),
        "the longest op took {max} ns: a timeout is 300 ms, the stall 1 s"
    );
    // A connection that timed out is not reused: each timeout costs a new one.
    let stats = Http::stats("stall-timeout").unwrap();
    assert_eq!((stats.requests, stats.responses), (600, 600 - timeouts));
    assert_eq!(stats.connections, 2 + timeouts, "{stats:?}");
}

/// Methods that must not be sent twice (POST) get the liveness probe on every
/// reused connection, the rest skip it when the connection is fresh: mixed in one
/// run, every worker still keeps its one connection.
#[test]
fn mixed_methods_keep_one_connection_per_worker() {
    let Some(nginx) = nginx() else { return };
    let yaml = format!(
        "params: {{driver: http, base_url: '{}', threads: 2, cycles: 400, rate: 2000}}\n\
         ops:\n  get: GET /ok\n  post: {{method: POST, path: /ok, body: 'x'}}\n  \
         head: HEAD /ok\n  delete: {{method: DELETE, path: /ok}}",
        nginx.base_url()
    );
    let (run, _) = start(&yaml, "methods.yaml");
    assert_eq!(run.wait(), Outcome::Completed);
    let totals = run.snapshot();
    assert_eq!((totals.ops(), totals.error_count()), (400, 0));
    let stats = Http::stats("methods").unwrap();
    assert_eq!((stats.requests, stats.status(200)), (400, 400));
    assert_eq!(stats.connections, 2, "{stats:?}");
    let log = nginx.access_log();
    let mut methods: Vec<String> = log
        .iter()
        .map(|l| parse(l).request.split(' ').next().unwrap().to_string())
        .collect();
    methods.sort();
    methods.dedup();
    assert_eq!(methods, ["DELETE", "GET", "HEAD", "POST"]);
}

/// The binary's summary shows connection reuse: on the console and in the JSON.
#[test]
fn the_binary_reports_connection_reuse_in_its_summary() {
    let Some(nginx) = nginx() else { return };
    let json = std::env::temp_dir().join(format!("paceline-http-{}.json", std::process::id()));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_paceline"))
        .args([
            "run",
            "driver=http",
            &format!("base_url={}", nginx.base_url()),
            "op=GET /ok",
            "cycles=400",
            "threads=2",
            "rate=2000",
            "--no-progress",
            "--summary-json",
            json.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("http (http): 400 requests over 2 connections"),
        "{stdout}"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let stats = &doc["activities"][0]["driver_stats"];
    assert_eq!(stats["requests"], 400);
    assert_eq!(stats["connections"], 2);
    assert_eq!(stats["requests_per_connection"], 200.0);
    // Issue 24 item 5: each worker connected before its first op, and the
    // time it took is reported beside (not in) the service time.
    assert_eq!(stats["connections_before_start"], 2);
    assert!(stats["connect_ms_mean"].as_f64().unwrap() > 0.0, "{stats}");
}

#[test]
fn a_10ms_keepalive_timeout_with_requests_10ms_apart_costs_no_errors() {
    // Issue 18: nginx closes a connection idle for 10 ms, and each of 4
    // workers sends a request on its connection about every 10.3 ms (388/s
    // over 4 threads), so nginx now and then closes a connection just as a
    // request arrives on it. A GET that meets that close before any answer
    // byte is sent once more on a new connection; one that finds the
    // connection closed before it goes opens a new one. Before, such requests
    // were `io` errors (4 to 10 in 800 here).
    if let Err(why) = support::nginx::binary() {
        eprintln!("skipping: nginx not installed ({why})");
        return;
    }
    let nginx = Nginx::start_with(support::nginx::Options {
        keepalive_timeout: "10ms",
        ..Default::default()
    })
    .expect("nginx is installed and must start");
    let yaml = format!(
        "params: {{driver: http, alias: ka10, base_url: '{}', threads: 4, cycles: 800, \
         rate: 388, errors: count}}\nops: {{ok: GET /ok}}",
        nginx.base_url()
    );
    let (run, _) = start(&yaml, "ka10.yaml");
    assert_eq!(run.wait(), Outcome::Completed);
    let totals = run.snapshot();
    assert_eq!(
        (totals.ops(), totals.errors().collect::<Vec<_>>()),
        (800, vec![])
    );
    let stats = Http::stats("ka10").expect("stats");
    assert_eq!((stats.requests, stats.status(200)), (800, 800));
    // nginx answered each request once.
    assert_eq!(nginx.access_log().len(), 800);
}
