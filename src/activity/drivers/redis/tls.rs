//! `rediss://` over the same rustls configuration as the `http` and
//! `postgres` drivers (params `ca_file` and `tls_verify`), rather than the
//! `redis` crate's own TLS set-up.
//!
//! Why our own: the crate reads the platform's root certificates again for
//! every connection it opens (tens of milliseconds each, in a worker's first
//! connect and in every reconnect), it has no `tls_verify: false` without a
//! second verifier that also skips the handshake's signatures, and its
//! certificate errors carry no advice. Here the TCP connection and the
//! handshake are ours ([`open`]); the crate's multiplexed connection then runs
//! on the TLS stream (AUTH, SELECT and the commands, as on a plain one).

use super::super::http_tls;
use redis::aio::MultiplexedConnection;
use rustls::ClientConfig;
use std::sync::Arc;
use std::time::Duration;

/// Why a connection could not be opened.
#[derive(Debug)]
pub(super) enum Failure {
    /// The `redis` crate's error: the server refused or broke the connection.
    Redis(redis::RedisError),
    /// TCP could not connect.
    Connect(std::io::Error),
    /// The TLS handshake failed; what it means and how to fix it.
    Tls(String),
    /// Not done within `connect_timeout`.
    Timeout,
}

/// The host and port of a `rediss://` client, or `None` for `redis://`.
pub(super) fn tls_addr(client: &redis::Client) -> Option<(String, u16)> {
    match client.get_connection_info().addr() {
        redis::ConnectionAddr::TcpTls { host, port, .. } => Some((host.clone(), *port)),
        _ => None,
    }
}

/// A multiplexed connection to `host:port` over TLS with `config`, its
/// handshake and the server's set-up (AUTH, SELECT) done within `budget`,
/// and the guard of the task that owns its TLS stream.
pub(super) async fn open(
    client: &redis::Client,
    (host, port): (&str, u16),
    config: &Arc<ClientConfig>,
    budget: Duration,
    settings: redis::AsyncConnectionConfig,
) -> Result<(MultiplexedConnection, AbortOnDrop), Failure> {
    let authority = format!("{host}:{port}");
    let name = http_tls::server_name(host).map_err(Failure::Tls)?;
    let connect = async {
        let tcp = tokio::net::TcpStream::connect((host, port))
            .await
            .map_err(Failure::Connect)?;
        // Commands are small and each waits for its reply: no Nagle delay.
        let _ = tcp.set_nodelay(true);
        let stream = tokio_rustls::TlsConnector::from(config.clone())
            .connect(name, tcp)
            .await
            .map_err(|e| Failure::Tls(http_tls::handshake_failure(&authority, &e)))?;
        let info = client.get_connection_info().redis_settings();
        let (con, driver) = MultiplexedConnection::new_with_config(info, stream, settings)
            .await
            .map_err(Failure::Redis)?;
        // The task that reads and writes the socket, aborted by its guard
        // (see [`AbortOnDrop`]).
        let task = tokio::spawn(driver);
        Ok((con, AbortOnDrop(task.abort_handle())))
    };
    tokio::time::timeout(budget, connect)
        .await
        .unwrap_or(Err(Failure::Timeout))
}

/// Aborts the task that owns a `rediss://` connection's TLS stream when
/// dropped, closing its socket at once, as the crate does for a connection
/// it opened itself (`redis://`).
///
/// The rule: one guard per connection, held beside every clone of it (the
/// driver's `Con`), so the socket closes when the last clone is dropped, not
/// before (an op still in flight on a dropped connection keeps it until its
/// own end) and not after. Without it the task ends only when its sink has
/// closed, and the crate's sink before 1.2.1 closes only once every command
/// sent has its reply: a connection dropped after a timed-out `BLPOP q 0`
/// kept its socket and the server's client until the server answered
/// (`a_timed_out_blocking_command_leaves_no_server_client_behind_on_rediss_as_on_redis`,
/// tests/redis_tls.rs). A graceful close (`close_notify`) is not owed: the
/// commands in flight have no one left to answer.
#[derive(Debug)]
pub(super) struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
