//! The input fuzzer (issue 25): mutates the bundled activities and the docs'
//! YAML examples (bytes, lines, tokens, extreme numbers, YAML structure: deep
//! nesting, alias bombs, tags, a BOM, NUL, thousands of ops), fuzzes command-line
//! params and control requests, and runs the real binary on each in bounded
//! time. What must hold:
//!
//! - no panic and no death by a signal;
//! - no hang: `check` ends on its own, a tiny `run` ends or stops at an interrupt;
//! - `check` exits 0 or 2, `run` 0, 1 (the run failed, and says why) or 2;
//! - every exit-2 message names a place: `FILE:LINE:COLUMN:` or `param N:`;
//! - a control request gets an HTTP answer, never a 5xx, and the run lives on.
//!
//! `cargo test` runs a few hundred cases; `PACELINE_FUZZ_CASES=N` runs N per
//! test, `PACELINE_FUZZ_SEED=S` draws another sequence. A failing case's input
//! is kept in the temp directory the failure names.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

#[path = "support/bin.rs"]
mod bin;
use bin::{bin, temp, text};

/// Cases per test unless `PACELINE_FUZZ_CASES` says otherwise.
const DEFAULT_CASES: usize = 100;

fn cases() -> usize {
    std::env::var("PACELINE_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_CASES)
}

fn seed() -> u64 {
    std::env::var("PACELINE_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(25)
}

/// splitmix64: small, deterministic, good enough to draw mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The seeds: every bundled activity and every YAML example in the docs.
fn seeds() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("activities"))
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.push(root.join("docs/report-demo.yaml"));
    files.sort();
    for f in files {
        if let Ok(t) = std::fs::read_to_string(&f) {
            out.push((f.display().to_string(), t));
        }
    }
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    docs.sort();
    for d in docs
        .iter()
        .filter(|d| d.extension().is_some_and(|e| e == "md"))
    {
        let Ok(t) = std::fs::read_to_string(d) else {
            continue;
        };
        for (i, block) in t.split("```yaml\n").skip(1).enumerate() {
            if let Some((yaml, _)) = block.split_once("```") {
                out.push((format!("{}#{i}", d.display()), yaml.to_string()));
            }
        }
    }
    assert!(out.len() >= 10, "seeds: {}", out.len());
    out
}

const EXTREME_NUMBERS: &[&str] = &[
    "0",
    "-1",
    "-0",
    "1e-300",
    "1e309",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "340282366920938463463374607431768211456",
    ".nan",
    ".inf",
    "-.inf",
    "0x7fffffffffffffff",
    "1_000",
    "1B",
    "1T",
    "99999999999K",
];

const ODD_BYTES: &[&str] = &[
    "\0",
    "\t",
    "\u{1}",
    "\u{7f}",
    "\u{feff}",
    "{",
    "}",
    "[",
    "]",
    ":",
    ": ",
    "&a ",
    "*a",
    "!!",
    "---\n",
    "...\n",
    "\n",
    "'",
    "\"",
    "{{",
    "<<",
    "TEMPLATE(",
    "%",
    "|",
    ">",
    "#",
    "\u{2028}",
    "é",
    "\r",
];

const VALUES: &[&str] = &[
    "",
    "~",
    "[]",
    "{}",
    "[[]]",
    "null",
    "true",
    "-",
    "?",
    "'unterminated",
    "\"\\u0000\"",
    "!!binary aGVsbG8=",
    "!custom x",
    "!!str 5",
    "!!int x",
    "!!float",
    "{a: *nope}",
    "&x [*x]",
    "<<: {a: 1}",
    "Mod(",
    "Hash(); Mod(0)",
    "Uniform(0, -1)",
    "{cycle}",
    "{nope}",
];

/// Mutates `text` once; returns a word for what was done.
fn mutate(rng: &mut Rng, text: &mut String) -> &'static str {
    let lines: Vec<String> = text.lines().map(str::to_string).collect();
    let at = |rng: &mut Rng, t: &str| {
        let mut i = rng.below(t.len() + 1);
        while !t.is_char_boundary(i) {
            i -= 1;
        }
        i
    };
    match rng.below(15) {
        0 => {
            let mut bytes = std::mem::take(text).into_bytes();
            if !bytes.is_empty() {
                let i = rng.below(bytes.len());
                bytes[i] = (rng.next() & 0x7f) as u8;
            }
            *text = String::from_utf8_lossy(&bytes).into_owned();
            "flip a byte"
        }
        1 => {
            let i = at(rng, text);
            let s = *rng.pick(ODD_BYTES);
            text.insert_str(i, s);
            "insert odd bytes"
        }
        2 => {
            let i = at(rng, text);
            let mut j = (i + rng.below(40)).min(text.len());
            while !text.is_char_boundary(j) {
                j -= 1;
            }
            text.replace_range(i..j.max(i), "");
            "delete bytes"
        }
        3..=5 if !lines.is_empty() => {
            let mut l = lines;
            let i = rng.below(l.len());
            let what = match rng.below(3) {
                0 => {
                    l.remove(i);
                    "delete a line"
                }
                1 => {
                    let d = l[i].clone();
                    l.insert(i, d);
                    "duplicate a line"
                }
                _ => {
                    let j = rng.below(l.len());
                    l.swap(i, j);
                    "swap lines"
                }
            };
            *text = l.join("\n") + "\n";
            what
        }
        6 => {
            // A number token, or any value, becomes an extreme number.
            let n = *rng.pick(EXTREME_NUMBERS);
            let starts: Vec<usize> = text
                .char_indices()
                .filter(|(i, c)| {
                    c.is_ascii_digit()
                        && !text[..*i].ends_with(|p: char| p.is_ascii_alphanumeric() || p == '.')
                })
                .map(|(i, _)| i)
                .collect();
            if starts.is_empty() {
                return "no number";
            }
            let s = *rng.pick(&starts);
            let e = text[s..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '_'))
                .map_or(text.len(), |k| s + k);
            text.replace_range(s..e, n);
            "extreme number"
        }
        7 => {
            // A value after `: ` becomes an odd value.
            let spots: Vec<usize> = text.match_indices(": ").map(|(i, _)| i + 2).collect();
            if spots.is_empty() {
                return "no value";
            }
            let s = *rng.pick(&spots);
            let e = text[s..].find('\n').map_or(text.len(), |k| s + k);
            let v = *rng.pick(VALUES);
            text.replace_range(s..e, v);
            "odd value"
        }
        8 => {
            text.insert(0, '\u{feff}');
            "byte order mark"
        }
        9 => {
            let depth = [20, 200, 2000, 20000][rng.below(4)];
            let nest = if rng.below(2) == 0 {
                "[".repeat(depth) + &"]".repeat(depth)
            } else {
                "{a: ".repeat(depth) + "1" + &"}".repeat(depth)
            };
            text.push_str(&format!("\ndeep: {nest}\n"));
            "deep nesting"
        }
        10 => {
            let mut bomb = String::from(
                "\nbomb:\n  a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
            );
            for (k, prev) in ["b", "c", "d", "e", "f", "g", "h", "i"]
                .iter()
                .zip(["a", "b", "c", "d", "e", "f", "g", "h"])
            {
                bomb.push_str(&format!(
                    "  {k}: &{k} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"
                ));
            }
            text.push_str(&bomb);
            "alias bomb"
        }
        11 => {
            let spots: Vec<usize> = text.match_indices(": ").map(|(i, _)| i + 2).collect();
            if spots.is_empty() {
                return "no value";
            }
            let s = *rng.pick(&spots);
            let tag = *rng.pick(&[
                "!!binary ",
                "!custom ",
                "!!str ",
                "!!map ",
                "!!seq ",
                "!<tag:x> ",
            ]);
            text.insert_str(s, tag);
            "tag"
        }
        12 => {
            let n = [100, 3000][rng.below(2)];
            let ops: String = (0..n)
                .map(|i| format!("  gen{i}: \"op {i} {{cycle}}\"\n"))
                .collect();
            match text.find("\nops:\n") {
                Some(i) => text.insert_str(i + "\nops:\n".len(), &ops),
                None => text.push_str(&format!("\nops:\n{ops}")),
            }
            "thousands of ops"
        }
        13 if !lines.is_empty() => {
            let mut l = lines;
            let i = rng.below(l.len());
            if rng.below(2) == 0 {
                l[i].insert(0, ' ');
            } else {
                l[i] = l[i].trim_start().to_string();
            }
            *text = l.join("\n") + "\n";
            "indentation"
        }
        _ => {
            text.insert(at(rng, text), '\0');
            "NUL"
        }
    }
}

/// How a case ended.
struct Ended {
    status: Option<ExitStatus>,
    stderr: String,
    /// It did not end on its own within the limit.
    hung: bool,
}

/// Runs `cmd` (stderr to a file, stdout discarded) for at most `limit`; past
/// it, an interrupt, then `limit` more before a kill.
fn run_bounded(mut cmd: Command, dir: &Path, limit: Duration) -> Ended {
    let err_path = dir.join("stderr");
    let err_file = std::fs::File::create(&err_path).unwrap_or_else(|e| panic!("{e}"));
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(err_file)
        .stdin(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("the binary runs: {e}"));
    let mut hung = false;
    let status = match wait(&mut child, limit) {
        Some(s) => Some(s),
        None => {
            hung = true;
            let _ = Command::new("kill")
                .args(["-INT", &child.id().to_string()])
                .status();
            match wait(&mut child, limit) {
                Some(s) => Some(s),
                None => {
                    let _ = child.kill();
                    let _ = child.wait();
                    None
                }
            }
        }
    };
    Ended {
        status,
        stderr: std::fs::read_to_string(&err_path).unwrap_or_default(),
        hung,
    }
}

fn wait(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Ok(Some(s)) = child.try_wait() {
            return Some(s);
        }
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Whether an exit-2 line names a place: `FILE:LINE:COLUMN:`, or `param N:`.
fn names_a_place(line: &str, file: &str) -> bool {
    let placed = |rest: &str| {
        let mut parts = rest.splitn(3, ':');
        let (l, c) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        !l.is_empty()
            && !c.is_empty()
            && l.chars().all(|ch| ch.is_ascii_digit())
            && c.chars().all(|ch| ch.is_ascii_digit())
    };
    let after_file = line.find(file).map(|i| &line[i + file.len()..]);
    if let Some(rest) = after_file.and_then(|r| r.strip_prefix(':')) {
        return placed(rest);
    }
    // The argument parser quotes the argument it refuses.
    if line.starts_with("error: invalid value '")
        || line.starts_with("error: unexpected argument '")
        || line.starts_with("For more information, try")
    {
        return true;
    }
    let param = line
        .strip_prefix("paceline: param ")
        .or_else(|| line.strip_prefix("command line:"));
    if let Some(rest) = param {
        return rest
            .trim_start()
            .split(':')
            .next()
            .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
    }
    false
}

/// What went wrong with one case, if anything.
fn judge(what: &str, ended: &Ended, ok_codes: &[i32], file: &str) -> Option<String> {
    let err = &ended.stderr;
    let tail: String = err.chars().take(600).collect();
    if err.contains("panicked") {
        return Some(format!("{what}: panicked: {tail}"));
    }
    let Some(status) = ended.status else {
        return Some(format!(
            "{what}: hung, and did not stop at an interrupt: {tail}"
        ));
    };
    let Some(code) = status.code() else {
        return Some(format!("{what}: killed by a signal ({status:?}): {tail}"));
    };
    if !ok_codes.contains(&code) {
        return Some(format!("{what}: exit {code}: {tail}"));
    }
    if ended.hung && !ok_codes.contains(&1) {
        return Some(format!(
            "{what}: hung (exit {code} at an interrupt): {tail}"
        ));
    }
    if code == 1 && !err.contains("paceline: ") {
        return Some(format!("{what}: exit 1 without a message: {tail}"));
    }
    if code == 2 {
        let unplaced: Vec<&str> = err
            .lines()
            .filter(|l| {
                !l.trim().is_empty()
                    && !l.starts_with("warning:")
                    && !l.starts_with("paceline: scenario `")
                    && !in_step_listing(l)
                    && !names_a_place(l, file)
            })
            .collect();
        if !unplaced.is_empty() {
            return Some(format!(
                "{what}: exit 2 without a place: {:?}",
                &unplaced[..unplaced.len().min(3)]
            ));
        }
    }
    None
}

/// Runs `cases` cases on two workers; each case is `one(index, dir)`. Fails
/// with every problem found (the inputs stay in their directories).
fn fuzz(name: &str, one: impl Fn(usize, &Path) -> Vec<String> + Sync) {
    let n = cases();
    let next = AtomicUsize::new(0);
    let problems = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        break;
                    }
                    let dir = temp(&format!("{name}-{i}"));
                    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
                    let found = one(i, &dir);
                    if found.is_empty() {
                        let _ = std::fs::remove_dir_all(&dir);
                    } else {
                        let mut p = problems.lock().unwrap_or_else(|p| p.into_inner());
                        p.extend(
                            found
                                .into_iter()
                                .map(|f| format!("{} ({})", f, dir.display())),
                        );
                    }
                }
            });
        }
    });
    let problems = problems.into_inner().unwrap_or_else(|p| p.into_inner());
    assert!(
        problems.is_empty(),
        "{} of {n} cases failed (seed {}):\n{}",
        problems.len(),
        seed(),
        problems.join("\n")
    );
}

#[test]
fn fuzzed_activity_files_check_and_run_without_a_panic_or_a_hang() {
    let seeds = seeds();
    fuzz("file", |i, dir| {
        let mut rng = Rng(seed().wrapping_mul(1_000_003).wrapping_add(i as u64));
        let (origin, base) = rng.pick(&seeds);
        let mut yaml = base.clone();
        let mut done = Vec::new();
        for _ in 0..1 + rng.below(3) {
            done.push(mutate(&mut rng, &mut yaml));
        }
        let file = dir.join("case.yaml");
        std::fs::write(&file, &yaml).unwrap_or_else(|e| panic!("{e}"));
        let f = file.display().to_string();
        let what = format!("case {i} from {origin} ({})", done.join(", "));
        let mut problems = Vec::new();
        let mut check = bin();
        check.arg("check").arg(&file);
        // Wide limits: a debug build on a 2-core machine shared by builds took
        // 12-18 s to refuse a 3000-op file with a problem in each op.
        let ended = run_bounded(check, dir, Duration::from_secs(120));
        problems.extend(judge(&format!("check {what}"), &ended, &[0, 2], &f));
        // A tiny run: a few cycles, written nowhere.
        let mut run = bin();
        run.arg("run").arg(&file).args([
            "driver=stdout",
            "filename=/dev/null",
            "cycles=3",
            "threads=1",
            "rate=100K",
            "errors=count",
            "--report-interval",
            "1s",
            "--stop-timeout",
            "5s",
        ]);
        let ended = run_bounded(run, dir, Duration::from_secs(120));
        problems.extend(judge(&format!("run {what}"), &ended, &[0, 1, 2], &f));
        problems
    });
}

const PARAM_KEYS: &[&str] = &[
    "threads",
    "cycles",
    "rate",
    "stride",
    "seq",
    "errors",
    "tags",
    "alias",
    "driver",
    "latency",
    "error_rate",
    "format",
    "fields",
    "template",
    "op",
    "scenario",
    "cyclerate",
    "thread",
    "nope",
    "",
    "=",
];

const PARAM_VALUES: &[&str] = &[
    "1",
    "0",
    "-1",
    "5000",
    "70000",
    "auto",
    "9x",
    "1e-300",
    "1e300",
    "1M",
    "1B",
    "1T",
    "10..5",
    "5..10",
    "0..18446744073709551615",
    "9223372036854775808",
    "4294967297",
    "nan",
    "inf",
    "10K,0.5",
    "10K,2",
    "1K,1,restart,thread",
    "bucket",
    "nope",
    "retry:3",
    "retry:x",
    "count",
    "stop",
    "block:x",
    "",
    "=",
    "{cycle}",
    "{nope}",
    "[1,2",
    "\u{1}",
    "1ms",
    "-5s",
    "json",
    "csv",
    "a,b",
    "diag",
    "stdout",
];

#[test]
fn fuzzed_command_line_params_are_refused_with_their_place() {
    let quick = concat!(env!("CARGO_MANIFEST_DIR"), "/activities/quickstart.yaml");
    fuzz("params", |i, dir| {
        let mut rng = Rng(seed().wrapping_mul(7_919).wrapping_add(i as u64));
        let mut pairs: Vec<String> = (0..1 + rng.below(4))
            .map(|_| format!("{}={}", rng.pick(PARAM_KEYS), rng.pick(PARAM_VALUES)))
            .collect();
        let what = format!("case {i}: {}", pairs.join(" "));
        let mut problems = Vec::new();
        let mut check = bin();
        check.arg("check").arg(quick).args(&pairs);
        let ended = run_bounded(check, dir, Duration::from_secs(60));
        problems.extend(judge(&format!("check {what}"), &ended, &[0, 2], quick));
        // The same params on a run of params alone: a few cycles, bounded.
        pairs.insert(0, "driver=diag".into());
        pairs.push("cycles=3".into());
        pairs.push("threads=1".into());
        let mut run = bin();
        run.arg("run")
            .args(&pairs)
            .args(["--report-interval", "1s", "--stop-timeout", "5s"]);
        let ended = run_bounded(run, dir, Duration::from_secs(30));
        problems.extend(judge(
            &format!("run {what}"),
            &ended,
            &[0, 1, 2],
            "command line",
        ));
        problems
    });
}

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

/// A line of `check`'s per-step listing after the file's problems: its header,
/// or a step that is valid (a step with problems quotes its first, with that
/// problem's place, and is judged like any other line).
fn in_step_listing(l: &str) -> bool {
    l.starts_with("per step (") || (l.starts_with("  ") && l.ends_with(": valid"))
}
