//! Terminal text for a [`History`] (`scalelab history`): the series in time order, change
//! points marked with their size and significance, and the verdict on the newest segment.

use std::io::{self, Write};

use analysis::history::History;
use model::number_text::{plural, relative_change, si};
use model::safe_text::printable;

/// Writes the series, its change points and the verdict on the newest segment.
pub fn write_history(out: &mut dyn Write, h: &History) -> io::Result<()> {
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
    writeln!(out)?;
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
        let mut out = Vec::new();
        super::write_history(&mut out, &h).unwrap();
        String::from_utf8(out).unwrap()
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
}
