//! The self-contained HTML report: one file, no network, no external scripts or fonts.
//!
//! [`build`] turns runs (and optionally a history) into a serialisable view-model of strings,
//! tables and inline SVG charts; [`render`] fills the `minijinja` templates with it, escaping
//! every string (auto-escape for `.html` templates) — only chart SVG drawn by [`plot`] from
//! numbers is inserted as markup. Profile and lock sections are added by their modules through
//! the public fields of [`RunView`].

pub mod plot;

use std::collections::BTreeSet;

use minijinja::Environment;
use serde::Serialize;
use stats::CompareOptions;

use self::plot::{Band, Chart, ErrorBars, Series, Style};
use super::compare_view;
use super::format::{si, sig3, time_line};
use crate::analysis::{self, RunSummary};
use crate::error::LabError;
use crate::history::History;
use crate::model::RunData;

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
    let mut charts =
        vec![plot::render(&throughput_chart(run, &summary), 560, 360).map_err(chart_error)?];
    if summary.points.iter().any(|p| p.speedup.is_some()) {
        let (speedup, efficiency) = scaling_charts(&summary);
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
            Ok(points) => profile_sections(&points, &mut tables, &mut flamegraphs, &mut warnings),
            Err(e) => warnings.push(format!("profiles not shown: {e}")),
        }
    }
    if run.trials.iter().any(|t| t.outcome.measurement().is_some_and(|m| m.locks.is_some())) {
        lock_sections(run, &mut tables, &mut warnings);
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

/// The top functions at the largest profiled N, what grows with N, and that N's flame graph.
fn profile_sections(
    points: &[crate::profile::PointProfile],
    tables: &mut Vec<Table>,
    flames: &mut Vec<Flame>,
    warnings: &mut Vec<String>,
) {
    const TOP: usize = 15;
    let Some(last) = points.last() else {
        return;
    };
    let rows = last
        .functions
        .iter()
        .take(TOP)
        .map(|f| {
            vec![
                f.name.clone(),
                f.dso.clone(),
                format!("{:.2}%", f.self_share),
                format!("{:.2}%", f.total_share),
                f.self_samples.to_string(),
                f.cost_per_op.map_or_else(|| "n/a".into(), si),
            ]
        })
        .collect();
    tables.push(Table {
        caption: format!(
            "Profile at N={}: top functions by self share ({}; cost per op in {})",
            last.n, last.event, last.unit
        ),
        headers: [
            "function",
            "dso",
            "self",
            "total",
            "samples",
            "self cost/op",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        left_columns: 2,
    });
    if let Some(report) = crate::profile::grows::what_grows(points) {
        let rows = report
            .rows
            .iter()
            .take(TOP)
            .map(|g| {
                vec![
                    format!("{}{}", g.name, if g.lock { " (lock)" } else { "" }),
                    g.dso.clone(),
                    g.cost_first.map_or_else(|| "—".into(), si),
                    si(g.cost_last),
                    g.ratio.map_or_else(|| "new".into(), |r| format!("×{r:.2}")),
                    si(g.growth),
                ]
            })
            .collect();
        let (first, last_n) = (
            report.points.first().copied().unwrap_or(0),
            report.points.last().copied().unwrap_or(0),
        );
        tables.push(Table {
            caption: format!(
                "What grows: cost per op ({}) at N={last_n} over N={first}",
                report.unit
            ),
            headers: [
                "function",
                "dso",
                &format!("N={first}"),
                &format!("N={last_n}"),
                "ratio",
                "growth/op",
            ]
            .map(String::from)
            .to_vec(),
            rows,
            left_columns: 2,
        });
    }
    let mut svg = Vec::new();
    match super::flamegraph::write_flamegraph(
        &mut svg,
        last,
        format!("N={} ({})", last.n, last.event),
    ) {
        Ok(()) => flames.push(Flame {
            title: format!("Flame graph at N={}", last.n),
            svg: String::from_utf8_lossy(&svg).into_owned(),
        }),
        Err(e) => warnings.push(format!("flame graph not drawn: {e}")),
    }
}

/// Kernel and user lock tables at the largest traced N (lock_stat-like columns).
fn lock_sections(run: &RunData, tables: &mut Vec<Table>, warnings: &mut Vec<String>) {
    use crate::locks::aggregate::{Side, Sides, at_point};
    use super::locks_view::duration;
    const TOP: usize = 15;
    let Some(n) = run.trials.iter().filter(|t| t.outcome.measurement().is_some_and(|m| m.locks.is_some())).map(|t| t.n).max() else {
        return;
    };
    let Some(point) = at_point(run, n, Sides::BOTH) else {
        return;
    };
    if point.lost_records > 0 {
        warnings.push(format!("locks at N={n}: {} records lost (ring buffer full): waits are undercounted", point.lost_records));
    }
    warnings.extend(point.notes.iter().map(|note| format!("locks at N={n}: {note}")));
    for side in [Side::Kernel, Side::User] {
        let rows: Vec<Vec<String>> = point
            .rows
            .iter()
            .filter(|r| r.side == side)
            .take(TOP)
            .map(|r| {
                vec![
                    r.lock.clone(),
                    r.kind.clone(),
                    r.caller.clone(),
                    r.contentions.to_string(),
                    duration(r.wait_total_ns as f64),
                    duration(r.wait_max_ns as f64),
                    duration(r.wait_min_ns as f64),
                    duration(r.wait_avg_ns),
                    duration(r.wait_per_op_ns),
                ]
            })
            .collect();
        let caption = format!("{} locks at N={n}: {} ({} traced trial(s))", side.as_str(), if rows.is_empty() { "no contention seen" } else { "most wait first" }, point.trials);
        tables.push(Table {
            caption,
            headers: ["lock", "type", "caller", "contentions", "wait total", "max", "min", "avg", "wait/op"].map(String::from).to_vec(),
            rows,
            left_columns: 3,
        });
    }
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

fn throughput_chart(run: &RunData, s: &RunSummary) -> Chart {
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

fn scaling_charts(s: &RunSummary) -> (Chart, Chart) {
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

fn comparison_view(a: &RunData, b: &RunData, opts: &CompareOptions) -> ComparisonView {
    let view = compare_view::build(a, b, opts);
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
            caption: "Per N: medians, relative change, Hodges-Lehmann shift interval, Mann-Whitney p, verdict".into(),
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
