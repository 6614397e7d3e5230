//! The `postgres` driver: each cycle runs one statement on a PostgreSQL server
//! over the wire protocol spoken here (`wire`: per transaction one write of
//! Bind+Execute+Sync and one read of the answer, as pgbench), with connections
//! opened before the schedule starts.
//!
//! Split by what runs where: this file turns params into the [`Shared`] state of
//! a run and checks the server at start; `spec` reads each op's form; `bind`
//! turns a binding's value into a parameter of the server's type; `conn` opens
//! connections (TLS through rustls) and names errors; `wire` speaks the
//! protocol; `run` runs the ops.

mod bind;
mod conn;
pub(super) mod deadline; // also the `redis` driver's op timeout
mod run;
mod spec;
mod sql;
mod stats;
mod target;
#[cfg(test)]
mod tests;
mod tls;
mod wire;

pub use stats::PgStats;

use super::db_params::{param_bool, param_duration};
use super::{Driver, DriverError, OpPlan};
use crate::engine::{AsyncOpRunner, LocalFuture, OpError, OpRunner, WorkerContext, Workload};
use crate::sync::threads::Arc;
use conn::Target;
use spec::{Form, OpSpec, op_spec};
use std::time::Duration;

/// The `postgres` driver: one SQL statement per cycle against PostgreSQL.
///
/// Op forms (one per op), each with `{binding}` placeholders:
///
/// | field | how it runs |
/// |---|---|
/// | `prepared: SQL` (or a plain string op) | prepared once per connection; each `{name}` is a `$n` parameter bound with the type the server reports for it |
/// | `raw: SQL` | the text rendered with the values, sent by the simple query protocol (schema steps, several statements) |
/// | `dmlread:`, `dmlwrite:` (also `query:`, `update:`) | NoSQLBench jdbc's forms: as `prepared` |
/// | `ddl:` (also `execute:`) | NoSQLBench jdbc's DDL form: as `raw` |
/// | `prep_stmt_val_arr: "{k},{v}"` | NoSQLBench jdbc's values of the statement's `?` markers, in order (split at commas outside `()`/`[]`, before rendering) |
/// | `expect_rows: N` or `LO..HI` | the op fails with kind `check` unless its row count is in range |
///
/// A statement that returns rows counts the rows it returned (read to the end);
/// one that returns none (`INSERT`, `UPDATE`, `DELETE`) counts the rows it
/// changed. A prepared statement is read with PostgreSQL's lexical rules
/// (literals, identifiers, `$tag$` strings, comments): a placeholder that is a
/// whole quoted literal (`'{key}'`) is bound like a bare one, one inside a
/// string is refused at load, one in a comment is no parameter. In the jdbc
/// forms a `?` outside strings and comments is a parameter too (`??` a
/// literal `?`).
///
/// Params:
///
/// | param | value | default |
/// |---|---|---|
/// | `url` | `postgres://USER[:PASSWORD]@HOST:PORT/DB[?sslmode=MODE&sslrootcert=FILE]` (also pgjdbc's `jdbc:postgresql://...`) | required, unless `serverName` gives the server |
/// | `serverName`, `portNumber`, `databaseName`, `user`, `password`, `applicationName` | NB5 jdbc's params: what `url` leaves out (a part `url` gives wins) | `localhost`, `5432` |
/// | `sslmode` | libpq's: `disable`, `allow`, `prefer`, `require` (encrypt; no check without a root certificate), `verify-ca` (the chain), `verify-full` (the chain and the host name) | `prefer` |
/// | `sslrootcert` (or `ca_file`) | the CA certificates' PEM file, or `system` for the platform's roots | none |
/// | `connect_timeout` | how long a connection may take (given, it wins over the URL's `connect_timeout` or pgjdbc's `connectTimeout`) | the URL's, else `5s` |
/// | `timeout` | how long an op may take (its kind is then `timeout`) | `10s` |
/// | `tls_verify` | `false`: says certificates are not checked (a warning in place of `require`'s notice); it turns off no check, as every case that allows it checks none already (refused with `verify-ca`/`verify-full` or a root certificate) | `true` |
/// | `pipeline` | `true`: the ops in flight on a worker share one connection; a `raw:` op whose text may leave a transaction block open (several statements, or one starting with `BEGIN`, `START`, `SAVEPOINT` or a `{binding}`) is a barrier on it (nothing is sent behind it until it ended, its failed transaction rolled back), so its own `BEGIN ... COMMIT` failing fails no other op; other raw ops stay pipelined | `false` |
///
/// Errors count under `sql NN` (the SQLSTATE class: `sql 23` integrity, `sql
/// 40` serialization failure or deadlock, `sql 42` syntax or access, ...),
/// `connect`, `tls` (a failed handshake: the message names the check), `io`,
/// `timeout`, `bind` (a value that cannot take its
/// parameter's type) and `check`. A bare `errors=retry:N` retries only a
/// serialization failure or deadlock (SQLSTATE `40001`, `40P01`) and a failed
/// reconnect; name a kind to retry it anyway (`sql 23:retry:2`). A retry runs
/// the same cycle again, so it binds the very same values; it takes no new
/// slot, and its time is part of the op's service time.
///
/// Before anything runs, the server is reached and every prepared statement of
/// the run's ops is prepared once, and the first cycle's values are bound: a
/// refused connection or statement stops the start with the server's message.
///
/// ```
/// let d = paceline::Drivers::builtin();
/// let a = d.loader().from_str(
///     "params: {driver: postgres, url: 'postgres://app:secret@127.0.0.1:1/x'}\n\
///      bindings: {k: Mod(100)}\n\
///      ops: {read: {prepared: 'select v from kv where k = {k}', expect_rows: 1}}",
///     "pg.yaml")?;
/// // Load checks need no server; starting one needs it.
/// assert!(d.prepare(&a, &Default::default()).is_ok());
/// let err = d.start(&paceline::Engine::new(), &a, &Default::default()).unwrap_err().to_string();
/// assert!(err.contains("cannot reach PostgreSQL at postgres://app:***@127.0.0.1:1/x"), "{err}");
/// assert!(!err.contains("secret"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Postgres;

impl Postgres {
    /// The rows the last run of activity `alias` returned or changed, if the
    /// `postgres` driver ran it in this process.
    ///
    /// ```
    /// assert_eq!(paceline::Postgres::stats("never-ran"), None);
    /// ```
    pub fn stats(alias: &str) -> Option<PgStats> {
        stats::stats(alias)
    }
}

/// The params `postgres` (and `jdbc`) accept: its own, then NB5 jdbc's
/// ([`target::JDBC_PARAMS`]).
const OWN_PARAMS: &[&str] = &[
    "url",
    "connect_timeout",
    "timeout",
    "ca_file",
    "tls_verify",
    "pipeline",
];

/// [`OWN_PARAMS`] and NB5 jdbc's, built once.
fn params() -> &'static [&'static str] {
    static ALL: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| {
        OWN_PARAMS
            .iter()
            .chain(target::JDBC_PARAMS)
            .copied()
            .collect()
    })
}

/// Prints `what` once per activity alias and message in this process (a run
/// loads its activity more than once: validated, then started).
fn notice(alias: &str, what: &str) {
    use crate::sync::threads::{Mutex, lock};
    static SAID: std::sync::OnceLock<Mutex<std::collections::BTreeSet<(String, String)>>> =
        std::sync::OnceLock::new();
    if lock(SAID.get_or_init(Default::default)).insert((alias.to_string(), what.to_string())) {
        eprintln!("notice: activity `{alias}`: {what}");
    }
}

/// What every worker of one run shares.
pub(super) struct Shared {
    plan: Arc<OpPlan>,
    ops: Vec<OpSpec>,
    /// Whether op `i` is in this run's sequence (only those are prepared).
    used: Vec<bool>,
    target: Target,
    timeout: Duration,
    /// Whether the ops in flight on a worker share one connection.
    #[allow(dead_code)]
    pipeline: bool,
    /// Rows returned or changed, all workers together.
    rows: Arc<stats::Board>,
}

/// The kinds a postgres op fails with: `sql NN` for each SQLSTATE class
/// PostgreSQL defines (its appendix "PostgreSQL Error Codes"), and the client's
/// own.
fn error_kinds() -> Vec<String> {
    const CLASSES: &[&str] = &[
        "00", "01", "02", "03", "08", "09", "0A", "0B", "0F", "0L", "0P", "0Z", "20", "21", "22",
        "23", "24", "25", "26", "27", "28", "2B", "2D", "2F", "34", "38", "39", "3B", "3D", "3F",
        "40", "42", "44", "53", "54", "55", "57", "58", "72", "F0", "HV", "P0", "XX",
    ];
    ["connect", "io", "timeout", "tls", "bind", "check"]
        .iter()
        .map(|k| k.to_string())
        .chain(CLASSES.iter().map(|c| format!("sql {c}")))
        .collect()
}

impl Driver for Postgres {
    fn name(&self) -> &str {
        "postgres"
    }

    fn error_kinds(&self, _: &OpPlan) -> Option<Vec<String>> {
        Some(error_kinds())
    }

    fn params(&self) -> Option<&[&str]> {
        Some(params())
    }

    fn workload(&self, plan: Arc<OpPlan>) -> Result<Box<dyn Workload>, DriverError> {
        let mut shared = shared(plan)?;
        shared.rows = stats::board(&shared.plan.params().alias);
        Ok(Box::new(PgWork(Arc::new(shared))))
    }

    fn ready(&self, plan: Arc<OpPlan>) -> Result<(), DriverError> {
        let shared = shared(plan)?;
        // On a thread of its own: the caller may be inside a tokio runtime,
        // where another cannot block.
        std::thread::scope(|s| s.spawn(|| check_server(&shared)).join())
            .unwrap_or_else(|_| Err("the server check panicked".to_string()))
            .map_err(|m| DriverError::new("postgres", m))
    }
}

/// `driver=jdbc`: NoSQLBench's jdbc adapter files (with PostgreSQL), run by
/// the `postgres` driver after a one-line notice; its connection params
/// (`serverName`, `portNumber`, ...) are read by both names.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Jdbc;

impl Driver for Jdbc {
    fn name(&self) -> &str {
        "jdbc"
    }

    fn error_kinds(&self, _: &OpPlan) -> Option<Vec<String>> {
        Some(error_kinds())
    }

    fn params(&self) -> Option<&[&str]> {
        Some(params())
    }

    fn workload(&self, plan: Arc<OpPlan>) -> Result<Box<dyn Workload>, DriverError> {
        Postgres.workload(plan)
    }

    fn ready(&self, plan: Arc<OpPlan>) -> Result<(), DriverError> {
        Postgres.ready(plan)
    }
}

fn shared(plan: Arc<OpPlan>) -> Result<Shared, DriverError> {
    let jdbc = plan.params().driver == "jdbc";
    let driver = if jdbc { "jdbc" } else { "postgres" };
    let err = |m: String| DriverError::new(driver, m);
    let (settings, notices) = target::settings(&plan, jdbc).map_err(err)?;
    let alias = &plan.params().alias;
    if jdbc {
        notice(
            alias,
            "driver=jdbc runs as paceline's postgres driver (docs/nb5.md, \"jdbc\")",
        );
    }
    for n in &notices {
        notice(alias, n);
    }
    // The param when given, else the URL's (libpq's `connect_timeout`,
    // pgjdbc's `connectTimeout`), else 5 s.
    let url_timeout = settings.config.get_connect_timeout().copied();
    let connect_timeout = param_duration(
        &plan,
        "connect_timeout",
        url_timeout.unwrap_or(Duration::from_secs(5)),
    )
    .map_err(err)?;
    let timeout = param_duration(&plan, "timeout", Duration::from_secs(10))
        .and_then(deadline::op_timeout)
        .map_err(err)?;
    let pipeline = param_bool(&plan, "pipeline", false).map_err(err)?;
    let tls_verify = param_bool(&plan, "tls_verify", true).map_err(err)?;
    let ca_file = match plan.param("ca_file") {
        None => None,
        Some(serde_json::Value::String(f)) => Some(f.clone()),
        Some(v) => {
            return Err(err(format!(
                "param `ca_file`: {v} is not a path; write `ca_file: certs/ca.pem`"
            )));
        }
    };
    let root = match (settings.root.clone(), ca_file) {
        (Some(r), Some(f)) if r != f => {
            return Err(err(format!(
                "params `ca_file` (`{f}`) and `sslrootcert` (`{r}`) name different files; \
                 keep one"
            )));
        }
        (r, f) => r.or(f),
    };
    // libpq checks a certificate under allow, prefer and require only when
    // the root certificate file is there (NB5 files name a placeholder path).
    let root = match root {
        Some(r)
            if r != "system"
                && !std::path::Path::new(&r).exists()
                && !matches!(
                    settings.mode,
                    target::Mode::VerifyCa | target::Mode::VerifyFull
                ) =>
        {
            notice(
                alias,
                &format!(
                    "sslrootcert `{r}` does not exist: with sslmode={} the server's certificate \
                     is not checked, as libpq does; use sslmode=verify-ca or verify-full to \
                     require the check",
                    settings.mode.name()
                ),
            );
            None
        }
        r => r,
    };
    if root.is_some() && !tls_verify {
        return Err(err(
            "params `ca_file` (or `sslrootcert`) and `tls_verify: false` contradict each \
             other; remove `tls_verify: false` to check certificates against the file"
                .to_string(),
        ));
    }
    let (tls, unchecked) = tls::config(settings.mode, root.as_deref(), tls_verify)
        .map_err(|m| err(format!("param `url`: {m}")))?;
    if unchecked && !tls_verify {
        super::db_params::warn_unverified(alias, "PostgreSQL");
    } else if unchecked && settings.mode == target::Mode::Require {
        notice(
            alias,
            "sslmode=require without a root certificate encrypts but does not check the \
             server's certificate (as libpq does), so anyone in between can pose as the \
             server; give sslrootcert (or ca_file), or use sslmode=verify-full",
        );
    }
    let mut used = vec![false; plan.ops().len()];
    for &i in plan.sequence() {
        used[i] = true;
    }
    // An op this step does not run (another block's, filtered out by its
    // tags) is no reason to refuse the step: NB5 files keep every step's ops
    // in one file, some with fields only their own step can take.
    let mut ops = Vec::with_capacity(plan.ops().len());
    for (op, used) in plan.ops().iter().zip(&used) {
        match op_spec(op, plan.bindings()) {
            Ok(spec) => ops.push(spec),
            Err(_) if !used => ops.push(spec::unused(op)),
            Err(m) => return Err(err(format!("op `{}`: {m}", op.name))),
        }
    }
    Ok(Shared {
        target: Target {
            config: settings.config,
            shown: settings.shown,
            tls,
            mode: settings.mode,
            root,
            connect_timeout,
        },
        plan,
        ops,
        used,
        timeout,
        pipeline,
        rows: Arc::new(stats::Board::default()),
    })
}

/// Reaches the server and prepares every statement of the run once, binding
/// the first cycle's values: what a run would otherwise find out op by op.
fn check_server(shared: &Shared) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a tokio runtime: {e}"))?;
    rt.block_on(async {
        let mut client = conn::connect(&shared.target)
            .await
            .map_err(|e| conn::explain(&shared.target, &e))?;
        let first = shared.plan.params().cycles.start();
        for (i, op) in shared.ops.iter().enumerate() {
            let Form::Prepared { sql, args } = &op.form else {
                continue;
            };
            if !shared.used[i] {
                continue;
            }
            let at = format!("op `{}`: field `{}`", op.name, op.field);
            let stmt = client
                .prepare(&format!("s{i}"), sql)
                .await
                .map_err(|e| match &e {
                    wire::WireError::Db { code, message, .. } => format!(
                        "{at}: the server refused the statement: SQLSTATE {code}: {message}; fix \
                         the SQL (prepared as `{sql}`), or write it as `raw:` if it cannot be \
                         prepared"
                    ),
                    _ => format!("{at}: {}", conn::chain(&e)),
                })?;
            if stmt.params.len() != args.len() {
                return Err(format!(
                    "{at}: the server sees {} parameters in `{sql}`, but the op has {} \
                     placeholders; write `$n` parameters as `{{binding}}` placeholders",
                    stmt.params.len(),
                    args.len()
                ));
            }
            // The first cycle of this op binds, or its binding and the column
            // disagree for every cycle.
            let len = shared.plan.sequence().len() as u64;
            if let Some(c) = (first..first + len).find(|c| shared.plan.op_index(*c) == i) {
                for (arg, ty) in args.iter().zip(&stmt.params) {
                    let value = arg.eval(c, shared.plan.bindings());
                    if let Err(why) = bind::bind(&value, ty) {
                        return Err(format!(
                            "{at}: {} gives `{value}` (cycle {c}), which cannot be {}: \
                             {why}; change the binding or the column's type",
                            arg.describe(shared.plan.bindings()),
                            ty.name()
                        ));
                    }
                }
            }
        }
        Ok(())
    })
}

/// One run's workload.
struct PgWork(Arc<Shared>);

impl Workload for PgWork {
    fn runner(&self, _: &WorkerContext) -> Result<Box<dyn OpRunner>, OpError> {
        // The engine runs a workload with an async runner on the async runner
        // (one op in flight per thread without `concurrency`).
        Err(OpError::new(
            "async only",
            "the `postgres` driver runs on the async runner",
        ))
    }

    fn async_runner(
        &self,
        ctx: &WorkerContext,
        in_flight: usize,
    ) -> Option<LocalFuture<Result<Box<dyn AsyncOpRunner>, OpError>>> {
        let shared = self.0.clone();
        let ctx = ctx.clone();
        Some(Box::pin(async move {
            let mut pool = run::Pool::open(shared, in_flight).await?;
            pool.watch(&ctx);
            Ok(Box::new(PgAsync(std::rc::Rc::new(pool))) as Box<dyn AsyncOpRunner>)
        }))
    }
}

/// A worker's ops on the async runner, over its [`run::Pool`].
struct PgAsync(std::rc::Rc<run::Pool>);

impl AsyncOpRunner for PgAsync {
    fn start(&self, cycle: u64) -> LocalFuture<Result<(), OpError>> {
        let pool = self.0.clone();
        // The error comes marked for the engine's retry rule by
        // `stats::ended`, the one place that marks it.
        Box::pin(async move { pool.run(cycle).await.map(|_| ()) })
    }

    fn op_slot(&self) -> Option<crate::engine::OpSlot> {
        let pool = self.0.clone();
        Some(crate::engine::OpSlot::new(move |cycle| {
            let pool = pool.clone();
            async move { pool.run(cycle).await.map(|_| ()) }
        }))
    }
}
