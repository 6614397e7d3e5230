//! What a findmax search found: the max rate (achieved, at which step), what
//! limited it, and why; and how steps are numbered.

use super::{MAX_RATE, Search, StepResult};
use crate::cli::report::units;
use paceline::VerdictKind;

/// What a search found.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Found {
    /// The highest step that passed: its target, and the rate it achieved
    /// (no more than its target: an excess is a backlog from before the step
    /// being paid off, not capacity). `None` when no step passed.
    pub(super) max: Option<(f64, f64)>,
    /// `system`, `generator`, `slo`, or `unfinished` when the search stopped
    /// before its bounds met (Ctrl-C, the activity ended).
    pub(super) limited_by: &'static str,
    /// Why, in words.
    pub(super) why: String,
}

impl Found {
    /// The result without its reason: the page's headline.
    pub(super) fn headline(&self) -> String {
        let max = |(target, achieved): (f64, f64)| {
            format!(
                "{}/s (achieved at the {}/s step)",
                units::rate(achieved),
                units::rate(target)
            )
        };
        match (self.max, self.limited_by) {
            (Some(m), "unfinished") => {
                format!("max rate at least {}; the search did not finish", max(m))
            }
            (None, "unfinished") => {
                "no max rate: the search stopped before a step passed".to_string()
            }
            (Some(m), "generator") => format!(
                "max rate {}, limited by the generator, not the system: the system's own \
                 limit is higher than this run can show",
                max(m)
            ),
            (Some(m), "slo") => format!("max rate {}, limited by the response p99 SLO", max(m)),
            (Some(m), _) => format!("max rate {}, limited by the system", max(m)),
            (None, "slo") => {
                "no max rate: no step passed, limited by the response p99 SLO".to_string()
            }
            (None, "generator") => {
                "no max rate: no step passed, limited by the generator".to_string()
            }
            (None, _) => "no max rate: no step passed, limited by the system".to_string(),
        }
    }

    /// Why a search with no passing step found no max rate, and the fix that
    /// goes with what limited its last step (review A, p17 L9: one cause and
    /// "fix the system under test" for every search, a generator that could not
    /// keep up included): the exit-3 message. `lowest` is the lowest rate
    /// tried; `step` each step's length, in words; `min_ops` the fewest ops a
    /// step may run.
    pub(super) fn no_pass_message(&self, lowest: f64, step: &str, min_ops: u64) -> String {
        let fix = match self.limited_by {
            "generator" => {
                "the load generator, not the system under test, could not keep up: give it \
                 more room (more `threads` or `concurrency`, a less loaded machine), or \
                 lengthen `--step` to try lower rates"
            }
            "slo" => {
                "the response p99 SLO failed the steps: relax `--slo-p99`, lengthen `--step` \
                 to try lower rates, or make the system under test answer faster"
            }
            _ => {
                "the system under test failed the steps: relax what failed them \
                 (`--max-error-rate` for errors), lengthen `--step` to try lower rates, or \
                 fix the system under test"
            }
        };
        format!(
            "findmax: no step passed, down to {}/s (each step is {step}; a lower rate would \
             run fewer than {min_ops} ops in one), so there is no max rate (exit 3): {} ({}); \
             {fix}",
            units::rate(lowest),
            self.headline(),
            self.why
        )
    }

    /// The console's result line: the headline and why.
    pub(super) fn line(&self) -> String {
        format!("{} ({})", self.headline(), self.why)
    }
}

/// The result of `steps` searched by `search`; `stopped` says why the search
/// stopped early, if it did, and the number of the step it stopped in.
pub(super) fn conclude(
    search: &Search,
    steps: &[StepResult],
    stopped: Option<(&str, usize)>,
) -> Found {
    let max = search.pass.and_then(|p| {
        steps
            .iter()
            .rev()
            .find(|s| s.target == p && s.failed.is_none())
            .map(|s| (p, s.achieved.min(p)))
    });
    let found = |limited_by, why| Found {
        max,
        limited_by,
        why,
    };
    if let Some((stopped, n)) = stopped.filter(|_| search.next().is_some()) {
        let bounds = match (search.pass, search.fail) {
            (_, Some(f)) => format!("; the lowest rate that failed twice: {}/s", units::rate(f)),
            (Some(_), None) => "; no step had failed yet".to_string(),
            (None, None) => String::new(),
        };
        return found(
            "unfinished",
            format!("{stopped} during step {n}, before the search ended{bounds}"),
        );
    }
    let bound = search.fail.and_then(|f| {
        steps
            .iter()
            .rev()
            .find(|s| s.target == f && s.failed.is_some())
    });
    match bound {
        None if search.pass.is_some_and(|p| p >= MAX_RATE) => found(
            "generator",
            "the pacer's maximum rate passed: the search cannot go higher".to_string(),
        ),
        None => found(
            "system",
            "the search ended before a step failed".to_string(),
        ),
        Some(s) if s.slo_only => found(
            "slo",
            format!(
                "at {}/s: {}",
                units::rate(s.target),
                s.failed.as_deref().unwrap_or("")
            ),
        ),
        Some(s) if s.verdict.kind == VerdictKind::GeneratorBound => found(
            "generator",
            format!("at {}/s: {}", units::rate(s.target), s.verdict.reason),
        ),
        Some(s) => found(
            "system",
            format!(
                "at {}/s: {}; {}",
                units::rate(s.target),
                s.failed.as_deref().unwrap_or(""),
                s.verdict
            ),
        ),
    }
}

/// The number of the next step (or of the one being run when the search
/// stopped): retries keep the number of the step they repeat.
pub(super) fn step_number(steps: &[StepResult]) -> usize {
    steps.iter().filter(|s| !s.retry).count() + 1
}
