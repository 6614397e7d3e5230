//! The hot path: each cycle's command on the worker's one multiplexed
//! connection, within the op timeout, and its reply checked.
//!
//! What an op costs the driver, beyond the `redis` crate's own (a packed copy
//! of the command, a oneshot channel, a message through its writer task):
//!
//! | fast path | what holds | test |
//! |---|---|---|
//! | an op whose words are all fixed text sends the command built once at load | the bytes sent are those of the command rendered per op | `a_fixed_command_is_built_once_and_sends_the_same_words` |
//! | a command with bindings is built in a `Cmd` taken from the worker's spares (cleared, its buffers kept) and each word rendered in one scratch string | a binding's value with spaces stays one argument; a spare holds nothing of the last op's words | `a_reused_command_holds_only_this_ops_words`, `a_paced_run_sets_exactly_its_cycles_and_values_with_spaces_stay_one_argument` (tests/redis_driver.rs) |
//! | on a real clock the op timeout is a place in the worker's book of deadlines (`postgres/deadline.rs`), not a tokio timer per op; a timed-out op drops the connection | an op unanswered for `timeout` fails with kind `timeout`, and the next one gets a fresh connection | `a_command_past_its_timeout_fails_as_timeout_on_the_book_and_the_next_reconnects`, `a_command_past_the_ops_timeout_fails_as_timeout_and_a_bare_retry_does_not_resend_it` (tests/redis_kinds.rs); no crate timer beside the book: `a_real_clock_arms_no_crate_timer_and_a_manual_one_does`; off a real clock the crate's timer: `off_a_real_clock_a_command_past_its_timeout_fails_on_the_crates_timer` |
//! | the reply is checked on a borrowed text where it is one (a bulk string in UTF-8, a status, `OK`) | `expect_reply` sees the same text as before | `reply_text_borrows_what_it_can_and_reads_as_before` |
//! | an op's future stays inside the allocator's per-thread cache: the reconnect is boxed | - | `an_ops_future_fits_the_allocators_thread_cache` |
//! | an op takes a clone of the worker's connection after one atomic load that says its task still runs (`con.rs`) | a connection the server closed while the worker waited is replaced before a command is sent on it | `a_connection_the_server_closed_while_idle_is_replaced_before_the_next_command` (tests/redis_tls.rs) |
//! | a connection is dropped or replaced only by an op that ran on the current one | an op that started on a connection another op has since replaced does not put the dead one back | `a_late_op_on_a_replaced_connection_leaves_the_new_one` (through the op path: its blocked client killed by the server) |

use super::super::db_params::OneConnect;
use super::super::postgres::deadline::{Deadlines, Elapsed};
use super::spec::{Expect, OpSpec, Part, Written};
use super::{Con, Shared, connect, connect_error, op_error};
use crate::engine::{AsyncOpRunner, LocalFuture, OpError, WorkerContext};
use crate::sync::threads::Arc;
use redis::aio::MultiplexedConnection;
use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// One worker's connection for the async runner: one multiplexed connection
/// that every command in flight on the worker shares (Redis's own
/// pipelining), opened by [`Pool::open`] before the worker's first slot and
/// reopened by the next command after it broke.
pub(super) struct Pool {
    shared: Arc<Shared>,
    /// The worker's connection (`None`: lost, reopened by the next op).
    con: RefCell<Option<Con>>,
    /// Bumped each time `con` is replaced or dropped: an op that started on an
    /// older connection neither drops nor overwrites the current one.
    generation: Cell<u64>,
    /// The reconnect in progress: ops that find `con` lost while it runs
    /// wait for it rather than open connections of their own.
    reconnect: OneConnect<Con, OpError>,
    /// Commands of ended ops, cleared and filled again by the next ones (their
    /// buffers kept).
    spare: RefCell<Vec<redis::Cmd>>,
    /// Scratch room for one word while it is rendered (one op renders at a
    /// time: a command is built before its op first waits).
    word: RefCell<String>,
    /// The op timeout's book, on a real clock; else the crate's response
    /// timeout on the connection (a tokio timer per op).
    deadlines: Option<Rc<Deadlines>>,
}

impl Pool {
    /// Opens the worker's connection; with `ctx` on a real clock the op
    /// timeout is kept in a book of deadlines watched on the worker (call on
    /// its `LocalSet`: the watchdog is spawned there).
    pub(super) async fn open(
        shared: Arc<Shared>,
        ctx: Option<&WorkerContext>,
    ) -> Result<Self, OpError> {
        let deadlines = ctx.and_then(|c| Deadlines::start(c, shared.timeout));
        let pool = Self {
            con: RefCell::new(None),
            generation: Cell::new(0),
            reconnect: OneConnect::new(),
            spare: RefCell::new(Vec::new()),
            word: RefCell::new(String::new()),
            deadlines,
            shared,
        };
        let con = connect(&pool.shared, pool.response_timeout())
            .await
            .map_err(|f| connect_error(&pool.shared, &f))?;
        *pool.con.borrow_mut() = Some(con);
        Ok(pool)
    }

    /// A pool with no connection open (a test of the op's future, unpolled,
    /// and of its command).
    #[cfg(test)]
    pub(super) fn unopened(shared: Arc<Shared>) -> Self {
        Self {
            con: RefCell::new(None),
            generation: Cell::new(0),
            reconnect: OneConnect::new(),
            spare: RefCell::new(Vec::new()),
            word: RefCell::new(String::new()),
            deadlines: None,
            shared,
        }
    }

    /// Gives a command back to the spares, as an op that ended does.
    #[cfg(test)]
    pub(super) fn give_back(&self, cmd: redis::Cmd) {
        self.spare.borrow_mut().push(cmd);
    }

    /// The crate's own timeout per command: only without a book.
    pub(super) fn response_timeout(&self) -> Option<std::time::Duration> {
        self.deadlines.is_none().then_some(self.shared.timeout)
    }

    /// Sends the command of `cycle` and checks its reply; a failure carries
    /// whether a bare `retry:N` may send it again.
    pub(super) async fn run(&self, cycle: u64) -> Result<(), OpError> {
        self.op(cycle).await.map_err(|e| {
            let again = retryable(e.kind());
            e.retryable(again)
        })
    }

    async fn op(&self, cycle: u64) -> Result<(), OpError> {
        let shared = &*self.shared;
        let index = shared.plan.op_index(cycle);
        let spec = &shared.ops[index];
        let built = match &shared.fixed[index] {
            Some(_) => None,
            None => Some(self.command(spec, cycle)),
        };
        let cmd = built.as_ref().or(shared.fixed[index].as_ref());
        let cmd = cmd.expect("fixed or built above");
        let (mut con, generation) = self.connection().await?;
        let sent = match &self.deadlines {
            Some(book) => book.within(|| send(&mut con.con, cmd)).await,
            None => Ok(send(&mut con.con, cmd).await),
        };
        if let Some(cmd) = built {
            self.spare.borrow_mut().push(cmd);
        }
        let reply = match sent {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => {
                if e.is_connection_dropped() || e.is_io_error() || e.is_unrecoverable_error() {
                    self.drop_connection(generation);
                }
                return Err(op_error(&e));
            }
            Err(Elapsed) => {
                // The command may still hold the server (a blocking one): the
                // next ops get a new connection rather than queue behind it.
                self.drop_connection(generation);
                return Err(OpError::new(
                    "timeout",
                    format!("no answer within {:?} (param `timeout`)", shared.timeout),
                ));
            }
        };
        match &spec.expect {
            Some(want) => check(spec, want, &reply),
            None => Ok(()),
        }
    }

    /// The command of `cycle` for `spec`, built in a spare `Cmd`.
    pub(super) fn command(&self, spec: &OpSpec, cycle: u64) -> redis::Cmd {
        let bindings = self.shared.plan.bindings();
        let mut cmd = self.spare.borrow_mut().pop().unwrap_or_default();
        cmd.clear();
        let mut word = self.word.borrow_mut();
        for w in &spec.words {
            if let [Part::Text(t)] = w.as_slice() {
                cmd.arg(t.as_str());
                continue;
            }
            word.clear();
            for part in w {
                match part {
                    Part::Text(t) => word.push_str(t),
                    Part::Binding(b) => bindings.at(*b).render_into(cycle, &mut word),
                    Part::Field(f) => f.render_text_into(cycle, bindings, &mut word),
                }
            }
            cmd.arg(word.as_str());
        }
        cmd
    }

    /// A clone of the worker's connection and its generation, opening one
    /// first if the last one broke or was closed.
    pub(super) async fn connection(&self) -> Result<(Con, u64), OpError> {
        let closed = match self.con.borrow().as_ref() {
            Some(c) if !c.is_closed() => return Ok((c.clone(), self.generation.get())),
            Some(_) => true,
            None => false,
        };
        // Closed by the server while the worker waited (its idle timeout, a
        // restart): replaced before a command is sent on it, which would fail
        // without reaching the server.
        if closed {
            self.drop_connection(self.generation.get());
        }
        // Boxed: a connect (a TLS handshake) held inline would make every
        // op's future as large as it.
        // One connect per worker: the ops that find the connection lost while
        // it runs wait for it and take its result (audit p15, L5).
        let shared = &*self.shared;
        let (lost, timeout) = (self.generation.get(), self.response_timeout());
        let c = Box::pin(self.reconnect.join(|| async move {
            connect(shared, timeout)
                .await
                .map_err(|f| connect_error(shared, &f))
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
            // Stale: this op's drop of it does not touch the worker's.
            None => (c, lost),
        })
    }

    /// Drops the worker's connection if it is still the one of `generation`.
    pub(super) fn drop_connection(&self, generation: u64) {
        if self.generation.get() == generation {
            *self.con.borrow_mut() = None;
            self.generation.set(generation + 1);
        }
    }
}

/// Sends `cmd` on `con`: its reply, a server error reply (also one inside an
/// array) as an error. The crate boxes the send (`req_packed_command`): held
/// inline it would take an op's future past the allocator's per-thread cache.
async fn send(
    con: &mut MultiplexedConnection,
    cmd: &redis::Cmd,
) -> Result<redis::Value, redis::RedisError> {
    use redis::aio::ConnectionLike;
    con.req_packed_command(cmd)
        .await
        .and_then(redis::Value::extract_error)
}

/// Whether `reply` passes `want`; else an error of kind `check`.
fn check(spec: &OpSpec, want: &Expect, reply: &redis::Value) -> Result<(), OpError> {
    let Some(why) = mismatch(want, reply) else {
        return Ok(());
    };
    let got = reply_text(reply);
    let why = if why.is_empty() {
        why
    } else {
        format!(": {why}")
    };
    Err(OpError::new(
        "check",
        format!(
            "op `{}`: the reply was {}, expected {want} (`expect_reply`){why}",
            spec.name,
            got.map_or_else(|| "nil".to_string(), |g| format!("`{g}`"))
        ),
    ))
}

/// `None` when `reply` passes `want`; else what failed: empty for a whole
/// reply's text or nil, else the list element at fault. A list matches an
/// array or push reply element by element in order, and a RESP3 set (whose
/// order is the server's) in any order: each expected element takes the first
/// element not yet taken that it admits.
pub(super) fn mismatch(want: &Expect, reply: &redis::Value) -> Option<String> {
    use redis::Value as V;
    let Expect::List(wants) = want else {
        return (!want.admits(reply_text(reply).as_deref())).then(String::new);
    };
    let (items, ordered) = match reply {
        V::Attribute { data, .. } => return mismatch(want, data),
        V::Array(items) | V::Push { data: items, .. } => (items, true),
        V::Set(items) => (items, false),
        V::Nil => return Some("it is nil, not an array".into()),
        _ => return Some("it is not an array".into()),
    };
    if items.len() != wants.len() {
        return Some(format!(
            "it has {} elements, not {}",
            items.len(),
            wants.len()
        ));
    }
    let element = |i: usize, got: &redis::Value, why: String| {
        let got = reply_text(got).map_or_else(|| "nil".to_string(), |g| format!("`{g}`"));
        if why.is_empty() {
            format!("element {} is {got}", i + 1)
        } else {
            format!("element {} ({got}): {why}", i + 1)
        }
    };
    if ordered {
        return wants
            .iter()
            .zip(items)
            .enumerate()
            .find_map(|(i, (w, got))| mismatch(w, got).map(|why| element(i, got, why)));
    }
    let mut taken = vec![false; items.len()];
    for (i, w) in wants.iter().enumerate() {
        let free = (0..items.len()).find(|&j| !taken[j] && mismatch(w, &items[j]).is_none());
        match free {
            Some(j) => taken[j] = true,
            None => {
                return Some(format!(
                    "no element of the set is left for the list's element {} ({})",
                    i + 1,
                    Written(w)
                ));
            }
        }
    }
    None
}

/// The reply as text for `expect_reply`; `None` for nil. Borrowed where the
/// reply is text already. RESP3's own types read as the same reply reads
/// over RESP2 where it has a form there (a verbatim string as its text, a
/// big number as its digits, a value with attributes as the value, a double
/// as [`double_text`] writes it), a map as `{k: v, ...}`.
pub(super) fn reply_text(v: &redis::Value) -> Option<Cow<'_, str>> {
    use redis::Value as V;
    Some(match v {
        V::Nil => return None,
        V::VerbatimString { text, .. } => Cow::Borrowed(text.as_str()),
        V::BigNumber(digits) => String::from_utf8_lossy(digits),
        V::Attribute { data, .. } => return reply_text(data),
        V::Map(pairs) => {
            let parts: Vec<String> = pairs
                .iter()
                .map(|(k, v)| {
                    let text = |x| reply_text(x).unwrap_or(Cow::Borrowed("nil"));
                    format!("{}: {}", text(k), text(v))
                })
                .collect();
            Cow::Owned(format!("{{{}}}", parts.join(", ")))
        }
        V::Int(n) => Cow::Owned(n.to_string()),
        V::BulkString(b) => String::from_utf8_lossy(b),
        V::SimpleString(s) => Cow::Borrowed(s.as_str()),
        V::Okay => Cow::Borrowed("OK"),
        V::Double(d) => Cow::Owned(double_text(*d)),
        V::Boolean(b) => Cow::Owned(b.to_string()),
        V::Array(items) | V::Set(items) | V::Push { data: items, .. } => {
            let parts: Vec<Cow<'_, str>> = items
                .iter()
                .map(|i| reply_text(i).unwrap_or(Cow::Borrowed("nil")))
                .collect();
            Cow::Owned(format!("[{}]", parts.join(", ")))
        }
        other => Cow::Owned(format!("{other:?}")),
    })
}

/// A double as Redis 7.2 on writes it over RESP2 (a `ZSCORE`, an
/// `INCRBYFLOAT`): its shortest digits that read back as the same value, in
/// `%.17g`'s form (an exponent, `e+21` or `e-05`, below 1e-4 or from 1e17
/// up), `nan`, `inf`, `-inf`. Redis 7.0 writes 17 digits (`0.1` as
/// `0.10000000000000001`): an exact value (`1.5`, `3`, `1e+21`) reads the
/// same from both.
pub(super) fn double_text(d: f64) -> String {
    if d.is_nan() {
        return "nan".into();
    }
    if d.is_infinite() {
        return if d > 0.0 { "inf" } else { "-inf" }.into();
    }
    // `{:e}` gives the shortest digits: `1.5e0`, `1e21`, `-2.5e-7`.
    let sci = format!("{d:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if d == 0.0 || (-4..17).contains(&exp) {
        // Display writes the same shortest digits without an exponent.
        return d.to_string();
    }
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exp.abs())
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

/// A worker's commands on the async runner, over its [`Pool`].
pub(super) struct RedisAsync(pub(super) Rc<Pool>);

impl AsyncOpRunner for RedisAsync {
    fn start(&self, cycle: u64) -> LocalFuture<Result<(), OpError>> {
        let pool = self.0.clone();
        Box::pin(async move { pool.run(cycle).await })
    }

    fn op_slot(&self) -> Option<crate::engine::OpSlot> {
        let pool = self.0.clone();
        Some(crate::engine::OpSlot::new(move |cycle| {
            let pool = pool.clone();
            async move { pool.run(cycle).await }
        }))
    }
}
