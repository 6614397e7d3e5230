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
//! | `paceline_rate_achieved` | gauge | ops/s over the latest report interval; 0 once ended |
//! | `paceline_threads` | gauge | the thread count in force; 0 once ended |
//! | `paceline_concurrency` | gauge | the async runner's cap on ops in flight (left out on the sync runner) |
//! | `paceline_in_flight_max` | gauge | the most ops in flight at once so far (async runner) |
//! | `paceline_cap_full_ratio` | gauge | the share of the run, 0 to 1, the workers had their share of the cap in flight (async runner) |
//! | `paceline_service_seconds`, `paceline_wait_seconds`, `paceline_response_seconds` | histogram | all ops so far, in [`BUCKETS`] |
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
    /// Ops/s over the latest report interval: 0 before the first, and once the
    /// activity has ended.
    pub rate_achieved: f64,
    /// The thread count in force: 0 once the activity has ended.
    pub threads: usize,
    /// The shared schedule's numbers (`paceline::Control::coordinated`); `None`
    /// when the activity paces alone.
    #[cfg(feature = "redis")]
    pub coordinated: Option<paceline::Coordinated>,
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

        let gauges: [Described<GaugeOf>; 3] = [
            (
                "paceline_rate_target",
                "The rate in force, ops/s; 0 when unpaced, paused or ended.",
                |a| a.rate_target,
            ),
            (
                "paceline_rate_achieved",
                "Ops/s over the latest report interval; 0 once ended.",
                |a| a.rate_achieved,
            ),
            (
                "paceline_threads",
                "The thread count in force; 0 once ended.",
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
        self.encode_in_flight(&mut encoder)?;
        #[cfg(feature = "redis")]
        self.encode_shared(&mut encoder)?;
        let latencies: [Described<LatenciesOf>; 3] = [
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use openmetrics_parser::openmetrics::parse_openmetrics;
    use openmetrics_parser::{MetricsExposition, OpenMetricsType, OpenMetricsValue};

    type Parsed = MetricsExposition<OpenMetricsType, OpenMetricsValue>;

    /// Parses `text` with openmetrics-parser. That parser refuses a `# UNIT` line
    /// on a histogram, which OpenMetrics 1.0 allows on every type; so those lines
    /// are checked here and taken out first.
    pub(crate) fn parse(text: &str) -> Parsed {
        let mut kept = String::new();
        for line in text.lines() {
            match line.strip_prefix("# UNIT ") {
                Some(unit) => {
                    let (family, unit) = unit.split_once(' ').unwrap_or_default();
                    assert_eq!(unit, "seconds", "{line}");
                    assert!(family.ends_with("_seconds"), "{line}");
                }
                None => {
                    kept.push_str(line);
                    kept.push('\n');
                }
            }
        }
        parse_openmetrics(&kept).unwrap_or_else(|e| panic!("{e}\n{text}"))
    }

    /// The value of `family`'s sample whose labels include `labels`.
    fn value(parsed: &Parsed, family: &str, labels: &[(&str, &str)]) -> OpenMetricsValue {
        let f = parsed
            .families
            .get(family)
            .unwrap_or_else(|| panic!("no family {family}"));
        f.iter_samples()
            .find(|s| {
                s.get_labelset().is_ok_and(|set| {
                    labels
                        .iter()
                        .all(|(k, v)| set.get_label_value(k) == Some(*v))
                })
            })
            .map(|s| s.value.clone())
            .unwrap_or_else(|| panic!("no {family} sample with {labels:?}"))
    }

    fn number(v: &OpenMetricsValue) -> f64 {
        match v {
            OpenMetricsValue::Counter(c) => c.value.as_f64(),
            OpenMetricsValue::Gauge(g) => g.as_f64(),
            other => panic!("not a number: {other:?}"),
        }
    }

    fn activity(alias: &str, service: &[u64], wait: u64) -> ActivityMetrics {
        let metrics = paceline::Metrics::new(0);
        let mut rec = metrics.recorder();
        for &s in service {
            rec.record(wait, s);
        }
        rec.error_named("timeout");
        rec.error_named("timeout");
        rec.error_named("status 503");
        rec.retry();
        rec.missed(7);
        ActivityMetrics {
            alias: alias.to_string(),
            totals: metrics.snapshot(1_000_000_000),
            rate_target: 1000.0,
            rate_achieved: 987.5,
            threads: 4,
            #[cfg(feature = "redis")]
            coordinated: None,
        }
    }

    #[cfg(feature = "redis")]
    #[test]
    fn a_coordinated_activity_adds_the_shared_families() {
        let mut a = activity("a", &[500], 0);
        a.coordinated = Some(crate::cli::report::shared::tests::three());
        let b = activity("b", &[500], 0);
        let text = encode(&[a, b]);
        let parsed = parse(&text);
        let of_a = [("activity", "a")];
        for (name, kind, want) in [
            ("paceline_shared_processes", OpenMetricsType::Gauge, 3.0),
            (
                "paceline_shared_completed",
                OpenMetricsType::Counter,
                120_000.0,
            ),
            (
                "paceline_shared_rerun_cycles",
                OpenMetricsType::Counter,
                0.0,
            ),
        ] {
            let f = parsed
                .families
                .get(name)
                .unwrap_or_else(|| panic!("no {name} in\n{text}"));
            assert_eq!(f.family_type, kind, "{name}");
            assert_eq!(number(&value(&parsed, name, &of_a)), want, "{name}");
            // Only the coordinated activity has a sample.
            assert_eq!(f.iter_samples().count(), 1, "{name}\n{text}");
        }
        assert!(
            text.contains("paceline_shared_completed_total{activity=\"a\"} 120000\n"),
            "{text}"
        );
        // Without a coordinated activity the families are left out (the test above
        // counts every family of an uncoordinated run).
        let alone = encode(&[activity("b", &[500], 0)]);
        assert!(!alone.contains("paceline_shared"), "{alone}");
    }

    #[test]
    fn a_real_parser_reads_every_family_with_its_type_and_labels() {
        let a = activity("a", &[500, 40_000, 3_000_000, 30_000_000_000], 1_000);
        let mut b = activity("b\"quoted\"", &[2_000], 0);
        b.rate_target = 0.0;
        let text = encode(&[a.clone(), b]);
        let parsed = parse(&text);
        let types = [
            ("paceline_ops", OpenMetricsType::Counter),
            ("paceline_errors", OpenMetricsType::Counter),
            ("paceline_retries", OpenMetricsType::Counter),
            ("paceline_missed_slots", OpenMetricsType::Counter),
            ("paceline_rate_target", OpenMetricsType::Gauge),
            ("paceline_rate_achieved", OpenMetricsType::Gauge),
            ("paceline_threads", OpenMetricsType::Gauge),
            ("paceline_service_seconds", OpenMetricsType::Histogram),
            ("paceline_wait_seconds", OpenMetricsType::Histogram),
            ("paceline_response_seconds", OpenMetricsType::Histogram),
        ];
        for (name, kind) in types {
            let f = parsed
                .families
                .get(name)
                .unwrap_or_else(|| panic!("no {name} in\n{text}"));
            assert_eq!(f.family_type, kind, "{name}");
            assert!(!f.help.is_empty(), "{name}");
        }
        assert_eq!(parsed.families.len(), types.len(), "{text}");
        assert!(text.contains("# UNIT paceline_service_seconds seconds\n"));

        let of_a = [("activity", "a")];
        // 4 ops and 3 errors: errors are not ops of their own here.
        assert_eq!(number(&value(&parsed, "paceline_ops", &of_a)), 4.0);
        let timeout = [("activity", "a"), ("kind", "timeout")];
        assert_eq!(number(&value(&parsed, "paceline_errors", &timeout)), 2.0);
        let status = [("activity", "a"), ("kind", "status 503")];
        assert_eq!(number(&value(&parsed, "paceline_errors", &status)), 1.0);
        assert_eq!(number(&value(&parsed, "paceline_retries", &of_a)), 1.0);
        assert_eq!(number(&value(&parsed, "paceline_missed_slots", &of_a)), 7.0);
        assert_eq!(
            number(&value(&parsed, "paceline_rate_target", &of_a)),
            1000.0
        );
        assert_eq!(
            number(&value(&parsed, "paceline_rate_achieved", &of_a)),
            987.5
        );
        assert_eq!(number(&value(&parsed, "paceline_threads", &of_a)), 4.0);
        // A label value with quotes is escaped and reads back whole.
        let of_b = [("activity", "b\"quoted\"")];
        assert_eq!(number(&value(&parsed, "paceline_rate_target", &of_b)), 0.0);

        let OpenMetricsValue::Histogram(h) = value(&parsed, "paceline_service_seconds", &of_a)
        else {
            panic!("not a histogram")
        };
        assert_eq!(h.count, Some(4));
        let sum = h.sum.map(|s| s.as_f64()).unwrap_or_default();
        assert!((sum - 30.003_040_5).abs() < 0.05, "{sum}");
        let le = |bound: f64| {
            h.buckets
                .iter()
                .find(|b| b.upper_bound == bound)
                .map(|b| b.count.as_f64())
                .unwrap_or_else(|| panic!("no bucket {bound}"))
        };
        // Cumulative: 0.5 µs, 40 µs, 3 ms, 30 s.
        assert_eq!(
            [
                le(1e-6),
                le(2.5e-5),
                le(5e-5),
                le(5e-3),
                le(10.0),
                le(f64::INFINITY)
            ],
            [1.0, 1.0, 2.0, 3.0, 3.0, 4.0]
        );
        let OpenMetricsValue::Histogram(w) = value(&parsed, "paceline_wait_seconds", &of_a) else {
            panic!("not a histogram")
        };
        assert_eq!(w.count, Some(4));
        assert!(text.ends_with("# EOF\n"));
    }

    #[test]
    fn no_activities_is_the_empty_exposition() {
        let text = encode(&[]);
        // The whole exposition: no family has a sample.
        assert_eq!(text, "# EOF\n");
    }

    #[test]
    fn buckets_hold_each_value_once_with_infinity_last() {
        let mut l = Latencies::new();
        l.record(800); // 0.8 µs
        l.record(1_000); // 1 µs exactly: le 1e-6
        l.record(3_000_000); // 3 ms
        l.record(20_000_000_000); // 20 s: only +Inf
        let b = Buckets::of(&l);
        assert_eq!(b.count, 4);
        assert_eq!(b.buckets.len(), BUCKETS.len() + 1);
        assert_eq!(b.buckets[0], (1e-6, 2));
        assert_eq!(b.buckets[11], (5e-3, 1));
        assert_eq!(b.buckets.last(), Some(&(f64::INFINITY, 1)));
        assert_eq!(b.buckets.iter().map(|x| x.1).sum::<u64>(), 4);
        assert!(BUCKETS.windows(2).all(|w| w[0] < w[1]));
        assert!((b.sum - 20.003_001_8).abs() < 0.02, "{}", b.sum);
        assert_eq!(Buckets::of(&Latencies::new()).count, 0);
    }
}
