//! What `paceline findmax` prints and writes besides the HTML page: the line
//! per step as it ends, the final table, and the summary JSON. Nothing here
//! runs during a step.

use super::found::Found;
use super::{FindmaxArgs, StepResult};
use crate::cli::report::json::verdict_json;
use crate::cli::report::units;
use serde_json::json;
use std::time::Duration;

/// One step's line, printed as it ends.
pub(super) fn step_line(n: usize, s: &StepResult) -> String {
    format!(
        "step {n}{}: {}/s: achieved {}/s, response p99 {}, errors {}, {}: {}",
        if s.retry { " again" } else { "" },
        units::rate(s.target),
        units::rate(s.achieved),
        units::duration(s.response_p99),
        s.errors,
        s.verdict.kind,
        match &s.failed {
            None => "pass".to_string(),
            Some(why) => format!("fail ({why})"),
        }
    )
}

/// The final table: one row per step, in the order run.
pub(super) fn table(steps: &[StepResult]) -> String {
    let mut t = format!(
        "{:>4}  {:>10}  {:>10}  {:>12}  {:>7}  {:<16}  {}\n",
        "step", "target", "achieved", "response p99", "errors", "verdict", "pass"
    );
    let mut n = 0;
    for s in steps {
        if !s.retry {
            n += 1;
        }
        t.push_str(&format!(
            "{:>4}  {:>10}  {:>10}  {:>12}  {:>7}  {:<16}  {}\n",
            format!("{n}{}", if s.retry { "*" } else { "" }),
            format!("{}/s", units::rate(s.target)),
            format!("{}/s", units::rate(s.achieved)),
            units::duration(s.response_p99),
            s.errors,
            s.verdict.kind.as_str(),
            if s.failed.is_none() { "yes" } else { "no" }
        ));
    }
    if steps.iter().any(|s| s.retry) {
        t.push_str("(* a failed step run again: a step fails only when it fails twice)\n");
    }
    t.trim_end().to_string()
}

pub(super) fn summary_json(
    found: &Found,
    steps: &[StepResult],
    args: &FindmaxArgs,
    settle: Duration,
) -> serde_json::Value {
    let steps: Vec<serde_json::Value> = steps
        .iter()
        .map(|s| {
            json!({
                "target": s.target,
                "achieved": s.achieved,
                "response_p99_ns": s.response_p99,
                "ops": s.ops,
                "errors": s.errors,
                "verdict": verdict_json(&s.verdict),
                "pass": s.failed.is_none(),
                "failed_because": s.failed,
                "retry": s.retry,
            })
        })
        .collect();
    json!({
        // The achieved rate of the highest passing step (null when none
        // passed), and that step's target.
        "max_rate": found.max.map(|m| m.1),
        "max_rate_target": found.max.map(|m| m.0),
        "limited_by": found.limited_by,
        "why": found.why,
        "step_seconds": args.step.as_secs_f64(),
        "settle_seconds": settle.as_secs_f64(),
        "slo_p99_ns": args.slo_p99.map(paceline::nanos::from_duration),
        "max_error_rate": args.max_error_rate,
        "steps": steps,
    })
}
