//! The workloads NoSQLBench 5 ships (`tests/nb5/shipped/`), step by step
//! through the real binary as NB5 would run each step (issue 26); the NB5
//! grammar itself is tested in `tests/nb5.rs`.

mod support;

use support::bin::{run, stdout_of, text, write_temp as temp};
/// The command NB5 itself takes for `driver=stdout cycles=5 threads=1` on
/// `step` (`SCENARIO.STEP`) of the file at `path`: a param the step locks
/// with `===` is refused there, so its template variable gets the value
/// (`main-cycles=5`), or the param is left off (as tests/nb5_corpus.py runs).
fn nb5_args(path: &str, step: &str) -> Vec<String> {
    let raw = std::fs::read_to_string(path).unwrap();
    let doc: serde_yaml::Value = serde_yaml::from_str(&raw).unwrap();
    let cmd = step
        .split_once('.')
        .and_then(|(sc, st)| {
            let body = doc.get("scenarios")?.get(sc)?;
            match body {
                serde_yaml::Value::String(one) => Some(one.as_str()),
                serde_yaml::Value::Sequence(items) => {
                    items.get(st.parse::<usize>().ok()? - 1)?.as_str()
                }
                other => other.get(st)?.as_str(),
            }
        })
        .or_else(|| doc.get("scenarios")?.get(step)?.as_str())
        .unwrap_or("")
        .to_string();
    let locked = |key: &str| {
        cmd.split_whitespace().find_map(|w| {
            let v = w.strip_prefix(key)?.strip_prefix("===")?;
            Some(
                v.strip_prefix("TEMPLATE(")
                    .and_then(|r| r.split([',', ')']).next())
                    .map(str::to_string),
            )
        })
    };
    let mut out = Vec::new();
    if locked("driver").is_none() && locked("type").is_none() {
        out.push("driver=stdout".to_string());
    }
    for (key, value) in [("cycles", "5"), ("threads", "1")] {
        match locked(key) {
            None => out.push(format!("{key}={value}")),
            Some(Some(var)) => out.push(format!("{var}={value}")),
            Some(None) => {}
        }
    }
    out
}

/// Every scenario step of `file` (a shipped NB5 workload under
/// tests/nb5/shipped/) as a dry run, one by one, with `extra` params:
/// (step, exit code, stdout, stderr).
fn shipped_run(file: &str, steps: &[&str], extra: &[&str]) -> Vec<(String, i32, String, String)> {
    let path = format!("{}/tests/nb5/shipped/{file}", env!("CARGO_MANIFEST_DIR"));
    steps
        .iter()
        .map(|s| {
            let mut args = vec!["run".to_string(), path.clone()];
            if !s.is_empty() {
                args.push(s.to_string());
            }
            args.extend(nb5_args(&path, s));
            args.extend(extra.iter().map(|e| e.to_string()));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = run(&args);
            (
                s.to_string(),
                out.status.code().unwrap_or(-1),
                text(&out.stdout),
                text(&out.stderr),
            )
        })
        .collect()
}

/// [`shipped_run`] without its stdout: (step, exit code, stderr).
fn shipped_steps(file: &str, steps: &[&str]) -> Vec<(String, i32, String)> {
    shipped_run(file, steps, &[])
        .into_iter()
        .map(|(s, c, _, e)| (s, c, e))
        .collect()
}

#[test]
fn shipped_nb5_workloads_render_step_by_step() {
    for (file, steps) in [
        ("kafka_producer.yaml", &[""][..]),
        ("bindingtest.yaml", &[""][..]),
        ("find_one.yaml", &["default.find_one"][..]),
        (
            "sequences.yaml",
            &["concat.1", "bucket.1", "interval.1"][..],
        ),
    ] {
        for (step, code, err) in shipped_steps(file, steps) {
            assert_eq!(code, 0, "{file} {step}: {err}");
        }
    }
}

#[test]
fn a_shipped_step_that_nb5_cannot_run_fails_alone() {
    // cql_keyvalue's `main` steps filter `block:main-.*` where the blocks are
    // `main_read` and `main_write`: NB5 selects nothing there either. Its
    // schema and rampup steps still render.
    let r = shipped_steps(
        "cql_keyvalue.yaml",
        &["default.schema", "default.rampup", "default.main"],
    );
    assert_eq!(r[0].1, 0, "{}", r[0].2);
    assert_eq!(r[1].1, 0, "{}", r[1].2);
    assert_eq!(r[2].1, 2);
    assert!(r[2].2.contains("block:main-.*"), "{}", r[2].2);
    // The message says NB5 cannot run it either, and names the fix.
    assert!(
        r[2].2.contains("NB5 cannot run this step either"),
        "{}",
        r[2].2
    );
    assert!(
        r[2].2.contains("did you mean `tags=block:main_.*`?"),
        "{}",
        r[2].2
    );
}

/// Issue 26 item 8: a block NB5 reads as having no ops (its ops under a
/// misspelt key, `oops:`) fails only the step that selects it; NB5 ignores a
/// block's unknown keys. `check` still reports it.
#[test]
fn a_block_without_ops_fails_only_the_step_that_selects_it() {
    let r = shipped_run(
        "http-docsapi-search-advanced.yaml",
        &["main-get-in", "main-get-mem-and"],
        &["auth_token=T"],
    );
    assert_eq!(r[0].1, 0, "{}", r[0].3);
    // Field-map http ops print as one JSON object of names and values.
    let first = r[0].2.lines().next().unwrap();
    assert!(
        first.starts_with(r#"{"method":"GET","uri":"http://"#),
        "{first}"
    );
    assert!(first.contains(r#""X-Cassandra-Token":"T""#), "{first}");
    assert_eq!(r[1].1, 2);
    assert!(
        r[1].3.contains("NB5 cannot run this step either"),
        "{}",
        r[1].3
    );
    let path = format!(
        "{}/tests/nb5/shipped/http-docsapi-search-advanced.yaml",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = run(&["check", &path, "driver=stdout", "auth_token=T"]);
    assert!(
        text(&out.stdout).contains("block `main-get-mem-and` has no `ops`")
            || text(&out.stderr).contains("block `main-get-mem-and` has no `ops`"),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// Issue 26 item 3: NB5's optimizer commands are skipped with a note naming
/// what NB5 does and paceline's `findmax`; the step alone is refused, as NB5
/// refuses it (its activity is not running).
#[test]
fn nb5_findmax_steps_are_skipped_with_a_note_and_refused_alone() {
    let r = shipped_run(
        "findmax_rate.yaml",
        &["optimize_rate", "optimize_rate.findmax"],
        &[],
    );
    assert_eq!(r[0].1, 0, "{}", r[0].3);
    assert_eq!(r[0].2.lines().count(), 5, "{}", r[0].2);
    assert!(
        r[0].3.contains("step `findmax` (`findmax`) is skipped"),
        "{}",
        r[0].3
    );
    assert!(r[0].3.contains("paceline findmax"), "{}", r[0].3);
    assert_eq!(r[1].1, 2);
    assert!(
        r[1].3.contains("cannot run this step alone either"),
        "{}",
        r[1].3
    );
}

/// Issue 26 items 7 and 8: another driver's step params are a notice in a
/// dry run; `type` is NB5's name of `driver`; a file of bindings alone makes
/// NB5's synthetic op, its `bindings='REGEX'` unquoted as NB5 reads it.
#[test]
fn nb5_step_params_type_and_quoted_bindings() {
    let path = temp(
        "weaviate.yaml",
        "params: {driver: weaviate}\nscenarios:\n  s:\n    a: run tags==block:b uri=TEMPLATE(host,localhost:8080) grpc_port=6334 cycles=2\nblocks:\n  b:\n    ops:\n      o: 'x {{Identity()}}'\n",
    );
    let out = run(&["run", &path, "s.a", "driver=stdout", "threads=1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "x 0\nx 1\n");
    let err = text(&out.stderr);
    assert!(
        err.contains("`uri`") && err.contains("`grpc_port`"),
        "{err}"
    );
    assert!(err.contains("are not read"), "{err}");

    let path = temp(
        "typed.yaml",
        "scenarios:\n  default: run type===stdout format=readout bindings='cycle|n'\nbindings:\n  cycle: Identity()\n  n: Mod(3)\n  other: Add(5)\n",
    );
    let out = stdout_of(&["run", &path, "cycles=2", "threads=1"]);
    assert_eq!(out, "cycle : 0\n    n : 0\n\ncycle : 1\n    n : 1\n\n");
}

/// Issue 26 item 8: NB5 reads a file's ops under `op` (or `operation`,
/// `stmt`, `statement`) as under `ops`.
#[test]
fn a_top_level_op_section_is_the_files_ops() {
    let out = stdout_of(&[
        "run",
        &temp("op.yaml", "op: 'n={{Identity()}}'\n"),
        "driver=stdout",
        "cycles=2",
    ]);
    assert_eq!(out, "n=0\nn=1\n");
    let path = temp(
        "both.yaml",
        "params: {driver: stdout}\nops: {a: x}\nop: {b: y}\n",
    );
    let out = run(&["run", &path]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("both `ops` and `op`"),
        "{}",
        text(&out.stderr)
    );
}

/// Issue 26 item 11: NB5's command-line options map onto paceline's, with a
/// note each; `--logs-dir` is refused with the equivalent named.
#[test]
fn nb5_command_line_options_are_mapped_or_refused() {
    let out = run(&[
        "run",
        "driver=stdout",
        "op=x",
        "cycles=2",
        "--progress",
        "console:1s",
        "-vv",
        "--show-stacktraces",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "x\nx\n");
    let err = text(&out.stderr);
    assert!(
        err.contains("NB5's `--progress console:1s` is `--progress --report-interval 1s` here"),
        "{err}"
    );
    assert!(err.contains("NB5's `-vv` is not needed here"), "{err}");
    let out = run(&["run", "driver=stdout", "op=x", "--logs-dir", "logs"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("`2> DIR/paceline.log`"),
        "{}",
        text(&out.stderr)
    );
}

/// Issue 26 item 4: an NB5 file's doc-level and block params (`cl`,
/// `prepared: true`, `idempotent`) are op params, never op text: a dry run
/// prints the statement alone, and names the params it does not read once.
#[test]
fn nb5_op_params_are_never_printed_into_the_op_text() {
    let path = temp(
        "cqlparams.yaml",
        "params: {driver: cql, cl: LOCAL_QUORUM, prepared: true, instrument: true}\n\
         bindings: {k: Mod(3)}\n\
         blocks:\n  main:\n    params: {cl: ONE, ratio: 1}\n    ops:\n      read: select * from t where k={k}\n      write: {raw: 'insert {k}', idempotent: true}\n    \
         nested:\n      ops: {x: y}\n",
    );
    let out = run(&["run", &path, "driver=stdout", "cycles=2", "threads=1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "select * from t where k=0\ninsert 1\n");
    let err = text(&out.stderr);
    assert_eq!(err.matches("are not read").count(), 1, "{err}");
    assert!(err.contains("`cl`, `prepared`"), "{err}");
    // A block indented under another: NB5 ignores it, with a note here.
    assert!(
        err.contains("`nested` inside block `main` holds ops but is not a block"),
        "{err}"
    );
}

/// A step's unlocked param that the command line sets is replaced before NB5
/// reads it: its own value (a placeholder default) is not checked then.
#[test]
fn a_steps_param_replaced_by_the_command_line_is_not_read() {
    let path = temp(
        "trainsize.yaml",
        "params: {driver: cql}\nscenarios:\n  s:\n    rampup: run cycles=TEMPLATE(trainsize,set-the-trainsize) threads=auto\nops:\n  o: 'x {{Identity()}}'\n",
    );
    let out = stdout_of(&[
        "run",
        &path,
        "s.rampup",
        "driver=stdout",
        "cycles=2",
        "threads=1",
    ]);
    assert_eq!(out, "x 0\nx 1\n");
    let out = run(&["run", &path, "s.rampup", "driver=stdout", "threads=1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("`set-the-trainsize` is not a cycle range"),
        "{}",
        text(&out.stderr)
    );
}

/// A binding that holds a template variable nobody set says that NB5 cannot
/// run the step either, and names the variable to set.
#[test]
fn an_unset_template_variable_in_a_binding_names_the_variable() {
    let path = temp(
        "unset.yaml",
        "params: {driver: stdout}\nbindings:\n  v: HashedLineToString('data/TEMPLATE(wordsfile).txt')\nops:\n  o: 'x {v}'\n",
    );
    let out = run(&["run", &path, "cycles=1"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("the template variable `wordsfile` has no default and is not set"),
        "{err}"
    );
    assert!(err.contains("cannot run this step either"), "{err}");
}

/// NB5 refuses a step command whose quotes do not pair up (the shipped
/// cqlvectors.yaml's `bindings='"'hof_ten.*'`); so does paceline, saying so.
#[test]
fn an_unpaired_quote_in_a_step_is_refused_as_nb5_refuses_it() {
    let path = temp(
        "quotes.yaml",
        "scenarios:\n  ok: run driver=stdout bindings='n'\n  bad: run driver=stdout bindings='\"'n.*'\nbindings: {n: Identity()}\n",
    );
    assert_eq!(stdout_of(&["run", &path, "ok", "cycles=1"]), "n=0\n");
    let out = run(&["run", &path, "bad", "cycles=1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("Unclosed quote found in scenario cmd"),
        "{}",
        text(&out.stderr)
    );
}

/// Issue 26, NB5's binding syntax and place data, on shipped files:
/// `cql_vector_typed.yaml`'s `vector_value` leaves `CqlVector(`'s `)` out
/// before its `;`, which NB5's parser recovers (docs/nb5.md, "NB5's
/// grammar"), so its steps render the vector, normalized; the docsapi
/// workload's `rampup-write` draws `Cities()` from the bundled census places
/// and its `match1` from `CoinFunc`.
#[test]
fn shipped_bindings_with_nb5s_syntax_and_place_data_render() {
    let r = shipped_run(
        "cql_vector_typed.yaml",
        &["default.rampup", "default.main"],
        &[],
    );
    for (step, code, out, err) in &r {
        assert_eq!(*code, 0, "{step}: {err}");
        let vector = out
            .split('[')
            .nth(1)
            .and_then(|v| v.split(']').next())
            .unwrap_or_else(|| panic!("{step}: no vector in {out}"));
        let norm: f64 = vector
            .split(", ")
            .map(|x| x.parse::<f64>().unwrap().powi(2))
            .sum();
        // NormalizeCqlVector rounds each element to a float, as NB5's.
        assert!((norm - 1.0).abs() < 1e-7, "{step}: unit length: {vector}");
        assert_eq!(vector.split(", ").count(), 5, "{step}: {vector}");
    }
    let r = shipped_run(
        "http-docsapi-search-advanced.yaml",
        &["rampup-write"],
        &["auth_token=T"],
    );
    assert_eq!(r[0].1, 0, "{}", r[0].3);
    let lines: Vec<&str> = r[0].2.lines().collect();
    assert_eq!(lines.len(), 5, "{}", r[0].2);
    for line in lines {
        let city = line
            .split(r#"\"city\":   \""#)
            .nth(1)
            .and_then(|c| c.split(r#"\""#).next())
            .unwrap_or_else(|| panic!("no city in {line}"));
        assert!(!city.is_empty() && !city.ends_with(" city"), "{city}");
        assert!(
            line.contains(r#"\"match1\": 1000,"#) || line.contains(r#"\"match1\": 0,"#),
            "{line}"
        );
    }
}
