//! The engine: exactly-once cycles through thread changes and pauses, error
//! policies, panics, stop latency, control events, and exact times on the manual
//! clock.
//!
//! One test binary, a module per behaviour: `threads` (exactly-once through
//! thread changes), `pacing` (slots, waits, rates and ramps on the manual clock),
//! `pause` (paused time, rate 0, set-up), `errors` (policies, panics, fatal
//! errors), `lifecycle` (stop, aliases, configs, several activities) and
//! `recording` (snapshots, the timeline, per-op figures); `workloads` holds the
//! ops they drive.

#[path = "../support/takes.rs"]
mod takes;

mod errors;
mod lifecycle;
mod pacing;
mod pause;
mod paused_changes;
mod recording;
mod threads;
mod workloads;
