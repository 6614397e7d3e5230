//! Running one case in bounded time and judging how it ended; running the
//! cases on two workers.

use super::*;

/// How a case ended.
pub(crate) struct Ended {
    pub(crate) status: Option<ExitStatus>,
    pub(crate) stderr: String,
    /// It did not end on its own within the limit.
    pub(crate) hung: bool,
}

/// Runs `cmd` (stderr to a file, stdout discarded) for at most `limit`; past
/// it, an interrupt, then `limit` more before a kill.
pub(crate) fn run_bounded(mut cmd: Command, dir: &Path, limit: Duration) -> Ended {
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

pub(crate) fn wait(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
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
pub(crate) fn judge(what: &str, ended: &Ended, ok_codes: &[i32], file: &str) -> Option<String> {
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
pub(crate) fn fuzz(name: &str, one: impl Fn(usize, &Path) -> Vec<String> + Sync) {
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

/// A line of `check`'s per-step listing after the file's problems: its header,
/// or a step that is valid (a step with problems quotes its first, with that
/// problem's place, and is judged like any other line).
fn in_step_listing(l: &str) -> bool {
    l.starts_with("per step (") || (l.starts_with("  ") && l.ends_with(": valid"))
}
