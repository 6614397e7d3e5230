//! NoSQLBench's stdout op for a file without ops: one op whose `stmt` shows
//! the file's bindings, in the format the step asks for (`format=assignments`,
//! the default, `readout`, `json`, `inlinejson`, `csv`), the bindings chosen by
//! the step's `bindings=REGEX` (all by default).

use serde_yaml::{Mapping, Value};

/// The `stmt` NB5's stdout driver makes for `names` (in the file's order),
/// `format` and `bindings` as a step writes them, each binding `{name}`; a
/// line break ends it (a blank line after a record of several lines). `None`
/// when the filter keeps no binding.
pub(crate) fn stmt(names: &[String], format: Option<&str>, filter: Option<&str>) -> Option<String> {
    let keep = match filter {
        None => None,
        Some(f) if f.eq_ignore_ascii_case("doc") => None,
        Some(f) => regex::Regex::new(&format!("^(?:{f})$")).ok(),
    };
    let names: Vec<&String> = names
        .iter()
        .filter(|n| keep.as_ref().is_none_or(|re| re.is_match(n)))
        .collect();
    if names.is_empty() {
        return None;
    }
    let body = match format.unwrap_or("assignments") {
        "csv" => names
            .iter()
            .map(|n| format!("{{{n}}}"))
            .collect::<Vec<_>>()
            .join(","),
        "readout" => {
            let w = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
            names
                .iter()
                .map(|n| format!("{n:>w$} : {{{n}}}"))
                .collect::<Vec<_>>()
                .join("\n")
        }
        "json" => format!(
            "{{\n {}\n}}",
            names
                .iter()
                .map(|n| format!("\"{n}\":\"{{{n}}}\""))
                .collect::<Vec<_>>()
                .join(",\n ")
        ),
        "inlinejson" => format!(
            "{{{}}}",
            names
                .iter()
                .map(|n| format!("\"{n}\":\"{{{n}}}\""))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        _ => names
            .iter()
            .map(|n| format!("{n}={{{n}}}"))
            .collect::<Vec<_>>()
            .join(" "),
    };
    Some(if body.contains('\n') {
        format!("{body}\n\n")
    } else {
        format!("{body}\n")
    })
}

/// The value of `key=VALUE` (any number of `=`) in the command string of the
/// focused step `focus` (`SCENARIO.STEP`, or a scenario whose first step it
/// takes), read from the raw `scenarios` map.
pub(crate) fn step_param(
    scenarios: Option<&Value>,
    focus: Option<&str>,
    key: &str,
) -> Option<String> {
    let (Some(Value::Mapping(m)), Some(focus)) = (scenarios, focus) else {
        return None;
    };
    let (sc, step) = match focus.split_once('.') {
        Some((a, b)) => (a, Some(b)),
        None => (focus, None),
    };
    let body = m.get(sc)?;
    let text = match (body, step) {
        (Value::String(s), _) => s.clone(),
        (Value::Mapping(steps), Some(st)) => steps.get(st)?.as_str()?.to_string(),
        (Value::Mapping(steps), None) => steps.values().next()?.as_str()?.to_string(),
        (Value::Sequence(items), Some(st)) => items
            .get(st.parse::<usize>().ok()?.checked_sub(1)?)?
            .as_str()?
            .to_string(),
        (Value::Sequence(items), None) => items.first()?.as_str()?.to_string(),
        _ => return None,
    };
    text.split_whitespace().find_map(|w| {
        let (k, v) = w.split_once('=')?;
        (k == key).then(|| unquote(v.trim_start_matches('=')))
    })
}

/// A step's value as NB5 reads it (`NBCLIScenarioPreprocessor.splitCommand`):
/// every quote not escaped with `\` removed (`bindings='cycle|cb_fixed'` is
/// `cycle|cb_fixed`).
fn unquote(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    let mut prev = None;
    for c in v.chars() {
        if !(matches!(c, '\'' | '"') && prev != Some('\\')) {
            out.push(c);
        }
        prev = Some(c);
    }
    out
}

/// The names of a `bindings` map, in order.
pub(crate) fn names(m: &Mapping) -> Vec<String> {
    m.keys().filter_map(super::validate::key_text).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nb5_stdout_formats_of_a_synthetic_op() {
        let n = vec!["a".to_string(), "bb".to_string()];
        assert_eq!(stmt(&n, None, None).unwrap(), "a={a} bb={bb}\n");
        assert_eq!(
            stmt(&n, Some("readout"), None).unwrap(),
            " a : {a}\nbb : {bb}\n\n"
        );
        assert_eq!(stmt(&n, Some("csv"), Some("b.*")).unwrap(), "{bb}\n");
        assert_eq!(
            stmt(&n, Some("inlinejson"), None).unwrap(),
            "{\"a\":\"{a}\", \"bb\":\"{bb}\"}\n"
        );
        assert_eq!(stmt(&n, None, Some("zz")), None);
    }

    #[test]
    fn a_step_param_from_the_raw_scenarios() {
        let v: Value =
            serde_yaml::from_str("s: {x: run driver===stdout format=readout}\nt: run format=csv")
                .unwrap();
        assert_eq!(
            step_param(Some(&v), Some("s.x"), "format").as_deref(),
            Some("readout")
        );
        assert_eq!(
            step_param(Some(&v), Some("t"), "format").as_deref(),
            Some("csv")
        );
        assert_eq!(step_param(Some(&v), Some("s.x"), "bindings"), None);
        // NB5 drops the quotes of a step's value (bindings_charbuffers.yaml).
        let v: Value =
            serde_yaml::from_str("cb: run driver=stdout bindings='cycle|cb_fixed'").unwrap();
        assert_eq!(
            step_param(Some(&v), Some("cb"), "bindings").as_deref(),
            Some("cycle|cb_fixed")
        );
    }
}
