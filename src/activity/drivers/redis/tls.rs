//! `rediss://` over the same rustls configuration as the `http` and
//! `postgres` drivers (params `ca_file` and `tls_verify`), rather than the
//! `redis` crate's own TLS set-up.
//!
//! Why our own: the crate reads the platform's root certificates again for
//! every connection it opens (tens of milliseconds each, in a worker's first
//! connect and in every reconnect), it has no `tls_verify: false` without a
//! second verifier that also skips the handshake's signatures, and its
//! certificate errors carry no advice. Here the TCP connection and the
//! handshake are ours ([`handshake`], called by `con.rs`); the crate's
//! multiplexed connection then runs on the TLS stream (AUTH, SELECT and the
//! commands, as on a plain one).

use super::super::http_tls;
use rustls::ClientConfig;
use std::sync::Arc;

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

/// The host and port of a client, and whether it is `rediss://`; `None`
/// for an address that is not TCP (the URL's scheme rules it out).
pub(super) fn addr(client: &redis::Client) -> Option<(String, u16, bool)> {
    match client.get_connection_info().addr() {
        redis::ConnectionAddr::TcpTls { host, port, .. } => Some((host.clone(), *port, true)),
        redis::ConnectionAddr::Tcp(host, port) => Some((host.clone(), *port, false)),
        _ => None,
    }
}

/// The TLS stream over `tcp` to `host:port` with `config`, its handshake
/// done (the caller bounds it by `connect_timeout`).
pub(super) async fn handshake(
    tcp: tokio::net::TcpStream,
    (host, port): (&str, u16),
    config: &Arc<ClientConfig>,
) -> Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>, Failure> {
    let name = http_tls::server_name(host).map_err(Failure::Tls)?;
    tokio_rustls::TlsConnector::from(config.clone())
        .connect(name, tcp)
        .await
        .map_err(|e| Failure::Tls(http_tls::handshake_failure(&format!("{host}:{port}"), &e)))
}
