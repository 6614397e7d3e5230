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
/// handshake and the server's set-up (AUTH, SELECT) done within `budget`.
pub(super) async fn open(
    client: &redis::Client,
    (host, port): (&str, u16),
    config: &Arc<ClientConfig>,
    budget: Duration,
    settings: redis::AsyncConnectionConfig,
) -> Result<MultiplexedConnection, Failure> {
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
        // The task that reads and writes the socket. It ends when the socket
        // breaks, or once the connection and its clones are dropped AND every
        // command sent on it has its reply: the crate aborts only a task it
        // spawned itself (`redis://`), and its sink's close waits for the
        // replies in flight. So a connection dropped after a timeout on a
        // blocking command (`BLPOP q 0`) keeps its socket, this task and the
        // server's client until the server answers or the run's runtime ends
        // (docs/drivers.md, `timeout`).
        tokio::spawn(driver);
        Ok(con)
    };
    tokio::time::timeout(budget, connect)
        .await
        .unwrap_or(Err(Failure::Timeout))
}
