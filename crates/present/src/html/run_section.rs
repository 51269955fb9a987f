//! One run's section of the HTML report: what the run was (description, parameters, tags,
//! command, environment), its warnings and "scales to", the charts, the per-point table, and
//! the profile and lock tables with the flame graph when the run recorded them; first of all,
//! why it stops scaling (`scalelab explain`), drawn (`cost_bars`, `growth_waterfall`) and in
//! tables.

use analysis::explain::Explanation;
use analysis::report_data::RunReport;
use analysis::summary::RunSummary;
use model::number_text::si;

use super::page::{ExplainSection, RunSection, Table};
use super::{attribution, charts, cost_bars, growth_waterfall, plot};
use crate::error::PresentError;
use crate::explain_text::{answer, cause_label, share_with_interval};
use crate::number_format::time_line;
use crate::number_format::{duration, opt_kib};

/// One run's section: its description and settings, warnings, charts, tables, flame graph and
/// environment.
pub(super) fn run_section(run: &RunReport) -> Result<RunSection, PresentError> {
    let meta = &run.meta;
    let summary = &run.summary;
    let mut warnings: Vec<String> = summary.warnings.iter().map(ToString::to_string).collect();
    warnings.extend(meta.warnings.iter().cloned());
    let scales_to = match summary.scales_to {
        Some(s) => format!("Scales to {s}."),
        None => "Scaling n/a: needs a successful N=1 point and one more.".into(),
    };
    let chart_error = PresentError::Chart;
    let mut charts =
        vec![plot::render(&charts::throughput_chart(run), 560, 360).map_err(chart_error)?];
    if summary.points.iter().any(|p| p.speedup.is_some()) {
        let (speedup, efficiency) = charts::scaling_charts(summary);
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
    let mut tables = vec![points_table(summary)];
    let mut flamegraphs = Vec::new();
    match &run.profile_error {
        Some(e) => warnings.push(format!("profiles not shown: {e}")),
        None => attribution::profile_tables(
            &run.profiles,
            run.profile_growth.as_ref(),
            &mut tables,
            &mut flamegraphs,
            &mut warnings,
        ),
    }
    if let Some(point) = &run.locks {
        attribution::lock_tables(point, &mut tables, &mut warnings);
    }
    Ok(RunSection {
        id: meta.id,
        name: meta.name.clone(),
        description: meta.description(),
        workload: meta.workload.clone(),
        op_unit: meta.op_unit.clone(),
        // A command's "parameters" are its steps, not `-p` options.
        params: meta
            .params
            .iter()
            .map(|(k, v)| {
                let label = if meta.workload == "cmd" {
                    k.clone()
                } else {
                    format!("-p {k}")
                };
                (label, v.clone())
            })
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
        explain: run.explanation.as_ref().map(explain_section),
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
        "max RSS",
        "RSS/task",
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
                opt_kib(p.max_rss_kib),
                opt_kib(p.max_rss_per_task_kib),
            ]
        })
        .collect();
    Table {
        caption: "Per point (medians over trials)".into(),
        headers: headers.map(String::from).to_vec(),
        rows,
        left_columns: 0,
        empty: "No point was measured.".into(),
    }
}

fn signed(ns: f64) -> String {
    if ns >= 0.0 {
        format!("+{}", duration(ns))
    } else {
        format!("-{}", duration(-ns))
    }
}

/// The explanation's answer, its pictures, its accounting per N and its growth by cause.
fn explain_section(e: &Explanation) -> ExplainSection {
    let rows = e
        .points
        .iter()
        .map(|p| {
            let a = &p.accounting;
            vec![
                p.n.to_string(),
                duration(a.ns_per_op_task),
                duration(a.user_ns),
                duration(a.system_ns),
                if a.runq_measured {
                    duration(a.runq_ns)
                } else {
                    "—".into()
                },
                duration(a.offcpu_ns),
                a.trials.len().to_string(),
            ]
        })
        .collect();
    let mut tables = vec![Table {
        caption: "Time per op (ns/op/task = N·W ÷ ops; medians over the trials, off-CPU the rest)"
            .into(),
        headers: [
            "N",
            "ns/op/task",
            "user",
            "system",
            "run queue",
            "off-CPU",
            "trials",
        ]
        .map(String::from)
        .to_vec(),
        rows,
        left_columns: 0,
        empty: "No point was measured.".into(),
    }];
    let (headers, rows) = crate::explain_text::agreement_rows(e);
    if !rows.is_empty() {
        tables.push(Table {
            caption: {
                let notes: Vec<String> = [
                    crate::explain_text::measuring_note(e),
                    crate::explain_text::partner_note(e),
                    crate::explain_text::unwoken_note(e),
                    crate::explain_text::steal_note(e),
                    crate::explain_text::trace_cost_note(e),
                    crate::explain_text::blocking_change_note(e),
                ]
                .into_iter()
                .flatten()
                .map(|note| note.full)
                .map(|note| format!(" {}{}.", note[..1].to_uppercase(), &note[1..]))
                .collect();
                let title = "The traces against the accounting, on the same trials (per op; 1.00 is full agreement)";
                if notes.is_empty() {
                    title.to_string()
                } else {
                    format!("{title}.{}", notes.concat())
                }
            },
            headers,
            rows,
            left_columns: 0,
            empty: String::new(),
        });
    }
    if let Some(g) = &e.growth {
        let mut rows: Vec<Vec<String>> = g
            .named
            .iter()
            .map(|c| {
                vec![
                    cause_label(&c.cause),
                    c.cause.source.to_string(),
                    duration(c.from_ns),
                    duration(c.to_ns),
                    signed(c.delta_ns),
                    share_with_interval(c, g.delta_ns),
                ]
            })
            .collect();
        rows.push(vec![
            "unexplained".into(),
            String::new(),
            String::new(),
            String::new(),
            signed(g.unexplained_ns),
            g.unexplained_pct
                .map_or_else(|| "—".into(), |p| format!("{p:.0}%")),
        ]);
        tables.push(Table {
            caption: format!(
                "Growth from N={} to N={} by cause (named only beyond trial-to-trial noise){}",
                g.from_n,
                g.to_n,
                crate::explain_text::chain_note(e)
                    .map(|n| n.full)
                    .map_or_else(String::new, |note| format!(
                        ". {}{}.",
                        note[..1].to_uppercase(),
                        &note[1..]
                    ))
            ),
            headers: [
                "cause".to_string(),
                "source".into(),
                format!("N={}", g.from_n),
                format!("N={}", g.to_n),
                "growth".into(),
                "share".into(),
            ]
            .to_vec(),
            rows,
            left_columns: 2,
            empty: String::new(),
        });
    }
    let mut charts = vec![cost_bars::cost_bars(e)];
    charts.extend(growth_waterfall::growth_waterfall(e));
    ExplainSection {
        answer: answer(e),
        charts,
        tables,
        missing: e
            .missing
            .iter()
            .map(|m| format!("{} — {}", m.what, m.fix))
            .collect(),
        noise: e.noise_rule.to_string(),
    }
}
