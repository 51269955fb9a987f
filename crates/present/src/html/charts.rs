//! The charts of a run in the HTML report: throughput with every trial, its interval, the ideal
//! line and the USL fit with its band; speedup and efficiency, each with a tick at every
//! measured N. Draws the figures `analysis::report_data` derived; fits nothing.

use std::collections::BTreeSet;

use analysis::report_data::RunReport;
use analysis::summary::RunSummary;
use model::number_text::sig3;

use super::plot::{Band, Chart, ErrorBars, Series, Style};

/// The ticks of an N axis: one at each measured N, labelled with it.
pub(super) fn n_ticks(measured: impl IntoIterator<Item = u32>) -> Vec<(f64, String)> {
    measured
        .into_iter()
        .collect::<BTreeSet<u32>>()
        .into_iter()
        .map(|n| (f64::from(n), n.to_string()))
        .collect()
}

fn measured_n(s: &RunSummary) -> Vec<(f64, String)> {
    n_ticks(s.points.iter().map(|p| p.n))
}

/// Throughput X(N): medians with their intervals, every trial, the ideal line, the USL curve.
pub(super) fn throughput_chart(run: &RunReport) -> Chart {
    let s = &run.summary;
    let measured: Vec<(f64, f64)> = s
        .points
        .iter()
        .filter_map(|p| p.throughput.map(|t| (f64::from(p.n), t.point)))
        .collect();
    let bars = s
        .points
        .iter()
        .filter_map(|p| {
            p.throughput
                .filter(|t| t.level > 0.0)
                .map(|t| (f64::from(p.n), t.lower, t.upper))
        })
        .collect();
    let mut chart = Chart {
        title: "Throughput X(N)".into(),
        x_label: "N (tasks)".into(),
        y_label: "ops/s".into(),
        series: vec![
            Series {
                name: "median".into(),
                points: measured,
                style: Style::Line,
                color: 0,
            },
            Series {
                name: "trials".into(),
                points: run.trials.clone(),
                style: Style::Dots,
                color: 0,
            },
        ],
        error_bars: vec![ErrorBars {
            points: bars,
            color: 0,
        }],
        y_from_zero: true,
        x_ticks: measured_n(s),
        // The first N past each topology boundary, as analysis placed them (`↑ 2nd socket`).
        markers: s
            .boundaries
            .iter()
            .map(|mark| {
                let text: Vec<String> = mark.crossed.iter().map(ToString::to_string).collect();
                (f64::from(mark.n), text.join(" "))
            })
            .collect(),
        ..Chart::default()
    };
    let max_n = s.points.iter().map(|p| f64::from(p.n)).fold(1.0, f64::max);
    if let Some(x1) = s
        .points
        .iter()
        .find(|p| p.n == 1)
        .and_then(|p| p.throughput)
    {
        chart.series.push(Series {
            name: "ideal N·X(1)".into(),
            points: vec![(1.0, x1.point), (max_n, x1.point * max_n)],
            style: Style::Dashed,
            color: 5,
        });
    }
    if let Some(usl) = &run.usl {
        let fit = &usl.fit;
        chart.series.push(Series {
            name: format!(
                "USL σ={} κ={}",
                sig3(fit.sigma.point),
                sig3(fit.kappa.point)
            ),
            points: usl.curve.iter().map(|p| (p.n, p.x.point)).collect(),
            style: Style::Line,
            color: 2,
        });
        chart.bands.push(Band {
            name: "USL 95% band".into(),
            points: usl
                .curve
                .iter()
                .map(|p| (p.n, p.x.lower, p.x.upper))
                .collect(),
            color: 2,
        });
    }
    chart
}

/// Speedup S(N) and efficiency S(N)/N, each beside its ideal line.
pub(super) fn scaling_charts(s: &RunSummary) -> (Chart, Chart) {
    let speedup: Vec<(f64, f64)> = s
        .points
        .iter()
        .filter_map(|p| p.speedup.map(|v| (f64::from(p.n), v)))
        .collect();
    let efficiency: Vec<(f64, f64)> = s
        .points
        .iter()
        .filter_map(|p| p.efficiency.map(|v| (f64::from(p.n), v)))
        .collect();
    let max_n = speedup.iter().map(|p| p.0).fold(1.0, f64::max);
    let speedup_chart = Chart {
        title: "Speedup S(N) = X(N)/X(1)".into(),
        x_label: "N (tasks)".into(),
        y_label: "S(N)".into(),
        series: vec![
            Series {
                name: "S(N)".into(),
                points: speedup,
                style: Style::Line,
                color: 0,
            },
            Series {
                name: "ideal S = N".into(),
                points: vec![(1.0, 1.0), (max_n, max_n)],
                style: Style::Dashed,
                color: 5,
            },
        ],
        y_from_zero: true,
        x_ticks: measured_n(s),
        ..Chart::default()
    };
    let efficiency_chart = Chart {
        title: "Efficiency S(N)/N".into(),
        x_label: "N (tasks)".into(),
        y_label: "S/N".into(),
        series: vec![
            Series {
                name: "S/N".into(),
                points: efficiency,
                style: Style::Line,
                color: 3,
            },
            Series {
                name: "ideal 1.0".into(),
                points: vec![(1.0, 1.0), (max_n, 1.0)],
                style: Style::Dashed,
                color: 5,
            },
        ],
        y_from_zero: true,
        x_ticks: measured_n(s),
        ..Chart::default()
    };
    (speedup_chart, efficiency_chart)
}
