//! The PostgreSQL wire protocol, spoken by the driver itself over a
//! worker's socket: what pgbench does per transaction (one write of
//! Bind+Execute+Sync, one read of the answer), with no task or channel
//! between the op and its socket.
//!
//! Split by what runs where: this file opens a connection (TCP or a Unix
//! socket, TLS as `sslmode` says, startup, authentication: trust, cleartext,
//! md5, SCRAM-SHA-256) and prepares statements, the slow path run once per
//! connection; [`hot`] sends the ops and reads their answers; [`frame`] cuts
//! the server's bytes into messages.
//!
//! | fast path | invariant | pinned by |
//! |---|---|---|
//! | one write per op | Bind+Execute+Sync go out in one buffer (the server reads each op in one read) | `hot::tests::an_op_is_one_write_and_its_answer_one_read` |
//! | Bind written in place | an op's messages are appended to the connection's buffer in one piece, fixed-width parts stored in place (for fixed-width values one `memmove`, the statement's name), byte for byte what `postgres_protocol`'s encoders write | `bind::tests::the_bind_message_is_the_protocol_crates_byte_for_byte` |
//! | one read per answer | an answer sent in one piece is taken from one read | `hot::tests::an_op_is_one_write_and_its_answer_one_read` (the client's reads counted) |
//! | buffers reused | answers are counted, never built into rows; the write buffer, the read buffer and the op queue keep their capacity from op to op (no growth after the first op; other allocations are not counted) | `hot::tests::an_op_is_one_write_and_its_answer_one_read` |
//! | idle close seen before the op, at no system call and no waker | an idle connection is read before an op is sent on it; the answer's last read was short, so tokio already knows the socket drained and answers `WouldBlock` without a read unless the reactor saw bytes since (a server's goodbye); over TCP or a Unix socket with `try_read`, which registers no waker (no lock, no waker swapped out and back by the next op) | `hot::tests::a_close_while_idle_is_seen_before_the_next_op`, `hot::tests::the_idle_check_registers_no_waker`, `postgres::tests::a_connection_closed_by_the_server_while_idle_is_reopened_by_the_next_op` |
//! | an op alone on its connection keeps no waker | without `pipeline` an op takes its connection for itself (`Conn::one_op_at_a_time`), so it is the only reader of its socket: tokio's registration holds its waker, its slot keeps no clone, and reading its own answer wakes no one (with `pipeline`, an op's own waker is out of its slot while it reads, so that too wakes no one) | `hot::tests::an_op_reading_its_own_answer_wakes_no_one_and_a_lone_one_keeps_no_waker`; handing answers over with `pipeline`: `hot::tests::an_error_mid_pipeline_fails_only_its_op` and the pipelined tests in `postgres::tests` |
//! | a tag's count read in place | a CommandComplete's count is its last word's digits read byte by byte, equal to `str::parse::<u64>` of that word (0 when it is none) | `frame::tests::a_tags_count_is_its_last_word_parsed` |
//! | answers matched in order | each op's answer ends at its ReadyForQuery | `hot::tests::an_error_mid_pipeline_fails_only_its_op` |
//! | integer keys bound directly | an integer value in range of an `int2`/`int4`/`int8` parameter is bound by `bind::int_param` (no detour through `bind`'s general match), giving the value `bind` gives; anything else goes to `bind` | `bind::tests::an_integer_in_range_takes_the_integer_path`, `bind::tests::binding_into_a_reused_slot_is_binding_afresh` |

pub(super) mod frame;
pub(super) mod hot;
mod stream;

use bytes::BytesMut;
use frame::Frames;
use postgres_protocol::authentication::md5_hash;
use postgres_protocol::authentication::sasl::{ChannelBinding, SCRAM_SHA_256, ScramSha256};
use postgres_protocol::message::frontend;
use postgres_types::{Kind, Type};
use std::fmt;
use std::io;
pub(super) use stream::Stream;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_postgres::config::Host;

/// Why a connection or an op on it failed.
#[derive(Debug)]
pub(super) enum WireError {
    /// The server's ErrorResponse.
    Db {
        /// SQLSTATE, five characters.
        code: String,
        message: String,
        /// `FATAL` or `PANIC`: the server closes the connection.
        fatal: bool,
    },
    /// The socket could not be opened.
    Connect(io::Error),
    /// The connection did not open within `connect_timeout`.
    Timeout,
    /// The TLS handshake failed (the rustls error is its source).
    Tls(io::Error),
    /// `sslmode` needs TLS and the server does not offer it.
    NoTls,
    /// The server asked for an authentication method or a password this
    /// client does not have.
    Auth(String),
    /// Reading or writing failed.
    Io(io::Error),
    /// The server closed the connection.
    Closed,
    /// A message this client does not expect there (COPY, ...).
    Protocol(String),
    /// What answered is not a PostgreSQL server (a wrong port: redis,
    /// HTTP, ...): what it said.
    NotPostgres(String),
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Db { code, message, .. } => write!(f, "SQLSTATE {code}: {message}"),
            Self::Connect(e) => write!(f, "error connecting to server: {e}"),
            Self::Timeout => write!(f, "timeout waiting for server"),
            Self::Tls(e) => write!(f, "error performing TLS handshake: {e}"),
            Self::NoTls => write!(
                f,
                "error performing TLS handshake: server does not support TLS"
            ),
            Self::Auth(m) => write!(f, "authentication error: {m}"),
            Self::Io(e) => write!(f, "error communicating with the server: {e}"),
            Self::Closed => write!(f, "connection closed"),
            Self::Protocol(m) => write!(f, "unexpected message from the server: {m}"),
            Self::NotPostgres(got) => {
                write!(f, "did not answer as a PostgreSQL server (got {got})")
            }
        }
    }
}

impl std::error::Error for WireError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Connect(e) | Self::Tls(e) | Self::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl WireError {
    /// A copy, for every op a broken connection fails.
    pub(super) fn again(&self) -> Self {
        let io = |e: &io::Error| io::Error::new(e.kind(), e.to_string());
        match self {
            Self::Db {
                code,
                message,
                fatal,
            } => Self::Db {
                code: code.clone(),
                message: message.clone(),
                fatal: *fatal,
            },
            Self::Connect(e) => Self::Connect(io(e)),
            Self::Timeout => Self::Timeout,
            Self::Tls(e) => Self::Tls(io(e)),
            Self::NoTls => Self::NoTls,
            Self::Auth(m) => Self::Auth(m.clone()),
            Self::Io(e) => Self::Io(io(e)),
            Self::Closed => Self::Closed,
            Self::Protocol(m) => Self::Protocol(m.clone()),
            Self::NotPostgres(m) => Self::NotPostgres(m.clone()),
        }
    }
}

/// What a connection needs from the run's settings.
pub(super) struct Params<'a> {
    pub(super) config: &'a tokio_postgres::Config,
    /// `None`: plain. With `prefer`/`allow` (not `required`), plain when the
    /// server offers no TLS.
    pub(super) tls: Option<&'a std::sync::Arc<rustls::ClientConfig>>,
    pub(super) tls_required: bool,
}

/// A prepared statement: its name on the connection, the server's types
/// for its parameters, and whether it returns rows.
#[derive(Debug, Clone)]
pub(super) struct Prepared {
    pub(super) name: String,
    pub(super) params: Vec<Type>,
    pub(super) returns_rows: bool,
}

/// A connection being opened: the socket, and the bytes read and not yet
/// taken.
pub(super) struct Opening {
    stream: Stream,
    frames: Frames,
    out: BytesMut,
    /// Whether startup ended (ReadyForQuery): a bad message after it is a
    /// protocol error, before it a sign that no PostgreSQL answered.
    started: bool,
}

/// Opens a connection to the first host that answers, as libpq tries them
/// in order; the last host's error otherwise.
pub(super) async fn open(p: &Params<'_>) -> Result<Opening, WireError> {
    let hosts = p.config.get_hosts();
    let ports = p.config.get_ports();
    let mut last = WireError::Connect(io::Error::new(io::ErrorKind::InvalidInput, "no host"));
    let addrs = p.config.get_hostaddrs();
    for (i, host) in hosts.iter().enumerate() {
        let port = ports
            .get(i)
            .or_else(|| ports.first())
            .copied()
            .unwrap_or(5432);
        match open_one(p, host, addrs.get(i).copied(), port).await {
            Ok(c) => return Ok(c),
            Err(e @ (WireError::Db { .. } | WireError::Auth(_))) => return Err(e),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// One host: at its `hostaddr` when the URL gives one (the host name then
/// only names the server for TLS), as libpq does.
async fn open_one(
    p: &Params<'_>,
    host: &Host,
    addr: Option<std::net::IpAddr>,
    port: u16,
) -> Result<Opening, WireError> {
    let (stream, name) = match host {
        Host::Tcp(h) => {
            let tcp = match addr {
                Some(a) => tokio::net::TcpStream::connect((a, port)).await,
                None => tokio::net::TcpStream::connect((h.as_str(), port)).await,
            }
            .map_err(WireError::Connect)?;
            tcp.set_nodelay(true).map_err(WireError::Connect)?;
            (Stream::Tcp(tcp), h.clone())
        }
        #[cfg(unix)]
        Host::Unix(dir) => {
            let path = dir.join(format!(".s.PGSQL.{port}"));
            let unix = tokio::net::UnixStream::connect(&path)
                .await
                .map_err(WireError::Connect)?;
            (Stream::Unix(unix), "localhost".to_string())
        }
    };
    let stream = match (p.tls, stream) {
        (Some(tls), Stream::Tcp(mut tcp)) => {
            let mut req = BytesMut::new();
            frontend::ssl_request(&mut req);
            tcp.write_all(&req).await.map_err(WireError::Io)?;
            let mut answer = [0u8; 1];
            tcp.read_exact(&mut answer).await.map_err(WireError::Io)?;
            if !matches!(answer[0], b'S' | b'N') {
                // What else it said, if it came with it.
                let mut rest = [0u8; 48];
                let n = tcp.try_read(&mut rest).unwrap_or(0);
                let mut got = answer.to_vec();
                got.extend_from_slice(&rest[..n]);
                return Err(not_postgres(&got, "to the SSLRequest"));
            }
            match answer[0] {
                b'S' => {
                    let server = super::super::http_tls::server_name(&name)
                        .map_err(|m| WireError::Tls(io::Error::other(m)))?;
                    let tls = tokio_rustls::TlsConnector::from(tls.clone())
                        .connect(server, tcp)
                        .await
                        .map_err(WireError::Tls)?;
                    Stream::Tls(Box::new(tls))
                }
                _ if p.tls_required => return Err(WireError::NoTls),
                _ => Stream::Tcp(tcp),
            }
        }
        (_, s) => s,
    };
    let mut c = Opening {
        stream,
        frames: Frames::default(),
        out: BytesMut::with_capacity(256),
        started: false,
    };
    c.startup(p.config).await?;
    Ok(c)
}

impl Opening {
    /// Sends `self.out` and empties it.
    async fn send(&mut self) -> Result<(), WireError> {
        self.stream
            .write_all(&self.out)
            .await
            .map_err(WireError::Io)?;
        self.stream.flush().await.map_err(WireError::Io)?;
        self.out.clear();
        Ok(())
    }

    /// The next whole message: its tag and body (async messages skipped).
    async fn next(&mut self) -> Result<(u8, Vec<u8>), WireError> {
        loop {
            if let Err(what) = self.frames.check() {
                return Err(if self.started {
                    WireError::Protocol(what)
                } else {
                    not_postgres(self.frames.head(48), "")
                });
            }
            if let Some((tag, body)) = self.frames.next_message() {
                if matches!(tag, b'N' | b'S' | b'A') {
                    continue;
                }
                return Ok((tag, body.to_vec()));
            }
            let n = self.frames.read_from(&mut self.stream).await?;
            if n == 0 {
                return Err(WireError::Closed);
            }
        }
    }

    /// Reads until at least one byte is held.
    async fn fill(&mut self) -> Result<(), WireError> {
        while self.frames.is_empty() {
            if self.frames.read_from(&mut self.stream).await? == 0 {
                return Err(WireError::Closed);
            }
        }
        Ok(())
    }

    async fn startup(&mut self, config: &tokio_postgres::Config) -> Result<(), WireError> {
        let user = config.get_user().unwrap_or("");
        let mut params: Vec<(&str, &str)> = vec![("client_encoding", "UTF8"), ("user", user)];
        if let Some(db) = config.get_dbname() {
            params.push(("database", db));
        }
        if let Some(app) = config.get_application_name() {
            params.push(("application_name", app));
        }
        if let Some(o) = config.get_options() {
            params.push(("options", o));
        }
        frontend::startup_message(params, &mut self.out).map_err(WireError::Io)?;
        self.send().await?;
        self.frames.set_max(frame::MAX_STARTUP_MESSAGE);
        let mut first = true;
        let password = config.get_password();
        let need = |what: &str| {
            password.ok_or_else(|| {
                WireError::Auth(format!(
                    "the server asks for a password ({what}) and the URL gives none"
                ))
            })
        };
        let mut scram: Option<ScramSha256> = None;
        // Whether the server proved it knows the password (SASLFinal),
        // once SCRAM began.
        let mut proved = false;
        loop {
            if first {
                // A PostgreSQL server answers a startup message with an
                // authentication request, an error, or a protocol version
                // it takes.
                self.fill().await?;
                let tag = self.frames.head(1).first().copied().unwrap_or(0);
                if !matches!(tag, b'R' | b'E' | b'v') {
                    return Err(not_postgres(self.frames.head(48), ""));
                }
                first = false;
            }
            let (tag, body) = self.next().await?;
            match tag {
                b'R' => {
                    let kind = be_i32(&body, 0)?;
                    match kind {
                        0 if scram.is_some() && !proved => {
                            return Err(WireError::Auth(
                                "the server ended SCRAM-SHA-256 without its proof \
                                 (SASLFinal) that it knows the password; refusing it"
                                    .into(),
                            ));
                        }
                        0 => {}
                        3 => {
                            frontend::password_message(need("cleartext")?, &mut self.out)
                                .map_err(WireError::Io)?;
                            self.send().await?;
                        }
                        5 => {
                            let salt: [u8; 4] = body
                                .get(4..8)
                                .and_then(|s| s.try_into().ok())
                                .ok_or_else(|| WireError::Protocol("short md5 salt".into()))?;
                            let hash = md5_hash(user.as_bytes(), need("md5")?, salt);
                            frontend::password_message(hash.as_bytes(), &mut self.out)
                                .map_err(WireError::Io)?;
                            self.send().await?;
                        }
                        10 => {
                            let offered = body[4..]
                                .split(|b| *b == 0)
                                .any(|m| m == SCRAM_SHA_256.as_bytes());
                            if !offered {
                                return Err(WireError::Auth(
                                    "the server offers no SASL mechanism this client has \
                                     (SCRAM-SHA-256)"
                                        .into(),
                                ));
                            }
                            let s = ScramSha256::new(need("scram-sha-256")?, unbound());
                            frontend::sasl_initial_response(
                                SCRAM_SHA_256,
                                s.message(),
                                &mut self.out,
                            )
                            .map_err(WireError::Io)?;
                            self.send().await?;
                            scram = Some(s);
                        }
                        11 => {
                            let s = scram.as_mut().ok_or_else(|| {
                                WireError::Protocol("SASL continue before SASL".into())
                            })?;
                            s.update(&body[4..])
                                .map_err(|e| WireError::Auth(e.to_string()))?;
                            frontend::sasl_response(s.message(), &mut self.out)
                                .map_err(WireError::Io)?;
                            self.send().await?;
                        }
                        12 => {
                            let s = scram.as_mut().ok_or_else(|| {
                                WireError::Protocol("SASL final before SASL".into())
                            })?;
                            s.finish(&body[4..]).map_err(|e| {
                                WireError::Auth(format!("the server's SCRAM proof: {e}"))
                            })?;
                            proved = true;
                        }
                        other => {
                            return Err(WireError::Auth(format!(
                                "the server asks for authentication method {other}, which this \
                                 client does not support (trust, password, md5, scram-sha-256 \
                                 are)"
                            )));
                        }
                    }
                }
                b'E' => return Err(frame::error_of(&body)),
                b'K' => {}
                b'Z' => {
                    self.started = true;
                    self.frames.set_max(frame::MAX_MESSAGE);
                    return Ok(());
                }
                other => {
                    return Err(WireError::Protocol(format!(
                        "message `{}` during startup",
                        other as char
                    )));
                }
            }
        }
    }

    /// Prepares `sql` as statement `name`: the server's parameter types
    /// (a type outside the built-in table looked up in `pg_type`) and
    /// whether it returns rows.
    pub(super) async fn prepare(&mut self, name: &str, sql: &str) -> Result<Prepared, WireError> {
        frontend::parse(name, sql, std::iter::empty(), &mut self.out).map_err(WireError::Io)?;
        frontend::describe(b'S', name, &mut self.out).map_err(WireError::Io)?;
        frontend::sync(&mut self.out);
        self.send().await?;
        let mut oids = Vec::new();
        let mut returns_rows = false;
        let mut error = None;
        loop {
            let (tag, body) = self.next().await?;
            match tag {
                b't' => {
                    let n = be_i16(&body, 0)? as usize;
                    for i in 0..n {
                        oids.push(be_i32(&body, 2 + 4 * i)? as u32);
                    }
                }
                b'T' => returns_rows = true,
                b'E' if error.is_none() => error = Some(frame::error_of(&body)),
                b'Z' => break,
                _ => {}
            }
        }
        if let Some(e) = error {
            return Err(e);
        }
        let mut params = Vec::with_capacity(oids.len());
        for oid in oids {
            params.push(match Type::from_oid(oid) {
                Some(t) => t,
                None => self.type_of(oid, 0).await?,
            });
        }
        Ok(Prepared {
            name: name.to_string(),
            params,
            returns_rows,
        })
    }

    /// A type outside the built-in table (an enum, a domain, an extension's):
    /// its name, and for an array its element type.
    async fn type_of(&mut self, oid: u32, depth: u8) -> Result<Type, WireError> {
        let sql = format!(
            "select t.typname, n.nspname, t.typelem, t.typcategory from pg_type t \
             join pg_namespace n on n.oid = t.typnamespace where t.oid = {oid}"
        );
        frontend::query(&sql, &mut self.out).map_err(WireError::Io)?;
        self.send().await?;
        let mut row: Vec<String> = Vec::new();
        let mut error = None;
        loop {
            let (tag, body) = self.next().await?;
            match tag {
                b'D' => row = frame::text_row(&body),
                b'E' => error = Some(frame::error_of(&body)),
                b'Z' => break,
                _ => {}
            }
        }
        if let Some(e) = error {
            return Err(e);
        }
        let [name, schema, elem, category] = <[String; 4]>::try_from(row)
            .map_err(|_| WireError::Protocol(format!("no pg_type row for oid {oid}")))?;
        // An array's element, built-in or not (an enum[], a domain[]):
        // bound element by element, as text where its kind is not built in.
        let elem = elem.parse::<u32>().unwrap_or(0);
        // A server's element is never an array itself (depth 1 at most); a
        // cycle (a server that is not PostgreSQL's) is cut at 2, bound as text.
        let kind = if category == "A" && elem != 0 && depth < 2 {
            Kind::Array(match Type::from_oid(elem) {
                Some(t) => t,
                None => Box::pin(self.type_of(elem, depth + 1)).await?,
            })
        } else {
            Kind::Simple
        };
        Ok(Type::new(name, oid, kind, schema))
    }

    /// The open connection, ready for ops.
    pub(super) fn ready(self, statements: Vec<Option<Prepared>>) -> hot::Conn {
        hot::Conn::new(self.stream, self.frames, self.out, statements)
    }
}

/// What a server that is not PostgreSQL said, as an error.
fn not_postgres(got: &[u8], to: &str) -> WireError {
    let to = if to.is_empty() {
        String::new()
    } else {
        format!(" {to}")
    };
    WireError::NotPostgres(format!("\"{}\"{to}", frame::escape(got)))
}

/// No channel binding: SCRAM runs without `-PLUS` (as the driver did over
/// tokio-postgres with its rustls adapter).
fn unbound() -> ChannelBinding {
    ChannelBinding::unsupported()
}

fn be_i32(b: &[u8], at: usize) -> Result<i32, WireError> {
    b.get(at..at + 4)
        .and_then(|s| s.try_into().ok())
        .map(i32::from_be_bytes)
        .ok_or_else(|| WireError::Protocol("a message shorter than its fields".into()))
}

fn be_i16(b: &[u8], at: usize) -> Result<i16, WireError> {
    b.get(at..at + 2)
        .and_then(|s| s.try_into().ok())
        .map(i16::from_be_bytes)
        .ok_or_else(|| WireError::Protocol("a message shorter than its fields".into()))
}

#[cfg(test)]
#[path = "open_tests.rs"]
mod tests;
