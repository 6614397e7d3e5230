//! Review p15, finding 1: in thread scope (`rate: "1000,thread"`) each thread's
//! schedule draws its own Poisson stream (`Arrivals::for_thread`), never the
//! activity's; the verdict's drawn rate must come from the stream the run
//! used (`paceline::drawn_arrivals`), or a one-thread run that kept every slot
//! is judged behind (or one that fell behind is judged on schedule). Through
//! the engine on the manual clock.

use paceline::{
    Arrivals, Control, Driver, DriverError, Drivers, Engine, Figures, ManualClock, OpError, OpPlan,
    OpRunner, Outcome, ParamOverrides, Scope, Verdict, VerdictKind, WorkerContext, Workload,
    drawn_arrivals, mean_target_rate,
};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A driver whose ops log (cycle, the engine clock's time at the op's start);
/// the op of cycle `.1.0`, if any, then takes `.1.1`, the others no time.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<(u64, u64)>>>, Option<(u64, Duration)>);

struct RecorderRun(Recorder, WorkerContext);

impl Driver for Recorder {
    fn name(&self) -> &str {
        "recorder"
    }
    fn workload(&self, _: Arc<OpPlan>) -> Result<Box<dyn Workload>, DriverError> {
        Ok(Box::new(self.clone()))
    }
}

impl Workload for Recorder {
    fn runner(&self, ctx: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
        Ok(Box::new(RecorderRun(self.clone(), ctx.clone())))
    }
}

impl OpRunner for RecorderRun {
    fn run(&mut self, cycle: u64) -> Result<(), OpError> {
        self.0.0.lock().unwrap().push((cycle, self.1.now()));
        if let Some((at, d)) = self.0.1
            && at == cycle
        {
            self.1.sleep(d);
        }
        Ok(())
    }
}

/// Runs `yaml` with `rec` on a manual-clock engine: the (cycle, start) log in
/// cycle order, and the run's control.
fn run_with(yaml: &str, rec: Recorder) -> (Vec<(u64, u64)>, Control) {
    let mut drivers = Drivers::builtin();
    drivers.register(rec.clone());
    let activity = drivers.loader().from_str(yaml, "t.yaml").expect("valid");
    let run = drivers
        .start(
            &Engine::with_clock(ManualClock::new()),
            &activity,
            &ParamOverrides::default(),
        )
        .expect("starts");
    assert_eq!(run.wait(), Outcome::Completed);
    let mut log = rec.0.lock().unwrap().clone();
    log.sort();
    (log, run)
}

/// The whole run's verdict as the CLI's summary makes it (src/cli/gate.rs):
/// the totals at the mean target, with the stream the run drew.
fn run_verdict(c: &Control) -> Verdict {
    c.snapshot();
    let t = c.totals();
    let spec = c.config().rate_spec().unwrap();
    let mean = mean_target_rate(spec.rate(), &c.timeline(), t.start(), t.end());
    let f = match drawn_arrivals(c.config().arrivals_value(), spec.scope_value(), 1) {
        Some(a) => Figures::of_run(&t, Some(mean), a, 1, None, 2),
        None => Figures::of(&t, Some(mean), 1, None, 2),
    };
    Verdict::from_figures(&f, Default::default(), Default::default())
}

#[test]
fn a_thread_scoped_poisson_run_is_judged_against_its_own_thread_stream() {
    let cycles = 200u64;
    // Seeds whose base and first-thread streams' 199-draw spans differ by
    // more than 2 %, one each way, so the test cannot pass vacuously.
    let ratio = |seed: u64| {
        let base = Arrivals::Poisson { seed };
        base.for_thread(1).span(cycles - 1) / base.span(cycles - 1)
    };
    let slower = (0..1000).find(|&s| ratio(s) > 1.02).expect("a seed");
    let faster = (0..1000).find(|&s| ratio(s) < 0.98).expect("a seed");
    for seed in [slower, faster] {
        let yaml = format!(
            "params: {{driver: recorder, threads: 1, cycles: {cycles}, rate: '1000,thread', \
             arrivals: poisson, seed: {seed}}}\nops: {{a: x}}\n"
        );
        let (log, c) = run_with(&yaml, Recorder::default());
        assert_eq!(c.config().rate_spec().unwrap().scope_value(), Scope::Thread);
        let last = log.last().unwrap().1;
        // Every op at its slot of the thread's own stream, to the nanosecond.
        let own_stream = Arrivals::Poisson { seed }.for_thread(1);
        let span = own_stream.span(cycles - 1) * 1e6;
        assert!(
            (span - last as f64).abs() <= cycles as f64,
            "{seed}: {span} {last}"
        );
        let v = run_verdict(&c);
        let drawn = v.drawn_rate.expect("a drawn rate");
        let own = (cycles - 1) as f64 * 1e9 / last as f64;
        assert!((drawn / own - 1.0).abs() < 1e-6, "{seed}: {drawn} {own}");
        assert_eq!(v.achieved_rate, drawn, "{seed}");
        assert_eq!(v.kind, VerdictKind::OnSchedule, "{seed}: {v}");

        // A stall of 200 ms 100 slots before the end: judged behind.
        let stall = Recorder(
            Arc::default(),
            Some((cycles - 100, Duration::from_millis(200))),
        );
        let (log, c) = run_with(&yaml, stall);
        assert!(log.last().unwrap().1 > last + 50_000_000, "{seed}");
        let v = run_verdict(&c);
        assert_ne!(v.kind, VerdictKind::OnSchedule, "{seed}: {v}");
        assert!(v.achieved_rate < drawn * 0.99, "{seed}: {v:?}");
    }
}

#[test]
fn several_threads_in_thread_scope_give_no_drawn_rate() {
    let p = Arrivals::Poisson { seed: 3 };
    assert_eq!(drawn_arrivals(p, Scope::Thread, 2), None);
    assert_eq!(drawn_arrivals(p, Scope::Activity, 2), Some(p));
    assert_eq!(
        drawn_arrivals(Arrivals::Uniform, Scope::Thread, 1),
        Some(Arrivals::Uniform)
    );
}
