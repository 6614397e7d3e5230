//! The generator's own scheduling delays: how long this process's threads
//! waited on a CPU run queue (runnable, not running), from
//! `/proc/self/task/*/schedstat` (its second field, in ns; Linux with
//! schedstats, which every distribution kernel has).
//!
//! A worker thread that waits for a CPU delays the ops it starts and the ends it
//! reads: that time lands in the ops' waits and service times. The verdict
//! compares it with the ops' times so that the generator's stalls are never
//! blamed on the system under test (`docs/engine.md`, "The verdict").

use crate::nanos::Nanos;

/// Run-queue delay summed over this process's live threads, in ns; `None` where
/// `/proc/self/task` cannot be read. Threads that exited take their counts with
/// them, so the sum can fall: take differences with `saturating_sub`.
///
/// ```
/// if cfg!(target_os = "linux") {
///     assert!(paceline::process_run_queue_nanos().is_some());
/// }
/// ```
pub fn process_run_queue_nanos() -> Option<Nanos> {
    let tasks = std::fs::read_dir("/proc/self/task").ok()?;
    let mut sum: Nanos = 0;
    let mut any = false;
    for t in tasks.flatten() {
        let Ok(text) = std::fs::read_to_string(t.path().join("schedstat")) else {
            continue;
        };
        if let Some(n) = parse_schedstat(&text) {
            sum = sum.saturating_add(n);
            any = true;
        }
    }
    any.then_some(sum)
}

/// The run-queue delay (the second of three numbers) of a `schedstat` line.
fn parse_schedstat(text: &str) -> Option<Nanos> {
    text.split_ascii_whitespace().nth(1)?.parse().ok()
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn the_second_field_is_the_run_queue_delay() {
        assert_eq!(parse_schedstat("123 456 7\n"), Some(456));
        assert_eq!(parse_schedstat("123"), None);
    }
}
