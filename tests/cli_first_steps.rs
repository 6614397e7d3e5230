//! Issue 24 item 16: what a new user tries first works as the README and the
//! docs write it: the control example, `check` with params alone, and a clear
//! message for a name that is neither a file nor a bundled activity.

use std::process::Stdio;
use std::time::{Duration, Instant};

#[path = "support/bin.rs"]
mod bin;
use bin::{bin, run, text};

#[path = "support/endpoint.rs"]
mod endpoint;
use endpoint::{bound_port, request};

/// The lines of the first sh block of `doc` (a file of the repository) that
/// starts with `first`.
fn block_starting(doc: &str, first: &str) -> Vec<String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(doc);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{doc}: {e}"));
    text.split("```sh\n")
        .skip(1)
        .map(|b| b.split("```").next().unwrap_or_default())
        .find(|b| b.starts_with(first))
        .unwrap_or_else(|| panic!("no sh block starting `{first}` in {doc}"))
        .lines()
        .map(str::to_string)
        .collect()
}

/// `curl -X METHOD -d 'BODY' localhost:7878/PATH` as (method, body, path).
fn curl(line: &str) -> (String, String, String) {
    let words: Vec<&str> = line.split_whitespace().collect();
    let method = words
        .iter()
        .position(|w| *w == "-X")
        .map_or("GET", |i| words[i + 1]);
    let body = line
        .split_once("-d ")
        .map(|(_, b)| {
            let b = b.trim_start();
            match b.strip_prefix('\'') {
                Some(q) => q.split('\'').next().unwrap_or_default().to_string(),
                None => b.split_whitespace().next().unwrap_or_default().to_string(),
            }
        })
        .unwrap_or_default();
    let url = words.last().copied().unwrap_or_default();
    let path = url.find('/').map_or("/", |i| &url[i..]);
    (method.to_string(), body, path.to_string())
}

/// Issue 24 item 16: the README's control example answered 404 for its first
/// 10 s (`main` starts after `ramp`'s warm-up). Run as written, with its own
/// waits, every request it makes succeeds.
#[test]
fn issue24_item16_the_readmes_control_example_works_as_written() {
    let lines = block_starting("README.md", "paceline run ramp --control 7878 &");
    let docs = block_starting("docs/cli.md", "paceline run ramp --control 7878 &");
    let first = lines.first().cloned().unwrap_or_default();
    assert_eq!(first, "paceline run ramp --control 7878 &", "{lines:?}");
    // The docs' copy waits as long before its first request to `main`.
    let wait = |block: &[String]| {
        block
            .iter()
            .take_while(|l| !l.starts_with("curl"))
            .find_map(|l| l.strip_prefix("sleep "))
            .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
    };
    assert_eq!(wait(&lines), wait(&docs), "README {lines:?}\ndocs {docs:?}");

    let mut child = bin()
        .args(["run", "ramp", "--control", "127.0.0.1:0", "--no-progress"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("the binary runs: {e}"));
    let started = Instant::now();
    let (port, mut stderr) = bound_port(&mut child, "control endpoint");
    let mut answers = Vec::new();
    for line in &lines[1..] {
        if let Some(secs) = line.strip_prefix("sleep ") {
            let secs: u64 = secs
                .split_whitespace()
                .next()
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("{line}"));
            // From the launch, as a shell running the block would.
            let until = Duration::from_secs(secs);
            std::thread::sleep(until.saturating_sub(started.elapsed()));
        } else if line.starts_with("curl ") {
            let (method, body, path) = curl(line);
            let (status, _, answer) = request(port, &method, &path, &body);
            answers.push((line.clone(), status, answer));
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(!answers.is_empty(), "{lines:?}");
    for (line, status, answer) in &answers {
        assert!(
            (200..300).contains(status),
            "`{line}` answered {status}: {answer}\n{}",
            stderr.text()
        );
    }
}

/// Issue 24 item 16: `check` refused params alone (`cannot read activity file
/// driver=diag`), which `run` accepts.
#[test]
fn issue24_item16_check_takes_params_alone_as_run_does() {
    let out = run(&["check", "driver=diag", "cycles=5", "rate=10"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(!stderr.contains("cannot read"), "{stderr}");
    assert!(stdout.contains("diag"), "{stdout}");
    // A bad param is still refused, with its place.
    let out = run(&["check", "driver=diag", "cycles=banana"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("param 2") && stderr.contains("`banana`"),
        "{stderr}"
    );
}

/// Issue 24 item 16: a name far from every bundled activity gave a raw OS error
/// (`No such file or directory (os error 2)`).
#[test]
fn issue24_item16_an_unknown_name_says_what_exists_not_an_os_error() {
    for cmd in ["run", "check"] {
        let out = run(&[cmd, "nosuchthingatall"]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {stderr}");
        assert!(!stderr.contains("os error"), "{cmd}: {stderr}");
        assert!(
            stderr.contains("no file or bundled activity `nosuchthingatall`")
                && stderr.contains("quickstart")
                && stderr.contains("paceline list"),
            "{cmd}: {stderr}"
        );
    }
    // The file the docs name is bundled: it validates from any directory.
    let out = run(&["check", "http-checks"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}
