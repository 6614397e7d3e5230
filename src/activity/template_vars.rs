//! Template variables, as NoSQLBench writes them: `<<name:default>>` and
//! `TEMPLATE(name,default)`, anywhere in the file, replaced in the text before
//! the YAML is read. `name=value` on the command line sets one.

use std::collections::BTreeMap;

/// A template variable with no default that nobody set, at a 1-based line and
/// column of the file.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Unset {
    pub(crate) line: usize,
    pub(crate) column: usize,
    pub(crate) name: String,
}

/// The file's text with every template variable replaced, and the names used
/// (in order of first use); or every variable that has neither a value nor a
/// default.
pub(crate) fn expand(
    text: &str,
    vars: &BTreeMap<String, String>,
) -> Result<(String, Vec<String>), Vec<Unset>> {
    let mut out = String::with_capacity(text.len());
    let mut names: Vec<String> = Vec::new();
    let mut unset = Vec::new();
    let mut rest = text;
    let mut consumed = 0;
    while let Some((start, end, name, default)) = next_var(rest) {
        out.push_str(&rest[..start]);
        match vars.get(name).map(String::as_str).or(default) {
            Some(v) => out.push_str(v),
            None => {
                let (line, column) = position(text, consumed + start);
                unset.push(Unset {
                    line,
                    column,
                    name: name.to_string(),
                });
            }
        }
        if !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
        consumed += end;
        rest = &rest[end..];
    }
    out.push_str(rest);
    if unset.is_empty() {
        Ok((out, names))
    } else {
        Err(unset)
    }
}

/// The next template variable in `text`: (start, end) byte offsets, its name
/// and its default.
fn next_var(text: &str) -> Option<(usize, usize, &str, Option<&str>)> {
    let mut from = 0;
    loop {
        let angle = text[from..].find("<<").map(|i| i + from);
        let call = text[from..].find("TEMPLATE(").map(|i| i + from);
        let (start, found) = match (angle, call) {
            (None, None) => return None,
            (Some(a), Some(c)) if c < a => (c, parse_call(&text[c..])),
            (Some(a), _) => (a, parse_angle(&text[a..])),
            (None, Some(c)) => (c, parse_call(&text[c..])),
        };
        match found {
            Some((len, name, default)) => return Some((start, start + len, name, default)),
            None => from = start + 1,
        }
    }
}

fn is_var_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// `<<name:default>>` or `<<name>>` at the start of `s`: (length, name, default).
fn parse_angle(s: &str) -> Option<(usize, &str, Option<&str>)> {
    let body_end = s[2..].find(">>")? + 2;
    let body = &s[2..body_end];
    if body.contains('\n') {
        return None;
    }
    let (name, default) = match body.split_once(':') {
        Some((n, d)) => (n.trim(), Some(d)),
        None => (body.trim(), None),
    };
    is_var_name(name).then_some((body_end + 2, name, default))
}

/// `TEMPLATE(name,default)` or `TEMPLATE(name)` at the start of `s`, the
/// default running to the parenthesis that closes the call.
fn parse_call(s: &str) -> Option<(usize, &str, Option<&str>)> {
    let open = "TEMPLATE(".len();
    let mut depth = 1;
    let mut close = None;
    for (i, c) in s[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(open + i);
                    break;
                }
            }
            '\n' => return None,
            _ => {}
        }
    }
    let close = close?;
    let body = &s[open..close];
    let (name, default) = match body.split_once(',') {
        Some((n, d)) => (n.trim(), Some(d.trim())),
        None => (body.trim(), None),
    };
    is_var_name(name).then_some((close + 1, name, default))
}

/// The 1-based (line, column in characters) of byte `at` in `text`.
fn position(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn both_forms_take_defaults_or_values() {
        let text = "a: <<x:1>>\nb: TEMPLATE(y, 2)\nc: TEMPLATE(z,Mod(3))\nd: <<x:9>>";
        let (out, names) = expand(text, &vars(&[("y", "20")])).unwrap();
        assert_eq!(out, "a: 1\nb: 20\nc: Mod(3)\nd: 9");
        assert_eq!(names, ["x", "y", "z"]);
    }

    #[test]
    fn look_alikes_stay_text() {
        let text = "a: 1 << 2\nb: TEMPLATE(\nc: <<x y>>";
        let (out, names) = expand(text, &vars(&[])).unwrap();
        assert_eq!(out, text);
        assert!(names.is_empty());
    }

    #[test]
    fn a_variable_without_default_must_be_set() {
        let err = expand("a: 1\nb: <<need>>", &vars(&[])).unwrap_err();
        assert_eq!(
            err,
            [Unset {
                line: 2,
                column: 4,
                name: "need".into()
            }]
        );
        assert!(expand("<<need>>", &vars(&[("need", "x")])).is_ok());
    }
}
