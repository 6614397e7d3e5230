//! Where a run connects and how: the `url` param (`postgres://`,
//! `postgresql://`, or NoSQLBench jdbc's `jdbc:postgresql://` with pgjdbc's
//! query options), NB5 jdbc's connection params (`serverName`, `portNumber`,
//! `databaseName`, `user`, `password`, `sslmode`, `sslrootcert`, ...), and
//! libpq's `sslmode` with its meanings.
//!
//! tokio-postgres reads a libpq URL but knows only `disable`, `prefer` and
//! `require`; the rest of `sslmode`, `sslrootcert` and pgjdbc's own options are
//! taken out of the query here, and the URL's remainder is handed to it.

use super::super::OpPlan;
use super::super::db_params::masked;
use tokio_postgres::Config;
use tokio_postgres::config::SslMode;

/// libpq's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// No TLS.
    Disable,
    /// libpq tries plain first, then TLS; here as `prefer` (TLS when the
    /// server offers it, else plain): the server decides the same way.
    Allow,
    /// TLS when the server offers it, else plain; no check without a root
    /// certificate.
    Prefer,
    /// TLS or no connection; no check without a root certificate (with one, as
    /// `verify-ca`).
    Require,
    /// TLS, the chain checked against the root certificate.
    VerifyCa,
    /// TLS, the chain and the host name checked.
    VerifyFull,
}

impl Mode {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "disable" => Self::Disable,
            "allow" => Self::Allow,
            "prefer" => Self::Prefer,
            "require" => Self::Require,
            "verify-ca" => Self::VerifyCa,
            "verify-full" => Self::VerifyFull,
            _ => return None,
        })
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Disable => "disable",
            Self::Allow => "allow",
            Self::Prefer => "prefer",
            Self::Require => "require",
            Self::VerifyCa => "verify-ca",
            Self::VerifyFull => "verify-full",
        }
    }

    /// What tokio-postgres negotiates.
    pub(super) fn negotiate(self) -> SslMode {
        match self {
            Self::Disable => SslMode::Disable,
            Self::Allow | Self::Prefer => SslMode::Prefer,
            Self::Require | Self::VerifyCa | Self::VerifyFull => SslMode::Require,
        }
    }
}

/// The connection settings of a run.
#[derive(Debug)]
pub(super) struct Settings {
    pub(super) config: Config,
    /// The URL (or the one the jdbc params make), its password `***`.
    pub(super) shown: String,
    pub(super) mode: Mode,
    /// `sslrootcert` (from the URL or a param): a PEM file, or `system`.
    pub(super) root: Option<String>,
}

const URL_FORM: &str = "postgres://USER[:PASSWORD]@HOST:PORT/DB";

/// NB5 jdbc's connection params, read by both `postgres` and `jdbc`.
pub(super) const JDBC_PARAMS: &[&str] = &[
    "serverName",
    "portNumber",
    "databaseName",
    "user",
    "password",
    "sslmode",
    "sslrootcert",
    "ssl",
    "applicationName",
    "sslcert",
    "autoCommit",
    "dml_batch",
    "num_conn",
    "use_hikaricp",
    "rewriteBatchedInserts",
    "keepaliveTime",
    "maximumPoolSize",
    "connectionTimeout",
    "idleTimeout",
    "maxLifetime",
    "connectionTestQuery",
    "minimumIdle",
    "metricRegistry",
    "healthCheckRegistry",
    "poolName",
    "initializationFailTimeout",
    "isolateInternalQueries",
    "allowPoolSuspension",
    "readOnly",
    "registerMbeans",
    "catalog",
    "connectionInitSql",
    "driverClassName",
    "transactionIsolation",
    "validationTimeout",
    "leakDetectionThreshold",
    "dataSource",
    "schema",
    "threadFactory",
    "scheduledExecutor",
];

/// What an NB5 jdbc param that paceline does not apply means here: `Err` for
/// one whose effect a run would silently lose (refused), `Ok` for a notice.
fn unapplied(name: &str, value: &str) -> Option<Result<String, String>> {
    let v = value.trim().to_ascii_lowercase();
    Some(match name {
        "sslcert" => Err(
            "client certificates are not supported by the postgres driver; authenticate \
             with `user` and `password` (scram-sha-256 or md5), or remove `sslcert`"
                .into(),
        ),
        "autoCommit" if v == "false" => Err(
            "each op is its own transaction (autocommit) here; write the transaction into \
             one op as `raw: 'BEGIN; ...; COMMIT'`, or remove `autoCommit`"
                .into(),
        ),
        "dml_batch" if v != "1" && v != "0" => Err(
            "the postgres driver sends one statement per op, with no batching; write a \
             multi-row `INSERT ... VALUES (...), (...)` as the op, or remove `dml_batch`"
                .into(),
        ),
        "autoCommit" | "dml_batch" | "ssl" => return None,
        "num_conn" => Ok(
            "connections are one per op in flight (as pgbench's -c): set \
                          `concurrency=N` for N connections"
                .into(),
        ),
        "use_hikaricp" | "maximumPoolSize" | "keepaliveTime" | "rewriteBatchedInserts" => Ok(
            "connection pooling and batch rewriting are NB5's; paceline opens one \
             connection per op in flight before the schedule starts (`concurrency`)"
                .into(),
        ),
        "connectionTimeout" => Ok("use `connect_timeout` (a duration, `5s`)".into()),
        "applicationName" | "serverName" | "portNumber" | "databaseName" | "user" | "password"
        | "sslmode" | "sslrootcert" => return None,
        _ => Ok("a HikariCP setting NB5's jdbc adapter does not apply either".into()),
    })
}

/// A param as text (a YAML number or boolean as written).
fn text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Percent-decodes a URL query value.
fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Some(x) = std::str::from_utf8(&b[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(x);
            i += 3;
            continue;
        }
        out.push(if b[i] == b'+' { b' ' } else { b[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The connection settings from `plan`'s params, the notices to print for
/// NB5 jdbc params that have no effect here, or what is wrong and how to fix
/// it. `jdbc`: the run names `driver=jdbc` (`url` may then be left out, as NB5
/// defaults it to `jdbc:postgresql:/`).
pub(super) fn settings(plan: &OpPlan, jdbc: bool) -> Result<(Settings, Vec<String>), String> {
    let url = match plan.param("url") {
        Some(serde_json::Value::String(u)) => u.clone(),
        Some(v) => return Err(format!("param `url`: {v} is not a URL; write {URL_FORM}")),
        None if jdbc || plan.param("serverName").is_some() => "postgres://".to_string(),
        None => {
            return Err(format!(
                "param `url` is missing; give `url={URL_FORM}` (or NB5 jdbc's `serverName`, \
                 `portNumber`, `databaseName`, `user`, `password`)"
            ));
        }
    };
    let shown_url = masked(&url);
    let is_jdbc_url = url.starts_with("jdbc:");
    let u = url.strip_prefix("jdbc:").unwrap_or(&url);
    let rest = u
        .strip_prefix("postgresql:")
        .or_else(|| u.strip_prefix("postgres:"))
        .ok_or_else(|| {
            format!("param `url`: `{shown_url}` is not a PostgreSQL URL; write {URL_FORM}")
        })?;
    // `jdbc:postgresql:/` and `jdbc:postgresql:db` (pgjdbc's forms without a
    // host) are `postgres:///db`: the host comes from the params or defaults.
    let (base, query) = match rest.split_once('?') {
        Some((b, q)) => (b, q),
        None => (rest, ""),
    };
    let base = if let Some(b) = base.strip_prefix("//") {
        format!("postgres://{b}")
    } else {
        format!("postgres:///{}", base.trim_start_matches('/'))
    };
    let mut mode: Option<(Mode, &'static str)> = None;
    let mut root: Option<(String, String)> = None;
    let mut passed: Vec<String> = Vec::new();
    let mut app_name: Option<String> = None;
    let mut connect_secs: Option<String> = None;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let value = decode(v);
        match k {
            "sslmode" => {
                let m =
                    Mode::parse(&value).ok_or_else(|| bad_mode("url` option `sslmode", &value))?;
                mode = Some((m, "the URL"));
            }
            "sslrootcert" => root = Some((value, "the URL's `sslrootcert`".into())),
            "ssl" | "sslfactory" if is_jdbc_url => {}
            "ApplicationName" | "applicationName" if is_jdbc_url => app_name = Some(value),
            "connectTimeout" | "loginTimeout" if is_jdbc_url => connect_secs = Some(value),
            "currentSchema" if is_jdbc_url => {
                return Err(format!(
                    "param `url`: pgjdbc's option `currentSchema` is not read; write \
                     `options=-c%20search_path%3D{value}` in the URL instead"
                ));
            }
            "sslcert" | "sslkey" | "sslpassword" => {
                return Err(format!(
                    "param `url`: option `{k}`: client certificates are not supported by \
                     the postgres driver; authenticate with USER:PASSWORD"
                ));
            }
            _ => passed.push(pair.to_string()),
        }
    }
    let libpq = if passed.is_empty() {
        base.clone()
    } else {
        format!("{base}?{}", passed.join("&"))
    };
    let mut config: Config = libpq.parse().map_err(|e| {
        if is_jdbc_url {
            format!(
                "param `url`: `{shown_url}`: {e}; pgjdbc options other than user, password, \
                 sslmode, sslrootcert, ssl, ApplicationName and connectTimeout are not read \
                 (libpq's are: options, application_name, connect_timeout, ...)"
            )
        } else {
            format!("param `url`: `{shown_url}`: {e}; write {URL_FORM}")
        }
    })?;
    if config.get_channel_binding() == tokio_postgres::config::ChannelBinding::Require {
        return Err(format!(
            "param `url`: `{shown_url}` asks for `channel_binding=require`, which the \
             postgres driver does not do (SCRAM runs without channel binding); remove it, or \
             check the server's certificate with sslmode=verify-full instead"
        ));
    }
    if config.get_target_session_attrs() != tokio_postgres::config::TargetSessionAttrs::Any {
        return Err(format!(
            "param `url`: `{shown_url}` asks for `target_session_attrs`, which the postgres \
             driver does not check; remove it and name the primary's HOST:PORT"
        ));
    }
    if let Some(name) = app_name {
        config.application_name(&name);
    }
    if let Some(secs) = connect_secs
        && secs != "0"
    {
        let s: u64 = secs.parse().map_err(|_| {
            format!("param `url`: `connectTimeout={secs}` is not a whole number of seconds")
        })?;
        config.connect_timeout(std::time::Duration::from_secs(s));
    }

    // NB5 jdbc's params: they fill what the URL leaves out, and must agree
    // with what it gives.
    let mut notices = Vec::new();
    for &name in JDBC_PARAMS {
        let Some(v) = plan.param(name) else { continue };
        let value = text(v);
        match unapplied(name, &value) {
            Some(Err(why)) => return Err(format!("param `{name}` (NB5 jdbc): {why}")),
            Some(Ok(note)) => notices.push(format!("NB5 jdbc param `{name}` is not read: {note}")),
            None => {}
        }
        // The URL wins, as pgjdbc lets a URL's values override its
        // properties: a `url=` on the command line redirects an NB5 file.
        let mut clash = |what: &str, had: &str| {
            notices.push(format!(
                "param `{name}` (`{}`) gives way to the {what} in `url` (`{had}`), as in \
                 pgjdbc",
                if name == "password" { "***" } else { &value }
            ));
        };
        match name {
            "serverName" => {
                let hosts = config.get_hosts();
                if let Some(tokio_postgres::config::Host::Tcp(h)) = hosts.first()
                    && h != &value
                {
                    clash("host", &h.clone());
                }
                if hosts.is_empty() {
                    config.host(&value);
                }
            }
            "portNumber" => {
                let port: u16 = value.parse().ok().filter(|p| *p > 0).ok_or_else(|| {
                    format!("param `portNumber`: `{value}` is not a port; write 1 to 65535")
                })?;
                match config.get_ports().first() {
                    Some(&p) if url_has_port(&base) => {
                        if p != port {
                            clash("port", &p.to_string());
                        }
                    }
                    _ => {
                        config.port(port);
                    }
                }
            }
            "databaseName" => match config.get_dbname() {
                Some(d) => {
                    if d != value {
                        clash("database", d);
                    }
                }
                _ => {
                    config.dbname(&value);
                }
            },
            "user" => match config.get_user() {
                Some(u) => {
                    if u != value {
                        clash("user", u);
                    }
                }
                _ => {
                    config.user(&value);
                }
            },
            "password" => match config.get_password() {
                Some(p) => {
                    if p != value.as_bytes() {
                        clash("password", "***");
                    }
                }
                _ => {
                    config.password(&value);
                }
            },
            "applicationName" => {
                config.application_name(&value);
            }
            "sslmode" => {
                let m = Mode::parse(&value).ok_or_else(|| bad_mode("sslmode", &value))?;
                match mode {
                    Some((had, _)) if had != m => clash("sslmode", had.name()),
                    Some(_) => {}
                    None => mode = Some((m, "param `sslmode`")),
                }
            }
            "sslrootcert" => match &root {
                Some((had, _)) if had != &value => clash("sslrootcert", &had.clone()),
                Some(_) => {}
                None => root = Some((value.clone(), "param `sslrootcert`".into())),
            },
            _ => {}
        }
    }
    if config.get_hosts().is_empty() {
        if jdbc || plan.param("serverName").is_some() || is_jdbc_url {
            // pgjdbc's default.
            config.host("localhost");
        } else {
            return Err(format!(
                "param `url`: `{shown_url}` names no host; write postgres://USER@127.0.0.1:5432/DB"
            ));
        }
    }
    if config.get_user().is_none() {
        if config.get_password().is_some() {
            return Err(
                "param `password` is given without `user`; give `user` too (NB5's jdbc \
                        adapter refuses this as well)"
                    .into(),
            );
        }
        return Err(format!(
            "no user: give it in `url` ({URL_FORM}) or as param `user`"
        ));
    }
    // NB5's jdbc adapter sets `sslmode=prefer` when none is given, as libpq
    // defaults to; a plain postgres URL without one is `prefer` too.
    let mode = mode.map_or(Mode::Prefer, |(m, _)| m);
    config.ssl_mode(mode.negotiate());
    let shown = if url.starts_with("postgres") && url != "postgres://" {
        shown_url
    } else {
        shown_of(&config, mode)
    };
    Ok((
        Settings {
            config,
            shown,
            mode,
            root: root.map(|(r, _)| r),
        },
        notices,
    ))
}

/// Whether the URL's authority names a port.
fn url_has_port(base: &str) -> bool {
    let after = base.trim_start_matches("postgres://");
    let authority = after.split('/').next().unwrap_or("");
    let host = authority.rsplit('@').next().unwrap_or("");
    host.rsplit_once(':')
        .is_some_and(|(_, p)| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

fn bad_mode(what: &str, value: &str) -> String {
    format!(
        "param `{what}`: `{value}` is not an sslmode; write `disable`, `allow`, `prefer`, \
         `require`, `verify-ca` or `verify-full`"
    )
}

/// The URL the settings amount to, password `***`, for messages.
fn shown_of(c: &Config, mode: Mode) -> String {
    let host = match c.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(h)) => h.clone(),
        _ => "localhost".into(),
    };
    let port = c.get_ports().first().copied().unwrap_or(5432);
    let user = c.get_user().unwrap_or("");
    let pw = if c.get_password().is_some() {
        ":***"
    } else {
        ""
    };
    let db = c.get_dbname().unwrap_or(user);
    format!(
        "postgres://{user}{pw}@{host}:{port}/{db}?sslmode={}",
        mode.name()
    )
}

#[cfg(test)]
#[path = "target_tests.rs"]
mod tests;
