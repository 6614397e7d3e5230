//! Run metadata for the summary JSON's top level: which paceline ran, when, with
//! what command, on which machine. Times are RFC 3339 in UTC with an explicit
//! offset (`2026-11-27T13:40:05.123+00:00`), formatted here from the system time
//! (a civil-from-days conversion, no time-zone database needed).

use serde_json::{Map, Value, json};
use std::time::{SystemTime, UNIX_EPOCH};

/// `t` as RFC 3339 in UTC, to the millisecond, with the offset written out.
pub fn rfc3339(t: SystemTime) -> String {
    let (secs, millis) = match t.duration_since(UNIX_EPOCH) {
        Ok(d) => (d.as_secs() as i64, d.subsec_millis()),
        Err(e) => {
            // Before 1970: count back.
            let d = e.duration();
            let ms = d.as_millis() as i64;
            let secs = -((ms + 999) / 1000);
            (secs, ((secs * 1000 + ms).unsigned_abs() % 1000) as u32)
        }
    };
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = paceline::nanos::civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}+00:00",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// The command line as a shell would take it back, its secrets written `***`
/// (`paceline::mask_secrets`: passwords in URLs, `password=`, `--password X`):
/// each argument quoted when it holds anything but plain characters.
pub fn command_line(args: impl IntoIterator<Item = String>) -> String {
    let args: Vec<String> = args.into_iter().collect();
    paceline::mask_secrets(&args)
        .into_iter()
        .map(|a| {
            let plain = !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c));
            if plain {
                a
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// This machine's host name.
fn host() -> Option<String> {
    read_trimmed("/proc/sys/kernel/hostname")
        .or_else(|| read_trimmed("/etc/hostname"))
        .or_else(|| std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()))
        .or_else(|| std::env::var("COMPUTERNAME").ok().filter(|h| !h.is_empty()))
}

/// The OS, its kernel release where known, and the architecture:
/// `linux 6.1.0-18-amd64 x86_64`.
fn os() -> String {
    let release = read_trimmed("/proc/sys/kernel/osrelease");
    match release {
        Some(r) => format!("{} {r} {}", std::env::consts::OS, std::env::consts::ARCH),
        None => format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
    }
}

/// The CPU's model name, from `/proc/cpuinfo` (`None` where there is none).
fn cpu_model() -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    cpu_model_of(&text)
}

fn cpu_model_of(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        let k = k.trim();
        (k == "model name" || k == "Hardware" || k == "cpu model" || k == "uarch")
            .then(|| v.trim().to_string())
            .filter(|v| !v.is_empty())
    })
}

/// The run field, `true` in every summary written since `ended` names who
/// stopped an activity; a file without it predates that.
pub const ENDED_SAYS_WHO: &str = "ended_says_who_stopped";

/// The metadata known when the run starts; [`finish`] adds its end.
pub fn start(started_at: SystemTime) -> Map<String, Value> {
    let v = json!({
        "version": env!("CARGO_PKG_VERSION"),
        "started_at": rfc3339(started_at),
        "ended_at": null,
        "command_line": command_line(std::env::args()),
        "host": host(),
        "os": os(),
        "cpu_model": cpu_model(),
        "cores": paceline::machine_cores(),
        // This file's activities' `ended` says who stopped them (`stopped by
        // abort_on_fail`, `stopped by control`; audit p18, H1): `compare`
        // reads a bare `stopped` here as a planned stop (review p18, G-2).
        ENDED_SAYS_WHO: true,
    });
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// Sets `ended_at` to `t`.
pub fn finish(meta: &mut Map<String, Value>, t: SystemTime) {
    meta.insert("ended_at".into(), Value::String(rfc3339(t)));
}

/// The keys of the metadata, in the order reports show them, with their labels.
pub const FIELDS: &[(&str, &str)] = &[
    ("version", "paceline"),
    ("started_at", "started"),
    ("ended_at", "ended"),
    ("command_line", "command"),
    ("host", "host"),
    ("os", "os"),
    ("cpu_model", "cpu"),
    ("cores", "cores"),
];

/// A metadata value as text (`?` for null).
pub fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "?".to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn rfc3339_dates_across_leap_years_and_eras() {
        let at = |s: u64, ms: u64| {
            rfc3339(UNIX_EPOCH + Duration::from_secs(s) + Duration::from_millis(ms))
        };
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000+00:00");
        // 2000-02-29 (a leap day of a year divisible by 400).
        assert_eq!(at(951_782_400, 5), "2000-02-29T00:00:00.005+00:00");
        assert_eq!(at(1_709_251_199, 999), "2024-02-29T23:59:59.999+00:00");
        assert_eq!(at(4_102_444_800, 0), "2100-01-01T00:00:00.000+00:00");
        // 2100 is not a leap year: the day after 02-28 is 03-01.
        assert_eq!(at(4_107_542_400, 0), "2100-03-01T00:00:00.000+00:00");
        assert_eq!(
            rfc3339(UNIX_EPOCH - Duration::from_secs(1)),
            "1969-12-31T23:59:59.000+00:00"
        );
    }

    #[test]
    fn command_lines_quote_what_a_shell_would_split() {
        let args = [
            "paceline",
            "run",
            "driver=diag",
            "--threshold",
            "response.p99<1ms",
            "it's",
        ];
        assert_eq!(
            command_line(args.iter().map(|s| s.to_string())),
            "paceline run driver=diag --threshold 'response.p99<1ms' 'it'\\''s'"
        );
    }

    /// Regression (audit p15, H1): the command line was stored verbatim, so
    /// the README's `url=postgres://USER:PASSWORD@...` put the password in
    /// the summary JSON, the HTML report and the JUnit XML.
    #[test]
    fn command_lines_hide_every_secret_and_keep_the_rest_as_typed() {
        let line = |args: &[&str]| command_line(args.iter().map(|s| s.to_string()));
        assert_eq!(
            line(&[
                "paceline",
                "run",
                "postgres-keyvalue",
                "url=postgres://app:pa/ss?x@127.0.0.1:5432/db",
                "rate=100",
            ]),
            "paceline run postgres-keyvalue 'url=postgres://app:***@127.0.0.1:5432/db' rate=100"
        );
        assert_eq!(
            line(&[
                "paceline",
                "run",
                "w.yaml",
                "url=redis://:pa/ss@127.0.0.1:6379/0"
            ]),
            "paceline run w.yaml 'url=redis://***@127.0.0.1:6379/0'"
        );
        assert_eq!(
            line(&[
                "paceline",
                "run",
                "nb5.yaml",
                "driver=jdbc",
                "user=app",
                "password=it's secret",
                "url=jdbc:postgresql://db:5432/x?user=a&password=s3cret",
                "--password",
                "s3cret",
                "coordinate=redis://:s3cret@127.0.0.1:6379/0",
            ]),
            "paceline run nb5.yaml driver=jdbc user=app 'password=***' \
             'url=jdbc:postgresql://db:5432/x?user=a&password=***' --password '***' \
             'coordinate=redis://:***@127.0.0.1:6379/0'"
        );
        // Nothing secret: as typed, to the byte.
        assert_eq!(
            line(&[
                "paceline",
                "run",
                "driver=diag",
                "url=redis://127.0.0.1:6379/0",
                "x=a@b"
            ]),
            "paceline run driver=diag url=redis://127.0.0.1:6379/0 x=a@b"
        );
    }

    #[test]
    fn the_cpu_model_comes_from_cpuinfo() {
        let text = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n";
        assert_eq!(
            cpu_model_of(text).as_deref(),
            Some("Intel(R) Xeon(R) CPU @ 2.20GHz")
        );
        assert_eq!(cpu_model_of("processor : 0\n"), None);
    }

    #[test]
    fn start_has_every_field() {
        let m = start(UNIX_EPOCH);
        for (k, _) in FIELDS {
            assert!(m.contains_key(*k), "{k}");
        }
        assert_eq!(m["version"], env!("CARGO_PKG_VERSION"));
        assert!(m["cores"].as_u64().is_some_and(|c| c >= 1));
    }
}
