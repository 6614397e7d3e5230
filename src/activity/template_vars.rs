//! Template variables, as NoSQLBench writes them: `<<name:default>>` and
//! `TEMPLATE(name,default)`, anywhere in the file, replaced in the text before
//! the YAML is read. `name=value` on the command line sets one.

use std::collections::BTreeMap;

/// The file's text with every template variable replaced, and the names used
/// (in order of first use), as NoSQLBench 5 resolves them: a value set on the
/// command line, else the variable's default here, else the default an earlier
/// use of the same variable gave, else `UNSET:name` (a param left `UNSET` is
/// dropped where it is read). A default may itself hold variables
/// (`TEMPLATE(a,TEMPLATE(b,10))`); `TEMPLATE(name,)` is empty.
pub(crate) fn expand(text: &str, vars: &BTreeMap<String, String>) -> (String, Vec<String>) {
    let mut names: Vec<String> = Vec::new();
    let mut defaults: BTreeMap<String, String> = BTreeMap::new();
    let out = expand_into(text, vars, &mut names, &mut defaults, 0);
    (out, names)
}

/// How deep defaults may nest variables (a guard against a default that
/// names its own variable).
const MAX_DEPTH: usize = 16;

fn expand_into(
    text: &str,
    vars: &BTreeMap<String, String>,
    names: &mut Vec<String>,
    defaults: &mut BTreeMap<String, String>,
    depth: usize,
) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some((start, end, name, default)) = next_var(rest) {
        out.push_str(&rest[..start]);
        if !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
        let default = match default {
            Some(d) if depth < MAX_DEPTH => {
                let d = expand_into(d, vars, names, defaults, depth + 1);
                defaults.insert(name.to_string(), d.clone());
                Some(d)
            }
            Some(d) => Some(d.to_string()),
            None => defaults.get(name).cloned(),
        };
        match vars.get(name) {
            Some(v) => out.push_str(v),
            None => match default {
                Some(d) => out.push_str(&d),
                None => {
                    out.push_str("UNSET:");
                    out.push_str(name);
                }
            },
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// Whether a param's value was left unset by a template variable (`UNSET:x`)
/// or written `UNDEF`/`UNSET`: NB5 drops such a param.
pub(crate) fn is_unset(value: &str) -> bool {
    let v = value.trim();
    v.starts_with("UNSET:") || v.eq_ignore_ascii_case("UNDEF") || v.eq_ignore_ascii_case("UNSET")
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
        // `TEMPLATE(name:default)`, the older form.
        None => match body.split_once(':') {
            Some((n, d)) => (n.trim(), Some(d.trim())),
            None => (body.trim(), None),
        },
    };
    is_var_name(name).then_some((close + 1, name, default))
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
        let (out, names) = expand(text, &vars(&[("y", "20")]));
        assert_eq!(out, "a: 1\nb: 20\nc: Mod(3)\nd: 9");
        assert_eq!(names, ["x", "y", "z"]);
    }

    #[test]
    fn look_alikes_stay_text() {
        let text = "a: 1 << 2\nb: TEMPLATE(\nc: <<x y>>";
        let (out, names) = expand(text, &vars(&[]));
        assert_eq!(out, text);
        assert!(names.is_empty());
    }

    #[test]
    fn a_variable_without_default_is_unset_or_takes_an_earlier_default() {
        let (out, _) = expand("a: <<need>>\nb: TEMPLATE(x)", &vars(&[]));
        assert_eq!(out, "a: UNSET:need\nb: UNSET:x");
        let (out, _) = expand("a: TEMPLATE(x,5)\nb: TEMPLATE(x)", &vars(&[]));
        assert_eq!(out, "a: 5\nb: 5");
        assert_eq!(expand("<<need>>", &vars(&[("need", "x")])).0, "x");
        assert!(is_unset("UNSET:x") && is_unset("undef") && !is_unset("5"));
    }

    #[test]
    fn defaults_nest_and_the_colon_form_reads() {
        let (out, names) = expand(
            "a: TEMPLATE(a,TEMPLATE(b,10))\nc: TEMPLATE(c:3)\nd: TEMPLATE(d,)",
            &vars(&[]),
        );
        assert_eq!(out, "a: 10\nc: 3\nd: ");
        assert_eq!(names, ["a", "b", "c", "d"]);
        assert_eq!(
            expand("TEMPLATE(a,TEMPLATE(b,10))", &vars(&[("b", "7")])).0,
            "7"
        );
    }
}
