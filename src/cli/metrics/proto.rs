//! The Prometheus protobuf exposition (`io.prometheus.client.MetricFamily`,
//! length-delimited), the only format that carries native histograms, and
//! the content negotiation that chooses it.
//!
//! The messages are the subset of the Prometheus client data model
//! (`metrics.proto` of the `client_model` project, proto2, whose wire format
//! its proto3 twin shares) that paceline writes, declared here with `prost`'s
//! derive: no `.proto` file, no `protoc`, no build script. Field numbers are
//! the model's; fields paceline never writes (summaries, exemplars,
//! timestamps, negative buckets, float counts) are left out, which the wire
//! format allows (a reader skips what it does not know, and nothing absent
//! is needed).

use super::buckets::{BucketScheme, Buckets};
use super::families::{Family, Kind, Value};
use super::native::{Native, SCHEMA, ZERO_THRESHOLD};
use prost::Message;

/// The `Content-Type` of a protobuf answer.
pub const CONTENT_TYPE: &str =
    "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited";

/// `io.prometheus.client.MetricFamily`.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct MetricFamily {
    #[prost(string, tag = "1")]
    pub(crate) name: String,
    #[prost(string, tag = "2")]
    pub(crate) help: String,
    #[prost(enumeration = "MetricType", tag = "3")]
    pub(crate) r#type: i32,
    #[prost(message, repeated, tag = "4")]
    pub(crate) metric: Vec<Metric>,
}

/// `io.prometheus.client.MetricType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub(crate) enum MetricType {
    Counter = 0,
    Gauge = 1,
    Summary = 2,
    Untyped = 3,
    Histogram = 4,
}

/// `io.prometheus.client.Metric`: labels and one value.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct Metric {
    #[prost(message, repeated, tag = "1")]
    pub(crate) label: Vec<LabelPair>,
    #[prost(message, optional, tag = "2")]
    pub(crate) gauge: Option<Gauge>,
    #[prost(message, optional, tag = "3")]
    pub(crate) counter: Option<Counter>,
    #[prost(message, optional, tag = "7")]
    pub(crate) histogram: Option<Histogram>,
}

/// `io.prometheus.client.LabelPair`.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct LabelPair {
    #[prost(string, tag = "1")]
    pub(crate) name: String,
    #[prost(string, tag = "2")]
    pub(crate) value: String,
}

/// `io.prometheus.client.Gauge`.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct Gauge {
    #[prost(double, tag = "1")]
    pub(crate) value: f64,
}

/// `io.prometheus.client.Counter`.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct Counter {
    #[prost(double, tag = "1")]
    pub(crate) value: f64,
}

/// `io.prometheus.client.Histogram`: classic buckets, native buckets, or both.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct Histogram {
    #[prost(uint64, tag = "1")]
    pub(crate) sample_count: u64,
    #[prost(double, tag = "2")]
    pub(crate) sample_sum: f64,
    /// The classic buckets, cumulative, `+Inf` left out (the count is it).
    #[prost(message, repeated, tag = "3")]
    pub(crate) bucket: Vec<Bucket>,
    #[prost(sint32, tag = "5")]
    pub(crate) schema: i32,
    #[prost(double, tag = "6")]
    pub(crate) zero_threshold: f64,
    #[prost(uint64, tag = "7")]
    pub(crate) zero_count: u64,
    #[prost(message, repeated, tag = "12")]
    pub(crate) positive_span: Vec<BucketSpan>,
    #[prost(sint64, repeated, tag = "13")]
    pub(crate) positive_delta: Vec<i64>,
}

/// `io.prometheus.client.Bucket`: a classic bucket.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct Bucket {
    #[prost(uint64, tag = "1")]
    pub(crate) cumulative_count: u64,
    #[prost(double, tag = "2")]
    pub(crate) upper_bound: f64,
}

/// `io.prometheus.client.BucketSpan`: consecutive native buckets.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct BucketSpan {
    #[prost(sint32, tag = "1")]
    pub(crate) offset: i32,
    #[prost(uint32, tag = "2")]
    pub(crate) length: u32,
}

/// `families` as protobuf `MetricFamily` messages. Histograms carry the
/// classic buckets of `scheme` (the fine ones for `native`) and, for
/// `native`, the native buckets beside them: a scraper that reads native
/// histograms takes those, one that does not takes the classic ones.
pub(crate) fn messages(families: &[Family<'_>], scheme: BucketScheme) -> Vec<MetricFamily> {
    families
        .iter()
        .map(|f| MetricFamily {
            name: f.full_name(),
            help: f.help.to_string(),
            r#type: match f.kind {
                Kind::Counter => MetricType::Counter,
                // An info is a gauge of 1 in this format (it has no info type).
                Kind::Gauge | Kind::Info => MetricType::Gauge,
                Kind::Histogram => MetricType::Histogram,
            } as i32,
            metric: f
                .samples
                .iter()
                .map(|s| {
                    let mut m = Metric {
                        label: s
                            .labels
                            .iter()
                            .map(|(k, v)| LabelPair {
                                name: (*k).to_string(),
                                value: v.clone(),
                            })
                            .collect(),
                        ..Metric::default()
                    };
                    match &s.value {
                        Value::Counter(n) => m.counter = Some(Counter { value: *n as f64 }),
                        Value::Gauge(v) => m.gauge = Some(Gauge { value: *v }),
                        Value::Info => m.gauge = Some(Gauge { value: 1.0 }),
                        Value::Histogram(l) => m.histogram = Some(histogram(l, scheme)),
                    }
                    m
                })
                .collect(),
        })
        .collect()
}

/// One latency distribution as a protobuf histogram.
pub(crate) fn histogram(l: &paceline::Latencies, scheme: BucketScheme) -> Histogram {
    let classic = Buckets::in_scheme(l, scheme.classic());
    let mut cumulative = 0;
    let bucket = classic
        .buckets
        .iter()
        .filter(|(bound, _)| bound.is_finite())
        .map(|&(upper_bound, n)| {
            cumulative += n;
            Bucket {
                cumulative_count: cumulative,
                upper_bound,
            }
        })
        .collect();
    let mut h = Histogram {
        sample_count: classic.count,
        sample_sum: classic.sum,
        bucket,
        ..Histogram::default()
    };
    if scheme == BucketScheme::Native {
        let n = Native::of(l);
        h.schema = SCHEMA;
        h.zero_threshold = ZERO_THRESHOLD;
        h.zero_count = n.zero_count;
        h.positive_span = n
            .spans
            .iter()
            .map(|&(offset, length)| BucketSpan { offset, length })
            .collect();
        // No values yet: the no-op span the format asks for, so that no
        // reader takes it for a classic histogram.
        if h.positive_span.is_empty() {
            h.positive_span.push(BucketSpan {
                offset: 0,
                length: 0,
            });
        }
        h.positive_delta = n.deltas;
    }
    h
}

/// `families` as one protobuf exposition: each `MetricFamily` preceded by
/// its length as a varint.
pub(crate) fn encode(families: &[Family<'_>], scheme: BucketScheme) -> Vec<u8> {
    let mut out = Vec::new();
    for m in messages(families, scheme) {
        // Writing to a Vec cannot run out of room.
        let _ = m.encode_length_delimited(&mut out);
    }
    out
}

/// Whether a request's `Accept` header asks for the protobuf exposition at
/// least as much as for any text one: its media range
/// `application/vnd.google.protobuf` with `proto=io.prometheus.client.MetricFamily`
/// and `encoding=delimited` has a quality above 0 and no lower than the best
/// of `application/openmetrics-text`, `text/plain`, `text/*` and `*/*`.
/// (Prometheus asks for protobuf first when its native histograms are on.)
pub fn wants_protobuf(accept: &str) -> bool {
    let mut proto = 0.0f64;
    let mut text = 0.0f64;
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let mut q = 1.0;
        let (mut message, mut delimited) = (false, false);
        for p in parts {
            let Some((k, v)) = p.split_once('=') else {
                continue;
            };
            let v = v.trim().trim_matches('"');
            match k.trim().to_ascii_lowercase().as_str() {
                "q" => q = v.parse::<f64>().unwrap_or(0.0).clamp(0.0, 1.0),
                "proto" => message = v == "io.prometheus.client.MetricFamily",
                "encoding" => delimited = v.eq_ignore_ascii_case("delimited"),
                _ => {}
            }
        }
        match media.as_str() {
            "application/vnd.google.protobuf" if message && delimited => proto = proto.max(q),
            "application/openmetrics-text" | "text/plain" | "text/*" | "*/*" => {
                text = text.max(q);
            }
            _ => {}
        }
    }
    proto > 0.0 && proto >= text
}
