//! NoSQLBench 5 workload files run as they are (issue 17): the two NB5-form
//! workloads in `tests/nb5/` through the real binary with NB5's command forms,
//! and the NB5 grammar through the library. The workloads NB5 ships, step by
//! step, are in `tests/nb5_shipped.rs`.

mod support;

use paceline::{Activity, Binding, Drivers, Kind, OpPlan, ParamOverrides, TagFilter, Value};
use support::bin::{run, stdout_of, text, write_temp as temp};

const KEYVALUE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/nb5/keyvalue.yaml");
const HTTP: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/nb5/http-rest.yaml");

fn load(text: &str) -> Result<Activity, paceline::ActivityError> {
    Drivers::builtin().loader().from_str(text, "nb5.yaml")
}

fn first_problem(text: &str) -> String {
    match load(text) {
        Ok(_) => panic!("loaded: {text}"),
        Err(e) => e.problems()[0].to_string(),
    }
}
#[test]
fn the_key_value_baseline_runs_schema_rampup_and_main_with_nb5_words() {
    let out = stdout_of(&[
        "run",
        KEYVALUE,
        "default",
        "rampup-cycles=3",
        "main-cycles=4",
        "threads=1",
    ]);
    // `Uniform(0,1000000000)->int` is NB5's discrete Uniform (max included).
    let want = "\
create keyspace if not exists baselines
WITH replication = {'class': 'SimpleStrategy', 'replication_factor': '1'};
create table if not exists baselines.keyvalue (key text, value text, PRIMARY KEY (key));
insert into baselines.keyvalue (key, value) values (0,658607535);
insert into baselines.keyvalue (key, value) values (1,200822465);
insert into baselines.keyvalue (key, value) values (2,756348110);
select * from baselines.keyvalue where key=883310809;
insert into baselines.keyvalue (key, value) values (566561575, 368189516);
select * from baselines.keyvalue where key=591189734;
insert into baselines.keyvalue (key, value) values (113450342, 737518168);
";
    assert_eq!(out, want);
}

#[test]
fn one_step_runs_alone_and_template_variables_reach_every_use() {
    let out = stdout_of(&[
        "run",
        KEYVALUE,
        "default.rampup",
        "threads=1",
        "rampup-cycles=2",
        "keyspace=ks",
        "table=kv",
    ]);
    assert_eq!(
        out,
        "insert into ks.kv (key, value) values (0,658607535);\n\
         insert into ks.kv (key, value) values (1,200822465);\n"
    );
}

/// Issue 26 item 10: NB5 refuses a command line that sets a param a step
/// locks with `===` (`SCNamedParam.override`); so does paceline, naming the
/// step's template variable, instead of printing the locked 10 M lines.
#[test]
fn a_verbose_lock_overridden_stops_as_nb5_does_and_a_silent_lock_is_silent() {
    let out = run(&["run", KEYVALUE, "default.main", "cycles=2", "threads=1"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "", "nothing runs");
    let err = text(&out.stderr);
    assert!(
        err.contains("step `main` locks `cycles` with `===`"),
        "{err}"
    );
    assert!(
        err.contains("Unable to reassign value for locked param"),
        "{err}"
    );
    assert!(err.contains("`main-cycles=2`"), "{err}");
    // The variable the message names runs the step.
    let out = stdout_of(&[
        "run",
        KEYVALUE,
        "default.main",
        "main-cycles=2",
        "threads=1",
    ]);
    assert_eq!(out.lines().count(), 2);
    // `threads==1` on the schema step: locked, without a word.
    let out = run(&["run", KEYVALUE, "default.schema", "threads=2"]);
    let err = text(&out.stderr);
    assert!(!err.contains("locks"), "{err}");
    assert!(err.contains("keyvalue_schema (stdout, 1 thread)"), "{err}");
    assert_eq!(
        text(&out.stdout).lines().count(),
        3,
        "UNDEF: each schema op once"
    );
}

#[test]
fn locks_hold_against_later_overrides_in_the_library_too() {
    let a = load(
        "params: {driver: diag}\nops: {o: x}\nscenarios:\n  s:\n    - run cyclerate===500 threads==2 cycles=10\n",
    )
    .unwrap();
    let paceline::Step::Run(step) = &a.scenario("s").unwrap().steps[0] else {
        panic!("a run step")
    };
    let cli = Drivers::builtin()
        .loader()
        .overrides(
            &[
                ("rate".into(), "9000".into()),
                ("threads".into(), "8".into()),
                ("cycles".into(), "3".into()),
            ],
            Some("diag"),
        )
        .unwrap();
    let o = step.then(&cli);
    assert_eq!(o.rate.unwrap().rate(), 500.0, "`===` keeps the step's rate");
    assert_eq!(o.threads, Some(2), "`==` keeps the step's threads");
    assert_eq!(o.cycles.unwrap().len(), 3, "`=` gives way");
    assert_eq!(
        step.overridden_locks(&cli),
        ["rate"],
        "only `===` is reported"
    );
}

#[test]
fn the_http_workload_renders_its_requests_with_op_ratios_through_stdout() {
    let out = stdout_of(&[
        "run",
        HTTP,
        "default",
        "driver=stdout",
        "threads=1",
        "template={op} {method} {uri} {body}",
        "rampup-cycles=2",
        "main-cycles=6",
    ]);
    let want = r#"rampup__put-item PUT http://127.0.0.1:8080/items/0 {"id": 0, "name": "zero", "region": "eu"}
rampup__put-item PUT http://127.0.0.1:8080/items/1 {"id": 1, "name": "one", "region": "us-west"}
main__get-item GET http://127.0.0.1:8080/items/536 
main__search GET http://127.0.0.1:8080/search?q=a1&limit=20 
main__update-item POST http://127.0.0.1:8080/items/111 {"id": 111, "region": "us-west"}
main__get-item GET http://127.0.0.1:8080/items/54 
main__get-item GET http://127.0.0.1:8080/items/979 
main__get-item GET http://127.0.0.1:8080/items/619 
"#;
    assert_eq!(out, want);
}

#[test]
fn a_regex_tag_filter_with_two_conditions_selects_the_reads_once_each() {
    let out = stdout_of(&[
        "run",
        HTTP,
        "reads",
        "driver=stdout",
        "template=op {op}",
        "port=9",
    ]);
    // get-item (ratio 4) and search (ratio 1): UNDEF is one pass of the sequence.
    assert_eq!(
        out,
        "op main__get-item\nop main__search\nop main__get-item\nop main__get-item\nop main__get-item\n"
    );
}

#[test]
fn the_command_line_driver_supplies_a_missing_driver_and_checks_the_files_params() {
    let path = temp(
        "nodriver.yaml",
        "params: {cycles: 2}\nops:\n  o: 'x {{Identity()}}'\n",
    );
    assert_eq!(stdout_of(&["run", &path, "driver=stdout"]), "x 0\nx 1\n");
    let out = run(&["run", &path]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("give `driver=NAME` on the command line"));
    // The file's params are checked against the driver that runs.
    let path = temp(
        "diagparams.yaml",
        "params: {driver: diag, latency: 1ms}\nops: {o: x}\n",
    );
    // Another driver's params are not read in a dry run: one notice (issue 26).
    let out = run(&["run", &path, "driver=stdout"]);
    assert_eq!(out.status.code(), Some(0));
    let err = text(&out.stderr);
    assert!(err.contains("its params `latency` are not read"), "{err}");
    // An NB5 file's unknown driver is fine when the command line names one.
    let path = temp(
        "cql.yaml",
        "params: {driver: cql, cycles: 1}\nops: {o: x}\n",
    );
    assert_eq!(stdout_of(&["run", &path, "driver=stdout"]), "x\n");
}

#[test]
fn an_unknown_scenario_or_step_lists_the_named_ones() {
    let out = run(&["run", KEYVALUE, "default.ramp"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("no scenario `default.ramp`"), "{err}");
    assert!(err.contains("`default.rampup`"), "{err}");
}

#[test]
fn blocks_as_a_list_with_op_params_bindings_and_tags() {
    let a = load(
        r#"
tags: {suite: nb5}
bindings: {k: Mod(10)}
blocks:
  - name: write
    params: {ratio: 2, cl: ONE}
    bindings: {k: Add(100)}
    ops:
      - "PUT {k}"
      - put2: {stmt: "PUT2 {k}", params: {ratio: 3}, tags: {kind: bulk}}
  - ops:
      get: {op: "GET {k} {{Mul(2)}}", bindings: {k: Add(1000)}}
scenarios:
  s: run driver=stdout tags==kind:bulk
"#,
    )
    .unwrap();
    let names: Vec<&str> = a.ops().iter().map(|o| o.name.as_str()).collect();
    assert_eq!(names, ["write__stmt1", "write__put2", "block2__get"]);
    let ratios: Vec<u64> = a.ops().iter().map(|o| o.ratio).collect();
    assert_eq!(ratios, [2, 3, 1], "block params, then the op's own");
    let put2 = &a.ops()[1];
    assert_eq!(put2.tags["kind"], "bulk");
    assert_eq!(put2.tags["block"], "write");
    assert_eq!(put2.tags["suite"], "nb5");
    assert!(put2.field("tags").is_none() && put2.field("params").is_none());
    assert!(put2.field("cl").is_some(), "a block param is an op field");
    let plan = OpPlan::new(&a, &ParamOverrides::default());
    let render = |cycle: u64, op: usize| {
        let mut s = String::new();
        a.ops()[op]
            .field("stmt")
            .unwrap()
            .render_text_into(cycle, plan.bindings(), &mut s);
        s
    };
    assert_eq!(render(5, 0), "PUT 105", "the block's `k`");
    assert_eq!(
        render(5, 2),
        "GET 1005 10",
        "the op's `k` and an inline binding"
    );
    let o = ParamOverrides {
        tags: Some(TagFilter::parse("block:write").unwrap()),
        ..Default::default()
    };
    assert_eq!(OpPlan::new(&a, &o).sequence(), [0, 1, 0, 1, 1]);
    // The step's filter was checked against the ops when the file loaded.
    let err = first_problem(
        "params: {driver: stdout}\nblocks: {main: {ops: {o: x}}}\nscenarios:\n  s: run tags=block:mian\n",
    );
    assert!(
        err.starts_with("nb5.yaml:4:10: the tag filter `block:mian` selects no op"),
        "{err}"
    );
    assert!(err.contains("the blocks are `main`"), "{err}");
}

#[test]
fn nb5_binding_functions_and_type_annotations() {
    let eval = |e: &str, c: u64| Binding::parse("b", e).unwrap().eval(c);
    for c in 0..200 {
        assert!(matches!(eval("HashRange(5, 7)", c), Value::U64(5..=7)));
    }
    assert_eq!(eval("CycleRange(3)", 7), Value::U64(1));
    assert_eq!(eval("CycleRange(10, 13)", 7), Value::U64(11));
    assert_eq!(
        eval("NumberNameToString()", 1234),
        Value::Str("one thousand two hundred thirty four".into())
    );
    assert_eq!(eval("Combinations('A-C;0-1')", 3), Value::Str("B1".into()));
    assert_eq!(eval("FixedValue(7)", 3), Value::U64(7));
    assert_eq!(eval("FixedValues('a', 'b')", 3), Value::Str("b".into()));
    assert_eq!(eval("Clamp(2, 5)", 9), Value::U64(5));
    assert!(matches!(eval("AlphaNumericString(6)", 1), Value::Str(s) if s.len() == 6));
    assert!(matches!(eval("ToHashedUUID()", 1), Value::Str(s) if s.len() == 36));
    assert_eq!(
        eval("ToUUID()", 255),
        Value::Str("00000000-0000-4000-8000-0000000000ff".into())
    );
    let picks: std::collections::BTreeSet<String> = (0..100)
        .map(|c| eval("WeightedStrings('a:1;b:1;c')", c).to_string())
        .collect();
    assert_eq!(picks.len(), 3, "`;` separates WeightedStrings' items");
    // `-> type`: conversions at the end of a chain or after any call.
    let kind = |e: &str| Binding::parse("b", e).unwrap().kind();
    assert_eq!(kind("Mod(10) -> String"), Kind::Str);
    // NB5 resolves `Uniform(0, 9) -> int` to its discrete `long->long` form.
    assert_eq!(kind("Uniform(0, 9)->int; Add(1)"), Kind::U64);
    assert_eq!(kind("Mod(10) -> double"), Kind::F64);
    assert_eq!(kind("Mod(10) -> long"), Kind::U64);
    assert_eq!(kind("Normal(200, 40); Round(0)"), Kind::I64);
    assert!(
        Binding::parse("b", "Mod(3) -> Banana")
            .unwrap_err()
            .to_string()
            .contains("unknown type `Banana`")
    );
}

#[test]
fn unknown_and_unsupported_functions_say_what_to_do() {
    let err = first_problem(
        "params: {driver: diag}\nbindings: {k: 'Hash(); HashRnage(1, 5)'}\nops: {o: x}",
    );
    assert!(err.contains("did you mean `HashRange`?"), "{err}");
    // Far from everything: still the nearest.
    let err = first_problem("params: {driver: diag}\nbindings: {k: 'Zzzzzzzzzz()'}\nops: {o: x}");
    assert!(err.contains("did you mean `"), "{err}");
    let err = first_problem("params: {driver: diag}\nbindings: {k: 'Shuffle(0, 5)'}\nops: {o: x}");
    assert!(
        err.contains("NoSQLBench function that paceline does not support"),
        "{err}"
    );
    assert!(err.contains("docs/nb5.md"), "{err}");
    let err = first_problem("params: {driver: diag}\nops: {o: 'x {{Nope()}}'}");
    assert!(
        err.starts_with("nb5.yaml:2:15: inline binding: unknown function `Nope`"),
        "{err}"
    );
}

#[test]
fn nb5_params_cyclerate_threads_auto_and_undef() {
    let a = load(
        "params: {driver: diag, cyclerate: 500, threads: auto, cycles: UNDEF}\nops: {a: {ratio: 3, stmt: x}, b: y}",
    )
    .unwrap();
    let p = OpPlan::new(&a, &ParamOverrides::default());
    assert_eq!(p.params().rate.unwrap().rate(), 500.0);
    let cores = std::thread::available_parallelism().unwrap().get();
    assert_eq!(p.params().threads, cores);
    assert_eq!((p.params().cycles.start(), p.params().cycles.end()), (0, 4));
    let err = first_problem("params: {driver: diag, threads: many}\nops: {o: x}");
    assert!(err.contains("`auto` (one per core)"), "{err}");
}

#[test]
fn template_variables_without_default_are_unset_as_nb5_leaves_them() {
    // Issue 26: NB5 substitutes `UNSET:name` (and drops a param left so).
    let path = temp(
        "need.yaml",
        "params: {driver: stdout, cycles: 1, threads: TEMPLATE(t)}\nops: {o: 'to <<who>>'}\n",
    );
    assert_eq!(stdout_of(&["run", &path]), "to UNSET:who\n");
    assert_eq!(stdout_of(&["run", &path, "who=you"]), "to you\n");
}

#[test]
fn a_stdout_block_scalar_ends_its_line_once() {
    // Regression (issue 17): the `|` block's own line break doubled the newline.
    let path = temp(
        "block.yaml",
        "params: {driver: stdout, cycles: 2}\nops:\n  o: |\n    line {{Identity()}}\n",
    );
    assert_eq!(stdout_of(&["run", &path]), "line 0\nline 1\n");
}

#[test]
fn a_tab_in_the_yaml_is_named() {
    // Regression (issue 17): "found character that cannot start any token".
    let path = temp("tab.yaml", "params:\n\tdriver: diag\nops: {o: x}\n");
    let out = run(&["check", &path]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains(":2:1: not valid YAML: a tab character"),
        "{err}"
    );
    assert!(err.contains("spaces"), "{err}");
}

#[test]
fn a_driver_error_about_an_op_field_has_its_position() {
    // Regression (issue 17): `op get: unknown field uri` had no line and column.
    let path = temp(
        "field.yaml",
        "params: {driver: http}\nops:\n  get:\n    uri: /x\n",
    );
    let out = run(&["check", &path]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("field.yaml:4:5: "), "{err}");
    // `uri` is read as `url` now (issue 14); the error is about its value.
    assert!(err.contains("field `uri`: `/x` is a path"), "{err}");
}

#[test]
fn a_misspelt_bundled_name_gets_a_did_you_mean() {
    // Regression (issue 17): `run quikstart` had no did-you-mean.
    let out = run(&["run", "quikstart"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("did you mean `quickstart`?"));
}

#[test]
fn check_shows_round_0_as_an_integer() {
    // Regression (issue 17): `check` showed `Round(0)` values as `248.0`.
    let path = temp(
        "round.yaml",
        "params: {driver: diag}\nbindings: {t: 'Normal(200, 40); Round(0)'}\nops: {o: {n: '{t}'}}\n",
    );
    let out = stdout_of(&["check", &path]);
    assert!(!out.contains(".0"), "{out}");
    assert!(out.contains(r#"{"n":"#), "{out}");
}
