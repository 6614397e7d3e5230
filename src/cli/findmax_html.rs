//! `paceline findmax --html PATH`: the file, opened before the search, and the
//! page's data from the search's steps (the page itself is
//! [`crate::cli::report::findmax_page`]).

use super::{FindmaxArgs, Found, StepResult};
use crate::cli::args::{EXIT_BAD_INPUT, EXIT_RUN_FAILED};
use crate::cli::report::findmax_page::{self, FindmaxData, StepRow};
use std::fs::File;
use std::io::Write;
use std::path::Path;

/// Creates the page's file; exit 2 with a message when it cannot be.
pub(super) fn create(path: &Path) -> Result<File, u8> {
    File::create(path).map_err(|e| {
        eprintln!(
            "paceline: cannot create the HTML report {}: {e} (check that the directory \
             exists and is writable)",
            path.display()
        );
        EXIT_BAD_INPUT
    })
}

/// Writes the page for `data` to `f`; exit 1 with a message when it cannot.
pub(super) fn write(path: &Path, f: &mut File, data: &FindmaxData) -> Result<(), u8> {
    f.write_all(findmax_page::render(data).as_bytes())
        .map_err(|e| {
            eprintln!("paceline: cannot write {}: {e}", path.display());
            EXIT_RUN_FAILED
        })
}

/// The steps and the result for the `--html` page.
pub(super) fn page_data(
    alias: &str,
    args: &FindmaxArgs,
    steps: &[StepResult],
    found: &Found,
) -> FindmaxData {
    let mut n = 0;
    let steps = steps
        .iter()
        .map(|s| {
            if !s.retry {
                n += 1;
            }
            StepRow {
                label: format!("{n}{}", if s.retry { "*" } else { "" }),
                target: s.target,
                achieved: s.achieved,
                response_p99: s.response_p99,
                verdict: s.verdict.kind.as_str().to_string(),
                failed: s.failed.clone(),
            }
        })
        .collect();
    FindmaxData {
        alias: alias.to_string(),
        slo_p99: args.slo_p99.map(paceline::nanos::from_duration),
        steps,
        headline: found.headline(),
        why: found.why.clone(),
    }
}
