//! The `http` driver's response checks, like NoSQLBench's verifiers: op
//! fields `expect_status` and `expect_body`.
//!
//! An op without them has no [`Checks`] at all (`None` in its spec): its
//! requests pay one branch and keep no body. An op with `expect_body` keeps
//! the body of each answer in a buffer the worker reuses.
//!
//! - `expect_status`: a code (`200`), a class (`2xx`), a range (`200-204`), or
//!   a list of them (`[200, 204]` or `"200,204"`). It replaces param `success`
//!   for the op: a status outside it is a `check` error, whatever `success` says.
//! - `expect_body`: a regular expression the body must match somewhere
//!   (`regex` crate syntax; `^...$` for the whole body), written as a string
//!   or as `{regex: ...}`; or a JSON pointer (RFC 6901) and the value the body
//!   must hold there: `{pointer: /status, value: up}`.
//!
//! A failed check is an error of kind `check`, and the activity's error policy
//! applies to it as to any other error.

use super::StatusSet;
use crate::activity::bindings::BindingSet;
use crate::activity::model::Field;

/// An op's checks (at least one is set).
#[derive(Debug)]
pub(crate) struct Checks {
    /// The statuses allowed, and how they were written (for messages).
    status: Option<(StatusSet, String)>,
    body: Option<BodyCheck>,
}

/// What the body must hold.
#[derive(Debug)]
enum BodyCheck {
    Regex(regex::bytes::Regex),
    Pointer {
        pointer: String,
        value: serde_json::Value,
    },
}

/// The largest part of a body a message quotes.
const QUOTE: usize = 80;

impl Checks {
    /// The checks of an op's `expect_status` and `expect_body` fields, `None`
    /// when neither is set.
    pub(crate) fn parse(
        status: Option<&Field>,
        body: Option<&Field>,
        bindings: &BindingSet,
    ) -> Result<Option<Box<Checks>>, String> {
        if status.is_none() && body.is_none() {
            return Ok(None);
        }
        let status = status.map(|f| expect_status(f, bindings)).transpose()?;
        let body = body.map(|f| expect_body(f, bindings)).transpose()?;
        Ok(Some(Box::new(Checks { status, body })))
    }

    /// Whether the body must be kept for [`body`](Self::body).
    pub(crate) fn wants_body(&self) -> bool {
        self.body.is_some()
    }

    /// `None` without `expect_status` (param `success` decides); otherwise
    /// whether `status` passes, or the failure's message.
    pub(crate) fn status(&self, status: u16) -> Option<Result<(), String>> {
        let (set, written) = self.status.as_ref()?;
        Some(if set.contains(status) {
            Ok(())
        } else {
            Err(format!("expected status {written}, got {status}"))
        })
    }

    /// Whether `body` passes `expect_body` (passes without one), or the
    /// failure's message.
    pub(crate) fn body(&self, body: &[u8]) -> Result<(), String> {
        match &self.body {
            None => Ok(()),
            Some(BodyCheck::Regex(re)) => {
                if re.is_match(body) {
                    Ok(())
                } else {
                    Err(format!(
                        "the body does not match `{}`: {}",
                        re.as_str(),
                        quote(body)
                    ))
                }
            }
            Some(BodyCheck::Pointer { pointer, value }) => {
                let json: serde_json::Value = serde_json::from_slice(body).map_err(|e| {
                    format!(
                        "the body is not JSON ({e}), so `{pointer}` cannot be read: {}",
                        quote(body)
                    )
                })?;
                match json.pointer(pointer) {
                    Some(v) if v == value => Ok(()),
                    Some(v) => Err(format!(
                        "the body holds {v} at `{pointer}`, expected {value}"
                    )),
                    None => Err(format!(
                        "the body holds nothing at `{pointer}` (expected {value}): {}",
                        quote(body)
                    )),
                }
            }
        }
    }
}

/// The start of `body` as a message shows it.
fn quote(body: &[u8]) -> String {
    if body.is_empty() {
        return "it is empty".to_string();
    }
    let cut = body.len() > QUOTE;
    let text = String::from_utf8_lossy(&body[..body.len().min(QUOTE)]);
    format!("`{}`{}", text.escape_debug(), if cut { "…" } else { "" })
}

/// A literal text field's value (no `{binding}` in it).
fn literal(f: &Field, bindings: &BindingSet, field: &str) -> Result<Option<String>, String> {
    match f {
        Field::Text(t) if t.is_literal() => Ok(Some(t.render(0, bindings))),
        Field::Text(_) => Err(format!(
            "field `{field}` holds a `{{binding}}`; a check is the same for every cycle"
        )),
        _ => Ok(None),
    }
}

fn expect_status(f: &Field, bindings: &BindingSet) -> Result<(StatusSet, String), String> {
    let how = "write `200`, `2xx`, `200-204` or a list such as `[200, 204]`";
    let text = match f {
        Field::Literal(v @ serde_json::Value::Number(_)) => v.to_string(),
        Field::List(items) => {
            let mut parts = Vec::with_capacity(items.len());
            for item in items {
                match item {
                    Field::Literal(v @ serde_json::Value::Number(_)) => parts.push(v.to_string()),
                    _ => match literal(item, bindings, "expect_status")? {
                        Some(s) => parts.push(s),
                        None => return Err(format!("field `expect_status`: {how}")),
                    },
                }
            }
            parts.join(",")
        }
        _ => match literal(f, bindings, "expect_status")? {
            Some(s) => s,
            None => return Err(format!("field `expect_status`: {how}")),
        },
    };
    let set = StatusSet::parse(&text).map_err(|m| format!("field `expect_status`: {m}"))?;
    Ok((set, text))
}

fn expect_body(f: &Field, bindings: &BindingSet) -> Result<BodyCheck, String> {
    let how = "write a regex (`expect_body: '\"status\": *\"up\"'`), `{regex: ...}`, \
               or a JSON pointer and value (`{pointer: /status, value: up}`)";
    let regex = |text: &str| {
        regex::bytes::Regex::new(text)
            .map(BodyCheck::Regex)
            .map_err(|e| {
                format!(
                    "field `expect_body`: `{text}` is not a regex: {}",
                    crate::activity::error::regex_reason(&e)
                )
            })
    };
    match f {
        Field::Map(entries) => {
            let get = |k: &str| entries.iter().find(|(n, _)| n == k).map(|(_, f)| f);
            for (k, _) in entries {
                if !["regex", "pointer", "value"].contains(&k.as_str()) {
                    return Err(format!("field `expect_body`: unknown key `{k}`; {how}"));
                }
            }
            match (get("regex"), get("pointer"), get("value")) {
                (Some(r), None, None) => match literal(r, bindings, "expect_body")? {
                    Some(text) => regex(&text),
                    None => Err(format!("field `expect_body`: `regex` is not text; {how}")),
                },
                (None, Some(p), Some(v)) => {
                    let pointer = literal(p, bindings, "expect_body")?
                        .filter(|p| p.is_empty() || p.starts_with('/'))
                        .ok_or_else(|| {
                            "field `expect_body`: `pointer` is not a JSON pointer; \
                                 write `/status` or `/items/0/id`"
                                .to_string()
                        })?;
                    let value = match v {
                        Field::Literal(v) => v.clone(),
                        Field::Text(_) => serde_json::Value::String(
                            literal(v, bindings, "expect_body")?.unwrap_or_default(),
                        ),
                        _ => {
                            return Err(
                                "field `expect_body`: `value` must be a string, number, boolean or null"
                                    .to_string(),
                            );
                        }
                    };
                    Ok(BodyCheck::Pointer { pointer, value })
                }
                _ => Err(format!("field `expect_body`: {how}")),
            }
        }
        _ => match literal(f, bindings, "expect_body")? {
            Some(text) => regex(&text),
            None => Err(format!("field `expect_body`: {how}")),
        },
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::activity::bindings::Template;

    fn set() -> BindingSet {
        BindingSet::compile([("id", "Identity()")]).unwrap()
    }

    fn text(s: &str) -> Field {
        Field::Text(Template::compile(s, &set()).unwrap())
    }

    fn num(n: u64) -> Field {
        Field::Literal(serde_json::json!(n))
    }

    fn checks(status: Option<Field>, body: Option<Field>) -> Result<Box<Checks>, String> {
        Checks::parse(status.as_ref(), body.as_ref(), &set()).map(|c| c.unwrap())
    }

    #[test]
    fn no_check_is_none() {
        assert!(Checks::parse(None, None, &set()).unwrap().is_none());
    }

    #[test]
    fn expect_status_takes_a_code_a_class_or_a_list() {
        let c = checks(Some(num(200)), None).unwrap();
        assert_eq!(c.status(200), Some(Ok(())));
        assert_eq!(
            c.status(201),
            Some(Err("expected status 200, got 201".into()))
        );
        let c = checks(Some(text("2xx")), None).unwrap();
        assert_eq!(c.status(204), Some(Ok(())));
        assert!(c.status(302).unwrap().is_err());
        let c = checks(Some(Field::List(vec![num(200), text("404")])), None).unwrap();
        assert_eq!((c.status(404), c.status(200)), (Some(Ok(())), Some(Ok(()))));
        assert_eq!(
            c.status(500),
            Some(Err("expected status 200,404, got 500".into()))
        );
        // Without `expect_status`, `success` decides.
        assert_eq!(checks(None, Some(text("x"))).unwrap().status(500), None);
        let e = checks(Some(text("7xx")), None).unwrap_err();
        assert!(
            e.starts_with("field `expect_status`: `7xx` is not a status class"),
            "{e}"
        );
        let e = checks(Some(text("{id}")), None).unwrap_err();
        assert!(e.contains("holds a `{binding}`"), "{e}");
    }

    #[test]
    fn expect_body_regex_matches_anywhere_and_quotes_the_body_when_not() {
        let c = checks(None, Some(text(r#""status": *"up""#))).unwrap();
        assert!(c.wants_body());
        assert_eq!(c.body(br#"{"status": "up"}"#), Ok(()));
        assert_eq!(
            c.body(br#"{"status":"down"}"#),
            Err(r#"the body does not match `"status": *"up"`: `{\"status\":\"down\"}`"#.into())
        );
        // A brace that names no binding is regex syntax; `{3}` would name a
        // binding `3`, and `{{` is the template's literal `{`.
        let c = checks(None, Some(text(r"^\d{{3}-\d{2,}$"))).unwrap();
        assert_eq!(c.body(b"123-45"), Ok(()));
        assert!(c.body(b"12-45").is_err());
        assert!(c.body(b"").unwrap_err().ends_with("it is empty"));
        let c = checks(None, Some(Field::Map(vec![("regex".into(), text("ok"))]))).unwrap();
        assert_eq!(c.body(b"is ok\n"), Ok(()));
        let e = checks(None, Some(text("(unclosed"))).unwrap_err();
        assert!(
            e.starts_with("field `expect_body`: `(unclosed` is not a regex"),
            "{e}"
        );
    }

    #[test]
    fn expect_body_pointer_compares_the_value_there() {
        let m =
            |p: &str, v: Field| Field::Map(vec![("pointer".into(), text(p)), ("value".into(), v)]);
        let c = checks(None, Some(m("/status", text("up")))).unwrap();
        assert_eq!(c.body(br#"{"status":"up"}"#), Ok(()));
        assert_eq!(
            c.body(br#"{"status":"down"}"#),
            Err(r#"the body holds "down" at `/status`, expected "up""#.into())
        );
        assert!(
            c.body(b"{}")
                .unwrap_err()
                .starts_with("the body holds nothing at `/status`")
        );
        assert!(
            c.body(b"<html>")
                .unwrap_err()
                .starts_with("the body is not JSON")
        );
        let c = checks(None, Some(m("/items/1", num(2)))).unwrap();
        assert_eq!(c.body(br#"{"items":[1,2]}"#), Ok(()));
        let e = checks(None, Some(m("status", text("up")))).unwrap_err();
        assert!(e.contains("is not a JSON pointer"), "{e}");
        let e = checks(None, Some(Field::Map(vec![("pointer".into(), text("/a"))]))).unwrap_err();
        assert!(e.contains("{pointer: /status, value: up}"), "{e}");
    }
}
