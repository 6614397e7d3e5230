//! An open connection's ops: each writes its messages (Bind+Execute+Sync, or
//! a simple Query) into one reused buffer and sends them in one write; its
//! answer is read into one reused buffer and counted (DataRow,
//! CommandComplete) without building a row. Ops in flight on one connection
//! (`pipeline: true`) are answered in the order they were sent, each answer
//! ending at its ReadyForQuery.
//!
//! No task owns the socket: the op being polled reads and writes it. Whoever
//! reads hands each answer to its op (and wakes it); the socket remembers
//! only the last waker that found it empty, so an op that leaves while it is
//! that waker wakes another op still waiting, which takes over.

use super::frame::{self, Frames};
use super::{Prepared, Stream, WireError};
use bytes::BytesMut;
use postgres_protocol::message::frontend;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use tokio::io::AsyncWrite;

/// What an op's answer held.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(in super::super) struct Answer {
    /// DataRow messages.
    pub(in super::super) rows: u64,
    /// Whether a RowDescription came (a statement that returns rows, even
    /// none).
    pub(in super::super) described: bool,
    /// The rows each statement counts: the DataRows of one that returns rows
    /// (a RowDescription came), else its CommandComplete tag's (`INSERT 0
    /// 5`: 5); summed over a simple query's statements.
    pub(in super::super) completed: u64,
}

/// One connection, its statements prepared; shared by the ops in flight on
/// it (one at a time without `pipeline`).
pub(in super::super) struct Conn {
    statements: Vec<Option<Prepared>>,
    /// One op at a time ([`Conn::one_op_at_a_time`]): the op waiting is the
    /// one that reads, so no answer is handed to another op and no op's
    /// waker is kept in its slot.
    lone: bool,
    inner: RefCell<Inner>,
}

enum State {
    /// Sent, answer not yet whole; the op's waker once it has waited.
    Waiting(Option<Waker>),
    Done(Result<Answer, WireError>),
    /// The op took its answer: the slot leaves when it reaches the front.
    Taken,
    /// The op was dropped before its answer (a timeout): the answer is read
    /// and thrown away.
    Abandoned,
}

struct Slot {
    id: u64,
    state: State,
}

struct Inner {
    stream: Stream,
    frames: Frames,
    out: BytesMut,
    /// Bytes of `out` written.
    written: usize,
    /// The ops sent, in order.
    queue: VecDeque<Slot>,
    /// `queue[answering]` is the op whose answer is being read.
    answering: usize,
    tally: Answer,
    /// The DataRows counted before the RowDescription of the statement being
    /// read, if it has one.
    described_at: Option<u64>,
    error: Option<WireError>,
    next_id: u64,
    /// The op whose waker the socket holds for a read (or a write).
    reader: Option<u64>,
    writer: Option<u64>,
    /// Set once the connection is lost: every op sent fails with it.
    broken: Option<WireError>,
    /// The last ReadyForQuery's transaction status: `I` idle, `T` in a
    /// transaction block, `E` in a failed one.
    status: u8,
}

impl Conn {
    pub(super) fn new(
        stream: Stream,
        frames: Frames,
        out: BytesMut,
        statements: Vec<Option<Prepared>>,
    ) -> Self {
        Self {
            statements,
            lone: false,
            inner: RefCell::new(Inner {
                stream,
                frames,
                out,
                written: 0,
                queue: VecDeque::with_capacity(8),
                answering: 0,
                tally: Answer::default(),
                described_at: None,
                error: None,
                next_id: 0,
                reader: None,
                writer: None,
                broken: None,
                status: b'I',
            }),
        }
    }

    /// This connection carries one op at a time (its owner sends the next op
    /// only once the last one's request has ended): the op waiting for an
    /// answer is the only one that reads the socket, and tokio's registration
    /// holds its waker, so its slot keeps none (no clone per op) and reading
    /// its own answer wakes no one (no wake of the op being polled, which
    /// would queue its worker's slot for a poll of nothing). By default a
    /// connection is shared by the ops in flight (`pipeline: true`).
    pub(in super::super) fn one_op_at_a_time(mut self) -> Self {
        self.lone = true;
        self
    }

    /// Statement `i`, if this run prepared it.
    pub(in super::super) fn statement(&self, i: usize) -> Option<&Prepared> {
        self.statements.get(i).and_then(Option::as_ref)
    }

    /// Whether the last answer read left the connection in a failed
    /// transaction block (ReadyForQuery's status `E`): only then does it
    /// need a `ROLLBACK`.
    pub(in super::super) fn in_failed_transaction(&self) -> bool {
        self.inner.borrow().status == b'E'
    }

    /// Whether the connection is lost (the next op reconnects). With no op
    /// in flight it reads what the server sent meanwhile: a server that
    /// closed the connection while it was idle (its FATAL goodbye, or the
    /// end of the stream) is seen here, before an op is sent on it. This
    /// costs no system call when nothing came: the answer's last read was
    /// short, which tells tokio the socket drained, and until the reactor
    /// sees bytes again a read answers `WouldBlock` at once. Over TCP or a
    /// Unix socket the read registers no waker (tokio's `try_read`: no lock
    /// taken, the last op's waker left in place); over TLS it is a poll with
    /// a waker that wakes no one.
    pub(in super::super) fn is_closed(&self) -> bool {
        let mut g = self.inner.borrow_mut();
        if g.broken.is_none() && g.queue.is_empty() && g.frames.is_empty() {
            let mut cx = Context::from_waker(Waker::noop());
            loop {
                let g = &mut *g;
                let Inner { frames, stream, .. } = &mut *g;
                let read = if stream.is_tls() {
                    frames.poll_read_from(stream, &mut cx)
                } else {
                    match frames.read_with(|buf| stream.try_read(buf)) {
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Poll::Pending,
                        r => Poll::Ready(r),
                    }
                };
                match read {
                    Poll::Pending => break,
                    Poll::Ready(Ok(0)) => g.break_with(WireError::Closed),
                    Poll::Ready(Ok(_)) => g.process(),
                    Poll::Ready(Err(e)) => g.break_with(WireError::Io(e)),
                }
                if g.broken.is_some() {
                    break;
                }
            }
        }
        g.broken.is_some()
    }

    /// Sends statement `index` with `values` (one per parameter, of the types
    /// the server reported); the answer.
    pub(in super::super) fn send_prepared<'a, V: Param>(
        &'a self,
        index: usize,
        values: &[V],
    ) -> Result<Request<'a>, WireError> {
        let stmt = self
            .statement(index)
            .ok_or_else(|| WireError::Protocol(format!("statement {index} is not prepared")))?;
        let mut g = self.inner.borrow_mut();
        debug_assert!(
            !self.lone || g.queue.is_empty(),
            "a second op on a lone connection"
        );
        if let Some(e) = &g.broken {
            return Err(e.again());
        }
        let base = g.out.len();
        if let Err(e) = bind_execute_sync(&stmt.name, values, &mut g.out) {
            g.out.truncate(base);
            return Err(e);
        }
        Ok(g.push(self))
    }

    /// Sends `sql` by the simple query protocol; the answer (every
    /// statement's rows and counts together, the first error).
    pub(in super::super) fn send_simple<'a>(&'a self, sql: &str) -> Result<Request<'a>, WireError> {
        let mut g = self.inner.borrow_mut();
        debug_assert!(
            !self.lone || g.queue.is_empty(),
            "a second op on a lone connection"
        );
        if let Some(e) = &g.broken {
            return Err(e.again());
        }
        let base = g.out.len();
        if let Err(e) = frontend::query(sql, &mut g.out) {
            g.out.truncate(base);
            return Err(WireError::Io(e));
        }
        Ok(g.push(self))
    }
}

/// A parameter's value as a Bind message carries it.
pub(in super::super) trait Param {
    /// Whether it goes in the binary format (else text).
    fn binary(&self) -> bool;
    /// Appends its bytes (the Bind message's length word before them is
    /// filled in from what was appended).
    fn put(&self, out: &mut BytesMut);
}

/// The longest value a Bind message can carry (its length is an `i32`).
const MAX_VALUE: usize = i32::MAX as usize;

/// Execute (the unnamed portal, every row) and Sync, whole.
const EXECUTE_SYNC: [u8; 15] = [b'E', 0, 0, 0, 9, 0, 0, 0, 0, 0, b'S', 0, 0, 0, 4];

/// Appends Bind (the unnamed portal, statement `name`, `values` each in its
/// own format, every result column as text), Execute and Sync to `out`, as
/// one piece: the fixed-width parts are stored in place, so that an op of
/// fixed-width values copies only the statement's name through `memmove`
/// (the bytes equal `postgres_protocol`'s encoders':
/// `bind::tests::the_bind_message_is_the_protocol_crates_byte_for_byte`). On an
/// error `out` may hold part of the message: the caller truncates it.
pub(in super::super) fn bind_execute_sync<V: Param>(
    name: &str,
    values: &[V],
    out: &mut BytesMut,
) -> Result<(), WireError> {
    let count = i16::try_from(values.len()).map_err(|_| {
        WireError::Protocol(format!(
            "{} parameters: a statement takes at most {}",
            values.len(),
            i16::MAX
        ))
    })?;
    let start = out.len();
    // Tag, length, the unnamed portal's empty name; then the statement's.
    out.reserve(15 + name.len() + 8 + values.len() * 14 + EXECUTE_SYNC.len());
    out.extend_from_slice(&[b'B', 0, 0, 0, 0, 0]);
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(&[0]);
    out.extend_from_slice(&count.to_be_bytes());
    for v in values {
        out.extend_from_slice(&i16::from(v.binary()).to_be_bytes());
    }
    out.extend_from_slice(&count.to_be_bytes());
    for v in values {
        let at = out.len();
        out.extend_from_slice(&[0; 4]);
        v.put(out);
        let len = out.len() - at - 4;
        if len > MAX_VALUE {
            return Err(WireError::Io(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "value too large to transmit",
            )));
        }
        out[at..at + 4].copy_from_slice(&(len as i32).to_be_bytes());
    }
    // No result format codes: every column as text.
    out.extend_from_slice(&[0, 0]);
    let len = i32::try_from(out.len() - start - 1).map_err(|_| {
        WireError::Io(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "message too large to transmit",
        ))
    })?;
    out[start + 1..start + 5].copy_from_slice(&len.to_be_bytes());
    out.extend_from_slice(&EXECUTE_SYNC);
    Ok(())
}

impl Inner {
    fn push<'a>(&mut self, conn: &'a Conn) -> Request<'a> {
        let id = self.next_id;
        self.next_id += 1;
        self.queue.push_back(Slot {
            id,
            state: State::Waiting(None),
        });
        Request {
            conn,
            id,
            done: false,
        }
    }

    /// Takes every whole message read: counts the current answer, ends it
    /// at its ReadyForQuery.
    fn process(&mut self) {
        while let Some((tag, body)) = self.frames.next_message() {
            match tag {
                b'D' => self.tally.rows += 1,
                b'C' => {
                    self.tally.completed += match self.described_at.take() {
                        Some(before) => self.tally.rows - before,
                        None => frame::command_count(body),
                    }
                }
                b'T' => {
                    self.tally.described = true;
                    self.described_at = Some(self.tally.rows);
                }
                // ParseComplete, BindComplete, CloseComplete, NoData,
                // ParameterDescription, EmptyQueryResponse, PortalSuspended;
                // NoticeResponse, ParameterStatus, NotificationResponse.
                b'1' | b'2' | b'3' | b'n' | b't' | b'I' | b's' | b'N' | b'S' | b'A' => {}
                b'E' => {
                    let e = frame::error_of(body);
                    if self.answering >= self.queue.len() {
                        // No op asked: the server's goodbye while idle.
                        self.break_with(e);
                        return;
                    }
                    if self.error.is_none() {
                        self.error = Some(e);
                    }
                }
                b'Z' => {
                    self.status = body.first().copied().unwrap_or(b'I');
                    self.described_at = None;
                    let tally = std::mem::take(&mut self.tally);
                    let result = match self.error.take() {
                        Some(e) => Err(e),
                        None => Ok(tally),
                    };
                    if let Some(slot) = self.queue.get_mut(self.answering) {
                        self.answering += 1;
                        answer(slot, result);
                    }
                }
                other => {
                    let what = match other {
                        b'G' | b'H' | b'W' => "COPY, which the driver does not run".to_string(),
                        t => format!("message `{}`", t as char),
                    };
                    self.break_with(WireError::Protocol(what));
                    return;
                }
            }
        }
        if let Err(what) = self.frames.check() {
            self.break_with(WireError::Protocol(what));
        }
    }

    /// The connection is lost: the op being answered fails with the
    /// server's error if one came (a FATAL), every later one with `e`.
    fn break_with(&mut self, e: WireError) {
        let mut first = self.error.take();
        self.tally = Answer::default();
        while let Some(slot) = self.queue.get_mut(self.answering) {
            self.answering += 1;
            answer(slot, Err(first.take().unwrap_or_else(|| e.again())));
        }
        self.broken = Some(e);
    }

    /// Writes what is queued; `Pending` when the socket is full.
    fn poll_write(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        while self.written < self.out.len() {
            match Pin::new(&mut self.stream).poll_write(cx, &self.out[self.written..]) {
                Poll::Ready(Ok(0)) => {
                    return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
                }
                Poll::Ready(Ok(n)) => self.written += n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        if matches!(self.stream, Stream::Tls(_)) {
            std::task::ready!(Pin::new(&mut self.stream).poll_flush(cx))?;
        }
        self.out.clear();
        self.written = 0;
        Poll::Ready(Ok(()))
    }

    /// Takes op `id`'s waker out of its slot, if it waits with one.
    fn own_waker(&mut self, id: u64) -> Option<Waker> {
        match &mut self.queue.iter_mut().find(|s| s.id == id)?.state {
            State::Waiting(w) => w.take(),
            _ => None,
        }
    }

    /// Op `id`'s answer, if whole.
    fn take(&mut self, id: u64) -> Option<Result<Answer, WireError>> {
        let slot = self.queue.iter_mut().find(|s| s.id == id)?;
        if !matches!(slot.state, State::Done(_)) {
            return None;
        }
        let State::Done(result) = std::mem::replace(&mut slot.state, State::Taken) else {
            unreachable!("checked above")
        };
        Some(result)
    }

    /// Op `id` leaves: its slot goes once answered, and if the socket holds
    /// its waker another waiting op is woken to take over.
    fn leave(&mut self, id: u64) {
        if let Some(slot) = self.queue.iter_mut().find(|s| s.id == id) {
            slot.state = match std::mem::replace(&mut slot.state, State::Taken) {
                State::Waiting(_) => State::Abandoned,
                _ => State::Taken,
            };
        }
        while self
            .queue
            .front()
            .is_some_and(|s| matches!(s.state, State::Taken))
        {
            self.queue.pop_front();
            self.answering -= 1;
        }
        let held = self.reader == Some(id) || self.writer == Some(id);
        if self.reader == Some(id) {
            self.reader = None;
        }
        if self.writer == Some(id) {
            self.writer = None;
        }
        if held
            && let Some(w) = self.queue.iter().find_map(|s| match &s.state {
                State::Waiting(Some(w)) => Some(w),
                _ => None,
            })
        {
            w.wake_by_ref();
        }
    }
}

/// Hands `result` to the op of `slot`, waking it.
fn answer(slot: &mut Slot, result: Result<Answer, WireError>) {
    match std::mem::replace(&mut slot.state, State::Taken) {
        State::Waiting(w) => {
            slot.state = State::Done(result);
            if let Some(w) = w {
                w.wake();
            }
        }
        State::Abandoned | State::Taken => {}
        State::Done(r) => slot.state = State::Done(r),
    }
}

/// An op sent on a connection: resolves to its answer. Dropped before that,
/// its answer is read and thrown away.
pub(in super::super) struct Request<'a> {
    conn: &'a Conn,
    id: u64,
    done: bool,
}

impl Future for Request<'_> {
    type Output = Result<Answer, WireError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let id = self.id;
        let conn = self.conn;
        let mut guard = conn.inner.borrow_mut();
        let g = &mut *guard;
        // This op's waker, out of its slot while it reads: the answer it reads
        // for itself wakes no one (a wake of the op being polled queues it for
        // a poll of nothing); put back if it waits again.
        let mine = if conn.lone { None } else { g.own_waker(id) };
        if g.broken.is_none() && g.written < g.out.len() {
            match g.poll_write(cx) {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(e)) => g.break_with(WireError::Io(e)),
                Poll::Pending => g.writer = Some(id),
            }
        }
        let result = loop {
            g.process();
            if let Some(r) = g.take(id) {
                break Some(r);
            }
            if g.broken.is_some() {
                break g.take(id);
            }
            match g.frames.poll_read_from(&mut g.stream, cx) {
                Poll::Ready(Ok(0)) => g.break_with(WireError::Closed),
                Poll::Ready(Ok(_)) => {}
                Poll::Ready(Err(e)) => g.break_with(WireError::Io(e)),
                Poll::Pending => {
                    g.reader = Some(id);
                    break None;
                }
            }
        };
        match result {
            Some(r) => {
                g.leave(id);
                drop(guard);
                self.done = true;
                Poll::Ready(r)
            }
            None => {
                // A lone connection's op is woken by tokio's registration
                // only (`Conn::one_op_at_a_time`).
                if !conn.lone
                    && let Some(slot) = g.queue.iter_mut().find(|s| s.id == id)
                    && let State::Waiting(w) = &mut slot.state
                {
                    *w = Some(match mine {
                        Some(m) if m.will_wake(cx.waker()) => m,
                        _ => cx.waker().clone(),
                    });
                }
                Poll::Pending
            }
        }
    }
}

impl Drop for Request<'_> {
    fn drop(&mut self) {
        if !self.done
            && let Ok(mut g) = self.conn.inner.try_borrow_mut()
        {
            g.leave(self.id);
        }
    }
}

#[cfg(test)]
#[path = "hot_tests.rs"]
pub(super) mod tests;
