//! The real binary for integration tests: how to run it, where its files go, and its
//! output as text. (Test binaries each run in their own process, so the process id
//! keeps their temp directories apart.)

#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};

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
