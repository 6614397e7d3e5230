//! `coordinate=` on the command line, before anything runs: every shared schedule
//! a run names (the activity's, each scenario step's) must be on a Redis server
//! that answers, so that a wrong host or port, or a server that is down, exits 2
//! with one clear message before any activity of a scenario has started: as
//! `run::prepare_all` does for drivers. Joining the schedule itself (its spec, its
//! cycle range) is the engine's, at each activity's start.

use paceline::{Activity, Coordinate, ParamOverrides};
use std::time::Duration;

/// How long a server may take to accept the connection and answer `PING`.
pub const REACH_TIMEOUT: Duration = Duration::from_secs(2);

/// The shared schedules the runs of `activity` join, each once, in the order of
/// [`Activity::runs`], with what runs on it (`the activity`, `scenario s step 2`).
pub fn schedules(activity: &Activity, overrides: &ParamOverrides) -> Vec<(String, Coordinate)> {
    let mut out: Vec<(String, Coordinate)> = Vec::new();
    for (what, o) in activity.runs(overrides) {
        if let Some(c) = activity.params().with(&o).coordinate
            && !out.iter().any(|(_, seen)| seen.server() == c.server())
        {
            out.push((what.to_string(), c));
        }
    }
    out
}

/// Refuses thread scope on a shared schedule (`rate=100,thread` with
/// `coordinate=`), whose one rate is every member's total; then connects to
/// each schedule's server and sends `PING`, within [`REACH_TIMEOUT`] each; the
/// message for the first run refused or server that does not answer.
pub fn reach_all(activity: &Activity, overrides: &ParamOverrides) -> Result<(), String> {
    for (what, o) in activity.runs(overrides) {
        let p = activity.params().with(&o);
        if p.coordinate.is_some() {
            thread_scope_refused(p.rate.as_ref())
                .map_err(|why| format!("{}: {what}: {why}", activity.source()))?;
        }
    }
    for (what, c) in schedules(activity, overrides) {
        reach(&c).map_err(|why| format!("{}: {what}: {why}", activity.source()))?;
    }
    Ok(())
}

/// Why `spec` cannot run on a shared schedule: thread scope, which the shared
/// schedule would read as the total of every member's threads (audit p17, L10:
/// `rate=100,1.1,thread threads=2` ran at 100/s in total, without a word). The
/// engine refuses it too, at the join, for an embedding tool.
pub fn thread_scope_refused(spec: Option<&paceline::RateSpec>) -> Result<(), String> {
    match spec {
        Some(s) if s.scope_value() == paceline::Scope::Thread => Err(format!(
            "thread scope (`rate={},{},thread`) is not supported on a shared schedule, whose \
             one rate is the total of every member's threads: give that total in activity \
             scope (`rate=200` for 2 threads at 100/s each, the `thread` word left out), or \
             run without coordinate=",
            s.rate(),
            s.strictness_value()
        )),
        _ => Ok(()),
    }
}

/// Whether the server of `c` answers `PING`; if not, why, and how to fix it.
pub fn reach(c: &Coordinate) -> Result<(), String> {
    let answered = redis::Client::open(c.server())
        .and_then(|client| client.get_connection_with_timeout(REACH_TIMEOUT))
        .and_then(|mut conn| {
            conn.set_read_timeout(Some(REACH_TIMEOUT))?;
            redis::cmd("PING").query::<String>(&mut conn)
        });
    answered.map(|_| ()).map_err(|e| {
        // The schedule's URL, password hidden, without its name.
        let shown = c.to_string();
        let server = shown
            .strip_suffix(c.name())
            .and_then(|s| s.strip_suffix('/'))
            .unwrap_or(&shown);
        let fix = if e.is_io_error() {
            "start redis-server there, or fix the host and port in `coordinate=`"
        } else if matches!(
            e.kind(),
            redis::ErrorKind::Parse | redis::ErrorKind::UnexpectedReturnType
        ) {
            "what answered there does not speak Redis: fix the host and port in `coordinate=`"
        } else if e.kind() == redis::ErrorKind::AuthenticationFailed
            || matches!(e.code(), Some("NOAUTH" | "WRONGPASS"))
        {
            "the server wants a password: give it in `coordinate=` \
             (redis://:PASSWORD@HOST:PORT/NAME)"
        } else {
            "the server answered with an error: fix its settings, or name another in \
             `coordinate=`"
        };
        // One line, whatever the client's message holds.
        let e = e
            .to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        format!("cannot reach redis at {server} for the shared schedule {shown} ({e}); {fix}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use paceline::Drivers;

    fn load(text: &str) -> Activity {
        Drivers::builtin()
            .loader()
            .from_str(text, "s.yaml")
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn each_server_is_listed_once_with_the_first_run_on_it() {
        let a = load(
            "params: {driver: diag, coordinate: 'redis://127.0.0.1:1/a'}\nops: {o: x}\n\
             scenarios:\n  s:\n    - run cycles=5\n    - run coordinate=redis://127.0.0.1:1/b\n    \
             - run coordinate=redis://127.0.0.1:2/c\n",
        );
        let found = schedules(&a, &ParamOverrides::default());
        let names: Vec<&str> = found.iter().map(|(_, c)| c.name()).collect();
        assert_eq!(names, ["a", "c"], "{found:?}");
        assert!(found[1].0.contains("step"), "{found:?}");
        let alone = load("params: {driver: diag}\nops: {o: x}\n");
        assert!(schedules(&alone, &ParamOverrides::default()).is_empty());
    }

    #[test]
    fn a_server_that_is_not_there_is_named_with_the_fix_without_its_password() {
        // Port 1 on loopback: nothing listens, the connection is refused at once.
        let c =
            Coordinate::parse("redis://:secret@127.0.0.1:1/demo").unwrap_or_else(|e| panic!("{e}"));
        let started = std::time::Instant::now();
        let err = reach(&c).unwrap_err();
        assert!(started.elapsed() < REACH_TIMEOUT, "{:?}", started.elapsed());
        assert!(
            err.starts_with("cannot reach redis at redis://:***@127.0.0.1:1 for the shared schedule redis://:***@127.0.0.1:1/demo ("),
            "{err}"
        );
        assert!(
            err.ends_with("fix the host and port in `coordinate=`"),
            "{err}"
        );
        assert!(!err.contains("secret"), "{err}");
    }
}
