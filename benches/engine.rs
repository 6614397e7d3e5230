//! The engine's own overhead per op: the `diag` driver doing nothing, every
//! metric on (service, wait and response histograms, counters), unpaced and paced
//! at a rate so high that every op is late (so the pacer grants at once and the
//! difference is the cost of pacing).
//!
//! Each iteration runs a whole activity of `CYCLES` cycles, threads spawn and
//! join included, and criterion reports cycles per second.

use criterion::{BenchmarkId, Criterion, Throughput};
use paceline::{Drivers, Engine, ParamOverrides, RateSpec};

const CYCLES: u64 = 2_000_000;

fn run(engine: &Engine, drivers: &Drivers, threads: usize, rate: Option<RateSpec>) {
    let text = format!(
        "params: {{driver: diag, cycles: {CYCLES}, threads: {threads}, stride: 1000}}\nops: {{noop: x}}"
    );
    let activity = drivers.loader().from_str(&text, "bench.yaml").unwrap();
    let overrides = ParamOverrides {
        rate,
        ..Default::default()
    };
    let control = drivers.start(engine, &activity, &overrides).unwrap();
    control.wait();
    assert_eq!(control.snapshot().ops(), CYCLES);
    // The engine keeps finished runs listed; the bench starts thousands.
    engine.forget_finished();
}

/// Ops per second through the whole engine, unpaced and paced, 1 and 2 threads.
pub fn overhead(c: &mut Criterion) {
    let drivers = Drivers::builtin();
    let engine = Engine::new();
    let mut g = c.benchmark_group("engine");
    g.throughput(Throughput::Elements(CYCLES));
    g.sample_size(10);
    for threads in [1usize, 2] {
        g.bench_with_input(
            BenchmarkId::new("diag_unpaced", threads),
            &threads,
            |b, &t| b.iter(|| run(&engine, &drivers, t, None)),
        );
        g.bench_with_input(
            BenchmarkId::new("diag_paced_1e9", threads),
            &threads,
            |b, &t| b.iter(|| run(&engine, &drivers, t, Some(RateSpec::new(1e9)))),
        );
    }
    g.finish();
}
