//! The `redis` driver: each cycle sends one command over the `redis` crate's
//! async multiplexed connection (one per worker thread), on tokio.
//!
//! `spec` reads each op's command and check; this file holds the params, the
//! connection and the run.

mod con;
mod run;
mod spec;
#[cfg(test)]
mod tests;
mod tls;

use super::db_params::{masked, param_bool, param_duration, trust};
use super::http_tls::Trust;
use super::{Driver, DriverError, OpPlan};
use crate::engine::{AsyncOpRunner, LocalFuture, OpError, OpRunner, WorkerContext, Workload};
use crate::sync::threads::Arc;
use con::Con;
use run::{Pool, RedisAsync};
use spec::{OpSpec, Part, op_spec};
use std::time::Duration;
use tls::Failure;

/// The `redis` driver: one command per cycle against Redis.
///
/// Op forms, each with `{binding}` placeholders:
///
/// | field | meaning |
/// |---|---|
/// | a plain string op, or `stmt:` | the command line, split into words at whitespace *before* each word is rendered, so a value with spaces stays one argument: `SET {key} {value}` |
/// | `command: [SET, "{key}", "{value}"]` | the words spelled out |
/// | `expect_reply:` | the reply must be this value, `nil`, `not-nil`, or match `/REGEX/` (or `{regex: REGEX}`); else the op fails with kind `check` |
///
/// Params:
///
/// | param | value | default |
/// |---|---|---|
/// | `url` | `redis://[:PASSWORD@]HOST:PORT/DB`, or `rediss://` for TLS | required |
/// | `connect_timeout` | how long a connection may take | `5s` |
/// | `timeout` | how long a command may take from when it is sent (its kind is then `timeout`, and the worker's connection is dropped so the next command gets a new one; its socket closes once no op is left on it, on `redis://` and `rediss://` alike: see docs/drivers.md) | `10s` |
/// | `ca_file` | a PEM file of the certificates `rediss://` trusts (a server certificate that is itself in the file is trusted as it is) | the platform's roots |
/// | `tls_verify` | `false`: `rediss://` takes any certificate (a self-signed test server); the handshake's signatures are still checked, and a warning says so | `true` |
///
/// `rediss://` runs on the same rustls configuration as the `http` and
/// `postgres` drivers (the platform's roots read once per process).
///
/// Errors count under the server's error kind (`WRONGTYPE`, `OOM`, `NOSCRIPT`,
/// `ERR`, ...; `ERR` for an error reply without a code), or `connect`, `tls` (a failed handshake), `io`, `timeout` and
/// `check`. A bare `errors=retry:N` retries only what the server did not run
/// and says to retry (`TRYAGAIN`, `LOADING`, `BUSY`, `MASTERDOWN`,
/// `CLUSTERDOWN`) and `connect`; a retry sends the same cycle's command again
/// with the same values, taking no new slot.
///
/// Before anything runs the server is reached (`PING`): an unreachable server
/// or a refused password stops the start with the fix.
///
/// ```
/// let d = paceline::Drivers::builtin();
/// let a = d.loader().from_str(
///     "params: {driver: redis, url: 'redis://:secret@127.0.0.1:1/0'}\n\
///      bindings: {k: Mod(100)}\n\
///      ops: {get: {stmt: 'GET key:{k}', expect_reply: not-nil}}",
///     "r.yaml")?;
/// assert!(d.prepare(&a, &Default::default()).is_ok());
/// let err = d.start(&paceline::Engine::new(), &a, &Default::default()).unwrap_err().to_string();
/// assert!(err.contains("cannot reach Redis at redis://:***@127.0.0.1:1/0"), "{err}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Redis;

/// The params `redis` accepts.
const PARAMS: &[&str] = &["url", "connect_timeout", "timeout", "ca_file", "tls_verify"];

/// What every worker of one run shares.
pub(super) struct Shared {
    plan: Arc<OpPlan>,
    ops: Vec<OpSpec>,
    /// Per op, its command built once when every word is fixed text.
    fixed: Vec<Option<redis::Cmd>>,
    client: redis::Client,
    /// The server's host and port.
    addr: (String, u16),
    /// For `rediss://`: the TLS configuration.
    tls: Option<Arc<rustls::ClientConfig>>,
    shown: String,
    connect_timeout: Duration,
    timeout: Duration,
}

impl Driver for Redis {
    fn name(&self) -> &str {
        "redis"
    }

    fn error_kinds(&self, _: &OpPlan) -> Option<Vec<String>> {
        // The client's own, and the error codes Redis servers answer with (the
        // first word of an error reply); a module's own code is matched with
        // `*` (`MYMOD*`).
        const KINDS: &[&str] = &[
            "connect",
            "io",
            "timeout",
            "tls",
            "check",
            "ERR",
            "WRONGTYPE",
            "OOM",
            "NOSCRIPT",
            "BUSY",
            "BUSYKEY",
            "NOAUTH",
            "WRONGPASS",
            "NOPERM",
            "READONLY",
            "LOADING",
            "MASTERDOWN",
            "MISCONF",
            "EXECABORT",
            "NOREPLICAS",
            "TRYAGAIN",
            "CLUSTERDOWN",
            "CROSSSLOT",
            "MOVED",
            "ASK",
            "NOGROUP",
            "BUSYGROUP",
            "UNBLOCKED",
            "NOPROTO",
        ];
        Some(KINDS.iter().map(|k| k.to_string()).collect())
    }

    fn params(&self) -> Option<&[&str]> {
        Some(PARAMS)
    }

    fn workload(&self, plan: Arc<OpPlan>) -> Result<Box<dyn Workload>, DriverError> {
        Ok(Box::new(RedisWork(Arc::new(shared(plan)?))))
    }

    fn ready(&self, plan: Arc<OpPlan>) -> Result<(), DriverError> {
        let shared = shared(plan)?;
        let err = |m: String| DriverError::new("redis", m);
        // On a thread of its own: the caller may be inside a tokio runtime,
        // where another cannot block.
        // The check is set-up, not an op: its commands (the crate's
        // HELLO/AUTH/SELECT, then PING) have `connect_timeout`, as its connect
        // has, not the op `timeout` (audit p17 M8: a 1 ms op timeout failed
        // the start as "no answer within 5s (`connect_timeout`)").
        let check = || {
            let rt = runtime().map_err(|e| err(e.message().to_string()))?;
            rt.block_on(async {
                let mut con = connect(&shared, Some(shared.connect_timeout))
                    .await
                    .map_err(|e| err(explain(&shared, &e)))?;
                redis::cmd("PING")
                    .query_async::<redis::Value>(&mut con.con)
                    .await
                    .map(|_| ())
                    .map_err(|e| err(explain(&shared, &Failure::Redis(e))))
            })
        };
        std::thread::scope(|s| s.spawn(check).join())
            .unwrap_or_else(|_| Err(err("the server check panicked".to_string())))
    }
}

fn shared(plan: Arc<OpPlan>) -> Result<Shared, DriverError> {
    let err = |m: String| DriverError::new("redis", m);
    let url = match plan.param("url") {
        Some(serde_json::Value::String(u)) => u.clone(),
        Some(v) => {
            return Err(err(format!(
                "param `url`: {v} is not a URL; write redis://HOST:PORT/DB"
            )));
        }
        None => {
            return Err(err(
                "param `url` is missing; give `url=redis://[:PASSWORD@]HOST:PORT/DB` (`rediss://` for TLS)"
                    .to_string(),
            ));
        }
    };
    let shown = masked(&url);
    if !(url.starts_with("redis://") || url.starts_with("rediss://")) {
        return Err(err(format!(
            "param `url`: `{shown}` is not a Redis URL; write redis://[:PASSWORD@]HOST:PORT/DB \
             (`rediss://` for TLS)"
        )));
    }
    let bad_url = |e: redis::RedisError| {
        // A raw `/`, `?` or `#` in a password ends the URL's authority there.
        let encode = if url.contains('@') {
            " (in a password, write `/` `?` `#` `@` `%` percent-encoded: `%2F` `%3F` `%23` \
             `%40` `%25`)"
        } else {
            ""
        };
        err(format!(
            "param `url`: `{shown}`: {e}; write redis://[:PASSWORD@]HOST:PORT/DB{encode}"
        ))
    };
    // Commands are small and each waits for its reply: no Nagle delay (the
    // crate leaves TCP_NODELAY off; a paced run's lone commands then waited
    // on the server's ACK). The driver opens its streams itself (`con.rs`)
    // and sets it there; the client's setting says the same.
    let info = redis::IntoConnectionInfo::into_connection_info(url.as_str())
        .map_err(bad_url)?
        .set_tcp_settings(redis::io::tcp::TcpSettings::default().set_nodelay(true));
    let client = redis::Client::open(info).map_err(bad_url)?;
    let trust = trust(&plan).map_err(err)?;
    let Some((host, port, is_tls)) = tls::addr(&client) else {
        return Err(err(format!(
            "param `url`: `{shown}` is not a TCP address; write redis://HOST:PORT/DB"
        )));
    };
    let tls = if is_tls {
        if trust == Trust::Anyone {
            super::db_params::warn_unverified(&plan.params().alias, "Redis");
        }
        Some(super::http_tls::config(&trust).map_err(err)?)
    } else if plan.param("ca_file").is_some() {
        return Err(err(format!(
            "param `ca_file` is for TLS; write the URL as rediss://... (it is `{shown}`)"
        )));
    } else if !param_bool(&plan, "tls_verify", true).map_err(err)? {
        return Err(err(format!(
            "param `tls_verify` is for TLS; write the URL as rediss://... (it is `{shown}`)"
        )));
    } else {
        None
    };
    let connect_timeout =
        param_duration(&plan, "connect_timeout", Duration::from_secs(5)).map_err(err)?;
    let timeout = param_duration(&plan, "timeout", Duration::from_secs(10))
        .and_then(super::postgres::deadline::op_timeout)
        .map_err(err)?;
    // An op this step does not run (another block's, filtered out by its
    // tags) is no reason to refuse the step.
    let mut used = vec![false; plan.ops().len()];
    for &i in plan.sequence() {
        used[i] = true;
    }
    let mut ops = Vec::with_capacity(plan.ops().len());
    for (op, used) in plan.ops().iter().zip(used) {
        match op_spec(op, plan.bindings()) {
            Ok(spec) => ops.push(spec),
            Err(_) if !used => ops.push(OpSpec {
                name: op.name.clone(),
                words: Vec::new(),
                expect: None,
            }),
            Err(m) => return Err(err(format!("op `{}`: {m}", op.name))),
        }
    }
    let fixed = ops.iter().map(fixed_command).collect();
    Ok(Shared {
        plan,
        ops,
        fixed,
        client,
        addr: (host, port),
        tls,
        shown,
        connect_timeout,
        timeout,
    })
}

fn runtime() -> Result<tokio::runtime::Runtime, OpError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| OpError::new("io", format!("cannot start a tokio runtime: {e}")))
}

/// The command of `spec` when all its words are fixed text (`PING`, `GET
/// config`): built once, sent as it is by every op.
fn fixed_command(spec: &OpSpec) -> Option<redis::Cmd> {
    let mut cmd = redis::Cmd::new();
    for w in &spec.words {
        match w.as_slice() {
            [Part::Text(t)] => cmd.arg(t.as_str()),
            _ => return None,
        };
    }
    (!spec.words.is_empty()).then_some(cmd)
}

/// A new connection (see `con.rs`).
async fn connect(shared: &Shared, response_timeout: Option<Duration>) -> Result<Con, Failure> {
    con::open(shared, response_timeout).await
}

/// Why the load-time connection failed, and how to fix it.
fn explain(shared: &Shared, f: &Failure) -> String {
    let shown = &shared.shown;
    let e = match f {
        Failure::Redis(e) if shared.tls.is_some() => match tls::alert_after_handshake(e) {
            Some(alert) => {
                let said = format!("param `url`: {shown}: received fatal alert: {alert}");
                return tls::refused_after_handshake(&said, &alert);
            }
            None => e,
        },
        Failure::Redis(e) => e,
        Failure::Connect(e) => {
            return format!(
                "param `url`: cannot reach Redis at {shown} ({e}); start redis-server there or \
                 fix HOST:PORT"
            );
        }
        Failure::Tls(m) => return format!("param `url`: {shown}: {m}"),
        Failure::Timeout => {
            return format!(
                "param `url`: no answer from {shown} within {:?} (`connect_timeout`); start \
                 redis-server there or fix HOST:PORT",
                shared.connect_timeout
            );
        }
    };
    match e.code() {
        Some(code @ ("NOAUTH" | "WRONGPASS" | "NOPERM")) => format!(
            "param `url`: the server at {shown} refused the password ({code}: {}); fix it in \
             redis://[USER]:PASSWORD@HOST:PORT/DB",
            e.detail().unwrap_or("")
        ),
        Some(code) => format!("param `url`: the server at {shown} answered {code}: {e}"),
        // A wrong password: the crate reads the server's WRONGPASS as this kind.
        None if e.kind() == redis::ErrorKind::AuthenticationFailed => format!(
            "param `url`: the server at {shown} refused the password ({e}); fix it in \
             redis://[USER]:PASSWORD@HOST:PORT/DB"
        ),
        None if e.is_timeout() => format!(
            "param `url`: no answer from {shown} within {:?} (`connect_timeout`); start \
             redis-server there or fix HOST:PORT",
            shared.connect_timeout
        ),
        None => format!(
            "param `url`: cannot reach Redis at {shown} ({e}); start redis-server there or \
             fix HOST:PORT"
        ),
    }
}

/// The kind an op's failure counts under: the server's error code, `ERR`
/// for an error reply without one, else the client's kind.
fn op_error(e: &redis::RedisError) -> OpError {
    let kind: String = match e.code() {
        Some(code) if is_code(code) => code.to_string(),
        // `-out of stock` (a script's `redis.error_reply`): the first word is
        // no code, and one kind per first word would be kinds no rule names.
        Some(_) => "ERR".into(),
        None if e.is_timeout() => "timeout".into(),
        None if e.is_connection_refusal() => "connect".into(),
        None => "io".into(),
    };
    OpError::new(kind, e.to_string())
}

/// Whether the first word of an error reply is an error code, as Redis
/// writes them: a capital letter, then capitals, digits and `_` (`WRONGTYPE`,
/// a module's `MYMOD_2`).
fn is_code(word: &str) -> bool {
    word.starts_with(|c: char| c.is_ascii_uppercase())
        && word
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// The kind a failed reconnect counts under: the server's error code, else
/// `connect`, `tls` or `timeout`.
fn connect_error(shared: &Shared, f: &Failure) -> OpError {
    let kind = match f {
        Failure::Redis(e) if shared.tls.is_some() && tls::alert_after_handshake(e).is_some() => {
            "tls"
        }
        Failure::Redis(e) => match op_error(e) {
            err if err.kind() != "io" => return err,
            _ => "connect",
        },
        Failure::Connect(_) => "connect",
        Failure::Tls(_) => "tls",
        Failure::Timeout => "timeout",
    };
    OpError::new(kind, explain(shared, f))
}

/// One run's workload.
struct RedisWork(Arc<Shared>);

impl Workload for RedisWork {
    fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
        // The engine runs a workload with an async runner on the async runner
        // (one op in flight per thread without `concurrency`).
        Err(OpError::new(
            "async only",
            "the `redis` driver runs on the async runner",
        ))
    }

    fn async_runner(
        &self,
        ctx: &WorkerContext,
        _in_flight: usize,
    ) -> Option<LocalFuture<Result<Box<dyn AsyncOpRunner>, OpError>>> {
        // One multiplexed connection carries every command in flight.
        let shared = self.0.clone();
        let ctx = ctx.clone();
        Some(Box::pin(async move {
            let pool = Pool::open(shared, Some(&ctx)).await?;
            Ok(Box::new(RedisAsync(std::rc::Rc::new(pool))) as Box<dyn AsyncOpRunner>)
        }))
    }
}
