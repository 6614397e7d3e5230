//! Whether an HDR log and a summary JSON come from the same run: the log's
//! `#[StartTime: ...]` and the summary's `started_at` are the run's start, taken
//! within milliseconds of each other by `paceline run`. A log of another run
//! read beside a summary would put one run's figures under the other's header
//! (`report --summary-json`) or judge one run's change on another's
//! distribution (`compare --hdr-logs`, audit p16 M6).
//!
//! Rule: the two starts agree within [`TOLERANCE_S`]; a file without its start
//! (a log with no StartTime, a summary from before `started_at` was written)
//! cannot be checked and is taken as it is.

use serde_json::Value;
use std::path::Path;

/// How far apart (seconds) a log's StartTime and its summary's `started_at`
/// may be: both are read from the wall clock as the run starts, a few
/// milliseconds apart even on a loaded machine, while two runs start seconds
/// apart at least.
pub const TOLERANCE_S: f64 = 1.0;

/// The log's `#[StartTime: SECONDS ...]`, in seconds since the epoch.
pub fn log_start(text: &str) -> Option<f64> {
    text.lines()
        .take_while(|l| l.starts_with('#') || l.trim().is_empty())
        .find_map(|l| l.strip_prefix("#[StartTime: "))
        .and_then(super::read::header_seconds)
}

/// A `started_at` as `paceline run` writes it (`2026-11-28T14:16:42.613+00:00`,
/// or with `Z`), in seconds since the epoch.
pub fn rfc3339_seconds(s: &str) -> Option<f64> {
    let s = s.trim();
    let (date, time) = s.split_once('T')?;
    let mut d = date.splitn(3, '-');
    let y: i64 = d.next()?.parse().ok()?;
    let m: i64 = d.next()?.parse().ok()?;
    let day: i64 = d.next()?.parse().ok()?;
    // The offset: `Z` or `±HH:MM`.
    let (clock, offset) = if let Some(c) = time.strip_suffix('Z') {
        (c, 0)
    } else {
        let at = time.rfind(['+', '-'])?;
        let (c, off) = time.split_at(at);
        let sign = if off.starts_with('-') { -1 } else { 1 };
        let (oh, om) = off[1..].split_once(':')?;
        (
            c,
            sign * (oh.parse::<i64>().ok()? * 3600 + om.parse::<i64>().ok()? * 60),
        )
    };
    let mut c = clock.splitn(3, ':');
    let h: i64 = c.next()?.parse().ok()?;
    let min: i64 = c.next()?.parse().ok()?;
    let sec: f64 = c.next()?.parse().ok()?;
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) {
        return None;
    }
    // Days from the civil date (H. Hinnant's `days_from_civil`).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some((days * 86_400 + h * 3600 + min * 60 - offset) as f64 + sec)
}

/// `Err(what is wrong and the fix)` when the log at `log_path` (its text
/// `log_text`) is not the log of the run whose summary is `summary` (at
/// `summary_path`).
pub fn check(
    log_path: &Path,
    log_text: &str,
    summary_path: &Path,
    summary: &Value,
) -> Result<(), String> {
    let (Some(log), Some(run)) = (
        log_start(log_text),
        summary["started_at"].as_str().and_then(rfc3339_seconds),
    ) else {
        return Ok(());
    };
    if (log - run).abs() <= TOLERANCE_S {
        return Ok(());
    }
    Err(format!(
        "{} is not the HDR log of the run in {}: the log's run started at {} \
         (its StartTime), the summary's at {} ({:.3} s apart); pass the log that \
         the same `paceline run` wrote with its --summary-json",
        log_path.display(),
        summary_path.display(),
        super::super::meta::rfc3339(
            std::time::UNIX_EPOCH
                + std::time::Duration::from_millis((log.max(0.0) * 1e3).round() as u64)
        ),
        summary["started_at"].as_str().unwrap_or("?"),
        (log - run).abs()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn started_at_reads_back_what_meta_writes() {
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(1_795_875_402_613);
        let s = super::super::super::meta::rfc3339(t);
        let back = rfc3339_seconds(&s).unwrap_or(f64::NAN);
        assert!((back - 1_795_875_402.613).abs() < 1e-6, "{s} -> {back}");
        assert_eq!(rfc3339_seconds("1970-01-01T00:00:00Z"), Some(0.0));
        assert_eq!(rfc3339_seconds("1970-01-01T01:00:00+01:00"), Some(0.0));
        assert_eq!(
            rfc3339_seconds("2000-03-01T00:00:00.000+00:00"),
            Some(951_868_800.0)
        );
        assert_eq!(rfc3339_seconds("not a date"), None);
    }

    #[test]
    fn a_log_of_another_run_is_refused_and_its_own_is_taken() {
        let log = "#[Logged with paceline 0.1.0]\n#[StartTime: 1795875402.613 (seconds since epoch)]\n\
                   #[BaseTime: 1795875402.613 (seconds since epoch)]\n";
        let own = json!({"started_at": "2026-11-28T14:16:42.620+00:00", "activities": []});
        let other = json!({"started_at": "2026-11-28T14:17:05.001+00:00", "activities": []});
        let (lp, sp) = (Path::new("a.hlog"), Path::new("b.json"));
        assert_eq!(check(lp, log, sp, &own), Ok(()));
        let e = check(lp, log, sp, &other).err().unwrap_or_default();
        assert!(
            e.starts_with("a.hlog is not the HDR log of the run in b.json"),
            "{e}"
        );
        assert!(e.contains("22.388 s apart"), "{e}");
        // Nothing to check against: taken as it is.
        assert_eq!(check(lp, log, sp, &json!({"activities": []})), Ok(()));
        assert_eq!(check(lp, "\"StartTimestamp\"\n", sp, &other), Ok(()));
    }
}
