//! `scalelab ls`: stored runs, oldest first, filtered by workload, tag or variant; one aligned
//! line each (`present::run_list`), or JSON with the full text.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use present::run_list::{RunListEntry, write_run_list};
use store::RunFilter;

use crate::arguments::LsArgs;
use crate::output::Chosen;
use crate::{db_path, output};

pub fn run(db: Option<&Path>, args: &LsArgs) -> Result<ExitCode> {
    let store = db_path::open_existing(db)?;
    let filter = RunFilter {
        workload: args.workload.clone(),
        tags: args.tags.clone(),
        params: Vec::new(),
        variant: args.variant.clone(),
        command_contains: args.cmd.clone(),
        host: args.host.clone(),
        host_class: args.host_class.clone(),
    };
    let runs = store.list_runs(&filter)?;
    // One query for every run's counts (a run per query is slow over a network).
    let all_counts = store.all_trial_counts()?;
    let counts_of = |id: i64| all_counts.get(&id).copied().unwrap_or((0, 0));
    let format = match args.output.chosen() {
        Chosen::Printed(format) => format,
        Chosen::Json => {
            let rows: Vec<_> = runs
            .iter()
            .map(|m| {
                let (ok, failed) = counts_of(m.id);
                serde_json::json!({
                    "id": m.id, "name": m.name, "workload": m.workload, "params": m.params, "variant": m.variant,
                    "tags": m.tags, "points": m.points, "runs": m.runs, "mode": m.mode, "status": m.status,
                    "started_at": m.started_at, "trials_ok": ok, "trials_failed": failed,
                    "uuid": m.uuid, "host": m.env.hostname,
                    "host_class": model::env::MachineClass::of(&m.env).to_string(),
                })
            })
            .collect();
            model::safe_text::write_json(&mut crate::stdout::stdout(), &rows)?;
            return Ok(ExitCode::SUCCESS);
        }
    };
    if runs.is_empty() {
        eprintln!(
            "no runs stored in {} (start with `scalelab run spin --tasks 1,2 --duration 1s`)",
            store.location()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let counts: Vec<(usize, usize)> = runs.iter().map(|m| counts_of(m.id)).collect();
    let entries: Vec<RunListEntry<'_>> = runs
        .iter()
        .zip(counts)
        .map(|(meta, (ok, failed))| RunListEntry {
            meta,
            trials_ok: ok,
            trials_failed: failed,
        })
        .collect();
    let mut out = crate::stdout::stdout();
    let mut p = output::printer(&mut out, format);
    write_run_list(&mut p, &entries)?;
    p.finish()?;
    Ok(ExitCode::SUCCESS)
}
