//! The HTML report through the real binary: `paceline run --html`, `paceline
//! report` from the files a run wrote, its bad input, a run stopped by SIGTERM,
//! and the page rendered by a real browser (headless chromium) when one is here.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "support/endpoint.rs"]
mod endpoint;

#[path = "support/bin.rs"]
mod bin;
use bin::{bin, run, signal, stderr_of, temp, text, wait_within};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Checks what every report page holds: nothing loaded from elsewhere, and one
/// SVG per plot per activity.
fn check_page(page: &str, activities: usize) {
    for bad in [
        "src=\"http",
        "href=\"http",
        "<script",
        "<link",
        "@import",
        "url(",
    ] {
        assert!(!page.contains(bad), "the page holds `{bad}`");
    }
    assert_eq!(page.matches("<svg").count(), 3 * activities);
    for plot in ["rate", "latency", "spectrum"] {
        assert_eq!(
            page.matches(&format!("<figure class=\"plot {plot}\">\n<svg"))
                .count(),
            activities,
            "{plot}"
        );
    }
}

/// Two activities in a scenario: `paced` changes rate and threads; `free` is
/// unpaced.
const SCENARIO: &str = "\
params: {driver: diag, threads: 2}
ops:
  get: {stmt: get}
scenarios:
  default:
    - start: {alias: paced, rate: 2000, cycles: 1500}
    - start: {alias: free, cycles: 3000}
    - wait: 300ms
    - rate: {alias: paced, spec: 3000}
    - wait: 100ms
    - threads: {alias: paced, count: 3}
    - await: paced
    - await: free
";

#[test]
fn a_run_writes_the_page_and_report_rebuilds_it_from_the_files() {
    let yaml = temp("two.yaml");
    std::fs::write(&yaml, SCENARIO).unwrap();
    let (page, hdr, json) = (temp("two.html"), temp("two.hlog"), temp("two.json"));
    let out = run(&[
        "run",
        s(&yaml),
        "--report-interval",
        "200ms",
        "--no-progress",
        "--html",
        s(&page),
        "--hdr-log",
        s(&hdr),
        "--summary-json",
        s(&json),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let live = std::fs::read_to_string(&page).expect("the page is written");
    check_page(&live, 2);
    assert!(live.contains("<h2>paced</h2>") && live.contains("<h2>free</h2>"));
    assert!(
        live.contains("<td>rate</td><td>rate 2.00K/s -&gt; 3.00K/s</td>"),
        "{live}"
    );
    assert!(live.contains("<td>threads</td><td>threads 2 -&gt; 3</td>"));
    // The unpaced activity's rate plot has no target line.
    let free = &live[live.find("<h2>free</h2>").unwrap()..];
    assert!(free.contains(">\n(unpaced)\n</text>"));
    assert!(!free.contains(">\ntarget\n</text>"));

    let again = temp("again.html");
    let out = run(&[
        "report",
        s(&hdr),
        "--summary-json",
        s(&json),
        "-o",
        s(&again),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("wrote"));
    let rebuilt = std::fs::read_to_string(&again).unwrap();
    check_page(&rebuilt, 2);
    // The summary table comes from the summary JSON, as in the run's own page.
    let facts = |p: &str| {
        p[p.find("<table class=\"facts\">").unwrap()..]
            .split("</table>")
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(facts(&live), facts(&rebuilt));
    assert!(facts(&rebuilt).contains("<tr><th>cycles</th><td>1500 of 1500</td></tr>"));
    // The whole run's verdict, kind and reason, from the summary JSON.
    assert!(
        facts(&rebuilt).contains("<tr><th>verdict</th><td>"),
        "{rebuilt}"
    );
    assert!(facts(&rebuilt).contains("<tr><th>why</th><td>"));
    // The whole run's latency table: the paced activity's waits split into queue
    // and dispatch (the HDR log's `paced.queue` and `paced.dispatch`), the
    // unpaced one's not; the rebuilt table is the live one.
    let latency = |p: &str, alias: &str| {
        let p = &p[p.find(&format!("<h2>{alias}</h2>")).unwrap()..];
        p[p.find("<table class=\"latency\">").unwrap()..]
            .split("</table>")
            .next()
            .unwrap()
            .to_string()
    };
    let paced = latency(&live, "paced");
    assert!(
        paced.contains("<tr><th>queue</th><td>1500</td>")
            && paced.contains("<tr><th>dispatch</th><td>1500</td>"),
        "{paced}"
    );
    let free = latency(&live, "free");
    assert!(!free.contains("<th>queue</th>") && !free.contains("<th>dispatch</th>"));
    let log = std::fs::read_to_string(&hdr).unwrap();
    assert!(log.contains("\nTag=paced.queue,") && log.contains("\nTag=paced.dispatch,"));
    assert!(!log.contains("\nTag=free.queue,") && !log.contains("\nTag=free.dispatch,"));
    for alias in ["paced", "free"] {
        assert_eq!(latency(&live, alias), latency(&rebuilt, alias), "{alias}");
    }

    // Without the summary JSON, the page still has every plot.
    let out = run(&["report", s(&hdr), "-o", s(&again)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let bare = std::fs::read_to_string(&again).unwrap();
    check_page(&bare, 2);
    assert!(bare.contains("no summary JSON"));
    assert!(!bare.contains("<th>verdict</th>"));
    assert_eq!(latency(&live, "paced"), latency(&bare, "paced"));
}

#[test]
fn report_refuses_a_missing_or_garbled_log_naming_the_file_and_line() {
    let page = temp("never.html");
    let missing = temp("missing.hlog");
    let out = run(&["report", s(&missing), "-o", s(&page)]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.starts_with(&format!("paceline: cannot read {}: ", missing.display())),
        "{err}"
    );
    assert!(!err.contains("panicked"));

    let garbled = temp("garbled.hlog");
    std::fs::write(
        &garbled,
        "#[Histogram log format version 1.3]\nhello, world\n",
    )
    .unwrap();
    let out = run(&["report", s(&garbled), "-o", s(&page)]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.starts_with(&format!(
            "paceline: {}:2: not an HDR interval log line: `hello, world`",
            garbled.display()
        )),
        "{err}"
    );

    let empty = temp("empty.hlog");
    std::fs::write(&empty, "").unwrap();
    let out = run(&["report", s(&empty), "-o", s(&page)]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("no histograms in this file"));
    assert!(!page.exists(), "no page is written for bad input");

    // clap: the output is required.
    let out = run(&["report", s(&garbled)]);
    assert_eq!(out.status.code(), Some(2));
}

/// SIGTERM (like Ctrl-C) stops the run and the HTML report is written with the
/// rest.
#[test]
fn sigterm_writes_the_page() {
    let page = temp("term.html");
    let mut child = bin()
        .args([
            "run",
            "driver=diag",
            "cycles=1B",
            "rate=2000",
            "--report-interval",
            "10s",
            "--no-progress",
            "--html",
            s(&page),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Long enough for the binary to start and catch signals on a loaded machine.
    std::thread::sleep(Duration::from_millis(1500));
    signal(&child, "TERM");
    let (code, _) = wait_within(&mut child, Duration::from_secs(20));
    let err = stderr_of(&mut child);
    assert_eq!(code, Some(1), "{err}");
    let html = std::fs::read_to_string(&page).expect("the page is written");
    check_page(&html, 1);
    assert!(html.contains("<td>stop</td><td>stopped</td>"), "{html}");
}

/// One request to the control endpoint on `port`: the answer, or the error of a
/// connection that broke (a stop's answer can race the process's exit).
fn control(port: u16, method: &str, path: &str) -> std::io::Result<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"
    )?;
    let mut resp = String::new();
    s.read_to_string(&mut resp)?;
    Ok(resp)
}

/// A pause, a resume and a stop through the control endpoint: the page is
/// written at the stop, with the three as events.
#[test]
fn a_control_stop_writes_the_page_with_the_pause() {
    let page = temp("control.html");
    let mut child = bin()
        .args([
            "run",
            "driver=diag",
            "cycles=1B",
            "rate=1000",
            "--report-interval",
            "200ms",
            "--no-progress",
            "--control",
            "127.0.0.1:0",
            "--html",
            s(&page),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (port, mut stderr) = endpoint::bound_port(&mut child, "control endpoint");
    // Until the activity is there, and its schedule under way: a pause before
    // the first slot is set-up, not paused time (session 13), and this page
    // must show paused time (it was flaky once that rule came: the pause
    // sometimes landed before the first op).
    let t0 = Instant::now();
    while !control(port, "GET", "/activities").is_ok_and(|r| r.contains("\"diag\"")) {
        assert!(t0.elapsed() < Duration::from_secs(20), "no activity `diag`");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    loop {
        let r = control(port, "POST", "/activities/diag/pause").unwrap();
        if r.starts_with("HTTP/1.1 200") {
            break;
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "{r}");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    let r = control(port, "POST", "/activities/diag/resume").unwrap();
    assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    std::thread::sleep(Duration::from_millis(300));
    if let Ok(r) = control(port, "POST", "/activities/diag/stop") {
        assert!(r.starts_with("HTTP/1.1 200"), "{r}");
    }
    let (code, _) = wait_within(&mut child, Duration::from_secs(30));
    let err = stderr.text();
    assert_eq!(code, Some(0), "{err}");
    let html = std::fs::read_to_string(&page).expect("the page is written");
    check_page(&html, 1);
    // Events within 1 ms share a row (a pause that lands as the run starts reads
    // "started, rate 1.00K/s -> 0/s, paused" under kind `pause`): each kind has a row,
    // and each event's text ends a row's text.
    for (kind, text) in [
        ("pause", "rate 1.00K/s -&gt; 0/s, paused</td>"),
        ("resume", "rate 0/s -&gt; 1.00K/s, resumed</td>"),
        ("stop", "stopped</td>"),
    ] {
        let row = html
            .lines()
            .find(|l| l.contains(&format!("<td>{kind}</td><td>")))
            .unwrap_or_else(|| panic!("no `{kind}` row: {html}"));
        assert!(row.contains(text), "{row}");
    }
    assert!(!html.contains("<tr><th>paused</th><td>0.000 s</td></tr>"));
}

/// The browser this machine has, if any.
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |d| d.join(name)))
        .find(|p| p.is_file())
}

/// A real browser renders the page: headless chromium takes a screenshot that is
/// a PNG far bigger than a blank page's.
#[test]
fn chromium_renders_the_page() {
    let Some(browser) = chromium() else {
        eprintln!("skipped: no chromium on PATH (Debian: apt-get install chromium)");
        return;
    };
    let page = temp("shot.html");
    let out = run(&[
        "run",
        "driver=diag",
        "cycles=3000",
        "rate=5000",
        "latency=200us",
        "--report-interval",
        "100ms",
        "--no-progress",
        "--html",
        s(&page),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let png = temp("shot.png");
    let _ = std::fs::remove_file(&png);
    let blank = temp("blank.html");
    std::fs::write(&blank, "<!DOCTYPE html><html><body></body></html>").unwrap();
    let blank_png = temp("blank.png");
    for (html, shot) in [(&page, &png), (&blank, &blank_png)] {
        let mut child = Command::new(&browser)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                &format!("--screenshot={}", shot.display()),
                "--window-size=1400,1800",
                &format!("file://{}", html.display()),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromium starts");
        // A browser that hangs fails the test instead of stalling the suite.
        wait_within(&mut child, Duration::from_secs(120));
        assert!(shot.exists(), "no screenshot of {}", html.display());
    }
    let bytes = std::fs::read(&png).unwrap();
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    let blank_size = std::fs::metadata(&blank_png).unwrap().len();
    // Plots, tables and text compress far worse than an empty page.
    assert!(
        bytes.len() as u64 > 5 * blank_size && bytes.len() > 40_000,
        "screenshot {} bytes, blank page {blank_size}",
        bytes.len()
    );
}
