//! Params and checks the database drivers (`postgres`, `redis`) share: durations,
//! booleans, TLS trust, passwords hidden in URLs, and `expect_rows` ranges.

use super::OpPlan;
use super::http_tls::Trust;
use crate::activity::params::duration;
use std::time::Duration;

/// A duration param (`500ms`, `2s`, or a number of seconds), `default` if unset.
pub(super) fn param_duration(
    plan: &OpPlan,
    name: &str,
    default: Duration,
) -> Result<Duration, String> {
    let bad = |v: &dyn std::fmt::Display| {
        format!("param `{name}`: `{v}` is not a duration; write `500ms`, `2s` or `1.5s`")
    };
    match plan.param(name) {
        None => Ok(default),
        Some(serde_json::Value::String(s)) => duration(s).ok_or_else(|| bad(s)),
        Some(serde_json::Value::Number(n)) => n
            .as_f64()
            .filter(|s| s.is_finite() && *s >= 0.0)
            .map(Duration::from_secs_f64)
            .ok_or_else(|| bad(n)),
        Some(v) => Err(bad(v)),
    }
    .and_then(|d| {
        if d.is_zero() {
            Err(format!("param `{name}`: must be above 0; write `5s`"))
        } else {
            Ok(d)
        }
    })
}

/// A boolean param, `default` if unset.
pub(super) fn param_bool(plan: &OpPlan, name: &str, default: bool) -> Result<bool, String> {
    match plan.param(name) {
        None => Ok(default),
        Some(serde_json::Value::Bool(b)) => Ok(*b),
        Some(serde_json::Value::String(s)) if s == "true" => Ok(true),
        Some(serde_json::Value::String(s)) if s == "false" => Ok(false),
        Some(v) => Err(format!("param `{name}`: {v} is not `true` or `false`")),
    }
}

/// Whom TLS trusts, from params `ca_file` and `tls_verify` (as in the `http`
/// driver).
pub(super) fn trust(plan: &OpPlan) -> Result<Trust, String> {
    let verify = param_bool(plan, "tls_verify", true)?;
    match (plan.param("ca_file"), verify) {
        (None, true) => Ok(Trust::Platform),
        (None, false) => Ok(Trust::Anyone),
        (Some(serde_json::Value::String(f)), true) => Ok(Trust::CaFile(f.clone())),
        (Some(serde_json::Value::String(_)), false) => Err(
            "params `ca_file` and `tls_verify: false` contradict each other; drop \
             `tls_verify: false` to check certificates against the file"
                .to_string(),
        ),
        (Some(v), _) => Err(format!(
            "param `ca_file`: {v} is not a path; write `ca_file: certs/ca.pem`"
        )),
    }
}

/// Prints, once per activity alias in this process, that `tls_verify: false`
/// leaves the connection open to anyone in between (a run loads its activity
/// more than once: validated, then started).
pub(super) fn warn_unverified(alias: &str, what: &str) {
    use crate::sync::threads::{Mutex, lock};
    static WARNED: std::sync::OnceLock<Mutex<std::collections::BTreeSet<String>>> =
        std::sync::OnceLock::new();
    if lock(WARNED.get_or_init(Default::default)).insert(alias.to_string()) {
        eprintln!(
            "warning: activity `{alias}`: `tls_verify: false`: {what} certificates are not \
             checked; anyone between paceline and the server can read and change the traffic"
        );
    }
}

/// `url` with its password (between `user:` and `@`, or a `password=` query
/// option) written `***`, for messages and reports.
///
/// ```text
/// postgres://app:secret@db:5432/x?sslmode=require  ->  postgres://app:***@db:5432/x?sslmode=require
/// redis://:secret@127.0.0.1:6379/0                 ->  redis://:***@127.0.0.1:6379/0
/// ```
pub(crate) fn masked(url: &str) -> String {
    let mut out = url.to_string();
    if let Some(scheme_end) = out.find("://") {
        let rest = scheme_end + 3;
        let authority_end = out[rest..].find(['/', '?']).map_or(out.len(), |i| rest + i);
        if let Some(at) = out[rest..authority_end].rfind('@') {
            let at = rest + at;
            if let Some(colon) = out[rest..at].find(':') {
                out.replace_range(rest + colon + 1..at, "***");
            }
        }
    }
    if let Some(q) = out.find('?') {
        let (head, query) = out.split_at(q + 1);
        let query: Vec<String> = query
            .split('&')
            .map(|kv| match kv.split_once('=') {
                Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                _ => kv.to_string(),
            })
            .collect();
        out = format!("{head}{}", query.join("&"));
    }
    out
}

/// An `expect_rows` check: an exact count or an inclusive range `LO..HI`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct RowRange {
    pub(super) lo: u64,
    pub(super) hi: u64,
}

impl RowRange {
    /// Reads `3`, `"3"`, `"1..10"` (inclusive) or `"1.."` (at least one).
    pub(super) fn parse(v: &serde_json::Value) -> Result<Self, String> {
        let bad = || {
            format!(
                "{v} is not a row count; write `1`, a range `1..10` (both ends included) or `1..`"
            )
        };
        if let Some(n) = v.as_u64() {
            return Ok(Self { lo: n, hi: n });
        }
        let s = v.as_str().ok_or_else(bad)?.trim();
        match s.split_once("..") {
            None => s.parse().map(|n| Self { lo: n, hi: n }).map_err(|_| bad()),
            Some((lo, hi)) => {
                let lo = lo.trim().parse().map_err(|_| bad())?;
                let hi = match hi.trim() {
                    "" => u64::MAX,
                    h => h.trim_start_matches('=').parse().map_err(|_| bad())?,
                };
                if lo > hi {
                    return Err(format!("{v}: the range is empty; write the low end first"));
                }
                Ok(Self { lo, hi })
            }
        }
    }

    /// Whether `n` rows pass.
    pub(super) fn admits(&self, n: u64) -> bool {
        (self.lo..=self.hi).contains(&n)
    }
}

impl std::fmt::Display for RowRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.lo, self.hi) {
            (lo, hi) if lo == hi => write!(f, "{lo}"),
            (lo, u64::MAX) => write!(f, "{lo}.."),
            (lo, hi) => write!(f, "{lo}..{hi}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_masked_in_the_authority_and_the_query() {
        assert_eq!(
            masked("postgres://app:secret@db:5432/x?sslmode=require"),
            "postgres://app:***@db:5432/x?sslmode=require"
        );
        assert_eq!(
            masked("redis://:pw@127.0.0.1:6379/0"),
            "redis://:***@127.0.0.1:6379/0"
        );
        assert_eq!(masked("postgres://app@db/x"), "postgres://app@db/x");
        assert_eq!(
            masked("postgresql://db/x?user=a&password=p@ss&sslmode=disable"),
            "postgresql://db/x?user=a&password=***&sslmode=disable"
        );
        // An `@` in the path is not the userinfo's.
        assert_eq!(masked("redis://h:1/0?x=a:b@c"), "redis://h:1/0?x=a:b@c");
    }

    #[test]
    fn row_ranges() {
        let p = |s: serde_json::Value| RowRange::parse(&s);
        assert_eq!(p(serde_json::json!(3)), Ok(RowRange { lo: 3, hi: 3 }));
        assert_eq!(
            p(serde_json::json!("1..10")),
            Ok(RowRange { lo: 1, hi: 10 })
        );
        assert_eq!(p(serde_json::json!("1..")).unwrap().to_string(), "1..");
        assert!(p(serde_json::json!("5..2")).is_err());
        assert!(p(serde_json::json!("x")).is_err());
        assert!(p(serde_json::json!("0..=2")).unwrap().admits(2));
    }
}
