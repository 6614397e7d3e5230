//! The `http` driver's async client against a real nginx whose `/slow`
//! answers after 50 ms (the echo module), driven through the public API on a
//! tokio `current_thread` runtime of the test's own (as the engine's async
//! runner drives it on each worker thread).
//!
//! Without nginx or its echo module each test prints `skipping: ...` and
//! passes; `.ci/run` installs both when missing.

mod support;

use paceline::{Drivers, Http, OpPlan, ParamOverrides, WorkerContext};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::nginx::{Nginx, Options};

/// nginx with `/slow`, or `None` after printing why the test skips.
fn slow_nginx() -> Option<Nginx> {
    if let Err(why) = support::nginx::binary() {
        eprintln!("skipping: nginx not installed ({why})");
        return None;
    }
    if let Err(why) = support::nginx::echo_module() {
        eprintln!("skipping: {why}");
        return None;
    }
    let opts = Options {
        access_log: false,
        slow: true,
        ..Options::default()
    };
    Some(Nginx::start_with(opts).expect("nginx and its echo module are installed and must start"))
}

#[test]
fn a_hundred_slow_requests_in_flight_on_one_thread_take_about_one_answers_time() {
    let Some(nginx) = slow_nginx() else {
        return;
    };
    let d = Drivers::builtin();
    let yaml = format!(
        "params: {{driver: http, alias: async-slow, client: async, base_url: '{}'}}\n\
         ops: {{slow: GET /slow}}",
        nginx.base_url()
    );
    let a = d.loader().from_str(&yaml, "slow.yaml").expect("valid");
    let plan = Arc::new(OpPlan::new(&a, &ParamOverrides::default()));
    let work = d.get("http").unwrap().workload(plan).expect("loads");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ctx = WorkerContext::new(0, "async-slow", Arc::new(paceline::MonotonicClock::new()));
    let runner = rt
        .block_on(work.async_runner(&ctx, 100).expect("client: async"))
        .expect("starts");
    // 100 connections were opened before the first op.
    let http = Http::stats("async-slow").unwrap();
    assert_eq!(
        (http.connections, http.connections_before_start),
        (100, 100)
    );
    for round in 0..3u64 {
        let t0 = Instant::now();
        let local = tokio::task::LocalSet::new();
        let times = local.block_on(&rt, async {
            let tasks: Vec<_> = (0..100)
                .map(|c| {
                    let op = runner.start(round * 100 + c);
                    tokio::task::spawn_local(async move {
                        let t = Instant::now();
                        op.await.map(|()| t.elapsed())
                    })
                })
                .collect();
            let mut out = Vec::new();
            for t in tasks {
                out.push(t.await.unwrap());
            }
            out
        });
        let took = t0.elapsed();
        for t in &times {
            let t = t.as_ref().expect("every op succeeds");
            // nginx's 50 ms, less its timer's grain; wide above.
            assert!(*t >= Duration::from_millis(45), "{t:?}");
        }
        // One at a time would be 5 s; wide for a busy machine.
        assert!(
            took < Duration::from_millis(1500),
            "round {round}: {took:?}"
        );
    }
    let http = Http::stats("async-slow").unwrap();
    assert_eq!((http.requests, http.status(200)), (300, 300));
    assert_eq!(
        http.connections, 100,
        "every request on a connection opened up front"
    );
    rt.block_on(runner.finish()).unwrap();
}

#[test]
fn the_engine_runs_500_per_second_at_50_ms_with_100_in_flight() {
    // Issue 21's done-when, small and with wide margins (a shared machine):
    // 1000 ops at 500/s take 2 s, each about 50 ms, on 2 threads with 100
    // in flight, every connection opened before the first op.
    let Some(nginx) = slow_nginx() else {
        return;
    };
    let d = Drivers::builtin();
    let yaml = format!(
        "params: {{driver: http, alias: async-engine-slow, base_url: '{}', rate: 500, \
         cycles: 1000, threads: 2, concurrency: 100}}\nops: {{slow: GET /slow}}",
        nginx.base_url()
    );
    let a = d
        .loader()
        .from_str(&yaml, "engine-slow.yaml")
        .expect("valid");
    let t0 = Instant::now();
    let run = d
        .start(&paceline::Engine::new(), &a, &ParamOverrides::default())
        .expect("starts");
    assert_eq!(run.wait(), paceline::Outcome::Completed);
    let took = t0.elapsed();
    let totals = run.snapshot();
    assert_eq!(
        (totals.ops(), totals.errors().collect::<Vec<_>>()),
        (1000, vec![])
    );
    // 2 s of schedule; wide above for a busy machine.
    assert!(
        took >= Duration::from_millis(1900) && took < Duration::from_secs(8),
        "{took:?}"
    );
    let http = Http::stats("async-engine-slow").unwrap();
    assert_eq!(http.status(200), 1000);
    assert_eq!(http.connections_before_start, 100, "{http}");
}
