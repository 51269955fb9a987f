//! Terminal text for a [`BisectView`] (`scalelab bisect`): the range and what was measured, the
//! ends' comparison, one line per step and N (the commit against the good and the bad end, each
//! a change with its interval and verdict), then the answer as git bisect gives it — `first bad
//! commit: <hash> <subject>` — with the change measured at it, its neighbours' verdicts, and
//! the steps, skips and time it took.

use std::io::{self, Write};

use analysis::bisect::{BisectView, PointChange, StepView};
use model::bisection::short;
use model::bisection::{BisectStatus, StepVerdict};
use model::number_text::{comma_list, percent, plural, signed_percent};
use model::safe_text::printable;

use crate::number_format::duration;
use crate::palette::{Palette, Role};

/// Writes the bisection (see the module doc).
pub fn write_bisect(out: &mut dyn Write, v: &BisectView, palette: Palette) -> io::Result<()> {
    write_header(out, v, palette)?;
    if !v.steps.is_empty() {
        writeln!(out)?;
        writeln!(
            out,
            "{:>4}  {:<10}  {:<7}  {:>4}  {:<40}  {:<40}  {:>6}  {:>7}",
            "step", "commit", "verdict", "N", "against good", "against bad", "groups", "time"
        )?;
        for s in &v.steps {
            write_step(out, s, palette)?;
        }
    }
    writeln!(out)?;
    write_answer(out, v, palette)?;
    write_footer(out, v, palette)
}

/// The settings, the range and the ends' comparison.
fn write_header(out: &mut dyn Write, v: &BisectView, palette: Palette) -> io::Result<()> {
    let good = &v.commits[0];
    let bad = &v.commits[v.commits.len() - 1];
    let steps_at = if v.step_threshold > v.threshold {
        format!(
            " (commits judged at ±{}, from the gap between the ends)",
            percent(v.step_threshold)
        )
    } else {
        String::new()
    };
    writeln!(
        out,
        "bisect {} · {} · {} · threshold ±{}{steps_at}, alpha {}",
        v.id,
        printable(&v.measured),
        v.metric,
        percent(v.threshold),
        v.alpha
    )?;
    writeln!(
        out,
        "range: good {} ({}) .. bad {} ({}) in {}: {} between, first-parent",
        printable(&v.good_spec),
        short(&good.hash),
        printable(&v.bad_spec),
        short(&bad.hash),
        printable(&v.repo),
        plural(v.commits.len() - 2, "commit"),
    )?;
    if let Some(ends) = &v.ends {
        for p in &ends.vs_good {
            writeln!(
                out,
                "ends: N={}: bad against good {} ({})",
                p.n,
                change(p, palette),
                if p.paired {
                    plural(ends.runs as usize, "pair")
                } else {
                    format!("{} a side, unpaired", plural(ends.runs as usize, "trial"))
                }
            )?;
        }
    }
    Ok(())
}

/// The first bad commit with the change at it and its neighbours, or why there is none.
fn write_answer(out: &mut dyn Write, v: &BisectView, palette: Palette) -> io::Result<()> {
    match (&v.first_bad, v.status) {
        (Some(answer), _) => {
            writeln!(
                out,
                "first bad commit: {} {}",
                answer.commit.hash,
                printable(&answer.commit.subject)
            )?;
            if let Some(judged) = &answer.judged {
                let against_bad = if judged.step == 0 {
                    String::new()
                } else {
                    judged
                        .vs_bad
                        .iter()
                        .map(|p| format!("; against bad {}", change(p, palette)))
                        .collect()
                };
                for p in &judged.vs_good {
                    writeln!(
                        out,
                        "  change at it: N={}: {} against good{against_bad} ({})",
                        p.n,
                        change(p, palette),
                        step_name(judged)
                    )?;
                }
            }
            if let Some(parent) = &answer.parent {
                neighbour(out, "before it", parent, v, palette)?;
            }
            if let Some(after) = &answer.after {
                neighbour(out, "after it", after, v, palette)?;
            }
        }
        (None, BisectStatus::NotRegression) => {
            writeln!(
                out,
                "not a regression: {} — nothing to bisect",
                v.ends
                    .as_ref()
                    .and_then(|e| e.reason.as_deref())
                    .unwrap_or("the bad end is not slower")
            )?;
        }
        (None, BisectStatus::Unresolved) => {
            writeln!(
                out,
                "only skipped commits are left: the first bad commit is one of"
            )?;
            for c in &v.candidates {
                writeln!(out, "  {} {}", c.hash, printable(&c.subject))?;
            }
        }
        (None, status) => writeln!(out, "bisection {status}")?,
    }
    Ok(())
}

/// The steps taken, skipped, the time spent, and verdicts that contradict each other.
fn write_footer(out: &mut dyn Write, v: &BisectView, palette: Palette) -> io::Result<()> {
    let skipped: Vec<String> = v
        .steps
        .iter()
        .filter(|s| s.verdict == StepVerdict::Skip)
        .map(|s| {
            format!(
                "{} {}",
                short(&s.commit.hash),
                s.reason
                    .as_deref()
                    .and_then(|r| r.split([':', '(']).next())
                    .unwrap_or("skipped")
                    .trim()
            )
        })
        .collect();
    writeln!(
        out,
        "{}{}, {} building and measuring{}",
        plural(v.steps.len(), "step"),
        if skipped.is_empty() {
            String::new()
        } else {
            format!(
                " ({} skipped: {})",
                skipped.len(),
                printable(&skipped.join("; "))
            )
        },
        duration(v.elapsed_ns as f64),
        if v.at.is_empty() {
            String::new()
        } else {
            format!(", bisected at N={}", comma_list(&v.at))
        }
    )?;
    for (bad, good) in &v.contradictions {
        writeln!(
            out,
            "{} {} was judged bad but the later {} good: the range may hold more than one \
             change, or a step decided wrongly (see its runs)",
            palette.warning(),
            short(&v.commits[*bad as usize].hash),
            short(&v.commits[*good as usize].hash),
        )?;
    }
    Ok(())
}

fn step_name(s: &StepView) -> String {
    if s.step == 0 {
        "the ends' step 0".into()
    } else {
        format!("step {}", s.step)
    }
}

fn neighbour(
    out: &mut dyn Write,
    label: &str,
    s: &StepView,
    v: &BisectView,
    palette: Palette,
) -> io::Result<()> {
    let last = v.commits.len() as u32 - 1;
    let (what, verdict) = match s.commit.position {
        0 => ("the good end".to_string(), "good".to_string()),
        p if p == last => ("the bad end".to_string(), "bad".to_string()),
        _ => (short(&s.commit.hash).to_string(), s.verdict.to_string()),
    };
    let figures: Vec<String> = if s.step == 0 {
        Vec::new()
    } else {
        s.vs_good
            .iter()
            .map(|p| format!("N={}: {} against good", p.n, change(p, palette)))
            .collect()
    };
    writeln!(
        out,
        "  {label}: {what} {} is {verdict}{}",
        printable(&s.commit.subject),
        if figures.is_empty() {
            String::new()
        } else {
            format!(" ({}; {})", figures.join(", "), step_name(s))
        }
    )
}

fn write_step(out: &mut dyn Write, s: &StepView, palette: Palette) -> io::Result<()> {
    let verdict = s.verdict.to_string();
    let painted = match s.verdict {
        StepVerdict::Bad => palette.paint(Role::Regressed, &format!("{verdict:<7}")),
        StepVerdict::Good => palette.paint(Role::Improved, &format!("{verdict:<7}")),
        _ => palette.paint(Role::Inconclusive, &format!("{verdict:<7}")),
    };
    let time = s
        .elapsed_ns
        .map_or_else(|| "-".into(), |ns| duration(ns as f64));
    if s.vs_good.is_empty() {
        writeln!(
            out,
            "{:>4}  {:<10}  {painted}  {:>4}  {}",
            s.step,
            short(&s.commit.hash),
            "-",
            printable(s.reason.as_deref().unwrap_or("")),
        )?;
        return Ok(());
    }
    for (i, g) in s.vs_good.iter().enumerate() {
        let b = s.vs_bad.iter().find(|p| p.n == g.n);
        let first = i == 0;
        writeln!(
            out,
            "{:>4}  {:<10}  {}  {:>4}  {}  {}  {:>6}  {:>7}",
            if first {
                s.step.to_string()
            } else {
                String::new()
            },
            if first { short(&s.commit.hash) } else { "" },
            if first {
                painted.clone()
            } else {
                " ".repeat(7)
            },
            g.n,
            change_padded(g, palette, 40),
            b.map_or_else(|| " ".repeat(40), |b| change_padded(b, palette, 40)),
            if first {
                s.runs.to_string()
            } else {
                String::new()
            },
            if first { time.clone() } else { String::new() },
        )?;
    }
    if s.verdict == StepVerdict::Skip {
        if let Some(reason) = &s.reason {
            writeln!(out, "{:>4}  {}", "", printable(reason))?;
        }
    }
    Ok(())
}

/// A change with its interval and verdict: `-2.98% [-3.41%, -2.55%] REGRESSED`.
fn change(p: &PointChange, palette: Palette) -> String {
    change_padded(p, palette, 0)
}

/// [`change`] padded to `width` columns (the colour codes take none).
fn change_padded(p: &PointChange, palette: Palette, width: usize) -> String {
    let Some(c) = p.change else {
        return format!("{:<width$}", "not compared");
    };
    let r = c.relative_shift;
    let figures = format!(
        "{} [{}, {}] ",
        signed_percent(r.point),
        signed_percent(r.lower),
        signed_percent(r.upper)
    );
    let verdict = c.verdict.to_string();
    let used = figures.chars().count() + verdict.chars().count();
    format!(
        "{figures}{}{}",
        palette.paint_opt(Role::of_verdict(c.verdict), &verdict),
        " ".repeat(width.saturating_sub(used))
    )
}
