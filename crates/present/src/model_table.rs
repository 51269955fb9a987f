//! Terminal text for a [`ScalingModel`] (`scalelab model`): the parameters with standard errors
//! and intervals, the peak and the Amdahl ceiling, the goodness of fit, measured against
//! modelled per N, the predictions with their bands, then the warnings, each with its hint.

use std::io::{self, Write};

use analysis::scaling_model::{ModelSource, ScalingModel};
use model::number_text::{si, signed_percent};
use model::safe_text::printable;
use stats::Estimate;

use crate::grid::{Align, Grid};
use crate::printer::Printer;

/// Writes the model (its tables are narrow: never fitted to a width).
pub fn write_model(out: &mut Printer<'_>, model: &ScalingModel) -> io::Result<()> {
    let opts = *out.options();
    let f = &model.fit;
    match &model.source {
        ModelSource::Run {
            description, op, ..
        } => {
            writeln!(out, "USL fit of {description}")?;
            writeln!(out, "op: {}", printable(op))?;
        }
        ModelSource::Csv { path } => writeln!(out, "USL fit of {}", printable(path))?,
    }
    writeln!(
        out,
        "model: {}, least squares over {} points (every trial) at {} distinct N ({}..{}); \
         throughput in {}",
        model.model,
        f.points,
        f.distinct_n,
        number(f.min_n),
        number(f.max_n),
        model.unit
    )?;
    writeln!(out)?;
    let mut t = table(&["parameter", "estimate", "std. error", "95% CI"], 1);
    for (name, e, se) in [
        ("σ contention", f.sigma, f.sigma_se),
        ("κ coherency", f.kappa, f.kappa_se),
        ("λ ops/s of one task", f.lambda, f.lambda_se),
    ] {
        t.add_row(vec![
            name.to_string(),
            sig4(e.point),
            sig4(se),
            interval(&e),
        ]);
    }
    out.table(&t)?;
    match (f.n_star, f.x_at_n_star) {
        (Some(n), Some(x)) => {
            let inside = n >= f.min_n && n <= f.max_n;
            writeln!(
                out,
                "peak: N* = √((1−σ)/κ) = {n:.1}, X(N*) = {} {} ({} the measured range)",
                si(x),
                model.unit,
                if inside { "inside" } else { "outside" }
            )?;
        }
        _ => writeln!(
            out,
            "peak: none (κ = 0: no retrograde throughput in these data)"
        )?,
    }
    match f.amdahl_ceiling {
        Some(c) => writeln!(
            out,
            "Amdahl ceiling: λ/σ = {} {} (the limit as N grows if κ were 0)",
            si(c),
            model.unit
        )?,
        None => writeln!(out, "Amdahl ceiling: none (σ = 0)")?,
    }
    writeln!(
        out,
        "fit: R² = {:.4}, {} residual degrees of freedom",
        f.r_squared, f.dof
    )?;
    writeln!(out)?;

    let mut t = table(
        &["N", "points", "measured (median)", "model", "residual"],
        0,
    );
    for p in &model.measured {
        t.add_row(vec![
            number(p.n),
            p.count.to_string(),
            si(p.median),
            si(p.modelled),
            signed_percent(p.residual),
        ]);
    }
    out.table(&t)?;

    let mut t = table(&["predict N", "X(N)", "95% band", ""], 0);
    for p in &model.predictions {
        t.add_row(vec![
            number(p.n),
            si(p.x.point),
            format!("{} .. {}", si(p.x.lower), si(p.x.upper)),
            if p.extrapolated {
                "extrapolated (beyond 2× max N)".into()
            } else {
                String::new()
            },
        ]);
    }
    out.table(&t)?;
    if !model.warnings.is_empty() {
        writeln!(out)?;
        for w in &model.warnings {
            writeln!(
                out,
                "{} {}",
                opts.palette.warning(),
                printable(&w.to_string())
            )?;
        }
    }
    Ok(())
}

/// A table whose columns from `from` on are right-aligned (figures).
fn table(headers: &[&str], from: usize) -> Grid {
    let mut g = Grid::default();
    for (i, h) in headers.iter().enumerate() {
        g.keep(h, if i < from { Align::Left } else { Align::Right });
    }
    g
}

fn interval(e: &Estimate) -> String {
    format!("{} .. {}", sig4(e.lower), sig4(e.upper))
}

/// Four significant figures, in scientific form below 0.001: `0.02672`, `7.691e-4`, `995.6`.
fn sig4(x: f64) -> String {
    let a = x.abs();
    if a == 0.0 {
        "0".into()
    } else if !x.is_finite() {
        "n/a".into()
    } else if !(1e-3..1e6).contains(&a) {
        format!("{x:.3e}")
    } else {
        let decimals = (3 - a.log10().floor() as i32).max(0) as usize;
        format!("{x:.decimals$}")
    }
}

/// A task count: `4`, or `2.5` when not whole.
fn number(n: f64) -> String {
    if n.fract() == 0.0 {
        format!("{n:.0}")
    } else {
        format!("{n}")
    }
}

#[cfg(test)]
mod tests {
    use analysis::scaling_model::{fit_csv, fit_run, parse_csv};
    use lab::test_runs::{cisco_csv, run};

    use super::*;

    fn text(model: &ScalingModel) -> String {
        crate::printer::printed(crate::printer::Format::Text, |o| write_model(o, model))
    }

    #[test]
    fn the_cisco_fit_reads_as_in_the_book() {
        let points = parse_csv(&cisco_csv()).unwrap();
        let model = fit_csv("cisco.csv", &points, &[32.0, 64.0, 100.0]).unwrap();
        let shown = text(&model);
        for needle in [
            "USL fit of cisco.csv",
            "σ contention",
            "0.02672",
            "7.691e-4",
            "995.6",
            "N* = √((1−σ)/κ) = 35.6, X(N*) = 12.3k ops/s (outside the measured range)",
            "extrapolated (beyond 2× max N)",
            "warning: the peak N* = 35.6 lies outside the measured N = 1..32",
        ] {
            assert!(shown.contains(needle), "{needle}:\n{shown}");
        }
    }

    #[test]
    fn a_fitted_run_is_headed_by_its_description() {
        let usl = |n: f64| 100_000.0 * n / (1.0 + 0.05 * (n - 1.0) + 0.002 * n * (n - 1.0));
        let rows: Vec<(u32, Vec<f64>)> = [1u32, 2, 4, 8, 16]
            .iter()
            .map(|&n| {
                (
                    n,
                    vec![usl(f64::from(n)) * 1.005, usl(f64::from(n)) * 0.995],
                )
            })
            .collect();
        let points: Vec<(u32, &[f64])> = rows.iter().map(|(n, v)| (*n, v.as_slice())).collect();
        let model = fit_run(&run(1, "spin", &points), &[], false).unwrap();
        assert!(text(&model).contains("USL fit of run 1 · spin"));
    }

    #[test]
    fn four_significant_figures() {
        assert_eq!(sig4(0.026_715_91), "0.02672");
        assert_eq!(sig4(7.690_945e-4), "7.691e-4");
        assert_eq!(sig4(995.6486), "995.6");
        assert_eq!(sig4(28.698), "28.70");
        assert_eq!(sig4(0.0), "0");
        assert_eq!(sig4(1.5e7), "1.500e7");
        assert_eq!(number(4.0), "4");
        assert_eq!(number(2.5), "2.5");
    }
}
