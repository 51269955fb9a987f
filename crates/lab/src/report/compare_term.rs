//! Terminal text for a [`CompareView`]: both runs named, the metric and which way is good, one
//! row per N (medians, change, shift and interval, p, verdict, what the runs could detect),
//! the whole-curve lines (verdict, worst point, scaling of each side, crossings), then notes
//! and warnings, each with its hint.

use std::io::{self, Write};

use comfy_table::presets::UTF8_BORDERS_ONLY;
use comfy_table::{CellAlignment, ContentArrangement, Table};
use stats::{Direction, Verdict};

use super::compare_view::{CompareView, PointComparison, Side};
use super::compare_warning::list;
use super::format::{printable, si};
use super::percent::{percent, signed_percent};

/// Writes the comparison as text.
pub fn write_compare(out: &mut dyn Write, view: &CompareView) -> io::Result<()> {
    writeln!(out, "A: {}", view.a.description)?;
    writeln!(out, "B: {}", view.b.description)?;
    let direction = match view.metric.direction {
        Direction::HigherIsBetter => "higher is better",
        Direction::LowerIsBetter => "lower is better",
    };
    writeln!(
        out,
        "metric: {} in {} ({direction}); op: {}",
        view.metric.name,
        view.metric.unit,
        printable(&view.metric.op)
    )?;
    let method = if view.paired {
        "paired: each trial of B against the trial of A it ran back to back with, the \
         Hodges-Lehmann median of the per-pair changes B/A with its {level} interval, Wilcoxon \
         signed-rank p"
    } else {
        "Hodges-Lehmann shift with its {level} interval, Mann-Whitney U p"
    };
    writeln!(
        out,
        "B against A, per N: median of per-trial {}, {}; a change counts past ±{} at alpha {}",
        view.metric.unit,
        method.replace("{level}", &format!("{:.0}%", view.options.level * 100.0)),
        percent(view.options.threshold),
        view.options.alpha
    )?;
    writeln!(out)?;
    writeln!(out, "{}", table(&view.points, view.paired))?;
    write_summary(out, view)?;
    let (notes, warnings): (Vec<_>, Vec<_>) = view.warnings.iter().partition(|w| w.is_note());
    if !notes.is_empty() || !warnings.is_empty() {
        writeln!(out)?;
    }
    for n in notes {
        writeln!(out, "note: {}", printable(&n.to_string()))?;
    }
    for w in warnings {
        writeln!(out, "warning: {}", printable(&w.to_string()))?;
    }
    Ok(())
}

fn table(points: &[PointComparison], paired: bool) -> Table {
    let mut t = Table::new();
    t.load_style(UTF8_BORDERS_ONLY)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(vec![
            "N",
            if paired { "pairs (A/B)" } else { "runs A/B" },
            "A ops/s",
            "B ops/s",
            "change",
            "shift [95% CI]",
            "p",
            "verdict",
            "detectable",
            "runs needed",
        ]);
    for p in points {
        let runs = match p.pairs {
            Some(pairs) => format!("{pairs} ({}/{})", p.runs_a, p.runs_b),
            None => format!("{}/{}", p.runs_a, p.runs_b),
        };
        let Some(c) = p.change else {
            let why = p.note.clone().unwrap_or_default();
            t.add_row(vec![p.n.to_string(), runs, "n/a".into(), "n/a".into(), why]);
            continue;
        };
        let r = c.relative_shift;
        t.add_row(vec![
            p.n.to_string(),
            runs,
            si(c.median_a),
            si(c.median_b),
            signed_percent(c.relative),
            format!(
                "{} [{}, {}]",
                signed_percent(r.point),
                signed_percent(r.lower),
                signed_percent(r.upper)
            ),
            p_value(c.p_value),
            c.verdict.to_string(),
            c.min_detectable
                .map_or_else(|| "none".into(), |d| format!("±{}", percent(d))),
            c.runs_needed.map_or_else(|| "-".into(), |k| k.to_string()),
        ]);
    }
    for col in t.column_iter_mut() {
        col.set_cell_alignment(CellAlignment::Right);
    }
    if let Some(col) = t.column_mut(7) {
        col.set_cell_alignment(CellAlignment::Left);
    }
    t
}

fn write_summary(out: &mut dyn Write, view: &CompareView) -> io::Result<()> {
    let s = &view.summary;
    if view.points.is_empty() {
        writeln!(
            out,
            "verdict: nothing compared (no N measured by both runs)"
        )?;
        return Ok(());
    }
    let groups: Vec<String> = [
        (Verdict::Regressed, &s.regressed),
        (Verdict::Improved, &s.improved),
        (Verdict::NoChange, &s.no_change),
        (Verdict::Inconclusive, &s.inconclusive),
    ]
    .iter()
    .filter(|(_, ns)| !ns.is_empty())
    .map(|(v, ns)| format!("{v} at N={}", list(ns)))
    .collect();
    writeln!(out, "verdict: {} ({})", s.verdict, groups.join(" · "))?;
    if let Some(w) = s.worst {
        writeln!(
            out,
            "worst point: N={}, {} [{}, {}], {}",
            w.n,
            signed_percent(w.shift.point),
            signed_percent(w.shift.lower),
            signed_percent(w.shift.upper),
            w.verdict
        )?;
    }
    let scales = |side: Side, r: &super::compare_view::RunRef| match r.scales_to {
        Some(st) => format!("{side} scales to {:.2} out of {}", st.speedup, st.n),
        None => format!("{side}: no scaling figure (needs N=1 and one more N)"),
    };
    writeln!(
        out,
        "scaling: {}; {}",
        scales(Side::A, &view.a),
        scales(Side::B, &view.b)
    )?;
    if let Some(side) = s.ahead_everywhere {
        let n = view.points.iter().filter(|p| p.change.is_some()).count();
        let at = if n == 1 {
            "at the one N compared"
        } else {
            "at every N compared"
        };
        writeln!(out, "curves: {side} is ahead {at} (medians)")?;
    }
    for c in &s.crossings {
        let behind = match c.ahead_below {
            Side::A => Side::B,
            Side::B => Side::A,
        };
        writeln!(
            out,
            "curves: cross between N={} and N={} (≈ N={:.1}): {} ahead below, {} ahead above{}",
            c.from_n,
            c.to_n,
            c.at_n,
            c.ahead_below,
            behind,
            if c.significant {
                ""
            } else {
                " (within noise: not both points are significant)"
            }
        )?;
    }
    Ok(())
}

/// `0.0312`, `0.500`, `1.1e-5`.
fn p_value(p: f64) -> String {
    if p >= 0.001 {
        format!("{p:.3}")
    } else {
        format!("{p:.1e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p_values_read_well() {
        assert_eq!(p_value(0.5), "0.500");
        assert_eq!(p_value(0.0312), "0.031");
        assert_eq!(p_value(1.08e-5), "1.1e-5");
    }
}
