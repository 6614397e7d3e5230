//! Activity files: the shipped examples load, and bad files are rejected with
//! every problem at its place, with a suggestion.

use paceline::{Activity, ActivityError, Field, Loader, SeqType, Step};
use std::time::Duration;

const DRIVERS: &[&str] = &["diag", "stdout", "http", "postgres", "redis"];

fn problems(text: &str) -> Vec<String> {
    match Activity::from_str(text, "t.yaml", DRIVERS) {
        Ok(_) => panic!("expected problems in:\n{text}"),
        Err(e) => e.problems().iter().map(ToString::to_string).collect(),
    }
}

#[test]
fn every_shipped_activity_loads_and_validates() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/activities");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            let a = Activity::load(&path, DRIVERS).unwrap_or_else(|e| panic!("{e}"));
            assert!(!a.sequence().is_empty());
            for cycle in 0..50 {
                let op = a.op_for_cycle(cycle);
                let json = op.render_json(cycle, a.bindings());
                assert!(json.is_object());
            }
            n += 1;
        }
    }
    assert!(n >= 3, "at least three example activities");
}

#[test]
fn the_ramp_example_has_its_scenario() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/activities/ramp.yaml");
    let a = Activity::load(path, DRIVERS).unwrap();
    let p = a.params();
    assert_eq!((p.alias.as_str(), p.threads, p.stride), ("main", 4, 100));
    assert_eq!(p.cycles.len(), 1_000_000_000);
    assert_eq!(p.seq, SeqType::Interval);
    assert_eq!(p.errors.to_string(), "retry:3");
    let steps = &a.scenario("default").unwrap().steps;
    let Step::Run(o) = &steps[0] else { panic!() };
    assert_eq!(o.alias.as_deref(), Some("warmup"));
    assert_eq!(p.with(o).cycles.len(), 10_000);
    assert!(matches!(&steps[1], Step::Start(o) if o.alias.is_none()));
    assert_eq!(steps[2], Step::Wait(Duration::from_secs(5)));
    let Step::Ramp { alias, to, over } = &steps[3] else {
        panic!()
    };
    assert_eq!(
        (alias.as_str(), to.rate(), *over),
        ("main", 50_000.0, Duration::from_secs(30))
    );
    assert_eq!(
        steps[5],
        Step::Threads {
            alias: "main".into(),
            count: 8
        }
    );
    assert!(matches!(&steps[6], Step::Rate { spec, .. } if spec.strictness_value() == 1.0));
    assert_eq!(
        steps[8],
        Step::Stop {
            alias: "main".into()
        }
    );
    assert_eq!(a.sequence().len(), 9);
}

#[test]
fn kv_example_renders_json_values() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/activities/kv-stdout.yaml");
    let a = Activity::load(path, DRIVERS).unwrap();
    let set = a.ops().iter().find(|o| o.name == "set").unwrap();
    let Some(Field::Text(t)) = set.field("stmt") else {
        panic!()
    };
    let text = t.render(7, a.bindings());
    let json: serde_json::Value =
        serde_json::from_str(text.split_once(' ').unwrap().1.split_once(' ').unwrap().1).unwrap();
    assert_eq!(json["id"].as_str().unwrap().len(), 36);
    assert!(json["active"].is_boolean());
    assert_eq!(
        a.params().driver_params["template"],
        serde_json::json!("{stmt}")
    );
    assert_eq!(text, t.render(7, a.bindings()), "deterministic");
}

#[test]
fn every_problem_is_reported_with_its_position() {
    let text = "\
description: x
parms: {}
params:
  driver: stdot
  thread: 4
  cycles: 10..5
  rate: fast
  seq: buckett
  errors: retry:x
bindings:
  key: Hash(); Mdo(10)
  val: Prefix('k'); Mod(3)
ops:
  read: 'GET {key} {vlu}'
  write: {ratio: -1, stmt: x}
scenarios:
  s:
    - rate: 5
    - strat
    - wait: soon
    - ramp: {to: 5K}
";
    let got = problems(text);
    let want = [
        "t.yaml:2:1: unknown key `parms`; did you mean `params`?",
        "t.yaml:4:11: unknown driver `stdot`; did you mean `stdout`? known drivers: `diag`, `stdout`, `http`, `postgres`, `redis`",
        "t.yaml:5:3: unknown param `thread`; did you mean `threads`?",
        "t.yaml:6:11: `10..5` is not a cycle range",
        "t.yaml:7:9: `fast` is not a rate",
        "t.yaml:8:8: `buckett` is not a sequencing: use `bucket`, `concat` or `interval`; did you mean `bucket`?",
        "t.yaml:9:11: `retry:x` is not an error policy",
        "t.yaml:11:16: binding `key`, at character 9: unknown function `Mdo`; did you mean `Mod`?",
        "t.yaml:12:21: binding `val`, at character 14: `Mod` takes an integer but the step before gives a string",
        "t.yaml:14:20: unknown binding `{vlu}`; known bindings: `key`, `val`",
        "t.yaml:15:18: `ratio` must be a whole number of at least 0, not `-1`",
        "t.yaml:18:7: `rate` comes before any activity was started in this scenario; add a `start` (or `run`) step before it",
        "t.yaml:19:7: unknown step `strat`; did you mean `start`?",
        "t.yaml:20:13: `wait` takes a duration, not `soon`",
        "t.yaml:21:7: `ramp` comes before any activity was started",
    ];
    for (g, w) in got.iter().zip(want.iter()) {
        assert!(g.starts_with(w), "\n got: {g}\nwant: {w}");
    }
    assert_eq!(got.len(), want.len(), "{got:#?}");
}

#[test]
fn scenario_aliases_must_have_been_started() {
    let got = problems(
        "params: {driver: diag}\nops: {o: x}\nscenarios:\n  s:\n    - start: {alias: main}\n    - stop: mian\n    - threads: {alias: other, count: 2}\n",
    );
    assert_eq!(got.len(), 2, "{got:#?}");
    assert!(
        got[0].starts_with(
            "t.yaml:6:13: `stop` names `mian`, which no earlier step started; did you mean `main`?"
        ),
        "{}",
        got[0]
    );
    assert!(got[1].contains("`threads` names `other`"), "{}", got[1]);
}

#[test]
fn syntax_errors_point_into_the_yaml() {
    let got = problems("params: {driver: diag\nops: {o: x}\n");
    assert_eq!(got.len(), 1);
    assert!(got[0].starts_with("t.yaml:2:"), "{}", got[0]);
    assert!(got[0].contains("not valid YAML"), "{}", got[0]);
}

#[test]
fn missing_pieces_are_named() {
    let got = problems("description: nothing else\n");
    assert!(
        got.iter().any(|p| p.contains("no `driver` in `params`")),
        "{got:#?}"
    );
    assert!(got.iter().any(|p| p.contains("no `ops`")), "{got:#?}");
    let got = problems("params: {driver: diag}\nops: {a: {ratio: 0, stmt: x}}\n");
    assert!(got[0].contains("every op has ratio 0"), "{got:#?}");
}

#[test]
fn declared_driver_params_are_checked_and_free_ones_kept() {
    let loader = Loader::new(DRIVERS).driver_params("http", &["host", "port"]);
    let a = loader
        .from_str(
            "params: {driver: http, host: h, port: 80}\nops: {o: '/'}",
            "w.yaml",
        )
        .unwrap();
    assert_eq!(a.params().driver_params["port"], serde_json::json!(80));
    let e = loader
        .from_str(
            "params: {driver: diag}\nops: {o: x}\nscenarios: {s: [{run: {driver: http, prot: 1}}]}",
            "w.yaml",
        )
        .unwrap_err();
    assert!(
        e.problems()[0]
            .to_string()
            .contains("unknown param `prot` for driver `http`; did you mean `port`?"),
        "{e}"
    );
    let free = Activity::from_str(
        "params: {driver: diag, batch_size: 8}\nops: {o: x}",
        "f",
        DRIVERS,
    )
    .unwrap();
    assert_eq!(
        free.params().driver_params["batch_size"],
        serde_json::json!(8)
    );
}

#[test]
fn read_errors_name_the_path() {
    let e = Activity::load("/no/such/activity.yaml", DRIVERS).unwrap_err();
    assert!(matches!(e, ActivityError::Read { .. }));
    assert!(e.to_string().contains("/no/such/activity.yaml"));
}
