//! The `--hdr-log` file: the standard HdrHistogram interval log.
//!
//! The format the Java tools (`HistogramLogProcessor`, HdrHistogramVisualizer) and
//! the `hdrhistogram` crate's `IntervalLogIterator` read: a few `#[...]` header
//! lines (format version, StartTime, BaseTime), the column legend, then one line
//! per histogram: `Tag=a.service,START,LENGTH,MAX,BASE64` where START is seconds
//! since the latest `#[BaseTime: ...]` line above it, MAX is the interval's largest value in
//! nanoseconds (readers ignore it; it is for people) and BASE64 is the V2 compressed
//! (deflate) encoding. Each activity gets three tags: `ALIAS.service`,
//! `ALIAS.wait` and `ALIAS.response`; a paced activity two more after them,
//! `ALIAS.queue` and `ALIAS.dispatch`, the two parts of its ops' waits
//! (`docs/engine.md` "Queueing and dispatch"; an unpaced activity's ops have no
//! slot, so no split). Control events are comment lines at the time
//! they happened: `#[Event 2.500 a: threads 4 -> 8]`. Before each activity's
//! histograms, a `#[Target a: 10000]` comment gives its mean target rate in ops/s
//! over the interval (a ramp's or a step's share of it weighted by time; `0` while
//! paused, `unpaced` when it has none), so that `paceline report` can draw the
//! target as it was; on a shared schedule a `#[Shared a]` line before it says
//! that the target is the whole schedule's (so a merge of the processes' logs
//! counts it once); readers skip comments.
//!
//! **Time.** Every report counts an activity's times from its schedule's first
//! slot (`ActivityInfo::schedule_start`; the activity's start until its schedule
//! begins, the run's origin when unknown), and so does this log, in the way the
//! format allows: `#[StartTime]` is the wall time of the run's start, and a
//! `#[BaseTime: ...]` line (the wall time of a first slot, to the nanosecond)
//! comes before any line of an activity whose first slot is not the latest
//! BaseTime's, so that each histogram's START and each event's time count from
//! its activity's first slot, the same number as in the CSV, the JSON and the
//! console, and BaseTime + START is still the interval's wall time (what a merge
//! of several processes' logs places it by). A reader that honours each
//! BaseTime line as it comes (HdrHistogram's `HistogramLogReader`, `paceline
//! report`) gets exact wall times; set-up events before the first slot are
//! negative. Rows written before an activity's schedule began count from its
//! start (the first slot is not known yet), under that start's BaseTime, as in
//! the CSV; `paceline report` moves them before the first slot by their wall
//! times. The `#[Offsets from each activity's first slot]` header line says
//! so (logs written before it count every time from the run's start).

use super::ActivityReport;
use super::units;
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use paceline::{Nanos, TimelineEntry, nanos};
use std::io::{self, Write};
use std::time::SystemTime;

/// The Java writer's legend line, which readers skip.
const LEGEND: &str =
    "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"";

/// Writes an interval log to any writer.
pub struct HdrLog<W: Write> {
    out: W,
    serializer: V2DeflateSerializer,
    origin: Nanos,
    /// The wall time of `origin`, nanoseconds since the epoch.
    origin_wall: i128,
    /// The first slot (on the activities' clock) that the latest BaseTime line
    /// names exactly; `None` while only the header's stands and the run's start
    /// is not a whole millisecond (the header's has 3 decimals).
    base: Option<Nanos>,
    every: Option<Nanos>,
}

/// The header line that says START and event times count from each activity's
/// first slot (a `#[BaseTime]` line before its lines).
pub const FIRST_SLOT_OFFSETS: &str = "[Offsets from each activity's first slot]";

impl<W: Write> std::fmt::Debug for HdrLog<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HdrLog")
            .field("origin", &self.origin)
            .finish()
    }
}

impl<W: Write> HdrLog<W> {
    /// Writes the header and returns the log. `origin` is the run's start on the
    /// activities' clock and `started_at` the same instant in wall-clock time (the
    /// StartTime and BaseTime of the log).
    pub fn new(mut out: W, origin: Nanos, started_at: SystemTime) -> io::Result<Self> {
        let mut serializer = V2DeflateSerializer::new();
        IntervalLogWriterBuilder::new()
            .add_comment(&format!(
                "[Logged with paceline {}]",
                env!("CARGO_PKG_VERSION")
            ))
            .add_comment("[Histogram log format version 1.3]")
            .add_comment(FIRST_SLOT_OFFSETS)
            .with_start_time(started_at)
            .with_base_time(started_at)
            .begin_log_with(&mut out, &mut serializer)?;
        writeln!(out, "{LEGEND}")?;
        let origin_wall = match started_at.duration_since(SystemTime::UNIX_EPOCH) {
            Ok(d) => d.as_nanos() as i128,
            Err(e) => -(e.duration().as_nanos() as i128),
        };
        Ok(Self {
            out,
            serializer,
            origin,
            origin_wall,
            // The header's BaseTime (to the ms) names the origin exactly when it
            // is a whole millisecond.
            base: (origin_wall % 1_000_000 == 0).then_some(origin),
            every: None,
        })
    }

    /// Writes a `#[BaseTime: ...]` line for `base` (a first slot on the
    /// activities' clock) unless it is the latest one's.
    fn base_time(&mut self, base: Nanos) -> io::Result<()> {
        if self.base == Some(base) {
            return Ok(());
        }
        self.base = Some(base);
        let line = base_time_line(self.origin_wall + i128::from(base) - i128::from(self.origin));
        writeln!(self.out, "{line}")
    }

    /// The report interval, for the `#[Partial ...]` comment before a partial
    /// interval (`super::is_partial`). By default (`None`) none is partial.
    pub fn report_interval(mut self, every: Option<Nanos>) -> Self {
        self.every = every;
        self
    }

    /// Writes one event as a comment line, its time counted from `base`, its
    /// activity's first slot (negative before it), after a BaseTime line for
    /// `base` when the latest is another's.
    pub fn event(&mut self, base: Nanos, alias: &str, entry: &TimelineEntry) -> io::Result<()> {
        self.base_time(base)?;
        let text = format!(
            "[Event {} {alias}: {}]",
            units::seconds_since(entry.at, base),
            entry.event
        );
        // A comment must stay on one line.
        writeln!(self.out, "#{}", text.replace(['\n', '\r'], " "))
    }

    /// Writes three tagged histograms per activity: service, wait and response;
    /// then queue and dispatch for a paced one.
    #[cfg(test)]
    pub fn interval(&mut self, reports: &[ActivityReport<'_>]) -> io::Result<()> {
        self.interval_marked(reports, |_| false)
    }

    /// [`interval`](Self::interval), with what is partial said by `partial`.
    pub fn interval_marked(
        &mut self,
        reports: &[ActivityReport<'_>],
        partial: impl Fn(&ActivityReport<'_>) -> bool,
    ) -> io::Result<()> {
        for r in reports {
            // From the activity's first slot, as every report counts its times.
            let base = r.info.schedule_start.unwrap_or(self.origin);
            self.base_time(base)?;
            // A writer with no headers writes nothing until asked to.
            let mut log = IntervalLogWriterBuilder::new()
                .begin_log_with(&mut self.out, &mut self.serializer)?;
            // The mean over the interval, not the rate at its end (issue 24, item 7:
            // a ramp followed exactly read 200/s short throughout).
            let target = match r.info.target_rate.and(r.info.judged_target()) {
                Some(t) => t.to_string(),
                None => "unpaced".to_string(),
            };
            // On a shared schedule the target is the whole schedule's rate, the
            // same in every process's log: a merge counts it once.
            #[cfg(feature = "redis")]
            if r.info.coordinated.is_some() {
                log.write_comment(&format!(
                    "[Shared {}]",
                    r.info.alias.replace(['\n', '\r'], " ")
                ))?;
            }
            log.write_comment(&format!(
                "[Target {}: {target}]",
                r.info.alias.replace(['\n', '\r'], " ")
            ))?;
            let s = r.snapshot;
            // A partial interval keeps its histograms, so the log still sums to
            // the totals; the comment says a reader should not plot them.
            if partial(r) {
                log.write_comment(&format!(
                    "[Partial {}: {} s, under half the {} s report interval: no rate or \
                     percentiles]",
                    r.info.alias.replace(['\n', '\r'], " "),
                    super::units::seconds(s.elapsed_nanos()),
                    super::units::seconds(self.every.unwrap_or(0))
                ))?;
            }
            // Whole milliseconds, as the CSV and the console show times: START +
            // LENGTH is the interval's end as they print it, to the digit (the
            // format writes 3 decimals; rounding each would differ by 1 ms).
            let ms = |n: Nanos| n / 1_000_000 * 1_000_000;
            let (from, to) = (
                ms(s.start().saturating_sub(base)),
                ms(s.end().saturating_sub(base)),
            );
            let start = nanos::to_duration(from);
            let length = nanos::to_duration(to - from);
            let split = [("queue", s.queue()), ("dispatch", s.dispatch())];
            let split = if r.paced() { &split[..] } else { &[] };
            for &(metric, l) in [
                ("service", s.service()),
                ("wait", s.wait()),
                ("response", s.response()),
            ]
            .iter()
            .chain(split)
            {
                let tag = tag_for(&r.info.alias, metric);
                log.write_histogram(l.histogram(), start, length, Tag::new(&tag))
                    .map_err(|e| io::Error::other(e.to_string()))?;
            }
        }
        Ok(())
    }

    /// Flushes the writer.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// The writer back.
    #[cfg(test)]
    pub fn into_inner(self) -> W {
        self.out
    }
}

/// `#[BaseTime: SECONDS (seconds since epoch)]` for a wall time in nanoseconds
/// since the epoch, written to the nanosecond (the header's has ms).
pub fn base_time_line(wall: i128) -> String {
    let sign = if wall < 0 { "-" } else { "" };
    let abs = wall.unsigned_abs();
    format!(
        "#[BaseTime: {sign}{}.{:09} (seconds since epoch)]",
        abs / 1_000_000_000,
        abs % 1_000_000_000
    )
}

/// `alias.metric`, with the characters a tag may not hold (comma, space, line
/// breaks) replaced by `_`.
pub fn tag_for(alias: &str, metric: &str) -> String {
    format!("{alias}.{metric}").replace([',', ' ', '\n', '\r'], "_")
}

#[cfg(test)]
mod tests {
    use super::super::tests::{info, snapshot};
    use super::*;
    use hdrhistogram::serialization::Deserializer;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use paceline::Event;
    use std::time::Duration;

    #[test]
    fn a_log_the_standard_reader_reads_back() {
        let started = SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_250);
        let mut log =
            HdrLog::new(Vec::new(), 1_000_000_000, started).unwrap_or_else(|e| panic!("{e}"));
        log.event(
            1_000_000_000,
            "a",
            &TimelineEntry {
                at: 3_500_000_000,
                event: Event::Threads { from: 4, to: 8 },
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let snap = snapshot(1_000_000_000, 11_000_000_000);
        let mut i = info("a");
        // Issue 24, item 7: the target is the interval's mean, not its end's.
        i.target_rate = Some(12_000.0);
        i.mean_target = Some(10_000.0);
        log.interval(&[ActivityReport {
            info: &i,
            snapshot: &snap,
            events: &[],
        }])
        .unwrap_or_else(|e| panic!("{e}"));
        let bytes = log.into_inner();
        let text = String::from_utf8(bytes.clone()).unwrap_or_default();
        let mut lines: Vec<&str> = text.lines().collect();
        // The first slot is the origin here, a whole ms: the header's BaseTime
        // names it, no other is needed.
        assert_eq!(
            lines.drain(..7).collect::<Vec<_>>(),
            [
                "#[Logged with paceline 0.1.0]",
                "#[Histogram log format version 1.3]",
                "#[Offsets from each activity's first slot]",
                "#[StartTime: 1700000000.250 (seconds since epoch)]",
                "#[BaseTime: 1700000000.250 (seconds since epoch)]",
                LEGEND,
                "#[Event 2.500 a: threads 4 -> 8]",
            ]
        );
        assert_eq!(lines[0], "#[Target a: 10000]");
        assert!(lines[1].starts_with("Tag=a.service,0.000,10.000,1000447.000,HISTFAAA"));
        assert!(lines[2].starts_with("Tag=a.wait,0.000,10.000,10007.000,HISTFAAA"));
        assert!(lines[3].starts_with("Tag=a.response,0.000,10.000,1010175.000,HISTFAAA"));
        // Paced: the split follows, empty here (the ops were recorded unsplit).
        assert!(lines[4].starts_with("Tag=a.queue,0.000,10.000,0.000,HISTFAAA"));
        assert!(lines[5].starts_with("Tag=a.dispatch,0.000,10.000,0.000,HISTFAAA"));
        assert_eq!(lines.len(), 6);

        let mut read = Vec::new();
        for entry in IntervalLogIterator::new(&bytes) {
            if let Ok(LogEntry::Interval(h)) = entry {
                let decoded = base64_decode(h.encoded_histogram());
                let hist: hdrhistogram::Histogram<u64> = Deserializer::new()
                    .deserialize(&mut &decoded[..])
                    .unwrap_or_else(|e| panic!("{e:?}"));
                read.push((h.tag().map(|t| t.as_str().to_string()), hist));
            }
        }
        assert_eq!(read.len(), 5);
        assert_eq!(read[0].0.as_deref(), Some("a.service"));
        assert_eq!(&read[0].1, snap.service().histogram());
        assert_eq!(&read[1].1, snap.wait().histogram());
        assert_eq!(&read[2].1, snap.response().histogram());
        assert_eq!(&read[3].1, snap.queue().histogram());
        assert_eq!(&read[4].1, snap.dispatch().histogram());
    }

    /// The tagged histograms of a log, decoded, in order.
    fn histograms(bytes: &[u8]) -> Vec<(String, hdrhistogram::Histogram<u64>)> {
        IntervalLogIterator::new(bytes)
            .filter_map(|e| match e {
                Ok(LogEntry::Interval(h)) => Some(h),
                _ => None,
            })
            .map(|h| {
                let decoded = base64_decode(h.encoded_histogram());
                let hist = Deserializer::new()
                    .deserialize(&mut &decoded[..])
                    .unwrap_or_else(|e| panic!("{e:?}"));
                (
                    h.tag().map(|t| t.as_str().to_string()).unwrap_or_default(),
                    hist,
                )
            })
            .collect()
    }

    #[test]
    fn a_paced_activity_adds_queue_and_dispatch_an_unpaced_one_does_not() {
        let mut log =
            HdrLog::new(Vec::new(), 0, SystemTime::UNIX_EPOCH).unwrap_or_else(|e| panic!("{e}"));
        let paced = super::super::tests::split_snapshot(0, 2_000_000_000);
        let unsplit = snapshot(0, 2_000_000_000);
        let a = info("a");
        let b = super::super::ActivityInfo {
            target_rate: None,
            mean_target: None,
            strictness: None,
            ..info("b")
        };
        log.interval(&[
            ActivityReport {
                info: &a,
                snapshot: &paced,
                events: &[],
            },
            ActivityReport {
                info: &b,
                snapshot: &unsplit,
                events: &[],
            },
        ])
        .unwrap_or_else(|e| panic!("{e}"));
        let bytes = log.into_inner();
        let text = String::from_utf8(bytes.clone()).unwrap_or_default();
        // MAX is the interval's largest value: the split's exact maxima.
        assert!(
            text.contains("\nTag=a.queue,0.000,2.000,1000.000,HISTFAAA"),
            "{text}"
        );
        assert!(text.contains("\nTag=a.dispatch,0.000,2.000,2000.000,HISTFAAA"));
        let read = histograms(&bytes);
        let tags: Vec<&str> = read.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(
            tags,
            [
                "a.service",
                "a.wait",
                "a.response",
                "a.queue",
                "a.dispatch",
                "b.service",
                "b.wait",
                "b.response"
            ]
        );
        assert_eq!(&read[3].1, paced.queue().histogram());
        assert_eq!(&read[4].1, paced.dispatch().histogram());
        assert_eq!(
            (read[3].1.value_at_quantile(0.5), read[3].1.max()),
            (500, 1000)
        );
        assert_eq!(
            (read[4].1.value_at_quantile(0.99), read[4].1.max()),
            (1980, 2000)
        );
    }

    #[test]
    fn tags_never_hold_separators() {
        assert_eq!(tag_for("my alias,x", "wait"), "my_alias_x.wait");
        assert!(Tag::new(&tag_for("a b", "service")).is_some());
    }

    /// Standard base64 decoding, enough for the test (no new dependency).
    fn base64_decode(s: &str) -> Vec<u8> {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = Vec::new();
        let (mut buf, mut bits) = (0u32, 0);
        for c in s.bytes().filter(|&c| c != b'=') {
            let v = ALPHABET.iter().position(|&a| a == c).unwrap_or(0) as u32;
            buf = (buf << 6) | v;
            bits += 6;
            if bits >= 8 {
                bits -= 8;
                out.push((buf >> bits) as u8);
                buf &= (1 << bits) - 1;
            }
        }
        out
    }
}
