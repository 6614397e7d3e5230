//! What a CI pipeline gates on: thresholds checked against each activity's
//! numbers (exit code 3 when one fails), and the JUnit XML report
//! (`--junit`): one test case per activity and per threshold.

use super::report::ActivityInfo;
use super::tracked::{ReportData, info_of, mean_target, verdict_on};
use paceline::thresholds::{Bound, Checked, Distribution, Metric, Observed, Op};
use paceline::{Control, Outcome as RunOutcome, Snapshot, Threshold, TimelineEntry, Verdict};
use serde_json::json;
use std::collections::HashMap;
use std::fmt::Write as _;

/// Where a threshold came from, for its messages.
#[derive(Debug, Clone, PartialEq)]
pub struct Sourced {
    /// The threshold.
    pub threshold: Threshold,
    /// `--threshold #2`, or `FILE:LINE:COLUMN`-less `FILE` for the file's list.
    pub from: String,
}

/// One activity's numbers a threshold reads.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    /// Its alias.
    pub alias: &'a str,
    /// Its totals (at the end), or its totals so far (at an interval).
    pub snapshot: &'a Snapshot,
    /// The mean target rate over the same span; `None` when unpaced.
    pub mean_target: Option<f64>,
    /// The verdict on it.
    pub verdict: Option<&'a Verdict>,
    /// Its errors that only say its stdout reader went away (`| head`): no
    /// failure, left out of `errors` thresholds (audit p16, L1).
    pub reader_closed: u64,
    /// Its ops a planned end cut (`ActivityInfo::cut_at_end`): `cancelled`,
    /// left out of the `errors` thresholds' count, still among the ops started
    /// they are a share of (audit p18, M9).
    pub cut_at_end: u64,
}

/// Why a `queue`/`dispatch` threshold has no value on an unpaced activity.
pub const UNPACED_SPLIT: &str = "unpaced: no slots, so no queue/dispatch split; gate on `response`, or give the activity a rate";

/// How the summary ends an activity whose stdout reader went away.
pub const STDOUT_CLOSED: &str = "stopped (stdout closed)";

/// One threshold's result on one activity.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// The expression as written.
    pub expr: String,
    /// Where it came from.
    pub from: String,
    /// The activity it was checked on; `None` when no activity it applies to ran.
    pub activity: Option<String>,
    /// What it found.
    pub value: Observed,
    /// Whether it holds.
    pub pass: bool,
}

impl Outcome {
    /// The summary JSON's form: `{expr, activity, value, shown, pass}` (`value` a
    /// number in its unit, or a verdict's name, or null; `shown` for people).
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "expr": self.expr,
            "activity": self.activity,
            "value": self.value.to_json(),
            "shown": self.value.to_string(),
            "pass": self.pass,
            "from": self.from,
        })
    }

    /// `PASS response.p99<50ms (kv): 2.05ms`.
    pub fn line(&self) -> String {
        format!(
            "{} {}{}: {}",
            if self.pass { "pass" } else { "FAIL" },
            self.expr,
            self.activity
                .as_deref()
                .map(|a| format!(" ({a})"))
                .unwrap_or_default(),
            self.value
        )
    }
}

/// Checks every threshold on every subject it applies to. A threshold that
/// applies to no subject (an alias that did not run) fails, saying so.
pub fn check(thresholds: &[Sourced], subjects: &[Subject<'_>]) -> Vec<Outcome> {
    let mut out = Vec::new();
    for s in thresholds {
        let t = &s.threshold;
        let mut any = false;
        for sub in subjects.iter().filter(|sub| t.applies_to(sub.alias)) {
            any = true;
            let left_out = sub.reader_closed + sub.cut_at_end;
            let Checked { value, pass } = if left_out > 0 && t.metric == Metric::Errors {
                errors_without_closed(t, sub)
            } else {
                t.check(sub.snapshot, sub.mean_target, sub.verdict)
            };
            out.push(Outcome {
                expr: t.expr.clone(),
                from: s.from.clone(),
                activity: Some(sub.alias.to_string()),
                value,
                pass,
            });
        }
        if !any {
            out.push(Outcome {
                expr: t.expr.clone(),
                from: s.from.clone(),
                activity: t.alias.clone(),
                value: Observed::Missing("no such activity ran"),
                pass: false,
            });
        }
    }
    out
}

/// An `errors` threshold on `sub` without its [`Subject::reader_closed`]
/// errors and its [`Subject::cut_at_end`] cancelled ops.
fn errors_without_closed(t: &Threshold, sub: &Subject<'_>) -> Checked {
    let snap = sub.snapshot;
    let n = snap
        .error_count()
        .saturating_sub(sub.reader_closed + sub.cut_at_end);
    // Over the ops started, as `Threshold::check` (audit p18, H5).
    let value = match (&t.bound, snap.starts()) {
        (Bound::Percent(_), 0) => Observed::Missing("no ops"),
        (Bound::Percent(_), ops) => Observed::Percent(n as f64 * 100.0 / ops as f64),
        _ => Observed::Count(n),
    };
    let (a, b) = match (&value, &t.bound) {
        (Observed::Percent(p), Bound::Percent(b)) => (*p, *b),
        (Observed::Count(c), Bound::Number(b)) => (*c as f64, *b),
        _ => {
            return Checked { value, pass: false };
        }
    };
    let pass = match t.op {
        Op::Lt => a < b,
        Op::Le => a <= b,
        Op::Gt => a > b,
        Op::Ge => a >= b,
        Op::Eq => a == b,
        Op::Ne => a != b,
    };
    Checked { value, pass }
}

/// [`check`] at an interval (`abort_on_fail`): only the results that have a
/// value. A threshold whose value is missing so far (no target rate yet, a
/// scenario step not started, no verdict), whose interval verdict is
/// `not-started` (setting up), or whose activity has no op ended yet (every
/// metric but `missed`) is skipped: the run is not stopped for having no value
/// yet; [`check_final`] fails those that still have none at the end (audit
/// p17, H4). Two figures are not whole yet at an interval and are skipped too
/// ([`judged_at_interval`]); the final check judges them.
///
/// Every `cancelled` op is left out of an `errors` threshold here: only a stop
/// cuts ops, and at an interval the activity may be stopping with its end not
/// yet known (a `duration` that ran out books its cut ops before its outcome is
/// set); [`check_final`] judges them by how the activity ended (audit p18, M9).
pub fn check_interval(thresholds: &[Sourced], subjects: &[Subject<'_>]) -> Vec<Outcome> {
    let subjects: Vec<Subject<'_>> = subjects
        .iter()
        .map(|s| Subject {
            cut_at_end: s.snapshot.errors_of("cancelled"),
            ..*s
        })
        .collect();
    let subjects = subjects.as_slice();
    check(thresholds, subjects)
        .into_iter()
        .filter(|r| {
            let Some(alias) = r.activity.as_deref() else {
                return false;
            };
            let mut subs = subjects.iter().filter(|s| s.alias == alias);
            let Some(t) = thresholds
                .iter()
                .find(|s| s.threshold.expr == r.expr && s.from == r.from)
            else {
                return false;
            };
            // No op has ended yet: the achieved rate, the ops, the errors and
            // the verdict are not known yet (a 0/s that only says the first op
            // is slow). Missed slots are: a stall before any op ends still
            // stops a run on a `missed` threshold.
            let missed = t.threshold.metric == Metric::Missed;
            !matches!(&r.value, Observed::Missing(_))
                && !matches!(&r.value, Observed::Verdict(v) if v == "not-started")
                && subs.all(|s| {
                    (missed || s.snapshot.ops() > 0) && judged_at_interval(&t.threshold, s.snapshot)
                })
        })
        .collect()
}

/// Whether `t` can be judged on `snap`, an activity's totals so far, at an
/// interval:
///
/// - `achieved`/`rate` not once its schedule has ended (audit p18, H2): the
///   ops still in flight are in no count until they end, while the span runs
///   to the schedule's end, so an exact run read short (91.97 % for "100/s of
///   100/s") and `abort_on_fail` stopped it. The rate counts the starts over
///   the span they were started in only once every op has ended: at the end.
/// - a share's upper bound (`errors<1%`, `missed<=2%`) not before `100 /
///   bound` ops started (or slots due), where one failure alone is over the
///   bound (audit p18, M8: the first error in the first 96 ops read 1.04 % and
///   stopped a run that ended at 0.2 %; k6's `delayAbortEval` waits likewise).
///   A bound of 0 % is judged at once: one failure fails it, however many ops.
fn judged_at_interval(t: &Threshold, snap: &Snapshot) -> bool {
    match (t.metric, &t.bound, t.op) {
        (Metric::Achieved | Metric::Rate, _, _) => snap.schedule_end().is_none(),
        (Metric::Errors | Metric::Missed, Bound::Percent(b), Op::Lt | Op::Le) if *b > 0.0 => {
            let n = match t.metric {
                Metric::Errors => snap.starts(),
                _ => snap.ops() + snap.missed(),
            };
            // One failure in `n` is `100 / n` %: it stays under `<b%` only
            // when `n > 100 / b`, and within `<=b%` from `n >= 100 / b`
            // (review p18, G-1: at exactly 100 ops one error read 1.00 %
            // and failed `errors<1%`).
            match t.op {
                Op::Lt => n as f64 > 100.0 / b,
                _ => n as f64 >= 100.0 / b,
            }
        }
        _ => true,
    }
}

/// [`check`] at the end of the run: a verdict threshold on an activity that
/// ran no op fails ("no ops"), as a latency or an `errors` threshold does; its
/// verdict (`on-schedule: paused: no op was due`) judges no pacing (audit p16,
/// L4). A `queue`/`dispatch` threshold on an unpaced activity fails saying so
/// (audit p17, L12): it has no slots, so no queue/dispatch split, and a gate
/// that cannot be judged never passes.
pub fn check_final(thresholds: &[Sourced], subjects: &[Subject<'_>]) -> Vec<Outcome> {
    let mut out = check(thresholds, subjects);
    for r in &mut out {
        let Some(alias) = r.activity.as_deref() else {
            continue;
        };
        let split = thresholds.iter().any(|s| {
            s.threshold.expr == r.expr
                && s.from == r.from
                && matches!(
                    s.threshold.metric,
                    Metric::Latency(Distribution::Queue | Distribution::Dispatch, _)
                )
        });
        let unpaced = subjects
            .iter()
            .any(|s| s.alias == alias && s.mean_target.is_none() && s.snapshot.ops() > 0);
        if split && unpaced && matches!(r.value, Observed::Missing(_)) {
            r.value = Observed::Missing(UNPACED_SPLIT);
        }
    }
    for r in &mut out {
        let Some(alias) = r.activity.as_deref() else {
            continue;
        };
        let verdict = thresholds.iter().any(|s| {
            s.threshold.expr == r.expr && s.from == r.from && s.threshold.metric == Metric::Verdict
        });
        let no_ops = subjects
            .iter()
            .any(|s| s.alias == alias && s.snapshot.ops() == 0);
        if verdict && no_ops {
            r.value = Observed::Missing("no ops");
            r.pass = false;
        }
    }
    out
}

/// Refuses, before anything runs, a threshold whose `ALIAS:` names no activity
/// the run starts (`aliases`: the activity's, or every `run`/`start` step's):
/// it could only fail after the whole run (audit p16, L5). The message names
/// the threshold, where it came from, the aliases, and the closest one.
pub fn unknown_aliases(thresholds: &[Sourced], aliases: &[String]) -> Result<(), String> {
    for s in thresholds {
        let Some(alias) = s.threshold.alias.as_deref() else {
            continue;
        };
        if aliases.iter().any(|a| s.threshold.applies_to(a)) {
            continue;
        }
        let hint = paceline::closest_name(alias, aliases.iter().map(String::as_str))
            .map(|c| format!("; did you mean `{c}`?"))
            .unwrap_or_default();
        let known = aliases
            .iter()
            .map(|a| format!("`{a}`"))
            .collect::<Vec<_>>()
            .join(", ");
        return Err(format!(
            "{}: threshold `{}` names activity `{alias}`, which this run does not start \
             (it starts {known}){hint}",
            s.from, s.threshold.expr
        ));
    }
    Ok(())
}

/// The console's threshold block: a heading and one line per result.
pub fn console_block(results: &[Outcome]) -> String {
    let failed = results.iter().filter(|r| !r.pass).count();
    let mut s = format!(
        "thresholds: {} of {} passed",
        results.len() - failed,
        results.len()
    );
    for r in results {
        let _ = write!(s, "\n  {}", r.line());
    }
    s
}

/// `text` escaped for XML text and attribute values (`&`, `<`, `>`, quotes), with
/// characters XML 1.0 cannot hold (most control characters) replaced by U+FFFD.
pub fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || matches!(c as u32, 0xFFFE | 0xFFFF) => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// One activity as a JUnit test case.
#[derive(Debug, Clone)]
pub struct CaseOf {
    /// The alias.
    pub alias: String,
    /// Seconds it ran.
    pub seconds: f64,
    /// How it ended (`completed`, `ran its duration`, `failed: …`).
    pub outcome: String,
    /// Why it failed, when it did.
    pub failure: Option<String>,
    /// The summary line shown as its output.
    pub detail: String,
}

/// What ended a run that did not end well (a scenario step refused or failed,
/// an interrupt, an op stuck past the stop timeout), as a JUnit test case.
#[derive(Debug, Clone)]
pub struct RunCase {
    /// The summary JSON's `outcome` (`failed`, `interrupted`, `bad input`).
    pub outcome: String,
    /// Why, as printed.
    pub message: String,
}

/// The JUnit XML document: one `testsuite` named `paceline` with a test case per
/// activity (failed when the activity failed), per threshold result (failed
/// when it did not hold) and, for a run that did not end well, a failed case
/// `run` saying why; and the run's metadata as properties.
pub fn junit(
    activities: &[CaseOf],
    thresholds: &[Outcome],
    run: Option<&RunCase>,
    meta: &serde_json::Map<String, serde_json::Value>,
) -> String {
    let tests = activities.len() + thresholds.len() + usize::from(run.is_some());
    let failures = activities.iter().filter(|a| a.failure.is_some()).count()
        + thresholds.iter().filter(|t| !t.pass).count()
        + usize::from(run.is_some());
    let time: f64 = activities.iter().map(|a| a.seconds).fold(0.0, f64::max);
    let stamp = meta
        .get("started_at")
        .and_then(|v| v.as_str())
        .unwrap_or("");
    let host = meta.get("host").and_then(|v| v.as_str()).unwrap_or("");
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        x,
        "<testsuites name=\"paceline\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" time=\"{time:.3}\">"
    );
    let _ = writeln!(
        x,
        "  <testsuite name=\"paceline\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" \
         skipped=\"0\" time=\"{time:.3}\" timestamp=\"{}\" hostname=\"{}\">",
        xml_escape(stamp),
        xml_escape(host)
    );
    x.push_str("    <properties>\n");
    for (k, _) in super::meta::FIELDS {
        if let Some(v) = meta.get(*k) {
            let _ = writeln!(
                x,
                "      <property name=\"{k}\" value=\"{}\"/>",
                xml_escape(&super::meta::text(v))
            );
        }
    }
    x.push_str("    </properties>\n");
    if let Some(r) = run {
        let _ = writeln!(
            x,
            "    <testcase classname=\"paceline.run\" name=\"run\" time=\"{time:.3}\">\n      \
             <failure message=\"{}\" type=\"{}\">{}</failure>\n    </testcase>",
            xml_escape(&r.message),
            xml_escape(&r.outcome),
            xml_escape(&r.message)
        );
    }
    let names = run_names(activities.iter().map(|a| a.alias.as_str()));
    for (a, name) in activities.iter().zip(&names) {
        let _ = write!(
            x,
            "    <testcase classname=\"paceline.activity\" name=\"{}\" time=\"{:.3}\">",
            xml_escape(name),
            a.seconds
        );
        if let Some(f) = &a.failure {
            let _ = write!(
                x,
                "\n      <failure message=\"{}\" type=\"activity\">{}</failure>",
                xml_escape(f),
                xml_escape(f)
            );
        }
        let _ = writeln!(
            x,
            "\n      <system-out>{}</system-out>\n    </testcase>",
            xml_escape(&format!("{} ({})", a.detail, a.outcome))
        );
    }
    // A threshold is checked on each run of an alias in the order they ran
    // (`check`): its n-th result on an alias is on that alias's n-th run.
    let mut seen: HashMap<(&str, &str, &str), usize> = HashMap::new();
    for t in thresholds {
        let name = match &t.activity {
            Some(a) => {
                let n = seen.entry((&t.expr, &t.from, a)).or_insert(0);
                *n += 1;
                let runs = activities.iter().filter(|c| c.alias == *a).count();
                format!("{} ({})", t.expr, run_name(a, *n, runs))
            }
            None => t.expr.clone(),
        };
        let _ = write!(
            x,
            "    <testcase classname=\"paceline.threshold\" name=\"{}\" time=\"0\">",
            xml_escape(&name)
        );
        if !t.pass {
            let msg = format!("{} failed: value {}", t.expr, t.value);
            let _ = write!(
                x,
                "\n      <failure message=\"{}\" type=\"threshold\">{} (from {})</failure>\n    ",
                xml_escape(&msg),
                xml_escape(&msg),
                xml_escape(&t.from)
            );
        } else {
            let _ = write!(
                x,
                "\n      <system-out>value {}</system-out>\n    ",
                xml_escape(&t.value.to_string())
            );
        }
        x.push_str("</testcase>\n");
    }
    x.push_str("  </testsuite>\n</testsuites>\n");
    x
}

/// Each alias's test case name, in the order run: the alias itself when it ran
/// once, else `alias`, `alias#2`, ... (audit p17, M1: a scenario that ran an
/// alias twice gave two cases of one name, which tools keyed on the name merge).
/// `compare` pairs repeated aliases in the same order.
fn run_names<'a>(aliases: impl Iterator<Item = &'a str> + Clone) -> Vec<String> {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    aliases
        .clone()
        .map(|a| {
            let n = seen.entry(a).or_insert(0);
            *n += 1;
            let runs = aliases.clone().filter(|b| *b == a).count();
            run_name(a, *n, runs)
        })
        .collect()
}

/// The `n`-th (from 1) run of `alias`, of `runs`: `alias` for the first, or
/// when it ran once; `alias#n` after.
fn run_name(alias: &str, n: usize, runs: usize) -> String {
    if n <= 1 || runs <= 1 {
        alias.to_string()
    } else {
        format!("{alias}#{n}")
    }
}

/// An activity's totals so far (or at the end), with its info, judged against the
/// mean rate its schedule asked for over them (ramps, rate changes and pauses
/// weighted by time, not the final rate), its timeline, and that mean target
/// (`None` when unpaced).
pub(super) fn judged_totals(
    c: &Control,
    cpu_cores: Option<f64>,
) -> (ActivityInfo, Snapshot, Vec<TimelineEntry>, Option<f64>) {
    let mut info = info_of(c);
    // A run stopped before its first slot: all of it was set-up (audit p16,
    // H9); one launched paused and never raised keeps its window, all of it
    // paused, which says why no op ran.
    let mut totals = c.totals();
    if !info.schedule_begun && totals.paused_nanos() == 0 {
        totals = totals.before_first_slot();
    }
    let timeline = c.timeline();
    info.mean_target = mean_target(c, &info, totals.start(), totals.end());
    // The stream the run's slots were drawn from: in thread scope not the
    // activity's own (review p15, finding 1).
    let scope = c
        .config()
        .rate_spec()
        .map_or(paceline::Scope::Activity, |s| s.scope_value());
    let arrivals = c.config().arrivals_value();
    let mut verdict = verdict_on(&info, &totals, cpu_cores, Some((arrivals, scope)));
    // A run an error stopped is judged as such, not on its pacing (issue 24,
    // item 9); a reader that closed stdout (`| head`) is no error.
    match c.outcome() {
        Some(RunOutcome::Failed(_)) if c.failure_kind().as_deref() == Some("closed") => {
            info.ended = Some(STDOUT_CLOSED.to_string());
        }
        Some(RunOutcome::Failed(why)) => verdict = verdict.stopped(&why, totals.ops()),
        _ => {}
    }
    info.verdict = Some(verdict);
    let mean = info.mean_target;
    (info, totals, timeline, mean)
}

/// What the thresholds read of each activity's judged totals: `data` with the
/// mean target of each.
pub(super) fn subjects<'a>(data: &'a [ReportData], means: &[Option<f64>]) -> Vec<Subject<'a>> {
    data.iter()
        .zip(means)
        .map(|((info, snap, _), mean)| Subject {
            alias: &info.alias,
            snapshot: snap,
            mean_target: *mean,
            verdict: info.verdict.as_ref(),
            reader_closed: if info.ended.as_deref() == Some(STDOUT_CLOSED) {
                snap.errors_of("closed")
            } else {
                0
            },
            cut_at_end: info.cut_at_end(snap),
        })
        .collect()
}

/// An activity as a JUnit test case: failed when the activity failed.
pub(super) fn junit_case(info: &ActivityInfo, snap: &Snapshot, c: &Control) -> CaseOf {
    let outcome = c.outcome();
    let failure = match &outcome {
        Some(RunOutcome::Failed(why)) if c.failure_kind().as_deref() != Some("closed") => {
            Some(why.clone())
        }
        _ => None,
    };
    CaseOf {
        alias: info.alias.clone(),
        seconds: snap.elapsed_nanos() as f64 / 1e9,
        outcome: outcome.map_or("running".to_string(), |o| o.to_string()),
        failure,
        // The summary's figures (audit p16, M2): the achieved rate against the
        // schedule (not the completion rate), no p99 without a response.
        detail: format!(
            "{} ops in {:.3}s, {}/s, {} errors, response p99 {}",
            snap.ops(),
            snap.elapsed_nanos() as f64 / 1e9,
            super::report::units::rate(paceline::achieved_rate(snap, info.mean_target)),
            snap.error_count(),
            if snap.response().count() == 0 {
                "-".to_string()
            } else {
                super::report::units::duration(snap.response().p99())
            }
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use paceline::Metrics;

    fn snap() -> Snapshot {
        let m = Metrics::new(0);
        let mut rec = m.recorder();
        for _ in 0..100 {
            rec.record(0, 2_000_000);
        }
        drop(rec);
        m.snapshot(1_000_000_000)
    }

    fn sourced(expr: &str, from: &str) -> Sourced {
        Sourced {
            threshold: Threshold::parse(expr).unwrap_or_else(|e| panic!("{e}")),
            from: from.into(),
        }
    }

    #[test]
    fn each_threshold_is_checked_on_each_activity_it_applies_to() {
        let s = snap();
        let subjects = [
            Subject {
                alias: "a",
                snapshot: &s,
                mean_target: None,
                verdict: None,
                reader_closed: 0,
                cut_at_end: 0,
            },
            Subject {
                alias: "b",
                snapshot: &s,
                mean_target: None,
                verdict: None,
                reader_closed: 0,
                cut_at_end: 0,
            },
        ];
        let r = check(
            &[
                sourced("response.p99<1ms", "--threshold #1"),
                sourced("b:errors<1", "--threshold #2"),
                sourced("gone:errors<1", "w.yaml"),
            ],
            &subjects,
        );
        let lines: Vec<String> = r.iter().map(Outcome::line).collect();
        assert_eq!(
            lines,
            [
                "FAIL response.p99<1ms (a): 2.00ms",
                "FAIL response.p99<1ms (b): 2.00ms",
                "pass b:errors<1 (b): 0",
                "FAIL gone:errors<1 (gone): none (no such activity ran)",
            ]
        );
        assert_eq!(
            r[0].to_json(),
            json!({"expr": "response.p99<1ms", "activity": "a", "value": 2_000_895,
                   "shown": "2.00ms", "pass": false, "from": "--threshold #1"})
        );
        assert!(console_block(&r).starts_with("thresholds: 1 of 4 passed\n  FAIL"));
    }

    /// Regression (audit p16, H6): a run that a scenario step, an interrupt or
    /// a stuck op ended had no failing test case: `failures="0"` with exit 1.
    #[test]
    fn a_run_that_did_not_end_well_is_a_failed_test_case() {
        let meta = serde_json::Map::new();
        let run = RunCase {
            outcome: "bad input".into(),
            message: "scenario stopped: step 2: driver `redis`: cannot reach <Redis>".into(),
        };
        let x = junit(&[], &[], Some(&run), &meta);
        assert!(
            x.contains("<testsuites name=\"paceline\" tests=\"1\" failures=\"1\""),
            "{x}"
        );
        assert!(
            x.contains(
                "<testcase classname=\"paceline.run\" name=\"run\" time=\"0.000\">\n      \
                 <failure message=\"scenario stopped: step 2: driver `redis`: cannot reach \
                 &lt;Redis&gt;\" type=\"bad input\">"
            ),
            "{x}"
        );
        let x = junit(&[], &[], None, &meta);
        assert!(x.contains("tests=\"0\" failures=\"0\""), "{x}");
    }

    /// Regression (audit p17, M1's JUnit half): a scenario that ran `main`
    /// twice wrote two `<testcase name="main">` and two `errors==0 (main)`
    /// cases, which tools keyed on classname and name merge (one pass hiding a
    /// failure). Repeated aliases are numbered in the order run.
    #[test]
    fn a_repeated_alias_gives_numbered_test_cases_in_the_order_run() {
        let s = snap();
        let case = |alias: &str| CaseOf {
            alias: alias.into(),
            seconds: 1.0,
            outcome: "completed".into(),
            failure: None,
            detail: "100 ops".into(),
        };
        let cases = [case("main"), case("other"), case("main"), case("main")];
        let subject = |alias| Subject {
            alias,
            snapshot: &s,
            mean_target: None,
            verdict: None,
            reader_closed: 0,
            cut_at_end: 0,
        };
        let subjects = [
            subject("main"),
            subject("other"),
            subject("main"),
            subject("main"),
        ];
        let results = check(&[sourced("errors==0", "--threshold #1")], &subjects);
        let x = junit(&cases, &results, None, &serde_json::Map::new());
        let names: Vec<&str> = x
            .lines()
            .filter_map(|l| l.split(" name=\"").nth(1))
            .filter_map(|l| l.split('"').next())
            .filter(|n| *n != "paceline")
            .collect();
        assert_eq!(
            names,
            [
                "main",
                "other",
                "main#2",
                "main#3",
                "errors==0 (main)",
                "errors==0 (other)",
                "errors==0 (main#2)",
                "errors==0 (main#3)",
            ],
            "{x}"
        );
    }

    /// Regression (audit p16, L4): `verdict==on-schedule` passed on a run
    /// paused for its whole length (no op), where `errors<1%` fails.
    #[test]
    fn a_verdict_threshold_fails_on_an_activity_with_no_ops() {
        let empty = Metrics::new(0).snapshot(1_000_000_000);
        let full = snap();
        let subject = |alias, snapshot| Subject {
            alias,
            snapshot,
            mean_target: None,
            verdict: None,
            reader_closed: 0,
            cut_at_end: 0,
        };
        let subjects = [subject("idle", &empty), subject("busy", &full)];
        let t = [sourced("verdict==on-schedule", "--threshold #1")];
        let r = check_final(&t, &subjects);
        assert_eq!(
            r[0].line(),
            "FAIL verdict==on-schedule (idle): none (no ops)"
        );
        // An activity that ran is judged on its verdict as before.
        assert_eq!(r[1], check(&t, &subjects)[1]);
    }

    /// Regression (audit p17, H4): at an interval, a threshold with no value
    /// yet (no op ended, a step not started, a verdict of a run setting up)
    /// stopped the run (`errors<1% abort_on_fail` failed "none (no ops)").
    /// It is skipped there; a value that fails still stops the run.
    #[test]
    fn an_interval_check_skips_what_has_no_value_yet() {
        let empty = Metrics::new(0).snapshot(1_000_000_000);
        let full = snap();
        let f = paceline::Figures {
            target_rate: Some(100.0),
            ..Default::default()
        };
        let setting_up = Verdict::from_figures(&f, Default::default(), Default::default())
            .not_started(300_000_000, None, None);
        let subject = |alias, snapshot, verdict| Subject {
            alias,
            snapshot,
            mean_target: None,
            verdict,
            reader_closed: 0,
            cut_at_end: 0,
        };
        let subjects = [
            subject("slow", &empty, Some(&setting_up)),
            subject("busy", &full, None),
        ];
        let t = [
            // `<=`: `busy`'s 100 ops hold `<=1%`'s bound for one failure, not
            // `<1%`'s (review p18, G-1).
            sourced("errors<=1% abort_on_fail", "--threshold #1"),
            sourced("response.p99<5s abort_on_fail", "--threshold #2"),
            sourced("slow:verdict==on-schedule abort_on_fail", "--threshold #3"),
            sourced("later:errors<1% abort_on_fail", "--threshold #4"),
            sourced("achieved>=99% abort_on_fail", "--threshold #5"),
            sourced("busy:response.p99<1ms abort_on_fail", "--threshold #6"),
            sourced("slow:achieved>=1 abort_on_fail", "--threshold #7"),
            sourced("slow:ops>=1 abort_on_fail", "--threshold #8"),
            sourced("slow:missed<0 abort_on_fail", "--threshold #9"),
        ];
        let lines: Vec<String> = check_interval(&t, &subjects)
            .iter()
            .map(Outcome::line)
            .collect();
        assert_eq!(
            lines,
            [
                "pass errors<=1% abort_on_fail (busy): 0%",
                "pass response.p99<5s abort_on_fail (busy): 2.00ms",
                "FAIL busy:response.p99<1ms abort_on_fail (busy): 2.00ms",
                "FAIL slow:missed<0 abort_on_fail (slow): 0",
            ]
        );
        // At the end the same missing values fail.
        let end = check_final(&t[..1], &subjects);
        assert_eq!(
            end[0].line(),
            "FAIL errors<=1% abort_on_fail (slow): none (no ops)"
        );
    }

    /// Regression (audit p18, H2): 100/s of 250 ms ops on the async runner, its
    /// 3 s schedule ended with 25 ops in flight: the interval check read the
    /// 275 ops ended over the whole span (91.97 %) and `achieved>=98%
    /// abort_on_fail` stopped an exact run. It waits for the final check,
    /// which has every op and passes.
    #[test]
    fn an_interval_check_leaves_the_rate_of_an_ended_schedule_to_the_end() {
        const MS: u64 = 1_000_000;
        let m = Metrics::new(0);
        let mut rec = m.recorder();
        // Ops end 250 ms after their slot: at 3 s, those of slots 0..275 have.
        for i in 0..275 {
            rec.set_start(i * 10 * MS);
            rec.record(0, 250 * MS);
        }
        m.schedule_ended(3_000 * MS);
        m.snapshot(3_000 * MS);
        let so_far = m.totals();
        let subject = |snapshot| Subject {
            alias: "diag",
            snapshot,
            mean_target: Some(100.0),
            verdict: None,
            reader_closed: 0,
            cut_at_end: 0,
        };
        let t = [
            sourced("achieved>=98% abort_on_fail", "--threshold #1"),
            sourced("rate>=95 abort_on_fail", "--threshold #2"),
        ];
        assert!(!check(&t, &[subject(&so_far)])[0].pass);
        assert_eq!(check_interval(&t, &[subject(&so_far)]), []);
        // Before the schedule's end the rate is judged at an interval.
        let running = Metrics::new(0);
        let mut rec = running.recorder();
        for i in 0..100 {
            rec.set_start(i * 20 * MS);
            rec.record(0, MS);
        }
        drop(rec);
        running.snapshot(2_000 * MS);
        let behind = running.totals();
        let r = check_interval(&t, &[subject(&behind)]);
        assert!(r.len() == 2 && !r[0].pass, "{r:?}");
        // The rest of the ops end: the final check passes.
        for i in 275..300 {
            rec_done(&m, i * 10 * MS);
        }
        m.snapshot(3_250 * MS);
        let all = m.totals();
        assert!(check_final(&t, &[subject(&all)]).iter().all(|r| r.pass));
    }

    fn rec_done(m: &Metrics, start: u64) {
        let mut rec = m.recorder();
        rec.set_start(start);
        rec.record(0, 250_000_000);
    }

    /// Regression (audit p18, M8): one injected error in the first 96 ops read
    /// 1.04 % at the first 100 ms interval and `errors<1% abort_on_fail`
    /// stopped a run that ended at 0.2 %. A share is judged at an interval
    /// from `100 / bound` ops started on; `errors<=0%` at once.
    #[test]
    fn an_interval_check_waits_for_a_share_to_hold_its_bound() {
        let ops = |n: u64, errors: u64| {
            let m = Metrics::new(0);
            let mut rec = m.recorder();
            for _ in 0..n {
                rec.record(0, 1_000);
            }
            for _ in 0..errors {
                rec.error_named("diag");
            }
            drop(rec);
            m.snapshot(100_000_000)
        };
        let subject = |snapshot| Subject {
            alias: "diag",
            snapshot,
            mean_target: None,
            verdict: None,
            reader_closed: 0,
            cut_at_end: 0,
        };
        let t = [sourced("errors<1% abort_on_fail", "--threshold #1")];
        let early = ops(96, 1);
        assert_eq!(check_interval(&t, &[subject(&early)]), []);
        let later = ops(200, 1);
        let r = check_interval(&t, &[subject(&later)]);
        assert!(r.len() == 1 && r[0].pass, "{r:?}");
        let bad = ops(200, 3);
        let r = check_interval(&t, &[subject(&bad)]);
        assert!(r.len() == 1 && !r[0].pass, "{r:?}");
        // Review p18, G-1: at exactly 100 ops one error is 1.00 %: `<1%` waits
        // for one more op, `<=1%` is judged and holds.
        let edge = ops(100, 1);
        assert_eq!(edge.starts(), 100);
        assert_eq!(check_interval(&t, &[subject(&edge)]), []);
        let le = [sourced("errors<=1% abort_on_fail", "--threshold #1")];
        let r = check_interval(&le, &[subject(&edge)]);
        assert!(r.len() == 1 && r[0].pass, "{r:?}");
        let none = [sourced("errors<=0% abort_on_fail", "--threshold #1")];
        let r = check_interval(&none, &[subject(&early)]);
        assert!(r.len() == 1 && !r[0].pass, "{r:?}");
    }

    /// Regression (audit p18, M9): the ops a planned end cut (`cancelled`
    /// when the activity completed, ran its duration or was stopped by its
    /// scenario) are left out of an `errors` threshold's count, still among
    /// the ops started; those a stop that was asked for cut stay errors.
    #[test]
    fn ops_a_planned_end_cut_are_no_errors() {
        let m = Metrics::new(0);
        let mut rec = m.recorder();
        for i in 0..10 {
            rec.set_start(i * 100);
            if i < 8 {
                rec.record(0, 1000);
            } else {
                rec.started_unrecorded();
                rec.error_named("cancelled");
            }
        }
        rec.error_named("diag");
        drop(rec);
        let snap = m.snapshot(10_000);
        let t = [
            sourced("errors<=1", "--threshold #1"),
            sourced("errors<11%", "--threshold #2"),
        ];
        let shown = |ended: Option<&str>| {
            let mut info = crate::cli::report::tests::info("diag");
            info.ended = ended.map(str::to_string);
            let data = [(info, snap.clone(), Vec::new())];
            check(&t, &subjects(&data, &[None]))
                .iter()
                .map(|r| (r.value.to_string(), r.pass))
                .collect::<Vec<_>>()
        };
        let planned = [("1".to_string(), true), ("10%".to_string(), true)];
        for ended in ["ran its duration", "completed", "stopped"] {
            assert_eq!(shown(Some(ended)), planned, "{ended}");
        }
        let asked = [("3".to_string(), false), ("30%".to_string(), false)];
        for ended in [
            "stopped by interrupt",
            "stopped by control",
            "stopped by abort_on_fail",
            "failed",
        ] {
            assert_eq!(shown(Some(ended)), asked, "{ended}");
        }
        // Still running: every error counts at the end (a stuck activity)...
        assert_eq!(shown(None), asked);
        // ...but no interval check sees a stop's cut, whose end is not known
        // yet: the run that ran its duration failed `errors==0 abort_on_fail`
        // when an interval fell between the cut and the outcome.
        let stopping = Subject {
            alias: "diag",
            snapshot: &snap,
            mean_target: None,
            verdict: None,
            reader_closed: 0,
            cut_at_end: 0,
        };
        let t = [sourced("errors<=1 abort_on_fail", "--threshold #1")];
        let r = check_interval(&t, &[stopping]);
        assert!(r.len() == 1 && r[0].pass, "{r:?}");
    }

    /// Regression (audit p17, L12): a `queue`/`dispatch` threshold on an
    /// unpaced activity failed "none (no ops recorded)" after 100 ops. It still
    /// fails (it cannot be judged), saying why.
    #[test]
    fn a_split_threshold_on_an_unpaced_run_says_why_it_fails() {
        let full = snap();
        let subjects = [Subject {
            alias: "diag",
            snapshot: &full,
            mean_target: None,
            verdict: None,
            reader_closed: 0,
            cut_at_end: 0,
        }];
        let t = [
            sourced("queue.p99<1s", "--threshold #1"),
            sourced("dispatch.max<1s", "--threshold #2"),
        ];
        let r = check_final(&t, &subjects);
        for (r, expr) in r.iter().zip(["queue.p99<1s", "dispatch.max<1s"]) {
            assert_eq!(
                r.line(),
                format!("FAIL {expr} (diag): none ({UNPACED_SPLIT})")
            );
        }
    }

    /// Regression (audit p16, L5): a threshold on an alias no activity has
    /// was found only after the whole run.
    #[test]
    fn a_threshold_on_an_alias_the_run_does_not_start_is_refused_at_once() {
        let aliases = ["writes".to_string(), "reads".to_string()];
        let ok = [
            sourced("writes:errors<1", "--threshold #1"),
            sourced("errors<1", "--threshold #2"),
        ];
        assert_eq!(unknown_aliases(&ok, &aliases), Ok(()));
        let typo = [sourced("wrtes:errors<1", "w.yaml")];
        assert_eq!(
            unknown_aliases(&typo, &aliases),
            Err(
                "w.yaml: threshold `wrtes:errors<1` names activity `wrtes`, which this run \
                 does not start (it starts `writes`, `reads`); did you mean `writes`?"
                    .to_string()
            )
        );
    }

    #[test]
    fn xml_text_is_escaped_and_control_characters_replaced() {
        assert_eq!(
            xml_escape("a<b & \"c\" 'd' >\u{1}\n"),
            "a&lt;b &amp; &quot;c&quot; &apos;d&apos; &gt;\u{FFFD}\n"
        );
    }
}
