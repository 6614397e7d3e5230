//! Metrics: per-thread recorders, interval snapshots, totals and a timeline.
//!
//! One [`Metrics`] hub per activity. Each worker thread takes its own [`Recorder`]
//! from the hub and records every op into it: service, wait and response times,
//! and for paced ops wait's two parts, queueing and dispatch
//! ([`Recorder::record_split`]) (HdrHistograms with 3 significant digits that
//! grow as needed; service, wait and response kept on the hot path as bare
//! bucket counts in that layout, made into histograms when read) and counters
//! (ops, errors by [`ErrorKind`], retries, missed slots). A reader calls
//! [`Metrics::snapshot`] to take everything recorded since the last snapshot as one
//! [`Snapshot`]; [`Metrics::totals`] is the merge of every snapshot taken so far.
//!
//! ```
//! use paceline::Metrics;
//! let metrics = Metrics::new(0);
//! let mut rec = metrics.recorder();
//! rec.record(2_000, 50_000);          // wait 2 µs, service 50 µs
//! let snap = metrics.snapshot(1_000_000_000);
//! assert_eq!(snap.ops(), 1);
//! let p99 = snap.response().p99();
//! assert!((52_000..52_100).contains(&p99)); // 3 significant digits
//! ```
//!
//! # Fast paths
//!
//! | path | invariant | pinned by |
//! |---|---|---|
//! | a split op on time (`wait` 0) is counted, not recorded into `queue` and `dispatch` | a read adds the count to both as zeros | `tests/metrics.rs` `on_time_ops_are_zeros_in_the_queue_and_dispatch_distributions` |
//! | an op's own times are bare bucket counts (`buckets.rs`), not histogram records | the histograms a read makes from them equal ones recorded value by value | `buckets::tests::made_histograms_equal_recorded_ones`, `tests/metrics_by_op.rs` |
//! | a split op's queue and dispatch are bucket counts too, not histogram records | as above: the snapshot's `queue` and `dispatch` equal histograms that recorded each value | `tests/metrics_figures.rs` `snapshots_and_totals_read_the_old_figures` |
//! | a snapshot moves each buffer's counts out (add and zero in one pass: `take_from`, `Snapshot::take_interval`); no reset pass over the buffers | every count is read exactly once and every buffer is empty after the read | `tests/metrics_figures.rs` (each round's snapshot equals that round's values alone, the totals all rounds'), `tests/metrics.rs` |
//! | a distribution a snapshot makes carries its `Summary`, read off the counts in that pass; its percentiles and mean are then read in constant time | the figures equal HdrHistogram's `value_at_quantile` and `mean` bit for bit (the same counts visited in the same order, the same `f64` fold); a `record` or `merge` drops them | `tests/metrics_figures.rs` `snapshots_and_totals_read_the_old_figures` (values 0, 1, 2^61, past it, `u64::MAX`) |
//!
//! What each saves is in `benches/README.md` (`metrics/record_per_op`;
//! session 17, branch `rec`: the record and the tick under callgrind).
//!
//! # Ground rules
//!
//! No atomics: every shared word sits behind a lock, and each lock has one role.
//!
//! - **Slot lock** (one per recorder): the recorder takes it for the few
//!   nanoseconds of one `record`; the reader takes it only to swap the live buffer
//!   for an empty spare. Nobody else ever touches it, so on the hot path it is
//!   uncontended, and a reader waits at most for one record, never for an idle
//!   worker (an idle worker holds nothing). This is the double buffer: the reader
//!   moves the counts out of the buffer it took, outside the lock (leaving it
//!   empty), and keeps it as the next spare, so steady state allocates nothing.
//! - **Registry lock**: guards the list of live slots, the data handed over by
//!   recorders that left, the totals and the last snapshot's end. Taken by
//!   `recorder()`, by a recorder's `Drop`, and by `snapshot`; never by `record`.
//!   Lock order is registry, then slot; a leaving recorder moves its unread data to
//!   the hand-over buffer under the registry lock, so a snapshot sees it exactly
//!   once: either still in its slot or in the hand-over buffer.
//! - **Kinds lock**: the interned error-kind names; taken when a kind is created and
//!   when a snapshot names its error counts (after the registry lock, never before).
//! - **Timeline lock**: the control plane's events; independent of the others.

mod buckets;
mod by_op;
mod cgroup;
mod hub;
mod latencies;
mod recorder;
mod snapshot;
mod timeline;

pub use by_op::{OP_DIGITS, OpStats};
pub use cgroup::{CGROUP_CPU_STAT_ENV, ThrottleMeter, Throttling};
pub use hub::{ErrorKind, Metrics};
pub use latencies::{Latencies, Summary};
pub use recorder::Recorder;
pub use snapshot::Snapshot;
pub use timeline::{Event, TimelineEntry};
