//! A fixed metrics workload for counting instructions under callgrind
//! (`benches/README.md`, session 17, branch `rec`): two recorders record OPS
//! ops in all, in SNAPS equal rounds, and after each round the reader takes
//! a snapshot and reads what the command line's tick reads (every summary of
//! the snapshot and of the totals). Two runs that differ only in OPS give the
//! cost of one op; two that differ only in SNAPS, the cost of one tick.
//!
//! ```text
//! cargo build --release --example metrics_count
//! valgrind --tool=callgrind target/release/examples/metrics_count OPS SNAPS [closed|paced|none]
//! ```
//!
//! `closed` records as the engine's closed loop does (`record(0, service)`),
//! `paced` as a paced run (`record_split`), `none` draws the same values and
//! records nothing (the loop's own cost, to subtract). Services are drawn
//! from 30 µs to 2 ms, so the histograms span what a database op's do.

use paceline::Metrics;
use std::hint::black_box;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let num = |i: usize, default: u64| {
        args.get(i)
            .map_or(Some(default), |a| a.parse().ok())
            .unwrap_or_else(|| {
                eprintln!("usage: metrics_count OPS SNAPS [closed|paced|none]");
                std::process::exit(2)
            })
    };
    let (ops, snaps) = (num(1, 1_000_000), num(2, 10).max(1));
    let mode = args.get(3).map_or("closed", String::as_str);
    let metrics = Metrics::new(0);
    let mut recs = [metrics.recorder(), metrics.recorder()];
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut sink = 0u64;
    let mut now = 0;
    let per_round = ops / snaps / 2;
    for _ in 0..snaps {
        for rec in &mut recs {
            for _ in 0..per_round {
                // xorshift: cheap, and the same sequence on every build.
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let service = 30_000 + x % 1_970_000;
                let dispatch = if x & 3 == 0 { 0 } else { (x >> 20) % 50_000 };
                let queue = if (x >> 40) % 10 == 0 {
                    (x >> 8) % 500_000
                } else {
                    0
                };
                match mode {
                    "paced" => rec.record_split(black_box(queue), black_box(dispatch), service),
                    "none" => sink = sink.wrapping_add(black_box(service ^ dispatch ^ queue)),
                    _ => rec.record(black_box(0), black_box(service)),
                }
            }
        }
        now += 1_000_000_000;
        let s = metrics.snapshot(now);
        let t = metrics.totals();
        for snap in [&s, &t] {
            for l in [
                snap.service(),
                snap.wait(),
                snap.response(),
                snap.queue(),
                snap.dispatch(),
            ] {
                sink = sink.wrapping_add(black_box(l.summary()).max);
            }
        }
    }
    println!("{sink}");
}
