//! `paceline report A.hlog B.hlog ...` through the real binary: two real runs'
//! HDR logs give one report whose counts are exactly the sum of theirs, from the
//! logs named or from their directory; and the merge's refusals (exit 2, the file
//! and line, the fix).

use std::path::{Path, PathBuf};
use std::process::Stdio;

#[path = "support/bin.rs"]
mod bin;
use bin::{bin, run, temp, text};

#[cfg(feature = "redis")]
#[path = "support/redis.rs"]
mod redis;

fn s(p: &Path) -> &str {
    p.to_str().unwrap_or_default()
}

/// `cycles.completed` of a summary JSON.
fn completed(summary: &Path) -> u64 {
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(summary).unwrap_or_else(|e| panic!("{e}")))
            .unwrap_or_else(|e| panic!("{e}"));
    doc["activities"][0]["cycles"]["completed"]
        .as_u64()
        .unwrap_or_else(|| panic!("{doc}"))
}

/// Two runs at once, as two pods would run, each with its own log and summary.
fn two_runs(dir: &Path) -> [(PathBuf, PathBuf); 2] {
    two_runs_with(dir, &["cycles=600", "rate=2000"])
}

fn two_runs_with(dir: &Path, params: &[&str]) -> [(PathBuf, PathBuf); 2] {
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{e}"));
    let files =
        ["pod-0", "pod-1"].map(|n| (dir.join(format!("{n}.hlog")), dir.join(format!("{n}.json"))));
    let children: Vec<_> = files
        .iter()
        .map(|(hlog, json)| {
            bin()
                .args(["run", "driver=diag", "alias=a", "threads=2"])
                .args(params)
                .args([
                    "--report-interval",
                    "100ms",
                    "--hdr-log",
                    s(hlog),
                    "--summary-json",
                    s(json),
                ])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap_or_else(|e| panic!("the binary runs: {e}"))
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap_or_else(|e| panic!("{e}"));
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    files
}

#[test]
fn two_runs_merge_into_one_report_whose_counts_are_their_sum() {
    let dir = temp("merge-two");
    let [(a, aj), (b, bj)] = two_runs(&dir);
    let sum = completed(&aj) + completed(&bj);
    assert_eq!(sum, 1200);
    let page = dir.join("fleet.html");
    let out = run(&["report", s(&a), s(&b), "-o", s(&page)]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("(1 activity; 2 logs merged into "), "{err}");
    eprintln!("{err}");
    let html = std::fs::read_to_string(&page).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        html.contains(&format!("<tr><th>ops</th><td>{sum}</td></tr>")),
        "{html}"
    );
    for m in ["service", "wait", "response"] {
        assert!(
            html.contains(&format!("<tr><th>{m}</th><td>{sum}</td>")),
            "{m}: {html}"
        );
    }
    assert!(
        html.contains("2 HDR logs merged: "),
        "the header names the logs"
    );
    assert!(
        html.contains("(the sum of 2 processes&#39; HDR logs;"),
        "the facts say what they are: {html}"
    );
    // The directory stands for its logs.
    let again = dir.join("fleet-dir.html");
    let out = run(&["report", s(&dir), "-o", s(&again)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let html = std::fs::read_to_string(&again).unwrap_or_else(|e| panic!("{e}"));
    assert!(html.contains(&format!("<tr><th>ops</th><td>{sum}</td></tr>")));
    // A pattern no shell expanded (`kubectl exec` runs no shell).
    let pattern = dir.join("pod-*.hlog");
    let out = run(&["report", s(&pattern), "-o", s(&again)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("2 logs merged"));
    let out = run(&["report", s(&dir.join("nothing-*.hlog")), "-o", s(&again)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("no file matches this pattern"));
    // One log alone is its own report, as before.
    let one = dir.join("one.html");
    let out = run(&["report", s(&a), "-o", s(&one)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("(1 activity)"));

    // A summary describes one process: refused beside several logs.
    let out = run(&[
        "report",
        s(&a),
        s(&b),
        "--summary-json",
        s(&aj),
        "-o",
        s(&page),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("describes one process"),
        "{}",
        text(&out.stderr)
    );

    // A log without its StartTime cannot be placed: its file and line, and the fix.
    let log = std::fs::read_to_string(&b).unwrap_or_default();
    let bare: String = log
        .lines()
        .filter(|l| !l.starts_with("#[StartTime") && !l.starts_with("#[BaseTime"))
        .map(|l| format!("{l}\n"))
        .collect();
    let line = bare
        .lines()
        .position(|l| l.starts_with("Tag="))
        .unwrap_or_default()
        + 1;
    let bad = dir.join("bare.hlog.txt");
    std::fs::write(&bad, bare).unwrap_or_else(|e| panic!("{e}"));
    let out = run(&["report", s(&a), s(&bad), "-o", s(&page)]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.starts_with(&format!(
            "paceline: {}:{line}: no `#[StartTime: ...]` line",
            bad.display()
        )),
        "{err}"
    );
    assert!(err.contains("add `#[StartTime: SECONDS"), "{err}");

    // An unreadable file, and a directory with no log.
    let out = run(&[
        "report",
        s(&a),
        "/nonexistent-paceline/x.hlog",
        "-o",
        s(&page),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("cannot read /nonexistent-paceline/x.hlog"));
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap_or_else(|e| panic!("{e}"));
    let out = run(&["report", s(&empty), "-o", s(&page)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("no `*.hlog` file"),
        "{}",
        text(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The recipe of `docs/scale-out.md` on one machine: two processes on one shared
/// schedule (a real redis-server), their logs merged. Every cycle ran once, so
/// the merged counts are the range; the target is the schedule's rate, once.
#[cfg(feature = "redis")]
#[test]
fn two_processes_on_a_shared_schedule_merge_into_the_schedules_report() {
    if let Err(why) = redis::binary() {
        eprintln!("skipping: redis-server not installed ({why})");
        return;
    }
    let server = redis::RedisServer::start().expect("redis-server is installed and must start");
    let dir = temp("merge-shared");
    let url = format!("coordinate={}/fleet", server.url());
    let [(a, aj), (b, bj)] =
        two_runs_with(&dir, &["cycles=1200", "rate=2000,0", "min_members=2", &url]);
    assert_eq!(completed(&aj) + completed(&bj), 1200);
    let log = std::fs::read_to_string(&a).unwrap_or_default();
    assert!(log.contains("#[Shared a]\n#[Target a: 2000]"), "{log}");
    let page = dir.join("fleet.html");
    let out = run(&["report", s(&a), s(&b), "-o", s(&page)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let html = std::fs::read_to_string(&page).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        html.contains("<tr><th>ops</th><td>1200</td></tr>"),
        "{html}"
    );
    assert!(html.contains("<tr><th>response</th><td>1200</td>"));
    let _ = std::fs::remove_dir_all(&dir);
}
