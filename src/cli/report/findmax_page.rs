//! `paceline findmax --html`: the search's steps on one self-contained page.
//!
//! The page has the result (the max rate and what limited it), the target
//! against the achieved rate per step, response p99 per step on a log scale (with
//! the SLO as a dashed line when one was given), and a table of the steps. Steps
//! are on x in the order run; a passing step is a green dot, a failing one a dark
//! red cross. The page's scaffolding and the plots' look are the run report's
//! ([`html::head`], `plots::svg`).

use super::html::{self, esc};
use super::plots::{self, Key, PlotResult};
use super::units;
use plotters::prelude::*;
use std::fmt::Write;

/// A passing step's mark.
const PASS: RGBColor = RGBColor(44, 160, 44);
/// A failing step's mark.
const FAIL: RGBColor = RGBColor(150, 0, 0);
/// The SLO's line.
const SLO: RGBColor = RGBColor(148, 103, 189);
/// A mark's size in pixels.
const MARK: i32 = 6;

/// One step of a search as the page shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRow {
    /// The step's number as the console table writes it: `3`, or `3*` for a
    /// failed step run again.
    pub label: String,
    /// The target rate, ops per second.
    pub target: f64,
    /// The achieved rate, ops per second.
    pub achieved: f64,
    /// Response p99 in nanoseconds.
    pub response_p99: u64,
    /// The verdict's kind, such as `system-bound`.
    pub verdict: String,
    /// Why the step failed; `None` when it passed.
    pub failed: Option<String>,
}

impl StepRow {
    fn pass(&self) -> bool {
        self.failed.is_none()
    }
}

/// A whole search as the page shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct FindmaxData {
    /// The activity's alias.
    pub alias: String,
    /// The response p99 SLO in nanoseconds, if one was given.
    pub slo_p99: Option<u64>,
    /// The steps in the order run.
    pub steps: Vec<StepRow>,
    /// The result as the console's last line says it, without its reason:
    /// the max rate (achieved, and at which step) and what limited it.
    pub headline: String,
    /// The reason the console gives in parentheses, said once here.
    pub why: String,
}

/// The page for `data`.
pub fn render(data: &FindmaxData) -> String {
    let title = format!("paceline findmax: {}", data.alias);
    let mut page = html::head(&title, &title);
    let _ = writeln!(
        page,
        "<p class=\"meta\">{} {}{}.</p>",
        data.steps.len(),
        if data.steps.len() == 1 {
            "step"
        } else {
            "steps"
        },
        data.slo_p99.map_or(String::new(), |s| format!(
            "; response p99 SLO {}",
            units::duration(s)
        ))
    );
    let _ = writeln!(
        page,
        "<p class=\"result\"><b>{}</b></p>\n<p>{}</p>",
        esc(&data.headline),
        esc(&data.why)
    );
    html::figure(&mut page, "rate", rate_plot(data));
    html::figure(&mut page, "p99", p99_plot(data));
    table(&mut page, data);
    page.push_str(html::TAIL);
    page
}

/// The steps' table, in the order run.
fn table(page: &mut String, data: &FindmaxData) {
    page.push_str(
        "<table class=\"steps\">\n<tr><th>step</th><th>target</th><th>achieved</th>\
         <th>response p99</th><th>verdict</th><th>pass</th><th>failed because</th></tr>\n",
    );
    for s in &data.steps {
        let _ = writeln!(
            page,
            "<tr><td>{}</td><td>{}/s</td><td>{}/s</td><td>{}</td><td>{}</td>\
             <td class=\"{}\">{}</td><td>{}</td></tr>",
            esc(&s.label),
            esc(&units::rate(s.target)),
            esc(&units::rate(s.achieved)),
            esc(&units::duration(s.response_p99)),
            esc(&s.verdict),
            if s.pass() { "pass" } else { "fail" },
            if s.pass() { "yes" } else { "no" },
            esc(s.failed.as_deref().unwrap_or(""))
        );
    }
    page.push_str("</table>\n");
    if data.steps.iter().any(|s| s.label.ends_with('*')) {
        page.push_str(
            "<p class=\"meta\">* a failed step run again: a step fails only when it fails \
             twice.</p>\n",
        );
    }
}

/// The most step labels the x axis shows: past it they would overlap (a plot is
/// about 900 px wide and a label like `12*` takes about 30).
const MAX_X_LABELS: usize = 24;

/// Each step's x (its place in the order run, from 1) and its label there. With
/// more steps than [`MAX_X_LABELS`], every k-th step is labelled (and the last),
/// so the labels never overlap; the table lists them all.
fn x_label(data: &FindmaxData, x: i32) -> String {
    let n = data.steps.len();
    let every = n.div_ceil(MAX_X_LABELS).max(1);
    usize::try_from(x - 1)
        .ok()
        .filter(|&i| i % every == 0 || i + 1 == n)
        .and_then(|i| data.steps.get(i))
        .map_or(String::new(), |s| s.label.clone())
}

type Chart<'a, 'b, Y> =
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<plotters::coord::types::RangedCoordi32, Y>>;

/// The pass and fail marks at `points` (one per step, in order).
fn draw_marks<'a, 'b: 'a, Y>(
    chart: &mut Chart<'a, 'b, Y>,
    data: &FindmaxData,
    points: &[(i32, f64)],
) -> Result<(), String>
where
    Y: Ranged<ValueType = f64>,
{
    let with = |pass: bool| {
        points
            .iter()
            .zip(&data.steps)
            .filter(move |(_, s)| s.pass() == pass)
            .map(|(&p, _)| p)
    };
    chart
        .draw_series(with(true).map(|p| Circle::new(p, MARK, PASS.filled())))
        .map_err(plots::err)?;
    chart
        .draw_series(with(false).map(|p| Cross::new(p, MARK, FAIL.stroke_width(3))))
        .map_err(plots::err)?;
    Ok(())
}

/// The keys of the pass and fail marks.
fn mark_keys(data: &FindmaxData) -> Vec<Key> {
    let mut keys = Vec::new();
    if data.steps.iter().any(StepRow::pass) {
        keys.push(Key::new("pass", PASS.stroke_width(6), false));
    }
    if data.steps.iter().any(|s| !s.pass()) {
        keys.push(Key::new("fail", FAIL.stroke_width(3), false));
    }
    keys
}

/// The target against the achieved rate, per step.
pub fn rate_plot(data: &FindmaxData) -> PlotResult {
    let n = data.steps.len() as i32;
    let top = data
        .steps
        .iter()
        .map(|s| s.achieved.max(s.target))
        .fold(1.0, f64::max)
        * 1.2;
    let target: Vec<(i32, f64)> = (1..).zip(data.steps.iter().map(|s| s.target)).collect();
    let achieved: Vec<(i32, f64)> = (1..).zip(data.steps.iter().map(|s| s.achieved)).collect();
    plots::svg((plots::WIDTH, plots::RATE_HEIGHT + 50), |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(
                format!("{}: target and achieved rate per step", data.alias),
                (plots::FONT, plots::CAPTION_SIZE),
            )
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(72)
            .build_cartesian_2d(0..n + 1, 0f64..top)
            .map_err(plots::err)?;
        chart
            .configure_mesh()
            .x_desc("step, in the order run")
            .y_desc("ops/s")
            .x_labels((n + 2) as usize)
            .x_label_formatter(&|x| x_label(data, *x))
            .y_label_formatter(&|v| units::rate(*v))
            .light_line_style(plots::GRID)
            .label_style((plots::FONT, plots::LABEL_SIZE))
            .axis_desc_style((plots::FONT, plots::AXIS_SIZE))
            .draw()
            .map_err(plots::err)?;
        let target_style = plots::TARGET.stroke_width(2);
        let achieved_style = plots::ACHIEVED.stroke_width(2);
        chart
            .draw_series(DashedLineSeries::new(target.clone(), 8, 5, target_style))
            .map_err(plots::err)?;
        chart
            .draw_series(
                target
                    .iter()
                    .map(|&p| Circle::new(p, 3, plots::TARGET.filled())),
            )
            .map_err(plots::err)?;
        chart
            .draw_series(LineSeries::new(achieved.clone(), achieved_style))
            .map_err(plots::err)?;
        draw_marks(&mut chart, data, &achieved)?;
        let mut keys = vec![
            Key::new("target", target_style, true),
            Key::new("achieved", achieved_style, false),
        ];
        keys.extend(mark_keys(data));
        Ok(keys)
    })
}

/// Response p99 per step on a log scale, with the SLO when one was given.
pub fn p99_plot(data: &FindmaxData) -> PlotResult {
    let n = data.steps.len() as i32;
    let values = data
        .steps
        .iter()
        .map(|s| s.response_p99 as f64)
        .chain(data.slo_p99.map(|s| s as f64));
    let (lo, hi) = plots::latency_range(values);
    let p99: Vec<(i32, f64)> = (1..)
        .zip(data.steps.iter().map(|s| s.response_p99 as f64))
        .collect();
    let p99 = plots::floor_at(p99, lo);
    plots::svg((plots::WIDTH, plots::LATENCY_HEIGHT), |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(
                format!("{}: response p99 per step (log scale)", data.alias),
                (plots::FONT, plots::CAPTION_SIZE),
            )
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(72)
            .build_cartesian_2d(0..n + 1, plots::log_axis(lo, hi))
            .map_err(plots::err)?;
        chart
            .configure_mesh()
            .x_desc("step, in the order run")
            .y_desc("latency")
            .x_labels((n + 2) as usize)
            .x_label_formatter(&|x| x_label(data, *x))
            .y_label_formatter(&|v| units::duration(*v as u64))
            .light_line_style(plots::GRID)
            .label_style((plots::FONT, plots::LABEL_SIZE))
            .axis_desc_style((plots::FONT, plots::AXIS_SIZE))
            .draw()
            .map_err(plots::err)?;
        let mut keys = Vec::new();
        if let Some(slo) = data.slo_p99 {
            let style = SLO.stroke_width(2);
            chart
                .draw_series(DashedLineSeries::new(
                    [(0, slo as f64), (n + 1, slo as f64)],
                    8,
                    5,
                    style,
                ))
                .map_err(plots::err)?;
            keys.push(Key::new(
                format!("SLO {}", units::duration(slo)),
                style,
                true,
            ));
        }
        let style = plots::RESPONSE.stroke_width(2);
        chart
            .draw_series(LineSeries::new(p99.clone(), style))
            .map_err(plots::err)?;
        draw_marks(&mut chart, data, &p99)?;
        keys.push(Key::new("response p99", style, false));
        keys.extend(mark_keys(data));
        Ok(keys)
    })
}

#[cfg(test)]
#[path = "findmax_page_tests.rs"]
mod tests;
