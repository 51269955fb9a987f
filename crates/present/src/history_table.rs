//! Terminal text for a [`History`] (`scalelab history`): the series in time order, change
//! points marked with their size and significance, and the verdict on the newest segment.

use std::io::{self, Write};

use lab::analysis::history::History;
use lab::number_text::{plural, si};
use lab::safe_text::printable;

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
                "------  change {:+.1}% (p = {:.2e}): mean {} ± {} → {} ± {}{}",
                c.relative * 100.0,
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
    if h.points.len() < 2 * h.options.min_segment {
        writeln!(
            out,
            "too few runs for change-point detection (needs at least {})",
            2 * h.options.min_segment
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
