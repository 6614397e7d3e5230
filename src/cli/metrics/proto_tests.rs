//! The protobuf exposition and the native histograms: bytes decoded back with
//! the same messages, one histogram's bytes worked out by hand from the
//! protobuf encoding rules, the native bucket mapping at its edges, and the
//! content negotiation.

use super::buckets::BucketScheme;
use super::native::{Native, ZERO_THRESHOLD, bucket_index, upper_bound};
use super::proto::{Histogram, MetricFamily, MetricType, histogram, wants_protobuf};
use super::tests::two_ops;
use super::{encode_protobuf, encode_text};
use paceline::Latencies;
use prost::Message;

/// Decodes a length-delimited stream of `MetricFamily` messages.
fn decode_all(mut bytes: &[u8]) -> Vec<MetricFamily> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let m = MetricFamily::decode_length_delimited(&mut bytes)
            .unwrap_or_else(|e| panic!("not a delimited MetricFamily: {e}"));
        out.push(m);
    }
    out
}

fn family<'a>(all: &'a [MetricFamily], name: &str) -> &'a MetricFamily {
    all.iter().find(|f| f.name == name).unwrap_or_else(|| {
        panic!(
            "no family {name} in {:?}",
            all.iter().map(|f| &f.name).collect::<Vec<_>>()
        )
    })
}

#[test]
fn the_protobuf_exposition_decodes_to_the_same_families_as_the_text() {
    let a = two_ops();
    let bytes = encode_protobuf(std::slice::from_ref(&a), BucketScheme::Native, Some(false));
    let all = decode_all(&bytes);
    // Every family of the text, under the name a scraper stores, in order.
    let text = encode_text(std::slice::from_ref(&a), BucketScheme::Native, Some(false));
    let text_names: Vec<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .map(|l| {
            let (name, kind) = l.split_once(' ').unwrap_or_default();
            match kind {
                "counter" => format!("{name}_total"),
                "info" => format!("{name}_info"),
                _ => name.to_string(),
            }
        })
        .collect();
    let names: Vec<&str> = all.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, text_names);

    let info = family(&all, "paceline_info");
    assert_eq!(info.r#type, MetricType::Gauge as i32);
    assert_eq!(info.metric[0].gauge.as_ref().map(|g| g.value), Some(1.0));
    assert_eq!(info.metric[0].label[0].name, "version");
    let ops = family(&all, "paceline_ops_total");
    assert_eq!(ops.r#type, MetricType::Counter as i32);
    assert_eq!(ops.metric[0].counter.as_ref().map(|c| c.value), Some(8.0));
    assert_eq!(
        (
            ops.metric[0].label[0].name.as_str(),
            ops.metric[0].label[0].value.as_str()
        ),
        ("activity", "kv")
    );
    let ended = family(&all, "paceline_run_ended");
    assert_eq!(ended.metric[0].gauge.as_ref().map(|g| g.value), Some(0.0));
    let target = family(&all, "paceline_rate_target_ops_per_second");
    assert_eq!(
        target.metric[0].gauge.as_ref().map(|g| g.value),
        Some(1000.0)
    );

    // The per-op service histogram of `put`: 2 values of 2 ms.
    let op_service = family(&all, "paceline_op_service_seconds");
    assert_eq!(op_service.r#type, MetricType::Histogram as i32);
    let put = op_service
        .metric
        .iter()
        .find(|m| m.label.iter().any(|l| l.name == "op" && l.value == "put"))
        .and_then(|m| m.histogram.as_ref())
        .unwrap_or_else(|| panic!("no put histogram"));
    assert_eq!((put.sample_count, put.schema, put.zero_count), (2, 2, 0));
    assert_eq!(put.zero_threshold, ZERO_THRESHOLD);
    // One span of one bucket: the bucket of 2 ms (its HdrHistogram value).
    assert_eq!(put.positive_span.len(), 1);
    assert_eq!(put.positive_span[0].length, 1);
    assert_eq!(put.positive_delta, [2]);
    let i = put.positive_span[0].offset;
    assert!(
        upper_bound(i - 1) < 2e-3 && 2e-3 <= upper_bound(i),
        "bucket {i}"
    );
    // The fine classic buckets beside them, cumulative, ending at the count.
    assert_eq!(put.bucket.len(), BucketScheme::Fine.bounds().len());
    assert_eq!(put.bucket.last().map(|b| b.cumulative_count), Some(2));
    // (2 ms is 2.007 ms in the per-op 2-digit HdrHistogram, its highest equivalent
    // value: the bucket above 2 ms holds it, in both kinds of buckets.)
    let first = put
        .bucket
        .iter()
        .find(|b| b.cumulative_count == 2)
        .map(|b| b.upper_bound);
    assert_eq!(first, Some(2.5e-3));
}

#[test]
fn without_native_the_protobuf_histograms_are_classic_only() {
    let bytes = encode_protobuf(&[two_ops()], BucketScheme::Coarse, None);
    let all = decode_all(&bytes);
    let h = family(&all, "paceline_service_seconds").metric[0]
        .histogram
        .clone()
        .unwrap_or_default();
    assert_eq!(h.bucket.len(), BucketScheme::Coarse.bounds().len());
    // Nothing a reader could take for a native histogram.
    assert_eq!((h.schema, h.zero_threshold, h.zero_count), (0, 0.0, 0));
    assert!(h.positive_span.is_empty() && h.positive_delta.is_empty());
    assert!(all.iter().all(|f| f.name != "paceline_run_ended"));
}

/// One small histogram, its bytes worked out by hand from the protobuf wire
/// format (a key is `field << 3 | wire type`; sint32/sint64 are zigzag
/// varints; repeated numbers are packed) and the native-histogram rules.
///
/// Values: 0, 1 ns twice, 2 ns, 1 µs (all exact in a 3-digit
/// HdrHistogram). In seconds, 1e-9 = 0.536870912 * 2^-29: its fraction is
/// above 0.5 and at most 2^-3/4 (0.5946), so its schema-2 bucket is
/// 1 + (-29 - 1) * 4 = -119, which is (2^-30, 2^-29.75]. 2e-9 is one power
/// of two up: -115. 1e-6 = 0.524288 * 2^-19: bucket 1 + (-20) * 4 = -79.
/// Spans: (-119, 1), then 3 empty buckets (-118..-116) and (3, 1), then 35
/// empty (-114..-80) and (35, 1). Deltas: 2, 1 - 2 = -1, 1 - 1 = 0.
#[test]
fn one_native_histogram_is_the_bytes_worked_out_by_hand() {
    let mut l = Latencies::new();
    for v in [0, 1, 1, 2, 1_000] {
        l.record(v);
    }
    let mut h = histogram(&l, BucketScheme::Native);
    h.bucket.clear(); // the classic buckets are checked elsewhere
    let sum = 2.0 * 1e-9 + 2e-9 + 1e-6; // in the order the values come
    assert_eq!(h.sample_sum, sum);
    let mut want = vec![
        0x08, 0x05, // sample_count (1, varint): 5
        0x11, // sample_sum (2, fixed64): 8 bytes follow
    ];
    want.extend_from_slice(&sum.to_le_bytes());
    want.extend_from_slice(&[
        0x28, 0x04, // schema (5, sint32): zigzag(2) = 4
        0x31, // zero_threshold (6, fixed64): 2^-128, exponent 895 = 0x37F
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xF0, 0x37, //
        0x38, 0x01, // zero_count (7, varint): 1
        0x62, 0x05, 0x08, 0xED, 0x01, 0x10,
        0x01, // span (12): offset zigzag(-119) = 237, length 1
        0x62, 0x04, 0x08, 0x06, 0x10, 0x01, // span: offset zigzag(3) = 6, length 1
        0x62, 0x04, 0x08, 0x46, 0x10, 0x01, // span: offset zigzag(35) = 70, length 1
        0x6A, 0x03, 0x04, 0x01, 0x00, // deltas (13, packed sint64): 2, -1, 0 zigzagged
    ]);
    assert_eq!(h.encode_to_vec(), want);
    assert_eq!(Histogram::decode(want.as_slice()).ok(), Some(h));
}

#[test]
fn native_buckets_have_inclusive_upper_bounds_at_powers_of_two_to_the_quarter() {
    // 1 s is the top of bucket 0; the next double above it is in bucket 1.
    assert_eq!(bucket_index(1.0), 0);
    assert_eq!(bucket_index(f64::from_bits(1f64.to_bits() + 1)), 1);
    assert_eq!(bucket_index(2.0), 4);
    assert_eq!(bucket_index(0.5), -4);
    assert_eq!(bucket_index(1.1), 1);
    assert_eq!(bucket_index(1.2), 2);
    assert_eq!(bucket_index(1e-9), -119);
    assert_eq!(bucket_index(10.0), 14);
    // Every value lies in (upper(i-1), upper(i)], over 1 ns to 100 s.
    let mut v = 1e-9;
    while v < 100.0 {
        let i = bucket_index(v);
        assert!(upper_bound(i - 1) < v && v <= upper_bound(i), "{v} in {i}");
        v *= 1.0371;
    }
    // A subnormal number still finds its bucket.
    assert!(bucket_index(f64::MIN_POSITIVE / 4.0) < bucket_index(f64::MIN_POSITIVE));
}

#[test]
fn native_counts_sum_and_zeros_match_the_classic_buckets() {
    let mut l = Latencies::new();
    for v in (0..5_000u64).map(|i| i * i * 37) {
        l.record(v);
    }
    let n = Native::of(&l);
    let classic = super::Buckets::in_scheme(&l, BucketScheme::Fine);
    assert_eq!(n.count, classic.count);
    assert!((n.sum - classic.sum).abs() <= classic.sum * 1e-12);
    assert_eq!(n.zero_count, 1);
    let spread: i64 = {
        let mut c = 0i64;
        n.deltas
            .iter()
            .map(|d| {
                c += d;
                c
            })
            .sum()
    };
    assert_eq!(spread as u64 + n.zero_count, n.count);
    assert!(n.deltas.len() as u32 == n.spans.iter().map(|s| s.1).sum::<u32>());
}

/// Issue 24 item 11: the native p90 of a known distribution is within the
/// schema's bucket (18.9 %) of the exact one, and closer than the fine
/// buckets' worst case (26 %).
#[test]
fn issue24_item11_native_quantiles_are_within_the_schema_s_relative_error() {
    // Log-uniform from 10 µs to 100 ms, and a tight cluster around 5 ms.
    let mut l = Latencies::new();
    for i in 0..20_000u64 {
        l.record((10_000.0 * 10f64.powf(4.0 * i as f64 / 20_000.0)) as u64);
    }
    for i in 0..5_000u64 {
        l.record(5_000_000 + i * 7);
    }
    let n = Native::of(&l);
    for q in [0.5, 0.9, 0.99] {
        let exact = l.quantile(q) as f64 / 1e9;
        let got = n.quantile(q).unwrap_or(f64::NAN);
        let err = (got / exact - 1.0).abs();
        assert!(
            err < 2f64.powf(0.25) - 1.0,
            "q {q}: native {got} against {exact}"
        );
    }
}

#[test]
fn protobuf_is_chosen_only_when_the_scraper_prefers_it() {
    // Prometheus 2.42 with --enable-feature=native-histograms.
    let prometheus = "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;\
                      encoding=delimited,application/openmetrics-text;version=1.0.0;q=0.8,\
                      application/openmetrics-text;version=0.0.1;q=0.75,\
                      text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    assert!(wants_protobuf(prometheus));
    // Prometheus without it, curl, a browser, no header.
    let text_only = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;\
                     version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    for accept in [text_only, "*/*", "text/html,*/*;q=0.8", ""] {
        assert!(!wants_protobuf(accept), "{accept}");
    }
    // Not the delimited MetricFamily stream, refused, or preferred less.
    for accept in [
        "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily",
        "application/vnd.google.protobuf;proto=other.Message;encoding=delimited",
        "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0",
        "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.4,text/plain;q=0.5",
    ] {
        assert!(!wants_protobuf(accept), "{accept}");
    }
    assert!(wants_protobuf(
        "text/plain;q=0.5, Application/Vnd.Google.Protobuf; proto=\"io.prometheus.client.MetricFamily\"; encoding=Delimited; q=0.9"
    ));
}
