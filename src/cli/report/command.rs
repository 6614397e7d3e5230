//! `paceline report LOG.hlog... [--summary-json S.json] -o REPORT.html`: the
//! HTML report of a run, built afterwards from the files it wrote, or of a fleet
//! from its processes' logs merged.

use super::super::args::{EXIT_BAD_INPUT, EXIT_OK, ReportArgs};
use super::{html, merge, read};
use std::io::Write;

/// `paceline report`: exit 0 when the page is written, 2 when a file cannot be
/// read (the message names it, and the line), the logs cannot be merged, or the
/// page cannot be written. Several logs (or a directory of them) give one report
/// of the fleet ([`merge`]).
pub fn report(args: &ReportArgs) -> u8 {
    let read = merge::expand(&args.hdr_logs).and_then(|logs| match &logs[..] {
        [one] => read::from_files(one, args.summary_json.as_deref()).map(|d| (d, None)),
        many => merge::from_files(many).map(|(d, note)| (d, Some(note))),
    });
    if args.hdr_logs.len() > 1 || read.as_ref().is_ok_and(|(_, n)| n.is_some()) {
        if let Some(s) = &args.summary_json {
            eprintln!(
                "paceline: --summary-json {} describes one process, and these logs are                  several: leave it out (the merged report takes its counts and rates from                  the logs), or report one log with its summary",
                s.display()
            );
            return EXIT_BAD_INPUT;
        }
    }
    let (data, note) = match read {
        Ok(d) => d,
        Err(e) => {
            eprintln!("paceline: {e}");
            return EXIT_BAD_INPUT;
        }
    };
    let page = html::render(&data);
    let written = std::fs::File::create(&args.output).and_then(|mut f| {
        f.write_all(page.as_bytes())?;
        f.flush()
    });
    if let Err(e) = written {
        eprintln!(
            "paceline: cannot write {}: {e} (check that the directory exists and is writable, \
             or pass another -o)",
            args.output.display()
        );
        return EXIT_BAD_INPUT;
    }
    let activities = format!(
        "{} {}",
        data.activities.len(),
        if data.activities.len() == 1 {
            "activity"
        } else {
            "activities"
        }
    );
    match note {
        None => eprintln!("paceline: wrote {} ({activities})", args.output.display()),
        Some(n) => eprintln!(
            "paceline: wrote {} ({activities}; {} logs merged into {} windows of {} s, {} \
             partial: not every log covers them)",
            args.output.display(),
            n.logs,
            n.windows,
            super::units::seconds((n.window * 1e9).round() as u64),
            n.partial
        ),
    }
    EXIT_OK
}
