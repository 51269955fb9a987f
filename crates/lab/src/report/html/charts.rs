//! The charts of a run in the HTML report: throughput with every trial, its interval, the ideal
//! line and the USL fit with its band; speedup and efficiency.

use std::collections::BTreeSet;

use super::plot::{Band, Chart, ErrorBars, Series, Style};
use crate::analysis::RunSummary;
use crate::record::RunData;
use crate::report::format::sig3;

pub(super) fn throughput_chart(run: &RunData, s: &RunSummary) -> Chart {
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
    let trials: Vec<(f64, f64)> = run
        .trials
        .iter()
        .filter_map(|t| {
            t.outcome
                .measurement()
                .map(|m| (f64::from(t.n), m.ops_per_sec()))
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
                points: trials.clone(),
                style: Style::Dots,
                color: 0,
            },
        ],
        error_bars: vec![ErrorBars {
            points: bars,
            color: 0,
        }],
        y_from_zero: true,
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
    let distinct: BTreeSet<u32> = run
        .trials
        .iter()
        .filter(|t| t.outcome.measurement().is_some())
        .map(|t| t.n)
        .collect();
    if distinct.len() >= 4 {
        if let Ok(fit) = stats::fit_usl(&trials) {
            let grid: Vec<f64> = (0..=60)
                .map(|i| 1.0 + (max_n - 1.0) * f64::from(i) / 60.0)
                .collect();
            let predictions: Vec<_> = grid.iter().map(|&n| fit.predict(n)).collect();
            chart.series.push(Series {
                name: format!(
                    "USL σ={} κ={}",
                    sig3(fit.sigma.point),
                    sig3(fit.kappa.point)
                ),
                points: predictions.iter().map(|p| (p.n, p.x.point)).collect(),
                style: Style::Line,
                color: 2,
            });
            chart.bands.push(Band {
                name: "USL 95% band".into(),
                points: predictions
                    .iter()
                    .map(|p| (p.n, p.x.lower, p.x.upper))
                    .collect(),
                color: 2,
            });
        }
    }
    chart
}

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
        ..Chart::default()
    };
    (speedup_chart, efficiency_chart)
}
