//! Running activity text on the `redis` driver against a test server
//! (`redis.rs`): what the redis test files share (the run itself is
//! `drive.rs`'s, the file named `r.yaml`).
#![allow(dead_code)]

use paceline::Snapshot;

use super::drive;

/// Runs `yaml` with `URL` set to `url`, to its end.
pub fn run(url: &str, yaml: &str) -> Snapshot {
    drive::run("r.yaml", yaml, url)
}

/// Starts `yaml` with `URL` set to `url`, which must be refused; the message.
pub fn refused(url: &str, yaml: &str) -> String {
    drive::refused("r.yaml", yaml, url)
}
