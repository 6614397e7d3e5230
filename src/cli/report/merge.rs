//! `paceline report A.hlog B.hlog ...`: one report of a fleet, from the HDR logs
//! its processes wrote (`docs/scale-out.md`'s Kubernetes recipe runs N pods, each
//! with its own `--hdr-log`).
//!
//! The rule:
//!
//! - **Time.** Each line is placed by the latest `#[BaseTime: ...]` above it (the
//!   `#[StartTime: ...]` when there is none): an interval's or an event's wall
//!   time is that base plus its offset, so a log whose activities count from
//!   their own first slots (a BaseTime line before each, see [`super::hdr`]) is
//!   placed as exactly as one that counts from its start. Each activity's merged
//!   origin is the earliest of its first slots in the logs (the BaseTime of its
//!   last interval in a log with the `#[Offsets from each activity's first
//!   slot]` line; in an older log, the log's StartTime), and every time on the
//!   page (intervals, events) is seconds since it: a fleet on one shared
//!   schedule counts from that schedule's first slot, as each process's CSV.
//! - **Windows.** The merged intervals are windows of the report interval `W`
//!   (the median interval length of all the logs: a late report lengthens one
//!   interval, and the first and last are short) starting at the origin. A histogram cannot be cut, so each process's
//!   interval goes whole into the window that holds its midpoint: intervals of
//!   length `W` that start at another phase give each window exactly one per
//!   process, the one that overlaps it most. A window's start and end are those
//!   of the intervals in it, clipped to the window (the last window's end is
//!   the latest interval's end, so the run's span holds every process's ops),
//!   and its rate is its ops (the sum of the processes') over that span.
//! - **Partial.** A window is partial when some log has less than half a window of
//!   intervals in it (it started late, ended early, or is missing there): such a
//!   window is marked as the single-log report marks a partial interval (left out
//!   of the plots, with a note), and its ops stay in the totals.
//! - **Sums.** Histograms of the same tag are added: per window and for the
//!   totals. The target of a window is the sum of the processes' targets, except
//!   on a shared schedule (a `#[Shared ALIAS]` line: every process logs the whole
//!   schedule's rate), where it is that rate, once.
//! - **Refusals** (exit 2, naming the file and line): a file that cannot be read
//!   or is not an interval log (as for one log), a log with no StartTime (it cannot
//!   be placed), one not written by paceline (its values' unit is not known to be
//!   nanoseconds), and logs whose tags differ (other activities, or one paced in
//!   one log and unpaced in another).

use super::hdr::{self, tag_for};
use super::model::{EventMark, Figures, IntervalPoint, RunData, Totals};
use super::read::{
    self, ReadError, decode_histogram_line, event_comment, header_seconds, target_comment,
};
use hdrhistogram::Histogram;
use paceline::wildcard::{Case, Wildcard};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

/// What the merge did, for the command's closing line.
#[derive(Debug, Clone, PartialEq)]
pub struct MergeNote {
    /// Logs merged.
    pub logs: usize,
    /// The window length, seconds.
    pub window: f64,
    /// Windows of all activities.
    pub windows: usize,
    /// Of them, partial.
    pub partial: usize,
}

/// The report data of several logs merged; see the module's rule.
pub fn from_files(paths: &[PathBuf]) -> Result<(RunData, MergeNote), ReadError> {
    let mut texts = Vec::with_capacity(paths.len());
    for p in paths {
        texts.push((p.as_path(), read::read_text(p)?));
    }
    let texts: Vec<(&Path, &str)> = texts.iter().map(|(p, t)| (*p, t.as_str())).collect();
    from_texts(&texts)
}

/// [`from_files`] on the logs' texts, each with the path its errors name.
pub fn from_texts(logs: &[(&Path, &str)]) -> Result<(RunData, MergeNote), ReadError> {
    let mut read = Vec::with_capacity(logs.len());
    for (path, text) in logs {
        // Every line as the single-log report checks it, with its errors.
        read::parse_hdr(text, path)?;
        read.push(Log::parse(text, path)?);
    }
    merge(&read)
}

/// One histogram of a log.
struct Entry {
    alias: String,
    metric: &'static str,
    /// Wall time of the BaseTime its offsets count from, seconds since the epoch.
    base: f64,
    /// Seconds since `base`.
    start: f64,
    end: f64,
    hist: Histogram<u64>,
    /// For a service line: the target announced before it (`None`: no target
    /// line, a log written before paceline logged them; `Some(None)`: unpaced).
    target: Option<Option<f64>>,
}

/// One log, read.
struct Log {
    path: PathBuf,
    /// Wall time of its StartTime and of its base (BaseTime, or StartTime),
    /// seconds since the epoch.
    start_time: f64,
    entries: Vec<Entry>,
    /// (alias, wall time of its base, seconds since the base, text).
    events: Vec<(String, f64, f64, String)>,
    /// Whether each activity's lines count from its own first slot (the
    /// [`hdr::FIRST_SLOT_OFFSETS`] line).
    first_slots: bool,
    /// Per activity (tag form): the base of its latest line (NaN: the
    /// StartTime).
    latest: HashMap<String, f64>,
    /// Aliases on a shared schedule, in their tag form (`hdr::tag_for`).
    shared: HashSet<String>,
    /// Each tag with the line it first appears on.
    tags: BTreeMap<String, usize>,
    /// The line of the first histogram.
    first_line: usize,
}

impl Log {
    /// Reads a log that [`read::parse_hdr`] accepted; the errors left are the
    /// merge's own.
    fn parse(text: &str, path: &Path) -> Result<Self, ReadError> {
        let bad = |line: usize, what: String| ReadError::Merge {
            path: path.to_path_buf(),
            line,
            what,
        };
        let mut log = Log {
            path: path.to_path_buf(),
            start_time: f64::NAN,
            entries: Vec::new(),
            events: Vec::new(),
            first_slots: false,
            latest: HashMap::new(),
            shared: HashSet::new(),
            tags: BTreeMap::new(),
            first_line: 0,
        };
        let mut by_paceline = false;
        // The latest BaseTime (NaN: none yet, the StartTime stands).
        let mut base = f64::NAN;
        let mut targets: HashMap<String, Option<f64>> = HashMap::new();
        for (n, raw) in text.lines().enumerate() {
            let line = raw.trim_end_matches('\r');
            if let Some(rest) = line.strip_prefix("#[StartTime: ") {
                log.start_time = header_seconds(rest).ok_or_else(|| {
                    bad(
                        n + 1,
                        format!("`{line}` is not `#[StartTime: SECONDS (seconds since epoch)]`"),
                    )
                })?;
            } else if let Some(rest) = line.strip_prefix("#[BaseTime: ") {
                base = header_seconds(rest).ok_or_else(|| {
                    bad(
                        n + 1,
                        format!("`{line}` is not `#[BaseTime: SECONDS (seconds since epoch)]`"),
                    )
                })?;
            } else if line.strip_prefix('#') == Some(hdr::FIRST_SLOT_OFFSETS) {
                log.first_slots = true;
            } else if line.starts_with("#[Logged with paceline") {
                by_paceline = true;
            } else if let Some(rest) = line.strip_prefix("#[Shared ") {
                let alias = rest.strip_suffix(']').unwrap_or(rest);
                log.shared.insert(tag_for(alias, ""));
            } else if let Some(rest) = line.strip_prefix("#[Event ") {
                if let Some((at, alias, text)) = event_comment(rest) {
                    let text = text.to_string();
                    log.latest.insert(tag_for(alias, ""), base);
                    log.events.push((alias.to_string(), base, at, text));
                }
            } else if let Some(rest) = line.strip_prefix("#[Target ") {
                if let Some((alias, target)) = target_comment(rest) {
                    targets.insert(tag_for(alias, ""), target);
                }
            } else if line.is_empty()
                || line.starts_with('#')
                || line.starts_with("\"StartTimestamp\"")
            {
                continue;
            } else {
                // parse_hdr decoded this line already.
                let d = decode_histogram_line(line).map_err(|what| bad(n + 1, what))?;
                if log.first_line == 0 {
                    log.first_line = n + 1;
                    if log.start_time.is_nan() {
                        return Err(bad(
                            n + 1,
                            "no `#[StartTime: ...]` line before the first histogram: the \
                             log cannot be placed in time beside the others (merge the logs \
                             `paceline run --hdr-log` writes, which have one, or add \
                             `#[StartTime: SECONDS (seconds since epoch)]` at the top, the \
                             wall time the log's interval times count from)"
                                .to_string(),
                        ));
                    }
                    if !by_paceline {
                        return Err(bad(
                            n + 1,
                            "no `#[Logged with paceline ...]` line before the first \
                             histogram: the log was not written by paceline, so its values' \
                             unit is not known to be nanoseconds (merge only logs that \
                             `paceline run --hdr-log` wrote)"
                                .to_string(),
                        ));
                    }
                }
                log.tags.entry(d.tag.clone()).or_insert(n + 1);
                // For a service line: the target announced before it.
                let target = match d.metric {
                    "service" => targets.remove(&tag_for(&d.alias, "")),
                    _ => None,
                };
                log.latest.insert(tag_for(&d.alias, ""), base);
                log.entries.push(Entry {
                    alias: d.alias,
                    metric: d.metric,
                    base,
                    start: d.start,
                    end: d.end,
                    hist: d.hist,
                    target,
                });
            }
        }
        // Lines before any BaseTime count from the StartTime.
        let start_time = log.start_time;
        let or_start = |b: &mut f64| {
            if b.is_nan() {
                *b = start_time;
            }
        };
        log.entries.iter_mut().for_each(|e| or_start(&mut e.base));
        log.events.iter_mut().for_each(|e| or_start(&mut e.1));
        log.latest.values_mut().for_each(or_start);
        Ok(log)
    }

    /// The wall time the times of the activity `key` (its tag form,
    /// `hdr::tag_for(alias, "")`) count from in this log: the base of its
    /// latest line (its first slot), in a log that counts each activity from its
    /// own (as `read::parse_hdr` takes it); else the log's StartTime. `None`
    /// when the alias has no line here.
    fn first_slot(&self, key: &str) -> Option<f64> {
        let base = *self.latest.get(key)?;
        Some(if self.first_slots {
            base
        } else {
            self.start_time
        })
    }
}

/// One activity's window while it is filled.
struct Window {
    /// The earliest start and latest end of its intervals, seconds since the
    /// merged origin.
    first: f64,
    last: f64,
    ops: u64,
    service: Histogram<u64>,
    wait: Histogram<u64>,
    response: Histogram<u64>,
    /// Per log: seconds of intervals in the window, and the target times seconds
    /// (`None` once a service line had no target line).
    covered: Vec<f64>,
    target_seconds: Vec<Option<f64>>,
    unpaced: bool,
}

impl Window {
    fn new(logs: usize) -> Self {
        let empty = Totals::default();
        Self {
            first: f64::INFINITY,
            last: f64::NEG_INFINITY,
            ops: 0,
            service: empty.service,
            wait: empty.wait,
            response: empty.response,
            covered: vec![0.0; logs],
            target_seconds: vec![Some(0.0); logs],
            unpaced: false,
        }
    }
}

fn add(to: &mut Histogram<u64>, h: &Histogram<u64>, log: &Log, tag: &str) -> Result<(), ReadError> {
    to.add(h).map_err(|e| ReadError::Merge {
        path: log.path.clone(),
        line: log.tags.get(tag).copied().unwrap_or(log.first_line),
        what: format!("the `{tag}` histogram does not fit the merged one: {e:?}"),
    })
}

/// Merges read logs; see the module's rule.
fn merge(logs: &[Log]) -> Result<(RunData, MergeNote), ReadError> {
    let Some(first) = logs.first() else {
        return Ok((RunData::default(), MergeNote::empty()));
    };
    // The same tags in every log.
    for log in &logs[1..] {
        // The first in the file's order.
        let extra = log
            .tags
            .iter()
            .filter(|(t, _)| !first.tags.contains_key(*t))
            .min_by_key(|(_, line)| **line)
            .map(|(t, _)| t);
        let missing = first.tags.keys().find(|t| !log.tags.contains_key(*t));
        let what = match (extra, missing) {
            (Some(t), _) => format!(
                "tag `{t}` is in this log but not in {}",
                first.path.display()
            ),
            (None, Some(t)) => format!("tag `{t}` of {} is not in this log", first.path.display()),
            (None, None) => continue,
        };
        let line = extra
            .and_then(|t| log.tags.get(t).copied())
            .unwrap_or(log.first_line);
        return Err(ReadError::Merge {
            path: log.path.clone(),
            line,
            what: format!(
                "{what}: only logs of the same workload merge (the same activities, each \
                 paced in every log or in none); report this log on its own"
            ),
        });
    }
    let window = report_interval(logs);
    let mut data = RunData::default();
    // Per alias: its windows by index.
    let mut windows: Vec<BTreeMap<i64, Window>> = Vec::new();
    // Each activity's origin: the earliest of its first slots.
    let mut origins: HashMap<String, f64> = HashMap::new();
    for log in logs {
        for key in log.latest.keys() {
            if let Some(at) = log.first_slot(key) {
                let o = origins.entry(key.clone()).or_insert(at);
                *o = o.min(at);
            }
        }
    }
    let origin_of = |alias: &str| origins.get(&tag_for(alias, "")).copied().unwrap_or(0.0);
    for (i, log) in logs.iter().enumerate() {
        for e in &log.entries {
            let shift = e.base - origin_of(&e.alias);
            let index = position(&mut data, &mut windows, &e.alias);
            let tag = format!("{}.{}", e.alias, e.metric);
            let totals = &mut data.activities[index].totals;
            let total = match e.metric {
                "service" => &mut totals.service,
                "wait" => &mut totals.wait,
                "response" => &mut totals.response,
                "queue" => &mut totals.queue,
                _ => &mut totals.dispatch,
            };
            add(total, &e.hist, log, &tag)?;
            let (start, end) = (e.start + shift, e.end + shift);
            let k = ((start + end) / 2.0 / window).floor() as i64;
            let w = windows[index]
                .entry(k)
                .or_insert_with(|| Window::new(logs.len()));
            match e.metric {
                "service" => {
                    w.first = w.first.min(start);
                    w.last = w.last.max(end);
                    w.ops += e.hist.len();
                    w.covered[i] += end - start;
                    w.target_seconds[i] = match (w.target_seconds[i], e.target) {
                        (Some(sum), Some(Some(t))) => Some(sum + t * (end - start)),
                        (Some(sum), Some(None)) => {
                            w.unpaced = true;
                            Some(sum)
                        }
                        _ => None,
                    };
                    add(&mut w.service, &e.hist, log, &tag)?;
                }
                "wait" => add(&mut w.wait, &e.hist, log, &tag)?,
                "response" => add(&mut w.response, &e.hist, log, &tag)?,
                _ => {}
            }
        }
        for (alias, base, at, text) in &log.events {
            let shift = base - origin_of(alias);
            let index = position(&mut data, &mut windows, alias);
            data.activities[index]
                .events
                .push(EventMark::new(at + shift, text));
        }
    }
    let mut note = MergeNote {
        logs: logs.len(),
        window,
        windows: 0,
        partial: 0,
    };
    for (a, ws) in data.activities.iter_mut().zip(windows) {
        let key = tag_for(&a.alias, "");
        let shared = logs.iter().any(|l| l.shared.contains(&key));
        // The latest end of any interval: the last window runs to it, so the
        // run's span (the page's `elapsed`, its `rate`) is that of every
        // process's ops, not the first one's (audit p18, H4: a pod started
        // 0.45 s late read 327/s for a 300/s schedule).
        let last_end = ws.values().map(|w| w.last).fold(f64::MIN, f64::max);
        let last_k = ws.keys().next_back().copied();
        for (k, w) in ws {
            let (from, to) = (k as f64 * window, (k + 1) as f64 * window);
            let start = w.first.max(from);
            let end = if Some(k) == last_k {
                last_end.max(start)
            } else {
                w.last.min(to).max(start)
            };
            let partial = w.covered.iter().any(|c| c * 2.0 < window);
            note.windows += 1;
            note.partial += usize::from(partial);
            a.intervals.push(IntervalPoint {
                start,
                end,
                ops: w.ops,
                target: window_target(&w, shared),
                service: Figures::of(&w.service),
                wait: Figures::of(&w.wait),
                response: Figures::of(&w.response),
                partial,
            });
        }
        a.events
            .sort_by(|x, y| x.at.partial_cmp(&y.at).unwrap_or(std::cmp::Ordering::Equal));
    }
    data.source = source(logs);
    data.merged_logs = logs.len();
    Ok((data, note))
}

/// The report interval the logs were written with: the median length of their
/// intervals (a report a few ms late makes one interval longer and the next
/// shorter, and a run's first and last intervals are short; most are the
/// interval itself). At least 1 ns.
fn report_interval(logs: &[Log]) -> f64 {
    let mut lengths: Vec<f64> = logs
        .iter()
        .flat_map(|l| &l.entries)
        .filter(|e| e.metric == "service")
        .map(|e| e.end - e.start)
        .collect();
    lengths.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
    lengths
        .get(lengths.len() / 2)
        .copied()
        .unwrap_or(0.0)
        .max(1e-9)
}

/// The target of a merged window: each log's mean target over its intervals in
/// the window, summed (one shared schedule's rate counted once); `None` when
/// unpaced or a log did not say.
fn window_target(w: &Window, shared: bool) -> Option<f64> {
    if w.unpaced {
        return None;
    }
    let means = w
        .target_seconds
        .iter()
        .zip(&w.covered)
        .filter(|(_, c)| **c > 0.0)
        .map(|(t, c)| t.map(|t| t / c));
    let means: Option<Vec<f64>> = means.collect();
    let means = means?;
    if shared {
        means.into_iter().reduce(f64::max)
    } else {
        Some(means.iter().sum())
    }
}

/// The index of `alias`'s activity (added when new), with its window map beside it.
fn position(data: &mut RunData, windows: &mut Vec<BTreeMap<i64, Window>>, alias: &str) -> usize {
    let index = data.activity_index(alias);
    windows.resize_with(data.activities.len(), BTreeMap::new);
    index
}

/// The page's source line: the logs, the first few by name.
fn source(logs: &[Log]) -> String {
    let names: Vec<String> = logs
        .iter()
        .take(4)
        .map(|l| l.path.display().to_string())
        .collect();
    let more = logs.len().saturating_sub(names.len());
    let mut s = format!("{} HDR logs merged: {}", logs.len(), names.join(", "));
    if more > 0 {
        s.push_str(&format!(" and {more} more"));
    }
    s
}

impl MergeNote {
    fn empty() -> Self {
        Self {
            logs: 0,
            window: 0.0,
            windows: 0,
            partial: 0,
        }
    }
}

/// The logs named on the command line: a directory stands for its `*.hlog`
/// files, and a file name with `*` or `?` that names no file (a pattern no
/// shell expanded, as under `kubectl exec`) for the files it matches, each in
/// name order.
pub fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>, ReadError> {
    let mut out = Vec::new();
    for p in paths {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if !p.exists() && (name.contains('*') || name.contains('?')) {
            let dir = match p.parent() {
                Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                _ => PathBuf::from("."),
            };
            let listing = std::fs::read_dir(&dir).map_err(|source| ReadError::Open {
                path: dir.clone(),
                source,
            })?;
            let mut found: Vec<PathBuf> = listing
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| {
                    f.is_file()
                        && f.file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| matches(name, n))
                })
                .collect();
            if found.is_empty() {
                return Err(ReadError::Merge {
                    path: p.clone(),
                    line: 0,
                    what: "no file matches this pattern (`*` any characters, `?` one; \
                           check the directory, or name the logs)"
                        .to_string(),
                });
            }
            found.sort();
            out.extend(found);
            continue;
        }
        if !p.is_dir() {
            out.push(p.clone());
            continue;
        }
        let listing = std::fs::read_dir(p).map_err(|source| ReadError::Open {
            path: p.clone(),
            source,
        })?;
        let mut found: Vec<PathBuf> = listing
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|f| f.extension().is_some_and(|x| x == "hlog") && f.is_file())
            .collect();
        if found.is_empty() {
            return Err(ReadError::Merge {
                path: p.clone(),
                line: 0,
                what: "a directory with no `*.hlog` file in it (name the logs, or the \
                       directory `paceline run --hdr-log` wrote them into)"
                    .to_string(),
            });
        }
        found.sort();
        out.extend(found);
    }
    let mut seen = BTreeSet::new();
    out.retain(|p| seen.insert(p.clone()));
    Ok(out)
}

/// Whether `name` matches `pattern`: `*` any run of characters, `?` one.
fn matches(pattern: &str, name: &str) -> bool {
    Wildcard::shell(Case::Sensitive).matches(pattern, name)
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn patterns_match_as_a_shell_would() {
        assert!(matches("*.hlog", "pod-0.hlog"));
        assert!(matches("pod-?.hlog", "pod-7.hlog"));
        assert!(matches("*", ""));
        assert!(matches("a*b*c", "aXbYbZc"));
        assert!(!matches("*.hlog", "pod-0.json"));
        assert!(!matches("pod-?.hlog", "pod-10.hlog"));
        assert!(!matches("a*b", "a"));
    }
}
