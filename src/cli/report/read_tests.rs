//! Reading back the files a run wrote: the HDR log's lines, comments and
//! histograms, the summary JSON, and each refusal with its file and line.

use super::*;

const HEAD: &str = "#[Logged with paceline 0.1.0]\n\
                    #[Histogram log format version 1.3]\n\
                    #[StartTime: 1700000000.250 (seconds since epoch)]\n\
                    #[BaseTime: 1700000000.250 (seconds since epoch)]\n\
                    \"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n";

fn error_of(text: &str) -> String {
    parse_hdr(text, Path::new("run.hlog"))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_else(|| panic!("{text:?} was accepted"))
}

#[test]
fn a_garbled_line_is_named_by_file_and_line() {
    let e = error_of(&format!(
        "{HEAD}#[Target a: 1000]\nthis is not a histogram\n"
    ));
    assert!(
        e.starts_with("run.hlog:7: not an HDR interval log line: `this is not a histogram`"),
        "{e}"
    );
    assert!(e.ends_with("(pass the HDR interval log that `paceline run --hdr-log` wrote)"));
}

#[test]
fn broken_comments_tags_and_histograms_are_errors_with_their_line() {
    let cases = [
        (
            "#[Event soon a: started]\n",
            "run.hlog:6: an event comment is",
        ),
        ("#[Target a: fast]\n", "run.hlog:6: a target comment is"),
        (
            "Tag=a.latency,0.000,1.000,1.0,HISTFAAAAB94nJNpmSzMwMDAzQABzFCaEUQAAB3jAWQ=\n",
            "run.hlog:6: histogram tag `a.latency` is not ALIAS.service",
        ),
        (
            "0.000,1.000,1.0,HISTFAAAAB94nJNpmSzMwMDAzQABzFCaEUQAAB3jAWQ=\n",
            "run.hlog:6: histogram tag `` is not",
        ),
        (
            "Tag=a.wait,0.000,1.000,1.0,HIST!!!!\n",
            "run.hlog:6: the `a.wait` histogram is not base64",
        ),
        (
            "Tag=a.wait,0.000,1.000,1.0,SElTVA==\n",
            "run.hlog:6: the `a.wait` histogram does not decode",
        ),
    ];
    for (line, want) in cases {
        let e = error_of(&format!("{HEAD}{line}"));
        assert!(e.starts_with(want), "{line}: {e}");
    }
}

/// The log a run writes for two intervals of `a` (paced, split waits) and of
/// `b` (unpaced), with their snapshots.
fn five_tag_log() -> (String, Vec<paceline::Snapshot>) {
    use super::super::hdr::HdrLog;
    use super::super::tests::{info, snapshot, split_snapshot};
    use super::super::{ActivityInfo, ActivityReport};
    let mut log = HdrLog::new(Vec::new(), 0, std::time::SystemTime::UNIX_EPOCH)
        .unwrap_or_else(|e| panic!("{e}"));
    let a = info("a");
    let b = ActivityInfo {
        target_rate: None,
        mean_target: None,
        strictness: None,
        ..info("b")
    };
    let mut snaps = Vec::new();
    for n in 0..2u64 {
        let (from, to) = (n * 1_000_000_000, (n + 1) * 1_000_000_000);
        let (pa, pb) = (split_snapshot(from, to), snapshot(from, to));
        log.interval(&[
            ActivityReport {
                info: &a,
                snapshot: &pa,
                events: &[],
            },
            ActivityReport {
                info: &b,
                snapshot: &pb,
                events: &[],
            },
        ])
        .unwrap_or_else(|e| panic!("{e}"));
        snaps.push(pa);
    }
    (
        String::from_utf8(log.into_inner()).unwrap_or_default(),
        snaps,
    )
}

#[test]
fn queue_and_dispatch_tags_add_to_the_totals() {
    let (text, snaps) = five_tag_log();
    assert_eq!(text.matches("Tag=a.queue,").count(), 2, "{text}");
    assert!(!text.contains("Tag=b.queue,"));
    let data = parse_hdr(&text, Path::new("run.hlog")).unwrap_or_else(|e| panic!("{e}"));
    let a = &data.activities[0];
    let mut queue = snaps[0].queue().clone();
    queue.merge(snaps[1].queue());
    let mut dispatch = snaps[0].dispatch().clone();
    dispatch.merge(snaps[1].dispatch());
    assert_eq!(&a.totals.queue, queue.histogram());
    assert_eq!(&a.totals.dispatch, dispatch.histogram());
    // Exact: each value twice over the two intervals.
    assert_eq!(
        (a.totals.queue.len(), a.totals.queue.value_at_quantile(0.5)),
        (2000, 500)
    );
    assert_eq!(
        (
            a.totals.dispatch.value_at_quantile(0.99),
            a.totals.dispatch.max()
        ),
        (1980, 2000)
    );
    // The split lines add no interval of their own.
    assert_eq!(a.intervals.len(), 2);
    assert!(a.intervals.iter().all(|i| i.ops == 1000));
    let b = &data.activities[1];
    assert!(b.totals.queue.is_empty() && b.totals.dispatch.is_empty());
    assert_eq!(b.totals.service.len(), 2000);
}

#[test]
fn a_log_written_before_the_split_still_reads() {
    let (text, _) = five_tag_log();
    let old: String = text
        .lines()
        .filter(|l| !l.contains(".queue,") && !l.contains(".dispatch,"))
        .map(|l| format!("{l}\n"))
        .collect();
    // Three tags per activity per interval, as paceline wrote them before.
    assert_eq!(old.matches("Tag=").count(), 12, "{old}");
    let before = parse_hdr(&old, Path::new("old.hlog")).unwrap_or_else(|e| panic!("{e}"));
    let after = parse_hdr(&text, Path::new("new.hlog")).unwrap_or_else(|e| panic!("{e}"));
    for (o, n) in before.activities.iter().zip(&after.activities) {
        assert_eq!(o.alias, n.alias);
        assert_eq!(o.intervals, n.intervals);
        assert_eq!(o.totals.service, n.totals.service);
        assert_eq!(o.totals.wait, n.totals.wait);
        assert_eq!(o.totals.response, n.totals.response);
        // No split in the old log: the report leaves it out.
        assert!(o.totals.queue.is_empty() && o.totals.dispatch.is_empty());
    }
    assert!(!after.activities[0].totals.queue.is_empty());
}

#[test]
fn an_unknown_metric_tag_is_refused_naming_the_five_known() {
    let (text, _) = five_tag_log();
    let line = text
        .lines()
        .position(|l| l.starts_with("Tag=a.queue,"))
        .unwrap_or_else(|| panic!("{text}"));
    let bad = text.replacen("Tag=a.queue,", "Tag=a.queueing,", 1);
    assert_eq!(
        error_of(&bad),
        format!(
            "run.hlog:{}: histogram tag `a.queueing` is not ALIAS.service, ALIAS.wait, \
             ALIAS.response, ALIAS.queue or ALIAS.dispatch (paceline tags every histogram \
             so) (pass the HDR interval log that `paceline run --hdr-log` wrote)",
            line + 1
        )
    );
}

#[test]
fn a_log_without_histograms_is_refused() {
    assert_eq!(
        error_of(HEAD),
        "run.hlog: no histograms in this file (pass the HDR interval log of a run that \
         reported at least one interval: `paceline run --hdr-log`)"
    );
    assert!(error_of("").starts_with("run.hlog: no histograms"));
}

#[test]
fn a_missing_or_binary_file_is_named() {
    let e = from_files(Path::new("/nonexistent-paceline/run.hlog"), None)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        e.starts_with("cannot read /nonexistent-paceline/run.hlog: "),
        "{e}"
    );
    let dir = std::env::temp_dir().join(format!("paceline-read-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
    let bin = dir.join("bin.hlog");
    std::fs::write(&bin, b"#[x]\n\xff\xfe\n").unwrap_or_else(|e| panic!("{e}"));
    let e = from_files(&bin, None)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.ends_with("bin.hlog:2: not text (invalid UTF-8) (pass the HDR interval log that `paceline run --hdr-log` wrote)"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_broken_summary_names_its_line_and_column() {
    let mut data = RunData::default();
    let e = add_summary(
        &mut data,
        "{\n  \"activities\": [\n    {\"alias\": }\n",
        Path::new("s.json"),
    )
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(e.starts_with("s.json:3:15: not JSON: "), "{e}");
    let e = add_summary(&mut data, "{\"runs\": []}", Path::new("s.json"))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert_eq!(
        e,
        "s.json: no `activities` list: not a paceline summary (pass the file that \
         `paceline run --summary-json` wrote)"
    );
}

#[test]
fn comments_parse() {
    assert_eq!(
        event_comment("2.500 a: threads 4 -> 8]"),
        Some((2.5, "a", "threads 4 -> 8"))
    );
    assert_eq!(event_comment("2.500 a threads]"), None);
    assert_eq!(target_comment("a: 2500.5]"), Some(("a", Some(2500.5))));
    assert_eq!(target_comment("a: unpaced]"), Some(("a", None)));
    assert_eq!(target_comment("a: -1]"), None);
}
