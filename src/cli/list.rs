//! `paceline list`: the bundled activities and the drivers.

use super::args::EXIT_OK;
use super::bundled::{BUNDLED, description};

/// Prints the bundled activities with their descriptions, and the drivers.
pub fn list() -> u8 {
    let mut out = super::out::Stdout::new();
    out.line("bundled activities (run one with `paceline run NAME`):");
    for (name, text) in BUNDLED {
        out.line(&format!(
            "  {name:<12} {}",
            description(name, text).unwrap_or_default()
        ));
    }
    let drivers = paceline::Drivers::builtin();
    let names: Vec<&str> = drivers.names().collect();
    out.line(&format!("drivers: {}", names.join(", ")));
    out.exit(EXIT_OK)
}
