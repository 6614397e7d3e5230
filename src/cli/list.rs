//! `paceline list`: the bundled activities and the drivers.

use super::args::EXIT_OK;
use super::bundled::{BUNDLED, description};

/// Prints the bundled activities with their descriptions, and the drivers.
pub fn list() -> u8 {
    println!("bundled activities (run one with `paceline run NAME`):");
    for (name, text) in BUNDLED {
        println!(
            "  {name:<12} {}",
            description(name, text).unwrap_or_default()
        );
    }
    let drivers = paceline::Drivers::builtin();
    let names: Vec<&str> = drivers.names().collect();
    println!("drivers: {}", names.join(", "));
    EXIT_OK
}
