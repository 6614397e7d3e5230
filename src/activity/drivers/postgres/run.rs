//! The ops at run time: a connection with its statements prepared, each cycle's
//! values bound with the server's parameter types, rows read to the end and
//! counted, `expect_rows` checked.
//!
//! | fast path | invariant | pinned by |
//! |---|---|---|
//! | connections moved by pointer | the pool holds `Box<Conn>`: an op takes its connection into its future and gives it back moving 8 bytes, and its future stays small enough that a connection would fit beside it in the allocator's thread cache | `tests::an_ops_future_fits_the_allocators_thread_cache` |
//! | text values into kept buffers | the scratch slots outlive the op; a text-kind parameter is written into its slot's buffer (no allocation once it holds the longest value), giving the value `bind` gives | `bind::tests::a_text_parameter_reuses_its_slots_buffer`, `bind::tests::binding_into_a_reused_slot_is_binding_afresh` |

use super::Shared;
use super::bind::{Bound, bind_into};
use super::conn::{connect, op_error};
use super::deadline::Deadlines;
use super::spec::Form;
use super::wire::hot;
use crate::engine::{OpError, WorkerContext};
use crate::sync::threads::Arc;
use std::cell::RefCell;
use std::future::Future;
use std::rc::Rc;

/// One connection with the statements of the run's ops prepared (named
/// `s0`, `s1`, ... by op index; none for `raw` ops and ops this run does not
/// use).
pub(super) type Conn = hot::Conn;

/// Opens a connection and prepares the statements of the ops this run uses.
pub(super) async fn open(shared: &Shared) -> Result<Conn, OpError> {
    let mut c = connect(&shared.target)
        .await
        .map_err(|e| super::conn::open_error(shared, &e))?;
    let mut statements = Vec::with_capacity(shared.ops.len());
    for (i, op) in shared.ops.iter().enumerate() {
        statements.push(match &op.form {
            Form::Prepared { sql, .. } if shared.used[i] => Some(
                c.prepare(&format!("s{i}"), sql)
                    .await
                    .map_err(|e| op_error(&e))?,
            ),
            _ => None,
        });
    }
    let c = c.ready(statements);
    // Without `pipeline` an op takes its connection from the pool for itself.
    Ok(if shared.pipeline {
        c
    } else {
        c.one_op_at_a_time()
    })
}

/// Runs the op of `cycle` on `conn` (reconnecting first if it was lost), within
/// the op timeout; the rows it returned or changed.
pub(super) async fn run(
    shared: &Shared,
    deadlines: Option<&Rc<Deadlines>>,
    conn: &mut Option<Box<Conn>>,
    cycle: u64,
    scratch: &RefCell<Vec<Bound>>,
) -> Result<u64, OpError> {
    let held = &mut *conn;
    let make = move || async move {
        if held.as_ref().is_none_or(|c| c.is_closed()) {
            *held = None;
            // Boxed: a connect (a TLS handshake) held inline would make every
            // op's future as large as it.
            *held = Some(Box::new(Box::pin(open(shared)).await?));
        }
        let c = held.as_ref().expect("opened above");
        op(shared, c, cycle, scratch).await
    };
    match within(shared, deadlines, make).await {
        Some(r) => r,
        None => {
            // The statement may still be running there: the next op gets a new
            // connection rather than queue behind it.
            *conn = None;
            Err(timed_out(shared))
        }
    }
}

/// The output of the future `make` makes, or `None` once it ran past the op
/// timeout: on the worker's book of deadlines when it has one (a real clock),
/// else on tokio's timer. It takes a maker, not the future: an `async fn`'s
/// argument is kept in its state beside the future it is moved into, and an
/// op's future would hold the op twice.
async fn within<F: Future>(
    shared: &Shared,
    deadlines: Option<&Rc<Deadlines>>,
    make: impl FnOnce() -> F,
) -> Option<F::Output> {
    match deadlines {
        Some(d) => d.within(make).await.ok(),
        // Boxed: tokio's timer entry would widen every op's future for a
        // path only a clock that is not real takes.
        None => Box::pin(tokio::time::timeout(shared.timeout, make()))
            .await
            .ok(),
    }
}

fn timed_out(shared: &Shared) -> OpError {
    OpError::new(
        "timeout",
        format!("no answer within {:?} (param `timeout`)", shared.timeout),
    )
}

/// The op of `cycle` on `conn`; `scratch` is room for its values, reused
/// across ops (held only while they are encoded, before the op waits). The
/// rows are counted and checked by [`Pool::run`] (`stats::ended`).
pub(super) async fn op(
    shared: &Shared,
    conn: &Conn,
    cycle: u64,
    scratch: &RefCell<Vec<Bound>>,
) -> Result<u64, OpError> {
    let plan = &shared.plan;
    let index = plan.op_index(cycle);
    let spec = &shared.ops[index];
    let rows = match &spec.form {
        Form::Prepared { args, .. } => {
            let stmt = conn
                .statement(index)
                .expect("every op of the sequence is prepared");
            let sent = {
                // The slots keep their text buffers from op to op
                // (`bind_into`); only the first `args.len()` are this op's.
                let mut bound = scratch.borrow_mut();
                let n = args.len().min(stmt.params.len());
                if bound.len() < n {
                    bound.resize(n, Bound::Bool(false));
                }
                for ((arg, ty), slot) in args.iter().zip(&stmt.params).zip(bound.iter_mut()) {
                    let value = arg.eval(cycle, plan.bindings());
                    bind_into(&value, ty, slot).map_err(|why| {
                        OpError::new(
                            "bind",
                            format!(
                                "op `{}`: {} = `{value}` cannot be {}: {why}",
                                spec.name,
                                arg.describe(plan.bindings()),
                                ty.name()
                            ),
                        )
                    })?;
                }
                conn.send_prepared(index, &bound[..n])
            };
            let returns_rows = stmt.returns_rows;
            let answer = sent
                .map_err(|e| op_error(&e))?
                .await
                .map_err(|e| op_error(&e))?;
            if returns_rows {
                answer.rows
            } else {
                answer.completed
            }
        }
        Form::Raw { template, .. } => {
            let sql = template.render(cycle, plan.bindings());
            let sent = conn.send_simple(&sql).map_err(|e| op_error(&e))?;
            let answer = match sent.await {
                Ok(a) => a,
                Err(e) => {
                    // A failed statement inside the text's own `BEGIN ...
                    // COMMIT` leaves the connection in an aborted transaction
                    // (ReadyForQuery says `E`), refusing every later op (and
                    // this op's retry): roll it back. Outside one, nothing to
                    // roll back: no round trip added to the failed op. With
                    // `pipeline`, nothing was sent behind a barrier op
                    // (`Gate`), so its answer's status is the connection's.
                    // Only a barrier's text can leave one with `pipeline`
                    // (`sql::may_open_transaction`); another raw op's answer
                    // may have ops sent behind it, and it rolls nothing back.
                    if matches!(e, super::wire::WireError::Db { fatal: false, .. })
                        && (!shared.pipeline
                            || matches!(spec.form, Form::Raw { barrier: true, .. }))
                        && conn.in_failed_transaction()
                        && let Ok(r) = conn.send_simple("ROLLBACK")
                    {
                        let _ = r.await;
                    }
                    return Err(op_error(&e));
                }
            };
            // Each statement's own count, summed: the rows of one that
            // returns rows, the rows changed by one that does not.
            answer.completed
        }
    };
    Ok(rows)
}

/// One worker's connections for the async runner: one per op in flight (as
/// pgbench's `-c`), or with `pipeline: true` one that every op in flight
/// shares (each op's messages sent when it starts, the answers matched in
/// order). Opened by
/// [`Pool::open`] before the worker takes its first slot.
///
/// Cancel-safe per op: an op dropped before it ends (a stop's deadline) drops
/// the connection it held, and a later op opens a new one.
pub(super) struct Pool {
    shared: Arc<Shared>,
    /// Connections not in use (`None`: lost, reopened by the next op).
    /// Boxed: an op takes its connection into its future and gives it back
    /// when it ends, moving a pointer, not the connection.
    free: std::cell::RefCell<Vec<Option<Box<Conn>>>>,
    /// With `pipeline: true`, the one connection.
    piped: std::cell::RefCell<Option<std::rc::Rc<Conn>>>,
    /// With `pipeline: true`, held by a barrier raw op while it runs.
    gate: Gate,
    /// Scratch room for an op's values, reused (one op binds at a time: the
    /// values are encoded before the op first waits).
    bound: std::cell::RefCell<Vec<super::bind::Bound>>,
    /// Tries to be tried again, so that an op counts its rows once.
    retrying: super::stats::Retrying,
    /// The op timeout's book, on a real clock ([`Pool::watch`]); else tokio's
    /// timer per op.
    deadlines: Option<Rc<Deadlines>>,
}

impl Pool {
    /// Opens `in_flight` connections (one with `pipeline: true`), each with
    /// every statement of the run prepared.
    pub(super) async fn open(shared: Arc<Shared>, in_flight: usize) -> Result<Self, OpError> {
        let pool = Self {
            free: Default::default(),
            piped: Default::default(),
            gate: Default::default(),
            bound: Default::default(),
            retrying: Default::default(),
            deadlines: None,
            shared,
        };
        if pool.shared.pipeline {
            *pool.piped.borrow_mut() = Some(std::rc::Rc::new(open(&pool.shared).await?));
        } else {
            for _ in 0..in_flight.max(1) {
                let c = open(&pool.shared).await?;
                pool.free.borrow_mut().push(Some(Box::new(c)));
            }
        }
        Ok(pool)
    }

    /// The op of `cycle` on a free connection (or the shared one); the rows,
    /// counted once per op and checked against `expect_rows`
    /// (`stats::ended`).
    pub(super) async fn run(&self, cycle: u64) -> Result<u64, OpError> {
        let shared = &*self.shared;
        if shared.pipeline {
            let raw = matches!(
                shared.ops[shared.plan.op_index(cycle)].form,
                Form::Raw { barrier: true, .. }
            );
            // The connection the op was sent on, once it has one.
            let used = RefCell::new(None);
            let make = || async {
                // Nothing is sent behind a raw op until it ended (`Gate`).
                self.gate.opened().await;
                if raw {
                    // Boxed: the gate's guard held inline across the op would
                    // widen every op's future (past the allocator's thread
                    // cache: `an_ops_future_fits_the_allocators_thread_cache`),
                    // for the few ops that are barriers.
                    return Box::pin(self.barrier_op(cycle, &used)).await;
                }
                let conn = self.piped_conn().await?;
                *used.borrow_mut() = Some(conn.clone());
                op(shared, &conn, cycle, &self.bound).await
            };
            let deadlines = self.deadlines.as_ref();
            let answer = match within(shared, deadlines, make).await {
                Some(r) => r,
                None => {
                    // Ops already in flight finish on it; the next ones get a
                    // new connection rather than queue behind the slow one.
                    let mut piped = self.piped.borrow_mut();
                    if let Some(conn) = used.borrow_mut().take()
                        && piped
                            .as_ref()
                            .is_some_and(|c| std::rc::Rc::ptr_eq(c, &conn))
                    {
                        *piped = None;
                    }
                    Err(timed_out(shared))
                }
            };
            return super::stats::ended(shared, &self.retrying, cycle, answer);
        }
        // More ops in flight than connections opened cannot happen under the
        // engine's cap; if it did, the extra op opens its own.
        let mut slot = self.free.borrow_mut().pop().flatten();
        let deadlines = self.deadlines.as_ref();
        let result = run(shared, deadlines, &mut slot, cycle, &self.bound).await;
        self.free.borrow_mut().push(slot);
        super::stats::ended(shared, &self.retrying, cycle, result)
    }

    /// With `pipeline: true`, the shared connection, reopened if it was lost
    /// (within the op's timeout, as a lost one of its own is).
    async fn piped_conn(&self) -> Result<std::rc::Rc<Conn>, OpError> {
        let current = self.piped.borrow().clone();
        match current {
            Some(c) if !c.is_closed() => Ok(c),
            _ => {
                let fresh = std::rc::Rc::new(Box::pin(open(&self.shared)).await?);
                *self.piped.borrow_mut() = Some(fresh.clone());
                Ok(fresh)
            }
        }
    }

    /// With `pipeline: true`, a barrier op (`Gate`): it holds the gate from
    /// before it is sent until it ended, and notes in `used` the connection it
    /// was sent on.
    async fn barrier_op(
        &self,
        cycle: u64,
        used: &RefCell<Option<std::rc::Rc<Conn>>>,
    ) -> Result<u64, OpError> {
        let mut held = Held::take(self);
        let conn = self.piped_conn().await?;
        *used.borrow_mut() = Some(conn.clone());
        held.conn = Some(conn.clone());
        let result = op(&self.shared, &conn, cycle, &self.bound).await;
        held.ended = true;
        result
    }

    /// Times the ops out on a book of deadlines watched on `ctx`'s worker
    /// (see `deadline.rs`) when its clock is real. Call on the worker's
    /// `LocalSet`: it spawns the watchdog there.
    pub(super) fn watch(&mut self, ctx: &WorkerContext) {
        self.deadlines = Deadlines::start(ctx, self.shared.timeout);
    }

    /// A pool with no connection open (a test of the op's future, unpolled).
    #[cfg(test)]
    pub(super) fn unopened(shared: Arc<Shared>) -> Self {
        Self {
            free: Default::default(),
            piped: Default::default(),
            gate: Default::default(),
            bound: Default::default(),
            retrying: Default::default(),
            deadlines: None,
            shared,
        }
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

/// With `pipeline: true`, a raw op whose text may leave the connection in a
/// transaction block (an explicit `BEGIN` / `START TRANSACTION` /
/// `SAVEPOINT`, or several statements: `sql::may_open_transaction`, decided
/// at load) is a barrier on the shared connection: it is sent behind the ops
/// already in flight, and nothing is sent behind it
/// until it ended, its failed transaction rolled back. A raw text may hold
/// its own `BEGIN ... COMMIT`; when a statement in it fails, the connection
/// stays in the aborted transaction until the `ROLLBACK`, and an op
/// pipelined behind it would run there and fail with `sql 25` (SQLSTATE
/// 25P02) for its neighbour's error. Prepared ops and other raw ops (one
/// statement) do not hold the gate and stay pipelined: each ends its own
/// implicit transaction (a prepared op has its own Sync; a single simple
/// Query is rolled back by the server before its ReadyForQuery if it fails).
///
/// An op that waits at the gate waits within its own `timeout`: past it, it
/// fails `timeout` without having been sent. A barrier op that ends unfinished
/// (its `timeout`, a stop) lets go of the gate when its future drops
/// ([`Held`]), and its connection is retired: the ops waiting go on, on a new
/// one.
///
/// The ops waiting at the gate have started: the wait is part of their
/// service time, as waiting behind the raw op's answer would be.
#[derive(Default)]
struct Gate {
    /// Whether a raw op holds it.
    held: std::cell::Cell<bool>,
    /// The ops waiting for it, woken when it is let go.
    waiting: RefCell<Vec<std::task::Waker>>,
}

impl Gate {
    /// Ready once no raw op holds the gate.
    fn opened(&self) -> impl Future<Output = ()> + '_ {
        std::future::poll_fn(move |cx| {
            if !self.held.get() {
                return std::task::Poll::Ready(());
            }
            let mut waiting = self.waiting.borrow_mut();
            if !waiting.iter().any(|w| w.will_wake(cx.waker())) {
                waiting.push(cx.waker().clone());
            }
            std::task::Poll::Pending
        })
    }
}

/// A raw op's hold on its pool's [`Gate`], let go when it drops. A raw op
/// dropped before it ended (its timeout, a stop) may have left its
/// transaction aborted or its statement running: its connection then takes
/// no new op (the next one opens its own), as after a timeout.
struct Held<'a> {
    pool: &'a Pool,
    /// The connection the op was sent on, once it has one.
    conn: Option<std::rc::Rc<Conn>>,
    /// Whether the op ended (its answer read, its failed transaction rolled
    /// back).
    ended: bool,
}

impl<'a> Held<'a> {
    /// Takes the gate (open: the caller waited for [`Gate::opened`]).
    fn take(pool: &'a Pool) -> Self {
        debug_assert!(!pool.gate.held.get(), "the gate is held");
        pool.gate.held.set(true);
        Self {
            pool,
            conn: None,
            ended: false,
        }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if !self.ended
            && let Some(conn) = self.conn.take()
        {
            let mut piped = self.pool.piped.borrow_mut();
            if piped
                .as_ref()
                .is_some_and(|c| std::rc::Rc::ptr_eq(c, &conn))
            {
                *piped = None;
            }
        }
        self.pool.gate.held.set(false);
        let waiting = std::mem::take(&mut *self.pool.gate.waiting.borrow_mut());
        for w in waiting {
            w.wake();
        }
    }
}
