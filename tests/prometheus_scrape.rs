//! Issue 24 item 11 against a real Prometheus (the Debian `prometheus` package,
//! 2.42, which `.ci/run` installs): it scrapes a run's `/metrics` with its own
//! strict OpenMetrics parser, and `histogram_quantile` over the fine buckets
//! lands within a bucket of the run's exact p90, for all ops and for each op
//! (the `op` label); with `--enable-feature=native-histograms` it asks for the
//! protobuf exposition and reads `--metrics-buckets native`'s native
//! histograms, whose p90 lands within the schema's bucket of the run's.
//! Skips, saying why, where there is no `prometheus` binary.

use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "support/bin.rs"]
mod bin;
use bin::{Killed, bin, temp};

#[path = "support/endpoint.rs"]
mod endpoint;
use endpoint::{bound_port, request};

/// The `prometheus` binary, if there is one.
fn prometheus() -> Option<String> {
    let found = Command::new("prometheus")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    found.then(|| "prometheus".to_string())
}

/// Percent-encodes a PromQL query for a URL.
fn encode(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'.' | b'-' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The first value of an instant query, if it has one.
fn query(port: u16, q: &str) -> Option<f64> {
    let (status, _, body) = request(
        port,
        "GET",
        &format!("/api/v1/query?query={}", encode(q)),
        "",
    );
    if status != 200 {
        return None;
    }
    let doc: serde_json::Value = serde_json::from_str(&body).ok()?;
    let v = doc["data"]["result"].get(0)?["value"]
        .get(1)?
        .as_str()?
        .to_string();
    v.parse().ok()
}

/// A two-op activity: `read` (3 of 4 ops, 2 ms) and `write` (6 ms, and
/// always failing), errors counted.
const TWO_OPS: &str = "params: {driver: diag, errors: count}\nops:\n  \
                       read: {ratio: 3, latency: 2ms}\n  write: {latency: 6ms, fail: \"true\"}\n";

/// Starts `paceline run FILE ARGS` with `--metrics` and `--summary-json`, an
/// activity called `scraped`; returns the run, its metrics port and the
/// summary's path.
fn start_run(name: &str, args: &[&str]) -> (Killed, u16, std::path::PathBuf) {
    let file = temp(&format!("{name}.yaml"));
    std::fs::write(&file, TWO_OPS).unwrap_or_else(|e| panic!("{e}"));
    let summary = temp(&format!("{name}-summary.json"));
    let _ = std::fs::remove_file(&summary);
    let run = bin()
        .args([
            "run",
            file.to_str().unwrap_or_default(),
            "alias=scraped",
            "threads=2",
        ])
        .args(args)
        .args([
            "--report-interval",
            "1s",
            "--no-progress",
            "--metrics",
            "127.0.0.1:0",
            "--summary-json",
            summary.to_str().unwrap_or_default(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("the binary runs: {e}"));
    let mut run = Killed(run);
    let (port, _stderr) = bound_port(&mut run.0, "metrics endpoint");
    (run, port, summary)
}

/// Starts Prometheus scraping `127.0.0.1:metrics_port` every second, with
/// `extra` flags; returns it, its web port and its data folder.
fn start_prometheus(
    prom: &str,
    name: &str,
    metrics_port: u16,
    extra: &[&str],
) -> (Killed, u16, std::path::PathBuf) {
    let web = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("{e}"));
    let dir = temp(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: paceline\n    \
             static_configs:\n      - targets: [\"127.0.0.1:{metrics_port}\"]\n"
        ),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let server = Command::new(prom)
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{web}"))
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("prometheus runs: {e}"));
    (Killed(server), web, dir)
}

/// Waits until Prometheus has scraped the run (`up` is 1) and `q` holds for
/// the value of `what`.
fn wait_for(web: u16, what: &str, q: impl Fn(f64) -> bool, within: Duration) {
    let t0 = Instant::now();
    loop {
        let up = query(web, "up{job=\"paceline\"}");
        let v = query(web, what);
        if up == Some(1.0) && v.is_some_and(&q) {
            return;
        }
        if up == Some(0.0) {
            let (_, _, targets) = request(web, "GET", "/api/v1/targets", "");
            panic!("Prometheus could not scrape /metrics: {targets}");
        }
        assert!(t0.elapsed() < within, "up {up:?}, {what}: {v:?}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The run's summary once it is written (at the run's end), as JSON.
fn summary_of(path: &std::path::Path, run: &mut Killed, within: Duration) -> serde_json::Value {
    let t0 = Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && let Ok(doc) = serde_json::from_str::<serde_json::Value>(&text)
        {
            return doc;
        }
        if let Ok(Some(status)) = run.0.try_wait() {
            panic!("the run ended ({status}) without a summary");
        }
        assert!(t0.elapsed() < within, "the run did not end");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The exact service p90 of `op` (all ops when `None`) in seconds.
fn exact_p90(doc: &serde_json::Value, op: Option<&str>) -> f64 {
    let a = &doc["activities"][0];
    let figures = match op {
        None => &a["service_ns"],
        Some(name) => {
            let ops = a["by_op"].as_array().cloned().unwrap_or_default();
            let found = ops.into_iter().find(|o| o["op"] == name);
            return found
                .and_then(|o| o["service_ns"]["p90"].as_f64())
                .unwrap_or_else(|| panic!("no op {name} in {doc}"))
                / 1e9;
        }
    };
    figures["p90"]
        .as_f64()
        .unwrap_or_else(|| panic!("no service p90 in {doc}"))
        / 1e9
}

#[test]
fn issue24_item11_a_real_prometheus_scrapes_metrics_and_its_p90_is_within_a_fine_bucket() {
    let Some(prom) = prometheus() else {
        eprintln!(
            "skipped: no `prometheus` binary (Debian package `prometheus`; .ci/run installs it)"
        );
        return;
    };
    // 400/s for 12 s: reads of 2 ms and writes of 6 ms, 3 to 1.
    let (mut run, metrics_port, summary) = start_run("classic", &["rate=400", "cycles=4800"]);
    let (_server, web, dir) = start_prometheus(&prom, "prometheus-classic", metrics_port, &[]);

    // Scraped and parsed: `up` is 1 and ops have been counted.
    wait_for(
        web,
        "paceline_ops_total{activity=\"scraped\"}",
        |n| n > 1000.0,
        Duration::from_secs(40),
    );
    let info = query(web, "paceline_info");
    assert_eq!(info, Some(1.0));
    let target = query(
        web,
        "paceline_rate_target_ops_per_second{activity=\"scraped\"}",
    );
    assert_eq!(target, Some(400.0));
    let p90 = query(
        web,
        "histogram_quantile(0.9, paceline_service_seconds_bucket{activity=\"scraped\"})",
    )
    .unwrap_or_else(|| panic!("no p90"));
    let queue = query(web, "paceline_queue_seconds_count{activity=\"scraped\"}");
    assert!(queue.is_some_and(|n| n > 0.0), "{queue:?}");
    // By op: reads are 3 of every 4 ops, and only writes fail.
    let of = |op: &str, q: &str| -> Option<f64> {
        query(
            web,
            &q.replace("OP", &format!("activity=\"scraped\",op=\"{op}\"")),
        )
    };
    let reads = of("read", "paceline_op_ops_total{OP}").unwrap_or_default();
    let writes = of("write", "paceline_op_ops_total{OP}").unwrap_or_default();
    assert!(
        writes > 200.0 && (reads / writes - 3.0).abs() < 0.1,
        "{reads} reads, {writes} writes"
    );
    let failed = of("write", "paceline_op_errors_total{OP}").unwrap_or_default();
    assert!(
        (failed - writes).abs() <= 1.0,
        "{failed} failed of {writes} writes"
    );
    assert_eq!(
        of("read", "paceline_op_errors_total{OP}"),
        None,
        "reads never fail"
    );
    let op_p90 = |op: &str| {
        of(
            op,
            "histogram_quantile(0.9, paceline_op_service_seconds_bucket{OP})",
        )
        .unwrap_or_else(|| panic!("no p90 of {op}"))
    };
    let (read_p90, write_p90) = (op_p90("read"), op_p90("write"));

    // The run's exact p90s, from its summary, once it has ended.
    let doc = summary_of(&summary, &mut run, Duration::from_secs(60));
    // The fine buckets are 1.26x apart; the scrape saw most of the run.
    for (what, got, exact) in [
        ("all ops", p90, exact_p90(&doc, None)),
        ("read", read_p90, exact_p90(&doc, Some("read"))),
        ("write", write_p90, exact_p90(&doc, Some("write"))),
    ] {
        let ratio = got / exact;
        assert!(
            (1.0 / 1.3..=1.3).contains(&ratio),
            "{what}: Prometheus p90 {got} s against the run's {exact} s"
        );
    }
    assert!(
        write_p90 > 2.0 * read_p90,
        "read {read_p90} s, write {write_p90} s"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 24 item 11: `--metrics-buckets native` with a Prometheus that reads
/// native histograms (it then asks for the protobuf exposition). The p90 of
/// the native histogram, scraped after the run ended (`--linger`), is within
/// one schema-2 bucket (a factor 2^(1/4), 18.9 %) of the run's exact p90.
#[test]
fn issue24_item11_a_real_prometheus_reads_native_histograms_within_the_schema_s_error() {
    let Some(prom) = prometheus() else {
        eprintln!(
            "skipped: no `prometheus` binary (Debian package `prometheus`; .ci/run installs it)"
        );
        return;
    };
    let (mut run, metrics_port, summary) = start_run(
        "native",
        &[
            "rate=400",
            "cycles=2400",
            "--metrics-buckets",
            "native",
            "--linger",
            "60s",
        ],
    );
    let (_server, web, dir) = start_prometheus(
        &prom,
        "prometheus-native",
        metrics_port,
        &["--enable-feature=native-histograms"],
    );
    let doc = summary_of(&summary, &mut run, Duration::from_secs(60));
    // A scrape after the end: the final numbers, every op in them.
    wait_for(
        web,
        "paceline_run_ended",
        |v| v == 1.0,
        Duration::from_secs(40),
    );
    assert_eq!(
        query(web, "paceline_ops_total{activity=\"scraped\"}"),
        Some(2400.0)
    );
    // Native, not classic: no `_bucket` series came in.
    assert_eq!(
        query(web, "count(paceline_service_seconds_bucket)"),
        None,
        "classic buckets were ingested"
    );
    let count = query(
        web,
        "histogram_count(paceline_service_seconds{activity=\"scraped\"})",
    );
    assert_eq!(count, Some(2400.0));
    let bound = 2f64.powf(0.25);
    for (what, q, exact) in [
        (
            "all ops",
            "histogram_quantile(0.9, paceline_service_seconds{activity=\"scraped\"})",
            exact_p90(&doc, None),
        ),
        (
            "read",
            "histogram_quantile(0.9, paceline_op_service_seconds{activity=\"scraped\",op=\"read\"})",
            exact_p90(&doc, Some("read")),
        ),
        (
            "write",
            "histogram_quantile(0.9, paceline_op_service_seconds{activity=\"scraped\",op=\"write\"})",
            exact_p90(&doc, Some("write")),
        ),
    ] {
        let got = query(web, q).unwrap_or_else(|| panic!("no p90 of {what}"));
        let ratio = got / exact;
        eprintln!("{what}: native p90 {got} s, the run's {exact} s");
        assert!(
            (1.0 / bound..=bound).contains(&ratio),
            "{what}: Prometheus native p90 {got} s against the run's {exact} s"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
