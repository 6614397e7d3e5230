//! Connecting to PostgreSQL (plain, or TLS through rustls as `sslmode` says,
//! see `tls`) and naming what went wrong: error kinds for the metrics, and the load-time
//! messages that say how to fix a refused connection.

use crate::engine::OpError;
use rustls::ClientConfig;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::Socket;
#[allow(unused_imports)]
use tokio_postgres::config::SslMode;
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect, TlsStream};
use tokio_postgres::{Client, Config, NoTls};

/// Where and how to connect.
#[derive(Clone)]
pub(super) struct Target {
    pub(super) config: Config,
    /// The URL with its password written `***`.
    pub(super) shown: String,
    /// Set unless `sslmode=disable`.
    pub(super) tls: Option<Arc<ClientConfig>>,
    /// The `sslmode`.
    pub(super) mode: super::target::Mode,
    /// `sslrootcert` or `ca_file`, for messages.
    pub(super) root: Option<String>,
    pub(super) connect_timeout: Duration,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target").field("url", &self.shown).finish()
    }
}

/// A new connection, its protocol task spawned on the current runtime.
pub(super) async fn connect(t: &Target) -> Result<Client, tokio_postgres::Error> {
    let mut config = t.config.clone();
    config.connect_timeout(t.connect_timeout);
    match &t.tls {
        None => {
            let (client, conn) = config.connect(NoTls).await?;
            tokio::spawn(conn);
            Ok(client)
        }
        Some(tls) => {
            let (client, conn) = config.connect(MakeRustls(tls.clone())).await?;
            tokio::spawn(conn);
            Ok(client)
        }
    }
}

/// The error kind an op's failure counts under: `sql NN` by SQLSTATE class, or
/// `connect`, `io`, `timeout`, `bind`.
pub(super) fn op_error(e: &tokio_postgres::Error) -> OpError {
    if let Some(db) = e.as_db_error() {
        let code = db.code().code();
        return OpError::new(
            format!("sql {}", &code[..2.min(code.len())]),
            format!("SQLSTATE {code}: {}", db.message()),
        )
        .retryable(retryable(code));
    }
    let text = chain(e);
    let kind = if text.starts_with("error performing TLS") {
        "tls"
    } else if e.is_closed() || text.starts_with("error communicating") {
        "io"
    } else if text.starts_with("error connecting") || text.starts_with("authentication") {
        "connect"
    } else if text.starts_with("timeout") {
        "timeout"
    } else if text.starts_with("error serializing") || text.starts_with("expected ") {
        "bind"
    } else {
        "io"
    };
    OpError::new(kind, text)
}

/// Whether a statement that failed with SQLSTATE `code` can succeed when run
/// again with the same values: a serialization failure (`40001`) or a deadlock
/// (`40P01`), whose transaction the server rolled back so that it can be run
/// again. Not the rest of class 40: `40003` (statement completion unknown) may
/// have been applied, `40002` breaks a constraint again.
pub(super) fn retryable(code: &str) -> bool {
    matches!(code, "40001" | "40P01")
}

/// The error with its causes, `: `-separated.
pub(super) fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(c) = src {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        src = c.source();
    }
    s
}

/// Why the first connection at load failed, and how to fix it.
pub(super) fn explain(t: &Target, e: &tokio_postgres::Error) -> String {
    let user = t.config.get_user().unwrap_or("(none)");
    let db = t.config.get_dbname().unwrap_or(user);
    if let Some(dberr) = e.as_db_error() {
        let code = dberr.code().code();
        return match code {
            "28P01" | "28000" => format!(
                "param `url`: the server at {} refused user `{user}` (SQLSTATE {code}: {}); \
                 fix USER and PASSWORD in postgres://USER:PASSWORD@HOST:PORT/DB, or let \
                 the user in (pg_hba.conf)",
                t.shown,
                dberr.message()
            ),
            "3D000" => format!(
                "param `url`: {} names database `{db}`, which the server does not have; \
                 create it (`createdb {db}`) or name another after the port",
                t.shown
            ),
            _ => format!(
                "param `url`: the server at {} refused the connection (SQLSTATE {code}: {})",
                t.shown,
                dberr.message()
            ),
        };
    }
    let text = chain(e);
    if text.starts_with("error performing TLS") {
        let host = match t.config.get_hosts().first() {
            Some(tokio_postgres::config::Host::Tcp(h)) => h.clone(),
            _ => "localhost".into(),
        };
        match super::tls::rustls_error(e) {
            Some(r) => format!(
                "param `url`: {}: {}",
                t.shown,
                super::tls::explain(t.mode, &host, t.root.as_deref(), r)
            ),
            None if text.contains("does not support TLS") => format!(
                "param `url`: the server at {} does not offer TLS, which sslmode={} needs; \
                 turn `ssl = on` in its postgresql.conf, or use sslmode=prefer (TLS when \
                 offered) or sslmode=disable",
                t.shown,
                t.mode.name()
            ),
            None => format!(
                "param `url`: the TLS handshake (sslmode={}) with {} failed ({text}); check \
                 that the server serves TLS on that port",
                t.mode.name(),
                t.shown
            ),
        }
    } else if text.starts_with("timeout") {
        format!(
            "param `url`: no answer from {} within {:?} (`connect_timeout`); start \
             PostgreSQL there or fix HOST:PORT",
            t.shown, t.connect_timeout
        )
    } else {
        format!(
            "param `url`: cannot reach PostgreSQL at {} ({text}); start the server or \
             fix HOST:PORT in the URL",
            t.shown
        )
    }
}

/// rustls for tokio-postgres: the `ClientConfig` the `http` driver builds from
/// `ca_file` and `tls_verify`.
struct MakeRustls(Arc<ClientConfig>);

struct RustlsConnect {
    config: Arc<ClientConfig>,
    name: rustls::pki_types::ServerName<'static>,
}

/// A TLS session over TCP.
pub(super) struct RustlsStream(tokio_rustls::client::TlsStream<Socket>);

impl MakeTlsConnect<Socket> for MakeRustls {
    type Stream = RustlsStream;
    type TlsConnect = RustlsConnect;
    type Error = String;

    fn make_tls_connect(&mut self, domain: &str) -> Result<RustlsConnect, String> {
        Ok(RustlsConnect {
            config: self.0.clone(),
            name: super::super::http_tls::server_name(domain)?,
        })
    }
}

type Handshake = Pin<Box<dyn Future<Output = Result<RustlsStream, io::Error>> + Send>>;

impl TlsConnect<Socket> for RustlsConnect {
    type Stream = RustlsStream;
    type Error = io::Error;
    type Future = Handshake;

    fn connect(self, stream: Socket) -> Handshake {
        Box::pin(async move {
            tokio_rustls::TlsConnector::from(self.config)
                .connect(self.name, stream)
                .await
                .map(RustlsStream)
        })
    }
}

impl TlsStream for RustlsStream {
    fn channel_binding(&self) -> ChannelBinding {
        // No tls-server-end-point binding: SCRAM runs without `-PLUS`.
        ChannelBinding::none()
    }
}

impl AsyncRead for RustlsStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl AsyncWrite for RustlsStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}
