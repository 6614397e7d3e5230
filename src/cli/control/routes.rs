//! The routes: a request's method and path to a [`ControlTarget`] call, the rate
//! and threads bodies parsed, and the reply.

use super::{Access, ControlError, ControlTarget};
use paceline::nanos::parse_duration;
use paceline::{RateSpec, Scope};
use std::time::Duration;

/// The `Content-Type` of a plain-text answer.
const TEXT: &str = "text/plain; charset=utf-8";

/// A reply before it becomes an HTTP response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// The HTTP status code.
    pub status: u16,
    /// The body: one line of text (newline-terminated), JSON, OpenMetrics, or
    /// the protobuf exposition.
    pub body: Vec<u8>,
    /// The `Content-Type` header.
    pub content_type: &'static str,
    /// The `Allow` header for a 405.
    pub allow: Option<&'static str>,
}

impl Reply {
    pub(super) fn text(status: u16, body: impl Into<String>) -> Self {
        let mut body = body.into();
        body.push('\n');
        Self {
            status,
            body: body.into_bytes(),
            content_type: TEXT,
            allow: None,
        }
    }

    fn json(value: &serde_json::Value) -> Self {
        let mut body = serde_json::to_string_pretty(value).unwrap_or_else(|_| "null".into());
        body.push('\n');
        Self {
            status: 200,
            body: body.into_bytes(),
            content_type: "application/json",
            allow: None,
        }
    }

    /// `/metrics` in the format the request's `Accept` header asks for: the
    /// protobuf exposition when it prefers it and the target serves it,
    /// else the OpenMetrics text.
    fn metrics(target: &dyn ControlTarget, accept: &str) -> Self {
        use super::super::metrics::{CONTENT_TYPE, PROTOBUF_CONTENT_TYPE, wants_protobuf};
        let protobuf = if wants_protobuf(accept) {
            target.metrics_protobuf()
        } else {
            None
        };
        let (body, content_type) = match protobuf {
            Some(bytes) => (bytes, PROTOBUF_CONTENT_TYPE),
            None => (target.metrics().into_bytes(), CONTENT_TYPE),
        };
        Self {
            status: 200,
            body,
            content_type,
            allow: None,
        }
    }

    /// The whole HTTP/1.1 response, closing the connection.
    pub(super) fn to_http(&self) -> Vec<u8> {
        let reason = match self.status {
            200 => "OK",
            400 => "Bad Request",
            403 => "Forbidden",
            404 => "Not Found",
            405 => "Method Not Allowed",
            408 => "Request Timeout",
            409 => "Conflict",
            411 => "Length Required",
            413 => "Content Too Large",
            431 => "Request Header Fields Too Large",
            503 => "Service Unavailable",
            _ => "",
        };
        let content_type = self.content_type;
        let mut head = format!(
            "HTTP/1.1 {} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
             Connection: close\r\n",
            self.status,
            self.body.len()
        );
        if let Some(allow) = self.allow {
            head.push_str(&format!("Allow: {allow}\r\n"));
        }
        head.push_str("\r\n");
        let mut out = head.into_bytes();
        out.extend_from_slice(&self.body);
        out
    }

    /// The response to a HEAD request: [`to_http`](Self::to_http)'s head, with
    /// the `Content-Length` the body would have had, and no body.
    pub(super) fn to_http_head(&self) -> Vec<u8> {
        let mut out = self.to_http();
        out.truncate(out.len() - self.body.len());
        out
    }

    fn method_not_allowed(allow: &'static str) -> Self {
        Self {
            allow: Some(allow),
            ..Self::text(405, format!("method not allowed here: use {allow}"))
        }
    }
}

impl From<ControlError> for Reply {
    fn from(e: ControlError) -> Self {
        Self::text(e.status(), e.to_string())
    }
}

/// Routes one request to `target` as a server with `access` allows, and says
/// what to answer; see the module table. `accept` is the request's `Accept`
/// header (empty when it has none): `GET /metrics` answers in the format it
/// prefers.
pub fn route(
    access: Access,
    method: &str,
    url: &str,
    accept: &str,
    body: &str,
    target: &dyn ControlTarget,
) -> Reply {
    // HEAD is GET without the body (audit p17, L8: probes got 405); the server
    // leaves the body out (`Reply::to_http_head`).
    let method = if method == "HEAD" { "GET" } else { method };
    let path = url.split(['?', '#']).next().unwrap_or("");
    // Segments as given: an empty one (`/activities//rate`) names no alias,
    // not the route one segment up (audit L7: it answered 405 as if it were
    // `/activities/rate`). A trailing `/` is allowed.
    let inner = path.strip_prefix('/').unwrap_or(path);
    let inner = inner.strip_suffix('/').unwrap_or(inner);
    let raw: Vec<&str> = match inner {
        "" => Vec::new(),
        _ => inner.split('/').collect(),
    };
    if raw.contains(&"") {
        return Reply::text(
            404,
            format!(
                "no such route `{path}`: it has an empty segment (`//`); name the activity, \
                 as in /activities/ALIAS/rate (GET /activities lists the aliases)"
            ),
        );
    }
    // Each segment percent-decoded after the split, so that `%2F` is part of an
    // alias and not a separator (audit p17, L8: `/activities/di%61g` was 404).
    let mut decoded = Vec::with_capacity(raw.len());
    for seg in &raw {
        match percent_decode(seg) {
            Some(d) => decoded.push(d),
            None => {
                return Reply::text(
                    400,
                    format!(
                        "the path segment `{seg}` of `{path}` has a bad percent-encoding: \
                         write `%` followed by two hex digits of UTF-8 text (`%20` for a \
                         space, `%2F` for `/`)"
                    ),
                );
            }
        }
    }
    let parts: Vec<&str> = decoded.iter().map(String::as_str).collect();
    if access == Access::ReadOnly {
        match parts.as_slice() {
            ["metrics"] | ["activities"] | ["activities", _] => {}
            [
                "activities",
                _,
                "rate" | "threads" | "concurrency" | "pause" | "resume" | "stop",
            ] => {
                return Reply::text(
                    403,
                    format!(
                        "`{path}` changes the run, and this endpoint (--metrics) is read-only: \
                         run with --control ADDR to change rates, threads and state"
                    ),
                );
            }
            _ => {
                return Reply::text(
                    404,
                    format!(
                        "no such route `{path}`: this read-only endpoint serves GET /metrics, \
                         GET /activities and GET /activities/ALIAS"
                    ),
                );
            }
        }
    }
    match parts.as_slice() {
        ["metrics"] => match method {
            "GET" => Reply::metrics(target, accept),
            _ => Reply::method_not_allowed("GET, HEAD"),
        },
        ["activities"] => match method {
            "GET" => Reply::json(&target.activities()),
            _ => Reply::method_not_allowed("GET, HEAD"),
        },
        ["activities", alias] => match method {
            "GET" => one_activity(target, alias),
            _ => Reply::method_not_allowed("GET, HEAD"),
        },
        ["activities", alias, "rate"] => match method {
            "PUT" => put_rate(target, alias, body),
            _ => Reply::method_not_allowed("PUT"),
        },
        ["activities", alias, "threads"] => match method {
            "PUT" => put_threads(target, alias, body),
            _ => Reply::method_not_allowed("PUT"),
        },
        ["activities", alias, "concurrency"] => match method {
            "PUT" => put_concurrency(target, alias, body),
            _ => Reply::method_not_allowed("PUT"),
        },
        ["activities", alias, action @ ("pause" | "resume" | "stop")] => match method {
            "POST" => {
                let (result, done) = match *action {
                    "pause" => (target.pause(alias), "paused"),
                    "resume" => (target.resume(alias), "resumed"),
                    _ => (target.stop(alias), "stopped"),
                };
                match result {
                    Ok(()) => Reply::text(200, format!("{alias}: {done}")),
                    Err(e) => e.into(),
                }
            }
            _ => Reply::method_not_allowed("POST"),
        },
        _ => Reply::text(
            404,
            format!(
                "no such route `{path}`: use GET /activities, GET /metrics, \
                 PUT /activities/ALIAS/rate, PUT /activities/ALIAS/threads, \
                 PUT /activities/ALIAS/concurrency, or POST /activities/ALIAS/pause|resume|stop"
            ),
        ),
    }
}

/// `seg` with each `%XX` replaced by its byte; `None` when a `%` is not followed
/// by two hex digits or the bytes are not UTF-8: `di%61g` is `diag`, `a%2Fb` is
/// `a/b`, `a%zz` is `None` (pinned by `tests_lows.rs`).
pub(super) fn percent_decode(seg: &str) -> Option<String> {
    if !seg.contains('%') {
        return Some(seg.to_string());
    }
    let bytes = seg.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = seg.get(i + 1..i + 3)?;
            if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn one_activity(target: &dyn ControlTarget, alias: &str) -> Reply {
    let all = target.activities();
    let found = all.as_array().and_then(|a| {
        a.iter()
            .find(|x| x.get("alias").and_then(|v| v.as_str()) == Some(alias))
    });
    match found {
        Some(one) => Reply::json(one),
        None => ControlError::UnknownAlias(alias.to_string()).into(),
    }
}

/// What a rate body asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum RateChange {
    /// Set the spec now.
    Set(RateSpec),
    /// Move to the spec over a duration.
    Ramp(RateSpec, Duration),
}

/// Parses a rate body: a rate spec (`5000`, `5000,1.0`, `10K,restart`), optionally
/// followed by `over DURATION` for a ramp (`20000 over 30s`).
pub fn parse_rate_change(body: &str) -> Result<RateChange, String> {
    let text = body.trim();
    if text.is_empty() {
        return Err(
            "empty body: send a rate spec such as `5000`, `5000,1.0` or `20000 over 30s`"
                .to_string(),
        );
    }
    let lower = text.to_ascii_lowercase();
    let (spec_text, over) = match lower.find(" over ") {
        Some(i) => (text[..i].trim(), Some(text[i + 6..].trim())),
        None if lower.ends_with(" over") || lower == "over" => {
            return Err(format!(
                "`{text}` ends at `over`: give a duration after it, such as `{} over 30s`",
                text[..text.len() - 4].trim()
            ));
        }
        None => (text, None),
    };
    let spec = RateSpec::parse(spec_text).map_err(|e| e.to_string())?;
    match over {
        None => Ok(RateChange::Set(spec)),
        Some(d) => {
            let d = parse_duration(d).map_err(|e| format!("bad ramp duration: {e}"))?;
            if d.is_zero() {
                return Err(format!(
                    "a ramp over 0s is a plain change: send `{spec_text}` alone, or ramp over \
                     a positive duration such as 30s"
                ));
            }
            Ok(RateChange::Ramp(spec, d))
        }
    }
}

fn put_rate(target: &dyn ControlTarget, alias: &str, body: &str) -> Reply {
    let change = match parse_rate_change(body) {
        Ok(c) => c,
        Err(why) => return Reply::text(400, why),
    };
    let in_force = spec_in_force(target, alias);
    let asked = match &change {
        RateChange::Set(spec) | RateChange::Ramp(spec, _) => spec.scope_value(),
    };
    if asked == Scope::Thread && on_a_shared_schedule(target, alias) {
        // As at load (`cli::shared::thread_scope_refused`, audit p17 L10).
        return Reply::text(
            400,
            format!(
                "`{alias}` runs on a shared schedule, whose one rate is the total of every \
                 member's threads: thread scope is not supported there; send the total in \
                 activity scope (`PUT 200` for 2 threads at 100/s each, no `thread` word)"
            ),
        );
    }
    let result = match change {
        RateChange::Set(spec) => {
            let (spec, kept) = keep_unsaid(body, spec, in_force);
            target.set_rate(alias, spec).map(|()| {
                format!(
                    "{alias}: rate set to {spec}{kept}{}",
                    per_thread(target, alias, &spec)
                )
            })
        }
        RateChange::Ramp(spec, over) => {
            let (spec, kept) = keep_unsaid(body, spec, in_force);
            target.ramp(alias, spec, over).map(|()| {
                format!(
                    "{alias}: rate ramping to {spec}{kept}{} over {}",
                    per_thread(target, alias, &spec),
                    super::super::report::units::duration(paceline::nanos::from_duration(over))
                )
            })
        }
    };
    match result {
        Ok(msg) => Reply::text(200, msg),
        Err(e) => e.into(),
    }
}

/// Whether `alias`'s status says it runs on a shared schedule (`coordinated`
/// not null).
fn on_a_shared_schedule(target: &dyn ControlTarget, alias: &str) -> bool {
    let all = target.activities();
    all.as_array()
        .and_then(|a| {
            a.iter()
                .find(|x| x.get("alias").and_then(|v| v.as_str()) == Some(alias))
        })
        .and_then(|x| x.get("coordinated"))
        .is_some_and(|c| !c.is_null())
}

/// The strictness and scope of `alias`'s spec in force, from its status;
/// `None` when unpaced or unknown.
fn spec_in_force(target: &dyn ControlTarget, alias: &str) -> Option<(f64, Scope)> {
    let all = target.activities();
    let rate = all
        .as_array()?
        .iter()
        .find(|x| x.get("alias").and_then(|v| v.as_str()) == Some(alias))?
        .get("rate")?;
    let strictness = rate.get("strictness")?.as_f64()?;
    let scope = match rate.get("scope")?.as_str()? {
        "thread" => Scope::Thread,
        _ => Scope::Activity,
    };
    Some((strictness, scope))
}

/// A rate body names only what it changes: the strictness and scope it leaves
/// out keep those of the spec in force (`in_force`), the verb is `start`
/// (audit p17, M2: `PUT 150` on a `100,1.0,thread` activity moved it to
/// activity scope at strictness 1.1, a cut from 200/s to 150/s shown as a
/// raise). Returns the spec and the confirmation's note of what was kept.
fn keep_unsaid(body: &str, spec: RateSpec, in_force: Option<(f64, Scope)>) -> (RateSpec, String) {
    let Some((strictness, scope)) = in_force else {
        return (spec, String::new());
    };
    let spec_text = body
        .trim()
        .to_ascii_lowercase()
        .split(" over ")
        .next()
        .unwrap_or("")
        .to_string();
    let fields: Vec<&str> = spec_text.split(',').skip(1).map(str::trim).collect();
    let said_scope = fields.iter().any(|f| matches!(*f, "activity" | "thread"));
    let said_strictness = fields.iter().any(|f| {
        !matches!(
            *f,
            "activity" | "thread" | "start" | "configure" | "restart"
        )
    });
    let mut out = spec;
    let mut kept = Vec::new();
    if !said_strictness {
        if let Ok(s) = out.try_strictness(strictness) {
            out = s;
            kept.push("strictness");
        }
    }
    if !said_scope {
        out = out.scope(scope);
        kept.push("scope");
    }
    let note = if kept.is_empty() {
        String::new()
    } else {
        format!(" ({} kept from the spec in force)", kept.join(" and "))
    };
    (out, note)
}

/// What a confirmation adds to a thread-scope spec: its rate is each thread's,
/// and the target the status, `/metrics` and the summary show is their total
/// over the activity's threads (`paceline::total_rate`). Empty in activity
/// scope, where the spec's rate is the target.
fn per_thread(target: &dyn ControlTarget, alias: &str, spec: &RateSpec) -> String {
    if spec.scope_value() != Scope::Thread {
        return String::new();
    }
    let all = target.activities();
    let threads = all
        .as_array()
        .and_then(|a| {
            a.iter()
                .find(|x| x.get("alias").and_then(|v| v.as_str()) == Some(alias))
        })
        .and_then(|x| x.get("threads").and_then(|v| v.as_u64()));
    match threads {
        Some(n) => format!(
            " (per thread: a target of {}/s over its {n} thread(s))",
            super::super::report::units::rate(paceline::total_rate(spec, n as usize))
        ),
        None => " (per thread)".to_string(),
    }
}

/// Parses a threads body: a positive whole number.
pub fn parse_threads(body: &str) -> Result<usize, String> {
    let text = body.trim();
    match text.parse::<usize>() {
        Ok(0) => Err(
            "threads must be at least 1: to hold an activity, POST /activities/ALIAS/pause"
                .to_string(),
        ),
        Ok(n) => Ok(n),
        Err(_) => Err(format!(
            "`{text}` is not a thread count: send a positive whole number, such as `8`"
        )),
    }
}

/// Parses a concurrency body: a positive whole number.
pub fn parse_concurrency(body: &str) -> Result<usize, String> {
    let text = body.trim();
    match text.parse::<usize>() {
        Ok(0) => Err(
            "concurrency must be at least 1 (and at least the thread count): to hold an \
             activity, POST /activities/ALIAS/pause"
                .to_string(),
        ),
        Ok(n) => Ok(n),
        Err(_) => Err(format!(
            "`{text}` is not a concurrency: send the most ops in flight as a positive whole \
             number, such as `1000`"
        )),
    }
}

fn put_concurrency(target: &dyn ControlTarget, alias: &str, body: &str) -> Reply {
    match parse_concurrency(body) {
        Ok(n) => match target.set_concurrency(alias, n) {
            Ok(()) => Reply::text(200, format!("{alias}: concurrency set to {n}")),
            Err(e) => e.into(),
        },
        Err(why) => Reply::text(400, why),
    }
}

fn put_threads(target: &dyn ControlTarget, alias: &str, body: &str) -> Reply {
    match parse_threads(body) {
        Ok(n) => match target.set_threads(alias, n) {
            Ok(()) => Reply::text(200, format!("{alias}: threads set to {n}")),
            Err(e) => e.into(),
        },
        Err(why) => Reply::text(400, why),
    }
}
