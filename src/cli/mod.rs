//! The binary's layer: argument parsing, reporters, calibration and the control
//! endpoint. It imports the library only as `paceline::...`; `main.rs` stays thin.

pub mod args;
pub mod bundled;
pub mod calibrate;
pub mod check;
pub mod compare;
pub mod control;
pub mod findmax;
mod finish;
pub mod gate;
pub mod list;
pub mod load;
pub mod meta;
pub mod metrics;
pub mod nb5_opts;
pub mod out;
pub mod report;
pub mod run;
#[cfg(feature = "redis")]
pub mod shared;
pub mod shown;
pub mod target;
mod tracked;

use args::{Cli, Command};

/// Runs the command; returns the exit code.
pub fn main(cli: Cli) -> u8 {
    match cli.command {
        Command::Run(args) => run::run(args),
        Command::Findmax(args) => findmax::findmax(args),
        Command::Check(args) => match args.file_and_params() {
            Ok(i) => check::check(i.file.as_deref(), &i.params),
            Err(e) => {
                eprintln!("paceline: {e}");
                args::EXIT_BAD_INPUT
            }
        },
        Command::List => list::list(),
        Command::Calibrate => {
            let mut out = out::Stdout::new();
            out.line(&calibrate::calibrate(calibrate::Budget::FULL).to_string());
            out.exit(args::EXIT_OK)
        }
        Command::Report(args) => report::command::report(&args),
        Command::Compare(args) => compare::compare(&args),
    }
}
