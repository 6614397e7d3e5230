//! The OpenMetrics text exposition of the families, written by the
//! `prometheus-client` crate's encoder.

use super::buckets::{BucketScheme, Buckets};
use super::families::{Family, Kind, Value};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::{Registry, Unit};

/// `families` as one OpenMetrics exposition, `# EOF` included, the latency
/// histograms in `scheme`'s classic buckets (the text format has no native
/// histograms: `native` writes the fine buckets here).
pub(crate) fn encode(families: &[Family<'_>], scheme: BucketScheme) -> String {
    let mut out = String::new();
    let mut registry = Registry::default();
    registry.register_collector(Box::new(Families(text_families(families, scheme))));
    // Writing to a String cannot fail; an encoder error would be a bug in a
    // family, and an empty answer says so to the scraper.
    match prometheus_client::encoding::text::encode(&mut out, &registry) {
        Ok(()) => out,
        Err(_) => String::new(),
    }
}

/// A family with its histograms already sorted into buckets, so the
/// collector holds no borrow.
#[derive(Debug)]
struct TextFamily {
    name: &'static str,
    help: &'static str,
    kind: Kind,
    unit: Option<&'static str>,
    samples: Vec<(Vec<(&'static str, String)>, TextValue)>,
}

#[derive(Debug)]
enum TextValue {
    Counter(u64),
    Gauge(f64),
    Info,
    Histogram(Buckets),
}

fn text_families(families: &[Family<'_>], scheme: BucketScheme) -> Vec<TextFamily> {
    families
        .iter()
        .map(|f| TextFamily {
            name: f.name,
            help: f.help,
            kind: f.kind,
            unit: f.unit,
            samples: f
                .samples
                .iter()
                .map(|s| {
                    let v = match &s.value {
                        Value::Counter(n) => TextValue::Counter(*n),
                        Value::Gauge(v) => TextValue::Gauge(*v),
                        Value::Info => TextValue::Info,
                        Value::Histogram(l) => {
                            TextValue::Histogram(Buckets::in_scheme(l, scheme.classic()))
                        }
                    };
                    (s.labels.clone(), v)
                })
                .collect(),
        })
        .collect()
}

#[derive(Debug)]
struct Families(Vec<TextFamily>);

impl Collector for Families {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for f in &self.0 {
            let unit = f.unit.map(|u| match u {
                "seconds" => Unit::Seconds,
                other => Unit::Other(other.to_string()),
            });
            let kind = match f.kind {
                Kind::Counter => MetricType::Counter,
                Kind::Gauge => MetricType::Gauge,
                Kind::Info => MetricType::Info,
                Kind::Histogram => MetricType::Histogram,
            };
            let mut family = encoder.encode_descriptor(f.name, f.help, unit.as_ref(), kind)?;
            for (labels, value) in &f.samples {
                match value {
                    TextValue::Info => {
                        // An info family is its one sample: the encoder takes
                        // the labels directly.
                        family.encode_info(&labels.as_slice())?;
                        break;
                    }
                    TextValue::Counter(n) => {
                        family
                            .encode_family(&labels.as_slice())?
                            .encode_counter::<NoLabelSet, _, u64>(n, None)?;
                    }
                    TextValue::Gauge(v) => {
                        // Whole numbers go out as integers (`2`, not `2.0`).
                        let whole = v.fract() == 0.0 && v.abs() < 9.0e15;
                        let set = labels.as_slice();
                        if set.is_empty() {
                            // No labels: `name 1`, not `name{} 1`.
                            if whole {
                                family.encode_gauge(&(*v as i64))?;
                            } else {
                                family.encode_gauge(v)?;
                            }
                        } else {
                            let mut e = family.encode_family(&set)?;
                            if whole {
                                e.encode_gauge(&(*v as i64))?;
                            } else {
                                e.encode_gauge(v)?;
                            }
                        }
                    }
                    TextValue::Histogram(h) => {
                        family
                            .encode_family(&labels.as_slice())?
                            .encode_histogram::<NoLabelSet>(h.sum, h.count, &h.buckets, None)?;
                    }
                }
            }
        }
        Ok(())
    }
}
