//! The summary's per-op lines: each op's count, errors and times, for an
//! activity of more than one op (one op's figures are the activity's).

use super::units;
use paceline::Snapshot;
use std::fmt::Write;

/// One line per op, in the file's order, or nothing for fewer than two ops:
///
/// `  op read: 300 ops, service p50 2.07ms p99 2.31ms, response p99 2.40ms`
pub fn lines(t: &Snapshot) -> String {
    let mut s = String::new();
    if t.by_op().len() < 2 {
        return s;
    }
    for o in t.by_op() {
        let errors = match o.error_count() {
            0 => String::new(),
            1 => ", 1 error".to_string(),
            n => format!(", {n} errors"),
        };
        let _ = writeln!(
            s,
            "  op {}: {} op{}{errors}, service p50 {} p99 {}, response p99 {}",
            o.name(),
            o.ops(),
            if o.ops() == 1 { "" } else { "s" },
            units::duration(o.service().p50()),
            units::duration(o.service().p99()),
            units::duration(o.response().p99()),
        );
    }
    s
}

#[cfg(test)]
mod tests {
    /// Issue 24 item 11: the summary names each op's figures.
    #[test]
    fn issue24_item11_each_op_has_a_summary_line() {
        let metrics = paceline::Metrics::with_ops(0, &["read", "write"]);
        let mut rec = metrics.recorder();
        for c in 0..4u64 {
            rec.set_op(usize::from(c == 3));
            rec.record(0, if c == 3 { 6_000_000 } else { 2_000_000 });
        }
        rec.error_named("conflict");
        let t = metrics.snapshot(1_000_000_000);
        let text = super::lines(&t);
        let want = "  op read: 3 ops, service p50 2.01ms p99 2.01ms, response p99 2.01ms\n  \
                    op write: 1 op, 1 error, service p50 6.03ms p99 6.03ms, response p99 6.03ms\n";
        assert_eq!(text, want);
        // One op: nothing more than the activity's own figures.
        let one = paceline::Metrics::with_ops(0, &["only"]);
        one.recorder().record(0, 5);
        assert_eq!(super::lines(&one.snapshot(1)), "");
    }
}
