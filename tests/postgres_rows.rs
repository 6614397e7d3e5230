//! What the `postgres` driver counts and binds, against a real PostgreSQL
//! cluster that each test creates (`tests/support/postgres.rs`): rows per op
//! when ops are retried or fail (issue 22's audit, H4 and L1), `raw` texts
//! that mix writes and reads (M6), list bindings into array columns (M2), and
//! values a narrower type cannot hold (M3). Without the server binaries each
//! test prints `skipping: ...` and passes.
#![cfg(not(loom))]

mod support;

use paceline::{Drivers, Engine, Outcome, ParamOverrides, PgStats, Postgres, Snapshot};
use serde_json::Value;
use support::postgres::{PgServer, server};

/// Runs `yaml` (with `URL` the server's) to its end: the totals and the first
/// message of each error kind.
fn run(pg: &PgServer, yaml: &str) -> (Snapshot, Vec<(String, String)>) {
    let d = Drivers::builtin();
    let a = d
        .loader()
        .from_str(&yaml.replace("URL", &pg.url()), "rows.yaml")
        .unwrap_or_else(|e| panic!("{e}"));
    let run = d
        .start(&Engine::new(), &a, &ParamOverrides::default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(run.wait(), Outcome::Completed);
    (run.snapshot(), run.metrics().first_errors())
}

/// Regression (issue 22, audit H4): each try of a retried `expect_rows`
/// check was counted as an op, so 20 ops that read 10 rows said "10 rows in
/// 40 ops, 0.25 per op".
#[test]
fn a_retried_row_check_counts_each_op_once_at_its_last_try() {
    let Some(pg) = server() else { return };
    pg.psql(
        "create table kv (k int primary key, v text); \
         insert into kv select g, 'v' from generate_series(0, 9) g",
    );
    let (t, _) = run(
        &pg,
        "params: {driver: postgres, url: 'URL', cycles: 20, alias: retried, \
                  errors: 'check:retry:2;count'}\n\
         bindings: {k: Identity()}\n\
         ops: {read: {query: 'select v from kv where k = {k}', expect_rows: 1}}",
    );
    // Keys 10..20 have no row: tried three times each, then counted.
    assert_eq!((t.ops(), t.errors_of("check"), t.retries()), (20, 10, 20));
    assert_eq!(
        Postgres::stats("retried"),
        Some(PgStats {
            answered_ops: 20,
            rows: 10
        })
    );
    // The same with every op in flight at once on one pipelined connection.
    let (t, _) = run(
        &pg,
        "params: {driver: postgres, url: 'URL', cycles: 20, alias: retried_piped, \
                  concurrency: 8, pipeline: true, errors: 'check:retry:2;count'}\n\
         bindings: {k: Identity()}\n\
         ops: {read: {query: 'select v from kv where k = {k}', expect_rows: 1}}",
    );
    assert_eq!((t.ops(), t.retries()), (20, 20));
    assert_eq!(
        Postgres::stats("retried_piped"),
        Some(PgStats {
            answered_ops: 20,
            rows: 10
        })
    );
}

/// Audit H4 and L1: a run whose ops all failed printed "0 rows in 0 ops, 0.00
/// per op" beside its 5 ops, and the JSON said 0 rows per op. The line says
/// how many ops were answered, the JSON's `rows_per_op` is null; a run with
/// some answered says "answered" in the line.
#[test]
fn the_summary_says_how_many_ops_were_answered_and_null_per_op_with_none() {
    let Some(pg) = server() else { return };
    pg.psql("create table kv (k int primary key); insert into kv select generate_series(0, 2)");
    for (block, op, line, stats) in [
        (
            "none",
            "{gone: {raw: 'select * from no_such_table where k = {k}'}}",
            "none (postgres): 0 rows: none of 5 ops answered",
            serde_json::json!({"answered_ops": 0, "rows": 0, "rows_per_op": null}),
        ),
        (
            // Keys 0..3 are taken (sql 23), 3 and 4 insert.
            "some",
            "{ins: 'insert into kv values ({k})'}",
            "some (postgres): 2 rows in 2 answered ops of 5, 1.00 per answered op",
            serde_json::json!({"answered_ops": 2, "rows": 2, "rows_per_op": 1.0}),
        ),
    ] {
        let yaml = support::bin::write_temp(
            &format!("pg-answered-{block}.yaml"),
            &format!(
                "params: {{url: '{}', driver: postgres, alias: {block}, cycles: 5, \
                          errors: count}}\n\
                 bindings: {{k: Identity()}}\n\
                 ops: {op}\n",
                pg.url()
            ),
        );
        let json = support::bin::temp(&format!("pg-answered-{block}.json"));
        let out = support::bin::run(&[
            "run",
            &yaml,
            "--no-progress",
            "--summary-json",
            json.to_str().unwrap(),
        ]);
        let (stdout, stderr) = (
            support::bin::text(&out.stdout),
            support::bin::text(&out.stderr),
        );
        assert_eq!(out.status.code(), Some(0), "{stderr}{stdout}");
        assert!(stdout.contains(line), "{block}: {stdout}");
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let a = &v["activities"][0];
        assert_eq!(a["cycles"]["completed"], 5, "{block}: {a}");
        assert_eq!(a["driver_stats"], stats, "{block}: {a}");
        let _ = std::fs::remove_file(json);
    }
}

/// Audit M6: a `raw` text counts each statement its own way, summed: the rows
/// of one that returns rows, the rows changed by one that does not (it
/// counted only the rows returned once any statement returned rows, so a
/// write beside a read was not counted, and adding a `SELECT` to five writes
/// made them count 1).
#[test]
fn a_raw_text_counts_each_statement_its_own_way() {
    let Some(pg) = server() else { return };
    pg.psql("create table kv (k int primary key, v text)");
    let cases = [
        // One row written, one read.
        (
            "write_read",
            "insert into kv values ({k}, ''v''); select v from kv where k = {k}",
            2,
        ),
        // In a transaction: 3 updated, 4 read, BEGIN and COMMIT none.
        (
            "in_tx",
            "begin; update kv set v = ''w'' where k < 3; select k from kv; commit",
            7,
        ),
        // A statement whose tag counts no rows (SHOW) counts the rows it
        // returned, beside one whose tag does.
        ("show", "update kv set v = ''x''; show work_mem", 5),
        // Only writes: the rows they changed.
        (
            "writes",
            "update kv set v = ''y'' where k = 0; delete from kv where k > 100",
            1,
        ),
    ];
    for (alias, sql, rows) in cases {
        let cycles = if alias == "write_read" { 4 } else { 1 };
        let (t, errors) = run(
            &pg,
            &format!(
                "params: {{driver: postgres, url: 'URL', cycles: {cycles}, alias: {alias}, \
                          errors: count}}\n\
                 bindings: {{k: Identity()}}\n\
                 ops: {{o: {{raw: '{sql}', expect_rows: {rows}}}}}"
            ),
        );
        assert_eq!(t.errors().count(), 0, "{alias}: {errors:?}");
        assert_eq!(
            Postgres::stats(alias),
            Some(PgStats {
                answered_ops: cycles,
                rows: cycles * rows
            }),
            "{alias}"
        );
    }
}

/// Regression (audit M2): a list binding (`ListSized...`, NB5's vectors) was
/// refused for an array column ("not an array").
#[test]
fn list_bindings_bind_to_array_columns() {
    let Some(pg) = server() else { return };
    pg.psql("create table a (k int primary key, x int4[], t text[], v float4[])");
    let (t, errors) = run(
        &pg,
        "params: {driver: postgres, url: 'URL', cycles: 5}\n\
         bindings:\n\
         \x20 k: Identity()\n\
         \x20 l: ListSizedStepped(3, Identity())\n\
         \x20 w: \"ListStepped(Template('a \\\"{}\\\"', Identity()), Template('b,{}', Identity()))\"\n\
         \x20 f: HashedFloatVectors(4)\n\
         ops: {ins: 'insert into a values ({k}, {l}, {w}, {f})'}",
    );
    assert_eq!((t.ops(), t.errors().count()), (5, 0), "{errors:?}");
    assert_eq!(
        pg.psql("select x::text || '|' || t::text || '|' || array_length(v, 1) from a where k = 4"),
        r#"{4,5,6}|{"a \"4\"","b,5"}|4"#
    );
    // An element its type cannot take is a bind error naming the element.
    pg.psql("create table s (x int2[])");
    let (t, errors) = run(
        &pg,
        "params: {driver: postgres, url: 'URL', cycles: '32766..32768', errors: count}\n\
         bindings: {l: \"ListSizedStepped(2, Identity())\"}\n\
         ops: {ins: 'insert into s values ({l})'}",
    );
    assert_eq!(t.errors_of("bind"), 1, "{errors:?}");
    assert_eq!(pg.psql("select count(*) from s"), "1");
    let msg = &errors.iter().find(|(k, _)| k == "bind").unwrap().1;
    assert!(
        msg.contains("binding `l` = `[32767, 32768]` cannot be _int2: element 1: out of range"),
        "{msg}"
    );
}

/// Regression (audit M3): `real` took 1e39 as Infinity and 1e-50 as 0 with no
/// error; `double precision` the same past its own range. PostgreSQL says
/// "out of range for type real"; so does the `bind` error, and nothing is
/// written.
#[test]
fn a_value_a_float_column_cannot_hold_is_a_bind_error() {
    let Some(pg) = server() else { return };
    pg.psql("create table f (x real, y float8)");
    // Cycles 37, 38 fit; 39 does not (the load check binds the first).
    let (t, errors) = run(
        &pg,
        "params: {driver: postgres, url: 'URL', cycles: '37..40', errors: count}\n\
         bindings: {e: \"Template('1e{}', Identity())\"}\n\
         ops: {w: {dmlwrite: 'insert into f values (?, 1)', prep_stmt_val_arr: '{e}'}}",
    );
    assert_eq!(t.errors_of("bind"), 1, "{errors:?}");
    let msg = &errors.iter().find(|(k, _)| k == "bind").unwrap().1;
    assert_eq!(
        msg,
        "op `w`: `prep_stmt_val_arr` value 1, binding `e` = `1e39` cannot be float4: \
         out of range for type real"
    );
    let (t, errors) = run(
        &pg,
        "params: {driver: postgres, url: 'URL', cycles: '44..47', errors: count}\n\
         bindings: {e: \"Template('1e-{}', Identity())\", d: \"Template('1e{}', Identity())\"}\n\
         ops:\n\
         \x20 small: {prepared: 'insert into f values ({e}, 1)'}\n\
         \x20 big: {prepared: 'insert into f values (1, {d})'}",
    );
    // Cycle 44 binds 1e-44 to real: subnormal, kept (as PostgreSQL keeps
    // it); 45 binds 1e45 to float8; 46 binds 1e-46, which rounds to zero.
    assert_eq!(t.errors_of("bind"), 1, "{errors:?}");
    assert_eq!(
        pg.psql("select count(*) filter (where x = 'Infinity' or x = 0 or y = 'Infinity') from f"),
        "0"
    );
    let (t, errors) = run(
        &pg,
        "params: {driver: postgres, url: 'URL', cycles: '308..310', errors: count}\n\
         bindings: {d: \"Template('1e{}', Identity())\"}\n\
         ops: {big: {prepared: 'insert into f values (1, {d})'}}",
    );
    assert_eq!(t.errors_of("bind"), 1, "{errors:?}");
    assert_eq!(pg.psql("select count(*) from f where y = 'Infinity'"), "0");
}
