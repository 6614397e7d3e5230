//! The benchmark registry: one criterion binary, one module per topic.
//! Peers are measured in the same run as paceline so results read as ratios.
//! Results and the machine they came from: `benches/README.md`.

use criterion::{criterion_group, criterion_main};

mod engine;
mod limiters;
mod metrics;
mod pace;
#[cfg(feature = "redis")]
mod store;

criterion_group!(
    benches,
    pace::unthrottled,
    engine::overhead,
    metrics::record,
    metrics::snapshot,
    metrics::tick,
    limiters::token_bucket,
    limiters::fixed_window,
    limiters::sliding_window,
    limiters::governor,
    store_keyed
);

/// The keyed limiter in process and on Redis (`benches/store.rs`); nothing without the
/// `redis` feature.
fn store_keyed(_c: &mut criterion::Criterion) {
    #[cfg(feature = "redis")]
    store::keyed(_c);
}
criterion_main!(benches);
