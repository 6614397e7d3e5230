//! The `--html` report and `paceline report`'s output: one self-contained page.
//!
//! Per activity: the summary (what ran, rates, counts, then the whole run's latency
//! figures), the rate plot, the latency plot and the list of the events numbered on
//! them, and the percentile spectrum (see [`plots`]). The plots are
//! inline SVG and the style sheet is inline: the page loads nothing, so it can be
//! mailed or attached to a ticket as one file.

use super::model::{ActivityData, RunData};
use super::plots::{self, EventGroup};
use super::units;
use hdrhistogram::Histogram;
use serde_json::Value;
use std::fmt::Write;

const STYLE: &str = "
body { font-family: sans-serif; margin: 24px; color: #222; background: #fafafa; max-width: 1280px; }
h1 { font-size: 24px; margin: 0 0 4px; }
h2 { font-size: 20px; margin: 32px 0 8px; border-bottom: 2px solid #ccc; padding-bottom: 4px; }
p.meta { color: #666; margin: 0 0 12px; }
nav a { margin-right: 12px; }
.summary { display: flex; gap: 24px; flex-wrap: wrap; align-items: flex-start; margin-bottom: 12px; }
table { border-collapse: collapse; background: #fff; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; }
th { background: #f0f0f0; }
table.facts th { text-align: left; }
table.facts td { text-align: left; }
table.events td:nth-child(3), table.events td:nth-child(4) { text-align: left; }
table.events { margin: 4px 0 8px; }
table.steps td:nth-child(5), table.steps td:nth-child(7), table.steps th:last-child { text-align: left; }
td.pass { color: #2a7d2a; font-weight: bold; }
td.fail { color: #b00; font-weight: bold; }
table.thresholds td:nth-child(1), table.thresholds td:nth-child(2) { text-align: left; }
table.thresholds tr.pass td:last-child { color: #2a7d2a; font-weight: bold; }
table.thresholds tr.fail td:last-child { color: #b00; font-weight: bold; }
table.events th:last-child { text-align: left; }
figure { margin: 8px 0; background: #fff; border: 1px solid #ddd; }
figure svg { display: block; max-width: 100%; height: auto; }
p.error { color: #b00; }
span.swatch { display: inline-block; width: 10px; height: 10px; margin-right: 4px; }
";

/// The whole page for `data`.
pub fn render(data: &RunData) -> String {
    let span = data.span();
    let axis = (data.first(), span);
    let mut page = head(
        &format!("paceline report: {}", names(data)),
        "paceline report",
    );
    let _ = writeln!(
        page,
        "<p class=\"meta\">From {}; {} {}, {}{} s from {} first slot.</p>",
        esc(&data.source),
        data.activities.len(),
        if data.activities.len() == 1 {
            "activity"
        } else {
            "activities"
        },
        if data.activities.len() == 1 {
            ""
        } else {
            "up to "
        },
        fmt_f(span, 3),
        // Each activity counts from its own first slot: the span is the longest.
        if data.activities.len() == 1 {
            "its"
        } else {
            "each one's"
        }
    );
    if let Some(run) = &data.run {
        run_section(&mut page, run);
    }
    if data.activities.len() > 1 {
        page.push_str("<nav>");
        for (i, a) in data.activities.iter().enumerate() {
            let _ = write!(page, "<a href=\"#activity-{i}\">{}</a>", esc(&a.alias));
        }
        page.push_str("</nav>\n");
    }
    if data.activities.is_empty() {
        page.push_str("<p>No activity reported.</p>\n");
    }
    let every = longest_interval(data);
    for (i, a) in data.activities.iter().enumerate() {
        activity(&mut page, i, a, axis, every, data.merged_logs);
    }
    page.push_str(TAIL);
    page
}

/// The run's metadata (which paceline, when, what command, which machine) and
/// its thresholds with their values and pass/fail, from the summary JSON's top
/// level.
fn run_section(page: &mut String, run: &serde_json::Value) {
    page.push_str("<table class=\"facts run\">\n");
    for (key, label) in crate::cli::meta::FIELDS {
        if let Some(v) = run.get(*key) {
            let _ = writeln!(
                page,
                "<tr><th>{}</th><td>{}</td></tr>",
                esc(label),
                esc(&crate::cli::meta::text(v))
            );
        }
    }
    page.push_str("</table>\n");
    let Some(list) = run.get("thresholds").and_then(|t| t.as_array()) else {
        return;
    };
    let failed = list.iter().filter(|t| t["pass"] != true).count();
    let _ = writeln!(
        page,
        "<h2>Thresholds: {} of {} passed</h2>\n<table class=\"thresholds\">\n\
         <tr><th>threshold</th><th>activity</th><th>value</th><th>result</th></tr>",
        list.len() - failed,
        list.len()
    );
    for t in list {
        let pass = t["pass"] == true;
        let _ = writeln!(
            page,
            "<tr class=\"{}\"><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
            if pass { "pass" } else { "fail" },
            esc(t["expr"].as_str().unwrap_or("?")),
            esc(t["activity"].as_str().unwrap_or("-")),
            esc(t["shown"].as_str().unwrap_or("?")),
            if pass { "pass" } else { "FAIL" }
        );
    }
    page.push_str("</table>\n");
}

/// The start of a page: the doctype, `title`, the inline style sheet, and the
/// `h1` heading (`title` and `heading` are escaped here).
pub fn head(title: &str, heading: &str) -> String {
    let mut page = String::with_capacity(64 * 1024);
    page.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    let _ = writeln!(page, "<title>{}</title>", esc(title));
    let _ = writeln!(page, "<style>{STYLE}</style>\n</head>\n<body>");
    let _ = writeln!(page, "<h1>{}</h1>", esc(heading));
    page
}

/// The end of a page that [`head`] began.
pub const TAIL: &str = "</body>\n</html>\n";

fn names(data: &RunData) -> String {
    let v: Vec<&str> = data.activities.iter().map(|a| a.alias.as_str()).collect();
    v.join(", ")
}

/// The report interval as the data shows it: the longest interval of any
/// activity (every interval but an activity's first and last is one).
fn longest_interval(data: &RunData) -> f64 {
    data.activities
        .iter()
        .flat_map(|a| &a.intervals)
        .map(|i| i.end - i.start)
        .fold(0.0, f64::max)
}

/// `a` without its partial intervals (shorter than half of `every`, the report
/// interval, `super::is_partial`; or a merged window not every log covers,
/// [`IntervalPoint::partial`](super::model::IntervalPoint::partial)), and how many were left out: the plots draw
/// no rate or percentile of a few ops (issue 24, item 4). The summary beside
/// them is the totals, which keep every op.
fn plotted(a: &ActivityData, every: f64) -> (ActivityData, usize) {
    let mut kept = a.clone();
    kept.intervals
        .retain(|i| !i.partial && (i.end - i.start) * 2.0 >= every);
    let dropped = a.intervals.len() - kept.intervals.len();
    (kept, dropped)
}

fn activity(
    page: &mut String,
    i: usize,
    a: &ActivityData,
    axis: (f64, f64),
    every: f64,
    merged: usize,
) {
    let _ = writeln!(
        page,
        "<section id=\"activity-{i}\">\n<h2>{}</h2>",
        esc(&a.alias)
    );
    page.push_str("<div class=\"summary\">\n");
    facts(page, a, merged);
    latency_table(page, a);
    page.push_str("</div>\n");
    let events = plots::group_events(&a.events);
    let (whole, dropped) = plotted(a, every);
    figure(page, "rate", plots::rate_plot(&whole, axis, &events));
    figure(page, "latency", plots::latency_plot(&whole, axis, &events));
    if dropped > 0 {
        let _ = writeln!(
            page,
            "<p class=\"note partial\">{dropped} partial interval{} (under half the report \
             interval{}) left out of the plots: too few ops for a rate or percentiles; \
             their ops are in the totals.</p>",
            if dropped == 1 { "" } else { "s" },
            if a.intervals.iter().any(|i| i.partial) {
                ", or a window of merged logs that not every log covers"
            } else {
                ""
            }
        );
    }
    event_list(page, &events);
    figure(page, "spectrum", plots::spectrum_plot(a));
    page.push_str("</section>\n");
}

/// A plot in its `<figure class="plot {class}">`, or a line saying why it could
/// not be drawn.
pub fn figure(page: &mut String, class: &str, svg: Result<String, String>) {
    match svg {
        Ok(svg) => {
            let _ = writeln!(page, "<figure class=\"plot {class}\">\n{svg}\n</figure>");
        }
        Err(e) => {
            let _ = writeln!(
                page,
                "<p class=\"error\">The {class} plot could not be drawn: {}</p>",
                esc(&e)
            );
        }
    }
}

fn event_list(page: &mut String, events: &[EventGroup]) {
    if events.is_empty() {
        return;
    }
    page.push_str(
        "<table class=\"events\">\n<tr><th>#</th><th>at (s)</th><th>kind</th><th>event</th></tr>\n",
    );
    for g in events {
        let _ = writeln!(
            page,
            "<tr><td><span class=\"swatch\" style=\"background:{}\"></span>{}</td><td>{}</td>\
             <td>{}</td><td>{}</td></tr>",
            plots::css_color(plots::event_color(g.kind)),
            g.number,
            fmt_f(g.at, 3),
            g.kind.name(),
            esc(&g.texts.join(", "))
        );
    }
    page.push_str("</table>\n");
}

/// The facts table: from the summary JSON when there is one, else what the
/// intervals say (of `merged` processes' logs, when more than one).
fn facts(page: &mut String, a: &ActivityData, merged: usize) {
    let mut rows: Vec<(&str, String)> = Vec::new();
    let ops: u64 = a.intervals.iter().map(|i| i.ops).sum();
    // Rows before the first slot (set-up) lie at negative times, the first of
    // them at the activity's start: the window, and every rate over it, starts
    // at 0, as the summary's elapsed time does. A set-up shorter than one
    // interval has no row of its own: the `started` mark, at its negative time,
    // says where it began (session 14 review, finding 6).
    let started = a
        .events
        .iter()
        .filter(|e| matches!(e.kind, super::model::EventKind::Start))
        .map(|e| e.at)
        .fold(f64::INFINITY, f64::min);
    let first = a.intervals.first().map_or(0.0, |i| i.start).min(started);
    let setup = (-first).max(0.0);
    let elapsed = a.intervals.last().map_or(0.0, |i| i.end) - first.max(0.0);
    let setup_row = |secs: f64| format!("{} s before the first slot", fmt_f(secs, 3));
    match &a.summary {
        Some(s) => {
            rows.push(("driver", text(&s["driver"])));
            rows.push(("threads", text(&s["threads"])));
            let requested = s["cycles"]["requested"].as_u64().unwrap_or(0);
            rows.push((
                "cycles",
                format!(
                    "{} of {}",
                    text(&s["cycles"]["completed"]),
                    if requested == 0 {
                        "unbounded".to_string()
                    } else {
                        requested.to_string()
                    }
                ),
            ));
            rows.push(("elapsed", format!("{} s", num(&s["elapsed_seconds"], 3))));
            // Set-up (before the first slot) is in no rate, as on the console.
            if let Some(secs) = s["setup_seconds"].as_f64().filter(|x| *x > 0.0) {
                rows.push(("set-up", setup_row(secs)));
            }
            let achieved = units::rate(s["rate"]["achieved"].as_f64().unwrap_or(0.0));
            // On a shared schedule the target is every process's total.
            let of = if s["coordinated"].is_object() {
                ", its share of a shared"
            } else {
                " of"
            };
            let rate = match s["rate"]["target"].as_f64() {
                Some(t) => format!(
                    "{achieved}/s{of} {}/s (strictness {})",
                    units::rate(t),
                    text(&s["rate"]["strictness"])
                ),
                None => format!("{achieved}/s (unpaced)"),
            };
            rows.push(("rate", rate));
            rows.push(("missed slots", text(&s["missed_slots"])));
            rows.push(("paused", format!("{} s", num(&s["paused_seconds"], 3))));
            rows.push(("retries", text(&s["retries"])));
            let errors: Vec<String> = s["errors_by_kind"]
                .as_object()
                .map(|m| m.iter().map(|(k, v)| format!("{k} {}", text(v))).collect())
                .unwrap_or_default();
            rows.push((
                "errors",
                if errors.is_empty() {
                    "none".to_string()
                } else {
                    errors.join(", ")
                },
            ));
            if let Some(m) = s["first_errors"].as_object() {
                for (k, v) in m {
                    rows.push(("first error", format!("{k}: {}", text(v))));
                }
            }
            // The verdict on the whole run, from `activities[i].verdict`.
            if let Some(kind) = s["verdict"]["kind"].as_str() {
                rows.push(("verdict", kind.to_string()));
                rows.push(("why", text(&s["verdict"]["reason"])));
            }
            // A shared schedule's global numbers, from `activities[i].coordinated`.
            let c = &s["coordinated"];
            if c.is_object() {
                rows.push((
                    "shared schedule",
                    format!(
                        "{}: member {} of {} processes",
                        text(&c["url"]),
                        text(&c["member"]),
                        text(&c["processes_seen"])
                    ),
                ));
                rows.push((
                    "global",
                    format!(
                        "{} ops at {}/s, re-run {}, missed {}",
                        text(&c["global_completed"]),
                        units::rate(c["global_achieved"].as_f64().unwrap_or(0.0)),
                        text(&c["rerun_cycles"]),
                        text(&c["global_missed"])
                    ),
                ));
                rows.push((
                    "time base error",
                    units::duration(c["time_error_ns"].as_u64().unwrap_or(0)),
                ));
            }
        }
        None => {
            rows.push(("ops", ops.to_string()));
            rows.push(("elapsed", format!("{} s", fmt_f(elapsed, 3))));
            if setup > 0.0 {
                rows.push(("set-up", setup_row(setup)));
            }
            let rate = if elapsed > 0.0 {
                ops as f64 / elapsed
            } else {
                0.0
            };
            // The logs hold when ops ended, not when they started: this is
            // the completion rate, below the achieved (start) rate by the
            // drain of the ops in flight at the end (audit p18, M7), and named
            // so.
            rows.push((
                "completion rate",
                format!(
                    "{}/s (ops over the time to the last op's end; the achieved rate, \
                     starts over their span, is in the summary JSON)",
                    units::rate(rate)
                ),
            ));
            rows.push((
                "",
                if merged > 1 {
                    format!(
                        "(the sum of {merged} processes' HDR logs; each process's summary \
                         JSON has the rest of its own facts)"
                    )
                } else {
                    "(no summary JSON: pass --summary-json for the rest)".to_string()
                },
            ));
        }
    }
    page.push_str("<table class=\"facts\">\n");
    for (k, v) in rows {
        let _ = writeln!(page, "<tr><th>{}</th><td>{}</td></tr>", esc(k), esc(&v));
    }
    page.push_str("</table>\n");
}

/// The whole run's latency figures, one row per distribution; paced ops' queue
/// and dispatch (the two parts of their wait) after the wait, as the console's
/// summary shows them, when there are any.
fn latency_table(page: &mut String, a: &ActivityData) {
    page.push_str(
        "<table class=\"latency\">\n<tr><th></th><th>count</th><th>min</th><th>mean</th>\
         <th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>p99.99</th><th>max</th></tr>\n",
    );
    let t = &a.totals;
    let mut rows = vec![("service", &t.service), ("wait", &t.wait)];
    if !t.queue.is_empty() {
        rows.extend([("queue", &t.queue), ("dispatch", &t.dispatch)]);
    }
    rows.push(("response", &t.response));
    for (name, h) in rows {
        let _ = write!(page, "<tr><th>{name}</th><td>{}</td>", h.len());
        for v in figures(h) {
            let _ = write!(page, "<td>{}</td>", esc(&v));
        }
        page.push_str("</tr>\n");
    }
    page.push_str("</table>\n");
}

/// min, mean, p50, p90, p99, p99.9, p99.99, max in human units; dashes when empty.
fn figures(h: &Histogram<u64>) -> Vec<String> {
    if h.is_empty() {
        return vec!["-".to_string(); 8];
    }
    let q = |p: f64| units::duration(h.value_at_quantile(p));
    vec![
        units::duration(h.min()),
        units::duration(h.mean().round() as u64),
        q(0.5),
        q(0.9),
        q(0.99),
        q(0.999),
        q(0.9999),
        units::duration(h.max()),
    ]
}

/// A JSON value as text: strings bare, null as `-`.
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".to_string(),
        v => v.to_string(),
    }
}

fn num(v: &Value, digits: usize) -> String {
    v.as_f64().map_or("-".to_string(), |x| fmt_f(x, digits))
}

fn fmt_f(x: f64, digits: usize) -> String {
    format!("{x:.digits$}")
}

/// `s` escaped for HTML text and attribute values, with characters that would
/// act rather than show (control characters but newlines and tabs, bidi
/// overrides) written as text, `\u{1b}` (audit p17, L7).
pub fn esc(s: &str) -> String {
    let s = crate::cli::shown::terminal(s);
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
    }

    /// Regression (audit p17, L7): a server's error text reached the page raw.
    #[test]
    fn control_characters_are_shown_as_text() {
        assert_eq!(esc("BAD x\u{1b}[2J<y>"), "BAD x\\u{1b}[2J&lt;y&gt;");
    }

    #[test]
    fn an_empty_run_still_makes_a_page() {
        let page = render(&RunData::default());
        assert!(page.starts_with("<!DOCTYPE html>"));
        assert!(page.contains("No activity reported."));
        assert!(page.ends_with("</html>\n"));
    }
}
