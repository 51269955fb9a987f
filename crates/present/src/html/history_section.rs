//! The history at the end of a report: the metric at one N across stored runs, drawn from zero
//! (so a change too small to matter is not drawn as a cliff) with a tick per run and the
//! change points marked, and the change points' table (one line when there are none).

use analysis::history::History;
use model::number_text::{relative_change, si};

use super::page::{HistorySection, Table};
use super::plot::{self, Chart, Series, Style};
use crate::error::PresentError;

/// The history's chart: one point per run, x ticks labelled with the run ids.
pub(super) fn history_chart(h: &History) -> Chart {
    let metric = h.metric.name();
    let mut initial = metric.chars();
    let capitalized: String = initial
        .next()
        .map(|c| c.to_uppercase().chain(initial).collect())
        .unwrap_or_default();
    Chart {
        title: format!("{capitalized} at N={} by run", h.at),
        x_label: "run id (oldest first)".into(),
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
            .map(|c| (c.index as f64 + 0.5, relative_change(c.relative)))
            .collect(),
        y_from_zero: true,
        x_ticks: h
            .points
            .iter()
            .enumerate()
            .map(|(i, p)| (i as f64 + 1.0, p.run.to_string()))
            .collect(),
        ..Chart::default()
    }
}

/// The history's section: the series as a chart with its change points, and their table.
pub(super) fn history_section(h: &History) -> Result<HistorySection, PresentError> {
    let rows = h
        .changes
        .iter()
        .map(|c| {
            vec![
                c.run.to_string(),
                relative_change(c.relative),
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
    let runs = h.points.len();
    Ok(HistorySection {
        summary: format!(
            "{runs} {} of {}; {} change {}; the newest segment {}.",
            if runs == 1 { "run" } else { "runs" },
            h.workload,
            h.changes.len(),
            if h.changes.len() == 1 {
                "point"
            } else {
                "points"
            },
            if !h.judged {
                "cannot be judged: too few runs"
            } else if h.newest_regressed {
                "is a REGRESSION"
            } else {
                "is not a regression"
            }
        ),
        chart: plot::render(&history_chart(h), 900, 320).map_err(PresentError::Chart)?,
        table: Table {
            caption: "Change points (at the first run of the new segment)".into(),
            headers: ["run", "change", "p", "before", "after", "direction"]
                .map(String::from)
                .to_vec(),
            rows,
            left_columns: 0,
            empty: if runs == 1 {
                "No change points: one run.".into()
            } else {
                format!("No change points: the {runs} runs form one segment.")
            },
        },
    })
}

#[cfg(test)]
mod tests {
    use analysis::history::{self, Metric};
    use lab::test_runs::run;
    use stats::ChangePointOptions;

    use super::*;

    #[test]
    fn a_history_within_a_fraction_of_a_percent_is_drawn_from_zero_not_as_a_cliff() {
        // The bug: three runs within 0.2% of 12.0M filled the chart's height, ticked ten
        // times `12.0M`, and a 0.2% step looked like a cliff.
        let runs: Vec<_> = [12.00e6, 12.01e6, 12.02e6]
            .iter()
            .enumerate()
            .map(|(i, &x)| run(i as i64 + 7, "spin", &[(2, &[x, x])]))
            .collect();
        let h = history::build(
            "spin",
            &runs,
            2,
            Metric::Throughput,
            &ChangePointOptions::default(),
        );
        let svg = plot::render(&history_chart(&h), 900, 320).unwrap();
        let texts: Vec<&str> = svg
            .split("<text")
            .skip(1)
            .filter_map(|t| {
                let body = &t[t.find('>')? + 1..];
                Some(body[..body.find("</text>")?].trim())
            })
            .collect();
        assert!(texts.contains(&"0"), "the y axis starts at 0: {texts:?}");
        let millions: Vec<&&str> = texts.iter().filter(|t| t.ends_with('M')).collect();
        let mut distinct = millions.clone();
        distinct.dedup();
        assert!(
            millions.len() >= 3 && distinct.len() == millions.len(),
            "{texts:?}"
        );
        // The x axis names the runs.
        for id in ["7", "8", "9"] {
            assert!(texts.contains(&id), "no tick for run {id}: {texts:?}");
        }
    }
}
