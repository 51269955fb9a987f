//! Terminal text for a [`Comparison`] (`scalelab compare`, `scalelab ab`): both runs named,
//! the metric and which way is good, one row per N (medians, change, shift and interval, p,
//! verdict, what the runs could detect), the whole-curve lines (verdict, worst point, scaling of
//! each side, crossings), then notes and warnings, each with its hint. Verdicts are coloured
//! by the [`Palette`]; the same as Markdown for `compare --format markdown`.

use std::io::{self, Write};

use analysis::comparison::{Comparison, PointComparison, RunRef, Side};
use model::number_text::{comma_list, percent, si, signed_percent};
use model::safe_text::printable;
use stats::{Direction, Verdict};

use crate::grid::{Align, Grid, GridCell};
use crate::markdown;
use crate::palette::{Palette, Role};
use crate::text_options::TextOptions;

/// Writes the comparison as text, the table fitted to `opts.width`, verdicts and warnings
/// coloured by `opts.palette`.
pub fn write_compare(
    out: &mut dyn Write,
    comparison: &Comparison,
    opts: &TextOptions,
) -> io::Result<()> {
    write_header(out, comparison)?;
    writeln!(out)?;
    table(
        &comparison.points,
        comparison.paired,
        comparison.metric.label(),
    )
    .write_terminal(out, opts)?;
    write_summary(out, comparison, opts.palette)?;
    let (notes, warnings) = notes_and_warnings(comparison);
    if !notes.is_empty() || !warnings.is_empty() {
        writeln!(out)?;
    }
    for n in notes {
        writeln!(out, "note: {n}")?;
    }
    for w in warnings {
        writeln!(out, "{} {w}", opts.palette.warning())?;
    }
    Ok(())
}

/// Writes the comparison as Markdown: the same lines as paragraphs, the table whole, notes and
/// warnings as a list.
pub fn write_compare_markdown(out: &mut dyn Write, comparison: &Comparison) -> io::Result<()> {
    let lines = |text: Vec<u8>| -> Vec<String> {
        String::from_utf8_lossy(&text)
            .lines()
            .map(str::to_owned)
            .collect()
    };
    let mut head = Vec::new();
    write_header(&mut head, comparison)?;
    markdown::write_paragraphs(out, &lines(head))?;
    markdown::write_table(
        out,
        &table(
            &comparison.points,
            comparison.paired,
            comparison.metric.label(),
        ),
    )?;
    let mut summary = Vec::new();
    write_summary(&mut summary, comparison, Palette::plain())?;
    markdown::write_paragraphs(out, &lines(summary))?;
    let (notes, warnings) = notes_and_warnings(comparison);
    let items: Vec<String> = notes
        .into_iter()
        .map(|n| format!("note: {n}"))
        .chain(warnings.into_iter().map(|w| format!("warning: {w}")))
        .collect();
    markdown::write_list(out, &items)
}

/// The notes and the warnings, each made printable.
fn notes_and_warnings(comparison: &Comparison) -> (Vec<String>, Vec<String>) {
    let (notes, warnings): (Vec<_>, Vec<_>) = comparison.warnings.iter().partition(|w| w.is_note());
    let text = |w: &&_| printable(&ToString::to_string(*w)).into_owned();
    (
        notes.iter().map(text).collect(),
        warnings.iter().map(text).collect(),
    )
}

/// Both runs, the metric, the method.
fn write_header(out: &mut dyn Write, comparison: &Comparison) -> io::Result<()> {
    writeln!(out, "A: {}", comparison.a.description)?;
    writeln!(out, "B: {}", comparison.b.description)?;
    let direction = match comparison.metric.direction {
        Direction::HigherIsBetter => "higher is better",
        Direction::LowerIsBetter => "lower is better",
    };
    let metric = &comparison.metric;
    let name = printable(&metric.name);
    if metric.unit.is_empty() {
        writeln!(
            out,
            "metric: {name} ({direction}); op: {}",
            printable(&metric.op)
        )?;
    } else {
        writeln!(
            out,
            "metric: {name} in {} ({direction}); op: {}",
            printable(&metric.unit),
            printable(&metric.op)
        )?;
    }
    let method = if comparison.paired {
        "paired: each trial of B against the trial of A it ran back to back with, the \
         Hodges-Lehmann median of the per-pair changes B/A with its {level} interval, Wilcoxon \
         signed-rank p"
    } else {
        "Hodges-Lehmann shift with its {level} interval, Mann-Whitney U p"
    };
    writeln!(
        out,
        "B against A, per N: median of per-trial {}, {}; a change counts past ±{} at alpha {}",
        printable(comparison.metric.label()),
        method.replace(
            "{level}",
            &format!("{:.0}%", comparison.options.level * 100.0)
        ),
        percent(comparison.options.threshold),
        comparison.options.alpha
    )
}

/// Left out first at a narrow width: the trial counts, p, what the runs could detect, the runs
/// a decision needs, then the medians; N, change, shift and verdict always stay.
fn table(points: &[PointComparison], paired: bool, label: &str) -> Grid {
    let label = printable(label);
    let mut t = Grid::default();
    t.keep("N", Align::Right)
        .optional(
            if paired { "pairs (A/B)" } else { "runs A/B" },
            Align::Right,
            1,
        )
        .optional(&format!("A {label}"), Align::Right, 5)
        .optional(&format!("B {label}"), Align::Right, 6)
        .keep("change", Align::Right)
        .keep("shift [95% CI]", Align::Right)
        .optional("p", Align::Right, 2)
        .keep("verdict", Align::Left)
        .optional("detectable", Align::Right, 3)
        .optional("runs needed", Align::Right, 4);
    for p in points {
        let runs = match p.pairs {
            Some(pairs) => format!("{pairs} ({}/{})", p.runs_a, p.runs_b),
            None => format!("{}/{}", p.runs_a, p.runs_b),
        };
        let Some(c) = p.change else {
            let why = printable(&p.note.clone().unwrap_or_default()).into_owned();
            t.row(vec![
                p.n.to_string().into(),
                runs.into(),
                "n/a".into(),
                "n/a".into(),
                why.into(),
            ]);
            continue;
        };
        let r = c.relative_shift;
        t.row(vec![
            p.n.to_string().into(),
            runs.into(),
            si(c.median_a).into(),
            si(c.median_b).into(),
            signed_percent(c.relative).into(),
            format!(
                "{} [{}, {}]",
                signed_percent(r.point),
                signed_percent(r.lower),
                signed_percent(r.upper)
            )
            .into(),
            p_value(c.p_value).into(),
            GridCell {
                text: c.verdict.to_string(),
                role: Role::of_verdict(c.verdict),
            },
            c.min_detectable
                .map_or_else(|| "none".into(), |d| format!("±{}", percent(d)))
                .into(),
            c.runs_needed
                .map_or_else(|| "-".into(), |k| k.to_string())
                .into(),
        ]);
    }
    t
}

fn write_summary(out: &mut dyn Write, comparison: &Comparison, palette: Palette) -> io::Result<()> {
    let verdict = |v: Verdict, text: String| palette.paint_opt(Role::of_verdict(v), &text);
    let s = &comparison.summary;
    if comparison.points.is_empty() {
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
    .map(|(v, ns)| verdict(*v, format!("{v} at N={}", comma_list(ns))))
    .collect();
    writeln!(
        out,
        "verdict: {} ({})",
        verdict(s.verdict, s.verdict.to_string()),
        groups.join(" · ")
    )?;
    if let Some(w) = s.worst {
        writeln!(
            out,
            "worst point: N={}, {} [{}, {}], {}",
            w.n,
            signed_percent(w.shift.point),
            signed_percent(w.shift.lower),
            signed_percent(w.shift.upper),
            verdict(w.verdict, w.verdict.to_string())
        )?;
    }
    let scales = |side: Side, r: &RunRef| match r.scales_to {
        Some(st) => format!("{side} scales to {st}"),
        None => format!("{side}: no scaling figure (needs N=1 and one more N)"),
    };
    writeln!(
        out,
        "scaling: {}; {}",
        scales(Side::A, &comparison.a),
        scales(Side::B, &comparison.b)
    )?;
    if let Some(side) = s.ahead_everywhere {
        let n = comparison
            .points
            .iter()
            .filter(|p| p.change.is_some())
            .count();
        let at = if n == 1 {
            "at the one N compared"
        } else {
            "at every N compared"
        };
        writeln!(out, "curves: {side} is ahead {at} (significantly at each)")?;
    } else if s.regressed.is_empty() && s.improved.is_empty() && s.worst.is_some() {
        // Compared, but no median differs by more than the noise: nobody is ahead.
        writeln!(
            out,
            "curves: no N differs significantly (every verdict is NO CHANGE or INCONCLUSIVE)"
        )?;
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
    use analysis::comparison::compare_runs;
    use lab::test_runs::{ab_runs, around, run};
    use stats::CompareOptions;

    use super::*;

    fn text(comparison: &Comparison) -> String {
        let mut out = Vec::new();
        write_compare(&mut out, comparison, &TextOptions::plain()).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn compare(a: &model::record::RunData, b: &model::record::RunData) -> Comparison {
        compare_runs(a, b, &CompareOptions::default(), true)
    }

    #[test]
    fn a_regression_at_one_point_reads_as_the_verdict_and_the_worst_point() {
        let a = run(
            1,
            "spin",
            &[
                (1, &around(1000.0, 0.01, 10)),
                (2, &around(2000.0, 0.01, 10)),
            ],
        );
        let b = run(
            2,
            "spin",
            &[
                (1, &around(1000.0, 0.01, 10)),
                (2, &around(1800.0, 0.01, 10)),
            ],
        );
        let shown = text(&compare(&a, &b));
        assert!(shown.contains("higher is better"), "{shown}");
        assert!(
            shown.contains("verdict: REGRESSED (REGRESSED at N=2 · NO CHANGE at N=1)"),
            "{shown}"
        );
        assert!(shown.contains("worst point: N=2, -10.0%"), "{shown}");
        assert!(
            shown.contains("A scales to 2.00 out of 2 tasks; B scales to 1.80 out of 2 tasks"),
            "{shown}"
        );
    }

    #[test]
    fn crossing_curves_are_named_with_the_side_ahead_below_and_above() {
        let a = run(
            1,
            "spin",
            &[
                (1, &around(1000.0, 0.01, 10)),
                (4, &around(3000.0, 0.01, 10)),
            ],
        );
        let b = run(
            2,
            "spin",
            &[
                (1, &around(1100.0, 0.01, 10)),
                (4, &around(2700.0, 0.01, 10)),
            ],
        );
        assert!(
            text(&compare(&a, &b))
                .contains("cross between N=1 and N=4 (≈ N=1.7): B ahead below, A ahead above\n")
        );
    }

    #[test]
    fn an_expected_difference_is_a_note_and_an_unexpected_one_a_warning() {
        let mut a = run(1, "spin", &[(1, &[1.0, 2.0])]);
        let mut b = run(2, "spin", &[(1, &[1.0, 2.0])]);
        a.meta.env.kernel_release = "6.8.0".into();
        b.meta.env.kernel_release = "6.9.1".into();
        a.meta.env.governor = Some("performance".into());
        b.meta.env.governor = Some("powersave".into());
        let shown = text(&compare(&a, &b));
        assert!(
            shown.contains("note: kernel_release: A `6.8.0`, B `6.9.1`"),
            "{shown}"
        );
        assert!(
            shown
                .contains("warning: environment differs, governor: A `performance`, B `powersave`"),
            "{shown}"
        );
    }

    #[test]
    fn a_point_not_compared_says_why() {
        let a = run(1, "spin", &[(1, &[1.0, 2.0])]);
        let mut b = run(2, "spin", &[(1, &[1.0])]);
        b.trials[0].outcome = model::record::TrialOutcome::Failed {
            reason: "boom".into(),
        };
        assert!(text(&compare(&a, &b)).contains("no successful trial in B"));
    }

    #[test]
    fn a_paired_comparison_names_its_test_and_the_pairs_left_out() {
        let (a, b) = ab_runs();
        let shown = text(&compare(&a, &b));
        assert!(shown.contains("Wilcoxon signed-rank p"), "{shown}");
        assert!(shown.contains("11 (12/11)"), "{shown}");
        assert!(
            shown.contains("N=1: 1 trial of A left out of the paired test"),
            "{shown}"
        );
        let unpaired = compare_runs(&a, &b, &CompareOptions::default(), false);
        assert!(text(&unpaired).contains("Mann-Whitney U p"));
    }

    /// A paired comparison as Markdown, for pasting into a pull request or a mail.
    #[test]
    fn comparison_markdown_snapshot() {
        let (a, b) = ab_runs();
        let mut out = Vec::new();
        write_compare_markdown(&mut out, &compare(&a, &b)).unwrap();
        insta::assert_snapshot!(String::from_utf8(out).unwrap());
    }

    #[test]
    fn verdicts_are_coloured_only_when_the_palette_is_on() {
        let a = run(1, "spin", &[(1, &around(1000.0, 0.01, 10))]);
        let b = run(2, "spin", &[(1, &around(800.0, 0.01, 10))]);
        let c = compare(&a, &b);
        let mut out = Vec::new();
        let opts = TextOptions {
            palette: Palette::new(true),
            width: None,
        };
        write_compare(&mut out, &c, &opts).unwrap();
        let coloured = String::from_utf8(out).unwrap();
        assert!(
            coloured.contains("verdict: \x1b[31mREGRESSED\x1b[0m"),
            "{coloured:?}"
        );
        assert!(!text(&c).contains('\x1b'));
    }

    #[test]
    fn the_comparison_table_fits_80_columns_keeping_the_verdict() {
        let (a, b) = ab_runs();
        let mut out = Vec::new();
        let opts = TextOptions {
            width: Some(80),
            ..TextOptions::plain()
        };
        write_compare(&mut out, &compare(&a, &b), &opts).unwrap();
        let shown = String::from_utf8(out).unwrap();
        for line in shown
            .lines()
            .filter(|l| l.starts_with(['┌', '│', '╞', '└']))
        {
            assert!(unicode_width::UnicodeWidthStr::width(line) <= 80, "{shown}");
        }
        assert!(shown.contains("│ N "), "{shown}");
        assert!(shown.contains("verdict"), "{shown}");
        assert!(
            shown.contains("columns left out at 80 columns: "),
            "{shown}"
        );
    }

    /// Issue 13: an A/A `ab` said `B is ahead at the one N compared` when nothing differed
    /// significantly.
    #[test]
    fn a_lead_within_the_noise_is_not_called_ahead() {
        let a = run(1, "spin", &[(1, &around(1000.0, 0.02, 10))]);
        let b = run(2, "spin", &[(1, &around(1002.0, 0.02, 10))]);
        let shown = text(&compare(&a, &b));
        assert!(!shown.contains("ahead"), "{shown}");
        assert!(
            shown.contains("curves: no N differs significantly"),
            "{shown}"
        );
        let faster = run(2, "spin", &[(1, &around(1200.0, 0.02, 10))]);
        let shown = text(&compare(&a, &faster));
        assert!(
            shown.contains("curves: B is ahead at the one N compared"),
            "{shown}"
        );
    }

    /// Issue 13: `scales to 0.46 out of 4 CPUs` on a 2-CPU machine.
    #[test]
    fn scaling_counts_tasks_past_the_cpus() {
        let mut a = run(1, "spin", &[(1, &[100.0]), (4, &[46.0])]);
        let mut b = run(2, "spin", &[(1, &[100.0]), (4, &[50.0])]);
        a.meta.env.online_cpus = 2;
        b.meta.env.online_cpus = 4;
        let shown = text(&compare(&a, &b));
        assert!(
            shown.contains(
                "scaling: A scales to 0.46 out of 4 tasks (2 CPUs); B scales to 0.50 out of 4 CPUs"
            ),
            "{shown}"
        );
    }

    #[test]
    fn p_values_read_well() {
        assert_eq!(p_value(0.5), "0.500");
        assert_eq!(p_value(0.0312), "0.031");
        assert_eq!(p_value(1.08e-5), "1.1e-5");
    }
}
