//! A [`History`] for people (`scalelab history`): the series in time order, change points
//! marked with their size and significance, and the verdict on the newest segment. On a
//! terminal the change points are lines between the runs; in Markdown and CSV the series is
//! one table whose `change` column marks the first run after each change point (CSV: the
//! values as plain numbers, the change as a fraction).

use std::io::{self, Write};

use crate::grid::{Align, Grid};
use crate::printer::{Format, Printer};

use analysis::history::History;
use model::number_text::{plural, relative_change, si};
use model::safe_text::printable;

/// Writes the series, its change points and the verdict on the newest segment.
pub fn write_history(out: &mut Printer<'_>, h: &History) -> io::Result<()> {
    let at = if h.at > 0 {
        format!(" at N={}", h.at)
    } else {
        String::new()
    };
    let params: Vec<String> = h.params.iter().map(|(k, v)| format!(" {k}={v}")).collect();
    writeln!(
        out,
        "{}{}{at} · {} ({} is better) · {} · change points: p < {}, segments ≥ {} runs",
        printable(&h.workload),
        printable(&params.concat()),
        h.metric.name(),
        if h.higher_is_better {
            "higher"
        } else {
            "lower"
        },
        plural(h.points.len(), "run"),
        h.options.max_p,
        h.options.min_segment
    )?;
    writeln!(out)?;
    if out.format() == Format::Text {
        write_series_text(out, h)?;
    } else {
        out.table(&series_grid(h, out.format()))?;
    }
    writeln!(out)?;
    write_verdict(out, h)
}

/// The series as a table, one row per run, the change point's size in the run it starts at.
fn series_grid(h: &History, format: Format) -> Grid {
    let mut g = Grid::default();
    g.keep("run", Align::Right)
        .keep("started", Align::Left)
        .keep("value", Align::Right)
        .keep("variant", Align::Left)
        .keep("label", Align::Left)
        .keep("change", Align::Left)
        .keep("p", Align::Right);
    let csv = format == Format::Csv;
    for (i, p) in h.points.iter().enumerate() {
        let change = h.changes.iter().find(|c| c.index == i);
        let (size, p_value) = match change {
            Some(c) if csv => (
                c.relative.map(|r| r.to_string()).unwrap_or_default(),
                c.p_value.to_string(),
            ),
            Some(c) => (
                format!(
                    "{} {}",
                    relative_change(c.relative),
                    if c.regression {
                        "REGRESSION"
                    } else {
                        "improvement"
                    }
                ),
                format!("{:.2e}", c.p_value),
            ),
            None => (String::new(), String::new()),
        };
        g.add_row(vec![
            p.run.to_string(),
            printable(&p.started_at).into_owned(),
            if csv {
                p.value.to_string()
            } else {
                si(p.value)
            },
            printable(p.variant.as_deref().unwrap_or("")).into_owned(),
            printable(&p.label).into_owned(),
            size,
            p_value,
        ]);
    }
    g
}

/// The series for a terminal: a line per run, a line before each change point's first run.
fn write_series_text(out: &mut Printer<'_>, h: &History) -> io::Result<()> {
    writeln!(
        out,
        "{:>6}  {:<20}  {:>10}  {:<10}  label",
        "run", "started", "value", "variant"
    )?;
    for (i, p) in h.points.iter().enumerate() {
        if let Some(c) = h.changes.iter().find(|c| c.index == i) {
            writeln!(
                out,
                "------  change {} (p = {:.2e}): mean {} ± {} → {} ± {}{}",
                relative_change(c.relative),
                c.p_value,
                si(c.mean_before),
                si(c.sd_before),
                si(c.mean_after),
                si(c.sd_after),
                if c.regression {
                    "  REGRESSION"
                } else {
                    "  improvement"
                }
            )?;
        }
        writeln!(
            out,
            "{:>6}  {:<20}  {:>10}  {:<10}  {}",
            p.run,
            printable(&p.started_at),
            si(p.value),
            printable(p.variant.as_deref().unwrap_or("-")),
            printable(&p.label)
        )?;
    }
    Ok(())
}

/// The verdict on the newest segment.
fn write_verdict(out: &mut Printer<'_>, h: &History) -> io::Result<()> {
    if !h.judged {
        writeln!(
            out,
            "too few runs for change-point detection (needs at least {}): no verdict",
            h.options.fewest_values()
        )?;
    } else if h.changes.is_empty() {
        writeln!(out, "no change points: the series is one segment")?;
    } else if h.newest_regressed {
        writeln!(
            out,
            "the newest segment is a REGRESSION ({} in all)",
            plural(h.changes.len(), "change point")
        )?;
    } else {
        writeln!(
            out,
            "the newest segment is not a regression ({} in all)",
            plural(h.changes.len(), "change point")
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use analysis::history::{Metric, from_points, parse_csv};

    use crate::printer::Format;
    use stats::ChangePointOptions;

    fn table(csv: &str) -> String {
        let points = parse_csv(csv).unwrap();
        let h = from_points(
            "csv",
            0,
            Metric::Throughput,
            points,
            &ChangePointOptions::default(),
        );
        crate::printer::printed(Format::Text, |p| super::write_history(p, &h))
    }

    fn series(before: &str, after: &str) -> String {
        format!(
            "{}{}",
            format!("{before}\n").repeat(5),
            format!("{after}\n").repeat(5)
        )
    }

    /// Was: 1e15 printed `1000T`, 1e308 a 309-digit number ending in `T`; a step from 1 to
    /// 1e308 read `mean 0 ± 0 → … +0.0%`, and one from 0 `+0.0%`.
    #[test]
    fn extreme_values_read_with_si_prefixes_and_a_change_from_zero_says_so() {
        let text = table(&series("1", "1e15"));
        assert!(text.contains("1.00P"), "{text}");
        assert!(
            text.contains("change +1.00e17% (p = 0.00e0): mean 1.00 ± 0 → 1.00P ± 0"),
            "{text}"
        );
        let text = table(&series("1", "1e308"));
        assert!(
            text.contains("change +1.00e310% (p = 0.00e0): mean 1.00 ± 0 → 1.00e308 ± 0"),
            "{text}"
        );
        assert!(text.lines().all(|l| l.chars().count() < 120), "{text}");
        let text = table(&series("0", "5"));
        assert!(
            text.contains("change from 0 (p = 0.00e0): mean 0 ± 0 → 5.00 ± 0"),
            "{text}"
        );
    }

    #[test]
    fn markdown_and_csv_put_the_series_in_one_table_with_the_change_in_its_first_run() {
        let points = parse_csv(&series("100", "50")).unwrap();
        let h = from_points(
            "csv",
            0,
            Metric::Throughput,
            points,
            &ChangePointOptions::default(),
        );
        let md = crate::printer::printed(Format::Markdown, |p| super::write_history(p, &h));
        let rows: Vec<&str> = md.lines().filter(|l| l.starts_with('|')).collect();
        assert_eq!(rows.len(), 12, "header, rule, ten runs:\n{md}");
        assert!(
            rows[0].contains("| run |") && rows[0].contains("| change |"),
            "{md}"
        );
        assert!(
            rows[7].contains("-50.0% REGRESSION"),
            "the sixth run starts it:\n{md}"
        );
        assert!(md.contains("the newest segment is a REGRESSION"), "{md}");
        let csv = crate::printer::printed(Format::Csv, |p| super::write_history(p, &h));
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines.len(), 11, "{csv}");
        assert_eq!(lines[0], "run,started,value,variant,label,change,p");
        assert!(
            lines[6].contains(",50,") && lines[6].contains(",-0.5,"),
            "{csv}"
        );
        assert!(
            !csv.contains("REGRESSION"),
            "the lines are left out:\n{csv}"
        );
    }
}
