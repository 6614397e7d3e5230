//! Thresholds: pass/fail criteria over what a run's summary knows, such as
//! `response.p99<50ms` or `errors<1%`, checked at the end of a run (and, with
//! `abort_on_fail`, at every interval). `paceline run --threshold` and an
//! activity file's `thresholds:` list both parse into [`Threshold`].
//!
//! The grammar (spaces allowed between the parts):
//!
//! ```text
//! threshold  := [ALIAS ":"] metric op value ["abort_on_fail"]
//! metric     := ("service" | "wait" | "response" | "queue" | "dispatch") "." stat
//!             | "errors" | "missed" | "achieved" | "rate" | "ops" | "verdict"
//! stat       := "min" | "mean" | "p50" | "p90" | "p99" | "p999" | "p99.9" | "p9999" | "p99.99" | "max"
//! op         := "<" | "<=" | ">" | ">=" | "==" | "!="
//! value      := a duration (`50ms`, `1.5s`, `200us`) for latencies;
//!               N% or a count N for `errors` and `missed`;
//!               N% (of the mean target rate) or N ops/s for `achieved`;
//!               N ops/s for `rate`, a count for `ops`;
//!               a verdict (`on-schedule`, `system-bound`, `generator-bound`,
//!               `unpaced`) for `verdict`, with `==` or `!=` only
//! ```
//!
//! `errors` in percent is failed ops over all ops; `missed` in percent is slots
//! missed over slots due (ops run plus slots missed). A threshold with an alias
//! applies to that activity only; without one, to every activity of the run.
//!
//! ```
//! use paceline::{Metrics, Threshold};
//! let t = Threshold::parse("response.p99<1ms")?;
//! let metrics = Metrics::new(0);
//! let mut rec = metrics.recorder();
//! rec.record(0, 2_000_000); // one op of 2 ms
//! drop(rec);
//! let snap = metrics.snapshot(1_000_000_000);
//! let c = t.check(&snap, None, None);
//! assert!(!c.pass);
//! assert_eq!(c.value.to_string(), "2.00ms");
//! # Ok::<(), paceline::ThresholdError>(())
//! ```

use crate::engine::Verdict;
use crate::metrics::{Latencies, Snapshot};
use crate::nanos::Nanos;
use std::fmt;

/// Which distribution a latency threshold reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distribution {
    /// The op itself.
    Service,
    /// How late it started after its slot.
    Wait,
    /// Wait plus service.
    Response,
    /// The queueing part of a paced op's wait.
    Queue,
    /// The dispatch part of a paced op's wait.
    Dispatch,
}

/// A figure of a distribution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stat {
    /// Smallest.
    Min,
    /// Mean.
    Mean,
    /// Percentile in hundredths of a percent: 5000 is p50, 9990 is p99.9.
    P(u32),
    /// Largest.
    Max,
}

/// What a threshold measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// A latency figure, in nanoseconds.
    Latency(Distribution, Stat),
    /// Failed ops: a count, or a percentage of all ops.
    Errors,
    /// Missed slots: a count, or a percentage of the slots due.
    Missed,
    /// The achieved rate: ops/s, or a percentage of the mean target rate.
    Achieved,
    /// The achieved rate in ops/s (`rate>=1000`).
    Rate,
    /// Ops completed.
    Ops,
    /// The verdict's kind.
    Verdict,
}

/// A comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

impl Op {
    fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Self::Lt => a < b,
            Self::Le => a <= b,
            Self::Gt => a > b,
            Self::Ge => a >= b,
            Self::Eq => a == b,
            Self::Ne => a != b,
        }
    }
}

/// The bound a threshold compares with.
#[derive(Debug, Clone, PartialEq)]
pub enum Bound {
    /// Nanoseconds.
    Nanos(f64),
    /// A percentage.
    Percent(f64),
    /// A plain number (a count, or ops/s).
    Number(f64),
    /// A verdict's name.
    Verdict(String),
}

/// A parsed threshold; see the module docs for the grammar.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    /// The expression as written (trimmed).
    pub expr: String,
    /// The activity it applies to; `None`: every activity.
    pub alias: Option<String>,
    /// What it measures.
    pub metric: Metric,
    /// How it compares.
    pub op: Op,
    /// With what.
    pub bound: Bound,
    /// Whether a failure at an interval stops the run early.
    pub abort_on_fail: bool,
}

/// Why an expression is not a threshold: what, and where (a character offset in
/// the expression, 0-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThresholdError {
    /// The expression.
    pub expr: String,
    /// Where the problem starts, in characters from the expression's start.
    pub at: usize,
    /// What is wrong and how to write it instead.
    pub message: String,
}

impl fmt::Display for ThresholdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "bad threshold `{}` at column {}: {}",
            self.expr,
            self.at + 1,
            self.message
        )
    }
}

impl std::error::Error for ThresholdError {}

/// What a threshold found.
#[derive(Debug, Clone, PartialEq)]
pub enum Observed {
    /// Nanoseconds.
    Nanos(Nanos),
    /// A percentage.
    Percent(f64),
    /// A count.
    Count(u64),
    /// Ops per second.
    Rate(f64),
    /// A verdict's name.
    Verdict(String),
    /// Nothing to compare: why (`no target rate`, `no verdict`).
    Missing(&'static str),
}

impl Observed {
    /// The value as a JSON value: a number in its unit (nanoseconds, percent, a
    /// count, ops/s), the verdict's name, or null when missing.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Self::Nanos(n) => serde_json::json!(n),
            Self::Percent(p) | Self::Rate(p) => serde_json::json!(p),
            Self::Count(c) => serde_json::json!(c),
            Self::Verdict(v) => serde_json::json!(v),
            Self::Missing(_) => serde_json::Value::Null,
        }
    }
}

impl fmt::Display for Observed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Nanos(n) => f.write_str(&crate::nanos::human(*n as f64, "")),
            Self::Percent(p) => write!(f, "{}%", short(*p)),
            Self::Count(c) => write!(f, "{c}"),
            Self::Rate(r) => write!(f, "{}/s", short(*r)),
            Self::Verdict(v) => f.write_str(v),
            Self::Missing(why) => write!(f, "none ({why})"),
        }
    }
}

/// A number with at most 3 significant decimals and no trailing zeros.
fn short(v: f64) -> String {
    let s = if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.4}")
    };
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

/// A threshold's result.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    /// What was found.
    pub value: Observed,
    /// Whether the threshold holds.
    pub pass: bool,
}

const DISTRIBUTIONS: &[(&str, Distribution)] = &[
    ("service", Distribution::Service),
    ("wait", Distribution::Wait),
    ("response", Distribution::Response),
    ("queue", Distribution::Queue),
    ("dispatch", Distribution::Dispatch),
];

const STATS: &[(&str, Stat)] = &[
    ("min", Stat::Min),
    ("mean", Stat::Mean),
    ("p50", Stat::P(5000)),
    ("p90", Stat::P(9000)),
    ("p95", Stat::P(9500)),
    ("p99", Stat::P(9900)),
    ("p999", Stat::P(9990)),
    ("p99.9", Stat::P(9990)),
    ("p9999", Stat::P(9999)),
    ("p99.99", Stat::P(9999)),
    ("max", Stat::Max),
];

const SCALARS: &[(&str, Metric)] = &[
    ("errors", Metric::Errors),
    ("missed", Metric::Missed),
    ("achieved", Metric::Achieved),
    ("rate", Metric::Rate),
    ("ops", Metric::Ops),
    ("verdict", Metric::Verdict),
];

const VERDICTS: &str = "`on-schedule`, `system-bound`, `generator-bound` or `unpaced`";

/// The expression as chars, and where the parser is (offsets are in chars, as
/// a column is).
struct Cursor<'a> {
    chars: Vec<char>,
    pos: usize,
    expr: &'a str,
}

impl Cursor<'_> {
    fn skip_spaces(&mut self) {
        while self.chars.get(self.pos).is_some_and(|c| c.is_whitespace()) {
            self.pos += 1;
        }
    }

    fn err(&self, at: usize, message: impl Into<String>) -> ThresholdError {
        ThresholdError {
            expr: self.expr.to_string(),
            at,
            message: message.into(),
        }
    }

    /// A run of chars that may form a name (letters, digits, `_`, `-`, `.`).
    fn word(&mut self) -> (usize, String) {
        let start = self.pos;
        while self
            .chars
            .get(self.pos)
            .is_some_and(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
        {
            self.pos += 1;
        }
        (start, self.chars[start..self.pos].iter().collect())
    }
}

impl Threshold {
    /// Parses one expression; see the module docs for the grammar. An error
    /// names the place (a 0-based character offset) and how to write it.
    ///
    /// ```
    /// use paceline::Threshold;
    /// let t = Threshold::parse("writes: errors < 1% abort_on_fail")?;
    /// assert_eq!((t.alias.as_deref(), t.abort_on_fail), (Some("writes"), true));
    /// let e = Threshold::parse("response.p98<5ms").unwrap_err();
    /// assert_eq!(e.at, 9);
    /// assert!(e.message.contains("p99"), "{}", e.message);
    /// # Ok::<(), paceline::ThresholdError>(())
    /// ```
    pub fn parse(text: &str) -> Result<Self, ThresholdError> {
        let expr = text.trim();
        let mut c = Cursor {
            chars: expr.chars().collect(),
            pos: 0,
            expr,
        };
        if c.chars.is_empty() {
            return Err(c.err(
                0,
                "the expression is empty: write METRIC OP VALUE, such as `response.p99<50ms`",
            ));
        }
        // An alias, if a `:` follows the first word.
        let (start, first) = c.word();
        let mut alias = None;
        let mut metric_at = start;
        let mut metric_word = first.clone();
        c.skip_spaces();
        if c.chars.get(c.pos) == Some(&':') {
            if first.is_empty() {
                return Err(c.err(c.pos, "an empty activity name before `:`"));
            }
            alias = Some(first);
            c.pos += 1;
            c.skip_spaces();
            let (s, w) = c.word();
            metric_at = s;
            metric_word = w;
        }
        let metric = metric_of(&c, metric_at, &metric_word)?;
        c.skip_spaces();
        let op_at = c.pos;
        let two: String = c.chars[c.pos..].iter().take(2).collect();
        let op = match (two.as_str(), two.chars().next()) {
            ("<=", _) => Some((Op::Le, 2)),
            (">=", _) => Some((Op::Ge, 2)),
            ("==", _) => Some((Op::Eq, 2)),
            ("!=", _) => Some((Op::Ne, 2)),
            (_, Some('<')) => Some((Op::Lt, 1)),
            (_, Some('>')) => Some((Op::Gt, 1)),
            (_, Some('=')) => {
                return Err(c.err(op_at, "`=` is not a comparison: write `==`"));
            }
            _ => None,
        };
        let Some((op, len)) = op else {
            return Err(c.err(
                op_at,
                format!(
                    "expected a comparison after `{metric_word}`: `<`, `<=`, `>`, `>=`, `==` or `!=`"
                ),
            ));
        };
        c.pos += len;
        c.skip_spaces();
        let value_at = c.pos;
        let mut end = c.pos;
        while end < c.chars.len() && !c.chars[end].is_whitespace() {
            end += 1;
        }
        let value: String = c.chars[value_at..end].iter().collect();
        if value.is_empty() {
            return Err(c.err(
                value_at,
                format!("no value after the comparison: {}", hint(metric)),
            ));
        }
        let bound = bound_of(&c, metric, op, value_at, &value)?;
        c.pos = end;
        c.skip_spaces();
        let mut abort_on_fail = false;
        if c.pos < c.chars.len() {
            let (at, w) = c.word();
            if w == "abort_on_fail" {
                abort_on_fail = true;
                c.skip_spaces();
            } else {
                return Err(c.err(
                    at,
                    "unexpected text after the value: only `abort_on_fail` may follow it",
                ));
            }
            if c.pos < c.chars.len() {
                return Err(c.err(c.pos, "unexpected text after `abort_on_fail`"));
            }
        }
        Ok(Self {
            expr: expr.to_string(),
            alias,
            metric,
            op,
            bound,
            abort_on_fail,
        })
    }

    /// Whether it applies to the activity `alias`.
    ///
    /// ```
    /// let t = paceline::Threshold::parse("reads:errors<1")?;
    /// assert!(t.applies_to("reads") && !t.applies_to("writes"));
    /// # Ok::<(), paceline::ThresholdError>(())
    /// ```
    pub fn applies_to(&self, alias: &str) -> bool {
        self.alias.as_deref().is_none_or(|a| a == alias)
    }

    /// Checks the threshold against `snap` (an activity's totals, or its totals so
    /// far); `mean_target` is the mean rate its schedule asked for over the same
    /// span (`None` when unpaced), `verdict` the verdict on it.
    ///
    /// ```
    /// use paceline::{Metrics, Threshold};
    /// let metrics = Metrics::new(0);
    /// let mut rec = metrics.recorder();
    /// for _ in 0..990 { rec.record(0, 1_000); }
    /// drop(rec);
    /// let snap = metrics.snapshot(1_000_000_000); // 990 ops in 1 s
    /// let t = Threshold::parse("achieved>=99%")?;
    /// assert!(t.check(&snap, Some(1000.0), None).pass);
    /// assert!(!t.check(&snap, Some(1010.0), None).pass);
    /// assert!(!t.check(&snap, None, None).pass); // unpaced: nothing to compare
    /// # Ok::<(), paceline::ThresholdError>(())
    /// ```
    pub fn check(
        &self,
        snap: &Snapshot,
        mean_target: Option<f64>,
        verdict: Option<&Verdict>,
    ) -> Checked {
        let achieved = crate::engine::achieved_rate(snap.ops(), snap.elapsed_nanos(), mean_target);
        self.check_with(snap, achieved, mean_target, verdict)
    }

    /// [`check`](Self::check) with the achieved rate given (`achieved`, `rate`
    /// read it), such as the one a report shows. `check` uses
    /// [`achieved_rate`](crate::achieved_rate) over the schedule's span.
    ///
    /// ```
    /// use paceline::{Metrics, Threshold};
    /// let snap = Metrics::new(0).snapshot(1_000_000_000);
    /// let t = Threshold::parse("rate>=100")?;
    /// assert!(t.check_with(&snap, 100.0, None, None).pass);
    /// # Ok::<(), paceline::ThresholdError>(())
    /// ```
    pub fn check_with(
        &self,
        snap: &Snapshot,
        achieved: f64,
        mean_target: Option<f64>,
        verdict: Option<&Verdict>,
    ) -> Checked {
        let value = self.observe(snap, achieved, mean_target, verdict);
        let pass = match (&value, &self.bound) {
            (Observed::Nanos(n), Bound::Nanos(b)) => self.op.holds(*n as f64, *b),
            (Observed::Percent(p), Bound::Percent(b)) => self.op.holds(*p, *b),
            (Observed::Count(n), Bound::Number(b)) => self.op.holds(*n as f64, *b),
            (Observed::Rate(r), Bound::Number(b)) => self.op.holds(*r, *b),
            (Observed::Verdict(v), Bound::Verdict(b)) => match self.op {
                Op::Eq => v == b,
                _ => v != b,
            },
            _ => false,
        };
        Checked { value, pass }
    }

    fn observe(
        &self,
        snap: &Snapshot,
        achieved: f64,
        mean_target: Option<f64>,
        verdict: Option<&Verdict>,
    ) -> Observed {
        let percent = matches!(self.bound, Bound::Percent(_));
        match self.metric {
            Metric::Latency(d, s) => {
                let l = match d {
                    Distribution::Service => snap.service(),
                    Distribution::Wait => snap.wait(),
                    Distribution::Response => snap.response(),
                    Distribution::Queue => snap.queue(),
                    Distribution::Dispatch => snap.dispatch(),
                };
                if l.count() == 0 {
                    return Observed::Missing("no ops recorded");
                }
                Observed::Nanos(figure(l, s))
            }
            Metric::Errors if percent => match snap.ops() {
                0 => Observed::Missing("no ops"),
                n => Observed::Percent(snap.error_count() as f64 * 100.0 / n as f64),
            },
            Metric::Errors => Observed::Count(snap.error_count()),
            Metric::Missed if percent => match snap.ops() + snap.missed() {
                0 => Observed::Missing("no slots due"),
                n => Observed::Percent(snap.missed() as f64 * 100.0 / n as f64),
            },
            Metric::Missed => Observed::Count(snap.missed()),
            Metric::Achieved if percent => match mean_target {
                Some(t) if t > 0.0 => Observed::Percent(achieved * 100.0 / t),
                _ => Observed::Missing("no target rate"),
            },
            Metric::Achieved | Metric::Rate => Observed::Rate(achieved),
            Metric::Ops => Observed::Count(snap.ops()),
            Metric::Verdict => match verdict {
                Some(v) => Observed::Verdict(v.kind.as_str().to_string()),
                None => Observed::Missing("no verdict"),
            },
        }
    }
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.expr)
    }
}

fn figure(l: &Latencies, s: Stat) -> Nanos {
    match s {
        Stat::Min => l.min(),
        Stat::Mean => l.mean().round() as Nanos,
        Stat::Max => l.max(),
        Stat::P(h) => l.quantile(f64::from(h) / 10_000.0),
    }
}

fn metric_of(c: &Cursor<'_>, at: usize, word: &str) -> Result<Metric, ThresholdError> {
    let known = "`response.p99`, `wait.p999`, `service.max`, `errors`, `missed`, `achieved`, \
                 `rate`, `ops` or `verdict`";
    if word.is_empty() {
        return Err(c.err(at, format!("expected what to measure: {known}")));
    }
    if let Some((_, m)) = SCALARS.iter().find(|(n, _)| *n == word) {
        return Ok(*m);
    }
    let Some((dist, stat)) = word.split_once('.') else {
        if let Some((_, d)) = DISTRIBUTIONS.iter().find(|(n, _)| *n == word) {
            let _ = d;
            return Err(c.err(
                at + word.chars().count(),
                format!("`{word}` needs a figure: `{word}.p99`, `{word}.max`, `{word}.mean`…"),
            ));
        }
        return Err(c.err(at, format!("unknown metric `{word}`: use {known}")));
    };
    let Some((_, d)) = DISTRIBUTIONS.iter().find(|(n, _)| *n == dist) else {
        return Err(c.err(
            at,
            format!(
                "unknown distribution `{dist}`: use `service`, `wait`, `response`, `queue` or \
                 `dispatch`"
            ),
        ));
    };
    let Some((_, s)) = STATS.iter().find(|(n, _)| *n == stat) else {
        return Err(c.err(
            at + dist.chars().count() + 1,
            format!(
                "unknown figure `{stat}`: use min, mean, p50, p90, p95, p99, p999 (p99.9), \
                 p9999 (p99.99) or max"
            ),
        ));
    };
    Ok(Metric::Latency(*d, *s))
}

fn hint(metric: Metric) -> String {
    match metric {
        Metric::Latency(..) => "give a duration, such as `50ms`, `1.5s` or `200us`".into(),
        Metric::Errors => "give a percentage of ops (`1%`) or a count (`10`)".into(),
        Metric::Missed => "give a percentage of slots due (`0.1%`) or a count (`10`)".into(),
        Metric::Achieved => {
            "give a percentage of the mean target rate (`99%`) or ops/s (`5000`)".into()
        }
        Metric::Rate => "give ops per second, such as `1000`".into(),
        Metric::Ops => "give a count, such as `10000`".into(),
        Metric::Verdict => format!("give a verdict: {VERDICTS}"),
    }
}

fn bound_of(
    c: &Cursor<'_>,
    metric: Metric,
    op: Op,
    at: usize,
    value: &str,
) -> Result<Bound, ThresholdError> {
    let bad = |why: &str| c.err(at, format!("`{value}` {why}: {}", hint(metric)));
    if metric == Metric::Verdict {
        if !matches!(op, Op::Eq | Op::Ne) {
            return Err(c.err(
                at.saturating_sub(1),
                "a verdict is compared with `==` or `!=` only",
            ));
        }
        return match crate::engine::VerdictKind::parse(value) {
            Some(k) => Ok(Bound::Verdict(k.as_str().to_string())),
            None => Err(bad("is not a verdict")),
        };
    }
    let (num_text, unit) = split_number(value);
    let Ok(num) = num_text.parse::<f64>() else {
        return Err(bad("is not a number"));
    };
    if !num.is_finite() || num < 0.0 {
        return Err(bad("is not a number of 0 or more"));
    }
    let unit_at = at + num_text.chars().count();
    match metric {
        Metric::Latency(..) => {
            let scale = match unit {
                "ns" => 1.0,
                "us" | "µs" => 1e3,
                "ms" => 1e6,
                "s" => 1e9,
                "m" | "min" => 60e9,
                "" => {
                    return Err(c.err(
                        unit_at,
                        format!(
                            "`{value}` has no unit: write `{value}ms`, `{value}s`, `{value}us`…"
                        ),
                    ));
                }
                other => {
                    return Err(c.err(
                        unit_at,
                        format!("unknown unit `{other}`: use ns, us, ms, s or m"),
                    ));
                }
            };
            Ok(Bound::Nanos(num * scale))
        }
        Metric::Errors | Metric::Missed | Metric::Achieved => match unit {
            "%" => Ok(Bound::Percent(num)),
            "" | "/s" if metric == Metric::Achieved => Ok(Bound::Number(num)),
            "" if num.fract() == 0.0 => Ok(Bound::Number(num)),
            "" => Err(bad("is not a whole count (write `%` for a percentage)")),
            other => Err(c.err(unit_at, format!("unknown unit `{other}`: {}", hint(metric)))),
        },
        Metric::Rate | Metric::Ops => match unit {
            "" => Ok(Bound::Number(num)),
            "/s" if metric == Metric::Rate => Ok(Bound::Number(num)),
            other => Err(c.err(unit_at, format!("unknown unit `{other}`: {}", hint(metric)))),
        },
        Metric::Verdict => unreachable!("handled above"),
    }
}

/// `value` split into its number and its unit.
fn split_number(value: &str) -> (&str, &str) {
    let end = value
        .char_indices()
        .find(|(_, ch)| !(ch.is_ascii_digit() || *ch == '.'))
        .map_or(value.len(), |(i, _)| i);
    (&value[..end], &value[end..])
}

#[cfg(test)]
#[path = "thresholds_tests.rs"]
mod tests;
