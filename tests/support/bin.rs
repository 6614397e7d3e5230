//! The real binary for integration tests: how to run it (to its end, or as a
//! child to wait for and signal), where its files go, and its output as text.
//! (Test binaries each run in their own process, so the process id keeps their
//! temp directories apart.)

#![allow(dead_code)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `paceline`, the binary under test.
pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_paceline"))
}

/// Runs `paceline ARGS` to its end.
pub fn run(args: &[&str]) -> Output {
    bin()
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("the binary runs: {e}"))
}

/// Runs `paceline ARGS` to its end: its exit code (-1 if a signal ended it)
/// and its stdout followed by its stderr, as text.
pub fn code_and_text(args: &[&str]) -> (i32, String) {
    let out = run(args);
    let both = format!("{}{}", text(&out.stdout), text(&out.stderr));
    (out.status.code().unwrap_or(-1), both)
}

/// A path for `name` in this test process's own temp directory.
pub fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("paceline-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir.join(name)
}

/// Output bytes as text.
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs `paceline ARGS` and returns its stdout, asserting exit 0 (stderr in
/// the failure message).
pub fn stdout_of(args: &[&str]) -> String {
    let out = run(args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    text(&out.stdout)
}

/// Writes `body` to `name` in this test process's temp directory and returns
/// the path as text, for a command line.
pub fn write_temp(name: &str, body: &str) -> String {
    let path = temp(name);
    std::fs::write(&path, body).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    path.display().to_string()
}

/// A child that is killed (and reaped) on drop, so a failed assertion leaves
/// no run behind.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `cmd` (the binary, from [`bin`]) with no stdin and piped stdout and
/// stderr.
pub fn spawn_piped(cmd: &mut Command) -> Child {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("the binary runs: {e}"))
}

/// Starts `paceline run ARGS --summary-json SUMMARY` with no stdin and piped
/// stdout and stderr (for [`finish`]).
pub fn spawn_run(args: &[&str], summary: &Path) -> Child {
    spawn_piped(
        bin()
            .arg("run")
            .args(args)
            .arg("--summary-json")
            .arg(summary),
    )
}

/// Waits for `child`, whose output is piped (at most `limit`, then SIGKILL): its
/// exit code, stdout and stderr, and when it exited.
///
/// The pipes are read on two threads while this one polls `try_wait` (every
/// 5 ms) and kills through the `Child` itself, which never signals a reaped
/// child: no pid is signalled after it may be another process's, and no thread
/// outlives the call. The instant returned is the first poll that found the
/// child exited (or the kill).
pub fn finish(mut child: Child, limit: Duration) -> (Option<i32>, String, String, Instant) {
    fn drain(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<Vec<u8>> {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut buf);
            }
            buf
        })
    }
    let (out, err) = (drain(child.stdout.take()), drain(child.stderr.take()));
    let deadline = Instant::now() + limit;
    let (status, at) = loop {
        if let Some(status) = child.try_wait().unwrap_or_else(|e| panic!("{e}")) {
            break (status, Instant::now());
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let status = child.wait().unwrap_or_else(|e| panic!("{e}"));
            break (status, Instant::now());
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let out = out.join().unwrap_or_default();
    let err = err.join().unwrap_or_default();
    (status.code(), text(&out), text(&err), at)
}

/// Waits for `child` at most `limit`: its exit code and how long it took;
/// kills it and panics past that.
pub fn wait_within(child: &mut Child, limit: Duration) -> (Option<i32>, Duration) {
    let t0 = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (status.code(), t0.elapsed());
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sends signal `sig` (`TERM`, `INT`, `STOP`, ...) to `child` with `kill`;
/// fails the test unless it was delivered.
pub fn signal(child: &Child, sig: &str) {
    let ok = Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(child.id().to_string())
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "kill -{sig} {}", child.id());
}

/// The rest of `child`'s stderr (piped), once it closes.
pub fn stderr_of(child: &mut Child) -> String {
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    err
}

/// A CSV report's text as its header's names and its rows' cells, split on
/// commas (the reports quote no cell).
pub fn csv_table(text: &str) -> (Vec<&str>, Vec<Vec<&str>>) {
    let mut lines = text.lines();
    let header = lines.next().expect("a header line").split(',').collect();
    let rows = lines.map(|l| l.split(',').collect()).collect();
    (header, rows)
}

/// The JSON document in the file at `path` (a summary), or a panic naming the
/// file.
pub fn json(path: &Path) -> serde_json::Value {
    let doc = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&doc).unwrap_or_else(|e| panic!("{}: {e}: {doc}", path.display()))
}
