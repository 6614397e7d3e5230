//! The report's plots, drawn by `plotters` into SVG strings that the page inlines.
//!
//! Three per activity, the first two on a time axis in seconds from the
//! activity's schedule's first slot (as the CSV and the console count; set-up
//! events before it on its negative side), one range for every activity: the target against the achieved rate, the latency figures
//! per interval on a log scale, and the percentile spectrum of the whole run
//! (HdrHistogram's percentile-distribution plot: x is `1/(1-p)` on a log scale,
//! so 90 %, 99 %, 99.9 % are evenly spaced). Events are numbered vertical lines on
//! the time plots; the page lists them by number.
//!
//! Text is SVG `<text>` in the `sans-serif` family: the browser lays it out, so no
//! font is read here.

use super::model::{ActivityData, EventKind, EventMark, Figures, IntervalPoint};
use super::units;
use hdrhistogram::Histogram;
use plotters::coord::Shift;
use plotters::coord::combinators::{BindKeyPoints, LogCoord, WithKeyPoints};
use plotters::prelude::*;

/// Plot width in pixels (the page is laid out for it).
pub const WIDTH: u32 = 1240;
/// The rate plot's height in pixels.
pub(super) const RATE_HEIGHT: u32 = 250;
/// The latency plot's height in pixels.
pub(super) const LATENCY_HEIGHT: u32 = 350;
const SPECTRUM_HEIGHT: u32 = 310;
/// The plots' font family (the browser lays the text out).
pub(super) const FONT: &str = "sans-serif";
/// Intervals past which the latency plot draws plain lines (see `latency_plot`).
const DENSE: usize = 120;
/// Room right of the plotting area for the legend.
const LEGEND_WIDTH: u32 = 150;

const SERVICE: RGBColor = RGBColor(31, 119, 180);
const WAIT: RGBColor = RGBColor(255, 127, 14);
pub(super) const RESPONSE: RGBColor = RGBColor(214, 39, 40);
pub(super) const ACHIEVED: RGBColor = RGBColor(31, 119, 180);
pub(super) const TARGET: RGBColor = RGBColor(80, 80, 80);

/// Events at the same time (within a millisecond, the logs' resolution) share one
/// numbered line.
#[derive(Debug, Clone, PartialEq)]
pub struct EventGroup {
    /// The number shown on the plots, from 1.
    pub number: usize,
    /// Seconds since the origin.
    pub at: f64,
    /// The most telling kind among the events (a stop over a rate change).
    pub kind: EventKind,
    /// The events' texts, in the report's units.
    pub texts: Vec<String>,
}

/// Groups `events` (in time order) that happened within a millisecond of each other.
pub fn group_events(events: &[EventMark]) -> Vec<EventGroup> {
    let mut groups: Vec<EventGroup> = Vec::new();
    for e in events {
        match groups.last_mut() {
            Some(g) if (e.at - g.at).abs() < 0.001 => {
                g.kind = g.kind.max(e.kind);
                g.texts.push(e.display());
            }
            _ => groups.push(EventGroup {
                number: groups.len() + 1,
                at: e.at,
                kind: e.kind,
                texts: vec![e.display()],
            }),
        }
    }
    groups
}

/// The colour of an event kind's line (also used by the page's list).
pub fn event_color(kind: EventKind) -> RGBColor {
    match kind {
        EventKind::Note => RGBColor(127, 127, 127),
        EventKind::Start => RGBColor(44, 160, 44),
        EventKind::Threads => RGBColor(148, 103, 189),
        EventKind::Rate => RGBColor(23, 190, 207),
        EventKind::Resume => RGBColor(188, 189, 34),
        EventKind::Pause => RGBColor(140, 86, 75),
        EventKind::Stop => RGBColor(0, 0, 0),
    }
}

/// `#rrggbb` of a colour, for the page's CSS.
pub fn css_color(c: RGBColor) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

/// An SVG document, or why it could not be drawn.
pub(super) type PlotResult = Result<String, String>;

/// A plotting error as text.
pub(super) fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("{e:?}")
}

/// A plot's drawing area on the SVG canvas.
pub(super) type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// One line of a legend: its text and how its series is drawn.
pub(super) struct Key {
    text: String,
    style: ShapeStyle,
    dashed: bool,
}

impl Key {
    /// A key for a series drawn with `style` (`dashed` as a dashed line).
    pub(super) fn new(text: impl Into<String>, style: ShapeStyle, dashed: bool) -> Self {
        Self {
            text: text.into(),
            style,
            dashed,
        }
    }
}

/// Draws on an SVG canvas of `size` and returns the SVG text: `draw` gets the
/// plot's area and returns the legend's keys, drawn in a column to its right
/// (outside the data, so they never hide it).
pub(super) fn svg(
    size: (u32, u32),
    draw: impl FnOnce(&Area<'_>) -> Result<Vec<Key>, String>,
) -> PlotResult {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, size).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (plot, side) = root.split_horizontally(size.0 - LEGEND_WIDTH);
        let keys = draw(&plot)?;
        draw_legend(&side, &keys)?;
        root.present().map_err(err)?;
    }
    Ok(out)
}

/// The legend column: a sample of each series' line, then its text.
fn draw_legend(area: &Area<'_>, keys: &[Key]) -> Result<(), String> {
    for (i, k) in keys.iter().enumerate() {
        let y = 48 + 20 * i as i32;
        let segments: Vec<[(i32, i32); 2]> = if k.dashed {
            vec![[(4, y), (10, y)], [(14, y), (20, y)], [(24, y), (30, y)]]
        } else {
            vec![[(4, y), (30, y)]]
        };
        for [a, b] in segments {
            area.draw(&PathElement::new(vec![a, b], k.style))
                .map_err(err)?;
        }
        area.draw(&Text::new(
            k.text.clone(),
            (38, y - 7),
            (FONT, 15).into_font().color(&BLACK),
        ))
        .map_err(err)?;
    }
    Ok(())
}

/// The grid colour of every plot.
pub(super) const GRID: RGBColor = RGBColor(235, 235, 235);
/// The tick labels' font size.
pub(super) const LABEL_SIZE: u32 = 14;
/// The axis descriptions' font size.
pub(super) const AXIS_SIZE: u32 = 15;
/// The captions' font size.
pub(super) const CAPTION_SIZE: u32 = 20;

/// Seconds between one interval's end and the next one's start past which the
/// step line breaks: more than the millisecond the logs keep times to.
const GAP: f64 = 0.002;

/// The step line of `value` over each interval: flat from its start to its end.
pub(super) fn steps(
    intervals: &[IntervalPoint],
    value: impl Fn(&IntervalPoint) -> Option<f64>,
) -> Vec<Vec<(f64, f64)>> {
    // Runs of intervals that have a value; a gap breaks the line: an interval
    // without one (unpaced, no ops), or time no interval covers (a partial one
    // left out of the plot): a line across it would draw a rate that never was.
    let mut runs: Vec<Vec<(f64, f64)>> = Vec::new();
    let mut current: Vec<(f64, f64)> = Vec::new();
    for i in intervals {
        let apart = current.last().is_some_and(|&(end, _)| i.start > end + GAP);
        if apart {
            runs.push(std::mem::take(&mut current));
        }
        match value(i) {
            Some(v) => {
                current.push((i.start, v));
                current.push((i.end, v));
            }
            None => {
                if !current.is_empty() {
                    runs.push(std::mem::take(&mut current));
                }
            }
        }
    }
    if !current.is_empty() {
        runs.push(current);
    }
    runs
}

/// The time axis for `(first, span)` seconds ([`RunData::first`],
/// [`RunData::span`]): from the first slot (0), or the earliest set-up event
/// before it, to the end; at least 1 ms wide.
///
/// [`RunData::first`]: super::model::RunData::first
/// [`RunData::span`]: super::model::RunData::span
pub fn x_range((first, span): (f64, f64)) -> (f64, f64) {
    let lo = first.min(0.0);
    (lo, span.max(lo + 1e-3))
}

/// The target rate against the achieved rate, per interval.
pub fn rate_plot(a: &ActivityData, axis: (f64, f64), events: &[EventGroup]) -> PlotResult {
    let top = a
        .intervals
        .iter()
        .map(|i| i.achieved().max(i.target.unwrap_or(0.0)))
        .fold(1.0, f64::max)
        * 1.2;
    let (x_min, x_max) = x_range(axis);
    svg((WIDTH, RATE_HEIGHT), |root| {
        let mut chart = ChartBuilder::on(root)
            .caption(format!("{}: rate", a.alias), (FONT, CAPTION_SIZE))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(72)
            .build_cartesian_2d(x_min..x_max, 0f64..top)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("seconds from the first slot")
            .y_desc("ops/s")
            .y_label_formatter(&|v| units::rate(*v))
            .light_line_style(GRID)
            .label_style((FONT, LABEL_SIZE))
            .axis_desc_style((FONT, AXIS_SIZE))
            .draw()
            .map_err(err)?;
        draw_events(&mut chart, events, 0.0, top)?;
        let mut keys = Vec::new();
        let target = steps(&a.intervals, |i| i.target);
        if !target.is_empty() {
            keys.push(Key::new("target", TARGET.stroke_width(2), true));
        }
        for run in target {
            chart
                .draw_series(DashedLineSeries::new(run, 8, 5, TARGET.stroke_width(2)))
                .map_err(err)?;
        }
        for run in steps(&a.intervals, |i| Some(i.achieved())) {
            chart
                .draw_series(LineSeries::new(run, ACHIEVED.stroke_width(2)))
                .map_err(err)?;
        }
        keys.push(Key::new("achieved", ACHIEVED.stroke_width(2), false));
        if a.intervals.iter().all(|i| i.target.is_none()) {
            keys.push(Key::new("(unpaced)", WHITE.stroke_width(0), false));
        }
        Ok(keys)
    })
}

/// Which distribution of an interval a series shows.
type Pick = fn(&IntervalPoint) -> Figures;

/// Which figure of a distribution, and how its line is drawn.
#[derive(Clone, Copy)]
enum Figure {
    P50,
    P99,
    Max,
}

impl Figure {
    fn of(self, f: &Figures) -> Option<f64> {
        let v = match self {
            Self::P50 => f.p50,
            Self::P99 => f.p99,
            Self::Max => f.max,
        };
        (f.count > 0).then_some(v as f64)
    }

    fn name(self) -> &'static str {
        match self {
            Self::P50 => "p50",
            Self::P99 => "p99",
            Self::Max => "max",
        }
    }
}

/// The log-scale range that holds the positive `values` (nanoseconds), with room
/// above for the event numbers; 1 µs to 1 s when there are none. A zero (a wait
/// of an op that started on time) is drawn on the bottom edge.
pub(super) fn latency_range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| *v > 0.0)
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if hi == 0.0 {
        return (1e3, 1e9);
    }
    (lo / 2.0, (hi * 2.5).max(lo * 10.0))
}

/// A log axis from `lo` to `hi` labelled at [`log_ticks`], with a light grid
/// line at each whole multiple of a power of ten between.
pub(super) fn log_axis(lo: f64, hi: f64) -> WithKeyPoints<LogCoord<f64>> {
    let (bold, light) = log_ticks(lo, hi);
    (lo..hi)
        .log_scale()
        .with_key_points(bold)
        .with_light_points(light)
}

/// Where a log axis from `lo` to `hi` is labelled, and where its light grid
/// lines go. Issue 24 item 20: plotters labels powers of ten only, so a range
/// inside one or two decades (0.4 ms to 20 ms) had one or two labels. Here a
/// range of up to 3 decades is labelled at 1, 2 and 5 of each, up to 5 at 1
/// and 3, wider ones at each power of ten: 4 to 12 labels on the ranges
/// [`latency_range`] makes.
pub(super) fn log_ticks(lo: f64, hi: f64) -> (Vec<f64>, Vec<f64>) {
    if !(lo > 0.0 && hi > lo && hi.is_finite()) {
        return (Vec::new(), Vec::new());
    }
    let decades = (hi / lo).log10();
    let marks: &[f64] = if decades <= 3.0 {
        &[1.0, 2.0, 5.0]
    } else if decades <= 5.0 {
        &[1.0, 3.0]
    } else {
        &[1.0]
    };
    let every: &[f64] = &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0];
    let within = |mantissas: &[f64]| -> Vec<f64> {
        let first = lo.log10().floor() as i32;
        let last = hi.log10().ceil() as i32;
        (first..=last)
            .flat_map(|e| {
                let p = 10f64.powi(e);
                mantissas.iter().map(move |m| m * p)
            })
            .filter(|v| *v >= lo && *v <= hi)
            .collect()
    };
    let light = if decades <= 6.0 {
        within(every)
    } else {
        Vec::new()
    };
    (within(marks), light)
}

/// `points` with every value below `lo` raised to it (a log scale has no zero).
pub(super) fn floor_at<X>(points: Vec<(X, f64)>, lo: f64) -> Vec<(X, f64)> {
    points.into_iter().map(|(x, y)| (x, y.max(lo))).collect()
}

/// Service, wait and response p50, p99 and max per interval, on a log scale.
pub fn latency_plot(a: &ActivityData, axis: (f64, f64), events: &[EventGroup]) -> PlotResult {
    let figures = [Figure::P50, Figure::P99, Figure::Max];
    let all = a.intervals.iter().flat_map(|i| {
        [i.service, i.wait, i.response]
            .into_iter()
            .flat_map(move |f| figures.into_iter().filter_map(move |g| g.of(&f)))
    });
    let (lo, hi) = latency_range(all);
    let (x_min, x_max) = x_range(axis);
    let empty = a.intervals.iter().all(|i| i.service.count == 0);
    // Past this many intervals a mark per point and dashes would only add weight
    // to the page (a dash per few pixels of a jagged line): plain lines then.
    let dense = a.intervals.len() > DENSE;
    svg((WIDTH, LATENCY_HEIGHT), |root| {
        let caption = if empty {
            format!("{}: latency per interval (no ops recorded)", a.alias)
        } else {
            format!("{}: latency per interval (log scale)", a.alias)
        };
        let mut chart = ChartBuilder::on(root)
            .caption(caption, (FONT, CAPTION_SIZE))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(72)
            .build_cartesian_2d(x_min..x_max, log_axis(lo, hi))
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("seconds from the first slot")
            .y_desc("latency")
            .y_label_formatter(&|v| units::duration(*v as u64))
            .light_line_style(GRID)
            .label_style((FONT, LABEL_SIZE))
            .axis_desc_style((FONT, AXIS_SIZE))
            .draw()
            .map_err(err)?;
        draw_events(&mut chart, events, lo, hi)?;
        let mut keys = Vec::new();
        let series: [(&str, RGBColor, Pick); 3] = [
            ("service", SERVICE, |i| i.service),
            ("wait", WAIT, |i| i.wait),
            ("response", RESPONSE, |i| i.response),
        ];
        for (name, color, pick) in series {
            for fig in figures {
                let points: Vec<(f64, f64)> = a
                    .intervals
                    .iter()
                    .filter_map(|i| fig.of(&pick(i)).map(|v| ((i.start + i.end) / 2.0, v)))
                    .collect();
                let points = floor_at(points, lo);
                let label = format!("{name} {}", fig.name());
                let style = match fig {
                    Figure::P50 => color.stroke_width(1),
                    Figure::P99 => color.stroke_width(3),
                    Figure::Max if dense => color.mix(0.35).stroke_width(1),
                    Figure::Max => color.mix(0.6).stroke_width(1),
                };
                let dashed = matches!(fig, Figure::Max) && !dense;
                if dashed {
                    chart
                        .draw_series(DashedLineSeries::new(points, 6, 4, style))
                        .map_err(err)?;
                } else {
                    let marks = if dense { 0 } else { 2 };
                    chart
                        .draw_series(LineSeries::new(points, style).point_size(marks))
                        .map_err(err)?;
                }
                keys.push(Key::new(label, style, dashed));
            }
        }
        Ok(keys)
    })
}

/// Percentile spectrum points of `h`: `(1/(1-p), value)`, the largest value at the
/// last rank.
fn spectrum(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    if h.is_empty() {
        return Vec::new();
    }
    let mut points: Vec<(f64, f64)> = h
        .iter_quantiles(4)
        .map(|v| (v.quantile_iterated_to(), v.value_iterated_to()))
        .filter(|(q, _)| *q < 1.0)
        .map(|(q, v)| (1.0 / (1.0 - q), h.highest_equivalent(v) as f64))
        .collect();
    let last = (h.len() as f64).max(points.last().map_or(1.0, |p| p.0));
    points.push((last, h.max() as f64));
    points
}

/// `1/(1-p)` as a percentile: 1 → `0%`, 10 → `90%`, 1000 → `99.9%`; empty between
/// powers of ten.
fn percentile_label(x: f64) -> String {
    let exp = x.log10();
    if x < 1.0 || (exp - exp.round()).abs() > 1e-6 {
        return String::new();
    }
    match exp.round() as i32 {
        0 => "0%".to_string(),
        1 => "90%".to_string(),
        n => format!("99.{}%", "9".repeat((n - 2) as usize)).replace("99.%", "99%"),
    }
}

/// The whole run's response and service percentile spectra, side by side on one
/// plot: where response leaves service behind, ops waited for their slots.
pub fn spectrum_plot(a: &ActivityData) -> PlotResult {
    let curves = [
        ("response", RESPONSE, spectrum(&a.totals.response)),
        ("service", SERVICE, spectrum(&a.totals.service)),
        ("wait", WAIT, spectrum(&a.totals.wait)),
    ];
    let (lo, hi) = latency_range(curves.iter().flat_map(|c| c.2.iter().map(|p| p.1)));
    let x_last = curves
        .iter()
        .flat_map(|c| c.2.iter().map(|p| p.0))
        .fold(100.0, f64::max);
    let x_max = 10f64.powi(x_last.log10().ceil() as i32);
    let empty = curves.iter().all(|c| c.2.is_empty());
    svg((WIDTH, SPECTRUM_HEIGHT), |root| {
        let caption = if empty {
            format!("{}: percentile spectrum (no ops recorded)", a.alias)
        } else {
            format!("{}: percentile spectrum, whole run (log scales)", a.alias)
        };
        let mut chart = ChartBuilder::on(root)
            .caption(caption, (FONT, CAPTION_SIZE))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(72)
            .build_cartesian_2d((1f64..x_max).log_scale(), log_axis(lo, hi))
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("percentile")
            .y_desc("latency")
            .x_label_formatter(&|x| percentile_label(*x))
            .y_label_formatter(&|v| units::duration(*v as u64))
            .light_line_style(GRID)
            .label_style((FONT, LABEL_SIZE))
            .axis_desc_style((FONT, AXIS_SIZE))
            .draw()
            .map_err(err)?;
        let mut keys = Vec::new();
        for (name, color, points) in curves {
            let width = if name == "wait" { 1 } else { 2 };
            let style = color.stroke_width(width);
            chart
                .draw_series(LineSeries::new(floor_at(points, lo), style))
                .map_err(err)?;
            keys.push(Key::new(name, style, false));
        }
        Ok(keys)
    })
}

type Chart<'a, 'b, Y> =
    ChartContext<'a, SVGBackend<'b>, Cartesian2d<plotters::coord::types::RangedCoordf64, Y>>;

/// The rows of event labels at most: past them a label would overlap another
/// and is left out (its line stays; the page lists every event by number).
const EVENT_ROWS: usize = 4;
/// An event label's row height in pixels.
const EVENT_ROW_HEIGHT: i32 = 18;

/// The row of each event label, from pixel x positions (in time order) and
/// label widths: the first row where it clears the label before it, or `None`
/// when every row is taken there. Issue 24 item 20: labels all drawn on one
/// row overlapped when events were close.
pub(super) fn label_rows(at: &[(i32, i32)]) -> Vec<Option<usize>> {
    let mut right_edge = [i32::MIN; EVENT_ROWS];
    at.iter()
        .map(|&(x, width)| {
            let row = right_edge.iter().position(|&r| r + 2 <= x)?;
            right_edge[row] = x + width;
            Some(row)
        })
        .collect()
}

/// The numbered vertical line of each event group, from `lo` to `hi`.
fn draw_events<'a, 'b: 'a, Y>(
    chart: &mut Chart<'a, 'b, Y>,
    events: &[EventGroup],
    lo: f64,
    hi: f64,
) -> Result<(), String>
where
    Y: Ranged<ValueType = f64>,
{
    // A label is its number, about 10 px a digit at 16 px bold, after a space.
    let width = |g: &EventGroup| 6 + 10 * g.number.to_string().len() as i32;
    let placed: Vec<(i32, i32)> = events
        .iter()
        .map(|g| (chart.backend_coord(&(g.at, hi)).0, width(g)))
        .collect();
    let rows = label_rows(&placed);
    for (g, row) in events.iter().zip(rows) {
        let color = event_color(g.kind);
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(g.at, lo), (g.at, hi)],
                color.mix(0.8).stroke_width(1),
            )))
            .map_err(err)?;
        let Some(row) = row else { continue };
        let label = EmptyElement::at((g.at, hi))
            + Text::new(
                format!(" {}", g.number),
                (0, EVENT_ROW_HEIGHT * row as i32),
                (FONT, 16, FontStyle::Bold).into_font().color(&color),
            );
        chart.draw_series(std::iter::once(label)).map_err(err)?;
    }
    Ok(())
}

#[cfg(test)]
#[path = "plots_tests.rs"]
mod tests;
