//! `paceline report LOG.hlog [--summary-json S.json] -o REPORT.html`: the HTML
//! report of a run, built afterwards from the files it wrote.

use super::super::args::{EXIT_BAD_INPUT, EXIT_OK, ReportArgs};
use super::{html, read};
use std::io::Write;

/// `paceline report`: exit 0 when the page is written, 2 when a file cannot be
/// read (the message names it, and the line) or the page cannot be written.
pub fn report(args: &ReportArgs) -> u8 {
    let data = match read::from_files(&args.hdr_log, args.summary_json.as_deref()) {
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
    eprintln!(
        "paceline: wrote {} ({} {})",
        args.output.display(),
        data.activities.len(),
        if data.activities.len() == 1 {
            "activity"
        } else {
            "activities"
        }
    );
    EXIT_OK
}
