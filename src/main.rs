//! The `paceline` command: run activity files, check them, list the bundled ones,
//! calibrate this machine. All the work is in `cli`; this stays thin.

mod cli;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = match cli::args::Cli::try_parse() {
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
