//! The per-activity hub: creates recorders, takes snapshots, keeps totals.

use super::recorder::{Interval, Recorder, Slot};
use super::snapshot::Snapshot;
use super::timeline::{Event, TimelineEntry};
use crate::nanos::Nanos;
use crate::sync::{self, Arc, Mutex};
use std::fmt;

/// An interned error kind: a small id standing for a name such as `"timeout"`.
///
/// Create kinds once with [`Metrics::error_kind`] and count them on the hot path
/// with [`Recorder::error`]. A kind belongs to the hub that made it.
///
/// ```
/// let metrics = paceline::Metrics::new(0);
/// let a = metrics.error_kind("timeout");
/// assert_eq!(a, metrics.error_kind("timeout")); // same name, same kind
/// assert_ne!(a, metrics.error_kind("refused"));
/// assert_eq!(metrics.error_kind_name(a).as_deref(), Some("timeout"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ErrorKind(u32);

impl ErrorKind {
    /// The kind's index among its hub's kinds, in order of creation.
    ///
    /// ```
    /// let metrics = paceline::Metrics::new(0);
    /// assert_eq!(metrics.error_kind("first").id(), 0);
    /// assert_eq!(metrics.error_kind("second").id(), 1);
    /// ```
    pub fn id(self) -> u32 {
        self.0
    }
}

/// What the registry lock guards; see the module's ground rules.
struct Registry {
    /// Live recorders' slots, each with the reader's spare buffer for the swap.
    slots: Vec<(Arc<Slot>, Box<Interval>)>,
    /// Unread data handed over by recorders that were dropped.
    departed: Box<Interval>,
    /// The reader's buffer in which one snapshot's data is summed.
    scratch: Box<Interval>,
    /// The end of the last snapshot: the start of the next one.
    last_end: Nanos,
    /// The merge of every snapshot taken.
    totals: Snapshot,
    /// Whether the schedule has begun ([`Metrics::schedule_started`] was called).
    begun: bool,
}

pub(crate) struct Hub {
    registry: Mutex<Registry>,
    /// The op names, by op index ([`Metrics::with_ops`]); fixed for the hub's life.
    op_names: Vec<crate::sync::threads::Arc<str>>,
    kinds: Mutex<Vec<String>>,
    /// The first message kept for each error kind, by kind name.
    first: Mutex<std::collections::BTreeMap<String, String>>,
    timeline: Mutex<Timeline>,
}

/// The timeline: entries in time order, each with its mark number (the order in
/// which it was marked), so a polling reader's cursor counts marks, not positions.
#[derive(Default)]
struct Timeline {
    entries: Vec<(u64, TimelineEntry)>,
    marked: u64,
}

impl Hub {
    pub(crate) fn intern(&self, name: &str) -> ErrorKind {
        let mut kinds = sync::lock(&self.kinds);
        if let Some(i) = kinds.iter().position(|k| k == name) {
            return ErrorKind(i as u32);
        }
        kinds.push(name.to_string());
        ErrorKind((kinds.len() - 1) as u32)
    }

    /// Keeps `message` as the first message of the kind `name`, unless one is
    /// kept already.
    pub(crate) fn note_first(&self, name: &str, message: &str) {
        let mut first = sync::lock(&self.first);
        if !first.contains_key(name) {
            first.insert(name.to_string(), message.to_string());
        }
    }

    /// Removes `slot` from the registry and hands its unread data over.
    pub(crate) fn retire(&self, slot: &Arc<Slot>) {
        let mut reg = sync::lock(&self.registry);
        if let Some(i) = reg.slots.iter().position(|(s, _)| Arc::ptr_eq(s, slot)) {
            reg.slots.swap_remove(i);
        }
        let live = sync::lock(&slot.live);
        reg.departed.absorb(&live);
    }
}

/// The metrics hub of one activity: makes [`Recorder`]s, takes interval
/// [`Snapshot`]s, keeps totals and a timeline of control events.
///
/// Cloning is cheap and shares the hub. Time is passed in (nanoseconds on the
/// activity's clock), so snapshots work the same on a manual clock.
///
/// ```
/// use paceline::{Event, Metrics};
/// let metrics = Metrics::new(0);
/// let mut rec = metrics.recorder();
/// for i in 1..=1000 {
///     rec.record(0, i * 1_000); // services of 1 µs .. 1 ms
/// }
/// metrics.mark(500_000_000, Event::Threads { from: 1, to: 2 });
/// let first = metrics.snapshot(1_000_000_000);
/// assert_eq!(first.ops(), 1000);
/// assert_eq!(first.rate(), 1000.0);                    // ops per second
/// assert!((499_000..=501_000).contains(&first.service().p50()));
/// rec.record(0, 5);
/// let second = metrics.snapshot(2_000_000_000);
/// assert_eq!((second.start(), second.ops()), (1_000_000_000, 1));
/// assert_eq!(metrics.totals().ops(), 1001);
/// assert_eq!(metrics.timeline()[0].to_string(), "0.500s threads 1 -> 2");
/// ```
#[derive(Clone)]
pub struct Metrics {
    hub: Arc<Hub>,
}

impl fmt::Debug for Metrics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let reg = sync::lock(&self.hub.registry);
        f.debug_struct("Metrics")
            .field("recorders", &reg.slots.len())
            .field("last_snapshot_end", &reg.last_end)
            .finish()
    }
}

impl Metrics {
    /// A hub whose first interval starts at `start` nanoseconds.
    ///
    /// ```
    /// let metrics = paceline::Metrics::new(5);
    /// assert_eq!(metrics.snapshot(10).start(), 5);
    /// ```
    pub fn new(start: Nanos) -> Self {
        Self::with_ops(start, &[] as &[&str])
    }

    /// A hub whose first interval starts at `start`, that keeps figures per op
    /// for the ops named in `names` (op index `i` is `names[i]`): recorders
    /// say which op they record with [`Recorder::set_op`], and snapshots carry
    /// each op's figures ([`Snapshot::by_op`]) besides the all-ops ones. Each
    /// recorder holds one set of histograms per name, so keep the table to the
    /// activity's ops.
    ///
    /// ```
    /// let metrics = paceline::Metrics::with_ops(0, &["read", "write"]);
    /// let mut rec = metrics.recorder();
    /// rec.set_op(1);
    /// rec.record(5, 20);
    /// let s = metrics.snapshot(1);
    /// let names: Vec<&str> = s.by_op().iter().map(|o| o.name()).collect();
    /// assert_eq!(names, ["read", "write"]);
    /// assert_eq!((s.by_op()[1].ops(), s.ops()), (1, 1));
    /// ```
    pub fn with_ops(start: Nanos, names: &[impl AsRef<str>]) -> Self {
        Self {
            hub: Arc::new(Hub {
                registry: Mutex::new(Registry {
                    slots: Vec::new(),
                    departed: Box::new(Interval::new()),
                    scratch: Box::new(Interval::new()),
                    last_end: start,
                    totals: Snapshot::empty(start, start),
                    begun: false,
                }),
                op_names: names
                    .iter()
                    .map(|n| crate::sync::threads::Arc::from(n.as_ref()))
                    .collect(),
                kinds: Mutex::new(Vec::new()),
                first: Mutex::new(std::collections::BTreeMap::new()),
                timeline: Mutex::new(Timeline::default()),
            }),
        }
    }

    /// A new recorder for one worker thread. Give each thread its own.
    ///
    /// ```
    /// let metrics = paceline::Metrics::new(0);
    /// let rec = metrics.recorder();
    /// assert_eq!(metrics.recorders(), 1);
    /// drop(rec);
    /// assert_eq!(metrics.recorders(), 0);
    /// ```
    pub fn recorder(&self) -> Recorder {
        let ops = self.hub.op_names.len();
        let slot = Arc::new(Slot {
            live: Mutex::new(Box::new(Interval::with_ops(ops))),
        });
        sync::lock(&self.hub.registry)
            .slots
            .push((slot.clone(), Box::new(Interval::with_ops(ops))));
        Recorder::new(slot, self.hub.clone())
    }

    /// How many recorders are live.
    ///
    /// ```
    /// assert_eq!(paceline::Metrics::new(0).recorders(), 0);
    /// ```
    pub fn recorders(&self) -> usize {
        sync::lock(&self.hub.registry).slots.len()
    }

    /// The kind named `name`, created on first use. Call once per kind, outside
    /// the hot path.
    ///
    /// ```
    /// let metrics = paceline::Metrics::new(0);
    /// let k = metrics.error_kind("timeout");
    /// assert_eq!(metrics.error_kind_name(k).as_deref(), Some("timeout"));
    /// ```
    pub fn error_kind(&self, name: &str) -> ErrorKind {
        self.hub.intern(name)
    }

    /// The first message kept for each error kind (by
    /// [`Recorder::error_with`]), as `(kind, message)` in kind-name order.
    ///
    /// ```
    /// let metrics = paceline::Metrics::new(0);
    /// let mut rec = metrics.recorder();
    /// rec.error_with("http 5xx", "http://h/x answered 503");
    /// rec.error_with("http 5xx", "http://h/y answered 500");
    /// assert_eq!(
    ///     metrics.first_errors(),
    ///     [("http 5xx".to_string(), "http://h/x answered 503".to_string())]
    /// );
    /// ```
    pub fn first_errors(&self) -> Vec<(String, String)> {
        sync::lock(&self.hub.first)
            .iter()
            .map(|(k, m)| (k.clone(), m.clone()))
            .collect()
    }

    /// The name of `kind`, or `None` if this hub did not make it.
    ///
    /// ```
    /// let metrics = paceline::Metrics::new(0);
    /// let other = paceline::Metrics::new(0).error_kind("x");
    /// assert_eq!(metrics.error_kind_name(other), None);
    /// ```
    pub fn error_kind_name(&self, kind: ErrorKind) -> Option<String> {
        sync::lock(&self.hub.kinds).get(kind.0 as usize).cloned()
    }

    /// Takes everything recorded since the previous snapshot (or since
    /// [`new`](Self::new)) as one interval ending at `now`, and adds it to the
    /// totals. Never waits for an idle worker: each recorder's buffer is swapped
    /// for an empty one under that recorder's own lock, which a worker holds only
    /// while recording one op.
    ///
    /// `now` earlier than the previous end is taken as the previous end.
    ///
    /// ```
    /// let metrics = paceline::Metrics::new(0);
    /// let mut rec = metrics.recorder();
    /// rec.record(1, 2);
    /// assert_eq!(metrics.snapshot(10).ops(), 1);
    /// assert_eq!(metrics.snapshot(20).ops(), 0); // each op is in one interval
    /// ```
    pub fn snapshot(&self, now: Nanos) -> Snapshot {
        self.snapshot_with(now, |_| {})
    }

    /// [`snapshot`](Self::snapshot), with `gauge` adding figures the recorders
    /// do not hold (the async runner's ops in flight) before it joins the totals.
    pub(crate) fn snapshot_with(&self, now: Nanos, gauge: impl FnOnce(&mut Snapshot)) -> Snapshot {
        let mut guard = sync::lock(&self.hub.registry);
        let reg = &mut *guard;
        let start = reg.last_end;
        let end = now.max(start);
        let sum = &mut reg.scratch;
        // Each buffer read is left empty by the read itself (`take_from`,
        // `take_interval`): no reset pass follows.
        sum.take_from(&mut reg.departed);
        for (slot, spare) in reg.slots.iter_mut() {
            {
                let mut live = sync::lock(&slot.live);
                std::mem::swap(&mut *live, spare);
            }
            sum.take_from(spare);
        }
        let mut snap = {
            let kinds = sync::lock(&self.hub.kinds);
            Snapshot::take_interval(start, end, sum, &kinds, &self.hub.op_names)
        };
        gauge(&mut snap);
        snap.set_set_up(!reg.begun);
        reg.last_end = end;
        reg.totals.merge(&snap);
        snap
    }

    /// The schedule's first slot came at `at`: the window of the next snapshot
    /// and of the totals starts there, and the time from the hub's start to it
    /// is the run's set-up ([`Snapshot::setup_nanos`]: the workers opening their
    /// connections), no part of any rate. Only before the first op is counted and
    /// after the hub's start; later, or earlier, nothing moves.
    ///
    /// ```
    /// let metrics = paceline::Metrics::new(0);
    /// metrics.schedule_started(74_000_000); // 74 ms of connecting
    /// let mut rec = metrics.recorder();
    /// rec.record(0, 50_000_000);
    /// let s = metrics.snapshot(1_074_000_000);
    /// assert_eq!((s.start(), s.rate()), (74_000_000, 1.0));
    /// let t = metrics.totals();
    /// assert_eq!((t.elapsed_nanos(), t.setup_nanos()), (1_000_000_000, 74_000_000));
    /// ```
    pub fn schedule_started(&self, at: Nanos) {
        let mut guard = sync::lock(&self.hub.registry);
        let reg = &mut *guard;
        reg.begun = true;
        let origin = reg.totals.start();
        if reg.totals.ops() > 0 || reg.totals.setup_nanos() > 0 || at <= origin {
            return;
        }
        reg.last_end = reg.last_end.max(at);
        reg.totals.start_at(at, at - origin);
    }

    /// The schedule ended at `at` with cycles left (its duration's end, a stop,
    /// an error): the totals' [`Snapshot::schedule_end`]. The first call wins.
    ///
    /// ```
    /// let metrics = paceline::Metrics::new(0);
    /// metrics.schedule_ended(3);
    /// metrics.schedule_ended(9);
    /// assert_eq!(metrics.totals().schedule_end(), Some(3));
    /// ```
    pub fn schedule_ended(&self, at: Nanos) {
        sync::lock(&self.hub.registry).totals.set_schedule_end(at);
    }

    /// Where the run's window starts: the schedule's first slot once it began
    /// ([`schedule_started`](Self::schedule_started)), else the hub's start. The
    /// reports count interval times from it, as every rate over the window does.
    ///
    /// ```
    /// let metrics = paceline::Metrics::new(5);
    /// assert_eq!(metrics.window_start(), 5);
    /// metrics.schedule_started(300);
    /// assert_eq!(metrics.window_start(), 300);
    /// ```
    pub fn window_start(&self) -> Nanos {
        sync::lock(&self.hub.registry).totals.start()
    }

    /// The schedule's first slot ([`window_start`](Self::window_start)) once the
    /// schedule has begun; `None` before (a launch at `rate=0`, a long set-up):
    /// the reports then know no first slot to count from.
    ///
    /// ```
    /// let metrics = paceline::Metrics::new(5);
    /// assert_eq!(metrics.first_slot(), None);
    /// metrics.schedule_started(300);
    /// assert_eq!(metrics.first_slot(), Some(300));
    /// ```
    pub fn first_slot(&self) -> Option<Nanos> {
        let reg = sync::lock(&self.hub.registry);
        reg.begun.then(|| reg.totals.start())
    }

    /// The merge of every snapshot taken so far: ops, errors and histograms from
    /// the hub's start to the last snapshot's end.
    ///
    /// ```
    /// let metrics = paceline::Metrics::new(0);
    /// let mut rec = metrics.recorder();
    /// rec.record(0, 10);
    /// metrics.snapshot(1);
    /// rec.record(0, 20);
    /// metrics.snapshot(2);
    /// let t = metrics.totals();
    /// assert_eq!((t.start(), t.end(), t.ops()), (0, 2, 2));
    /// assert_eq!(t.service().max(), 20);
    /// ```
    pub fn totals(&self) -> Snapshot {
        sync::lock(&self.hub.registry).totals.clone()
    }

    /// Appends an event to the timeline at `at` nanoseconds. Entries stay ordered
    /// by time; entries at the same time keep the order they were marked in.
    ///
    /// ```
    /// use paceline::{Event, Metrics};
    /// let metrics = Metrics::new(0);
    /// metrics.mark(2_000_000_000, Event::Rate { from: 1000.0, to: 5000.0 });
    /// metrics.mark(1_000_000_000, Event::Started);
    /// let t = metrics.timeline();
    /// assert_eq!(t[0].event, Event::Started);
    /// assert_eq!(t[1].to_string(), "2.000s rate 1000 -> 5000");
    /// ```
    pub fn mark(&self, at: Nanos, event: Event) {
        let mut t = sync::lock(&self.hub.timeline);
        let i = t.entries.partition_point(|(_, e)| e.at <= at);
        let n = t.marked;
        t.marked += 1;
        t.entries.insert(i, (n, TimelineEntry { at, event }));
    }

    /// The whole timeline, in time order.
    ///
    /// ```
    /// assert!(paceline::Metrics::new(0).timeline().is_empty());
    /// ```
    pub fn timeline(&self) -> Vec<TimelineEntry> {
        sync::lock(&self.hub.timeline)
            .entries
            .iter()
            .map(|(_, e)| e.clone())
            .collect()
    }

    /// The entries marked after the first `seen` marks, in time order, for readers
    /// that poll: pass the number of entries read so far. An entry marked with an
    /// earlier time than one already read is still returned once, never twice.
    ///
    /// ```
    /// use paceline::{Event, Metrics};
    /// let metrics = Metrics::new(0);
    /// metrics.mark(2, Event::Started);
    /// assert_eq!(metrics.timeline_since(0).len(), 1);
    /// metrics.mark(1, Event::Stopped); // marked later, but earlier in time
    /// let new = metrics.timeline_since(1);
    /// assert_eq!((new.len(), &new[0].event), (1, &Event::Stopped));
    /// ```
    pub fn timeline_since(&self, seen: usize) -> Vec<TimelineEntry> {
        let t = sync::lock(&self.hub.timeline);
        t.entries
            .iter()
            .filter(|(n, _)| *n >= seen as u64)
            .map(|(_, e)| e.clone())
            .collect()
    }
}
