//! Seed 004's keyed limiter in process (`KeyedLimiter`) beside the same limiter on a
//! local redis-server (`RedisKeyedLimiter`), side by side in one run: decisions per
//! second for one key and for 10 000 keys, one round trip per decision and pipelined
//! in batches of 100; GCRA one round trip per decision.
//!
//! The limit is far above what is asked (admit-heavy), so every Redis decision writes
//! its key (HSET + PEXPIRE) as a real workload's admissions do. Without redis-server,
//! the Redis cases print why and are skipped.

use criterion::{BenchmarkId, Criterion, Throughput};
use paceline::{KeyConfig, KeyedLimiter, Limit};
use std::time::Duration;

#[path = "../tests/support/redis.rs"]
mod redis_server;

const KEYS: [usize; 2] = [1, 10_000];
const BATCH: usize = 100;

/// One billion per second: never refused in a bench.
const PERMITS: u32 = 1_000_000_000;

fn keys(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("user:{i}")).collect()
}

pub fn keyed(c: &mut Criterion) {
    let mut g = c.benchmark_group("keyed");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));

    let config =
        KeyConfig::new(PERMITS, Duration::from_secs(1), Duration::from_millis(10)).expect("valid");
    g.throughput(Throughput::Elements(1));
    for n in KEYS {
        let names = keys(n);
        let local: KeyedLimiter<String> = KeyedLimiter::builder(config).build();
        let mut i = 0;
        g.bench_function(BenchmarkId::new("in_process", n), |b| {
            b.iter(|| {
                i = (i + 1) % names.len();
                local.try_acquire(&names[i], 1)
            })
        });
    }

    let redis = match redis_server::RedisServer::start() {
        Ok(r) => r,
        Err(why) => {
            eprintln!("keyed: skipping the Redis cases ({why})");
            return;
        }
    };
    let limit = Limit::per_second(PERMITS).expect("valid");
    let store = paceline::RedisKeyedLimiter::connect(&redis.url(), limit).expect("connects");
    let gcra = paceline::RedisKeyedLimiter::builder(&redis.url(), limit)
        .algorithm(paceline::Algorithm::Gcra)
        .prefix("gcra")
        .build()
        .expect("connects");
    for (name, store) in [("redis", &store), ("redis_gcra", &gcra)] {
        for n in KEYS {
            let names = keys(n);
            let mut i = 0;
            g.bench_function(BenchmarkId::new(name, n), |b| {
                b.iter(|| {
                    i = (i + 1) % names.len();
                    store.try_acquire(&names[i], 1)
                })
            });
        }
    }
    g.throughput(Throughput::Elements(BATCH as u64));
    for n in KEYS {
        let names = keys(n);
        let mut i = 0;
        g.bench_function(BenchmarkId::new("redis_pipelined_100", n), |b| {
            b.iter(|| {
                let batch: Vec<(&str, u32)> = (0..BATCH)
                    .map(|_| {
                        i = (i + 1) % names.len();
                        (names[i].as_str(), 1)
                    })
                    .collect();
                store.try_acquire_many(&batch)
            })
        });
    }
    assert_eq!(
        store.store_errors() + gcra.store_errors(),
        0,
        "the store answered every call"
    );
    g.finish();
}
