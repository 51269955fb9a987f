//! `scalelab push --to DB`: copy this store's runs to another (a team's PostgreSQL, or another
//! SQLite file), idempotently by run UUID, with their profile files when `--with-profiles`;
//! prints what was copied and what was already there.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use store::{RunFilter, Store};

use crate::arguments::PushArgs;
use crate::db_path;

pub fn run(db: Option<&Path>, args: &PushArgs) -> Result<ExitCode> {
    let from_location = db_path::resolve(db)?;
    let to_location = store::Location::parse(&args.to).context("--to")?;
    if from_location == to_location {
        bail!("--to names the store runs are pushed from ({to_location}); give another one");
    }
    let from = db_path::open_location(&from_location, false)?;
    let mut to = Store::open_at(&to_location, true)
        .with_context(|| format!("opening --to {to_location}"))?;
    let filter = RunFilter {
        workload: args.workload.clone(),
        tags: args.tags.clone(),
        variant: args.variant.clone(),
        ..RunFilter::default()
    };
    let report = store::push(&from, &mut to, &filter, args.with_profiles)
        .with_context(|| format!("pushing runs from {from_location} to {to_location}"))?;
    let mut out = crate::stdout::stdout();
    let mut status = ExitCode::SUCCESS;
    for (_, files) in &report.files {
        for why in &files.missing {
            eprintln!(
                "{} {}: not copied",
                crate::output::stderr().warning(),
                model::safe_text::printable(why)
            );
            status = ExitCode::from(1);
        }
    }
    if args.output.json() {
        let pairs = |v: &[(i64, i64)]| -> Vec<serde_json::Value> {
            v.iter()
                .map(|(from, to)| serde_json::json!({"id": from, "target_id": to}))
                .collect()
        };
        model::safe_text::write_json(
            &mut out,
            &serde_json::json!({
                "to": to_location.to_string(),
                "copied": pairs(&report.copied),
                "present": pairs(&report.present),
                "running": report.running,
                "files": report.files.iter().map(|(id, f)| serde_json::json!({
                    "id": id,
                    "copied": f.files,
                    "bytes": f.bytes,
                    "present": f.present,
                    "missing": f.missing,
                })).collect::<Vec<_>>(),
            }),
        )?;
        return Ok(status);
    }
    for (from, target) in &report.copied {
        writeln!(out, "run {from} copied as run {target}")?;
    }
    writeln!(
        out,
        "{} copied, {} already in {to_location}{}",
        model::number_text::plural(report.copied.len(), "run"),
        report.present.len(),
        if report.running.is_empty() {
            String::new()
        } else {
            format!(
                "; {} still being measured, left for a later push ({})",
                report.running.len(),
                report
                    .running
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    )?;
    if args.with_profiles {
        let copied: usize = report.files.iter().map(|(_, f)| f.files).sum();
        let bytes: u64 = report.files.iter().map(|(_, f)| f.bytes).sum();
        let present: usize = report.files.iter().map(|(_, f)| f.present).sum();
        writeln!(
            out,
            "profile files: {} copied ({:.1} MiB), {present} already there",
            copied,
            bytes as f64 / f64::from(1u32 << 20)
        )?;
    }
    Ok(status)
}
