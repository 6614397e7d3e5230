use super::layout::parse_fields;
use super::render::push_csv;
use super::*;
use crate::clock::ManualClock;
use crate::engine::{OpRunner, WorkerContext};
use crate::sync::threads::{Mutex, lock};
use std::io;

fn plan(yaml: &str) -> Arc<OpPlan> {
    super::super::testing::plan(&Stdout, yaml)
}

fn err(yaml: &str) -> String {
    super::super::testing::refusal(&Stdout, yaml)
}

/// A writer into a shared byte vector.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        lock(&self.0).extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Capture {
    fn text(&self) -> String {
        String::from_utf8(lock(&self.0).clone()).unwrap()
    }
}

fn shared(yaml: &str, out: Box<dyn Write + Send>, flush_at: usize) -> Arc<Shared> {
    let p = plan(yaml);
    let layout = Layout::new(&p).unwrap();
    Arc::new(Shared::new(p, layout, out, "test".into(), flush_at))
}

fn runner(s: &Arc<Shared>) -> Box<dyn OpRunner> {
    let ctx = WorkerContext::new(0, "a", Arc::new(ManualClock::new()));
    StdoutWork(s.clone()).runner(&ctx).unwrap()
}

/// The output of `cycles` on one runner.
fn render(yaml: &str, cycles: std::ops::Range<u64>) -> String {
    let cap = Capture::default();
    let s = shared(yaml, Box::new(cap.clone()), FLUSH_AT);
    let mut r = runner(&s);
    for c in cycles {
        r.run(c).unwrap();
    }
    r.finish().unwrap();
    cap.text()
}

const KV: &str = r#"
params: {driver: stdout, FORMAT}
bindings:
  n: Mod(100)
  key: Mod(1000); ToString(); Prefix('key:')
  f: Mod(10); ToFloat()
ops:
  get: {stmt: 'GET {key}'}
  put: {stmt: 'SET {key} {n}', n: '{n}', size: 3, body: {id: '{n}', tags: [a, '#{n}'], f: '{f}'}}
  ping: {method: HEAD, uri: '/p/{n}'}
"#;

fn kv(format: &str) -> String {
    KV.replace("FORMAT", format)
}

#[test]
fn text_renders_stmt_or_all_fields() {
    // An op of several fields and no `stmt` (NB5's http form) is one JSON
    // object, names with values (issue 26, item 9).
    assert_eq!(
        render(&kv("format: text"), 1001..1004),
        "{\"method\":\"HEAD\",\"uri\":\"/p/1\"}\nGET key:2\nSET key:3 3\n"
    );
    assert_eq!(
        render(&kv("template: '{cycle} {op}: {stmt}|{uri}'"), 4..7),
        "4 put: SET key:4 4|\n5 ping: |/p/5\n6 get: GET key:6|\n"
    );
    assert_eq!(
        render(&kv("fields: [op, size, body]"), 1..3),
        "put 3 {\"f\":1.0,\"id\":1,\"tags\":[\"a\",\"#1\"]}\nping  \n"
    );
    assert_eq!(render(&kv("fields: 'cycle, n'"), 0..2), "0 \n1 1\n");
}

#[test]
fn templates_keep_other_braces() {
    assert_eq!(
        render(
            &kv("template: '{{op} {op} { x } {} {\"a\": {cycle}}'"),
            0..1
        ),
        "{op} get { x } {} {\"a\": 0}\n"
    );
}

#[test]
fn json_renders_one_typed_object_per_line() {
    assert_eq!(
        render(&kv("format: json"), 1..4),
        concat!(
            r##"{"cycle":1,"op":"put","stmt":"SET key:1 1","n":1,"size":3,"body":{"f":1.0,"id":1,"tags":["a","#1"]}}"##,
            "\n",
            r#"{"cycle":2,"op":"ping","method":"HEAD","uri":"/p/2"}"#,
            "\n",
            r#"{"cycle":3,"op":"get","stmt":"GET key:3"}"#,
            "\n",
        )
    );
    assert_eq!(
        render(&kv("format: json, fields: [n, op]"), 0..2),
        "{\"op\":\"get\"}\n{\"n\":1,\"op\":\"put\"}\n"
    );
}

#[test]
fn csv_has_a_header_and_quotes_what_needs_it() {
    assert_eq!(
        render(&kv("format: csv"), 0..3),
        concat!(
            "cycle,op,stmt,n,size,body,method,uri\n",
            "0,get,GET key:0,,,,,\n",
            "1,put,SET key:1 1,1,3,\"{\"\"f\"\":1.0,\"\"id\"\":1,\"\"tags\"\":[\"\"a\"\",\"\"#1\"\"]}\",,\n",
            "2,ping,,,,,HEAD,/p/2\n",
        )
    );
    let yaml = r#"
params: {driver: stdout, format: csv, fields: [op, s, t]}
ops:
  o: {s: "say \"hi\"\nbye", t: 'a,b'}
  p: {s: plain, t: "x\ry"}
"#;
    assert_eq!(
        render(yaml, 0..2),
        "op,s,t\no,\"say \"\"hi\"\"\nbye\",\"a,b\"\np,plain,\"x\ry\"\n"
    );
}

#[test]
fn the_csv_header_is_written_once_by_the_first_writer() {
    let cap = Capture::default();
    let s = shared(
        &kv("format: csv, fields: [cycle]"),
        Box::new(cap.clone()),
        4,
    );
    let mut a = runner(&s);
    let mut b = runner(&s);
    let mut c = runner(&s);
    b.run(1).unwrap();
    a.run(0).unwrap();
    b.run(3).unwrap();
    a.finish().unwrap();
    b.finish().unwrap();
    c.finish().unwrap();
    assert_eq!(cap.text(), "cycle\n1\n3\n0\n");

    // A run with no rows still gets its header.
    let cap = Capture::default();
    let s = shared(
        &kv("format: csv, fields: [cycle]"),
        Box::new(cap.clone()),
        4,
    );
    runner(&s).finish().unwrap();
    assert_eq!(cap.text(), "cycle\n");

    // Many threads, each writing often: still one header, first.
    let cap = Capture::default();
    let s = shared(
        &kv("format: csv, fields: [cycle]"),
        Box::new(cap.clone()),
        16,
    );
    std::thread::scope(|scope| {
        for t in 0..4 {
            let s = s.clone();
            scope.spawn(move || {
                let mut r = runner(&s);
                for c in (t..400).step_by(4) {
                    r.run(c).unwrap();
                }
                r.finish().unwrap();
            });
        }
    });
    let text = cap.text();
    let mut lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.remove(0), "cycle");
    let mut cycles: Vec<u64> = lines.iter().map(|l| l.parse().unwrap()).collect();
    cycles.sort_unstable();
    assert_eq!(cycles, (0..400).collect::<Vec<_>>());
}

#[test]
fn lines_wait_in_the_buffer_until_it_fills() {
    let cap = Capture::default();
    let s = shared(&kv("fields: cycle"), Box::new(cap.clone()), 6);
    let mut r = runner(&s);
    r.run(10).unwrap();
    assert_eq!(cap.text(), "");
    r.run(11).unwrap();
    assert_eq!(cap.text(), "10\n11\n");
    r.run(12).unwrap();
    r.finish().unwrap();
    assert_eq!(cap.text(), "10\n11\n12\n");
}

/// A closed pipe.
struct Broken;

impl Write for Broken {
    fn write(&mut self, _: &[u8]) -> io::Result<usize> {
        Err(io::Error::from(io::ErrorKind::BrokenPipe))
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_broken_pipe_is_a_fatal_closed_error_not_a_panic() {
    let s = shared(&kv("format: text"), Box::new(Broken), 1);
    let mut r = runner(&s);
    let e = r.run(0).unwrap_err();
    assert_eq!(e.kind(), "closed");
    assert!(e.is_fatal());
    assert_eq!(e.message(), "test was closed by its reader");
    assert_eq!(r.run(1).unwrap_err().kind(), "closed");
    assert!(r.finish().is_ok(), "the failed batches were dropped");
}

#[test]
fn bad_params_say_what_to_write() {
    assert_eq!(
        err(&kv("format: xml")),
        "driver `stdout`: param `format`: `xml` is not a format; use `text`, `json` or `csv`"
    );
    assert_eq!(
        err(&kv("format: '{stmt}'")),
        "driver `stdout`: param `format`: `{stmt}` is not a format; use `text`, `json` or `csv` \
             (for a line template, write `template: \"{stmt}\"`)"
    );
    assert_eq!(
        err(&kv("fields: [op, stm]")),
        "driver `stdout`: param `fields`: `stm` is not a field of any op; did you mean `stmt`? \
             write one of `cycle`, `op`, `stmt`, `n`, `size`, `body`, `method`, `uri`"
    );
    assert_eq!(
        err(&kv("template: '{op} {kye}'")),
        "driver `stdout`: param `template`: `{kye}` is not a field of any op; \
             write one of `cycle`, `op`, `stmt`, `n`, `size`, `body`, `method`, `uri`"
    );
    assert_eq!(
        err(&kv("template: '{key} {urj}'")),
        "driver `stdout`: param `template`: `{key}` is not a field of any op; \
             `key` is a binding: use it in an op field, then name the field; \
             write one of `cycle`, `op`, `stmt`, `n`, `size`, `body`, `method`, `uri`"
    );
    assert!(err(&kv("template: '{urj}'")).contains("did you mean `{uri}`? "));
    assert_eq!(
        err(&kv("fields: [op, op]")),
        "driver `stdout`: param `fields`: `op` is listed twice; list each value once"
    );
    assert_eq!(
        err(&kv("fields: []")),
        "driver `stdout`: param `fields`: is empty; name at least one value, such as `[cycle, op, stmt]`"
    );
    assert_eq!(
        err(&kv("fields: 3")),
        "driver `stdout`: param `fields`: 3 is not a list of field names; write `[cycle, op, stmt]` or `cycle,op,stmt`"
    );
    assert_eq!(
        err(&kv("format: json, template: '{op}'")),
        "driver `stdout`: param `template` is for `format: text` only; for json or csv choose the values with `fields`"
    );
    assert_eq!(
        err(&kv("template: '{op}', fields: [op]")),
        "driver `stdout`: set `template` or `fields`, not both (a template names its fields: \"{op} {stmt}\")"
    );
    assert_eq!(
        err(&kv("filename: 7")),
        "driver `stdout`: param `filename`: 7 is not a path; write a path such as `ops.txt`, or `-` for standard output"
    );
    let dir = std::env::temp_dir().join(format!("paceline-no-such-dir-{}", std::process::id()));
    let path = dir.join("out.txt").display().to_string();
    let e = err(&kv(&format!("filename: '{path}'")));
    assert!(
        e.starts_with(&format!(
            "driver `stdout`: param `filename`: cannot create `{path}`: "
        )),
        "{e}"
    );
    assert!(e.contains("os error"), "{e}");
}

#[test]
fn typos_in_param_names_are_caught_at_load() {
    let e = crate::activity::Loader::new(&["stdout"])
        .driver_params("stdout", PARAMS)
        .from_str(
            "params: {driver: stdout, fromat: json}\nops: {o: x}",
            "t.yaml",
        )
        .unwrap_err();
    assert!(e.to_string().contains("did you mean `format`?"), "{e}");
}

#[test]
fn the_parsers() {
    assert_eq!(
        parse_fields(&serde_json::json!(" a , b ")).unwrap(),
        ["a", "b"]
    );
    assert!(parse_fields(&serde_json::json!("a,,b")).is_err());
    let mut s = String::new();
    push_csv("a\rb", &mut s);
    push_csv("\"", &mut s);
    assert_eq!(s, "\"a\rb\"\"\"\"\"");
}

/// Issue 26 (item 4): a block's `params` (NB5's op params, `cl: LOCAL_QUORUM`)
/// were printed after an op without `stmt` (` LOCAL_QUORUM` ended the CQL
/// text); they are fields for drivers, not op text.
#[test]
fn op_params_are_not_printed_as_op_text() {
    let yaml = r#"
params: {driver: stdout}
bindings: {k: Mod(10)}
blocks:
  rampup:
    params: {cl: LOCAL_QUORUM, ratio: 1}
    ops:
      ins:
        prepared: "insert {k};"
        params: {instrument: true}
"#;
    assert_eq!(render(yaml, 3..4), "insert 3;\n");
    let json = yaml.replace("{driver: stdout}", "{driver: stdout, format: json}");
    assert_eq!(
        render(&json, 3..4),
        "{\"cycle\":3,\"op\":\"rampup__ins\",\"prepared\":\"insert 3;\"}\n"
    );
    // Named, they are there.
    let named = yaml.replace(
        "{driver: stdout}",
        "{driver: stdout, fields: 'prepared,cl'}",
    );
    assert_eq!(render(&named, 3..4), "insert 3; LOCAL_QUORUM\n");
}
