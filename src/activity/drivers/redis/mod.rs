//! The `redis` driver: each cycle sends one command over the `redis` crate's
//! async multiplexed connection (one per worker thread), on tokio.
//!
//! `spec` reads each op's command and check; this file holds the params, the
//! connection and the run.

mod spec;
#[cfg(test)]
mod tests;
mod tls;

use super::db_params::{OneConnect, masked, param_bool, param_duration, trust};
use super::http_tls::Trust;
use super::{Driver, DriverError, OpPlan};
use crate::engine::{AsyncOpRunner, LocalFuture, OpError, OpRunner, WorkerContext, Workload};
use crate::sync::threads::Arc;
use redis::aio::MultiplexedConnection;
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
/// | `timeout` | how long a command may take (its kind is then `timeout`) | `10s` |
/// | `ca_file` | a PEM file of the certificates `rediss://` trusts (a server certificate that is itself in the file is trusted as it is) | the platform's roots |
/// | `tls_verify` | `false`: `rediss://` takes any certificate (a self-signed test server); the handshake's signatures are still checked, and a warning says so | `true` |
///
/// `rediss://` runs on the same rustls configuration as the `http` and
/// `postgres` drivers (the platform's roots read once per process).
///
/// Errors count under the server's error kind (`WRONGTYPE`, `OOM`, `NOSCRIPT`,
/// `ERR`, ...), or `connect`, `tls` (a failed handshake), `io`, `timeout` and
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
    client: redis::Client,
    /// For `rediss://`: the host, the port and the TLS configuration.
    tls: Option<(String, u16, Arc<rustls::ClientConfig>)>,
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
        let check = || {
            let rt = runtime().map_err(|e| err(e.message().to_string()))?;
            rt.block_on(async {
                let mut con = connect(&shared)
                    .await
                    .map_err(|e| err(explain(&shared, &e)))?;
                redis::cmd("PING")
                    .query_async::<redis::Value>(&mut con)
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
    // on the server's ACK). `rediss://` sets it on its own stream (`tls`).
    let info = redis::IntoConnectionInfo::into_connection_info(url.as_str())
        .map_err(bad_url)?
        .set_tcp_settings(redis::io::tcp::TcpSettings::default().set_nodelay(true));
    let client = redis::Client::open(info).map_err(bad_url)?;
    let trust = trust(&plan).map_err(err)?;
    let tls = match tls::tls_addr(&client) {
        Some((host, port)) => {
            if trust == Trust::Anyone {
                super::db_params::warn_unverified(&plan.params().alias, "Redis");
            }
            let config = super::http_tls::config(&trust).map_err(err)?;
            Some((host, port, config))
        }
        None if plan.param("ca_file").is_some() => {
            return Err(err(format!(
                "param `ca_file` is for TLS; write the URL as rediss://... (it is `{shown}`)"
            )));
        }
        None if !param_bool(&plan, "tls_verify", true).map_err(err)? => {
            return Err(err(format!(
                "param `tls_verify` is for TLS; write the URL as rediss://... (it is `{shown}`)"
            )));
        }
        None => None,
    };
    let connect_timeout =
        param_duration(&plan, "connect_timeout", Duration::from_secs(5)).map_err(err)?;
    let timeout = param_duration(&plan, "timeout", Duration::from_secs(10)).map_err(err)?;
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
    Ok(Shared {
        plan,
        ops,
        client,
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

/// A new multiplexed connection (for `rediss://`, over our own TLS stream).
async fn connect(shared: &Shared) -> Result<MultiplexedConnection, Failure> {
    let config = redis::AsyncConnectionConfig::new()
        .set_connection_timeout(Some(shared.connect_timeout))
        .set_response_timeout(Some(shared.timeout));
    match &shared.tls {
        Some((host, port, tls)) => {
            let addr = (host.as_str(), *port);
            tls::open(&shared.client, addr, tls, shared.connect_timeout, config).await
        }
        None => shared
            .client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(Failure::Redis),
    }
}

/// Why the load-time connection failed, and how to fix it.
fn explain(shared: &Shared, f: &Failure) -> String {
    let shown = &shared.shown;
    let e = match f {
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

/// The kind an op's failure counts under.
fn op_error(e: &redis::RedisError) -> OpError {
    let kind: String = match e.code() {
        Some(code) => code.to_string(),
        None if e.is_timeout() => "timeout".into(),
        None if e.is_connection_refusal() => "connect".into(),
        None => "io".into(),
    };
    OpError::new(kind, e.to_string())
}

/// The kind a failed reconnect counts under: the server's error code, else
/// `connect`, `tls` or `timeout`.
fn connect_error(shared: &Shared, f: &Failure) -> OpError {
    let kind = match f {
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

/// The reply as text for `expect_reply`; `None` for nil.
fn reply_text(v: &redis::Value) -> Option<String> {
    use redis::Value as V;
    Some(match v {
        V::Nil => return None,
        V::Int(n) => n.to_string(),
        V::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        V::SimpleString(s) => s.clone(),
        V::Okay => "OK".into(),
        V::Double(d) => d.to_string(),
        V::Boolean(b) => b.to_string(),
        V::Array(items) | V::Set(items) => {
            let parts: Vec<String> = items
                .iter()
                .map(|i| reply_text(i).unwrap_or_else(|| "nil".into()))
                .collect();
            format!("[{}]", parts.join(", "))
        }
        other => format!("{other:?}"),
    })
}

/// Sends the op of `cycle` on `con`, reconnecting first if the last one broke.
async fn run(
    shared: &Shared,
    con: &mut Option<MultiplexedConnection>,
    cycle: u64,
) -> Result<(), OpError> {
    let plan = &shared.plan;
    let spec = &shared.ops[plan.op_index(cycle)];
    let mut cmd = redis::Cmd::new();
    let mut word = String::new();
    for w in &spec.words {
        word.clear();
        for part in w {
            match part {
                Part::Text(t) => word.push_str(t),
                Part::Binding(b) => plan.bindings().at(*b).render_into(cycle, &mut word),
                Part::Field(f) => f.render_text_into(cycle, plan.bindings(), &mut word),
            }
        }
        cmd.arg(word.as_str());
    }
    if con.is_none() {
        *con = Some(
            connect(shared)
                .await
                .map_err(|f| connect_error(shared, &f))?,
        );
    }
    let c = con.as_mut().expect("connected above");
    let reply = match cmd.query_async::<redis::Value>(c).await {
        Ok(r) => r,
        Err(e) => {
            if e.is_connection_dropped() || e.is_io_error() || e.is_unrecoverable_error() {
                *con = None;
            }
            return Err(op_error(&e));
        }
    };
    if let Some(want) = &spec.expect {
        let got = reply_text(&reply);
        if !want.admits(got.as_deref()) {
            return Err(OpError::new(
                "check",
                format!(
                    "op `{}`: the reply was {}, expected {want} (`expect_reply`)",
                    spec.name,
                    got.map_or_else(|| "nil".to_string(), |g| format!("`{g}`"))
                ),
            ));
        }
    }
    Ok(())
}

/// One worker's connection for the async runner: one multiplexed connection
/// that every command in flight on the worker shares (Redis's own
/// pipelining), opened by [`Pool::open`] before the worker's first slot and
/// reopened by the next command after it broke.
pub(super) struct Pool {
    shared: Arc<Shared>,
    /// The worker's connection (`None`: lost, reopened by the next op).
    con: std::cell::RefCell<Option<MultiplexedConnection>>,
    /// Bumped each time `con` is replaced or dropped: an op that ran on an
    /// older connection does not drop the current one.
    generation: std::cell::Cell<u64>,
    /// The reconnect in progress: ops that find `con` lost while it runs wait
    /// for it rather than open connections of their own.
    reconnect: OneConnect<MultiplexedConnection, OpError>,
}

impl Pool {
    pub(super) async fn open(shared: Arc<Shared>) -> Result<Self, OpError> {
        let con = connect(&shared)
            .await
            .map_err(|f| connect_error(&shared, &f))?;
        Ok(Self {
            shared,
            con: std::cell::RefCell::new(Some(con)),
            generation: std::cell::Cell::new(0),
            reconnect: OneConnect::new(),
        })
    }

    /// Sends the command of `cycle` on a clone of the worker's connection.
    pub(super) async fn run(&self, cycle: u64) -> Result<(), OpError> {
        let result = match self.connection().await {
            Ok((c, generation)) => {
                let mut con = Some(c);
                let result = run(&self.shared, &mut con, cycle).await;
                // The connection broke under this op: the next op reconnects,
                // unless another op has already replaced it.
                if con.is_none() && self.generation.get() == generation {
                    *self.con.borrow_mut() = None;
                    self.generation.set(generation + 1);
                }
                result
            }
            Err(e) => Err(e),
        };
        result.map_err(|e| {
            let again = retryable(e.kind());
            e.retryable(again)
        })
    }

    /// A clone of the worker's connection and its generation; after a loss,
    /// the one reconnect in progress (started by the first op to find it
    /// lost; its wait is in each waiting op's service time).
    async fn connection(&self) -> Result<(MultiplexedConnection, u64), OpError> {
        if let Some(c) = self.con.borrow().as_ref() {
            return Ok((c.clone(), self.generation.get()));
        }
        let shared = &*self.shared;
        let lost = self.generation.get();
        // Boxed: a connect held inline would make every op's future as large.
        let c =
            Box::pin(self.reconnect.join(|| async move {
                connect(shared).await.map_err(|f| connect_error(shared, &f))
            }))
            .await?;
        let mut con = self.con.borrow_mut();
        // The first op back installs it, unless the connection was lost again
        // since this op began to wait (a newer connect then replaces it).
        if con.is_none() && self.generation.get() == lost {
            *con = Some(c.clone());
            self.generation.set(lost + 1);
        }
        Ok(match con.as_ref() {
            Some(current) => (current.clone(), self.generation.get()),
            // Stale: this op's drop of it would not touch the worker's.
            None => (c, lost),
        })
    }
}

/// Whether a command that failed with `kind` can succeed when sent again with
/// the same values: the server did not run it and says to come back
/// (`TRYAGAIN`, `LOADING` a dataset, `BUSY` with a script, `MASTERDOWN`,
/// `CLUSTERDOWN`), or it was never sent (`connect`). Not `io` or `timeout`
/// (the command may have run: an `INCR` would count twice), nor the errors the
/// same command meets again (`WRONGTYPE`, `ERR`, `NOSCRIPT`, `OOM`, `check`,
/// `tls`).
pub(super) fn retryable(kind: &str) -> bool {
    matches!(
        kind,
        "connect" | "TRYAGAIN" | "LOADING" | "BUSY" | "MASTERDOWN" | "CLUSTERDOWN"
    )
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
        _: &WorkerContext,
        _in_flight: usize,
    ) -> Option<LocalFuture<Result<Box<dyn AsyncOpRunner>, OpError>>> {
        // One multiplexed connection carries every command in flight.
        let shared = self.0.clone();
        Some(Box::pin(async move {
            let pool = Pool::open(shared).await?;
            Ok(Box::new(RedisAsync(std::rc::Rc::new(pool))) as Box<dyn AsyncOpRunner>)
        }))
    }
}

/// A worker's commands on the async runner, over its [`Pool`].
struct RedisAsync(std::rc::Rc<Pool>);

impl AsyncOpRunner for RedisAsync {
    fn start(&self, cycle: u64) -> LocalFuture<Result<(), OpError>> {
        let pool = self.0.clone();
        Box::pin(async move { pool.run(cycle).await })
    }
}
