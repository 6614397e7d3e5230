//! The ops at run time: a connection with its statements prepared, each cycle's
//! values bound with the server's parameter types, rows read to the end and
//! counted, `expect_rows` checked.
//!
//! A connection held by one op at a time polls its protocol half
//! (tokio-postgres's `Connection`) inside the op's own task ([`driven`]),
//! where tokio-postgres would run it as a task of its own: the query goes out
//! and its answer comes back in the op's polls, with no wake-up of one task by
//! another (each an `eventfd` write and an `epoll_wait` on the worker's
//! runtime) per query. A connection that every op in flight shares
//! (`pipeline: true`) keeps its own task.
//!
//! | fast path | why it holds | pinned by |
//! |---|---|---|
//! | the op polls its connection's IO itself | one op holds a connection at a time, so nothing else waits on that IO; a close while the connection idles is noticed by a poll before the op (as the spawned task noticed it), and the op reconnects first | `inline_io_reconnects_after_the_server_closed_an_idle_connection`, `tests/postgres_driver.rs` |

use super::Shared;
use super::bind::{Bound, bind};
use super::conn::{ConnIo, connect_inline, op_error};
use super::spec::Form;
use crate::engine::OpError;
use crate::sync::threads::Arc;
use std::future::Future;
use std::task::{Context, Poll, Waker};
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, SimpleQueryMessage, Statement};

/// A client and its prepared statements (one per op, `None` for `raw` ops and
/// ops this run does not use).
pub(super) struct Prepared {
    client: Client,
    statements: Vec<Option<Statement>>,
}

/// One connection: its client and statements, and its protocol half when the
/// op that holds the connection polls it (`None`: spawned as a task, or ended).
pub(super) struct Conn {
    p: Prepared,
    io: Option<ConnIo>,
}

impl Conn {
    /// Opens a connection and prepares the statements of the ops this run
    /// uses; `inline`: its IO is polled by the ops that hold it ([`driven`]),
    /// else by a task of its own.
    pub(super) async fn open(shared: &Shared, inline: bool) -> Result<Self, OpError> {
        let (client, io) = connect_inline(&shared.target).await.map_err(|e| {
            let mut err = op_error(&e);
            if !matches!(err.kind(), "timeout" | "tls") && !err.kind().starts_with("sql 28") {
                err = OpError::new("connect", err.message().to_string());
            }
            err
        })?;
        let mut io: Option<ConnIo> = if inline {
            Some(io)
        } else {
            tokio::spawn(io);
            None
        };
        let mut statements = Vec::with_capacity(shared.ops.len());
        for (i, op) in shared.ops.iter().enumerate() {
            statements.push(match &op.form {
                Form::Prepared { sql, .. } if shared.used[i] => Some(
                    driven(&mut io, client.prepare(sql))
                        .await
                        .map_err(|e| op_error(&e))?,
                ),
                _ => None,
            });
        }
        Ok(Self {
            p: Prepared { client, statements },
            io,
        })
    }

    /// Whether the server closed it (or it broke): the next op reconnects.
    /// An inline connection's IO is polled once first, so that a close that
    /// came while it idled is seen now.
    pub(super) fn is_closed(&mut self) -> bool {
        if let Some(io) = &mut self.io {
            // The op that goes on polls it with its own waker.
            if io
                .as_mut()
                .poll(&mut Context::from_waker(Waker::noop()))
                .is_ready()
            {
                self.io = None;
            }
        }
        self.p.client.is_closed()
    }
}

/// Awaits `fut` (a query on a connection's client), polling the connection's
/// protocol half `io` in the same task when there is one: after each poll of
/// `fut` that leaves it pending, `io` is polled (it sends what `fut` queued,
/// reads what came), then `fut` once more (it takes what `io` handed over).
/// An `io` that ends is dropped: its client is closed, and `fut` fails with
/// that.
pub(super) async fn driven<T>(io: &mut Option<ConnIo>, fut: impl Future<Output = T>) -> T {
    let mut fut = std::pin::pin!(fut);
    std::future::poll_fn(|cx| {
        loop {
            if let Poll::Ready(v) = fut.as_mut().poll(cx) {
                return Poll::Ready(v);
            }
            let Some(c) = io.as_mut() else {
                return Poll::Pending;
            };
            if c.as_mut().poll(cx).is_ready() {
                *io = None;
                continue;
            }
            return fut.as_mut().poll(cx);
        }
    })
    .await
}

/// Runs the op of `cycle` on `conn` (reconnecting first if it was lost), within
/// the op timeout; the rows it returned or changed.
pub(super) async fn run(
    shared: &Shared,
    conn: &mut Option<Conn>,
    cycle: u64,
) -> Result<u64, OpError> {
    let fut = async {
        if conn.as_mut().is_none_or(Conn::is_closed) {
            *conn = None;
            *conn = Some(Conn::open(shared, true).await?);
        }
        let c = conn.as_mut().expect("opened above");
        driven(&mut c.io, op(shared, &c.p, cycle)).await
    };
    let result = tokio::time::timeout(shared.timeout, fut).await;
    match result {
        Ok(r) => r,
        Err(_) => {
            // The statement may still be running there: the next op gets a new
            // connection rather than queue behind it.
            *conn = None;
            Err(timed_out(shared))
        }
    }
}

fn timed_out(shared: &Shared) -> OpError {
    OpError::new(
        "timeout",
        format!("no answer within {:?} (param `timeout`)", shared.timeout),
    )
}

/// The op of `cycle` on `conn`.
pub(super) async fn op(shared: &Shared, conn: &Prepared, cycle: u64) -> Result<u64, OpError> {
    let plan = &shared.plan;
    let index = plan.op_index(cycle);
    let spec = &shared.ops[index];
    let rows = match &spec.form {
        Form::Prepared { args, .. } => {
            let stmt = conn.statements[index]
                .as_ref()
                .expect("every op of the sequence is prepared");
            let types = stmt.params();
            let mut bound: Vec<Bound> = Vec::with_capacity(args.len());
            for (arg, ty) in args.iter().zip(types) {
                let value = arg.eval(cycle, plan.bindings());
                bound.push(bind(&value, ty).map_err(|why| {
                    OpError::new(
                        "bind",
                        format!(
                            "op `{}`: {} = `{value}` cannot be {}: {why}",
                            spec.name,
                            arg.describe(plan.bindings()),
                            ty.name()
                        ),
                    )
                })?);
            }
            let params = bound.iter().map(|b| b as &(dyn ToSql + Sync));
            if stmt.columns().is_empty() {
                conn.client
                    .execute_raw(stmt, params)
                    .await
                    .map_err(|e| op_error(&e))?
            } else {
                let rows = conn
                    .client
                    .query_raw(stmt, params)
                    .await
                    .map_err(|e| op_error(&e))?;
                count(rows).await.map_err(|e| op_error(&e))?
            }
        }
        Form::Raw(t) => {
            let sql = t.render(cycle, plan.bindings());
            let msgs = match conn.client.simple_query(&sql).await {
                Ok(m) => m,
                Err(e) => {
                    // A failed statement inside the text's own `BEGIN ...
                    // COMMIT` leaves the connection in an aborted transaction,
                    // refusing every later op (and this op's retry): roll it
                    // back (a mere warning when no transaction is open).
                    if e.as_db_error().is_some() {
                        let _ = conn.client.simple_query("ROLLBACK").await;
                    }
                    return Err(op_error(&e));
                }
            };
            let returned = msgs
                .iter()
                .filter(|m| matches!(m, SimpleQueryMessage::Row(_)))
                .count() as u64;
            let described = msgs
                .iter()
                .any(|m| matches!(m, SimpleQueryMessage::RowDescription(_)));
            if returned > 0 || described {
                returned
            } else {
                msgs.iter()
                    .map(|m| match m {
                        SimpleQueryMessage::CommandComplete(n) => *n,
                        _ => 0,
                    })
                    .sum()
            }
        }
    };
    shared.rows.add(rows);
    if let Some(want) = spec.expect_rows
        && !want.admits(rows)
    {
        return Err(OpError::new(
            "check",
            format!(
                "op `{}`: {rows} rows, expected {want} (`expect_rows`)",
                spec.name
            ),
        ));
    }
    Ok(rows)
}

/// Reads every row of `stream`; how many there were.
async fn count(stream: tokio_postgres::RowStream) -> Result<u64, tokio_postgres::Error> {
    use futures_util::StreamExt;
    let mut stream = std::pin::pin!(stream);
    let mut n = 0u64;
    while let Some(row) = stream.next().await {
        row?;
        n += 1;
    }
    Ok(n)
}

/// One worker's connections for the async runner: one per op in flight (as
/// pgbench's `-c`), or with `pipeline: true` one that every op in flight
/// shares (tokio-postgres pipelines the queries polled together). Opened by
/// [`Pool::open`] before the worker takes its first slot.
///
/// Cancel-safe per op: an op dropped before it ends (a stop's deadline) drops
/// the connection it held, and a later op opens a new one.
pub(super) struct Pool {
    shared: Arc<Shared>,
    /// Connections not in use (`None`: lost, reopened by the next op).
    free: std::cell::RefCell<Vec<Option<Conn>>>,
    /// With `pipeline: true`, the one connection.
    piped: std::cell::RefCell<Option<std::rc::Rc<Conn>>>,
}

impl Pool {
    /// Opens `in_flight` connections (one with `pipeline: true`), each with
    /// every statement of the run prepared.
    pub(super) async fn open(shared: Arc<Shared>, in_flight: usize) -> Result<Self, OpError> {
        let pool = Self {
            free: Default::default(),
            piped: Default::default(),
            shared,
        };
        if pool.shared.pipeline {
            *pool.piped.borrow_mut() =
                Some(std::rc::Rc::new(Conn::open(&pool.shared, false).await?));
        } else {
            for _ in 0..in_flight.max(1) {
                let c = Conn::open(&pool.shared, true).await?;
                pool.free.borrow_mut().push(Some(c));
            }
        }
        Ok(pool)
    }

    /// The op of `cycle` on a free connection (or the shared one); the rows.
    pub(super) async fn run(&self, cycle: u64) -> Result<u64, OpError> {
        let shared = &*self.shared;
        if shared.pipeline {
            let current = self.piped.borrow().clone();
            let conn = match current {
                Some(c) if !c.p.client.is_closed() => c,
                _ => {
                    let fresh = std::rc::Rc::new(Conn::open(shared, false).await?);
                    *self.piped.borrow_mut() = Some(fresh.clone());
                    fresh
                }
            };
            return match tokio::time::timeout(shared.timeout, op(shared, &conn.p, cycle)).await {
                Ok(r) => r,
                Err(_) => {
                    // Ops already in flight finish on it; the next ones get a
                    // new connection rather than queue behind the slow one.
                    let mut piped = self.piped.borrow_mut();
                    if piped
                        .as_ref()
                        .is_some_and(|c| std::rc::Rc::ptr_eq(c, &conn))
                    {
                        *piped = None;
                    }
                    Err(timed_out(shared))
                }
            };
        }
        // More ops in flight than connections opened cannot happen under the
        // engine's cap; if it did, the extra op opens its own.
        let mut slot = self.free.borrow_mut().pop().flatten();
        let result = run(shared, &mut slot, cycle).await;
        self.free.borrow_mut().push(slot);
        result
    }

    /// Connections held now (free ones, or the shared one).
    #[cfg(test)]
    pub(super) fn connections(&self) -> usize {
        if self.shared.pipeline {
            usize::from(self.piped.borrow().is_some())
        } else {
            self.free.borrow().iter().flatten().count()
        }
    }
}
