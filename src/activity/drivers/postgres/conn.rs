//! Connecting to PostgreSQL (plain, or TLS through rustls as `sslmode` says,
//! see `tls`) and naming what went wrong: error kinds for the metrics, and the load-time
//! messages that say how to fix a refused connection.

use super::wire::{self, WireError};
use crate::engine::OpError;
use rustls::ClientConfig;
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres::Config;

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

/// A new connection, through its startup and authentication, within
/// `connect_timeout`.
pub(super) async fn connect(t: &Target) -> Result<wire::Opening, WireError> {
    use super::target::Mode;
    let p = wire::Params {
        config: &t.config,
        tls: t.tls.as_ref(),
        tls_required: matches!(t.mode, Mode::Require | Mode::VerifyCa | Mode::VerifyFull),
    };
    tokio::time::timeout(t.connect_timeout, wire::open(&p))
        .await
        .unwrap_or(Err(WireError::Timeout))
}

/// The error kind an op's failure counts under: `sql NN` by SQLSTATE class, or
/// `connect`, `io`, `timeout`, `tls`.
pub(super) fn op_error(e: &WireError) -> OpError {
    let kind = match e {
        WireError::Db { code, message, .. } => {
            return OpError::new(
                format!("sql {}", &code[..2.min(code.len())]),
                format!("SQLSTATE {code}: {message}"),
            )
            .retryable(retryable(code));
        }
        WireError::Tls(_) | WireError::NoTls => "tls",
        WireError::Connect(_) | WireError::Auth(_) | WireError::NotPostgres(_) => "connect",
        WireError::Timeout => "timeout",
        WireError::Io(_) | WireError::Closed | WireError::Protocol(_) => "io",
    };
    OpError::new(kind, chain(e))
}

/// A worker's connection that could not be opened, as the op error that ends
/// its start: `connect` (or `timeout`, `tls`, `sql 28` for a refused login),
/// and for a server with no connection slot left (SQLSTATE 53300, audit L10)
/// how many this run opens and the fix.
pub(super) fn open_error(shared: &super::Shared, e: &WireError) -> OpError {
    let err = op_error(e);
    if let WireError::Db { code, message, .. } = e
        && code == "53300"
    {
        let p = shared.plan.params();
        let (n, each) = if shared.pipeline {
            (p.threads, "one per worker thread (`pipeline: true`)")
        } else {
            (
                p.concurrency.unwrap_or(p.threads),
                "one per op in flight (`concurrency`)",
            )
        };
        return OpError::new(
            "connect",
            format!(
                "the server at {} has no connection slot left (SQLSTATE 53300: {message}); \
                 this run opens {n} connections, {each}: lower `concurrency`, set \
                 `pipeline: true` (a worker's ops share its one connection), or raise the \
                 server's max_connections",
                shared.target.shown
            ),
        );
    }
    if !matches!(err.kind(), "timeout" | "tls") && !err.kind().starts_with("sql 28") {
        return OpError::new("connect", err.message().to_string());
    }
    err
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

/// The URL's first HOST:PORT (its socket directory for a Unix socket).
fn host_port(t: &Target) -> String {
    let port = t.config.get_ports().first().copied().unwrap_or(5432);
    match t.config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(h)) if h.contains(':') => format!("[{h}]:{port}"),
        Some(tokio_postgres::config::Host::Tcp(h)) => format!("{h}:{port}"),
        #[cfg(unix)]
        Some(tokio_postgres::config::Host::Unix(d)) => format!("{}:{port}", d.display()),
        None => format!("localhost:{port}"),
    }
}

/// Why the first connection at load failed, and how to fix it.
pub(super) fn explain(t: &Target, e: &WireError) -> String {
    let user = t.config.get_user().unwrap_or("(none)");
    let db = t.config.get_dbname().unwrap_or(user);
    if let WireError::Db { code, message, .. } = e {
        return match code.as_str() {
            "28P01" | "28000" => format!(
                "param `url`: the server at {} refused user `{user}` (SQLSTATE {code}: {}); \
                 fix USER and PASSWORD in postgres://USER:PASSWORD@HOST:PORT/DB, or let \
                 the user in (pg_hba.conf)",
                t.shown, message
            ),
            "3D000" => format!(
                "param `url`: {} names database `{db}`, which the server does not have; \
                 create it (`createdb {db}`) or name another after the port",
                t.shown
            ),
            _ => format!(
                "param `url`: the server at {} refused the connection (SQLSTATE {code}: {})",
                t.shown, message
            ),
        };
    }
    let text = chain(e);
    if let WireError::NotPostgres(got) = e {
        return format!(
            "param `url`: {} did not answer as a PostgreSQL server (got {got}): check the \
             url's host and port",
            host_port(t)
        );
    }
    if let WireError::Auth(why) = e {
        return format!(
            "param `url`: the server at {} refused to let user `{user}` in: {why}; give the \
             password in postgres://USER:PASSWORD@HOST:PORT/DB",
            t.shown
        );
    }
    if matches!(e, WireError::Tls(_) | WireError::NoTls) {
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
            None if matches!(e, WireError::NoTls) => format!(
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
    } else if matches!(e, WireError::Timeout) {
        format!(
            "param `url`: no answer from {} within {:?} (`connect_timeout`); {}",
            t.shown,
            t.connect_timeout,
            raw_at_fix(t).unwrap_or("start PostgreSQL there or fix HOST:PORT")
        )
    } else {
        format!(
            "param `url`: cannot reach PostgreSQL at {} ({text}); {}",
            t.shown,
            raw_at_fix(t).unwrap_or("start the server or fix HOST:PORT in the URL")
        )
    }
}

/// The fix when the host the URL parser took holds `@`: a raw `@` in the
/// password ended it early (the parser, as libpq, takes the user info to the
/// first `@`), and the rest went to the host.
fn raw_at_fix(t: &Target) -> Option<&'static str> {
    t.config
        .get_hosts()
        .iter()
        .any(|h| matches!(h, tokio_postgres::config::Host::Tcp(h) if h.contains('@')))
        .then_some(
            "the host read from the URL holds `@`: the user info ends at the first `@`, \
             so a password holding `@` must write it percent-encoded, as `%40` \
             (postgres://USER:p%40ss@HOST:PORT/DB)",
        )
}
