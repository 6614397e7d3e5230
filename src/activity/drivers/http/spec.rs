//! An op's fields, read once at load into an [`OpSpec`]: its method, target,
//! headers, body and response checks, each fixed or rendered per cycle.

use super::check::Checks;
use super::url::{Endpoint, check_target, parse_url, scheme_of};
use crate::activity::bindings::{BindingSet, Template};
use crate::activity::model::Field;
use crate::activity::suggest;
use http::{HeaderName, HeaderValue, Method};

/// The op fields `http` reads.
const FIELDS: &[&str] = &[
    "method",
    "url",
    "uri",
    "path",
    "headers",
    "body",
    "stmt",
    "expect_status",
    "expect_body",
];

/// What the request's target comes from.
#[derive(Debug, Clone)]
pub(super) enum Target {
    /// A full URL, or a path starting with `/` joined to `base_url`.
    Url(Template),
    /// A path always joined to `base_url`.
    Path(Template),
    /// `METHOD TARGET` or `TARGET`.
    Stmt(Template),
}

/// The method: fixed, or rendered per cycle.
#[derive(Debug, Clone)]
pub(super) enum MethodSource {
    Fixed(Method),
    Drawn(Template),
}

/// A header value: fixed, or rendered per cycle.
#[derive(Debug, Clone)]
pub(super) enum HeaderSource {
    Fixed(HeaderValue),
    Drawn(Field),
}

/// The body: text, or a JSON rendering of a structured field.
#[derive(Debug, Clone)]
pub(super) enum BodySource {
    Text(Template),
    Json(Field),
}

#[derive(Debug)]
pub(super) struct OpSpec {
    pub(super) name: String,
    pub(super) method: Option<MethodSource>,
    pub(super) target: Target,
    pub(super) headers: Vec<(HeaderName, HeaderSource)>,
    /// Which of the headers the driver adds the op sets itself.
    pub(super) sets: Sets,
    pub(super) body: Option<BodySource>,
    /// `expect_status` and `expect_body`; `None` (no cost) without them.
    pub(super) checks: Option<Box<Checks>>,
}

/// The headers the driver would add that an op (or param `headers`) sets.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Sets {
    pub(super) host: bool,
    pub(super) user_agent: bool,
    pub(super) accept: bool,
    pub(super) connection: bool,
    /// The op's `connection` header says (or, drawn, may say) `close`: its
    /// connection is not reused (RFC 9112 §9.6).
    pub(super) closes: bool,
}

pub(super) fn header_name(k: &str) -> Result<HeaderName, String> {
    let name = HeaderName::from_bytes(k.as_bytes()).map_err(|_| {
        format!("`{k}` is not a header name; use letters, digits and `-`, such as `x-request-id`")
    })?;
    if name == http::header::CONTENT_LENGTH || name == http::header::TRANSFER_ENCODING {
        return Err(format!(
            "`{k}` is set by the driver from the body; remove it"
        ));
    }
    Ok(name)
}

pub(super) fn header_value(v: &str) -> Result<HeaderValue, String> {
    HeaderValue::from_str(v)
        .map_err(|_| format!("`{v}` is not a header value (no line breaks or control characters)"))
}

/// A text field's template, or a message saying to write text.
fn text<'a>(f: &'a Field, what: &str) -> Result<&'a Template, String> {
    match f {
        Field::Text(t) => Ok(t),
        _ => Err(format!(
            "field `{what}` is not text; write a string such as `{}`",
            match what {
                "method" => "GET",
                "path" => "/items/{id}",
                "stmt" => "GET /items/{id}",
                _ => "http://127.0.0.1:8080/items/{id}",
            }
        )),
    }
}

pub(super) fn parse_method(s: &str) -> Result<Method, String> {
    let t = s.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_alphabetic() || b == b'-') {
        return Err(format!(
            "`{s}` is not a method; write `GET`, `POST`, `PUT`, `DELETE`, …"
        ));
    }
    let bad = |_| format!("`{s}` is not a method");
    if t.bytes().any(|b| b.is_ascii_lowercase()) {
        Method::from_bytes(t.to_ascii_uppercase().as_bytes()).map_err(bad)
    } else {
        // Already upper case (every op written `GET /path`): no copy.
        Method::from_bytes(t.as_bytes()).map_err(bad)
    }
}

/// Splits a `stmt`: `METHOD TARGET` or `TARGET`.
pub(super) fn split_stmt(s: &str) -> (Option<&str>, &str) {
    let s = s.trim();
    match s.split_once(char::is_whitespace) {
        Some((m, rest)) if m.bytes().all(|b| b.is_ascii_alphabetic()) => (Some(m), rest.trim()),
        _ => (None, s),
    }
}

pub(super) fn op_spec(
    op: &crate::activity::model::Op,
    bindings: &BindingSet,
    has_base: bool,
    param_headers: &[(HeaderName, HeaderSource)],
) -> Result<OpSpec, String> {
    for (k, _) in &op.fields {
        if !FIELDS.contains(&k.as_str()) {
            let hint = suggest::did_you_mean(k, FIELDS.iter().copied()).unwrap_or_else(|| {
                format!("known fields: {}", suggest::list(FIELDS.iter().copied()))
            });
            return Err(format!("unknown field `{k}`; {hint}"));
        }
    }
    let lit = |t: &Template| t.is_literal().then(|| t.render(0, bindings));
    let set: Vec<&str> = ["url", "uri", "path", "stmt"]
        .into_iter()
        .filter(|k| op.field(k).is_some())
        .collect();
    let need_base = |target: &str, field: &str| -> Result<(), String> {
        if !has_base {
            Err(format!(
                "field `{field}`: `{target}` is a path; set param `base_url: http://host:port` or write a full URL"
            ))
        } else {
            Ok(())
        }
    };
    let check_full = |u: &str, field: &str| -> Result<(), String> {
        if u.starts_with('/') {
            need_base(u, field)?;
            return check_target(u, u).map_err(|m| format!("field `{field}`: {m}"));
        }
        if scheme_of(u).is_none() {
            return Err(format!(
                "field `{field}`: `{}` is neither a path starting with `/` nor an `http://` or `https://` URL",
                crate::activity::drivers::db_params::masked(u)
            ));
        }
        parse_url(u, &mut Endpoint::default(), &mut String::new())
            .map_err(|m| format!("field `{field}`: {m}"))
    };
    let mut method = match op.field("method") {
        None => None,
        Some(f) => {
            let t = text(f, "method")?;
            Some(match lit(t) {
                Some(s) => MethodSource::Fixed(
                    parse_method(&s).map_err(|m| format!("field `method`: {m}"))?,
                ),
                None => MethodSource::Drawn(t.clone()),
            })
        }
    };
    let target = match set.as_slice() {
        // `uri` is what NoSQLBench 5's http workloads call it.
        [field @ ("url" | "uri")] => {
            let t = text(op.field(field).expect("set"), field)?;
            if let Some(u) = lit(t) {
                check_full(&u, field)?;
            }
            Target::Url(t.clone())
        }
        ["path"] => {
            let t = text(op.field("path").expect("set"), "path")?;
            if !has_base {
                return Err(
                    "field `path` needs param `base_url: http://host:port`; or write a full `url`"
                        .to_string(),
                );
            }
            Target::Path(t.clone())
        }
        ["stmt"] => {
            let t = text(op.field("stmt").expect("set"), "stmt")?;
            if let Some(s) = lit(t) {
                let (m, target) = split_stmt(&s);
                if let Some(m) = m {
                    let m = parse_method(m).map_err(|e| format!("field `stmt`: {e}"))?;
                    if method.is_some() {
                        return Err("set the method in `method` or in `stmt`, not both".to_string());
                    }
                    method = Some(MethodSource::Fixed(m));
                }
                check_full(target, "stmt")?;
            }
            Target::Stmt(t.clone())
        }
        [] => {
            return Err(
                "has no target; set `url` (a full URL or a `/path`; `uri` is the same), `path`, or write the op as `GET /path`"
                    .to_string(),
            );
        }
        many => {
            return Err(format!(
                "set one of `url`, `path` or `stmt`, not {}",
                suggest::list(many.iter().copied())
            ));
        }
    };
    let mut headers: Vec<(HeaderName, HeaderSource)> = param_headers.to_vec();
    match op.field("headers") {
        None => {}
        Some(Field::Map(entries)) => {
            for (k, f) in entries {
                let name = header_name(k).map_err(|m| format!("field `headers`: {m}"))?;
                let src = match f {
                    Field::Text(t) if t.is_literal() => HeaderSource::Fixed(
                        header_value(&t.render(0, bindings))
                            .map_err(|m| format!("field `headers`: header `{k}`: {m}"))?,
                    ),
                    Field::Literal(v) if !v.is_null() => HeaderSource::Fixed(
                        header_value(&v.to_string())
                            .map_err(|m| format!("field `headers`: header `{k}`: {m}"))?,
                    ),
                    Field::Text(_) => HeaderSource::Drawn(f.clone()),
                    _ => {
                        return Err(format!(
                            "field `headers`: header `{k}` is not text; write a string or a `{{binding}}`"
                        ));
                    }
                };
                headers.retain(|(n, _)| *n != name);
                headers.push((name, src));
            }
        }
        Some(_) => {
            return Err(
                "field `headers` is not a map; write `{x-request-id: \"{id}\"}`".to_string(),
            );
        }
    }
    let body = match op.field("body") {
        None => None,
        Some(Field::Text(t)) => Some(BodySource::Text(t.clone())),
        Some(f) => {
            if !headers.iter().any(|(n, _)| n == http::header::CONTENT_TYPE) {
                headers.push((
                    http::header::CONTENT_TYPE,
                    HeaderSource::Fixed(HeaderValue::from_static("application/json")),
                ));
            }
            Some(BodySource::Json(f.clone()))
        }
    };
    let sets = |name: HeaderName| headers.iter().any(|(n, _)| *n == name);
    let sets = Sets {
        host: sets(http::header::HOST),
        user_agent: sets(http::header::USER_AGENT),
        accept: sets(http::header::ACCEPT),
        connection: sets(http::header::CONNECTION),
        closes: headers.iter().any(|(n, v)| {
            *n == http::header::CONNECTION
                && match v {
                    HeaderSource::Fixed(v) => v
                        .as_bytes()
                        .split(|&b| b == b',')
                        .any(|t| t.trim_ascii().eq_ignore_ascii_case(b"close")),
                    HeaderSource::Drawn(_) => true,
                }
        }),
    };
    let checks = Checks::parse(op.field("expect_status"), op.field("expect_body"), bindings)?;
    Ok(OpSpec {
        name: op.name.clone(),
        method,
        target,
        headers,
        sets,
        body,
        checks,
    })
}
