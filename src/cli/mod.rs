//! The binary's layer: argument parsing, reporters, calibration and the control
//! endpoint. It imports the library only as `paceline::...`; `main.rs` stays thin.

// wired into main() by the run command
#![allow(dead_code)]

pub mod args;
pub mod calibrate;
pub mod control;
pub mod duration;
pub mod report;
