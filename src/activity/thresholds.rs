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
//! stat       := "min" | "mean" | "p50" | "p90" | "p95" | "p99" | "p999" | "p99.9" | "p9999"
//!             | "p99.99" | "max"
//! op         := "<" | "<=" | ">" | ">=" | "==" | "!="
//! value      := a duration (`50ms`, `1.5s`, `200us`) for latencies;
//!               N% or a count N for `errors` and `missed`;
//!               N% (of the mean target rate) or N ops/s for `achieved`;
//!               N ops/s for `rate`, a count for `ops`;
//!               a verdict kind (`on-schedule`, `system-bound`, `generator-bound`,
//!               `concurrency-bound`, `unpaced`, `too-short`, `stopped-by-error`,
//!               `not-started`) for `verdict`, with `==` or `!=` only
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

impl Threshold {
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
        // Poisson arrivals: against the drawn slots' own rate, as the verdict.
        let mean_target = verdict.and_then(|v| v.drawn_rate).or(mean_target);
        let achieved = crate::engine::achieved_rate(snap, mean_target);
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
            // A share of the ops started: the cancelled ones are errors and
            // starts both, never recorded as ops (audit p18, H5: 7 cancelled of
            // 10 started read 233 %).
            Metric::Errors if percent => match snap.starts() {
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

#[path = "thresholds_parse.rs"]
mod parse;

#[cfg(test)]
#[path = "thresholds_tests.rs"]
mod tests;
