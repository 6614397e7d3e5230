//! Running activity text through the built-in drivers to its end, with `URL` in
//! the text set to a test server's: what the driver test files share
//! (`pg_run.rs` and `redis_run.rs` name the file for their driver), or started
//! and watched while it runs (a server lost mid-run).
#![allow(dead_code)]

use std::time::{Duration, Instant};

use paceline::{Activity, Control, Drivers, Engine, Outcome, ParamOverrides, Snapshot, StartError};

/// The built-in drivers and `yaml`, read as the file `name` with `URL` set to
/// `url` (or a panic saying why it does not load).
fn load(name: &str, yaml: &str, url: &str) -> (Drivers, Activity) {
    load_text(name, &yaml.replace("URL", url))
}

/// The built-in drivers and `yaml`, read as the file `name` as it is.
fn load_text(name: &str, yaml: &str) -> (Drivers, Activity) {
    let d = Drivers::builtin();
    let a = d
        .loader()
        .from_str(yaml, name)
        .unwrap_or_else(|e| panic!("{e}\n{yaml}"));
    (d, a)
}

/// Starts `yaml`, read as the file `name` as it is; the run, under way.
pub fn start_text(name: &str, yaml: &str) -> Control {
    let (d, a) = load_text(name, yaml);
    d.start(&Engine::new(), &a, &ParamOverrides::default())
        .unwrap_or_else(|e| panic!("{e}"))
}

/// Runs `yaml`, read as the file `name`, with `URL` set to `url`, to its end.
pub fn run(name: &str, yaml: &str, url: &str) -> Snapshot {
    let (d, a) = load(name, yaml, url);
    let run = d
        .start(&Engine::new(), &a, &ParamOverrides::default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(run.wait(), Outcome::Completed);
    run.snapshot()
}

/// Starts `yaml`, read as the file `name`, with `URL` set to `url`: the driver
/// must refuse it; the message.
pub fn refused(name: &str, yaml: &str, url: &str) -> String {
    let (d, a) = load(name, yaml, url);
    match d.start(&Engine::new(), &a, &ParamOverrides::default()) {
        Err(e @ StartError::Driver(_)) => e.to_string(),
        Err(e) => panic!("refused for another reason: {e}"),
        Ok(_) => panic!("started"),
    }
}

/// Starts `yaml`, read as the file `name`, with `URL` set to `url`; the run,
/// under way.
pub fn start(name: &str, yaml: &str, url: &str) -> Control {
    start_text(name, &yaml.replace("URL", url))
}

/// All that `run` has done so far (`snapshot` takes what happened since the
/// last one; `totals` sums them).
pub fn totals(run: &Control) -> Snapshot {
    run.snapshot();
    run.totals()
}

/// Polls `run`'s totals every 20 ms until `what` holds of them or `within`
/// has passed (real time); whether it held.
pub fn wait_for(run: &Control, within: Duration, what: &dyn Fn(&Snapshot) -> bool) -> bool {
    let deadline = Instant::now() + within;
    while !what(&totals(run)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    what(&totals(run))
}
