//! The comparison at the top of a report of several runs: every run's throughput curve in one
//! chart (medians with their intervals), then each comparison's verdict line, warnings and
//! per-N table (verdict, change and its interval).

use analysis::comparison::{Comparison, RunRef};
use analysis::report_data::RunReport;
use model::number_text::si;

use super::charts::n_ticks;
use super::page::{ComparisonSection, Table};
use super::plot::{Chart, ErrorBars, Series, Style};

/// How far apart the runs' points at one N are drawn, as a share of the N axis.
const DODGE: f64 = 0.012;

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

/// Every run's median throughput per N with its interval, one colour per run; the runs' points
/// at one N are set a hair apart, the tick stays at N.
pub(super) fn runs_chart(runs: &[RunReport]) -> Chart {
    let mut chart = Chart {
        title: "Throughput X(N) of every run".into(),
        x_label: "N (tasks)".into(),
        y_label: "ops/s".into(),
        y_from_zero: true,
        ..Chart::default()
    };
    let mut measured = Vec::new();
    let ns = runs
        .iter()
        .flat_map(|r| r.summary.points.iter().map(|p| f64::from(p.n)));
    let span = ns.clone().fold(f64::MIN, f64::max) - ns.fold(f64::MAX, f64::min);
    for (i, run) in runs.iter().enumerate() {
        // The grey of the palette (5) is kept for reference lines.
        let color = i % 5;
        let points = &run.summary.points;
        // Each run's points sit a hair apart at the same N, so no interval hides another.
        let dodge = (i as f64 - (runs.len() - 1) as f64 / 2.0) * DODGE * span.max(1.0);
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
                .filter_map(|p| p.throughput.map(|t| (f64::from(p.n) + dodge, t.point)))
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
                        .map(|t| (f64::from(p.n) + dodge, t.lower, t.upper))
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

#[cfg(test)]
mod tests {
    use analysis::report_data::ReportData;
    use lab::test_runs::run;
    use stats::CompareOptions;

    use super::*;

    #[test]
    fn every_run_is_one_curve_and_no_interval_hides_another_at_the_same_n() {
        let points: [(u32, &[f64]); 3] = [
            (1, &[100.0, 110.0, 120.0]),
            (2, &[190.0, 200.0, 210.0]),
            (4, &[350.0, 380.0, 400.0]),
        ];
        let runs = [run(1, "spin", &points), run(2, "spin", &points)];
        let data = ReportData::from_runs(&runs, None, &CompareOptions::default());
        let chart = runs_chart(&data.runs);
        assert_eq!(chart.series.len(), 2);
        assert_eq!(
            chart.x_ticks,
            [(1.0, "1".into()), (2.0, "2".into()), (4.0, "4".into())]
        );
        let (a, b) = (&chart.error_bars[0].points, &chart.error_bars[1].points);
        assert_eq!(a.len(), 3);
        for (pa, pb) in a.iter().zip(b) {
            assert!(
                pa.0 < pb.0,
                "run 1's interval is drawn left of run 2's: {pa:?} {pb:?}"
            );
            assert!((pa.0.round() - pa.0).abs() < 0.1 && pa.0.round() == pb.0.round());
        }
        // The curve's points sit where their interval does.
        assert_eq!(chart.series[1].points[0].0, b[0].0);
    }
}
