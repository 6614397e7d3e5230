//! The JUnit XML report (`--junit`): one test case per activity, per threshold
//! result and, for a run that did not end well, one for the run.

use super::Outcome;
use std::collections::HashMap;
use std::fmt::Write as _;

/// `text` escaped for XML text and attribute values (`&`, `<`, `>`, quotes), with
/// characters XML 1.0 cannot hold (most control characters) replaced by U+FFFD.
pub fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || matches!(c as u32, 0xFFFE | 0xFFFF) => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// One activity as a JUnit test case.
#[derive(Debug, Clone)]
pub struct CaseOf {
    /// The alias.
    pub alias: String,
    /// Seconds it ran.
    pub seconds: f64,
    /// How it ended (`completed`, `ran its duration`, `failed: …`).
    pub outcome: String,
    /// Why it failed, when it did.
    pub failure: Option<String>,
    /// The summary line shown as its output.
    pub detail: String,
}

/// What ended a run that did not end well (a scenario step refused or failed,
/// an interrupt, an op stuck past the stop timeout), as a JUnit test case.
#[derive(Debug, Clone)]
pub struct RunCase {
    /// The summary JSON's `outcome` (`failed`, `interrupted`, `bad input`).
    pub outcome: String,
    /// Why, as printed.
    pub message: String,
}

/// The JUnit XML document: one `testsuite` named `paceline` with a test case per
/// activity (failed when the activity failed), per threshold result (failed
/// when it did not hold) and, for a run that did not end well, a failed case
/// `run` saying why; and the run's metadata as properties.
pub fn junit(
    activities: &[CaseOf],
    thresholds: &[Outcome],
    run: Option<&RunCase>,
    meta: &serde_json::Map<String, serde_json::Value>,
) -> String {
    let tests = activities.len() + thresholds.len() + usize::from(run.is_some());
    let failures = activities.iter().filter(|a| a.failure.is_some()).count()
        + thresholds.iter().filter(|t| !t.pass).count()
        + usize::from(run.is_some());
    let time: f64 = activities.iter().map(|a| a.seconds).fold(0.0, f64::max);
    let stamp = meta
        .get("started_at")
        .and_then(|v| v.as_str())
        .unwrap_or("");
    let host = meta.get("host").and_then(|v| v.as_str()).unwrap_or("");
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        x,
        "<testsuites name=\"paceline\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" time=\"{time:.3}\">"
    );
    let _ = writeln!(
        x,
        "  <testsuite name=\"paceline\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" \
         skipped=\"0\" time=\"{time:.3}\" timestamp=\"{}\" hostname=\"{}\">",
        xml_escape(stamp),
        xml_escape(host)
    );
    x.push_str("    <properties>\n");
    for (k, _) in super::super::meta::FIELDS {
        if let Some(v) = meta.get(*k) {
            let _ = writeln!(
                x,
                "      <property name=\"{k}\" value=\"{}\"/>",
                xml_escape(&super::super::meta::text(v))
            );
        }
    }
    x.push_str("    </properties>\n");
    if let Some(r) = run {
        let _ = writeln!(
            x,
            "    <testcase classname=\"paceline.run\" name=\"run\" time=\"{time:.3}\">\n      \
             <failure message=\"{}\" type=\"{}\">{}</failure>\n    </testcase>",
            xml_escape(&r.message),
            xml_escape(&r.outcome),
            xml_escape(&r.message)
        );
    }
    let names = run_names(activities.iter().map(|a| a.alias.as_str()));
    for (a, name) in activities.iter().zip(&names) {
        let _ = write!(
            x,
            "    <testcase classname=\"paceline.activity\" name=\"{}\" time=\"{:.3}\">",
            xml_escape(name),
            a.seconds
        );
        if let Some(f) = &a.failure {
            let _ = write!(
                x,
                "\n      <failure message=\"{}\" type=\"activity\">{}</failure>",
                xml_escape(f),
                xml_escape(f)
            );
        }
        let _ = writeln!(
            x,
            "\n      <system-out>{}</system-out>\n    </testcase>",
            xml_escape(&format!("{} ({})", a.detail, a.outcome))
        );
    }
    // A threshold is checked on each run of an alias in the order they ran
    // (`check`): its n-th result on an alias is on that alias's n-th run.
    let mut seen: HashMap<(&str, &str, &str), usize> = HashMap::new();
    for t in thresholds {
        let name = match &t.activity {
            Some(a) => {
                let n = seen.entry((&t.expr, &t.from, a)).or_insert(0);
                *n += 1;
                let runs = activities.iter().filter(|c| c.alias == *a).count();
                format!("{} ({})", t.expr, run_name(a, *n, runs))
            }
            None => t.expr.clone(),
        };
        let _ = write!(
            x,
            "    <testcase classname=\"paceline.threshold\" name=\"{}\" time=\"0\">",
            xml_escape(&name)
        );
        if !t.pass {
            let msg = format!("{} failed: value {}", t.expr, t.value);
            let _ = write!(
                x,
                "\n      <failure message=\"{}\" type=\"threshold\">{} (from {})</failure>\n    ",
                xml_escape(&msg),
                xml_escape(&msg),
                xml_escape(&t.from)
            );
        } else {
            let _ = write!(
                x,
                "\n      <system-out>value {}</system-out>\n    ",
                xml_escape(&t.value.to_string())
            );
        }
        x.push_str("</testcase>\n");
    }
    x.push_str("  </testsuite>\n</testsuites>\n");
    x
}

/// Each alias's test case name, in the order run: the alias itself when it ran
/// once, else `alias`, `alias#2`, ... (audit p17, M1: a scenario that ran an
/// alias twice gave two cases of one name, which tools keyed on the name merge).
/// `compare` pairs repeated aliases in the same order.
fn run_names<'a>(aliases: impl Iterator<Item = &'a str> + Clone) -> Vec<String> {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    aliases
        .clone()
        .map(|a| {
            let n = seen.entry(a).or_insert(0);
            *n += 1;
            let runs = aliases.clone().filter(|b| *b == a).count();
            run_name(a, *n, runs)
        })
        .collect()
}

/// The `n`-th (from 1) run of `alias`, of `runs`: `alias` for the first, or
/// when it ran once; `alias#n` after.
fn run_name(alias: &str, n: usize, runs: usize) -> String {
    if n <= 1 || runs <= 1 {
        alias.to_string()
    } else {
        format!("{alias}#{n}")
    }
}
