//! `scalelab profile RUN`: the CPU profiles a `--profile` run recorded — what grows with N (the
//! default with several N), the top functions at one N (`--at`), the diff against another run
//! (`--diff`), flame graphs (`--flamegraph`); or any one perf.data (`--perf-data`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use analysis::profile::{self, GrowthReport, PointProfile};
use anyhow::{Context, Result, bail};
use model::record::RunData;
use model::safe_text::printable;
use present::{Printer, flame_graph, profile_table};

use super::show;
use crate::arguments::ProfileArgs;
use crate::output::Chosen;

pub fn run(db: Option<&Path>, args: &ProfileArgs) -> Result<ExitCode> {
    if let Some(file) = &args.perf_data {
        return one_file(file, args);
    }
    if args.kallsyms.is_some() {
        bail!(
            "--kallsyms applies to --perf-data only: a run's profiles are symbolised with the \
             kallsyms snapshot taken when they were recorded"
        );
    }
    let spec = args.run.as_deref().unwrap_or("last");
    let data = step(show::load_with_profiles(db, spec)?, args.step.as_deref())?;
    let points = load(&data)?;
    let mut out = crate::stdout::stdout();

    if let Some(other) = &args.diff {
        let data_b = step(show::load_with_profiles(db, other)?, args.step.as_deref())?;
        let points_b = load(&data_b)?;
        let n = match args.at {
            Some(n) => n,
            None => points
                .iter()
                .map(|p| p.n)
                .filter(|n| points_b.iter().any(|q| q.n == *n))
                .max()
                .with_context(|| {
                    format!(
                        "runs {} and {} profiled no N in common; pick one with --at",
                        data.meta.id, data_b.meta.id
                    )
                })?,
        };
        let a = at(&points, n, &data)?;
        let b = at(&points_b, n, &data_b)?;
        let rows = profile::diff(a, b);
        if a.event != b.event {
            eprintln!(
                "warning: run {} sampled {} and run {} {}: shares compare, costs per op do not",
                data.meta.id,
                printable(&a.event),
                data_b.meta.id,
                printable(&b.event)
            );
        }
        let (la, lb) = (
            format!("run {}", data.meta.id),
            format!("run {}", data_b.meta.id),
        );
        match args.output.chosen() {
            Chosen::Json => {
                let value = serde_json::json!({
                    "run_a": data.meta.id, "run_b": data_b.meta.id, "n": n, "unit": b.unit,
                    "functions": rows,
                });
                model::safe_text::write_json(&mut out, &value)?;
            }
            Chosen::Printed(format) => {
                let mut p = crate::output::printer(&mut out, format);
                profile_table::write_diff(&mut p, &rows, (&la, &lb), n, &b.unit, args.top)?;
                p.finish()?;
            }
        }
        if let Some(svg) = &args.flamegraph {
            let title = format!(
                "{} at N={n}: {la} → {lb} (red grew, blue shrank)",
                data.meta.workload
            );
            let w = create(svg)?;
            flame_graph::write_differential(w, a, b, title)?;
            eprintln!("differential flame graph: {}", svg.display());
        }
        return Ok(ExitCode::SUCCESS);
    }

    let grow = if args.at.is_none() && points.len() >= 2 {
        profile::what_grows(&points)
    } else {
        None
    };
    let shown: Vec<&PointProfile> = match (args.at, &grow) {
        (Some(n), _) => vec![at(&points, n, &data)?],
        (None, Some(_)) => Vec::new(),
        (None, None) => points.iter().collect(),
    };
    match args.output.chosen() {
        Chosen::Json => {
            let value = serde_json::json!({
                "run": data.meta.id,
                "what_grows": grow,
                "points": if shown.is_empty() { points.iter().collect() } else { shown.clone() },
            });
            model::safe_text::write_json(&mut out, &value)?;
        }
        Chosen::Printed(format) => {
            let mut p = crate::output::printer(&mut out, format);
            write_profiles(&mut p, &data, args, grow.as_ref(), &points, &shown)?;
            p.finish()?;
        }
    }
    if let Some(svg) = &args.flamegraph {
        let p = match shown.first() {
            Some(p) => *p,
            None => points.last().context("no profiled point")?,
        };
        let title = format!("{} · N={} · run {}", data.meta.workload, p.n, data.meta.id);
        flame_graph::write_flamegraph(create(svg)?, p, title)?;
        eprintln!("flame graph of N={}: {}", p.n, svg.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// The profiles of a run for people: its description, the step, what grows (with each
/// point's warnings), then each point shown.
fn write_profiles(
    p: &mut Printer<'_>,
    data: &RunData,
    args: &ProfileArgs,
    grow: Option<&GrowthReport>,
    points: &[PointProfile],
    shown: &[&PointProfile],
) -> Result<()> {
    writeln!(p, "{}", data.meta.description())?;
    writeln!(p, "op: {}", printable(&data.meta.op_unit))?;
    let steps = analysis::step::step_names(data);
    match &args.step {
        Some(name) => writeln!(p, "step: {} (its own profile)", printable(name))?,
        None if steps.len() > 1 => writeln!(
            p,
            "step: cmd, the main command (the others: --step {})",
            printable(&steps[1..].join(" | --step "))
        )?,
        None => {}
    }
    writeln!(p)?;
    if let Some(g) = grow {
        profile_table::write_grows(p, g, args.top)?;
        let warning = p.options().palette.warning();
        for point in points {
            for w in profile_table::warnings(point) {
                writeln!(p, "{warning} {}", printable(&w))?;
            }
        }
        writeln!(p, "(per point: scalelab profile {} --at N)", data.meta.id)?;
    }
    for point in shown {
        profile_table::write_top(p, point, args.top, args.load)?;
        writeln!(p)?;
    }
    Ok(())
}

/// The run itself, or its step `name` read as a run (`--step`).
fn step(data: RunData, name: Option<&str>) -> Result<RunData> {
    Ok(match name {
        Some(name) => analysis::step::select(&data, name)?,
        None => data,
    })
}

fn load(data: &RunData) -> Result<Vec<PointProfile>> {
    let points = profile::load_run(data)
        .with_context(|| format!("reading the profiles of run {}", data.meta.id))?;
    if points.is_empty() {
        bail!(
            "run {} has no profiles — record them with `scalelab run … --profile` (perf must be installed)",
            data.meta.id
        );
    }
    Ok(points)
}

fn at<'a>(points: &'a [PointProfile], n: u32, data: &RunData) -> Result<&'a PointProfile> {
    points.iter().find(|p| p.n == n).with_context(|| {
        let have: Vec<String> = points.iter().map(|p| p.n.to_string()).collect();
        format!(
            "--at {n}: run {} has profiles at N={} only",
            data.meta.id,
            have.join(",")
        )
    })
}

fn create(path: &Path) -> Result<BufWriter<File>> {
    // Never through a link, never another user's file (see owned_dir::create_output).
    Ok(BufWriter::new(
        sys::owned_dir::create_output(path)
            .with_context(|| format!("--flamegraph: creating {}", path.display()))?,
    ))
}

/// `--perf-data FILE`: one file, whole, timed (the figure bench/speed/profile-speed reads).
fn one_file(file: &Path, args: &ProfileArgs) -> Result<ExitCode> {
    let started = Instant::now();
    let p = profile::load_file(file, args.kallsyms.as_deref())?;
    let elapsed = started.elapsed();
    let mut out = crate::stdout::stdout();
    match args.output.chosen() {
        Chosen::Json => model::safe_text::write_json(&mut out, &p)?,
        Chosen::Printed(format) => {
            let mut printer = crate::output::printer(&mut out, format);
            profile_table::write_top(&mut printer, &p, args.top, args.load)?;
            printer.finish()?;
        }
    }
    eprintln!(
        "read, symbolised and aggregated {} samples ({} functions) in {:.3}s",
        p.samples,
        p.functions.len(),
        elapsed.as_secs_f64()
    );
    if let Some(svg) = &args.flamegraph {
        flame_graph::write_flamegraph(create(svg)?, &p, file.display().to_string())?;
        eprintln!("flame graph: {}", svg.display());
    }
    Ok(ExitCode::SUCCESS)
}
