//! The self-contained HTML report: one file, no network, no external scripts or fonts.
//!
//! [`build`] turns runs (and optionally a history) into a serialisable view-model of strings,
//! tables and inline SVG charts; [`render`] fills the `minijinja` templates with it, escaping
//! every string (auto-escape for `.html` templates) — only chart SVG drawn by [`plot`] from
//! numbers is inserted as markup. Profile and lock sections are added by their modules through
//! the public fields of [`RunView`].

mod charts;
pub mod plot;
mod sections;

use minijinja::Environment;
use serde::Serialize;
use stats::CompareOptions;

use self::plot::{Chart, Series, Style};
use super::compare_view;
use super::format::{si, time_line};
use crate::analysis::{self, RunSummary};
use crate::error::LabError;
use crate::history::History;
use crate::record::RunData;

/// A table of already-formatted cells.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Table {
    pub caption: String,
    pub headers: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// The first `left_columns` columns hold text and are left-aligned.
    pub left_columns: usize,
}

/// An interactive flame graph (inferno SVG with its script), shown in a sandboxed frame.
#[derive(Debug, Clone, Serialize)]
pub struct Flame {
    pub title: String,
    pub svg: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunView {
    pub id: i64,
    pub name: Option<String>,
    pub description: String,
    pub workload: String,
    pub op_unit: String,
    pub params: Vec<(String, String)>,
    pub variant: Option<String>,
    pub tags: Vec<(String, String)>,
    pub status: String,
    pub started_at: String,
    pub command_line: String,
    pub warnings: Vec<String>,
    pub scales_to: String,
    /// Inline SVG documents drawn by [`plot`].
    pub charts: Vec<String>,
    pub tables: Vec<Table>,
    pub flamegraphs: Vec<Flame>,
    pub environment: Vec<(String, String)>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ComparisonView {
    pub title: String,
    pub summary: String,
    pub warnings: Vec<String>,
    pub table: Table,
}

#[derive(Debug, Clone, Serialize)]
pub struct HistoryView {
    pub summary: String,
    pub chart: String,
    pub table: Table,
}

#[derive(Debug, Clone, Serialize)]
pub struct ReportView {
    pub title: String,
    pub tool_version: String,
    pub generated_at: String,
    pub runs: Vec<RunView>,
    pub comparisons: Vec<ComparisonView>,
    pub history: Option<HistoryView>,
}

/// Builds the report of `runs` (the first is the baseline of every comparison).
pub fn build(
    title: &str,
    runs: &[RunData],
    history: Option<&History>,
    opts: &CompareOptions,
) -> Result<ReportView, LabError> {
    let mut views = Vec::new();
    for run in runs {
        views.push(run_view(run)?);
    }
    let comparisons = runs
        .iter()
        .skip(1)
        .map(|b| comparison_view(&runs[0], b, opts))
        .collect();
    let history = history.map(history_view).transpose()?;
    Ok(ReportView {
        title: title.to_string(),
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        generated_at: crate::timestamp::now_rfc3339(),
        runs: views,
        comparisons,
        history,
    })
}

/// Renders the view-model into one HTML document.
pub fn render(view: &ReportView) -> Result<String, LabError> {
    let mut env = Environment::new();
    let template_error = |e: minijinja::Error| LabError::Internal(format!("HTML template: {e:#}"));
    env.add_template("report.html", include_str!("report.html"))
        .map_err(template_error)?;
    env.add_template("table.html", include_str!("table.html"))
        .map_err(template_error)?;
    env.add_global(
        "verdicts",
        minijinja::Value::from(minijinja::value::Serde(["REGRESSED", "IMPROVED"])),
    );
    env.get_template("report.html")
        .and_then(|t| t.render(minijinja::value::Serde(view)))
        .map_err(template_error)
}

fn run_view(run: &RunData) -> Result<RunView, LabError> {
    let meta = &run.meta;
    let summary = analysis::summarize(run);
    let mut warnings: Vec<String> = summary.warnings.iter().map(ToString::to_string).collect();
    warnings.extend(meta.warnings.iter().cloned());
    let scales_to = match summary.scales_to {
        Some(s) => format!("Scales to {:.2} out of {} CPUs.", s.speedup, s.n),
        None => "Scaling n/a: needs a successful N=1 point and one more.".into(),
    };
    let chart_error = LabError::Internal;
    let mut charts = vec![
        plot::render(&charts::throughput_chart(run, &summary), 560, 360).map_err(chart_error)?,
    ];
    if summary.points.iter().any(|p| p.speedup.is_some()) {
        let (speedup, efficiency) = charts::scaling_charts(&summary);
        charts.push(plot::render(&speedup, 560, 360).map_err(chart_error)?);
        charts.push(plot::render(&efficiency, 560, 360).map_err(chart_error)?);
    }
    let environment = match serde_json::to_value(&meta.env) {
        Ok(serde_json::Value::Object(map)) => map
            .into_iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| {
                (
                    k,
                    match v {
                        serde_json::Value::String(s) => s,
                        other => other.to_string(),
                    },
                )
            })
            .collect(),
        _ => Vec::new(),
    };
    let mut tables = vec![points_table(&summary)];
    let mut flamegraphs = Vec::new();
    if run
        .trials
        .iter()
        .any(|t| t.outcome.measurement().is_some_and(|m| m.profile.is_some()))
    {
        match crate::profile::load_run(run) {
            Ok(points) => {
                sections::profile_sections(&points, &mut tables, &mut flamegraphs, &mut warnings)
            }
            Err(e) => warnings.push(format!("profiles not shown: {e}")),
        }
    }
    if run
        .trials
        .iter()
        .any(|t| t.outcome.measurement().is_some_and(|m| m.locks.is_some()))
    {
        sections::lock_sections(run, &mut tables, &mut warnings);
    }
    Ok(RunView {
        id: meta.id,
        name: meta.name.clone(),
        description: super::term::header(meta),
        workload: meta.workload.clone(),
        op_unit: meta.op_unit.clone(),
        params: meta
            .params
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        variant: meta.variant.clone(),
        tags: meta
            .tags
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        status: meta.status.to_string(),
        started_at: meta.started_at.clone(),
        command_line: meta.command_line.clone(),
        warnings,
        scales_to,
        charts,
        tables,
        flamegraphs,
        environment,
    })
}

fn points_table(s: &RunSummary) -> Table {
    let headers = [
        "N",
        "trials",
        "ops/s",
        "95% CI",
        "ops/CPU-s",
        "ns/op/task",
        "S(N)",
        "S/N",
        "time (user sys wall CPU%)",
        "minflt",
        "vcsw",
        "ivcsw",
        "runq wait",
    ];
    let rows = s
        .points
        .iter()
        .map(|p| {
            let opt = |v: Option<f64>| v.map_or_else(|| "n/a".to_string(), si);
            vec![
                p.n.to_string(),
                if p.trials_failed > 0 {
                    format!("{} ({} failed)", p.trials_ok, p.trials_failed)
                } else {
                    p.trials_ok.to_string()
                },
                opt(p.throughput.map(|e| e.point)),
                p.throughput.map_or_else(
                    || "n/a".into(),
                    |e| format!("{}..{} ({:.0}%)", si(e.lower), si(e.upper), e.level * 100.0),
                ),
                opt(p.ops_per_cpu_sec),
                opt(p.ns_per_op_per_task),
                p.speedup
                    .map_or_else(|| "n/a".into(), |v| format!("{v:.2}")),
                p.efficiency
                    .map_or_else(|| "n/a".into(), |v| format!("{v:.2}")),
                match (p.user_s, p.sys_s, p.wall_s, p.cpu_pct) {
                    (Some(u), Some(sy), Some(w), Some(c)) => time_line(u, sy, w, c),
                    _ => "n/a".into(),
                },
                opt(p.minor_faults),
                opt(p.voluntary_switches),
                opt(p.involuntary_switches),
                p.runq_pct
                    .map_or_else(|| "n/a".into(), |pct| format!("{pct:.1}%")),
            ]
        })
        .collect();
    Table {
        caption: "Per point (medians over trials)".into(),
        headers: headers.map(String::from).to_vec(),
        rows,
        left_columns: 0,
    }
}

fn comparison_view(a: &RunData, b: &RunData, opts: &CompareOptions) -> ComparisonView {
    let view = compare_view::build(a, b, opts, true);
    let rows = view
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
    let mut warnings: Vec<String> = view
        .mismatches
        .iter()
        .map(|m| format!("not comparable: {m}"))
        .collect();
    warnings.extend(view.warnings.iter().map(ToString::to_string));
    ComparisonView {
        title: format!("Run {} (B) against run {} (A)", b.meta.id, a.meta.id),
        summary: format!(
            "{} · {} ({} is better) · threshold ±{}%, alpha {}",
            view.summary.verdict,
            view.metric.name,
            if view.metric.direction == stats::Direction::HigherIsBetter { "higher" } else { "lower" },
            view.options.threshold * 100.0,
            view.options.alpha
        ),
        warnings,
        table: Table {
            caption: if view.paired {
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

fn history_view(h: &History) -> Result<HistoryView, LabError> {
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
    Ok(HistoryView {
        summary: format!(
            "{} runs of {}; {} change point(s); the newest segment {}.",
            h.points.len(),
            h.workload,
            h.changes.len(),
            if h.newest_regressed {
                "is a REGRESSION"
            } else {
                "is not a regression"
            }
        ),
        chart: plot::render(&chart, 900, 320).map_err(LabError::Internal)?,
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
