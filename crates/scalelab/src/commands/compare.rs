//! `scalelab compare RUN_A RUN_B`: load both runs, compare them (lab's
//! `analysis::comparison`), refuse runs that measure different things unless `--force`, print
//! text, JSON, Markdown or CSV, and exit 1 when any point REGRESSED.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use analysis::comparison::{Comparison, TrialMetric};
use anyhow::{Context, Result};
use app::compare::CompareRequest;
use model::record::RunData;
use present::Format;
use present::comparison_csv::write_compare_csv;
use present::comparison_table::{write_compare, write_compare_markdown};
use stats::CompareOptions;

use super::show;
use crate::arguments::{CompareArgs, VerdictArgs};
use crate::output;
use crate::output::Chosen;

impl VerdictArgs {
    /// The statistics' options: throughput, higher is better, 95% intervals.
    pub fn options(&self) -> CompareOptions {
        CompareOptions {
            alpha: self.alpha,
            threshold: self.threshold,
            ..CompareOptions::default()
        }
    }
}

pub fn run(db: Option<&Path>, args: &CompareArgs) -> Result<ExitCode> {
    let a =
        show::load(db, &args.run_a).with_context(|| format!("loading run A (`{}`)", args.run_a))?;
    let b =
        show::load(db, &args.run_b).with_context(|| format!("loading run B (`{}`)", args.run_b))?;
    let metric = TrialMetric::resolve(&args.metric, &a.meta, &b.meta).context("--metric")?;
    let comparison = build_on(&a, &b, &args.verdict, args.force, metric)?;
    print(&comparison, args.output.chosen())
}

/// Compares the runs on throughput (paired for the two runs of one `ab` unless
/// `--unpaired`), refusing runs that measure different things unless `force`.
pub fn build(a: &RunData, b: &RunData, verdict: &VerdictArgs, force: bool) -> Result<Comparison> {
    build_on(a, b, verdict, force, TrialMetric::Throughput)
}

/// [`build`] on the per-trial value `metric` gives.
fn build_on(
    a: &RunData,
    b: &RunData,
    verdict: &VerdictArgs,
    force: bool,
    metric: TrialMetric,
) -> Result<Comparison> {
    let request = CompareRequest {
        options: verdict.options(),
        paired: !verdict.unpaired,
        force,
        metric,
    };
    Ok(app::compare::compare(a, b, &request)?)
}

pub fn print(comparison: &Comparison, format: Chosen) -> Result<ExitCode> {
    let mut out = crate::stdout::stdout();
    match format {
        Chosen::Json => model::safe_text::write_json(&mut out, comparison)?,
        Chosen::Printed(Format::Markdown) => write_compare_markdown(&mut out, comparison)?,
        // One row per N with the figures as numbers, not the table's text.
        Chosen::Printed(Format::Csv) => write_compare_csv(&mut out, comparison)?,
        Chosen::Printed(Format::Text) => write_compare(&mut out, comparison, &output::stdout())?,
    }
    out.flush()?;
    Ok(if comparison.regressed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
