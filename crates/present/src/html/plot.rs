//! Inline SVG charts for the HTML report, drawn with `plotters`' SVG backend: the axes with
//! the ticks `ticks` chooses, the series, and the legend `legend` lays out below the plot.
//!
//! Titles and axis labels are this module's callers' own words; plotters escapes the text it
//! writes and `legend` escapes entry names (a run's variant may be one), so the SVG can be
//! embedded in the page as it is.

use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::legend::{self, Entry, Mark};
use super::ticks::{ValueFormat, counted_ticks, value_ticks};

/// How one series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Style {
    Line,
    Dashed,
    Dots,
    /// Large, solid points, not joined (a bisection's commits).
    Points,
}

/// A named series of (x, y) points.
#[derive(Debug, Clone)]
pub(super) struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub style: Style,
    pub color: usize,
}

/// A shaded band (x, low, high), e.g. a model's prediction interval.
#[derive(Debug, Clone)]
pub(super) struct Band {
    pub name: String,
    pub points: Vec<(f64, f64, f64)>,
    pub color: usize,
}

/// Vertical error bars (x, low, high) around a series' points.
#[derive(Debug, Clone)]
pub(super) struct ErrorBars {
    pub points: Vec<(f64, f64, f64)>,
    pub color: usize,
}

/// Everything one chart shows.
#[derive(Debug, Clone, Default)]
pub(super) struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    pub bands: Vec<Band>,
    pub error_bars: Vec<ErrorBars>,
    /// Vertical marker lines (x, label), e.g. change points.
    pub markers: Vec<(f64, String)>,
    /// Start the y axis at 0 (rates), rather than at the data's minimum.
    pub y_from_zero: bool,
    /// Ticks of a counted x axis (N, runs) at these values with these labels, sorted; empty:
    /// evenly spaced value ticks.
    pub x_ticks: Vec<(f64, String)>,
}

const PALETTE: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(127, 127, 127),
];

fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// The palette's colour `i` as (r, g, b), for the charts drawn by hand.
pub(super) fn palette_rgb(i: usize) -> (u8, u8, u8) {
    let c = color(i);
    (c.0, c.1, c.2)
}

/// Space left of the plot for the y tick labels and the y axis name.
const Y_LABEL_AREA: u32 = 70;
const MARGIN: u32 = 12;
/// At most this many ticks on a value axis.
const MAX_Y_TICKS: usize = 8;
const MAX_X_TICKS: usize = 10;

/// Renders `chart` as a standalone SVG document string (`width` × `height` pixels, the
/// legend strip included).
pub(super) fn render(chart: &Chart, width: u32, height: u32) -> Result<String, String> {
    let entries = legend_entries(chart);
    let (_, strip) = legend::layout(&entries, f64::from(width));
    let plot_height = height.saturating_sub(strip.ceil() as u32).max(height / 2);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE)
            .map_err(|e| format!("drawing `{}`: {e}", chart.title))?;
        let (plot, _) = root.split_vertically(plot_height);
        draw(&plot, chart, width).map_err(|e| format!("drawing `{}`: {e}", chart.title))?;
        root.present()
            .map_err(|e| format!("drawing `{}`: {e}", chart.title))?;
    }
    if !entries.is_empty() {
        let group = legend::svg(&entries, f64::from(width), f64::from(plot_height));
        let end = svg
            .rfind("</svg>")
            .ok_or_else(|| format!("drawing `{}`: no </svg> in the output", chart.title))?;
        svg.insert_str(end, &group);
    }
    Ok(svg)
}

/// One legend entry per named band and series, when there is more than one thing to tell apart.
fn legend_entries(chart: &Chart) -> Vec<Entry> {
    let rgb = |i: usize| {
        let c = color(i);
        (c.0, c.1, c.2)
    };
    let entries: Vec<Entry> = chart
        .series
        .iter()
        .map(|s| Entry {
            name: s.name.clone(),
            rgb: rgb(s.color),
            mark: match s.style {
                Style::Line => Mark::Line,
                Style::Dashed => Mark::Dashed,
                Style::Dots | Style::Points => Mark::Dot,
            },
        })
        .chain(chart.bands.iter().map(|b| Entry {
            name: b.name.clone(),
            rgb: rgb(b.color),
            mark: Mark::Band,
        }))
        .filter(|e| !e.name.is_empty())
        .collect();
    if entries.len() > 1 {
        entries
    } else {
        Vec::new()
    }
}

fn bounds(chart: &Chart) -> ((f64, f64), (f64, f64)) {
    let xs = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .chain(
            chart
                .bands
                .iter()
                .flat_map(|b| b.points.iter().map(|p| p.0)),
        )
        .chain(chart.markers.iter().map(|m| m.0))
        .chain(chart.x_ticks.iter().map(|t| t.0));
    let ys = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .chain(
            chart
                .bands
                .iter()
                .flat_map(|b| b.points.iter().flat_map(|p| [p.1, p.2])),
        )
        .chain(
            chart
                .error_bars
                .iter()
                .flat_map(|b| b.points.iter().flat_map(|p| [p.1, p.2])),
        );
    let (mut x0, mut x1) = min_max(xs).unwrap_or((0.0, 1.0));
    let (mut y0, mut y1) = min_max(ys).unwrap_or((0.0, 1.0));
    if chart.y_from_zero {
        y0 = y0.min(0.0);
    }
    if x1 <= x0 {
        x0 -= 0.5;
        x1 += 0.5;
    }
    if y1 <= y0 {
        y1 = y0 + y0.abs().max(1.0);
    }
    let pad = (y1 - y0) * 0.08;
    let xpad = (x1 - x0) * 0.04;
    (
        (x0 - xpad, x1 + xpad),
        (
            if chart.y_from_zero && y0 >= 0.0 {
                0.0
            } else {
                y0 - pad
            },
            y1 + pad,
        ),
    )
}

fn min_max(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    values
        .filter(|v| v.is_finite())
        .fold(None, |acc, v| match acc {
            None => Some((v, v)),
            Some((a, b)) => Some((a.min(v), b.max(v))),
        })
}

/// The x ticks (value, label) of `chart` over `x0..x1` on a plot `pixels` wide.
fn x_ticks(chart: &Chart, (x0, x1): (f64, f64), pixels: f64) -> Vec<(f64, String)> {
    if chart.x_ticks.is_empty() {
        let (ticks, step) = value_ticks(x0, x1, MAX_X_TICKS);
        let format = ValueFormat::new(step, x0.abs().max(x1.abs()));
        ticks.into_iter().map(|v| (v, format.label(v))).collect()
    } else {
        counted_ticks(&chart.x_ticks, (x0, x1), pixels)
    }
}

/// A linear axis with ticks exactly where [`ticks`](super::ticks) put them (plotters'
/// `WithKeyPoints` over `f64` cannot take a label formatter).
struct TickedAxis {
    linear: RangedCoordf64,
    ticks: Vec<f64>,
}

impl TickedAxis {
    fn new(range: (f64, f64), ticks: Vec<f64>) -> TickedAxis {
        TickedAxis {
            linear: (range.0..range.1).into(),
            ticks,
        }
    }
}

impl Ranged for TickedAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.linear.map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        // Bold points only: no light grid between the ticks.
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.linear.range()
    }
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

fn draw(area: &Area<'_>, chart: &Chart, width: u32) -> Result<(), Box<dyn std::error::Error>> {
    let ((x0, x1), (y0, y1)) = bounds(chart);
    let plot_px = f64::from(width.saturating_sub(Y_LABEL_AREA + 2 * MARGIN));
    let xt = x_ticks(chart, (x0, x1), plot_px);
    let (yt, y_step) = value_ticks(y0, y1, MAX_Y_TICKS);
    let y_format = ValueFormat::new(y_step, y0.abs().max(y1.abs()));
    let x_label = |v: &f64| {
        xt.iter()
            .find(|t| (t.0 - v).abs() <= 1e-9 * (1.0 + v.abs()))
            .map(|t| t.1.clone())
            .unwrap_or_default()
    };
    let mut ctx = ChartBuilder::on(area)
        .caption(&chart.title, ("sans-serif", 18))
        .margin(MARGIN)
        .x_label_area_size(40)
        .y_label_area_size(Y_LABEL_AREA)
        .build_cartesian_2d(
            TickedAxis::new((x0, x1), xt.iter().map(|t| t.0).collect()),
            TickedAxis::new((y0, y1), yt),
        )?;
    ctx.configure_mesh()
        .x_desc(&chart.x_label)
        .y_desc(&chart.y_label)
        .label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 13))
        .y_label_formatter(&|v| y_format.label(*v))
        .x_label_formatter(&x_label)
        .bold_line_style(RGBColor(225, 225, 225))
        .draw()?;
    for band in &chart.bands {
        let c = color(band.color);
        let mut outline: Vec<(f64, f64)> = band.points.iter().map(|p| (p.0, p.2)).collect();
        outline.extend(band.points.iter().rev().map(|p| (p.0, p.1)));
        ctx.draw_series(std::iter::once(Polygon::new(outline, c.mix(0.15).filled())))?;
    }
    for bars in &chart.error_bars {
        let c = color(bars.color);
        ctx.draw_series(
            bars.points
                .iter()
                .map(|&(x, lo, hi)| PathElement::new(vec![(x, lo), (x, hi)], c.stroke_width(1))),
        )?;
    }
    for s in &chart.series {
        let c = color(s.color);
        match s.style {
            Style::Line => {
                ctx.draw_series(LineSeries::new(s.points.clone(), c.stroke_width(2)))?;
                ctx.draw_series(s.points.iter().map(|&p| Circle::new(p, 3, c.filled())))?;
            }
            Style::Dashed => {
                ctx.draw_series(DashedLineSeries::new(
                    s.points.clone(),
                    6,
                    4,
                    c.stroke_width(1),
                ))?;
            }
            Style::Dots => {
                ctx.draw_series(
                    s.points
                        .iter()
                        .map(|&p| Circle::new(p, 2, c.mix(0.5).filled())),
                )?;
            }
            Style::Points => {
                ctx.draw_series(s.points.iter().map(|&p| Circle::new(p, 4, c.filled())))?;
            }
        }
    }
    for (x, label) in &chart.markers {
        let c = RGBColor(214, 39, 40);
        ctx.draw_series(std::iter::once(PathElement::new(
            vec![(*x, y0), (*x, y1)],
            c.stroke_width(1),
        )))?;
        ctx.draw_series(std::iter::once(Text::new(
            label.clone(),
            (*x, y1),
            ("sans-serif", 12).into_font().color(&c),
        )))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_renders_to_svg_with_its_series() {
        let chart = Chart {
            title: "throughput".into(),
            x_label: "N".into(),
            y_label: "ops/s".into(),
            series: vec![
                Series {
                    name: "measured".into(),
                    points: vec![(1.0, 10.0), (2.0, 18.0)],
                    style: Style::Line,
                    color: 0,
                },
                Series {
                    name: "ideal".into(),
                    points: vec![(1.0, 10.0), (2.0, 20.0)],
                    style: Style::Dashed,
                    color: 5,
                },
            ],
            bands: vec![Band {
                name: "band".into(),
                points: vec![(1.0, 9.0, 11.0), (2.0, 17.0, 21.0)],
                color: 2,
            }],
            error_bars: vec![ErrorBars {
                points: vec![(1.0, 9.5, 10.5)],
                color: 0,
            }],
            markers: vec![(1.5, "cp".into())],
            y_from_zero: true,
            x_ticks: vec![(1.0, "1".into()), (2.0, "2".into())],
        };
        let svg = render(&chart, 400, 300).unwrap();
        assert!(
            svg.starts_with("<svg") && svg.contains("throughput") && svg.contains("<polyline")
                || svg.contains("<path"),
            "{svg}"
        );
        // Degenerate input (one point, no series) still renders.
        assert!(
            render(
                &Chart {
                    title: "empty".into(),
                    ..Chart::default()
                },
                200,
                100
            )
            .is_ok()
        );
    }

    /// The text of every `<text>` element of `svg`.
    fn texts(svg: &str) -> Vec<String> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| {
                let body = &t[t.find('>')? + 1..];
                Some(body[..body.find("</text>")?].trim().to_string())
            })
            .collect()
    }

    /// Every value of attribute `name` (e.g. ` cy="`) in `svg`.
    fn attrs(svg: &str, name: &str) -> Vec<f64> {
        svg.split(name)
            .skip(1)
            .filter_map(|t| t[..t.find('"')?].parse().ok())
            .collect()
    }

    fn pow2_chart() -> Chart {
        let ns = [1.0, 2.0, 4.0, 8.0];
        Chart {
            title: "X".into(),
            x_label: "N".into(),
            y_label: "ops/s".into(),
            series: vec![
                Series {
                    name: "median".into(),
                    points: ns.iter().map(|&n| (n, 1000.0 * n)).collect(),
                    style: Style::Line,
                    color: 0,
                },
                Series {
                    name: "ideal".into(),
                    points: vec![(1.0, 1000.0), (8.0, 8000.0)],
                    style: Style::Dashed,
                    color: 5,
                },
            ],
            y_from_zero: true,
            x_ticks: ns.iter().map(|&n| (n, format!("{n}"))).collect(),
            ..Chart::default()
        }
    }

    #[test]
    fn n_axis_ticks_are_the_measured_n() {
        // The bug: an N axis over 1..2 read 1.00, 1.10, 1.20 … 2.00.
        let svg = render(&pow2_chart(), 560, 360).unwrap();
        let texts = texts(&svg);
        for n in ["1", "2", "4", "8"] {
            assert!(texts.iter().any(|t| t == n), "no tick {n}: {texts:?}");
        }
        for fraction in ["1.5", "1.10", "3", "5", "6", "7"] {
            assert!(
                !texts.iter().any(|t| t == fraction),
                "tick {fraction}: {texts:?}"
            );
        }
        // y ticks read distinctly: no label twice.
        let mut y: Vec<&String> = texts.iter().filter(|t| t.ends_with('k')).collect();
        let before = y.len();
        y.dedup();
        assert!(before >= 4 && y.len() == before, "{texts:?}");
    }

    #[test]
    fn the_legend_lies_below_every_plotted_point() {
        // The bug: plotters' legend box sat in the upper left corner, over the lines.
        let svg = render(&pow2_chart(), 560, 360).unwrap();
        let at = svg.find("<g class=\"legend\"").expect("a legend");
        let (plot, legend) = svg.split_at(at);
        assert!(legend.contains(">median</text>") && legend.contains(">ideal</text>"));
        let legend_top = attrs(legend, " y1=\"")
            .into_iter()
            .chain(attrs(legend, " y=\"").into_iter().map(|y| y - 12.0))
            .fold(f64::INFINITY, f64::min);
        let points: Vec<f64> = attrs(plot, " cy=\"")
            .into_iter()
            .chain(plot.split("points=\"").skip(1).flat_map(|t| {
                t[..t.find('"').unwrap_or(0)]
                    .split_whitespace()
                    .filter_map(|xy| xy.split(',').nth(1)?.parse::<f64>().ok())
                    .collect::<Vec<_>>()
            }))
            .collect();
        assert!(points.len() >= 4, "{plot}");
        for y in points {
            assert!(
                y < legend_top,
                "a point at y={y} is at or below the legend's top {legend_top}"
            );
        }
        // One series needs no legend.
        let mut one = pow2_chart();
        one.series.truncate(1);
        assert!(!render(&one, 560, 360).unwrap().contains("class=\"legend\""));
    }
}
