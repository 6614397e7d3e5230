//! Standard output for the commands that print a result (`list`, `check`,
//! `calibrate`, `findmax`): a closed pipe (`| head -1`) ends the output quietly,
//! any other failure (a full disk) is remembered and turns the exit code into 1.
//!
//! Standard error never fails a command: the crate's `eprintln!` (in `main.rs`)
//! drops a line that cannot be written instead of panicking.

use super::args::EXIT_RUN_FAILED;
use std::io::{self, Write};

/// Standard output, written line by line and flushed after each.
#[derive(Debug, Default)]
pub struct Stdout {
    /// The reader went away: everything further is dropped.
    closed: bool,
    /// The first failure other than a closed pipe.
    failed: Option<io::Error>,
}

impl Stdout {
    /// Standard output, nothing written yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Writes `text` and a newline.
    pub fn line(&mut self, text: &str) {
        self.write(&format!("{text}\n"));
    }

    /// Writes `text`, with any character that would act on a terminal shown
    /// escaped (`super::shown::terminal`).
    pub fn write(&mut self, text: &str) {
        if self.closed || self.failed.is_some() {
            return;
        }
        let text = super::shown::terminal(text);
        let mut out = io::stdout().lock();
        match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => self.closed = true,
            Err(e) => self.failed = Some(e),
        }
    }

    /// Whether nothing more can be shown: the reader has gone away (a closed
    /// pipe) or a write failed (a full disk).
    pub fn is_gone(&self) -> bool {
        self.closed || self.failed.is_some()
    }

    /// The exit code: `code`, or 1 (with a message) if something could not be
    /// written for any reason but a closed pipe.
    pub fn exit(self, code: u8) -> u8 {
        match self.failed {
            Some(e) => {
                eprintln!("paceline: cannot write to standard output: {e}");
                code.max(EXIT_RUN_FAILED)
            }
            None => code,
        }
    }
}
