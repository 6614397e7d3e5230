//! Running activity text on the `postgres` driver against a test cluster
//! (`postgres.rs`): what the postgres test files share.
#![allow(dead_code)]

use paceline::{Drivers, Engine, Outcome, ParamOverrides, Snapshot, StartError};

use super::postgres::PgServer;

/// Runs `yaml` (with `URL` set to the server's) to its end.
pub fn run(pg: &PgServer, yaml: &str) -> Snapshot {
    run_yaml_url(yaml, &pg.url())
}

/// Runs `yaml` with `URL` set to `url`, to its end.
pub fn run_yaml_url(yaml: &str, url: &str) -> Snapshot {
    let d = Drivers::builtin();
    let a = d
        .loader()
        .from_str(&yaml.replace("URL", url), "pg.yaml")
        .unwrap_or_else(|e| panic!("{e}"));
    let run = d
        .start(&Engine::new(), &a, &ParamOverrides::default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(run.wait(), Outcome::Completed);
    run.snapshot()
}

/// Starts `yaml`, which must be refused; the message.
pub fn refused(yaml: &str, url: &str) -> String {
    let d = Drivers::builtin();
    let a = d
        .loader()
        .from_str(&yaml.replace("URL", url), "pg.yaml")
        .unwrap_or_else(|e| panic!("{e}"));
    match d.start(&Engine::new(), &a, &ParamOverrides::default()) {
        Err(e @ StartError::Driver(_)) => e.to_string(),
        Err(e) => panic!("refused for another reason: {e}"),
        Ok(_) => panic!("started"),
    }
}
