//! Reading a threshold expression (`Threshold::parse`): the grammar of the
//! module docs of `super`, with each error's place and fix. It runs once, when
//! an activity file or the command line is loaded; `super` checks the parsed
//! thresholds against a run's figures.

use super::*;

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

const VERDICTS: &str = "`on-schedule`, `system-bound`, `generator-bound`, `concurrency-bound`, \
     `unpaced`, `too-short`, `stopped-by-error` or `not-started`";

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
