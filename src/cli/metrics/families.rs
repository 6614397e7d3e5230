//! The exposition's families as plain values, built once per scrape from the
//! activities' numbers; the text encoder (`text.rs`) and the protobuf encoder
//! (`proto.rs`) each write the same list, so the two formats cannot disagree
//! on a name, a help, a label or a value.

use super::ActivityMetrics;
use paceline::{Latencies, Snapshot};

/// A family's type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Counter,
    Gauge,
    /// OpenMetrics' info: one sample of value 1 whose labels are the info.
    Info,
    Histogram,
}

/// One family: its name before the suffixes each format adds (`_total` for a
/// counter, `_info` for an info, `_UNIT` for a unit), its help, type, unit and
/// samples.
#[derive(Debug, Clone)]
pub(crate) struct Family<'a> {
    pub(crate) name: &'static str,
    pub(crate) help: &'static str,
    pub(crate) kind: Kind,
    pub(crate) unit: Option<&'static str>,
    pub(crate) samples: Vec<Sample<'a>>,
}

impl Family<'_> {
    /// The name a scraper stores: `paceline_ops_total`,
    /// `paceline_service_seconds`, `paceline_info`.
    pub(crate) fn full_name(&self) -> String {
        let mut name = self.name.to_string();
        if let Some(unit) = self.unit {
            name.push('_');
            name.push_str(unit);
        }
        match self.kind {
            Kind::Counter => name.push_str("_total"),
            Kind::Info => name.push_str("_info"),
            Kind::Gauge | Kind::Histogram => {}
        }
        name
    }
}

/// One sample of a family: its labels and value.
#[derive(Debug, Clone)]
pub(crate) struct Sample<'a> {
    pub(crate) labels: Vec<(&'static str, String)>,
    pub(crate) value: Value<'a>,
}

/// A sample's value.
#[derive(Debug, Clone)]
pub(crate) enum Value<'a> {
    Counter(u64),
    Gauge(f64),
    /// An info's sample (its value is 1).
    Info,
    /// A latency distribution in nanoseconds, written in seconds.
    Histogram(&'a Latencies),
}

/// A family's name, help and how to read its value.
type Described<F> = (&'static str, &'static str, F);

/// The families of `activities`, in a fixed order, those without samples left
/// out (as exporters do: some parsers refuse a descriptor with nothing under
/// it); with `paceline_run_ended` last when `run_ended` is given.
pub(crate) fn families(activities: &[ActivityMetrics], run_ended: Option<bool>) -> Vec<Family<'_>> {
    let mut out = Vec::new();
    if !activities.is_empty() {
        out.push(Family {
            name: "paceline",
            help: "The paceline serving these metrics.",
            kind: Kind::Info,
            unit: None,
            samples: vec![Sample {
                labels: vec![("version", env!("CARGO_PKG_VERSION").to_string())],
                value: Value::Info,
            }],
        });
        counters(activities, &mut out);
        gauges(activities, &mut out);
        in_flight(activities, &mut out);
        #[cfg(feature = "redis")]
        shared(activities, &mut out);
        latencies(activities, &mut out);
        by_op(activities, &mut out);
    }
    if let Some(ended) = run_ended {
        out.push(Family {
            name: "paceline_run_ended",
            help: "Whether the run has ended (then 1: the numbers are final).",
            kind: Kind::Gauge,
            unit: None,
            samples: vec![Sample {
                labels: Vec::new(),
                value: Value::Gauge(f64::from(u8::from(ended))),
            }],
        });
    }
    out.retain(|f| !f.samples.is_empty());
    out
}

fn of(a: &ActivityMetrics) -> Vec<(&'static str, String)> {
    vec![("activity", a.alias.clone())]
}

fn counters<'a>(activities: &'a [ActivityMetrics], out: &mut Vec<Family<'a>>) {
    type CountOf = fn(&Snapshot) -> u64;
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
        out.push(Family {
            name,
            help,
            kind: Kind::Counter,
            unit: None,
            samples: activities
                .iter()
                .map(|a| Sample {
                    labels: of(a),
                    value: Value::Counter(value(&a.totals)),
                })
                .collect(),
        });
    }
    out.push(Family {
        name: "paceline_errors",
        help: "Ops that ended in an error, by kind.",
        kind: Kind::Counter,
        unit: None,
        samples: activities
            .iter()
            .flat_map(|a| {
                a.totals.errors().map(|(kind, n)| Sample {
                    labels: vec![("activity", a.alias.clone()), ("kind", kind.to_string())],
                    value: Value::Counter(n),
                })
            })
            .collect(),
    });
}

fn gauges<'a>(activities: &'a [ActivityMetrics], out: &mut Vec<Family<'a>>) {
    type GaugeOf = fn(&ActivityMetrics) -> f64;
    let gauges: [(&str, &str, Option<&str>, GaugeOf); 4] = [
        (
            "paceline_rate_target",
            "The target rate in force, ops/s, all threads together (threads x the rate in thread scope); 0 when unpaced, paused or ended.",
            Some("ops_per_second"),
            |a| a.rate_target,
        ),
        (
            "paceline_rate_achieved",
            "Ops/s over the latest report interval; 0 once ended.",
            Some("ops_per_second"),
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
        out.push(Family {
            name,
            help,
            kind: Kind::Gauge,
            unit,
            samples: activities
                .iter()
                .map(|a| Sample {
                    labels: of(a),
                    value: Value::Gauge(value(a)),
                })
                .collect(),
        });
    }
}

/// The async runner's families, for the activities on it only.
fn in_flight<'a>(activities: &'a [ActivityMetrics], out: &mut Vec<Family<'a>>) {
    type Of = fn(&Snapshot) -> f64;
    let gauges: [Described<Of>; 3] = [
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
        out.push(Family {
            name,
            help,
            kind: Kind::Gauge,
            unit: None,
            samples: activities
                .iter()
                .filter(|a| a.totals.concurrency_cap().is_some())
                .map(|a| Sample {
                    labels: of(a),
                    value: Value::Gauge(value(&a.totals)),
                })
                .collect(),
        });
    }
}

/// The `paceline_shared_*` families, for the coordinated activities only.
#[cfg(feature = "redis")]
fn shared<'a>(activities: &'a [ActivityMetrics], out: &mut Vec<Family<'a>>) {
    use paceline::Coordinated;
    let on: Vec<(&ActivityMetrics, &Coordinated)> = activities
        .iter()
        .filter_map(|a| Some((a, a.coordinated.as_ref()?)))
        .collect();
    out.push(Family {
        name: "paceline_shared_processes",
        help: "Processes live in the activity's shared schedule, this one included.",
        kind: Kind::Gauge,
        unit: None,
        samples: on
            .iter()
            .map(|(a, c)| Sample {
                labels: of(a),
                value: Value::Gauge(c.processes_live as f64),
            })
            .collect(),
    });
    // The schedule's achieved rate, to set against `paceline_rate_target`, which
    // is the whole schedule's: this process's own achieved rate is its share
    // only (audit p17, M5: a healthy run of 2 processes read 50 %).
    out.push(Family {
        name: "paceline_shared_rate_achieved_ops_per_second",
        help: "The shared schedule's achieved rate, every process together (compare with \
               paceline_rate_target_ops_per_second, the schedule's target).",
        kind: Kind::Gauge,
        unit: None,
        samples: on
            .iter()
            .map(|(a, c)| Sample {
                labels: of(a),
                value: Value::Gauge(c.global_achieved),
            })
            .collect(),
    });
    type SharedCount = fn(&Coordinated) -> u64;
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
        out.push(Family {
            name,
            help,
            kind: Kind::Counter,
            unit: None,
            samples: on
                .iter()
                .map(|(a, c)| Sample {
                    labels: of(a),
                    value: Value::Counter(value(c)),
                })
                .collect(),
        });
    }
}

fn latencies<'a>(activities: &'a [ActivityMetrics], out: &mut Vec<Family<'a>>) {
    type LatenciesOf = fn(&Snapshot) -> &Latencies;
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
        out.push(Family {
            name,
            help,
            kind: Kind::Histogram,
            unit: Some("seconds"),
            samples: activities
                .iter()
                .map(|a| Sample {
                    labels: of(a),
                    value: Value::Histogram(value(&a.totals)),
                })
                .collect(),
        });
    }
}

/// The per-op families (`paceline_op_*`, labelled `activity` and `op`), for
/// the activities whose engine knows their ops. They are families of their
/// own, not `op`-labelled series of the all-ops ones, so that a query summing
/// a family over its series never counts an op twice.
fn by_op<'a>(activities: &'a [ActivityMetrics], out: &mut Vec<Family<'a>>) {
    let labels = |a: &ActivityMetrics, op: &str| -> Vec<(&'static str, String)> {
        vec![("activity", a.alias.clone()), ("op", op.to_string())]
    };
    let ops = || {
        activities
            .iter()
            .flat_map(|a| a.totals.by_op().iter().map(move |o| (a, o)))
    };
    out.push(Family {
        name: "paceline_op_ops",
        help: "Ops done of each op of the activity, errors included.",
        kind: Kind::Counter,
        unit: None,
        samples: ops()
            .map(|(a, o)| Sample {
                labels: labels(a, o.name()),
                value: Value::Counter(o.ops()),
            })
            .collect(),
    });
    out.push(Family {
        name: "paceline_op_errors",
        help: "Ops of each op of the activity that ended in an error, by kind.",
        kind: Kind::Counter,
        unit: None,
        samples: ops()
            .flat_map(|(a, o)| {
                o.errors().map(move |(kind, n)| {
                    let mut l = labels(a, o.name());
                    l.push(("kind", kind.to_string()));
                    Sample {
                        labels: l,
                        value: Value::Counter(n),
                    }
                })
            })
            .collect(),
    });
    type Of = fn(&paceline::OpStats) -> &Latencies;
    let histograms: [Described<Of>; 3] = [
        (
            "paceline_op_service",
            "Time in the driver per op, for each op of the activity.",
            paceline::OpStats::service,
        ),
        (
            "paceline_op_wait",
            "Time from an op's scheduled start to its actual start, for each op of the activity.",
            paceline::OpStats::wait,
        ),
        (
            "paceline_op_response",
            "Time from an op's scheduled start to its end, for each op of the activity.",
            paceline::OpStats::response,
        ),
    ];
    for (name, help, value) in histograms {
        out.push(Family {
            name,
            help,
            kind: Kind::Histogram,
            unit: Some("seconds"),
            samples: ops()
                .map(|(a, o)| Sample {
                    labels: labels(a, o.name()),
                    value: Value::Histogram(value(o)),
                })
                .collect(),
        });
    }
}
