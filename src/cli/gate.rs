//! What a CI pipeline gates on: thresholds checked against each activity's
//! numbers (exit code 3 when one fails), and the JUnit XML report
//! (`--junit`): one test case per activity and per threshold.

use super::report::ActivityInfo;
use super::tracked::{ReportData, info_of, mean_target, verdict_on};
use paceline::thresholds::{Bound, Checked, Distribution, Metric, Observed, Op};
use paceline::{Control, Outcome as RunOutcome, Snapshot, Threshold, TimelineEntry, Verdict};
use serde_json::json;
use std::fmt::Write as _;

mod junit;
pub use junit::{CaseOf, RunCase, junit};

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
mod tests;
