//! `GET /metrics`: the run's numbers for Prometheus (and Grafana behind it), in
//! the OpenMetrics text format (encoded by the `prometheus-client` crate,
//! `text.rs`) or, to a scraper that prefers it ([`wants_protobuf`]), in the
//! Prometheus protobuf exposition (`proto.rs`), the one format with native
//! histograms (`native.rs`). Both write the same list of families
//! (`families.rs`), built once per scrape.
//!
//! `paceline_info{version="X.Y.Z"} 1` says which paceline serves them. Every
//! other family is labelled `activity="ALIAS"`:
//!
//! | family | type | from |
//! |---|---|---|
//! | `paceline_ops_total` | counter | ops done (errors included) |
//! | `paceline_errors_total` | counter, also labelled `kind` | errors by kind |
//! | `paceline_retries_total` | counter | retries |
//! | `paceline_missed_slots_total` | counter | pacer slots that passed unused |
//! | `paceline_rate_target_ops_per_second` | gauge | the target rate in force, all threads together as in the summary (threads x the rate in thread scope); 0 when unpaced, paused or ended |
//! | `paceline_rate_achieved_ops_per_second` | gauge | the rate over the latest report interval; 0 once ended |
//! | `paceline_threads` | gauge | the thread count in force; 0 once ended |
//! | `paceline_paused` | gauge | 1 while paused, else 0 |
//! | `paceline_concurrency` | gauge | the async runner's cap on ops in flight (left out on the sync runner) |
//! | `paceline_in_flight_max` | gauge | the most ops in flight at once so far (async runner) |
//! | `paceline_cap_full_ratio` | gauge | the share of the run, 0 to 1, the workers had their share of the cap in flight (async runner) |
//! | `paceline_service_seconds`, `paceline_wait_seconds`, `paceline_response_seconds` | histogram | all ops so far |
//! | `paceline_queue_seconds`, `paceline_dispatch_seconds` | histogram | a paced op's wait split: behind earlier ops, and the generator's own lateness (the verdict's inputs) |
//! | `paceline_op_ops_total` | counter, also labelled `op` | each op's ops (activities whose engine knows their ops: [`paceline::OpTable`]) |
//! | `paceline_op_errors_total` | counter, also labelled `op` and `kind` | each op's errors by kind |
//! | `paceline_op_service_seconds`, `paceline_op_wait_seconds`, `paceline_op_response_seconds` | histogram, also labelled `op` | each op's times |
//!
//! The per-op families are families of their own, not `op`-labelled series of
//! the all-ops ones, so a sum over a family's series never counts an op twice;
//! their series are bounded by the op count ([`paceline::MAX_OPS`]).
//! `paceline_run_ended` (no labels) comes last when the run's target serves
//! it. The histograms' bounds are chosen by `--metrics-buckets` ([`BucketScheme`]).
//!
//! A coordinated activity (`coordinate=`, feature `redis`) adds its shared
//! schedule's numbers, as this process last read them from the store; the
//! families are left out when no activity is coordinated:
//!
//! | family | type | from |
//! |---|---|---|
//! | `paceline_shared_processes` | gauge | processes live in the schedule, this one included |
//! | `paceline_shared_rate_achieved_ops_per_second` | gauge | the schedule's achieved rate, every process together: set it, not `paceline_rate_achieved_ops_per_second` (this process's share), against `paceline_rate_target_ops_per_second` (the schedule's target) |
//! | `paceline_shared_completed_total` | counter | ops completed by every process of the schedule |
//! | `paceline_shared_rerun_cycles_total` | counter | cycles run again after the process that claimed them died |
//!
//! # Cost
//!
//! A scrape reads what the report loop already took: the totals of every interval
//! snapshot so far ([`paceline::Control::totals`]), the latest interval's rate,
//! and the activity's status. It takes no snapshot of its own and adds nothing
//! per op, so the numbers move once per `--report-interval`.
//!
//! # Why histograms, not summaries
//!
//! The totals are already cumulative HdrHistograms, so a Prometheus histogram
//! (cumulative buckets, `_sum`, `_count`) is a read of them: `rate()` over its
//! buckets gives any window's distribution, `histogram_quantile` any quantile,
//! and histograms of several runs or hosts add up. A summary's quantiles of the
//! latest interval could not be added or re-windowed. The price is resolution:
//! a quantile from buckets is only as fine as the buckets (10 per decade by
//! default, see [`buckets`]); the text, JSON and HDR-log reports keep the exact
//! percentiles.

mod buckets;
mod families;
mod native;
mod proto;
mod text;
pub use buckets::BucketScheme;
#[cfg(test)]
use buckets::Buckets;
#[cfg(test)]
pub(crate) use proto::MetricFamily as MetricFamilyMessage;
pub use proto::{CONTENT_TYPE as PROTOBUF_CONTENT_TYPE, wants_protobuf};

use paceline::Snapshot;

/// The `Content-Type` of a `/metrics` answer in text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// One activity's numbers at a scrape.
#[derive(Debug, Clone)]
pub struct ActivityMetrics {
    /// The activity's alias, the `activity` label.
    pub alias: String,
    /// Everything the report loop's snapshots have taken so far.
    pub totals: Snapshot,
    /// The target rate in force in ops/s, every thread's schedule together
    /// (`paceline::total_rate`: threads x the rate in thread scope), as the
    /// summary's: 0 when unpaced, paused or ended.
    pub rate_target: f64,
    /// Ops/s over the latest report interval: 0 before the first, and once the
    /// activity has ended.
    pub rate_achieved: f64,
    /// The thread count in force: 0 once the activity has ended.
    pub threads: usize,
    /// Whether the activity is paused now (control `pause`, or `rate=0`).
    pub paused: bool,
    /// The shared schedule's numbers (`paceline::Control::coordinated`); `None`
    /// when the activity paces alone.
    #[cfg(feature = "redis")]
    pub coordinated: Option<paceline::Coordinated>,
}

/// Encodes `activities` as one OpenMetrics exposition, `# EOF` included, the
/// latency histograms in `scheme`'s buckets. Families come in a fixed order,
/// activities in the order given.
#[cfg(test)]
pub fn encode(activities: &[ActivityMetrics], scheme: BucketScheme) -> String {
    encode_text(activities, scheme, None)
}

/// [`encode`], with the `paceline_run_ended` gauge last when `run_ended` is
/// given (1 once the run has ended and the numbers are final, 0 before).
pub fn encode_text(
    activities: &[ActivityMetrics],
    scheme: BucketScheme,
    run_ended: Option<bool>,
) -> String {
    text::encode(&families::families(activities, run_ended), scheme)
}

/// The same families as [`encode_text`] in the Prometheus protobuf
/// exposition ([`PROTOBUF_CONTENT_TYPE`]): length-delimited
/// `io.prometheus.client.MetricFamily` messages, the histograms with
/// `scheme`'s classic buckets and, for [`BucketScheme::Native`], native ones.
pub fn encode_protobuf(
    activities: &[ActivityMetrics],
    scheme: BucketScheme,
    run_ended: Option<bool>,
) -> Vec<u8> {
    proto::encode(&families::families(activities, run_ended), scheme)
}

#[cfg(test)]
mod proto_tests;
#[cfg(test)]
pub(crate) mod tests;
