//! Fuzzed requests to a live run's control endpoint.

use super::*;

/// Sends raw bytes; returns the answer's status (None if no HTTP answer came).
fn http(addr: SocketAddr, bytes: &[u8]) -> Option<u16> {
    let mut s = TcpStream::connect(addr).ok()?;
    let _ = s.set_read_timeout(Some(Duration::from_secs(15)));
    let _ = s.write_all(bytes);
    let _ = s.shutdown(std::net::Shutdown::Write);
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let raw = String::from_utf8_lossy(&raw);
    raw.strip_prefix("HTTP/1.1 ")?.get(..3)?.parse().ok()
}

const CONTROL_PATHS: &[&str] = &[
    "/activities",
    "/activities/diag",
    "/activities/diag/rate",
    "/activities/diag/threads",
    "/activities/diag/pause",
    "/activities/diag/resume",
    "/activities/diag/ramp",
    "/activities/nope/rate",
    "/metrics",
    "/",
    "//activities/diag/rate",
    "/activities/diag/rate?x=1",
    "/activities/%64iag/rate",
    "*",
];

const CONTROL_BODIES: &[&str] = &[
    "1000",
    "2K",
    "{\"rate\": \"5K\"}",
    "{\"rate\": 5000}",
    "2",
    "{\"threads\": 2}",
    "{\"to\": \"2K\", \"over\": \"1s\"}",
    "",
    "{}",
    "[]",
    "null",
];

#[test]
fn fuzzed_control_requests_get_an_answer_and_never_a_5xx() {
    let mut child = bin()
        .args([
            "run",
            "driver=diag",
            "cycles=1B",
            "rate=1000",
            "--report-interval",
            "10s",
            "--control",
            "127.0.0.1:0",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut lines = BufReader::new(child.stderr.take().unwrap_or_else(|| panic!("stderr")));
    let mut addr = None;
    let mut line = String::new();
    while addr.is_none() && lines.read_line(&mut line).is_ok_and(|n| n > 0) {
        addr = line
            .split("control endpoint on http://")
            .nth(1)
            .and_then(|a| a.trim().parse::<SocketAddr>().ok());
        line.clear();
    }
    // Keep reading standard error so the run never blocks on it.
    let drain = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = lines.read_to_string(&mut rest);
        rest
    });
    let Some(addr) = addr else {
        let _ = child.kill();
        panic!("no control endpoint address");
    };
    let mut rng = Rng(seed().wrapping_mul(104_729));
    let mut problems = Vec::new();
    for i in 0..cases() {
        let method = *rng.pick(&["GET", "PUT", "POST", "DELETE", "PATCH", "XYZ", "put", ""]);
        let path = *rng.pick(CONTROL_PATHS);
        let mut body = rng.pick(CONTROL_BODIES).to_string();
        for _ in 0..rng.below(3) {
            let _ = mutate(&mut rng, &mut body);
        }
        // More threads than a busy test machine should start.
        if path.ends_with("/threads")
            && body
                .trim()
                .trim_matches(|c: char| !c.is_ascii_digit())
                .parse::<u64>()
                .map_or(body.len() > 2, |n| n > 16)
        {
            body = "2".into();
        }
        // A body shorter than its Content-Length, or a flipped byte, may leave
        // the request incomplete at the client's end: closing without an answer
        // is then what RFC 9112 asks.
        let mut whole = true;
        let length = match rng.below(6) {
            0 => {
                whole = false;
                format!("Content-Length: {}\r\n", body.len() + 1)
            }
            1 => format!("Content-Length: {}\r\nContent-Length: 0\r\n", body.len()),
            2 => String::new(),
            _ => format!("Content-Length: {}\r\n", body.len()),
        };
        let mut req = format!(
            "{method} {path} HTTP/1.1\r\nHost: x\r\n{length}Connection: close\r\n\r\n{body}"
        )
        .into_bytes();
        if rng.below(4) == 0 && !req.is_empty() {
            let k = rng.below(req.len());
            req[k] = (rng.next() & 0xff) as u8;
            whole = false;
        }
        match http(addr, &req) {
            Some(s) if (200..500).contains(&s) => {}
            None if !whole => {}
            other => problems.push(format!(
                "request {i}: {:?} answered {other:?}",
                String::from_utf8_lossy(&req)
            )),
        }
        if let Ok(Some(s)) = child.try_wait() {
            problems.push(format!("the run ended ({s:?}) after request {i}"));
            break;
        }
        // A rate or ramp that stopped the activity ends the fuzzing early.
    }
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let status = wait(&mut child, Duration::from_secs(60));
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
        problems.push("the run did not stop at an interrupt".into());
    }
    let err = drain.join().unwrap_or_default();
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        problems.is_empty(),
        "{}\n{}",
        problems.join("\n"),
        text(err.as_bytes())
    );
}
