//! The `--control ADDR` HTTP endpoint: change rates, threads and state while a run
//! goes on.
//!
//! | method | path                              | body                               |
//! |--------|-----------------------------------|------------------------------------|
//! | GET    | `/metrics`                        | (OpenMetrics text, see [`super::metrics`]) |
//! | GET    | `/activities`                     | (JSON status of every activity)    |
//! | GET    | `/activities/{alias}`             | (JSON status of one)               |
//! | PUT    | `/activities/{alias}/rate`        | `5000`, `5000,1.0`, `20000 over 30s` |
//! | PUT    | `/activities/{alias}/threads`     | `8`                                |
//! | POST   | `/activities/{alias}/pause`       |                                    |
//! | POST   | `/activities/{alias}/resume`      |                                    |
//! | POST   | `/activities/{alias}/stop`        |                                    |
//!
//! Success is 200 with a one-line plain-text confirmation (JSON for GET, OpenMetrics
//! for `/metrics`). A bad request is a 4xx with a plain message saying what was
//! wrong and how to fix it, and changes nothing: 400 bad value, 403 a change asked
//! of the read-only endpoint, 404 unknown alias or route, 405 wrong method (with
//! `Allow`), 409 a change the activity's state forbids; and 408, 411, 413, 431 or
//! 503 past the limits below.
//!
//! `HEAD` is answered on every GET route as GET is, without the body. Path
//! segments are percent-decoded after the split (`/activities/my%20run`, and
//! `%2F` for a `/` in an alias); a bad `%` escape is a 400.
//!
//! One request per connection (the answer closes it). The server binds to loopback
//! unless told otherwise, since anyone who reaches it can stop the run.
//!
//! `--metrics ADDR` starts the same server [read-only](Access::ReadOnly): the two
//! GET routes above and `GET /metrics`; the others answer 403 and change nothing.
//!
//! # Limits: a slow or hostile client cannot stall control or exit
//!
//! | limit | value | past it |
//! |---|---|---|
//! | connections served at once | [`MAX_CONNECTIONS`](server::MAX_CONNECTIONS) | 503, closed at once |
//! | request head (line and headers) | [`MAX_HEAD`](server::MAX_HEAD) bytes, [`MAX_HEADERS`](server::MAX_HEADERS) headers | 431 |
//! | body | [`MAX_BODY`](server::MAX_BODY) bytes, with `Content-Length` | 413; chunked: 411 |
//! | the whole request | [`REQUEST_TIMEOUT`](server::REQUEST_TIMEOUT) from accept | 408 |
//! | writing the answer | [`REQUEST_TIMEOUT`](server::REQUEST_TIMEOUT) | the connection is dropped |
//! | shutdown | the accept thread at once; connections up to [`SHUTDOWN_WAIT`](server::SHUTDOWN_WAIT) | left to their own timeouts |
//!
//! Each connection has its own thread, so a client that sends slowly delays no
//! other request; `Expect: 100-continue` is answered.

mod routes;
mod server;
#[cfg(test)]
mod tests;

use paceline::RateSpec;
use std::error::Error;
use std::fmt;
use std::time::Duration;

pub use server::ControlServer;

/// Why the target refused a change; each maps to an HTTP status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ControlError {
    /// No activity has this alias (404). `GET /activities` lists the aliases.
    UnknownAlias(String),
    /// The value is not acceptable (400); the text says why and what would be.
    BadValue(String),
    /// The activity's state forbids the change, such as resuming a stopped
    /// activity (409); the text says why.
    Conflict(String),
}

impl ControlError {
    /// The HTTP status code for this error.
    pub fn status(&self) -> u16 {
        match self {
            Self::UnknownAlias(_) => 404,
            Self::BadValue(_) => 400,
            Self::Conflict(_) => 409,
        }
    }
}

impl fmt::Display for ControlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownAlias(alias) => write!(
                f,
                "no activity named `{alias}`: GET /activities lists the activities"
            ),
            Self::BadValue(why) | Self::Conflict(why) => f.write_str(why),
        }
    }
}

impl Error for ControlError {}

/// What the endpoint controls: the run's activities. The run loop implements it
/// over its activity handles; every method is called from the server's thread.
pub trait ControlTarget: Send + Sync {
    /// The status of every activity as JSON: an array of objects, each with at
    /// least an `"alias"` field (so `GET /activities/{alias}` can pick one).
    fn activities(&self) -> serde_json::Value;
    /// Sets the rate spec of `alias` now.
    fn set_rate(&self, alias: &str, spec: RateSpec) -> Result<(), ControlError>;
    /// Moves the rate of `alias` to `to` over `over` (more than zero).
    fn ramp(&self, alias: &str, to: RateSpec, over: Duration) -> Result<(), ControlError>;
    /// Sets the number of worker threads of `alias` (at least 1).
    fn set_threads(&self, alias: &str, n: usize) -> Result<(), ControlError>;
    /// Sets the most ops in flight of `alias` (its async runner's `concurrency`).
    /// By default, refused: a target that cannot change it says so.
    fn set_concurrency(&self, alias: &str, n: usize) -> Result<(), ControlError> {
        let _ = n;
        Err(ControlError::BadValue(format!(
            "`{alias}`: concurrency cannot be changed here"
        )))
    }
    /// Pauses `alias`: its workers wait until resumed.
    fn pause(&self, alias: &str) -> Result<(), ControlError>;
    /// Resumes a paused `alias`.
    fn resume(&self, alias: &str) -> Result<(), ControlError>;
    /// Stops `alias` for good.
    fn stop(&self, alias: &str) -> Result<(), ControlError>;
    /// Every activity's numbers as an OpenMetrics exposition (see
    /// [`super::metrics::encode`]), for `GET /metrics`.
    fn metrics(&self) -> String;
    /// The same numbers in the Prometheus protobuf exposition (see
    /// [`super::metrics::encode_protobuf`]), for a `GET /metrics` whose
    /// `Accept` header prefers it; `None` serves the text instead. By
    /// default, `None`.
    fn metrics_protobuf(&self) -> Option<Vec<u8>> {
        None
    }
}

/// What a server lets its clients do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Every route: read the run and change it (`--control`).
    Full,
    /// Read only: `GET /metrics`, `GET /activities`, `GET /activities/{alias}`;
    /// a route that changes the run answers 403 (`--metrics`).
    ReadOnly,
}

impl Access {
    /// The flag that starts a server with this access, for messages.
    fn flag(self) -> &'static str {
        match self {
            Self::Full => "--control",
            Self::ReadOnly => "--metrics",
        }
    }
}
