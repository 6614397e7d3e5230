//! The value parsers clap calls for `run`'s positional inputs and options, and
//! the settings derived from them (the stop grace, the waiting presets).

use super::RunInput;
use paceline::Waiting;
use paceline::nanos::parse_duration_or_seconds;
use std::net::{Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

/// A `run` input: `NAME=VALUE` is a parameter, anything else a file.
pub fn parse_run_input(text: &str) -> Result<RunInput, String> {
    if text.contains('=') {
        let (k, v) = parse_param(text)?;
        Ok(RunInput::Param(k, v))
    } else {
        Ok(RunInput::File(PathBuf::from(text)))
    }
}

/// Parses `NAME=VALUE`: the name is letters, digits, `_`, `-` and `.`; the value
/// is everything after the first `=` (it may be empty or hold more `=`).
pub fn parse_param(text: &str) -> Result<(String, String), String> {
    let Some((name, value)) = text.split_once('=') else {
        return Err(format!(
            "malformed parameter `{text}`: write NAME=VALUE, such as cycles=1000"
        ));
    };
    let name = name.trim();
    if name.is_empty() {
        return Err(format!(
            "malformed parameter `{text}`: the name before `=` is empty; write NAME=VALUE, \
             such as cycles=1000"
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        return Err(format!(
            "malformed parameter `{text}`: the name may not contain `{c}`; names are letters, \
             digits, `_`, `-` and `.`"
        ));
    }
    Ok((name.to_string(), value.to_string()))
}

/// A report interval: a duration of at least 1 ms; a bare number is seconds, as
/// in a scenario's `wait: 1`.
pub(super) fn parse_interval(text: &str) -> Result<Duration, String> {
    let d = parse_duration_or_seconds(text).map_err(|e| e.to_string())?;
    if d < Duration::from_millis(1) {
        return Err(format!(
            "report interval `{text}` is too short: use at least 1ms, such as 1s or 10s"
        ));
    }
    Ok(d)
}

/// A run's duration: more than 0; a bare number is seconds.
pub(super) fn parse_run_duration(text: &str) -> Result<Duration, String> {
    let d = parse_duration_or_seconds(text).map_err(|e| e.to_string())?;
    if d.is_zero() {
        return Err(format!(
            "duration `{text}` would end the run before it starts: give more than 0, such as \
             30s or 10m"
        ));
    }
    Ok(d)
}

/// `--stop-timeout`'s default, the engine's own stop grace
/// ([`paceline::DEFAULT_STOP_GRACE`]; a test pins that they agree).
pub const STOP_TIMEOUT_DEFAULT: &str = "10s";

/// The engine's stop grace for a `--stop-timeout` of `timeout`: a little less
/// (a tenth, at most 250 ms), so that the async runner's ops in flight are
/// cancelled and counted before the report loop stops waiting for them, and the
/// process still exits within `timeout`. One setting bounds a stop (issue 21).
pub fn stop_grace_for(timeout: Duration) -> Duration {
    timeout.saturating_sub((timeout / 10).min(Duration::from_millis(250)))
}

/// A stop timeout: a duration, 0 allowed (write the reports at once).
pub(super) fn parse_stop_timeout(text: &str) -> Result<Duration, String> {
    paceline::nanos::parse_duration_or_seconds(text).map_err(|e| e.to_string())
}

/// The waiting presets, by the names `--waiting` takes.
pub(super) const WAITING: &[(&str, Waiting)] = &[
    ("adaptive", Waiting::adaptive()),
    ("sleep", Waiting::sleep()),
    ("spin_sleep", Waiting::spin_sleep()),
    ("spin", Waiting::spin()),
];

/// A waiting preset by name.
pub(super) fn parse_waiting(text: &str) -> Result<Waiting, String> {
    WAITING
        .iter()
        .find(|(n, _)| *n == text.trim())
        .map(|(_, w)| *w)
        .ok_or_else(|| {
            format!(
                "unknown waiting strategy `{text}`: use `adaptive`, `sleep`, `spin_sleep` or `spin`"
            )
        })
}

/// A control address: `PORT` (loopback), `localhost:PORT`, `IP:PORT` or `HOST:PORT`.
pub fn parse_control_addr(text: &str) -> Result<SocketAddr, String> {
    let t = text.trim();
    let how = "write PORT, IP:PORT or HOST:PORT, such as 7878 or 127.0.0.1:7878";
    if let Ok(port) = t.trim_start_matches(':').parse::<u16>() {
        return Ok(SocketAddr::from((Ipv4Addr::LOCALHOST, port)));
    }
    if let Ok(addr) = t.parse::<SocketAddr>() {
        return Ok(addr);
    }
    if let Some(port) = t.strip_prefix("localhost:") {
        let port: u16 = port
            .parse()
            .map_err(|_| format!("`{text}` is not an address: {how}"))?;
        return Ok(SocketAddr::from((Ipv4Addr::LOCALHOST, port)));
    }
    if !t.contains(':') {
        return Err(format!("`{text}` is not an address: {how}"));
    }
    t.to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| format!("cannot resolve `{text}`: {how}"))
}
