//! Terminal tables for a run (`scalelab show`, the end of `scalelab run`): throughput and
//! scaling per N, then the accounting per N, then the verdict line ("scales to S out of N
//! CPUs") and the warnings, each with its hint.

use std::io::{self, Write};

use comfy_table::presets::UTF8_BORDERS_ONLY;
use comfy_table::{CellAlignment, ContentArrangement, Table};
use lab::analysis::summary::RunSummary;
use lab::number_text::si;
use lab::record::RunMeta;
use lab::safe_text::printable;

use crate::number_format::{opt_si, opt_sig3, time_line};

/// Writes the header, both tables, the scaling line and every warning.
pub fn write_run(out: &mut dyn Write, meta: &RunMeta, summary: &RunSummary) -> io::Result<()> {
    writeln!(out, "{}", meta.description())?;
    writeln!(out, "op: {}", printable(&meta.op_unit))?;
    writeln!(out)?;
    writeln!(out, "{}", throughput_table(summary))?;
    writeln!(out, "{}", accounting_table(summary))?;
    if summary.points.iter().any(|p| p.steps.len() > 1) {
        writeln!(out, "{}", steps_table(summary))?;
    }
    match summary.scales_to {
        Some(s) => writeln!(out, "scales to {s}; S(N) = X(N)/X(1), median of trials")?,
        None => writeln!(
            out,
            "scaling: n/a (needs a successful N=1 point and one more)"
        )?,
    }
    let stored = meta.warnings.iter().map(String::as_str);
    let derived: Vec<String> = summary.warnings.iter().map(ToString::to_string).collect();
    let all: Vec<&str> = derived.iter().map(String::as_str).chain(stored).collect();
    if !all.is_empty() {
        writeln!(out)?;
        for w in all {
            writeln!(out, "warning: {}", printable(w))?;
        }
    }
    Ok(())
}

fn new_table(headers: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_style(UTF8_BORDERS_ONLY)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(headers.to_vec());
    t
}

fn right_align(t: &mut Table) {
    for col in t.column_iter_mut() {
        col.set_cell_alignment(CellAlignment::Right);
    }
}

fn throughput_table(s: &RunSummary) -> Table {
    let mut t = new_table(&[
        "N",
        "trials",
        "ops/s",
        "95% CI",
        "ops/CPU-s",
        "ops/s/task",
        "ns/op/task",
        "S(N)",
        "S/N",
        "task min..max",
        "cyc/op",
        "ins/op",
    ]);
    for p in &s.points {
        let trials = if p.trials_failed > 0 {
            format!("{} ({} failed)", p.trials_ok, p.trials_failed)
        } else {
            p.trials_ok.to_string()
        };
        let ci = p.throughput.map_or_else(
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
        t.add_row(vec![
            p.n.to_string(),
            trials,
            opt_si(p.throughput.map(|e| e.point)),
            ci,
            opt_si(p.ops_per_cpu_sec),
            opt_si(p.ops_per_sec_per_task),
            opt_si(p.ns_per_op_per_task),
            p.speedup
                .map_or_else(|| "n/a".into(), |v| format!("{v:.2}")),
            p.efficiency
                .map_or_else(|| "n/a".into(), |v| format!("{v:.2}")),
            fair,
            opt_sig3(p.cycles_per_op),
            opt_sig3(p.instructions_per_op),
        ]);
    }
    right_align(&mut t);
    t
}

fn accounting_table(s: &RunSummary) -> Table {
    let extra_names: std::collections::BTreeSet<&String> =
        s.points.iter().flat_map(|p| p.extras.keys()).collect();
    let mut headers = vec![
        "N",
        "time (user sys wall CPU%)",
        "minflt",
        "majflt",
        "vcsw",
        "ivcsw",
        "blk in",
        "blk out",
        "runq wait",
    ];
    let extra_headers: Vec<String> = extra_names
        .iter()
        .map(|s| printable(s).into_owned())
        .collect();
    headers.extend(extra_headers.iter().map(String::as_str));
    let mut t = new_table(&headers);
    for p in &s.points {
        let time = match (p.user_s, p.sys_s, p.wall_s, p.cpu_pct) {
            (Some(u), Some(sy), Some(w), Some(c)) => time_line(u, sy, w, c),
            _ => "n/a".into(),
        };
        let mut row = vec![
            p.n.to_string(),
            time,
            opt_si(p.minor_faults),
            opt_si(p.major_faults),
            opt_si(p.voluntary_switches),
            opt_si(p.involuntary_switches),
            opt_si(p.block_in),
            opt_si(p.block_out),
            p.runq_pct
                .map_or_else(|| "n/a".into(), |pct| format!("{pct:.1}%")),
        ];
        row.extend(
            extra_names
                .iter()
                .map(|name| opt_si(p.extras.get(*name).copied())),
        );
        t.add_row(row);
    }
    right_align(&mut t);
    t
}

/// External commands with `--step`: one `time` line per step and N, as the 1996 report had them.
fn steps_table(s: &RunSummary) -> Table {
    let mut t = new_table(&[
        "N",
        "step",
        "time (user sys wall CPU%)",
        "minflt",
        "majflt",
        "blk in",
        "blk out",
    ]);
    for p in &s.points {
        for st in &p.steps {
            t.add_row(vec![
                p.n.to_string(),
                printable(&st.name).into_owned(),
                time_line(st.user_s, st.sys_s, st.wall_s, st.cpu_pct),
                si(st.minor_faults),
                si(st.major_faults),
                si(st.block_in),
                si(st.block_out),
            ]);
        }
    }
    right_align(&mut t);
    t
}

#[cfg(test)]
mod tests {
    use lab::analysis::summary::summarize;
    use lab::test_runs::swept_run;

    use super::*;

    /// The whole text output of a deterministic run, pinned by a snapshot.
    #[test]
    fn run_tables_snapshot() {
        let data = swept_run();
        let mut out = Vec::new();
        write_run(&mut out, &data.meta, &summarize(&data)).unwrap();
        insta::assert_snapshot!(String::from_utf8(out).unwrap());
    }

    fn shown(data: &lab::record::RunData) -> String {
        let mut out = Vec::new();
        write_run(&mut out, &data.meta, &summarize(data)).unwrap();
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
