//! The error policy by kind (issue 22, "errors=retry:N retries a `sql 40`"), on
//! the manual clock, on both runners: a bare `retry:N` retries only the errors
//! the driver calls retryable (or leaves unmarked), a rule that names a kind
//! decides for it, and a kind no rule matches stops the run.

use paceline::{
    ActivityConfig, AsyncOpRunner, Engine, ErrorPolicy, LocalFuture, ManualClock, OpError,
    OpRunner, Outcome, WorkerContext, Workload,
};
use std::sync::{Arc, Mutex};

/// Each cycle fails `fails` times with the error `error(cycle)` gives, then
/// succeeds; every attempt's cycle is logged (a retry runs the same cycle).
#[derive(Clone)]
struct Failing {
    fails: u32,
    error: Arc<dyn Fn(u64) -> Option<OpError> + Send + Sync>,
    attempts: Arc<Mutex<Vec<u64>>>,
    /// Run on the async runner.
    is_async: bool,
}

impl Failing {
    fn new(fails: u32, error: impl Fn(u64) -> Option<OpError> + Send + Sync + 'static) -> Self {
        Self {
            fails,
            error: Arc::new(error),
            attempts: Arc::default(),
            is_async: false,
        }
    }

    fn attempt(&self, cycle: u64) -> Result<(), OpError> {
        let mut log = self.attempts.lock().unwrap();
        let before = log.iter().filter(|&&c| c == cycle).count() as u32;
        log.push(cycle);
        match (self.error)(cycle) {
            Some(e) if before < self.fails => Err(e),
            _ => Ok(()),
        }
    }

    fn attempts_of(&self, cycle: u64) -> usize {
        let log = self.attempts.lock().unwrap();
        log.iter().filter(|&&c| c == cycle).count()
    }
}

impl OpRunner for Failing {
    fn run(&mut self, cycle: u64) -> Result<(), OpError> {
        self.attempt(cycle)
    }
}

impl AsyncOpRunner for Failing {
    fn start(&self, cycle: u64) -> LocalFuture<Result<(), OpError>> {
        let r = self.attempt(cycle);
        Box::pin(async move { r })
    }
}

impl Workload for Failing {
    fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
        Ok(Box::new(self.clone()))
    }

    fn async_runner(
        &self,
        _: &WorkerContext,
        _: usize,
    ) -> Option<LocalFuture<Result<Box<dyn AsyncOpRunner>, OpError>>> {
        if !self.is_async {
            return None;
        }
        let me = self.clone();
        Some(Box::pin(async move {
            Ok(Box::new(me) as Box<dyn AsyncOpRunner>)
        }))
    }
}

/// Cycle % 3: 0 a serialization failure (retryable), 1 a duplicate key (not
/// retryable), 2 an error its maker did not mark.
fn mixed(cycle: u64) -> Option<OpError> {
    Some(match cycle % 3 {
        0 => OpError::new("sql 40", "could not serialize access").retryable(true),
        1 => OpError::new("sql 23", "duplicate key").retryable(false),
        _ => OpError::new("flaky", "unmarked"),
    })
}

fn run(w: &Failing, policy: &str, cycles: u64) -> (Outcome, paceline::Snapshot) {
    let mut config = ActivityConfig::new("p")
        .cycles(0..cycles)
        .errors(ErrorPolicy::parse(policy).unwrap());
    if w.is_async {
        config = config.concurrency(4);
    }
    let run = Engine::with_clock(ManualClock::new())
        .start(config, w.clone())
        .unwrap();
    let outcome = run.wait();
    (outcome, run.snapshot())
}

fn both(fails: u32, error: fn(u64) -> Option<OpError>) -> [Failing; 2] {
    let sync = Failing::new(fails, error);
    let mut a = Failing::new(fails, error);
    a.is_async = true;
    [sync, a]
}

#[test]
fn a_bare_retry_retries_what_the_driver_calls_retryable_only() {
    for w in both(2, mixed) {
        let (outcome, t) = run(&w, "retry:3", 30);
        assert_eq!(outcome, Outcome::Completed, "async {}", w.is_async);
        // sql 40: failed twice, retried twice, then passed; sql 23: tried once and
        // counted; unmarked: retried as before kinds existed.
        assert_eq!(w.attempts_of(0), 3);
        assert_eq!(w.attempts_of(1), 1);
        assert_eq!(w.attempts_of(2), 3);
        assert_eq!(t.errors_of("sql 40"), 0);
        assert_eq!(t.errors_of("sql 23"), 10);
        assert_eq!(t.errors_of("flaky"), 0);
        assert_eq!(t.retries(), 40);
        assert_eq!(t.ops(), 30);
    }
}

#[test]
fn a_not_retryable_error_goes_to_the_rest_of_the_rule_at_once() {
    for w in both(5, mixed) {
        // `retry:3,stop`: the first cycle's sql 40 is retried 3 times, still
        // fails and stops the run; with cycles 1.. the sql 23 stops it with no
        // retry.
        let (outcome, t) = run(&w, "retry:3,stop", 1);
        assert!(
            matches!(&outcome, Outcome::Failed(m) if m.starts_with("cycle 0: sql 40")),
            "{outcome:?}"
        );
        assert_eq!((t.retries(), t.errors_of("sql 40")), (3, 1));
        let w2 = Failing {
            attempts: Arc::default(),
            ..w.clone()
        };
        let run2 = Engine::with_clock(ManualClock::new())
            .start(
                ActivityConfig::new("q")
                    .cycles(1..2)
                    .errors(ErrorPolicy::parse("retry:3,stop").unwrap()),
                w2.clone(),
            )
            .unwrap();
        assert!(matches!(run2.wait(), Outcome::Failed(m) if m.starts_with("cycle 1: sql 23")));
        assert_eq!((run2.snapshot().retries(), w2.attempts_of(1)), (0, 1));
    }
}

#[test]
fn rules_by_kind_decide_in_order_and_a_named_kind_is_retried_anyway() {
    for w in both(2, mixed) {
        // sql 23 named: retried although the driver says a retry cannot help
        // (the user asked by name); the rest counted.
        let (outcome, t) = run(&w, "sql 23:retry:1; SQL *:retry:5; count", 30);
        assert_eq!(outcome, Outcome::Completed);
        assert_eq!(w.attempts_of(1), 2); // once + 1 retry, still failing
        assert_eq!(w.attempts_of(0), 3); // `sql *` retries sql 40 up to 5
        assert_eq!(w.attempts_of(2), 1); // `count`: no retry
        assert_eq!(
            (
                t.errors_of("sql 23"),
                t.errors_of("sql 40"),
                t.errors_of("flaky")
            ),
            (10, 0, 10)
        );
        assert_eq!(t.retries(), 10 + 20);
    }
}

#[test]
fn a_kind_no_rule_matches_stops_the_run() {
    for w in both(1, mixed) {
        let (outcome, t) = run(&w, "sql 40:retry:2;sql 23:count", 30);
        assert!(
            matches!(&outcome, Outcome::Failed(m) if m.contains("flaky: unmarked")),
            "{outcome:?}"
        );
        assert_eq!(t.errors_of("flaky"), 1);
        assert_eq!(t.errors_of("sql 40"), 0);
    }
}

#[test]
fn a_bad_policy_in_a_file_names_its_place_the_rule_and_the_fix() {
    let d = paceline::Drivers::builtin();
    let err = d
        .loader()
        .from_str(
            "params:\n  driver: diag\n  errors: 'sql 40:retry:x;count'\nops: {a: x}",
            "bad.yaml",
        )
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(err.contains("bad.yaml:3:"), "{err}");
    assert!(err.contains("rule `sql 40:retry:x`"), "{err}");
    assert!(err.contains("sql 40:retry:3;sql 23:count;stop"), "{err}");
}

/// Issue 22's gap: a rule for a kind no driver produces (`sql 4O`, `timout`)
/// was accepted, and never applied.
#[test]
fn issue22_a_rule_for_a_kind_the_driver_never_gives_is_refused_at_load() {
    let d = paceline::Drivers::builtin();
    let engine = Engine::with_clock(ManualClock::new());
    let start = |yaml: &str| {
        let a = d.loader().from_str(yaml, "kinds.yaml").unwrap();
        d.start(&engine, &a, &Default::default()).map(|_| ())
    };
    let err = start(
        "params:\n  driver: diag\n  error_kind: sql 40\n  errors: 'sql 4O:retry:3;count'\nops: {a: x}",
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("param `errors`: rule `sql 4O:retry:3`"),
        "{err}"
    );
    assert!(
        err.contains("error kind `sql 4O`, which driver `diag` never gives"),
        "{err}"
    );
    assert!(err.contains("(did you mean `sql 40`?)"), "{err}");
    assert!(
        err.contains("its kinds are sql 40, diag-value, cancelled, panic"),
        "{err}"
    );
    let err = start(
        "params: {driver: http, base_url: 'http://127.0.0.1:9', errors: 'timout:retry:2'}\nops: {a: GET /}",
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("(did you mean `timeout`?)"), "{err}");
    // Wildcards, the driver's kinds in any case, and the engine's own pass.
    let oks = [
        "'sql *:retry:3;count'",
        "'SQL 40:stop;cancelled:count'",
        "'*:count'",
        "retry:2",
    ];
    for (i, ok) in oks.iter().enumerate() {
        let yaml = format!(
            "params: {{driver: diag, alias: ok{i}, error_kind: sql 40, cycles: 1, errors: {ok}}}\nops: {{a: x}}"
        );
        let r = start(&yaml);
        assert!(r.is_ok(), "{ok}: {r:?}");
    }
}
