//! Validation of a file's items: its bindings and its thresholds.

use super::bindings::Binding;
use super::locate::{Seg, Target};
use super::validate::{Raw, Validator, describe, is_name, push};
use serde_yaml::Value;

impl Validator<'_> {
    /// `thresholds:`: a list of expressions (`response.p99<50ms`), or maps
    /// `{expr: EXPR, abort_on_fail: BOOL}`; a bad one is reported at its place in
    /// the expression.
    pub(crate) fn thresholds(
        &mut self,
        path: &[Seg],
        v: &Value,
    ) -> Vec<super::thresholds::Threshold> {
        let how = "write a list of expressions such as `- response.p99<50ms` or \
                   `- {expr: 'errors<1%', abort_on_fail: true}`";
        let Value::Sequence(items) = v else {
            self.problem(
                path.to_vec(),
                Target::Value,
                format!("`thresholds` is a list, not {}", describe(v)),
                Some(how.into()),
            );
            return Vec::new();
        };
        let mut out = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let at = push(path, Seg::Index(i));
            let (text, text_path, abort) = match item {
                Value::String(s) => (s.clone(), at.clone(), false),
                Value::Mapping(m) => {
                    let mut expr = None;
                    let mut abort = false;
                    for (name, p, v) in self.entries(m, &at) {
                        match (name.as_str(), v) {
                            ("expr", Value::String(s)) => expr = Some((s.clone(), p)),
                            ("abort_on_fail", Value::Bool(b)) => abort = *b,
                            ("expr" | "abort_on_fail", other) => {
                                let msg = format!(
                                    "`{name}` is {}, not {}",
                                    if name == "expr" {
                                        "text"
                                    } else {
                                        "true or false"
                                    },
                                    describe(other)
                                );
                                self.problem(p, Target::Value, msg, None);
                            }
                            _ => self.problem(
                                p,
                                Target::Key,
                                format!("unknown key `{name}` in a threshold"),
                                Some("a threshold has `expr` and `abort_on_fail`".into()),
                            ),
                        }
                    }
                    match expr {
                        Some((e, p)) => (e, p, abort),
                        None => {
                            self.problem(
                                at,
                                Target::Value,
                                "a threshold without `expr`",
                                Some(how.into()),
                            );
                            continue;
                        }
                    }
                }
                other => {
                    let msg = format!("a threshold is an expression, not {}", describe(other));
                    self.problem(at, Target::Value, msg, Some(how.into()));
                    continue;
                }
            };
            match super::thresholds::Threshold::parse(&text) {
                Ok(mut t) => {
                    t.abort_on_fail |= abort;
                    out.push(t);
                }
                Err(e) => {
                    // The offset is within the trimmed expression.
                    let lead = text.chars().take_while(|c| c.is_whitespace()).count();
                    self.problems.push(Raw {
                        path: text_path,
                        target: Target::Value,
                        offset: Some(lead + e.at),
                        message: format!("bad threshold `{}`: {}", e.expr, e.message),
                        help: None,
                    });
                }
            }
        }
        out
    }

    pub(crate) fn binding(&mut self, name: &str, path: Vec<Seg>, v: &Value) -> Binding {
        let placeholder = || {
            // Stands in for a bad binding so that templates using it do not
            // report it again; the activity is not built anyway.
            Binding::parse(name, "Identity()").unwrap_or_else(|_| unreachable!("Identity() parses"))
        };
        if !is_name(name) {
            self.problem(
                path.clone(),
                Target::Key,
                format!("`{name}` is not a usable binding name"),
                Some("use letters, digits, `_`, `-` and `.`".into()),
            );
        }
        let expr = match v {
            Value::String(s) => s.clone(),
            other => {
                self.problem(
                    path,
                    Target::Value,
                    format!(
                        "binding `{name}` is an expression string, not {}",
                        describe(other)
                    ),
                    Some("write a chain such as `Hash(); Mod(100)`".into()),
                );
                return placeholder();
            }
        };
        match Binding::parse(name, &expr) {
            Ok(b) => b,
            Err(e) => {
                self.problems.push(Raw {
                    path,
                    target: Target::Value,
                    offset: Some(e.offset()),
                    message: e.to_string(),
                    help: unset_var_help(&expr),
                });
                placeholder()
            }
        }
    }
}

/// For a binding that holds a template variable nobody set (`UNSET:name`,
/// what NB5 writes there too): the fix, and that NB5 cannot run it either.
fn unset_var_help(expr: &str) -> Option<String> {
    let at = expr.find("UNSET:")? + "UNSET:".len();
    let var: String = expr[at..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
        .collect();
    (!var.is_empty()).then(|| {
        format!(
            "the template variable `{var}` has no default and is not set: NB5 writes \
             `UNSET:{var}` here too and cannot run this step either; set it on the command \
             line (`{var}=...`)"
        )
    })
}
