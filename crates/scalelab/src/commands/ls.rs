//! `scalelab ls`: stored runs, oldest first, filtered by workload, tag or variant.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use lab::safe_text::printable;
use lab::store::RunFilter;

use crate::cli::LsArgs;
use crate::db_path;

pub fn run(db: Option<&Path>, args: &LsArgs) -> Result<ExitCode> {
    let store = db_path::open_existing(db)?;
    let filter = RunFilter {
        workload: args.workload.clone(),
        tags: args.tags.clone(),
        params: Vec::new(),
        variant: args.variant.clone(),
        command_contains: args.cmd.clone(),
    };
    let runs = store.list_runs(&filter)?;
    if args.json {
        let rows: Vec<_> = runs
            .iter()
            .map(|m| {
                let (ok, failed) = store.trial_counts(m.id).unwrap_or((0, 0));
                serde_json::json!({
                    "id": m.id, "name": m.name, "workload": m.workload, "params": m.params, "variant": m.variant,
                    "tags": m.tags, "points": m.points, "runs": m.runs, "mode": m.mode, "status": m.status,
                    "started_at": m.started_at, "trials_ok": ok, "trials_failed": failed,
                })
            })
            .collect();
        lab::safe_text::write_json(&mut std::io::stdout().lock(), &rows)?;
        return Ok(ExitCode::SUCCESS);
    }
    if runs.is_empty() {
        eprintln!(
            "no runs stored in {} (start with `scalelab run spin --tasks 1,2 --duration 1s`)",
            store.path().display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "{:>5}  {:<20}  {:<11}  {:<40}  {:<12}  {:>9}  name/variant/tags",
        "id", "started", "status", "workload", "N", "trials"
    );
    for m in &runs {
        let (ok, failed) = store.trial_counts(m.id)?;
        let params: Vec<String> = m.params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let what = format!("{} {}", m.workload, params.join(" "));
        let points: Vec<String> = m.points.iter().map(u32::to_string).collect();
        let trials = if failed > 0 {
            format!("{ok}+{failed}✗")
        } else {
            ok.to_string()
        };
        let mut labels = Vec::new();
        if let Some(n) = &m.name {
            labels.push(format!("\"{n}\""));
        }
        if let Some(v) = &m.variant {
            labels.push(format!("variant={v}"));
        }
        labels.extend(m.tags.iter().map(|(k, v)| format!("{k}={v}")));
        println!(
            "{:>5}  {:<20}  {:<11}  {:<40}  {:<12}  {:>9}  {}",
            m.id,
            printable(&m.started_at),
            m.status.to_string(),
            printable(what.trim()),
            points.join(","),
            trials,
            printable(&labels.join(" "))
        );
    }
    Ok(ExitCode::SUCCESS)
}
