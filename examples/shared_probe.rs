use paceline::*;
use std::time::Instant;
struct N;
struct R;
impl Workload for N {
    fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
        Ok(Box::new(R))
    }
}
impl OpRunner for R {
    fn run(&mut self, _: u64) -> Result<(), OpError> {
        Ok(())
    }
}
fn main() {
    let port = std::env::args().nth(1).unwrap();
    let n: u64 = std::env::args()
        .nth(2)
        .map_or(90000, |s| s.parse().unwrap());
    let procs: usize = std::env::args().nth(3).map_or(3, |s| s.parse().unwrap());
    let shared = std::env::args().nth(4).map_or(true, |s| s == "shared");
    let c: Coordinate = format!("redis://127.0.0.1:{port}/probe").parse().unwrap();
    let t0 = Instant::now();
    let runs: Vec<_> = (0..procs)
        .map(|_| {
            let cfg = ActivityConfig::new("a")
                .threads(2)
                .cycles(0..n)
                .rate(RateSpec::new(30000.0));
            let cfg = if shared {
                cfg.coordinate(c.clone())
            } else {
                cfg
            };
            Engine::new().start(cfg, N).unwrap()
        })
        .collect();
    for r in &runs {
        r.wait();
    }
    let el = t0.elapsed().as_secs_f64();
    println!(
        "elapsed {el:.4}s expected {:.4} achieved {:.1}/s",
        n as f64 / 30000.0,
        n as f64 / el
    );
    for r in &runs {
        let s = r.snapshot();
        println!(
            "ops {} wait p99 {} us max {} us; {:?}",
            s.ops(),
            s.wait().p99() / 1000,
            s.wait().max() / 1000,
            r.coordinated()
        );
    }
}
