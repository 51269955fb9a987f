//! `scalelab history`: the series of one metric at one N over every stored run of a workload
//! and its parameters, with change points; `--check` exits 1 when the newest segment regressed.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use lab::Params;
use lab::analysis::{history, series};
use lab::store::RunFilter;
use stats::ChangePointOptions;

use crate::cli::HistoryArgs;
use crate::db_path;

pub fn run(db: Option<&Path>, args: &HistoryArgs) -> Result<ExitCode> {
    let metric = args.metric;
    let opts = ChangePointOptions {
        max_p: args.max_p,
        min_segment: args.min_segment.max(2),
    };
    let h = match &args.csv {
        Some(file) => {
            let shown = file.display();
            let text =
                std::fs::read_to_string(file).with_context(|| format!("reading --csv {shown}"))?;
            let points = history::parse_csv(&text).with_context(|| format!("--csv {shown}"))?;
            history::from_points("csv", 0, metric, points, &opts)
        }
        None => {
            let workload = match (args.workload.as_deref(), &args.cmd) {
                (Some(w), Some(_)) if w != "cmd" => {
                    bail!("--cmd follows an external command: give `cmd` or no workload, not `{w}`")
                }
                (_, Some(_)) => "cmd",
                (w, None) => w.unwrap_or_default(),
            };
            let mut given = args.params.clone();
            given.extend(args.cmd.iter().map(|c| ("cmd".to_string(), c.clone())));
            let store = db_path::open_existing(db)?;
            let wanted = if workload == "cmd" {
                given.into_iter().collect()
            } else {
                let info = lab::workload_info(workload)?;
                Params::resolve(info.name, info.params, &given)?
                    .as_map()
                    .clone()
            };
            let filter = RunFilter {
                workload: Some(workload.to_string()),
                variant: args.variant.clone(),
                ..RunFilter::default()
            };
            let mut runs = Vec::new();
            for meta in series::series_runs(workload, &wanted, store.list_runs(&filter)?)? {
                runs.push(store.load_run(meta.id)?);
            }
            if runs.is_empty() {
                bail!(
                    "no stored runs of `{workload}` with these parameters (see `scalelab ls --workload {workload}`)"
                );
            }
            let at = match args.at {
                Some(n) => n,
                None => runs
                    .last()
                    .and_then(|r| r.meta.points.iter().max().copied())
                    .unwrap_or(1),
            };
            history::build(workload, &runs, at, metric, &opts)
        }
    };
    let mut out = crate::stdout::stdout();
    if args.json {
        lab::safe_text::write_json(&mut out, &h)?;
    } else {
        present::history_table::write_history(&mut out, &h)?;
    }
    Ok(if args.check && h.newest_regressed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
