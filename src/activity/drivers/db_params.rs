//! Params and checks the database drivers (`postgres`, `redis`) share: durations,
//! booleans, TLS trust, passwords hidden in URLs (and in the recorded command
//! line), `expect_rows` ranges, and one reconnect shared by a worker's ops.

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

/// `url` with its secrets written `***`, for messages and reports: the
/// password of its user info, and the value of a query option whose name
/// holds `password`, `secret` or `token` (`password=`, `sslpassword=`).
///
/// The user info is found as the URL's own parser finds it, so that what the
/// driver takes as the password is what is hidden:
///
/// - `postgres://` and `postgresql://` (also after `jdbc:`), as tokio-postgres
///   reads them: the user info runs to the first `@` anywhere after `://`, so a
///   raw `/` or `?` in the password stays in it. A raw `@` in the password
///   (which the parser takes as the end of the password, and the rest as the
///   host) is hidden too: the mask runs to the last `@` before the query.
/// - every other scheme (`redis://`, `rediss://`, `http://`), as the `url`
///   crate reads it: the authority ends at the first `/`, `?` or `#`, and the
///   user info at its last `@`.
///
/// A URL its parser refuses (`redis://:pa/ss@host`, whose authority `:pa` has
/// no port), or one with an `@` after its authority (where a raw `/`, `?` or
/// `#` in a password ended it), is masked from `://` to the last `@`, user
/// name and all: where the password ends is unknown, and such a URL's message
/// must not show it either.
///
/// ```text
/// postgres://app:secret@db:5432/x?sslmode=require  ->  postgres://app:***@db:5432/x?sslmode=require
/// postgres://app:pa/ss@db/x                         ->  postgres://app:***@db/x
/// redis://:secret@127.0.0.1:6379/0                  ->  redis://:***@127.0.0.1:6379/0
/// redis://:pa/ss@127.0.0.1:6379/0                   ->  redis://***@127.0.0.1:6379/0
/// ```
pub(crate) fn masked(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return masked_query(url);
    };
    let rest = scheme_end + 3;
    let (scheme, tail) = (&url[..scheme_end], &url[rest..]);
    let postgres = is_postgres(scheme);
    // `(where the password starts, where the user info ends)` in `tail`.
    let userinfo = if postgres {
        tail.find('@').map(|first| {
            let query = tail[first..].find('?').map_or(tail.len(), |q| first + q);
            let last = tail[..query].rfind('@').unwrap_or(first);
            (tail[..first].find(':').map(|c| c + 1), last)
        })
    } else {
        let authority = tail.find(['/', '?', '#']).unwrap_or(tail.len());
        tail[..authority]
            .rfind('@')
            .map(|at| (tail[..at].find(':').map(|c| c + 1), at))
    };
    let parses = if postgres {
        postgres_parses(url)
    } else {
        other_parses(url)
    };
    let (head, after) = match (parses, userinfo) {
        (true, Some((Some(pw), at))) => (format!("{}***", &url[..rest + pw]), &tail[at..]),
        (true, _) => (url[..rest].to_string(), tail),
        (false, _) => match tail.rfind('@') {
            Some(at) => (format!("{}***", &url[..rest]), &tail[at..]),
            None => (url[..rest].to_string(), tail),
        },
    };
    format!("{head}{}", masked_query(after))
}

/// A command line with its secrets written `***`, for what a run records of
/// it (the summary JSON, the HTML report, the JUnit XML), each argument
/// otherwise as typed:
///
/// - a param whose name holds `password`, `secret` or `token` keeps only its
///   name (`password=***`), and so does the value after such a flag
///   (`--password ***`);
/// - a URL, alone or as a param's value (`url=`, `coordinate=`), has its
///   password hidden as the drivers' messages hide it: the user info as the
///   URL's own parser reads it, and secret query options (`password=`).
///
/// ```
/// let args = [
///     "paceline", "run", "postgres-keyvalue",
///     "url=postgres://app:pa/ss@127.0.0.1:5432/db",
///     "password=s3cret", "--password", "s3cret",
///     "coordinate=redis://:s3cret@h:6379/0", "cycles=10",
/// ];
/// assert_eq!(
///     paceline::mask_secrets(&args).join(" "),
///     "paceline run postgres-keyvalue url=postgres://app:***@127.0.0.1:5432/db \
///      password=*** --password *** coordinate=redis://:***@h:6379/0 cycles=10"
/// );
/// ```
pub fn mask_secrets<S: AsRef<str>>(args: &[S]) -> Vec<String> {
    let mut after_secret_flag = false;
    args.iter()
        .map(|a| {
            let arg = a.as_ref();
            let masked_arg = if after_secret_flag {
                "***".to_string()
            } else {
                mask_arg(arg)
            };
            after_secret_flag = arg.starts_with('-')
                && !arg.contains('=')
                && is_secret_key(arg.trim_start_matches('-'));
            masked_arg
        })
        .collect()
}

/// One argument, its secrets written `***`.
fn mask_arg(arg: &str) -> String {
    let key_end = arg.find('=').filter(|&i| {
        i > 0
            && arg[..i]
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
    });
    match key_end {
        Some(i) if is_secret_key(&arg[..i]) => format!("{}=***", &arg[..i]),
        Some(i) => format!("{}={}", &arg[..i], masked(&arg[i + 1..])),
        None => masked(arg),
    }
}

/// Whether a URL scheme is one tokio-postgres's URL parser reads
/// (`postgres`, `postgresql`, and pgjdbc's `jdbc:postgresql`).
fn is_postgres(scheme: &str) -> bool {
    let s = scheme.to_ascii_lowercase();
    let s = s.strip_prefix("jdbc:").unwrap_or(&s);
    s == "postgres" || s == "postgresql"
}

/// Whether tokio-postgres reads the URL's user info, host, port and database
/// (its query is left out: pgjdbc's options are not libpq's).
fn postgres_parses(url: &str) -> bool {
    let Some((_, tail)) = url.split_once("://") else {
        return false;
    };
    let first = tail.find('@').unwrap_or(0);
    let end = tail[first..].find('?').map_or(tail.len(), |q| first + q);
    #[cfg(not(loom))]
    {
        format!("postgres://{}", &tail[..end])
            .parse::<tokio_postgres::Config>()
            .is_ok()
    }
    #[cfg(loom)]
    {
        let _ = end;
        false
    }
}

/// Whether the user info the `url` crate's rule finds is the one meant: no
/// `@` after the authority (else a password's raw `/`, `?` or `#` may have
/// ended the authority early), and for `redis://` and `rediss://`, the redis
/// crate reads the authority (a user, a password, a host and a port; the path
/// is left out: `coordinate=` names a schedule there, not a database).
/// Without the crate, a Redis URL is not taken as read.
fn other_parses(url: &str) -> bool {
    let Some((scheme, tail)) = url.split_once("://") else {
        return false;
    };
    let end = tail.find(['/', '?', '#']).unwrap_or(tail.len());
    if tail[end..].contains('@') {
        return false;
    }
    let scheme = scheme.to_ascii_lowercase();
    if scheme != "redis" && scheme != "rediss" {
        return true;
    }
    #[cfg(feature = "redis")]
    {
        let authority = format!("{scheme}://{}", &tail[..end]);
        redis::IntoConnectionInfo::into_connection_info(authority.as_str()).is_ok()
    }
    #[cfg(not(feature = "redis"))]
    {
        false
    }
}

/// Whether a query option or command-line param named `key` holds a secret.
pub(crate) fn is_secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    ["password", "passwd", "secret", "token"]
        .iter()
        .any(|s| k.contains(s))
}

/// `s` with the values of its query's secret options (after the first `?`, up
/// to a `#`) written `***`.
fn masked_query(s: &str) -> String {
    let Some(q) = s.find('?') else {
        return s.to_string();
    };
    let (head, rest) = s.split_at(q + 1);
    let (query, fragment) = rest.split_at(rest.find('#').unwrap_or(rest.len()));
    let query: Vec<String> = query
        .split('&')
        .map(|kv| match kv.split_once('=') {
            Some((k, _)) if is_secret_key(k) => format!("{k}=***"),
            _ => kv.to_string(),
        })
        .collect();
    format!("{head}{}{fragment}", query.join("&"))
}

/// One connect at a time for a worker's ops in flight, which share one
/// connection: the first op that finds the connection lost opens a new one,
/// and every op that starts meanwhile waits for that connect and takes its
/// result, a connection or the connect's error (each waiting op fails with it).
/// Once the connect has ended, the next loss starts another. If the op that
/// runs the connect is dropped (stopped), a waiting op takes it over.
///
/// For one worker on its own thread (`Rc`, `RefCell`): the async runner's
/// `LocalSet`.
#[cfg(not(loom))]
pub(super) struct OneConnect<T, E> {
    /// The connect in progress, if any.
    pending: std::cell::RefCell<Option<Connecting<T, E>>>,
}

/// A connect in progress, which each op waiting for it holds.
#[cfg(not(loom))]
type Connecting<T, E> = std::rc::Rc<tokio::sync::OnceCell<Result<T, E>>>;

#[cfg(not(loom))]
impl<T: Clone, E: Clone> OneConnect<T, E> {
    pub(super) fn new() -> Self {
        Self {
            pending: std::cell::RefCell::new(None),
        }
    }

    /// The result of the connect in progress, or of `connect`, started now
    /// when none is.
    pub(super) async fn join<F>(&self, connect: impl FnOnce() -> F) -> Result<T, E>
    where
        F: std::future::Future<Output = Result<T, E>>,
    {
        let cell = self
            .pending
            .borrow_mut()
            .get_or_insert_with(Default::default)
            .clone();
        let result = cell.get_or_init(connect).await.clone();
        // Ended: the next op that finds the connection lost connects anew.
        let mut pending = self.pending.borrow_mut();
        if pending
            .as_ref()
            .is_some_and(|p| std::rc::Rc::ptr_eq(p, &cell))
        {
            *pending = None;
        }
        result
    }
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
#[path = "db_params_tests.rs"]
mod tests;
