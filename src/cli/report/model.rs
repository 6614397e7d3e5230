//! What the HTML report shows, gathered in one place: per activity, one point per
//! interval (target and achieved rate, latency figures), the control events, the
//! whole run's histograms and the summary document.
//!
//! Two producers fill it the same way: [`HtmlLog`] during a run (fed by the
//! [`Reporter`](super::Reporter) with the snapshots it reports anyway), and
//! [`read`](super::read) from the files a run wrote. Times are seconds from each
//! activity's schedule's first slot (`ActivityInfo::schedule_start`), as in
//! every other report: set-up events before it are negative.

use super::ActivityReport;
use super::hdr::tag_for;
use super::json::SummaryJson;
use super::units;
use hdrhistogram::Histogram;
use paceline::{Nanos, TimelineEntry};
use std::collections::HashMap;

/// Latency figures of one interval, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Figures {
    /// Values recorded; 0 means the interval has no figures.
    pub count: u64,
    /// Median.
    pub p50: Nanos,
    /// 99th percentile.
    pub p99: Nanos,
    /// Largest.
    pub max: Nanos,
}

impl Figures {
    /// The figures of `h`.
    pub fn of(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Self::default();
        }
        Self {
            count: h.len(),
            p50: h.value_at_quantile(0.5),
            p99: h.value_at_quantile(0.99),
            max: h.max(),
        }
    }
}

/// One activity's interval.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalPoint {
    /// Seconds from the activity's first slot when it began.
    pub start: f64,
    /// Seconds from the activity's first slot when it ended.
    pub end: f64,
    /// Ops completed in it.
    pub ops: u64,
    /// The mean target rate over it (ops/s; 0 while paused): a step or a ramp
    /// inside it counts for the time it held. `None` when unpaced or not known (a
    /// log written before paceline logged targets; a log written before the mean
    /// holds the target at the interval's end).
    pub target: Option<f64>,
    /// Service times.
    pub service: Figures,
    /// Wait times.
    pub wait: Figures,
    /// Response times.
    pub response: Figures,
    /// A merged window that not every log covers (`paceline report` on several
    /// logs, see [`merge`](super::merge)): the plots leave it out, as they leave
    /// out an interval under half the report interval; its ops are in the totals.
    pub partial: bool,
}

impl IntervalPoint {
    /// Ops per second over the interval; 0 for an empty one.
    pub fn achieved(&self) -> f64 {
        let len = self.end - self.start;
        if len > 0.0 {
            self.ops as f64 / len
        } else {
            0.0
        }
    }
}

/// What kind of event a mark is, for its colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum EventKind {
    /// Free text (a scenario step's name).
    Note,
    /// The activity started.
    Start,
    /// The thread count changed.
    Threads,
    /// The rate changed, or a ramp began.
    Rate,
    /// Resumed after a pause.
    Resume,
    /// Paused.
    Pause,
    /// The activity stopped.
    Stop,
}

impl EventKind {
    /// The kind of an event from its text (`Event`'s `Display`, which is also what
    /// the HDR log's `#[Event ...]` comments hold).
    pub fn of_text(text: &str) -> Self {
        match text {
            "started" => Self::Start,
            "stopped" => Self::Stop,
            "paused" => Self::Pause,
            "resumed" => Self::Resume,
            t if t.starts_with("threads ") => Self::Threads,
            t if t.starts_with("rate ") && t.ends_with(" -> 0") => Self::Pause,
            t if t.starts_with("rate 0 -> ") => Self::Resume,
            t if t.starts_with("rate ") || t.starts_with("ramp ") => Self::Rate,
            _ => Self::Note,
        }
    }

    /// A short name for legends.
    pub fn name(self) -> &'static str {
        match self {
            Self::Note => "note",
            Self::Start => "start",
            Self::Threads => "threads",
            Self::Rate => "rate",
            Self::Resume => "resume",
            Self::Pause => "pause",
            Self::Stop => "stop",
        }
    }
}

/// One control event.
#[derive(Debug, Clone, PartialEq)]
pub struct EventMark {
    /// Seconds from the activity's first slot (negative before it).
    pub at: f64,
    /// Its kind.
    pub kind: EventKind,
    /// Its text, such as `threads 4 -> 8`.
    pub text: String,
}

impl EventMark {
    /// A mark for `text` at `at` seconds.
    pub fn new(at: f64, text: &str) -> Self {
        Self {
            at,
            kind: EventKind::of_text(text),
            text: text.to_string(),
        }
    }
}

impl EventMark {
    /// The text in the units of the rest of the report, as the console shows
    /// events (`rate 3.99K/s -> 4.00K/s`, `ramp to 4.00K/s over 3.00s`); the files
    /// keep full precision (`rate 3992.1744280000003 -> 4000`).
    pub fn display(&self) -> String {
        let rate = |t: &str| match t {
            "unpaced" => Some(t.to_string()),
            _ => t
                .parse::<f64>()
                .ok()
                .filter(|r| r.is_finite())
                .map(|r| format!("{}/s", units::rate(r))),
        };
        if let Some(rest) = self.text.strip_prefix("rate ")
            && let Some((from, to)) = rest.split_once(" -> ")
            && let (Some(from), Some(to)) = (rate(from), rate(to))
        {
            return format!("rate {from} -> {to}");
        }
        if let Some(rest) = self.text.strip_prefix("ramp to ")
            && let Some((to, over)) = rest.split_once(" over ")
            && let Some(to) = rate(to)
            && let Some(secs) = over.strip_suffix('s').and_then(|s| s.parse::<f64>().ok())
        {
            let over = units::duration((secs * 1e9).round() as Nanos);
            return format!("ramp to {to} over {over}");
        }
        self.text.clone()
    }
}

/// The whole run's distributions of one activity.
#[derive(Debug, Clone)]
pub struct Totals {
    /// Service times.
    pub service: Histogram<u64>,
    /// Wait times.
    pub wait: Histogram<u64>,
    /// Response times.
    pub response: Histogram<u64>,
    /// The queueing part of paced ops' waits (empty when unpaced, or read from a
    /// log written before paceline logged it).
    pub queue: Histogram<u64>,
    /// The dispatch part of paced ops' waits (empty likewise).
    pub dispatch: Histogram<u64>,
}

impl Default for Totals {
    fn default() -> Self {
        // The engine's own empty distribution: the same range and precision.
        let empty = || paceline::Latencies::new().histogram().clone();
        Self {
            service: empty(),
            wait: empty(),
            response: empty(),
            queue: empty(),
            dispatch: empty(),
        }
    }
}

/// Everything the report shows about one activity.
#[derive(Debug, Clone, Default)]
pub struct ActivityData {
    /// The alias.
    pub alias: String,
    /// Intervals in time order.
    pub intervals: Vec<IntervalPoint>,
    /// Events in time order.
    pub events: Vec<EventMark>,
    /// The whole run's distributions.
    pub totals: Totals,
    /// The activity's object of the summary JSON, when known.
    pub summary: Option<serde_json::Value>,
}

impl ActivityData {
    /// An activity with nothing recorded yet.
    pub fn new(alias: &str) -> Self {
        Self {
            alias: alias.to_string(),
            ..Self::default()
        }
    }
}

/// Everything the report shows.
#[derive(Debug, Clone, Default)]
pub struct RunData {
    /// Where the data came from, for the page's header (`paceline run`, file names).
    pub source: String,
    /// The activities, in the order they first reported.
    pub activities: Vec<ActivityData>,
    /// The summary JSON's top level besides `activities`: the run's metadata and
    /// threshold results, when known.
    pub run: Option<serde_json::Value>,
    /// How many processes' logs were merged into it (`paceline report A.hlog
    /// B.hlog ...`, see [`merge`](super::merge)); 0 for one run's data.
    pub merged_logs: usize,
}

impl RunData {
    /// The activity whose alias (or tag form of it, see [`tag_for`]) is `alias`,
    /// added when new.
    pub fn activity(&mut self, alias: &str) -> &mut ActivityData {
        let i = self.activity_index(alias);
        &mut self.activities[i]
    }

    /// The index of [`activity`](Self::activity)'s activity, added when new.
    pub fn activity_index(&mut self, alias: &str) -> usize {
        let key = tag_key(alias);
        match self
            .activities
            .iter()
            .position(|a| tag_key(&a.alias) == key)
        {
            Some(i) => i,
            None => {
                self.activities.push(ActivityData::new(alias));
                self.activities.len() - 1
            }
        }
    }

    /// Where the time axis begins, in seconds: 0 (the first slot), or the
    /// earliest event or interval start before it (set-up events are negative).
    pub fn first(&self) -> f64 {
        self.activities
            .iter()
            .flat_map(|a| {
                a.intervals
                    .iter()
                    .map(|i| i.start)
                    .chain(a.events.iter().map(|e| e.at))
            })
            .filter(|t| t.is_finite())
            .fold(0.0, f64::min)
    }

    /// The run's time span in seconds: 0 to the latest interval's or event's end.
    pub fn span(&self) -> f64 {
        self.activities
            .iter()
            .flat_map(|a| {
                a.intervals
                    .iter()
                    .map(|i| i.end)
                    .chain(a.events.iter().map(|e| e.at))
            })
            .fold(0.0, f64::max)
    }
}

/// The alias as the HDR log's tags spell it.
fn tag_key(alias: &str) -> String {
    tag_for(alias, "")
}

/// Gathers a run's report data as it runs (the `--html` report).
#[derive(Debug, Clone)]
pub struct HtmlLog {
    origin: Nanos,
    data: RunData,
    /// Per activity (by index in `data`): the base each interval and event was
    /// counted from, in their order, and the latest base.
    bases: HashMap<usize, Bases>,
}

/// What an activity's times were counted from ([`HtmlLog::finish`] moves them
/// all onto the latest).
#[derive(Debug, Clone, Default)]
struct Bases {
    intervals: Vec<Nanos>,
    events: Vec<Nanos>,
    latest: Nanos,
}

impl HtmlLog {
    /// An empty log; `origin` is the run's start on the activities' clock.
    pub fn new(origin: Nanos) -> Self {
        Self {
            origin,
            data: RunData {
                source: "paceline run".to_string(),
                activities: Vec::new(),
                run: None,
                merged_logs: 0,
            },
            bases: HashMap::new(),
        }
    }

    /// The data gathered so far.
    #[cfg(test)]
    pub fn data(&self) -> &RunData {
        &self.data
    }

    /// The run's metadata and threshold results, for the page's header.
    pub fn set_run(&mut self, run: serde_json::Value) {
        self.data.run = Some(run);
    }

    /// One interval per activity, its times from the activity's first slot
    /// (the run's origin when unknown), as the CSV's.
    pub fn interval(&mut self, reports: &[ActivityReport<'_>]) {
        for r in reports {
            let s = r.snapshot;
            let base = r.info.schedule_start.unwrap_or(self.origin);
            let point = IntervalPoint {
                start: units::ms_since(s.start(), base),
                end: units::ms_since(s.end(), base),
                ops: s.ops(),
                target: r.info.target_rate.and(r.info.judged_target()),
                service: Figures::of(s.service().histogram()),
                wait: Figures::of(s.wait().histogram()),
                response: Figures::of(s.response().histogram()),
                partial: false,
            };
            let i = self.data.activity_index(&r.info.alias);
            self.data.activities[i].intervals.push(point);
            let b = self.bases.entry(i).or_default();
            b.intervals.push(base);
            b.latest = base;
        }
    }

    /// One event, its time counted from `base`, its activity's first slot
    /// (negative before it).
    pub fn event(&mut self, base: Nanos, alias: &str, entry: &TimelineEntry) {
        let mark = EventMark::new(units::ms_since(entry.at, base), &entry.event.to_string());
        let i = self.data.activity_index(alias);
        self.data.activities[i].events.push(mark);
        let b = self.bases.entry(i).or_default();
        b.events.push(base);
        b.latest = base;
    }

    /// Moves every time counted from an earlier base than its activity's latest
    /// (intervals and events reported before its schedule began, when the first
    /// slot was not known yet and they counted from the activity's start) onto
    /// the latest: negative, before the first slot, so that the page has one
    /// time axis per activity.
    fn rebase(&mut self) {
        for (&i, b) in &mut self.bases {
            let Some(a) = self.data.activities.get_mut(i) else {
                continue;
            };
            let latest = b.latest;
            for (p, base) in a.intervals.iter_mut().zip(&mut b.intervals) {
                if *base != latest {
                    let shift = units::seconds_f64_since(*base, latest);
                    p.start += shift;
                    p.end += shift;
                    *base = latest;
                }
            }
            for (e, base) in a.events.iter_mut().zip(&mut b.events) {
                if *base != latest {
                    e.at += units::seconds_f64_since(*base, latest);
                    *base = latest;
                }
            }
        }
    }

    /// The totals and summaries at the end of the run; returns the data.
    pub fn finish(&mut self, totals: &[ActivityReport<'_>]) -> &RunData {
        for r in totals {
            if let Some(base) = r.info.schedule_start {
                let i = self.data.activity_index(&r.info.alias);
                self.bases.entry(i).or_default().latest = base;
            }
        }
        self.rebase();
        let doc = serde_json::to_value(SummaryJson::new(self.origin, totals)).ok();
        for (i, r) in totals.iter().enumerate() {
            let a = self.data.activity(&r.info.alias);
            let s = r.snapshot;
            a.totals = Totals {
                service: s.service().histogram().clone(),
                wait: s.wait().histogram().clone(),
                response: s.response().histogram().clone(),
                queue: s.queue().histogram().clone(),
                dispatch: s.dispatch().histogram().clone(),
            };
            a.summary = doc.as_ref().map(|d| d["activities"][i].clone());
        }
        &self.data
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_kinds_from_their_text() {
        let kinds: Vec<EventKind> = [
            "started",
            "stopped",
            "rate 1000 -> 0",
            "paused",
            "rate 0 -> 1000",
            "resumed",
            "rate 1000 -> 5000",
            "ramp to 9000 over 10.000s",
            "threads 4 -> 8",
            "step main",
        ]
        .iter()
        .map(|t| EventKind::of_text(t))
        .collect();
        use EventKind::*;
        assert_eq!(
            kinds,
            [
                Start, Stop, Pause, Pause, Resume, Resume, Rate, Rate, Threads, Note
            ]
        );
    }

    #[test]
    fn events_show_rates_in_report_units() {
        let shown: Vec<String> = [
            "rate 3992.1744280000003 -> 4000",
            "ramp to 4000 over 3.000s",
            "rate 0 -> 1e400",
            "threads 4 -> 8",
        ]
        .iter()
        .map(|t| EventMark::new(1.0, t).display())
        .collect();
        assert_eq!(
            shown,
            [
                "rate 3.99K/s -> 4.00K/s",
                "ramp to 4.00K/s over 3.00s",
                "rate 0 -> 1e400",
                "threads 4 -> 8"
            ]
        );
    }

    #[test]
    fn figures_of_an_empty_histogram_are_zero() {
        assert_eq!(Figures::of(&Totals::default().service), Figures::default());
    }

    #[test]
    fn achieved_rate_is_ops_over_the_interval() {
        let p = IntervalPoint {
            start: 1.0,
            end: 3.0,
            ops: 500,
            target: None,
            service: Figures::default(),
            wait: Figures::default(),
            response: Figures::default(),
            partial: false,
        };
        assert_eq!(p.achieved(), 250.0);
        assert_eq!(IntervalPoint { end: 1.0, ..p }.achieved(), 0.0);
    }

    /// Regression (issue 24, item 7): the plot drew each interval's end-of-interval
    /// target across it (a ramp followed exactly looked 200/s short throughout).
    /// The point carries the mean target over the interval.
    #[test]
    fn an_interval_point_carries_its_mean_target() {
        let snap = super::super::tests::snapshot(0, 1_000_000_000);
        let mut info = super::super::tests::info("a");
        info.target_rate = Some(3_000.0);
        info.mean_target = Some(2_000.0);
        let mut log = HtmlLog::new(0);
        log.interval(&[ActivityReport {
            info: &info,
            snapshot: &snap,
            events: &[],
        }]);
        assert_eq!(log.data.activities[0].intervals[0].target, Some(2_000.0));
    }

    #[test]
    fn activities_match_by_their_tag_form() {
        let mut d = RunData::default();
        d.activity("my alias");
        d.activity("my_alias");
        assert_eq!(d.activities.len(), 1);
        assert_eq!(d.activities[0].alias, "my alias");
    }
}
