//! `GET /metrics`: the run's numbers in the OpenMetrics text format, encoded by
//! the `prometheus-client` crate, for Prometheus (and Grafana behind it).
//!
//! Every family is labelled `activity="ALIAS"`:
//!
//! | family | type | from |
//! |---|---|---|
//! | `paceline_ops_total` | counter | ops done (errors included) |
//! | `paceline_errors_total` | counter, also labelled `kind` | errors by kind |
//! | `paceline_retries_total` | counter | retries |
//! | `paceline_missed_slots_total` | counter | pacer slots that passed unused |
//! | `paceline_rate_target` | gauge | the rate in force, ops/s; 0 when unpaced, paused or ended |
//! | `paceline_rate_achieved` | gauge | ops/s over the latest report interval |
//! | `paceline_threads` | gauge | the thread count in force |
//! | `paceline_service_seconds`, `paceline_wait_seconds`, `paceline_response_seconds` | histogram | all ops so far, in [`BUCKETS`] |
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
//! a quantile from buckets is only as fine as [`BUCKETS`] (1-2.5-5 steps); the
//! text, JSON and HDR-log reports keep the exact percentiles.

use paceline::{Latencies, Snapshot};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

/// The `Content-Type` of a `/metrics` answer.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// The latency histograms' upper bounds in seconds, 1 µs to 10 s in 1-2.5-5
/// steps; `+Inf` follows.
pub const BUCKETS: [f64; 22] = [
    1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2,
    5e-2, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// One activity's numbers at a scrape.
#[derive(Debug, Clone)]
pub struct ActivityMetrics {
    /// The activity's alias, the `activity` label.
    pub alias: String,
    /// Everything the report loop's snapshots have taken so far.
    pub totals: Snapshot,
    /// The rate in force in ops/s: 0 when unpaced, paused or ended.
    pub rate_target: f64,
    /// Ops/s over the latest report interval (0 before the first).
    pub rate_achieved: f64,
    /// The thread count in force.
    pub threads: usize,
}

/// Encodes `activities` as one OpenMetrics exposition, `# EOF` included.
/// Families come in a fixed order, activities in the order given.
pub fn encode(activities: &[ActivityMetrics]) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Families(activities.to_vec())));
    let mut out = String::new();
    // Writing to a String cannot fail; an encoder error would be a bug in a
    // family below, and an empty answer says so to the scraper.
    match prometheus_client::encoding::text::encode(&mut out, &registry) {
        Ok(()) => out,
        Err(_) => String::new(),
    }
}

/// The activities as a collector: each scrape builds one and encodes it once.
#[derive(Debug)]
struct Families(Vec<ActivityMetrics>);

type Label<'a> = [(&'static str, &'a str); 1];

impl Collector for Families {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let label = |a: &ActivityMetrics| -> [(&'static str, String); 1] {
            [("activity", a.alias.clone())]
        };
        let counters: [(&str, &str, fn(&Snapshot) -> u64); 3] = [
            ("paceline_ops", "Ops done, errors included.", Snapshot::ops),
            ("paceline_retries", "Retries of failed ops.", Snapshot::retries),
            (
                "paceline_missed_slots",
                "Pacer slots that passed without an op.",
                Snapshot::missed,
            ),
        ];
        for (name, help, value) in counters {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            for a in &self.0 {
                family
                    .encode_family(&label(a))?
                    .encode_counter::<NoLabelSet, _, u64>(&value(&a.totals), None)?;
            }
        }
        let mut errors = encoder.encode_descriptor(
            "paceline_errors",
            "Ops that ended in an error, by kind.",
            None,
            MetricType::Counter,
        )?;
        for a in &self.0 {
            for (kind, n) in a.totals.errors() {
                let labels: [(&'static str, &str); 2] =
                    [("activity", a.alias.as_str()), ("kind", kind)];
                errors
                    .encode_family(&labels)?
                    .encode_counter::<NoLabelSet, _, u64>(&n, None)?;
            }
        }
        let gauges: [(&str, &str, fn(&ActivityMetrics) -> f64); 3] = [
            (
                "paceline_rate_target",
                "The rate in force, ops/s; 0 when unpaced, paused or ended.",
                |a| a.rate_target,
            ),
            (
                "paceline_rate_achieved",
                "Ops/s over the latest report interval.",
                |a| a.rate_achieved,
            ),
            (
                "paceline_threads",
                "The thread count in force.",
                |a| a.threads as f64,
            ),
        ];
        for (name, help, value) in gauges {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for a in &self.0 {
                let labels: Label<'_> = [("activity", a.alias.as_str())];
                let v = value(a);
                // Whole numbers go out as integers (`2`, not `2.0`).
                if v.fract() == 0.0 && v.abs() < 9.0e15 {
                    family.encode_family(&labels)?.encode_gauge(&(v as i64))?;
                } else {
                    family.encode_family(&labels)?.encode_gauge(&v)?;
                }
            }
        }
        let latencies: [(&str, &str, fn(&Snapshot) -> &Latencies); 3] = [
            (
                "paceline_service",
                "Time in the driver per op (the op's own time).",
                Snapshot::service,
            ),
            (
                "paceline_wait",
                "Time from an op's scheduled start to its actual start.",
                Snapshot::wait,
            ),
            (
                "paceline_response",
                "Time from an op's scheduled start to its end (wait + service).",
                Snapshot::response,
            ),
        ];
        for (name, help, value) in latencies {
            let mut family = encoder.encode_descriptor(
                name,
                help,
                Some(&Unit::Seconds),
                MetricType::Histogram,
            )?;
            for a in &self.0 {
                let h = Buckets::of(value(&a.totals));
                family
                    .encode_family(&label(a))?
                    .encode_histogram::<NoLabelSet>(h.sum, h.count, &h.buckets, None)?;
            }
        }
        Ok(())
    }
}

/// A latency distribution in [`BUCKETS`]: per-bucket counts (not cumulative:
/// the encoder adds them up), `+Inf` last.
#[derive(Debug, Clone, PartialEq)]
pub struct Buckets {
    /// Sum of every value, in seconds.
    pub sum: f64,
    /// How many values.
    pub count: u64,
    /// `(upper bound in seconds, values in this bucket only)`.
    pub buckets: Vec<(f64, u64)>,
}

impl Buckets {
    /// Sorts the recorded values of `latencies` into [`BUCKETS`]. A value goes to
    /// the first bucket whose bound is at least the value's HdrHistogram
    /// equivalent (its 3 significant digits).
    pub fn of(latencies: &Latencies) -> Self {
        let mut buckets: Vec<(f64, u64)> = BUCKETS
            .iter()
            .chain(std::iter::once(&f64::INFINITY))
            .map(|&b| (b, 0))
            .collect();
        let mut sum = 0.0;
        let mut count = 0;
        for v in latencies.histogram().iter_recorded() {
            let n = v.count_at_value();
            let secs = v.value_iterated_to() as f64 / 1e9;
            sum += secs * n as f64;
            count += n;
            // The last bound is +Inf, so a bucket is always found.
            if let Some(b) = buckets.iter_mut().find(|(bound, _)| secs <= *bound) {
                b.1 += n;
            }
        }
        Self {
            sum,
            count,
            buckets,
        }
    }
}
