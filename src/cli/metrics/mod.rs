//! `GET /metrics`: the run's numbers in the OpenMetrics text format, encoded by
//! the `prometheus-client` crate, for Prometheus (and Grafana behind it).
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
//! | `paceline_rate_target_ops_per_second` | gauge | the rate in force; 0 when unpaced, paused or ended |
//! | `paceline_rate_achieved_ops_per_second` | gauge | the rate over the latest report interval; 0 once ended |
//! | `paceline_threads` | gauge | the thread count in force; 0 once ended |
//! | `paceline_paused` | gauge | 1 while paused, else 0 |
//! | `paceline_concurrency` | gauge | the async runner's cap on ops in flight (left out on the sync runner) |
//! | `paceline_in_flight_max` | gauge | the most ops in flight at once so far (async runner) |
//! | `paceline_cap_full_ratio` | gauge | the share of the run, 0 to 1, the workers had their share of the cap in flight (async runner) |
//! | `paceline_service_seconds`, `paceline_wait_seconds`, `paceline_response_seconds` | histogram | all ops so far |
//! | `paceline_queue_seconds`, `paceline_dispatch_seconds` | histogram | a paced op's wait split: behind earlier ops, and the generator's own lateness (the verdict's inputs) |
//!
//! The histograms' bounds are chosen by `--metrics-buckets` ([`BucketScheme`]).
//!
//! A coordinated activity (`coordinate=`, feature `redis`) adds its shared
//! schedule's numbers, as this process last read them from the store; the
//! families are left out when no activity is coordinated:
//!
//! | family | type | from |
//! |---|---|---|
//! | `paceline_shared_processes` | gauge | processes live in the schedule, this one included |
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
pub use buckets::{BucketScheme, Buckets};

use paceline::{Latencies, Snapshot};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

/// The `Content-Type` of a `/metrics` answer.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// One activity's numbers at a scrape.
#[derive(Debug, Clone)]
pub struct ActivityMetrics {
    /// The activity's alias, the `activity` label.
    pub alias: String,
    /// Everything the report loop's snapshots have taken so far.
    pub totals: Snapshot,
    /// The rate in force in ops/s: 0 when unpaced, paused or ended.
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
pub fn encode(activities: &[ActivityMetrics], scheme: BucketScheme) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Families(activities.to_vec(), scheme)));
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
struct Families(Vec<ActivityMetrics>, BucketScheme);

type Label<'a> = [(&'static str, &'a str); 1];

/// A family: its name (before the suffixes the encoder adds), its help, and how
/// to read its value.
type Described<F> = (&'static str, &'static str, F);
/// Reads a counter from the totals.
type CountOf = fn(&Snapshot) -> u64;
/// Reads a gauge.
type GaugeOf = fn(&ActivityMetrics) -> f64;
/// Reads a latency distribution from the totals.
type LatenciesOf = fn(&Snapshot) -> &Latencies;
/// Reads a counter from a shared schedule's numbers.
#[cfg(feature = "redis")]
type SharedCount = fn(&paceline::Coordinated) -> u64;

impl Collector for Families {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        // A family without samples is left out, as exporters do (and some parsers
        // refuse a descriptor with nothing under it).
        if self.0.is_empty() {
            return Ok(());
        }
        // `paceline_info{version="…"} 1`: which paceline serves these numbers.
        encoder
            .encode_descriptor(
                "paceline",
                "The paceline serving these metrics.",
                None,
                MetricType::Info,
            )?
            .encode_info(&[("version", env!("CARGO_PKG_VERSION"))])?;
        let label = |a: &ActivityMetrics| -> [(&'static str, String); 1] {
            [("activity", a.alias.clone())]
        };
        let counters: [Described<CountOf>; 3] = [
            ("paceline_ops", "Ops done, errors included.", Snapshot::ops),
            (
                "paceline_retries",
                "Retries of failed ops.",
                Snapshot::retries,
            ),
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
        if self.0.iter().any(|a| a.totals.error_count() > 0) {
            self.encode_errors(&mut encoder)?;
        }

        let ops_per_second = Unit::Other("ops_per_second".to_string());
        let gauges: [(&str, &str, Option<&Unit>, GaugeOf); 4] = [
            (
                "paceline_rate_target",
                "The rate in force, ops/s; 0 when unpaced, paused or ended.",
                Some(&ops_per_second),
                |a| a.rate_target,
            ),
            (
                "paceline_rate_achieved",
                "Ops/s over the latest report interval; 0 once ended.",
                Some(&ops_per_second),
                |a| a.rate_achieved,
            ),
            (
                "paceline_threads",
                "The thread count in force; 0 once ended.",
                None,
                |a| a.threads as f64,
            ),
            (
                "paceline_paused",
                "1 while the activity is paused (control pause, or rate=0), else 0.",
                None,
                |a| f64::from(u8::from(a.paused)),
            ),
        ];
        for (name, help, unit, value) in gauges {
            let mut family = encoder.encode_descriptor(name, help, unit, MetricType::Gauge)?;
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
        self.encode_in_flight(&mut encoder)?;
        #[cfg(feature = "redis")]
        self.encode_shared(&mut encoder)?;
        let latencies: [Described<LatenciesOf>; 5] = [
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
            (
                "paceline_queue",
                "Part of a paced op's wait spent because its worker was busy with earlier ops.",
                Snapshot::queue,
            ),
            (
                "paceline_dispatch",
                "Part of a paced op's wait after its worker was free: the generator's own lateness.",
                Snapshot::dispatch,
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
                let h = Buckets::in_scheme(value(&a.totals), self.1);
                family
                    .encode_family(&label(a))?
                    .encode_histogram::<NoLabelSet>(h.sum, h.count, &h.buckets, None)?;
            }
        }
        Ok(())
    }
}

impl Families {
    /// The async runner's families, for the activities on it only.
    fn encode_in_flight(&self, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let on: Vec<&ActivityMetrics> = self
            .0
            .iter()
            .filter(|a| a.totals.concurrency_cap().is_some())
            .collect();
        if on.is_empty() {
            return Ok(());
        }
        type Of = fn(&Snapshot) -> f64;
        let gauges: [(&str, &str, Of); 3] = [
            (
                "paceline_concurrency",
                "The async runner's cap on ops in flight.",
                |t| t.concurrency_cap().unwrap_or(0) as f64,
            ),
            (
                "paceline_in_flight_max",
                "The most ops in flight at once so far.",
                |t| t.in_flight_max() as f64,
            ),
            (
                "paceline_cap_full_ratio",
                "Share of the run the workers had their share of the cap in flight.",
                |t| t.cap_full_share().unwrap_or(0.0),
            ),
        ];
        for (name, help, value) in gauges {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for a in &on {
                let labels: Label<'_> = [("activity", a.alias.as_str())];
                let v = value(&a.totals);
                if v.fract() == 0.0 && v.abs() < 9.0e15 {
                    family.encode_family(&labels)?.encode_gauge(&(v as i64))?;
                } else {
                    family.encode_family(&labels)?.encode_gauge(&v)?;
                }
            }
        }
        Ok(())
    }

    /// The `paceline_shared_*` families, for the coordinated activities only.
    #[cfg(feature = "redis")]
    fn encode_shared(&self, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        use paceline::Coordinated;
        let shared: Vec<(Label<'_>, &Coordinated)> = self
            .0
            .iter()
            .filter_map(|a| Some(([("activity", a.alias.as_str())], a.coordinated.as_ref()?)))
            .collect();
        if shared.is_empty() {
            return Ok(());
        }
        let mut processes = encoder.encode_descriptor(
            "paceline_shared_processes",
            "Processes live in the activity's shared schedule, this one included.",
            None,
            MetricType::Gauge,
        )?;
        for (labels, c) in &shared {
            let live = i64::try_from(c.processes_live).unwrap_or(i64::MAX);
            processes.encode_family(labels)?.encode_gauge(&live)?;
        }
        let counters: [Described<SharedCount>; 2] = [
            (
                "paceline_shared_completed",
                "Ops completed by every process of the shared schedule.",
                |c| c.global_completed,
            ),
            (
                "paceline_shared_rerun_cycles",
                "Cycles of the shared schedule run again after the process that claimed them died.",
                |c| c.rerun_cycles,
            ),
        ];
        for (name, help, value) in counters {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            for (labels, c) in &shared {
                family
                    .encode_family(labels)?
                    .encode_counter::<NoLabelSet, _, u64>(&value(c), None)?;
            }
        }
        Ok(())
    }

    /// `paceline_errors_total`, labelled by activity and error kind.
    fn encode_errors(&self, encoder: &mut DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let mut errors = encoder.encode_descriptor(
            "paceline_errors",
            "Ops that ended in an error, by kind.",
            None,
            MetricType::Counter,
        )?;
        for a in &self.0 {
            for (kind, n) in a.totals.errors().filter(|(_, n)| *n > 0) {
                let labels: [(&'static str, &str); 2] =
                    [("activity", a.alias.as_str()), ("kind", kind)];
                errors
                    .encode_family(&labels)?
                    .encode_counter::<NoLabelSet, _, u64>(&n, None)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests;
