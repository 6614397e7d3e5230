//! The process's CPU time, read from the OS, for the verdict's
//! `generator_cpu_cores`: how many cores the generator kept busy over a window.
//!
//! On Linux the reading is the user + system time of the whole process (every
//! thread, living or exited) from `/proc/self/stat`, in clock ticks of
//! `USER_HZ`, which the kernel fixes at 100 per second for that file on every
//! architecture it exports it on (`sysconf(_SC_CLK_TCK)`). Elsewhere, or when the
//! file cannot be read, there is no reading and the verdict says the CPU is
//! unknown rather than guessing.

use crate::nanos::{NANOS_PER_SEC, Nanos};
use std::time::Instant;

/// Clock ticks per second in `/proc/self/stat` (`USER_HZ`).
const TICKS_PER_SEC: u64 = 100;

/// The process's CPU time so far (user + system, all threads) in nanoseconds,
/// or `None` where the OS gives none (not Linux, or `/proc` not mounted).
///
/// ```
/// if let Some(ns) = paceline::process_cpu_nanos() {
///     let spin = std::time::Instant::now();
///     while spin.elapsed().as_millis() < 30 {}
///     assert!(paceline::process_cpu_nanos().unwrap() >= ns);
/// }
/// ```
pub fn process_cpu_nanos() -> Option<Nanos> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    parse_stat(&stat)
}

/// User + system time from the text of `/proc/<pid>/stat`, in nanoseconds. The
/// command name (field 2) is in parentheses and may hold spaces or `)`, so the
/// fields are counted from the last `)`: utime and stime are fields 14 and 15.
fn parse_stat(stat: &str) -> Option<Nanos> {
    let after = &stat[stat.rfind(')')? + 1..];
    let mut fields = after.split_ascii_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some((utime + stime).saturating_mul(NANOS_PER_SEC / TICKS_PER_SEC))
}

/// The cores this machine offers the process (its CPU affinity and cgroup quota
/// counted), at least 1.
///
/// ```
/// assert!(paceline::machine_cores() >= 1);
/// ```
pub fn machine_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Measures the cores the process used between readings: CPU time over wall
/// time. With a resolution of 10 ms of CPU time, windows of a second or more
/// read to within a few percent.
///
/// ```
/// let mut meter = paceline::CpuMeter::start();
/// let spin = std::time::Instant::now();
/// while spin.elapsed().as_millis() < 50 {}
/// if let Some(cores) = meter.lap() {
///     assert!(cores >= 0.0); // about 1 on an idle machine: one thread spun
/// }
/// ```
#[derive(Debug, Clone)]
pub struct CpuMeter {
    cpu: Option<Nanos>,
    wall: Instant,
}

impl CpuMeter {
    /// A meter whose first window starts now.
    ///
    /// See [`CpuMeter`] for an example.
    pub fn start() -> Self {
        Self {
            cpu: process_cpu_nanos(),
            wall: Instant::now(),
        }
    }

    /// Cores used since the window began (CPU seconds per wall second), without
    /// starting a new window; `None` when the OS gives no CPU time or no wall
    /// time has passed.
    ///
    /// ```
    /// let meter = paceline::CpuMeter::start();
    /// std::thread::sleep(std::time::Duration::from_millis(20));
    /// if let Some(cores) = meter.cores() {
    ///     assert!(cores < 4.0);
    /// }
    /// ```
    pub fn cores(&self) -> Option<f64> {
        let cpu = process_cpu_nanos()?.saturating_sub(self.cpu?);
        let wall = self.wall.elapsed().as_nanos();
        (wall > 0).then(|| cpu as f64 / wall as f64)
    }

    /// Cores used since the window began, and starts the next window now.
    ///
    /// See [`CpuMeter`] for an example.
    pub fn lap(&mut self) -> Option<f64> {
        let cores = self.cores();
        *self = Self::start();
        cores
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn utime_and_stime_are_counted_from_the_last_parenthesis() {
        // A command name with a space and a `)` in it; utime 250, stime 50 ticks.
        let line = "1234 (my) prog) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0 \
                    1000 2000 300 18446744073709551615";
        assert_eq!(parse_stat(line), Some(3_000_000_000));
    }

    #[test]
    fn a_short_or_garbled_stat_gives_no_reading() {
        assert_eq!(parse_stat("1234 (x) S 1 2"), None);
        assert_eq!(parse_stat("no parenthesis here"), None);
        assert_eq!(
            parse_stat("1 (x) S 1 1 1 0 -1 0 0 0 0 0 ab 50 0"),
            None,
            "a field that is not a number"
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_has_a_reading_that_grows_with_work() {
        let before = process_cpu_nanos().unwrap_or_else(|| panic!("/proc/self/stat"));
        let spin = Instant::now();
        while spin.elapsed().as_millis() < 60 {
            std::hint::black_box(0u64);
        }
        let after = process_cpu_nanos().unwrap_or_else(|| panic!("/proc/self/stat"));
        assert!(after > before, "{before} -> {after}");
    }
}
