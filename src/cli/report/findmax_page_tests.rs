//! The findmax page from a fixed search: self-contained, one SVG per plot, every
//! step in the table with its verdict and pass or fail, and the result.

use super::*;

fn step(label: &str, target: f64, achieved: f64, p99: u64, failed: Option<&str>) -> StepRow {
    StepRow {
        label: label.to_string(),
        target,
        achieved,
        response_p99: p99,
        verdict: if failed.is_some() {
            "system-bound".to_string()
        } else {
            "on-schedule".to_string()
        },
        failed: failed.map(str::to_string),
    }
}

/// Doubling from 250/s to a fail at 1000/s (run again), then bisecting.
fn search(slo: Option<u64>) -> FindmaxData {
    let short = Some("achieved 982/s, more than 1 % short of 1.00K/s");
    FindmaxData {
        alias: "diag".to_string(),
        slo_p99: slo,
        steps: vec![
            step("1", 250.0, 250.0, 3_380_000, None),
            step("2", 500.0, 499.0, 2_670_000, None),
            step("3", 1000.0, 982.0, 17_900_000, short),
            step("3*", 1000.0, 981.0, 18_200_000, short),
            step("4", 750.0, 750.0, 2_900_000, None),
            step("5", 875.0, 871.0, 9_000_000, Some("<odd> & \"quoted\"")),
        ],
        headline: "max rate 750/s (achieved at the 750/s step), limited by the system".to_string(),
        why: "at 875/s: ...".to_string(),
    }
}

/// The rows of the steps' table.
fn rows(page: &str) -> Vec<&str> {
    let start = page
        .find("<table class=\"steps\">")
        .unwrap_or_else(|| panic!("{page}"));
    let end = start + page[start..].find("</table>").unwrap_or_default();
    page[start..end].lines().skip(2).collect()
}

#[test]
fn the_page_is_self_contained_with_one_svg_per_plot() {
    let page = render(&search(Some(5_000_000)));
    for bad in [
        "src=\"http",
        "href=\"http",
        "src='http",
        "href='http",
        "<script",
        "<link",
        "@import",
        "url(",
    ] {
        assert!(!page.contains(bad), "the page holds `{bad}`");
    }
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(page.ends_with("</html>\n"));
    assert_eq!(page.matches("<svg").count(), 2);
    for plot in ["rate", "p99"] {
        assert_eq!(
            page.matches(&format!("<figure class=\"plot {plot}\">\n<svg"))
                .count(),
            1,
            "{plot}"
        );
    }
    assert!(!page.contains("class=\"error\""));
    // The report's own style sheet.
    assert!(page.contains("figure svg { display: block;"));
    assert!(page.contains("target and achieved rate per step"));
    assert!(page.contains("response p99 per step (log scale)"));
    // The SLO is a line with its key.
    assert!(page.contains(">\nSLO 5.00ms\n</text>"), "{page}");
}

#[test]
fn the_table_lists_every_step_with_pass_or_fail() {
    let data = search(None);
    let page = render(&data);
    let rows = rows(&page);
    assert_eq!(rows.len(), data.steps.len(), "{rows:#?}");
    assert_eq!(
        rows[0],
        "<tr><td>1</td><td>250/s</td><td>250/s</td><td>3.38ms</td><td>on-schedule</td>\
         <td class=\"pass\">yes</td><td></td></tr>"
    );
    assert_eq!(
        rows[3],
        "<tr><td>3*</td><td>1.00K/s</td><td>981/s</td><td>18.2ms</td><td>system-bound</td>\
         <td class=\"fail\">no</td><td>achieved 982/s, more than 1 % short of 1.00K/s</td></tr>"
    );
    assert!(
        rows[5].contains("&lt;odd&gt; &amp; &quot;quoted&quot;"),
        "{}",
        rows[5]
    );
    let passes: Vec<bool> = rows.iter().map(|r| r.contains(">yes<")).collect();
    assert_eq!(passes, [true, true, false, false, true, false]);
    assert!(page.contains("* a failed step run again"));
    // The result.
    assert!(page.contains(
        "<b>max rate 750/s (achieved at the 750/s step), limited by the system</b></p>\n\
         <p>at 875/s: ...</p>"
    ));
    // Issue 24 item 20: the result is said once, not again as the console's line.
    assert_eq!(page.matches("max rate 750/s").count(), 1, "{page}");
    assert_eq!(page.matches("at 875/s: ...").count(), 1, "{page}");
    // No SLO: no line for it.
    assert!(!page.contains("SLO"));
    // The steps are marked on the plots by their labels, pass and fail keyed.
    assert!(page.contains(">\n3*\n</text>"));
    assert!(page.contains(">\npass\n</text>") && page.contains(">\nfail\n</text>"));
}

#[test]
fn a_search_with_no_steps_still_makes_a_page() {
    let page = render(&FindmaxData {
        steps: Vec::new(),
        headline: "no max rate: the search stopped before a step passed".to_string(),
        ..search(None)
    });
    assert!(page.contains("<p class=\"meta\">0 steps.</p>"));
    assert_eq!(page.matches("<svg").count(), 2);
    assert!(!page.contains("class=\"error\""));
    assert!(rows(&page).is_empty());
}

#[test]
fn a_long_search_labels_every_kth_step_and_the_last_on_x() {
    let mut data = search(None);
    assert_eq!(x_label(&data, 4), "3*", "six steps: every one labelled");
    data.steps = (1..=60)
        .map(|i| step(&i.to_string(), 100.0 * f64::from(i), 100.0, 1_000_000, None))
        .collect();
    let shown: Vec<String> = (1..=60)
        .map(|x| x_label(&data, x))
        .filter(|l| !l.is_empty())
        .collect();
    // 60 steps: every third, and the last.
    assert_eq!(shown.len(), 21, "{shown:?}");
    assert_eq!(shown.first().map(String::as_str), Some("1"));
    assert_eq!(shown.get(1).map(String::as_str), Some("4"));
    assert_eq!(shown.last().map(String::as_str), Some("60"));
    assert!(shown.len() <= MAX_X_LABELS + 1);
    assert_eq!(x_label(&data, 0), "");
    assert_eq!(x_label(&data, 61), "");
}

/// Issue 24 item 20: the p99 axis (2.67 to 18.2 ms: 1.3 to 45.5 ms drawn) was
/// labelled at 10 ms alone, plotters' powers of ten.
#[test]
fn issue24_item20_the_p99_axis_has_labels_across_its_range() {
    let svg = p99_plot(&search(None)).unwrap_or_else(|e| panic!("{e}"));
    for ns in [2_000_000, 5_000_000, 10_000_000, 20_000_000] {
        let label = units::duration(ns);
        assert!(
            svg.contains(&format!("\n{label}\n")),
            "{label} not in\n{svg}"
        );
    }
}
