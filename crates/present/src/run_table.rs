//! Terminal tables for a run (`scalelab show`, the end of `scalelab run`): throughput and
//! scaling per N, then the accounting per N, then the verdict line ("scales to S out of N
//! CPUs") and the warnings, each with its hint. The same as Markdown for `show --format
//! markdown`.

use std::io::{self, Write};

use analysis::summary::RunSummary;
use model::number_text::si;
use model::record::RunMeta;
use model::safe_text::printable;

use crate::grid::{Align, Grid};
use crate::markdown;
use crate::number_format::{opt_kib, opt_si, opt_sig3, time_line};
use crate::text_options::TextOptions;

/// Writes the header, the tables (fitted to `opts.width`), the scaling line and every warning.
pub fn write_run(
    out: &mut dyn Write,
    meta: &RunMeta,
    summary: &RunSummary,
    opts: &TextOptions,
) -> io::Result<()> {
    writeln!(out, "{}", meta.description())?;
    writeln!(out, "op: {}", printable(&meta.op_unit))?;
    if let Some(topology) = &meta.env.topology {
        writeln!(out, "topology: {}", printable(&topology.summary()))?;
    }
    writeln!(out)?;
    for grid in grids(summary) {
        grid.write_terminal(out, opts)?;
    }
    writeln!(out, "{}", scaling_line(summary))?;
    let warnings = warnings(meta, summary);
    if !warnings.is_empty() {
        writeln!(out)?;
        for w in warnings {
            writeln!(out, "{} {w}", opts.palette.warning())?;
        }
    }
    Ok(())
}

/// Writes the same as Markdown: the header lines as paragraphs, the tables whole, the
/// warnings as a list.
pub fn write_run_markdown(
    out: &mut dyn Write,
    meta: &RunMeta,
    summary: &RunSummary,
) -> io::Result<()> {
    markdown::write_paragraphs(
        out,
        &[
            meta.description(),
            format!("op: {}", printable(&meta.op_unit)),
        ],
    )?;
    for grid in grids(summary) {
        markdown::write_table(out, &grid)?;
    }
    markdown::write_paragraphs(out, &[scaling_line(summary)])?;
    let warnings: Vec<String> = warnings(meta, summary)
        .into_iter()
        .map(|w| format!("warning: {w}"))
        .collect();
    markdown::write_list(out, &warnings)
}

/// The throughput table, the accounting table, and the steps table when a command had steps.
fn grids(summary: &RunSummary) -> Vec<Grid> {
    let mut grids = vec![throughput_table(summary), accounting_table(summary)];
    if summary.points.iter().any(|p| p.steps.len() > 1) {
        grids.push(steps_table(summary));
    }
    grids
}

fn scaling_line(summary: &RunSummary) -> String {
    match summary.scales_to {
        Some(s) => format!("scales to {s}; S(N) = X(N)/X(1), median of trials"),
        None => "scaling: n/a (needs a successful N=1 point and one more)".to_owned(),
    }
}

/// Every warning, derived ones first, made printable.
fn warnings(meta: &RunMeta, summary: &RunSummary) -> Vec<String> {
    let stored = meta.warnings.iter().map(String::as_str);
    let derived: Vec<String> = summary.warnings.iter().map(ToString::to_string).collect();
    derived
        .iter()
        .map(String::as_str)
        .chain(stored)
        .map(|w| printable(w).into_owned())
        .collect()
}

/// Left out first at a narrow width: hardware counters, then per-task detail, then the
/// interval; N, trials, ops/s, S(N) and S/N always stay.
/// With `--metric`, X(N) is the primary metric as the command printed it (its label heads the
/// column), per CPU-second and per task only for a rate, and the other metrics follow S/N.
fn throughput_table(s: &RunSummary) -> Grid {
    let primary = s.primary.as_ref();
    let rate = primary.is_none_or(|m| m.direction == model::record::Direction::Higher);
    let x_label = primary.map_or_else(
        || "ops/s".to_string(),
        |m| printable(&m.label()).into_owned(),
    );
    let (per_cpu, per_task, per_op) = match primary {
        Some(_) => ("per CPU-s", "per task", "ns/unit/task"),
        None => ("ops/CPU-s", "ops/s/task", "ns/op/task"),
    };
    let mut t = Grid::default();
    t.keep("N", Align::Right)
        .keep("trials", Align::Right)
        .keep(&x_label, Align::Right)
        .optional("95% CI", Align::Right, 7);
    if rate {
        t.optional(per_cpu, Align::Right, 4)
            .optional(per_task, Align::Right, 6)
            .optional(per_op, Align::Right, 3);
    }
    let others: Vec<&model::record::MetricSpec> = s
        .metrics
        .iter()
        .filter(|m| primary.is_none_or(|p| p.name != m.name))
        .collect();
    t.keep("S(N)", Align::Right)
        .keep("S/N", Align::Right)
        .optional("task min..max", Align::Right, 5)
        .optional("cyc/op", Align::Right, 1)
        .optional("ins/op", Align::Right, 2)
        .optional("miss/op", Align::Right, 0);
    for m in &others {
        t.optional(&printable(&m.label()), Align::Right, 9);
    }
    let marked = !s.boundaries.is_empty();
    if marked {
        // Where the placement first crossed a topology boundary (`↑ 2nd socket`).
        t.optional("crossed", Align::Left, 8);
    }
    for p in &s.points {
        let trials = if p.trials_failed > 0 {
            format!("{} ({} failed)", p.trials_ok, p.trials_failed)
        } else {
            p.trials_ok.to_string()
        };
        // A metric's own figures as printed; the rate X(N) of a lower-is-better one is not.
        let x = match primary {
            Some(m) => p.reported.get(&m.name).copied(),
            None => p.throughput,
        };
        let ci = x.map_or_else(
            || "n/a".into(),
            |e| {
                if e.level > 0.0 {
                    format!("{}..{} ({:.0}%)", si(e.lower), si(e.upper), e.level * 100.0)
                } else {
                    "n/a (1 trial)".into()
                }
            },
        );
        let fair = match (p.task_min, p.task_max) {
            (Some(a), Some(b)) => format!("{}..{}", si(a), si(b)),
            _ => "n/a".into(),
        };
        let mut row = vec![
            p.n.to_string().into(),
            trials.into(),
            opt_si(x.map(|e| e.point)).into(),
            ci.into(),
        ];
        if rate {
            row.extend([
                opt_si(p.ops_per_cpu_sec).into(),
                opt_si(p.ops_per_sec_per_task).into(),
                opt_si(p.ns_per_op_per_task).into(),
            ]);
        }
        row.extend([
            p.speedup
                .map_or_else(|| "n/a".into(), |v| format!("{v:.2}"))
                .into(),
            p.efficiency
                .map_or_else(|| "n/a".into(), |v| format!("{v:.2}"))
                .into(),
            fair.into(),
            opt_sig3(p.cycles_per_op).into(),
            opt_sig3(p.instructions_per_op).into(),
            opt_sig3(p.cache_misses_per_op).into(),
        ]);
        for m in &others {
            row.push(opt_si(p.reported.get(&m.name).map(|e| e.point)).into());
        }
        if marked {
            let crossed: Vec<String> = s
                .boundaries
                .iter()
                .filter(|mark| mark.n == p.n)
                .flat_map(|mark| mark.crossed.iter().map(ToString::to_string))
                .collect();
            row.push(crossed.join(" ").into());
        }
        t.row(row);
    }
    t
}

/// Left out first at a narrow width: the sampler's share, block I/O, run-queue wait, the
/// workload's own counters, the peak memory per task, then the faults, switches and peak
/// memory; N and the `time` line always stay. The memory columns are there when a trial
/// measured it (not in runs recorded before it was kept).
fn accounting_table(s: &RunSummary) -> Grid {
    let extra_names: std::collections::BTreeSet<&String> =
        s.points.iter().flat_map(|p| p.extras.keys()).collect();
    let memory = s.points.iter().any(|p| p.max_rss_kib.is_some());
    let per_task_memory = s.points.iter().any(|p| p.max_rss_per_task_kib.is_some());
    let mut t = Grid::default();
    t.keep("N", Align::Right)
        .keep("time (user sys wall CPU%)", Align::Right)
        .optional("minflt", Align::Right, 8)
        .optional("majflt", Align::Right, 5)
        .optional("vcsw", Align::Right, 7)
        .optional("ivcsw", Align::Right, 6);
    if memory {
        t.optional("max RSS", Align::Right, 7);
    }
    if per_task_memory {
        t.optional("RSS/task", Align::Right, 4);
    }
    t.optional("blk in", Align::Right, 1)
        .optional("blk out", Align::Right, 2)
        .optional("runq wait", Align::Right, 3)
        .optional("sampler", Align::Right, 0);
    for name in &extra_names {
        t.optional(&printable(name), Align::Right, 4);
    }
    for p in &s.points {
        let time = match (p.user_s, p.sys_s, p.wall_s, p.cpu_pct) {
            (Some(u), Some(sy), Some(w), Some(c)) => time_line(u, sy, w, c),
            _ => "n/a".into(),
        };
        let mut row: Vec<String> = vec![
            p.n.to_string(),
            time,
            opt_si(p.minor_faults),
            opt_si(p.major_faults),
            opt_si(p.voluntary_switches),
            opt_si(p.involuntary_switches),
        ];
        if memory {
            row.push(opt_kib(p.max_rss_kib));
        }
        if per_task_memory {
            row.push(opt_kib(p.max_rss_per_task_kib));
        }
        row.extend([
            opt_si(p.block_in),
            opt_si(p.block_out),
            p.runq_pct
                .map_or_else(|| "n/a".into(), |pct| format!("{pct:.1}%")),
            p.sampler_pct
                .map_or_else(|| "n/a".into(), |pct| format!("{pct:.2}%")),
        ]);
        row.extend(
            extra_names
                .iter()
                .map(|name| opt_si(p.extras.get(*name).copied())),
        );
        t.row(row.into_iter().map(Into::into).collect());
    }
    t
}

/// External commands with `--step`: one `time` line per step and N, as the 1996 report had them.
fn steps_table(s: &RunSummary) -> Grid {
    let mut t = Grid::default();
    t.keep("N", Align::Right)
        .keep("step", Align::Right)
        .keep("time (user sys wall CPU%)", Align::Right)
        .optional("minflt", Align::Right, 4)
        .optional("majflt", Align::Right, 3)
        .optional("blk in", Align::Right, 1)
        .optional("blk out", Align::Right, 2);
    for p in &s.points {
        for st in &p.steps {
            let row: Vec<String> = vec![
                p.n.to_string(),
                printable(&st.name).into_owned(),
                time_line(st.user_s, st.sys_s, st.wall_s, st.cpu_pct),
                si(st.minor_faults),
                si(st.major_faults),
                si(st.block_in),
                si(st.block_out),
            ];
            t.row(row.into_iter().map(Into::into).collect());
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use analysis::summary::summarize;
    use lab::test_runs::swept_run;

    use super::*;

    /// The whole text output of a deterministic run, pinned by a snapshot.
    #[test]
    fn run_tables_snapshot() {
        let data = swept_run();
        let mut out = Vec::new();
        write_run(
            &mut out,
            &data.meta,
            &summarize(&data),
            &TextOptions::plain(),
        )
        .unwrap();
        insta::assert_snapshot!(String::from_utf8(out).unwrap());
    }

    /// The same run as Markdown, for pasting into a pull request or a mail.
    #[test]
    fn run_markdown_snapshot() {
        let data = swept_run();
        let mut out = Vec::new();
        write_run_markdown(&mut out, &data.meta, &summarize(&data)).unwrap();
        insta::assert_snapshot!(String::from_utf8(out).unwrap());
    }

    /// At 80 columns the throughput table leaves out the counters first and says so; every
    /// line fits.
    #[test]
    fn run_tables_fit_80_columns() {
        let data = swept_run();
        let mut out = Vec::new();
        let opts = TextOptions {
            width: Some(80),
            ..TextOptions::plain()
        };
        write_run(&mut out, &data.meta, &summarize(&data), &opts).unwrap();
        let text = String::from_utf8(out).unwrap();
        let tables: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with(['┌', '│', '╞', '└']))
            .collect();
        assert!(
            tables
                .iter()
                .all(|l| unicode_width::UnicodeWidthStr::width(*l) <= 80),
            "{text}"
        );
        assert!(
            text.contains("columns left out at 80 columns: ops/CPU-s, ns/op/task, task min..max, cyc/op, ins/op, miss/op (--wide or COLUMNS=137 shows them)"),
            "{text}"
        );
        assert!(text.contains("S/N"), "{text}");
    }

    fn shown(data: &model::record::RunData) -> String {
        let mut out = Vec::new();
        write_run(
            &mut out,
            &data.meta,
            &summarize(data),
            &TextOptions::plain(),
        )
        .unwrap();
        String::from_utf8(out).unwrap()
    }

    /// Issue 13: `scales to 0.46 out of 4 CPUs` on a 2-CPU machine.
    #[test]
    fn scales_to_counts_tasks_when_n_exceeds_the_cpus() {
        let mut data = lab::test_runs::run(1, "spin", &[(1, &[100.0]), (4, &[46.0])]);
        data.meta.env.online_cpus = 2;
        let text = shown(&data);
        assert!(
            text.contains("scales to 0.46 out of 4 tasks (2 CPUs)"),
            "{text}"
        );
        data.meta.env.online_cpus = 4;
        let text = shown(&data);
        assert!(text.contains("scales to 0.46 out of 4 CPUs"), "{text}");
        // An unknown CPU count (an old export) claims no CPUs.
        data.meta.env.online_cpus = 0;
        let text = shown(&data);
        assert!(text.contains("scales to 0.46 out of 4 tasks;"), "{text}");
        assert!(!text.contains("CPUs"), "{text}");
    }

    /// Issue 16: the machine's topology is one line under the header when it was recorded.
    #[test]
    fn the_topology_summary_is_shown_when_recorded() {
        let mut data = lab::test_runs::run(1, "spin", &[(1, &[100.0]), (2, &[190.0])]);
        assert!(!shown(&data).contains("topology:"));
        let place = |cpu: usize| model::env::CpuPlace {
            cpu,
            package: 0,
            die: 0,
            node: Some(0),
            core: cpu as u32,
            thread: 0,
            l2: None,
            l3: Some(0),
        };
        data.meta.env.topology = Some(model::env::CpuTopology {
            cpus: vec![place(0), place(1)],
            nodes: vec![0],
            ..Default::default()
        });
        let text = shown(&data);
        assert!(
            text.contains("topology: 1 socket × 2 cores × 1 thread, 1 NUMA node, 1 L3 domain\n"),
            "{text}"
        );
    }

    /// Issue 16: the throughput table marks the first N past a topology boundary.
    #[test]
    fn the_throughput_table_marks_the_first_n_past_a_boundary() {
        let mut data = lab::test_runs::run(1, "spin", &[(1, &[100.0]), (2, &[150.0])]);
        let place = |cpu: usize, package: u32| model::env::CpuPlace {
            cpu,
            package,
            die: 0,
            node: Some(package),
            core: cpu as u32,
            thread: 0,
            l2: None,
            l3: Some(package),
        };
        data.meta.env.topology = Some(model::env::CpuTopology {
            cpus: vec![place(0, 0), place(1, 1)],
            nodes: vec![0, 1],
            ..Default::default()
        });
        let text = shown(&data);
        let marked: Vec<&str> = text.lines().filter(|l| l.contains('↑')).collect();
        assert_eq!(marked.len(), 1, "{text}");
        assert!(marked[0].starts_with("│ 2 "), "{text}");
        assert!(
            marked[0].contains("↑ 2nd L3 ↑ 2nd node ↑ 2nd socket"),
            "{text}"
        );
        assert!(text.contains("crossed"), "{text}");
    }

    /// Issue 13: a command run's `task min..max` showed the whole command's rate (`14.0..14.0`
    /// beside `ops/s/task` 7.00): a command trial has one measurement, not one per task.
    #[test]
    fn a_command_run_has_no_task_min_max() {
        let data = lab::test_runs::run(1, "cmd", &[(1, &[7.0]), (2, &[14.0])]);
        let text = shown(&data);
        assert!(!text.contains("14.0..14.0"), "{text}");
        let row = text.lines().find(|l| l.starts_with("│ 2 ")).unwrap();
        assert!(row.contains(" 7.00 "), "{row}");
        assert!(!row.contains(".."), "{row}");
    }
}
