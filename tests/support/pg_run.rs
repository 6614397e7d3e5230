//! Running activity text on the `postgres` driver against a test cluster
//! (`postgres.rs`): what the postgres test files share (the run itself is
//! `drive.rs`'s, the file named `pg.yaml`).
#![allow(dead_code)]

use paceline::Snapshot;

use super::drive;
use super::postgres::PgServer;

/// Runs `yaml` (with `URL` set to the server's) to its end.
pub fn run(pg: &PgServer, yaml: &str) -> Snapshot {
    run_yaml_url(yaml, &pg.url())
}

/// Runs `yaml` with `URL` set to `url`, to its end.
pub fn run_yaml_url(yaml: &str, url: &str) -> Snapshot {
    drive::run("pg.yaml", yaml, url)
}

/// Starts `yaml`, which must be refused; the message.
pub fn refused(yaml: &str, url: &str) -> String {
    drive::refused("pg.yaml", yaml, url)
}
