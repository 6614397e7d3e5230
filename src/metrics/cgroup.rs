//! CPU throttling of the generator's cgroup, for the verdict: a CPU limit (CFS
//! bandwidth: `cpu.max` in cgroup v2, `cpu.cfs_quota_us` in v1; a Kubernetes CPU
//! limit) stops every thread of the group for the rest of a 100 ms period once its
//! quota is used, however idle the machine is. The ops it was about to start start
//! late, and the lateness looks like the system under test's unless the verdict
//! knows (kubernetes#51135: throttled at a fraction of the limit).
//!
//! The kernel counts it in the group's `cpu.stat`: `nr_periods`, `nr_throttled`,
//! and `throttled_usec` (v2) or `throttled_time` (v1, ns). [`ThrottleMeter`]
//! reads the process's own group and its ancestors (a limit set on a parent, a
//! Kubernetes pod's, throttles the children but is counted in the parent) and
//! gives the worst group's increase between two readings.
//!
//! The files are found from `/proc/self/cgroup`; `PACELINE_CGROUP_CPU_STAT` names
//! one `cpu.stat` file instead (a test's fake one, or a group mounted elsewhere),
//! and an empty value turns the reading off.

use crate::nanos::Nanos;
use std::path::{Path, PathBuf};

/// The environment variable that names the `cpu.stat` file to read instead of the
/// process's own groups' (empty: none).
///
/// ```
/// assert_eq!(paceline::CGROUP_CPU_STAT_ENV, "PACELINE_CGROUP_CPU_STAT");
/// ```
pub const CGROUP_CPU_STAT_ENV: &str = "PACELINE_CGROUP_CPU_STAT";

/// CPU throttling of a cgroup: counts since the group was made, or their
/// increase over a window.
///
/// ```
/// let t = paceline::Throttling::parse("nr_periods 40\nnr_throttled 3\nthrottled_usec 25000\n");
/// assert_eq!(t, Some(paceline::Throttling { periods: 40, throttled: 3, throttled_nanos: 25_000_000 }));
/// // A group without a limit counts no periods: nothing to read.
/// assert_eq!(paceline::Throttling::parse("usage_usec 5\n"), None);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Throttling {
    /// Enforcement periods in which the group had runnable threads.
    pub periods: u64,
    /// Periods in which it used its quota and was stopped for the rest.
    pub throttled: u64,
    /// How long its threads were held, ns (summed over the CPUs).
    pub throttled_nanos: Nanos,
}

impl Throttling {
    /// The counts of a `cpu.stat` file (v2's `throttled_usec` or v1's
    /// `throttled_time`); `None` when it has no throttling counts (the root group,
    /// or a kernel without CFS bandwidth control).
    ///
    /// See [`Throttling`] for an example.
    pub fn parse(text: &str) -> Option<Self> {
        let mut t = Self::default();
        let (mut periods, mut throttled) = (false, false);
        for line in text.lines() {
            let mut kv = line.split_ascii_whitespace();
            let (Some(k), Some(v)) = (kv.next(), kv.next()) else {
                continue;
            };
            let Ok(v) = v.parse::<u64>() else { continue };
            match k {
                "nr_periods" => (t.periods, periods) = (v, true),
                "nr_throttled" => (t.throttled, throttled) = (v, true),
                "throttled_usec" => t.throttled_nanos = v.saturating_mul(1000),
                "throttled_time" => t.throttled_nanos = v,
                _ => {}
            }
        }
        (periods && throttled).then_some(t)
    }

    /// The increase from `earlier` to `self` (0 where a count fell: a group made
    /// anew).
    ///
    /// ```
    /// use paceline::Throttling;
    /// let a = Throttling { periods: 10, throttled: 1, throttled_nanos: 5 };
    /// let b = Throttling { periods: 30, throttled: 4, throttled_nanos: 20 };
    /// assert_eq!(b.since(&a), Throttling { periods: 20, throttled: 3, throttled_nanos: 15 });
    /// ```
    pub fn since(&self, earlier: &Self) -> Self {
        Self {
            periods: self.periods.saturating_sub(earlier.periods),
            throttled: self.throttled.saturating_sub(earlier.throttled),
            throttled_nanos: self.throttled_nanos.saturating_sub(earlier.throttled_nanos),
        }
    }

    /// Two windows' counts together.
    ///
    /// ```
    /// use paceline::Throttling;
    /// let a = Throttling { periods: 1, throttled: 1, throttled_nanos: 5 };
    /// assert_eq!(a.plus(&a).throttled_nanos, 10);
    /// ```
    pub fn plus(&self, other: &Self) -> Self {
        Self {
            periods: self.periods.saturating_add(other.periods),
            throttled: self.throttled.saturating_add(other.throttled),
            throttled_nanos: self.throttled_nanos.saturating_add(other.throttled_nanos),
        }
    }
}

/// Reads the throttling of the process's cgroup (and its ancestors) between
/// calls of [`lap`](Self::lap).
///
/// ```
/// let dir = std::env::temp_dir().join(format!("paceline-doc-throttle-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let stat = dir.join("cpu.stat");
/// std::fs::write(&stat, "nr_periods 10\nnr_throttled 0\nthrottled_usec 0\n").unwrap();
/// let mut meter = paceline::ThrottleMeter::at(vec![stat.clone()]);
/// std::fs::write(&stat, "nr_periods 20\nnr_throttled 4\nthrottled_usec 80000\n").unwrap();
/// let t = meter.lap().unwrap();
/// assert_eq!((t.throttled, t.throttled_nanos), (4, 80_000_000));
/// # std::fs::remove_dir_all(&dir).ok();
/// ```
#[derive(Debug, Clone, Default)]
pub struct ThrottleMeter {
    files: Vec<PathBuf>,
    last: Vec<Option<Throttling>>,
}

impl ThrottleMeter {
    /// A meter on this process's groups (or the file `PACELINE_CGROUP_CPU_STAT`
    /// names); its first window starts now.
    ///
    /// ```
    /// let mut m = paceline::ThrottleMeter::start();
    /// let _ = m.lap(); // `None` where no group has a CPU limit's counts
    /// ```
    pub fn start() -> Self {
        Self::at(own_cpu_stat_files())
    }

    /// A meter on these `cpu.stat` files (the process's group first, then its
    /// ancestors'); its first window starts now.
    ///
    /// See [`ThrottleMeter`] for an example.
    pub fn at(files: Vec<PathBuf>) -> Self {
        let last = files.iter().map(|f| read(f)).collect();
        Self { files, last }
    }

    /// The throttling since the window began, of the group that was held the
    /// longest, and starts the next window; `None` when no group has counts.
    ///
    /// See [`ThrottleMeter`] for an example.
    pub fn lap(&mut self) -> Option<Throttling> {
        let mut worst: Option<Throttling> = None;
        for (f, last) in self.files.iter().zip(self.last.iter_mut()) {
            let now = read(f);
            if let (Some(n), Some(l)) = (now, *last) {
                let d = n.since(&l);
                if worst.is_none_or(|w| {
                    (d.throttled_nanos, d.throttled) > (w.throttled_nanos, w.throttled)
                }) {
                    worst = Some(d);
                }
            }
            if now.is_some() {
                *last = now;
            }
        }
        worst
    }
}

fn read(f: &Path) -> Option<Throttling> {
    Throttling::parse(&std::fs::read_to_string(f).ok()?)
}

/// The `cpu.stat` files of this process's cgroup and its ancestors, own first.
fn own_cpu_stat_files() -> Vec<PathBuf> {
    if let Some(v) = std::env::var_os(CGROUP_CPU_STAT_ENV) {
        return if v.is_empty() {
            Vec::new()
        } else {
            vec![PathBuf::from(v)]
        };
    }
    let Ok(text) = std::fs::read_to_string("/proc/self/cgroup") else {
        return Vec::new();
    };
    cpu_stat_files(&text, Path::new("/sys/fs/cgroup"))
        .into_iter()
        .filter(|f| f.is_file())
        .collect()
}

/// The `cpu.stat` candidates for a `/proc/self/cgroup` text under the cgroup
/// mount `root`: the v1 `cpu` controller's group (under `cpu` or `cpu,cpuacct`),
/// else the v2 group (`0::PATH`), then each ancestor up to the mount.
fn cpu_stat_files(proc_cgroup: &str, root: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<(PathBuf, &str)> = Vec::new();
    for line in proc_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(ctl), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        if ctl.split(',').any(|c| c == "cpu") {
            for mount in ["cpu", "cpu,cpuacct", "cpuacct,cpu"] {
                dirs.push((root.join(mount), path));
            }
        } else if ctl.is_empty() {
            dirs.push((root.to_path_buf(), path));
            dirs.push((root.join("unified"), path));
        }
    }
    let mut out = Vec::new();
    for (mount, path) in dirs {
        let mut rel = PathBuf::from(path.trim_start_matches('/'));
        loop {
            out.push(mount.join(&rel).join("cpu.stat"));
            if !rel.pop() {
                break;
            }
        }
    }
    out.dedup();
    out
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn v1_counts_throttled_time_in_nanoseconds() {
        let t = Throttling::parse("nr_periods 5\nnr_throttled 2\nthrottled_time 7000\n");
        assert_eq!(t.map(|t| t.throttled_nanos), Some(7000));
    }

    #[test]
    fn the_groups_are_found_for_v1_and_v2_own_first() {
        let root = Path::new("/cg");
        let v2 = cpu_stat_files("0::/kubepods/pod1/c1\n", root);
        assert_eq!(v2[0], Path::new("/cg/kubepods/pod1/c1/cpu.stat"));
        assert_eq!(v2[1], Path::new("/cg/kubepods/pod1/cpu.stat"));
        assert!(v2.contains(&PathBuf::from("/cg/cpu.stat")));
        let v1 = cpu_stat_files("3:cpu,cpuacct:/docker/abc\n1:memory:/x\n", root);
        assert_eq!(v1[0], Path::new("/cg/cpu/docker/abc/cpu.stat"));
        assert!(v1.contains(&PathBuf::from("/cg/cpu,cpuacct/docker/abc/cpu.stat")));
        assert!(!v1.iter().any(|p| p.starts_with("/cg/memory")));
    }

    #[test]
    fn the_worst_group_is_reported_and_a_missing_file_is_none() {
        let dir = std::env::temp_dir().join(format!("paceline-throttle-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        let (own, parent) = (dir.join("own.stat"), dir.join("parent.stat"));
        let w = |p: &Path, n: u64, ns: u64| {
            std::fs::write(
                p,
                format!("nr_periods 100\nnr_throttled {n}\nthrottled_usec {ns}\n"),
            )
            .unwrap_or_else(|e| panic!("{e}"));
        };
        w(&own, 0, 0);
        w(&parent, 10, 1000);
        let mut m = ThrottleMeter::at(vec![own.clone(), parent.clone(), dir.join("none")]);
        w(&own, 1, 500);
        w(&parent, 13, 9000);
        let t = m.lap().unwrap_or_else(|| panic!("readings"));
        assert_eq!((t.throttled, t.throttled_nanos), (3, 8_000_000));
        // Nothing since: zero, not the totals.
        assert_eq!(m.lap().map(|t| t.throttled), Some(0));
        assert_eq!(ThrottleMeter::at(vec![dir.join("none")]).lap(), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
