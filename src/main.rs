//! The `paceline` command: run activity files, check them, list the bundled ones,
//! calibrate this machine. All the work is in `cli`; this stays thin.

/// `eprintln!` that never panics: a line that cannot be written to standard
/// error (a closed pipe after `2>&1 | head`, a full disk) is dropped, so a
/// message can never kill the signal handler or the report loop. It shadows the
/// standard macro for the whole binary (defined before `mod cli`). A
/// server's text in the line cannot act on the terminal: control characters
/// are shown escaped (`cli::shown::terminal`, audit p17 L7).
macro_rules! eprintln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let line = format!($($arg)*);
        let _ = writeln!(std::io::stderr(), "{}", crate::cli::shown::terminal(&line));
    }};
}

mod cli;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    // NB5's options after `run` are mapped first (cli/nb5_opts.rs).
    let mut argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if argv.get(1).is_some_and(|c| c == "run") {
        match cli::nb5_opts::translate(argv) {
            Ok((mapped, notes)) => {
                for n in notes {
                    eprintln!("paceline: note: {n}");
                }
                argv = mapped;
            }
            Err(e) => {
                eprintln!("paceline: {e}");
                return ExitCode::from(cli::args::EXIT_BAD_INPUT);
            }
        }
    }
    let args = match cli::args::Cli::try_parse_from(argv) {
        Ok(a) => a,
        Err(e) => {
            let code = if e.use_stderr() {
                cli::args::EXIT_BAD_INPUT
            } else {
                cli::args::EXIT_OK
            };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    ExitCode::from(cli::main(args))
}
