//! Opening a connection: each resolved address in turn within the connect
//! budget, and what to say when none accepts.

use super::shared::{address_failed, address_share};
use super::{Deadline, Failure, expired};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Tries each address in turn (see [`Conn::connect`](super::Conn::connect)):
/// each but the last gets half of the budget still left (at least 10 ms), the
/// last all of it ([`address_share`], as the async client's do); none past the
/// request's deadline.
pub(super) fn connect_any(
    addrs: &[SocketAddr],
    authority: &str,
    budget: Duration,
    started: Instant,
    deadline: &Deadline,
) -> Result<TcpStream, Failure> {
    let mut last = None;
    for (i, addr) in addrs.iter().enumerate() {
        let left = budget.saturating_sub(started.elapsed());
        let share = address_share(i, addrs.len(), left).min(deadline.left().unwrap_or_default());
        if share.is_zero() {
            break;
        }
        match TcpStream::connect_timeout(addr, share) {
            Ok(s) => return Ok(s),
            Err(e) if expired(&e) => last = Some(address_failed(addr, addrs.len(), share, None)),
            Err(e) => last = Some(address_failed(addr, addrs.len(), share, Some(e))),
        }
    }
    let spent = started.elapsed() >= budget;
    Err(Failure::Connect(connect_failure(
        authority,
        addrs.len(),
        last,
        spent,
        budget,
    )))
}

/// What [`connect_any`] says when no address accepted: `last`, the last
/// address's failure; `spent`, whether the budget ran out.
pub(crate) fn connect_failure(
    authority: &str,
    addrs: usize,
    last: Option<String>,
    spent: bool,
    budget: Duration,
) -> String {
    match last {
        None if addrs == 0 => format!("`{authority}` resolves to no address"),
        Some(m) if !spent => format!("cannot connect to `{authority}`: {m}"),
        // One address: its own message would say the same again.
        Some(_) if addrs == 1 => format!(
            "`{authority}` did not accept a connection within {}",
            shown(budget)
        ),
        _ => format!(
            "`{authority}` did not accept a connection within {} ({})",
            shown(budget),
            last.as_deref().unwrap_or("no time left")
        ),
    }
}

/// A duration as a person writes it: `250µs`, `500ms`, `2s`, `1.5s`. From a
/// millisecond up it is rounded to the millisecond, so a budget less the
/// nanoseconds already spent reads as it was set (`500ms`, not `499.99995ms`).
pub(crate) fn shown(d: Duration) -> String {
    if d < Duration::from_millis(1) {
        return format!("{}µs", d.as_micros());
    }
    let ms = (d.as_nanos() + 500_000) / 1_000_000;
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms % 1000 == 0 {
        format!("{}s", ms / 1000)
    } else {
        format!("{}s", ms as f64 / 1000.0)
    }
}
