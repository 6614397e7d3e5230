//! `paceline report`: the report data read back from the files a run wrote.
//!
//! The HDR interval log (`--hdr-log`) holds, per activity and interval, the
//! service, wait and response histograms (tags `ALIAS.service`, `ALIAS.wait`,
//! `ALIAS.response`) and, for a paced activity, the queue and dispatch ones
//! (`ALIAS.queue`, `ALIAS.dispatch`; logs written before paceline wrote these
//! have the first three only, and give a report without the split), the events as `#[Event SECONDS ALIAS: TEXT]` comments and the
//! target rate as a `#[Target ALIAS: RATE]` comment before each interval's
//! histograms (`unpaced` when there is none; logs written before paceline wrote
//! these have no target line). The summary JSON (`--summary-json`), when given,
//! adds what the summary table shows besides the latencies.

use super::model::{ActivityData, EventMark, Figures, IntervalPoint, RunData};
use base64::Engine as _;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
use std::collections::HashMap;
use std::error::Error;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// Why the files could not be read; each names the file (and line) and what to do.
#[derive(Debug)]
pub enum ReadError {
    /// The file could not be read. Check the path.
    Open {
        /// The file.
        path: PathBuf,
        /// The OS's reason.
        source: io::Error,
    },
    /// A line of the HDR log is not what an interval log holds. Pass the file that
    /// `paceline run --hdr-log` wrote, whole.
    Line {
        /// The file.
        path: PathBuf,
        /// The line, from 1.
        line: usize,
        /// What is wrong with it.
        what: String,
    },
    /// The HDR log holds no histogram. Pass a log of a run that reported at least
    /// one interval.
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// Several HDR logs cannot be merged into one report (`paceline report A.hlog
    /// B.hlog ...`): one has no StartTime, was not written by paceline, or holds
    /// other tags than the first. The message says which and how to fix it.
    Merge {
        /// The file.
        path: PathBuf,
        /// The line, from 1; 0 when the file as a whole is meant.
        line: usize,
        /// What is wrong, and the fix.
        what: String,
    },
    /// The summary JSON is not JSON, or not a summary. Pass the file that
    /// `paceline run --summary-json` wrote.
    Summary {
        /// The file.
        path: PathBuf,
        /// Where (line, column), when the JSON itself is broken.
        at: Option<(usize, usize)>,
        /// What is wrong.
        what: String,
    },
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Open { path, source } => {
                write!(
                    f,
                    "cannot read {}: {source} (check the path)",
                    path.display()
                )
            }
            Self::Line { path, line, what } => write!(
                f,
                "{}:{line}: {what} (pass the HDR interval log that `paceline run --hdr-log` \
                 wrote)",
                path.display()
            ),
            Self::Empty { path } => write!(
                f,
                "{}: no histograms in this file (pass the HDR interval log of a run that \
                 reported at least one interval: `paceline run --hdr-log`)",
                path.display()
            ),
            Self::Merge {
                path,
                line: 0,
                what,
            } => write!(f, "{}: {what}", path.display()),
            Self::Merge { path, line, what } => {
                write!(f, "{}:{line}: {what}", path.display())
            }
            Self::Summary {
                path,
                at: Some((line, column)),
                what,
            } => write!(
                f,
                "{}:{line}:{column}: {what} (pass the file that `paceline run --summary-json` \
                 wrote)",
                path.display()
            ),
            Self::Summary {
                path,
                at: None,
                what,
            } => write!(
                f,
                "{}: {what} (pass the file that `paceline run --summary-json` wrote)",
                path.display()
            ),
        }
    }
}

impl Error for ReadError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        match self {
            Self::Open { source, .. } => Some(source),
            _ => None,
        }
    }
}

pub(super) fn read_text(path: &Path) -> Result<String, ReadError> {
    let bytes = std::fs::read(path).map_err(|source| ReadError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    String::from_utf8(bytes).map_err(|e| {
        let upto = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        ReadError::Line {
            path: path.to_path_buf(),
            line: upto.iter().filter(|&&b| b == b'\n').count() + 1,
            what: "not text (invalid UTF-8)".to_string(),
        }
    })
}

/// The report data from an HDR log and, optionally, a summary JSON.
pub fn from_files(hdr: &Path, summary: Option<&Path>) -> Result<RunData, ReadError> {
    let log = read_text(hdr)?;
    let mut data = parse_hdr(&log, hdr)?;
    data.source = format!("{}", hdr.display());
    if let Some(s) = summary {
        let text = read_text(s)?;
        add_summary(&mut data, &text, s)?;
        // The log must be the summary's run's (audit p16, M6).
        if let Ok(doc) = serde_json::from_str::<serde_json::Value>(&text) {
            super::belongs::check(hdr, &log, s, &doc).map_err(|what| ReadError::Summary {
                path: s.to_path_buf(),
                at: None,
                what,
            })?;
        }
        data.source = format!("{} and {}", hdr.display(), s.display());
    }
    Ok(data)
}

/// The report data in an HDR interval log's text (`path` names it in errors).
pub fn parse_hdr(text: &str, path: &Path) -> Result<RunData, ReadError> {
    let mut data = RunData::default();
    // The target announced for each alias's next interval.
    let mut targets: HashMap<String, Option<f64>> = HashMap::new();
    let mut histograms = 0usize;
    // Each line counts from the latest BaseTime above it (NaN: none yet). Per
    // activity: the base of each interval and event, and of its latest line.
    let mut base = f64::NAN;
    let mut bases: Vec<LineBases> = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim_end_matches('\r');
        let bad = |what: String| ReadError::Line {
            path: path.to_path_buf(),
            line: n + 1,
            what,
        };
        if let Some(rest) = line.strip_prefix("#[Event ") {
            let (at, alias, text) = event_comment(rest).ok_or_else(|| {
                bad(format!(
                    "an event comment is `#[Event SECONDS ALIAS: TEXT]`, not `{}`",
                    shorten(line)
                ))
            })?;
            data.activity(alias).events.push(EventMark::new(at, text));
            note_bases(&data, &mut bases, base);
        } else if let Some(rest) = line.strip_prefix("#[BaseTime: ") {
            base = header_seconds(rest).ok_or_else(|| {
                bad(format!(
                    "`{}` is not `#[BaseTime: SECONDS (seconds since epoch)]`",
                    shorten(line)
                ))
            })?;
        } else if let Some(rest) = line.strip_prefix("#[Target ") {
            let (alias, target) = target_comment(rest).ok_or_else(|| {
                bad(format!(
                    "a target comment is `#[Target ALIAS: RATE]` or `#[Target ALIAS: \
                     unpaced]`, not `{}`",
                    shorten(line)
                ))
            })?;
            data.activity(alias);
            targets.insert(alias.to_string(), target);
        } else if line.is_empty() || line.starts_with('#') || line.starts_with("\"StartTimestamp\"")
        {
            continue;
        } else {
            histogram_line(&mut data, &mut targets, line).map_err(bad)?;
            note_bases(&data, &mut bases, base);
            histograms += 1;
        }
    }
    rebase(&mut data, &bases);
    if histograms == 0 {
        return Err(ReadError::Empty {
            path: path.to_path_buf(),
        });
    }
    for a in &mut data.activities {
        a.intervals.sort_by(|x, y| {
            x.start
                .partial_cmp(&y.start)
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        a.events
            .sort_by(|x, y| x.at.partial_cmp(&y.at).unwrap_or(std::cmp::Ordering::Equal));
    }
    Ok(data)
}

/// The BaseTime (wall seconds) each interval and event of one activity counts
/// from, in their order, and that of its latest line.
#[derive(Default)]
struct LineBases {
    intervals: Vec<f64>,
    events: Vec<f64>,
    latest: f64,
}

/// Gives the intervals and events added by the latest line the base `base`.
fn note_bases(data: &RunData, bases: &mut Vec<LineBases>, base: f64) {
    bases.resize_with(data.activities.len(), LineBases::default);
    for (a, b) in data.activities.iter().zip(bases.iter_mut()) {
        let fresh = a.intervals.len() > b.intervals.len() || a.events.len() > b.events.len();
        b.intervals.resize(a.intervals.len(), base);
        b.events.resize(a.events.len(), base);
        if fresh {
            b.latest = base;
        }
    }
}

/// Moves each time counted from another base than its activity's latest (rows
/// written before its schedule began, counted from its start) onto the latest,
/// so that each activity has one time axis (`super::hdr`: a BaseTime line comes
/// before the lines of an activity whose first slot is not the latest's).
fn rebase(data: &mut RunData, bases: &[LineBases]) {
    for (a, b) in data.activities.iter_mut().zip(bases) {
        let shift = |base: f64| {
            if base == b.latest || !base.is_finite() || !b.latest.is_finite() {
                0.0
            } else {
                base - b.latest
            }
        };
        for (p, &base) in a.intervals.iter_mut().zip(&b.intervals) {
            let d = shift(base);
            p.start += d;
            p.end += d;
        }
        for (e, &base) in a.events.iter_mut().zip(&b.events) {
            e.at += shift(base);
        }
    }
}

/// `1700000000.250 (seconds since epoch)]` → 1700000000.25.
pub(super) fn header_seconds(rest: &str) -> Option<f64> {
    let number = rest.split([' ', ']']).next()?;
    number.parse::<f64>().ok().filter(|s| s.is_finite())
}

/// `SECONDS ALIAS: TEXT]` → (seconds, alias, text).
pub(super) fn event_comment(rest: &str) -> Option<(f64, &str, &str)> {
    let rest = rest.strip_suffix(']')?;
    let (at, rest) = rest.split_once(' ')?;
    let (alias, text) = rest.split_once(": ")?;
    let at: f64 = at.parse().ok()?;
    at.is_finite().then_some((at, alias, text))
}

/// `ALIAS: RATE]` → (alias, Some(rate)); `ALIAS: unpaced]` → (alias, None).
pub(super) fn target_comment(rest: &str) -> Option<(&str, Option<f64>)> {
    let (alias, value) = rest.strip_suffix(']')?.rsplit_once(": ")?;
    if value == "unpaced" {
        return Some((alias, None));
    }
    let rate: f64 = value.parse().ok()?;
    (rate.is_finite() && rate >= 0.0).then_some((alias, Some(rate)))
}

/// The metrics a histogram's tag may name, as `ALIAS.METRIC`.
const METRICS: [&str; 5] = ["service", "wait", "response", "queue", "dispatch"];

/// Adds one `Tag=ALIAS.METRIC,START,LENGTH,MAX,HIST...` line: service, wait and
/// response to the interval's figures and the totals, queue and dispatch to the
/// totals (the report shows them for the whole run only).
fn histogram_line(
    data: &mut RunData,
    targets: &mut HashMap<String, Option<f64>>,
    line: &str,
) -> Result<(), String> {
    let Decoded {
        tag,
        alias,
        metric,
        start,
        end,
        hist,
    } = decode_histogram_line(line)?;
    let alias = alias.as_str();
    let a = data.activity(alias);
    let split = match metric {
        "queue" => Some(&mut a.totals.queue),
        "dispatch" => Some(&mut a.totals.dispatch),
        _ => None,
    };
    if let Some(total) = split {
        return total
            .add(&hist)
            .map_err(|e| format!("the `{tag}` histogram does not fit the totals: {e:?}"));
    }
    let point = match metric {
        "service" => {
            let target = targets.remove(alias).flatten();
            a.intervals.push(IntervalPoint {
                start,
                end,
                ops: hist.len(),
                target,
                service: Figures::default(),
                wait: Figures::default(),
                response: Figures::default(),
                partial: false,
            });
            a.intervals.len() - 1
        }
        _ => point_at(a, start, end),
    };
    let p = &mut a.intervals[point];
    let (figures, total) = match metric {
        "service" => (&mut p.service, &mut a.totals.service),
        "wait" => (&mut p.wait, &mut a.totals.wait),
        _ => (&mut p.response, &mut a.totals.response),
    };
    *figures = Figures::of(&hist);
    total
        .add(&hist)
        .map_err(|e| format!("the `{tag}` histogram does not fit the totals: {e:?}"))
}

/// One histogram line decoded.
pub(super) struct Decoded {
    /// `ALIAS.METRIC`.
    pub tag: String,
    /// The alias, as the tag spells it.
    pub alias: String,
    /// One of [`METRICS`].
    pub metric: &'static str,
    /// Seconds since the log's BaseTime when the interval began.
    pub start: f64,
    /// Seconds since the log's BaseTime when it ended.
    pub end: f64,
    /// Its values.
    pub hist: Histogram<u64>,
}

/// Decodes one `Tag=ALIAS.METRIC,START,LENGTH,MAX,HIST...` line; the error says
/// what is wrong with it.
pub(super) fn decode_histogram_line(line: &str) -> Result<Decoded, String> {
    let buf = format!("{line}\n");
    let entry = match IntervalLogIterator::new(buf.as_bytes()).next() {
        Some(Ok(LogEntry::Interval(h))) => h,
        _ => {
            return Err(format!("not an HDR interval log line: `{}`", shorten(line)));
        }
    };
    let tag = entry.tag().map(|t| t.as_str()).unwrap_or("");
    let (alias, metric) = tag
        .rsplit_once('.')
        .filter(|(a, m)| !a.is_empty() && METRICS.contains(m))
        .ok_or_else(|| {
            format!(
                "histogram tag `{tag}` is not ALIAS.service, ALIAS.wait, ALIAS.response, \
                 ALIAS.queue or ALIAS.dispatch (paceline tags every histogram so)"
            )
        })?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(entry.encoded_histogram().trim())
        .map_err(|e| format!("the `{tag}` histogram is not base64: {e}"))?;
    let hist: Histogram<u64> = Deserializer::new()
        .deserialize(&mut &bytes[..])
        .map_err(|e| format!("the `{tag}` histogram does not decode: {e:?}"))?;
    let start = entry.start_timestamp().as_secs_f64();
    let end = start + entry.duration().as_secs_f64();
    let metric = METRICS
        .iter()
        .copied()
        .find(|m| *m == metric)
        .unwrap_or("service");
    Ok(Decoded {
        tag: tag.to_string(),
        alias: alias.to_string(),
        metric,
        start,
        end,
        hist,
    })
}

/// The interval of `a` that starts at `start` (its service line came first), or a
/// new one.
fn point_at(a: &mut ActivityData, start: f64, end: f64) -> usize {
    match a
        .intervals
        .iter()
        .rposition(|i| (i.start - start).abs() < 1e-6)
    {
        Some(i) => i,
        None => {
            a.intervals.push(IntervalPoint {
                start,
                end,
                ops: 0,
                target: None,
                service: Figures::default(),
                wait: Figures::default(),
                response: Figures::default(),
                partial: false,
            });
            a.intervals.len() - 1
        }
    }
}

/// Adds each activity's object of a summary JSON document.
pub fn add_summary(data: &mut RunData, text: &str, path: &Path) -> Result<(), ReadError> {
    let doc: serde_json::Value = serde_json::from_str(text).map_err(|e| ReadError::Summary {
        path: path.to_path_buf(),
        at: Some((e.line(), e.column())),
        what: format!("not JSON: {e}"),
    })?;
    let list = doc["activities"]
        .as_array()
        .ok_or_else(|| ReadError::Summary {
            path: path.to_path_buf(),
            at: None,
            what: "no `activities` list: not a paceline summary".to_string(),
        })?;
    // The run's metadata and thresholds (a summary written before paceline
    // wrote them has none).
    if let Some(top) = doc.as_object() {
        let run: serde_json::Map<String, serde_json::Value> = top
            .iter()
            .filter(|(k, _)| k.as_str() != "activities")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if !run.is_empty() {
            data.run = Some(serde_json::Value::Object(run));
        }
    }
    for s in list {
        let Some(alias) = s["alias"].as_str() else {
            return Err(ReadError::Summary {
                path: path.to_path_buf(),
                at: None,
                what: "an activity without an `alias`".to_string(),
            });
        };
        let a = data.activity(alias);
        // The summary spells the alias as it was, the log's tags as they could.
        a.alias = alias.to_string();
        a.summary = Some(s.clone());
    }
    Ok(())
}

/// At most 60 characters of `line`, for messages.
fn shorten(line: &str) -> String {
    match line.char_indices().nth(60) {
        Some((i, _)) => format!("{}...", &line[..i]),
        None => line.to_string(),
    }
}

#[cfg(test)]
#[path = "read_tests.rs"]
mod tests;
