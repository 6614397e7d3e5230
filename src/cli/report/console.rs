//! The console: interval lines, events and the summary, with a progress line
//! redrawn in place on a terminal.

use super::{ReportError, Sink};
use std::fmt;
use std::io::{self, IsTerminal, Write};
use std::path::PathBuf;

/// The console: interval lines, events, the summary and the progress line.
///
/// On a terminal the progress line is redrawn in place (`\r` and clear-line) and
/// cleared before any other line; elsewhere each progress line is a plain line. A
/// broken pipe (`paceline run … | head`) is not an error: output stops quietly.
pub struct Console {
    out: Sink,
    tty: bool,
    /// A progress line is on screen (terminal only) and must be cleared first.
    progress_shown: bool,
    /// The reader went away; everything further is dropped.
    closed: bool,
    /// How errors name it: `stdout` or `stderr`.
    name: &'static str,
    /// The terminal's width when set (tests); else asked at each use.
    width: Option<usize>,
}

impl fmt::Debug for Console {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Console")
            .field("tty", &self.tty)
            .field("closed", &self.closed)
            .finish()
    }
}

/// Clears the current terminal line.
const CLEAR_LINE: &str = "\r\x1b[2K";

impl Console {
    /// Standard output; redraws in place when it is a terminal.
    pub fn stdout() -> Self {
        Self::new(Box::new(io::stdout()), io::stdout().is_terminal())
    }

    /// Standard error, for runs whose ops write to standard output (the `stdout`
    /// driver): the reports then stay out of the op stream.
    pub fn stderr() -> Self {
        Self {
            name: "stderr",
            ..Self::new(Box::new(io::stderr()), io::stderr().is_terminal())
        }
    }

    /// Any writer; `tty` says whether to redraw the progress line in place.
    pub fn new(out: Sink, tty: bool) -> Self {
        Self {
            out,
            tty,
            progress_shown: false,
            closed: false,
            name: "stdout",
            width: None,
        }
    }

    /// A terminal of `width` columns, whatever the real one's (for tests). By
    /// default the width is asked of the terminal at each redraw.
    #[cfg(test)]
    pub fn with_width(mut self, width: usize) -> Self {
        self.width = Some(width);
        self
    }

    /// The terminal's width in columns (`terminal_width`).
    pub fn width(&self) -> usize {
        self.width.unwrap_or_else(terminal_width)
    }

    /// Whether this console redraws in place.
    pub fn is_terminal(&self) -> bool {
        self.tty
    }

    /// Writes `text` followed by a newline (clearing a progress line first).
    pub fn line(&mut self, text: &str) -> Result<(), ReportError> {
        let clear = std::mem::take(&mut self.progress_shown);
        let mut buf = String::with_capacity(text.len() + 8);
        if clear {
            buf.push_str(CLEAR_LINE);
        }
        // A server's text (an error, a reply) cannot act on the terminal.
        buf.push_str(&crate::cli::shown::terminal(text));
        buf.push('\n');
        self.write(&buf)
    }

    /// Draws the progress line: in place on a terminal, as a plain line elsewhere.
    pub fn progress(&mut self, text: &str) -> Result<(), ReportError> {
        if self.tty {
            self.progress_shown = true;
            let width = self.width();
            let text = crate::cli::shown::terminal(text);
            self.write(&format!("{CLEAR_LINE}{}", fit(&text, width)))
        } else {
            self.write(&format!("{}\n", crate::cli::shown::terminal(text)))
        }
    }

    /// Clears the progress line, if one is shown.
    pub fn clear_progress(&mut self) -> Result<(), ReportError> {
        if std::mem::take(&mut self.progress_shown) {
            self.write(CLEAR_LINE)
        } else {
            Ok(())
        }
    }

    fn write(&mut self, text: &str) -> Result<(), ReportError> {
        if self.closed {
            return Ok(());
        }
        match self
            .out
            .write_all(text.as_bytes())
            .and_then(|()| self.out.flush())
        {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(())
            }
            Err(source) => Err(ReportError::Write {
                path: PathBuf::from(self.name),
                source,
            }),
        }
    }
}

/// The width of the terminal on standard output (or standard error), in
/// columns; `COLUMNS`, then 80, when neither is a terminal.
pub fn terminal_width() -> usize {
    let size = rustix::termios::tcgetwinsize(std::io::stdout())
        .or_else(|_| rustix::termios::tcgetwinsize(std::io::stderr()));
    match size {
        Ok(w) if w.ws_col > 0 => usize::from(w.ws_col),
        _ => std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.parse().ok())
            .filter(|&c: &usize| c > 0)
            .unwrap_or(80),
    }
}

/// `text` cut to fit one line of `width` columns (one left free, so that the
/// cursor never wraps): a progress line redrawn in place leaves debris on the
/// lines above when it wraps (issue 24, item 17). A cut line ends in `…`.
pub fn fit(text: &str, width: usize) -> String {
    let room = width.saturating_sub(1).max(1);
    if text.chars().count() <= room {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(room.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// `text` wrapped at spaces into lines of at most `width` columns, the lines
/// after the first indented by `indent` (a verdict of 250 characters on a
/// terminal, issue 24, item 17). A word longer than a line stays whole.
pub fn wrap(text: &str, width: usize, indent: &str) -> String {
    let width = width.max(indent.chars().count() + 20);
    let mut out = String::new();
    let mut line = String::new();
    // Whether the line holds no word yet.
    let mut fresh = true;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        if !fresh && line.chars().count() + 1 + word.chars().count() > width {
            out.push_str(&line);
            out.push('\n');
            line = indent.to_string();
            fresh = true;
        }
        if !fresh {
            line.push(' ');
        }
        line.push_str(word);
        fresh = false;
    }
    out.push_str(&line);
    out
}
