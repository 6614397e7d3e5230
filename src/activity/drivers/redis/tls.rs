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
        .map_err(|e| {
            let authority = format!("{host}:{port}");
            let alert = e
                .get_ref()
                .and_then(|inner| inner.downcast_ref::<rustls::Error>())
                .and_then(|t| match t {
                    rustls::Error::AlertReceived(a) => Some(format!("{a:?}")),
                    _ => None,
                });
            Failure::Tls(match alert.as_deref() {
                Some(a @ ("CertificateRequired" | "HandshakeFailure")) => {
                    let said = format!("TLS with `{authority}` failed: received fatal alert: {a}");
                    match a {
                        "CertificateRequired" => client_certificate(&said),
                        // TLS 1.2 servers say this both for a cipher suite in
                        // common missing and for a client certificate missing.
                        _ => format!(
                            "{said}; check that the server offers TLS 1.2 or 1.3 with a cipher \
                             suite rustls supports (ECDHE with AES-GCM or ChaCha20-Poly1305), \
                             and that it does not ask for a client certificate \
                             (`tls-auth-clients yes`): the `redis` driver sends none"
                        ),
                    }
                }
                _ => http_tls::handshake_failure(&authority, &e),
            })
        })
}

/// The TLS alert a server sent after the handshake, read from the crate's
/// error text: with TLS 1.3 the client's handshake ends before the server
/// has checked the client's certificate, so a server that requires one
/// (redis-server's `tls-auth-clients yes`) refuses it on the first read, in
/// the crate's set-up or first command. The crate keeps the I/O error behind
/// a shared pointer whose `source()` skips it, so its text is what is left:
/// rustls writes an alert as `received fatal alert: NAME`.
pub(super) fn alert_after_handshake(e: &redis::RedisError) -> Option<String> {
    let text = e.to_string();
    let (_, rest) = text.split_once("received fatal alert: ")?;
    let name: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect();
    (!name.is_empty()).then_some(name)
}

/// Why a server that sent the TLS alert `alert` after the handshake refused
/// the connection, and the fix; `said` is what happened, with the address.
pub(super) fn refused_after_handshake(said: &str, alert: &str) -> String {
    match alert {
        "CertificateRequired" => client_certificate(said),
        _ => format!(
            "{said}: the server refused this client after the TLS handshake; look in its log \
             for why (a client certificate it requires, `tls-auth-clients yes`, is one: the \
             `redis` driver sends none)"
        ),
    }
}

/// The message for a server that requires a client certificate.
fn client_certificate(said: &str) -> String {
    format!(
        "{said}: the server requires a client certificate (redis-server's \
         `tls-auth-clients yes`), which the `redis` driver does not send (it has no \
         client-certificate option); set `tls-auth-clients no` or `optional` on the server"
    )
}
