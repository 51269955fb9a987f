//! Inline SVG charts for the HTML report, drawn with `plotters`' SVG backend.
//!
//! Charts only ever carry numbers and labels this module's callers choose (never user-provided
//! text), so the SVG can be embedded in the page as it is.

use plotters::prelude::*;

/// How one series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Style {
    Line,
    Dashed,
    Dots,
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

/// Renders `chart` as a standalone SVG document string (`width` × `height` pixels).
pub(super) fn render(chart: &Chart, width: u32, height: u32) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        draw(&root, chart).map_err(|e| format!("drawing `{}`: {e}", chart.title))?;
        root.present()
            .map_err(|e| format!("drawing `{}`: {e}", chart.title))?;
    }
    Ok(svg)
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
        .chain(chart.markers.iter().map(|m| m.0));
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

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

fn draw(root: &Area<'_>, chart: &Chart) -> Result<(), Box<dyn std::error::Error>> {
    root.fill(&WHITE)?;
    let ((x0, x1), (y0, y1)) = bounds(chart);
    let mut ctx = ChartBuilder::on(root)
        .caption(&chart.title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(x0..x1, y0..y1)?;
    ctx.configure_mesh()
        .x_desc(&chart.x_label)
        .y_desc(&chart.y_label)
        .y_label_formatter(&|v| lab::number_text::si(*v))
        .x_label_formatter(&|v| lab::number_text::sig3(*v))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()?;
    for band in &chart.bands {
        let c = color(band.color);
        let mut outline: Vec<(f64, f64)> = band.points.iter().map(|p| (p.0, p.2)).collect();
        outline.extend(band.points.iter().rev().map(|p| (p.0, p.1)));
        ctx.draw_series(std::iter::once(Polygon::new(outline, c.mix(0.15).filled())))?
            .label(band.name.clone())
            .legend(move |(x, y)| {
                Rectangle::new([(x, y - 5), (x + 16, y + 5)], c.mix(0.15).filled())
            });
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
                ctx.draw_series(LineSeries::new(s.points.clone(), c.stroke_width(2)))?
                    .label(s.name.clone())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(2))
                    });
                ctx.draw_series(s.points.iter().map(|&p| Circle::new(p, 3, c.filled())))?;
            }
            Style::Dashed => {
                ctx.draw_series(DashedLineSeries::new(
                    s.points.clone(),
                    6,
                    4,
                    c.stroke_width(1),
                ))?
                .label(s.name.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(1))
                });
            }
            Style::Dots => {
                ctx.draw_series(
                    s.points
                        .iter()
                        .map(|&p| Circle::new(p, 2, c.mix(0.5).filled())),
                )?
                .label(s.name.clone())
                .legend(move |(x, y)| Circle::new((x + 8, y), 2, c.mix(0.5).filled()));
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
    if chart.series.len() + chart.bands.len() > 1 {
        ctx.configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .position(SeriesLabelPosition::UpperLeft)
            .draw()?;
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
}
