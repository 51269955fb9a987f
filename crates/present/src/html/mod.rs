//! The self-contained HTML report (`scalelab report`): one file, no network, no external
//! scripts or fonts.
//!
//! [`render`] turns a [`ReportData`] — assembled by `lab::analysis::report_data`, which loaded
//! the profiles and computed every statistic — into a page of strings, tables and inline SVG
//! charts, then fills the `minijinja` templates with it, escaping every string (auto-escape
//! for `.html` templates); only chart SVG drawn by `plot.rs` from numbers is inserted as markup.
//!
//! Its parts, imported one way: `page.rs` (what the templates fill) and `plot.rs` (SVG from
//! numbers) import nothing of the others; `charts.rs` draws with `plot`; `attribution.rs`
//! (profile and lock tables, the flame graph) fills `page` tables; `run_section.rs` uses
//! those; this module adds the comparisons and the history and fills the templates.

mod attribution;
mod charts;
mod page;
mod plot;
mod run_section;

use lab::analysis::comparison::Comparison;
use lab::analysis::history::History;
use lab::analysis::report_data::ReportData;
use lab::number_text::si;
use minijinja::Environment;

use self::page::{ComparisonSection, HistorySection, Page, Table};
use self::plot::{Chart, Series, Style};
use self::run_section::run_section;
use crate::error::PresentError;

/// Renders the report of `data`, headed `title`, into one HTML document.
pub fn render(data: &ReportData, title: &str) -> Result<String, PresentError> {
    let page = Page {
        title: title.to_string(),
        tool_version: data.tool_version.clone(),
        generated_at: data.generated_at.clone(),
        runs: data
            .runs
            .iter()
            .map(run_section)
            .collect::<Result<_, _>>()?,
        comparisons: data.comparisons.iter().map(comparison_section).collect(),
        history: data.history.as_ref().map(history_section).transpose()?,
    };
    fill(&page)
}

/// Fills the templates with the page.
fn fill(page: &Page) -> Result<String, PresentError> {
    let mut env = Environment::new();
    let template_error = |e: minijinja::Error| PresentError::Template(format!("{e:#}"));
    env.add_template("report.html", include_str!("report.html"))
        .map_err(template_error)?;
    env.add_template("table.html", include_str!("table.html"))
        .map_err(template_error)?;
    env.add_global(
        "verdicts",
        minijinja::Value::from(minijinja::value::Serde(["REGRESSED", "IMPROVED"])),
    );
    env.get_template("report.html")
        .and_then(|t| t.render(minijinja::value::Serde(page)))
        .map_err(template_error)
}

/// One comparison's section: the verdict line, the mismatches and warnings, the table per N.
fn comparison_section(comparison: &Comparison) -> ComparisonSection {
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
        title: format!("Run {} (B) against run {} (A)", comparison.b.id, comparison.a.id),
        summary: format!(
            "{} · {} ({} is better) · threshold ±{}%, alpha {}",
            comparison.summary.verdict,
            comparison.metric.name,
            if comparison.metric.direction == stats::Direction::HigherIsBetter { "higher" } else { "lower" },
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
            headers: ["N", "trials A/B", "median A", "median B", "change", "shift CI", "p", "verdict"].map(String::from).to_vec(),
            rows,
            left_columns: 0,
        },
    }
}

/// The history's section: the series as a chart with its change points, and their table.
fn history_section(h: &History) -> Result<HistorySection, PresentError> {
    let chart = Chart {
        title: format!("{} at N={} by run", h.metric.name(), h.at),
        x_label: "run (oldest first)".into(),
        y_label: h.metric.name().into(),
        series: vec![Series {
            name: h.metric.name().into(),
            points: h
                .points
                .iter()
                .enumerate()
                .map(|(i, p)| (i as f64 + 1.0, p.value))
                .collect(),
            style: Style::Line,
            color: 0,
        }],
        markers: h
            .changes
            .iter()
            .map(|c| (c.index as f64 + 0.5, format!("{:+.1}%", c.relative * 100.0)))
            .collect(),
        ..Chart::default()
    };
    let rows = h
        .changes
        .iter()
        .map(|c| {
            vec![
                c.run.to_string(),
                format!("{:+.2}%", c.relative * 100.0),
                format!("{:.2e}", c.p_value),
                format!("{} ± {}", si(c.mean_before), si(c.sd_before)),
                format!("{} ± {}", si(c.mean_after), si(c.sd_after)),
                if c.regression {
                    "REGRESSED".into()
                } else {
                    "IMPROVED".into()
                },
            ]
        })
        .collect();
    Ok(HistorySection {
        summary: format!(
            "{} of {}; {}; the newest segment {}.",
            lab::number_text::plural(h.points.len(), "run"),
            h.workload,
            lab::number_text::plural(h.changes.len(), "change point"),
            if h.newest_regressed {
                "is a REGRESSION"
            } else {
                "is not a regression"
            }
        ),
        chart: plot::render(&chart, 900, 320).map_err(PresentError::Chart)?,
        table: Table {
            caption: "Change points (at the first run of the new segment)".into(),
            headers: ["run", "change", "p", "before", "after", "direction"]
                .map(String::from)
                .to_vec(),
            rows,
            left_columns: 0,
        },
    })
}

#[cfg(test)]
mod tests {
    use lab::analysis::history::{self, Metric};
    use lab::test_runs::run;
    use stats::{ChangePointOptions, CompareOptions};

    use super::*;

    fn usl(n: f64) -> f64 {
        1000.0 * n / (1.0 + 0.05 * (n - 1.0) + 0.002 * n * (n - 1.0))
    }

    #[test]
    fn the_page_shows_every_section_of_the_data_and_escapes_user_text() {
        let rows: Vec<(u32, Vec<f64>)> = [1u32, 2, 4, 8]
            .iter()
            .map(|&n| (n, vec![usl(f64::from(n)) * 1.01, usl(f64::from(n)) * 0.99]))
            .collect();
        let points: Vec<(u32, &[f64])> = rows.iter().map(|(n, v)| (*n, v.as_slice())).collect();
        let mut runs = vec![run(1, "spin", &points), run(2, "spin", &points)];
        runs[1].meta.name = Some("<script>alert(1)</script>".into());
        let h = history::build(
            "spin",
            &runs,
            8,
            Metric::Throughput,
            &ChangePointOptions::default(),
        );
        let data = ReportData::from_runs(&runs, Some(h), &CompareOptions::default());
        let page = render(&data, "spin & co").unwrap();
        assert!(page.starts_with("<!DOCTYPE html>"), "{page}");
        for needle in [
            "<title>spin &amp; co</title>",
            "Run 1",
            "Throughput X(N)",
            "USL σ=",
            "Run 2 (B) against run 1 (A)",
            "<h2>History</h2>",
            "&lt;script&gt;alert(1)&lt;&#x2f;script&gt;",
        ] {
            assert!(page.contains(needle), "{needle} missing");
        }
        assert!(!page.contains("<script>alert(1)"));
    }
}
