//! The comparison at the top of a report of several runs: every run's throughput curve in one
//! chart (medians with their intervals), then each comparison's verdict line, warnings and
//! per-N table (verdict, change and its interval).

use lab::analysis::comparison::{Comparison, RunRef};
use lab::analysis::report_data::RunReport;
use lab::number_text::si;

use super::charts::n_ticks;
use super::page::{ComparisonSection, Table};
use super::plot::{Chart, ErrorBars, Series, Style};

/// How a run is named in the comparison's chart and headings: its id with its variant, else
/// its name.
pub(super) fn run_label(id: i64, variant: Option<&str>, name: Option<&str>) -> String {
    match variant.or(name) {
        Some(v) => format!("run {id} · {v}"),
        None => format!("run {id}"),
    }
}

fn side(r: &RunRef, letter: &str) -> String {
    let label = run_label(r.id, r.variant.as_deref(), r.name.as_deref());
    format!("{label} ({letter})")
}

/// Every run's median throughput per N with its interval, one colour per run.
pub(super) fn runs_chart(runs: &[RunReport]) -> Chart {
    let mut chart = Chart {
        title: "Throughput X(N) of every run".into(),
        x_label: "N (tasks)".into(),
        y_label: "ops/s".into(),
        y_from_zero: true,
        ..Chart::default()
    };
    let mut measured = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        // The grey of the palette (5) is kept for reference lines.
        let color = i % 5;
        let points = &run.summary.points;
        measured.extend(
            points
                .iter()
                .filter(|p| p.throughput.is_some())
                .map(|p| p.n),
        );
        chart.series.push(Series {
            name: run_label(
                run.meta.id,
                run.meta.variant.as_deref(),
                run.meta.name.as_deref(),
            ),
            points: points
                .iter()
                .filter_map(|p| p.throughput.map(|t| (f64::from(p.n), t.point)))
                .collect(),
            style: Style::Line,
            color,
        });
        chart.error_bars.push(ErrorBars {
            points: points
                .iter()
                .filter_map(|p| {
                    p.throughput
                        .filter(|t| t.level > 0.0)
                        .map(|t| (f64::from(p.n), t.lower, t.upper))
                })
                .collect(),
            color,
        });
    }
    chart.x_ticks = n_ticks(measured);
    chart
}

/// One comparison's section: the verdict line, the mismatches and warnings, the table per N.
pub(super) fn comparison_section(comparison: &Comparison) -> ComparisonSection {
    let rows = comparison
        .points
        .iter()
        .map(|p| match &p.change {
            Some(c) => vec![
                p.n.to_string(),
                format!("{} / {}", p.runs_a, p.runs_b),
                si(c.median_a),
                si(c.median_b),
                format!("{:+.2}%", c.relative * 100.0),
                format!(
                    "{:+.2}% .. {:+.2}%",
                    c.relative_shift.lower * 100.0,
                    c.relative_shift.upper * 100.0
                ),
                format!("{:.3}", c.p_value),
                c.verdict.to_string(),
            ],
            None => vec![
                p.n.to_string(),
                format!("{} / {}", p.runs_a, p.runs_b),
                "n/a".into(),
                "n/a".into(),
                "n/a".into(),
                "n/a".into(),
                "n/a".into(),
                p.note.clone().unwrap_or_default(),
            ],
        })
        .collect();
    let mut warnings: Vec<String> = comparison
        .mismatches
        .iter()
        .map(|m| format!("not comparable: {m}"))
        .collect();
    warnings.extend(comparison.warnings.iter().map(ToString::to_string));
    ComparisonSection {
        title: format!(
            "{} against {}",
            side(&comparison.b, "B"),
            side(&comparison.a, "A")
        ),
        verdict: comparison.summary.verdict.to_string(),
        summary: format!(
            "{} ({} is better) · threshold ±{}%, alpha {}",
            comparison.metric.name,
            if comparison.metric.direction == stats::Direction::HigherIsBetter {
                "higher"
            } else {
                "lower"
            },
            comparison.options.threshold * 100.0,
            comparison.options.alpha
        ),
        warnings,
        table: Table {
            caption: if comparison.paired {
                "Per N: medians, relative change; paired (the trials ran in back-to-back A/B pairs): Hodges-Lehmann interval of the per-pair changes, Wilcoxon signed-rank p, verdict"
            } else {
                "Per N: medians, relative change, Hodges-Lehmann shift interval, Mann-Whitney p, verdict"
            }
            .into(),
            headers: [
                "N",
                "trials A/B",
                "median A",
                "median B",
                "change",
                "shift CI",
                "p",
                "verdict",
            ]
            .map(String::from)
            .to_vec(),
            rows,
            left_columns: 0,
            empty: "No task count was measured by both runs: nothing to compare.".into(),
        },
    }
}
