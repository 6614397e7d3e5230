//! Fuzzed activity files (`check` and a tiny `run` of each) and fuzzed
//! command-line params.

use super::*;

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
