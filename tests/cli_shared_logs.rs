//! The per-interval logs of a coordinated activity (`coordinate=`) on a real
//! redis-server: the `--csv` log's `global_ops` and `global_rate` columns carry
//! the shared schedule's global numbers beside the process's own, and the
//! `--hdr-log` file has the paced activity's queue and dispatch histograms.
//! Skipped, with a printed reason, when redis-server is not installed.
#![cfg(feature = "redis")]

mod support;

use std::process::{Command, Stdio};

use support::bin::temp;

#[test]
fn a_coordinated_run_logs_its_global_numbers_per_interval() {
    let Some(redis) = support::redis::server() else {
        return;
    };
    let (csv, hdr) = (temp("shared.csv"), temp("shared.hlog"));
    let out = Command::new(env!("CARGO_BIN_EXE_paceline"))
        .args([
            "run",
            "driver=diag",
            "alias=shared",
            "cycles=2000",
            "rate=4000",
            &format!("coordinate={}/logs", redis.url()),
            "--report-interval",
            "100ms",
            "--no-progress",
            "--csv",
        ])
        .arg(&csv)
        .arg("--hdr-log")
        .arg(&hdr)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("the binary runs: {e}"));
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{said}");

    let text = std::fs::read_to_string(&csv).unwrap_or_else(|e| panic!("{e}"));
    let header: Vec<&str> = text.lines().next().unwrap_or("").split(',').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("no `{name}` in {header:?}"))
    };
    let rows: Vec<Vec<&str>> = text
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .filter(|r: &Vec<&str>| r[col("event")].is_empty())
        .collect();
    assert!(!rows.is_empty(), "{text}");
    let mut last = 0;
    for r in &rows {
        assert_eq!(r.len(), header.len(), "{r:?}");
        let global: u64 = r[col("global_ops")]
            .parse()
            .unwrap_or_else(|_| panic!("global_ops is a count: {r:?}\n{text}"));
        let rate: f64 = r[col("global_rate")]
            .parse()
            .unwrap_or_else(|_| panic!("global_rate is a rate: {r:?}\n{text}"));
        assert!(rate >= 0.0 && rate.is_finite(), "{r:?}");
        // The schedule's count only grows.
        assert!(global >= last, "{r:?}\n{text}");
        last = global;
        // A partial (tail) interval has counts but no percentiles.
        if r[col("partial")] != "1" {
            assert!(r[col("queue_p50_ns")].parse::<u64>().is_ok(), "{r:?}");
        }
    }
    assert!(last > 0, "{text}\n{said}");

    let log = std::fs::read_to_string(&hdr).unwrap_or_else(|e| panic!("{e}"));
    assert!(log.contains("\nTag=shared.queue,"), "{log}");
    assert!(log.contains("\nTag=shared.dispatch,"));
}
