//! The `stdout` driver end to end: activities run on the engine, written to a file.

use paceline::{
    Activity, Cycles, Drivers, Engine, ManualClock, OpPlan, Outcome, ParamOverrides, StartError,
};
use std::path::PathBuf;

/// A path in the temp directory unique to this process and `name`, removed on drop.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str) -> Self {
        let path =
            std::env::temp_dir().join(format!("paceline-stdout-{}-{name}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        Self(path)
    }

    fn read(&self) -> String {
        std::fs::read_to_string(&self.0).unwrap()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn load(yaml: &str) -> Activity {
    Drivers::builtin()
        .loader()
        .from_str(yaml, "t.yaml")
        .unwrap()
}

/// Overrides that send the output to `file`.
fn to_file(file: &TempFile) -> ParamOverrides {
    let mut o = ParamOverrides::default();
    o.driver_params
        .insert("filename".into(), file.0.display().to_string().into());
    o
}

/// Runs `activity` with `o` on a manual clock, to completion.
fn run(activity: &Activity, o: &ParamOverrides) {
    let d = Drivers::builtin();
    let run = d
        .start(&Engine::with_clock(ManualClock::new()), activity, o)
        .unwrap();
    assert_eq!(run.wait(), Outcome::Completed);
}

/// Lines of about 330 bytes, so each of four workers fills its 64 KiB buffer
/// and writes mid-run as well as at the end.
const WIDE: &str = r#"
params: {driver: stdout, threads: 4, cycles: 1000, FORMAT}
bindings:
  key: Mod(1000); ToString(); Prefix('key:')
  pad: AlphaNum(300)
ops:
  get: 'GET {key} {pad}'
  put: {ratio: 2, stmt: 'PUT {key} {pad}'}
"#;

#[test]
fn four_threads_write_every_cycle_once_in_whole_lines() {
    let a = load(&WIDE.replace("FORMAT", "template: '{cycle} {op} {stmt}'"));
    let file = TempFile::new("text4");
    run(&a, &to_file(&file));
    let plan = OpPlan::new(&a, &ParamOverrides::default());
    let text = file.read();
    assert!(text.ends_with('\n'));
    let mut seen = vec![0u32; 1000];
    for line in text.lines() {
        let cycle: u64 = line.split(' ').next().unwrap().parse().unwrap();
        let expected = format!(
            "{cycle} {} {}",
            plan.op_for_cycle(cycle).name,
            plan.render_field(cycle, "stmt").unwrap()
        );
        assert_eq!(line, expected, "a torn or mixed line");
        seen[cycle as usize] += 1;
    }
    assert!(seen.iter().all(|&n| n == 1), "every cycle exactly once");
}

#[test]
fn four_threads_write_whole_json_lines() {
    let a = load(&WIDE.replace("FORMAT", "format: json"));
    let file = TempFile::new("json4");
    run(&a, &to_file(&file));
    let plan = OpPlan::new(&a, &ParamOverrides::default());
    let mut seen = vec![0u32; 1000];
    for line in file.read().lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("a whole JSON object");
        let cycle = v["cycle"].as_u64().unwrap();
        assert_eq!(v["op"], plan.op_for_cycle(cycle).name.as_str());
        assert_eq!(v["stmt"], plan.render_field(cycle, "stmt").unwrap());
        seen[cycle as usize] += 1;
    }
    assert!(seen.iter().all(|&n| n == 1), "every cycle exactly once");
}

#[test]
fn four_threads_share_one_csv_header() {
    let a = load(&WIDE.replace("FORMAT", "format: csv"));
    let file = TempFile::new("csv4");
    run(&a, &to_file(&file));
    let text = file.read();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("cycle,op,stmt"));
    let mut cycles: Vec<u64> = lines
        .map(|l| l.split(',').next().unwrap().parse().unwrap())
        .collect();
    cycles.sort_unstable();
    assert_eq!(cycles, (0..1000).collect::<Vec<_>>());
}

const GOLDEN: &str = r#"
params: {driver: stdout, cycles: 4, FORMAT}
bindings:
  id: Mod(100)
  user: Template('user-{}', Mul(7); Mod(10))
ops:
  read: {stmt: 'GET /users/{user}', id: '{id}'}
  write: {stmt: 'PUT /users/{user}', body: {name: 'Ann, "A"', n: '{id}'}}
"#;

fn golden(format: &str) -> String {
    let a = load(&GOLDEN.replace("FORMAT", format));
    let file = TempFile::new(&format!("golden-{}", format.replace([' ', ':', ','], "_")));
    run(&a, &to_file(&file));
    file.read()
}

#[test]
fn one_thread_writes_in_cycle_order() {
    assert_eq!(
        golden("format: text"),
        "GET /users/user-0\nPUT /users/user-7\nGET /users/user-4\nPUT /users/user-1\n"
    );
    assert_eq!(
        golden("template: '{cycle}\t{op}\t{id}'"),
        "0\tread\t0\n1\twrite\t\n2\tread\t2\n3\twrite\t\n"
    );
    assert_eq!(
        golden("format: json"),
        concat!(
            r#"{"cycle":0,"op":"read","stmt":"GET /users/user-0","id":0}"#,
            "\n",
            r#"{"cycle":1,"op":"write","stmt":"PUT /users/user-7","body":{"n":1,"name":"Ann, \"A\""}}"#,
            "\n",
            r#"{"cycle":2,"op":"read","stmt":"GET /users/user-4","id":2}"#,
            "\n",
            r#"{"cycle":3,"op":"write","stmt":"PUT /users/user-1","body":{"n":3,"name":"Ann, \"A\""}}"#,
            "\n",
        )
    );
    assert_eq!(
        golden("format: csv"),
        concat!(
            "cycle,op,stmt,id,body\n",
            "0,read,GET /users/user-0,0,\n",
            "1,write,PUT /users/user-7,,\"{\"\"n\"\":1,\"\"name\"\":\"\"Ann, \\\"\"A\\\"\"\"\"}\"\n",
            "2,read,GET /users/user-4,2,\n",
            "3,write,PUT /users/user-1,,\"{\"\"n\"\":3,\"\"name\"\":\"\"Ann, \\\"\"A\\\"\"\"\"}\"\n",
        )
    );
}

#[test]
fn the_bundled_kv_activity_renders_its_statements() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/activities/kv-stdout.yaml");
    let a = Drivers::builtin().load(path).unwrap();
    let file = TempFile::new("kv");
    let mut o = to_file(&file);
    o.cycles = Some(Cycles::new(0, 50).unwrap());
    run(&a, &o);
    let text = file.read();
    assert_eq!(text.lines().count(), 50);
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("SET key:") {
            let json = rest.split_once(' ').unwrap().1;
            let v: serde_json::Value = serde_json::from_str(json).unwrap();
            assert_eq!(v["id"].as_str().unwrap().len(), 36);
        } else {
            assert!(line.starts_with("GET key:"), "{line}");
        }
    }
}

#[test]
fn a_path_that_cannot_be_created_fails_the_start() {
    let a = load("params: {driver: stdout}\nops: {o: x}");
    let dir = TempFile::new("no-such-dir");
    let path = dir.0.join("out.txt").display().to_string();
    let mut o = ParamOverrides::default();
    o.driver_params
        .insert("filename".into(), path.clone().into());
    let err = Drivers::builtin()
        .start(&Engine::with_clock(ManualClock::new()), &a, &o)
        .unwrap_err();
    assert!(matches!(err, StartError::Driver(_)), "{err}");
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!(
            "driver `stdout`: param `filename`: cannot create `{path}`: "
        )),
        "{msg}"
    );
}

/// Regression: preparing an activity (what `paceline check` does) opened the
/// output file with truncation and emptied it; now only a run empties it.
#[test]
fn preparing_does_not_empty_the_output_file_and_a_run_replaces_it() {
    let file = TempFile::new("keep.txt");
    std::fs::write(&file.0, "earlier output\n").unwrap();
    let a = load(
        "params: {driver: stdout, cycles: 2}\nops: {o: 'line {cycle}'}\nbindings: {cycle: Identity()}",
    );
    let o = to_file(&file);
    let drivers = Drivers::builtin();
    drivers.prepare(&a, &o).unwrap();
    assert_eq!(file.read(), "earlier output\n");
    let run = drivers
        .start(&Engine::with_clock(ManualClock::new()), &a, &o)
        .unwrap();
    run.wait();
    assert_eq!(file.read(), "line 0\nline 1\n");
}
