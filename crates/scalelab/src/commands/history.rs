//! `scalelab history`: the series of one metric at one N over every stored run of a workload
//! and its parameters, with change points; `--check` exits 1 when the newest segment regressed,
//! and 2 when a series is too short to judge (it never reads "no regression" there). An `--at N`
//! no run measured is an error naming the N measured. `--host NAME` keeps one host's runs;
//! `--host-class` makes one series per machine class.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use std::io::Write;

use lab::Params;
use lab::analysis::{history, series};
use lab::env::MachineClass;
use lab::number_text::plural;
use lab::store::RunFilter;
use stats::ChangePointOptions;

use crate::cli::HistoryArgs;
use crate::db_path;
use crate::output::Chosen;

pub fn run(db: Option<&Path>, args: &HistoryArgs) -> Result<ExitCode> {
    let opts = ChangePointOptions {
        max_p: args.max_p,
        min_segment: args.min_segment.max(2),
    };
    let series: Vec<(Option<String>, history::History)> = match &args.csv {
        Some(file) => {
            let shown = file.display();
            let text =
                lab::read_csv_file(file).with_context(|| format!("reading --csv {shown}"))?;
            let points = history::parse_csv(&text).with_context(|| format!("--csv {shown}"))?;
            let metric = history::Metric::parse(&args.metric).context("--metric")?;
            vec![(None, history::from_points("csv", 0, metric, points, &opts))]
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
                host: args.host.clone(),
                ..RunFilter::default()
            };
            let ids: Vec<i64> = series::series_runs(workload, &wanted, store.list_runs(&filter)?)?
                .iter()
                .map(|m| m.id)
                .collect();
            let runs = store.load_runs(&ids)?;
            if runs.is_empty() {
                bail!(
                    "no stored runs of `{workload}` with these parameters (see `scalelab ls --workload {workload}`)"
                );
            }
            let metric = history::Metric::resolve(&args.metric, &runs).context("--metric")?;
            if let Some(at) = args.at {
                history::check_measured(workload, &runs, at)
                    .with_context(|| format!("--at {at}"))?;
            }
            let groups: Vec<(Option<String>, Vec<_>)> = if args.host_class {
                let mut by_class: std::collections::BTreeMap<String, Vec<_>> = Default::default();
                for run in runs {
                    by_class
                        .entry(MachineClass::of(&run.meta.env).to_string())
                        .or_default()
                        .push(run);
                }
                by_class.into_iter().map(|(c, r)| (Some(c), r)).collect()
            } else {
                vec![(None, runs)]
            };
            groups
                .into_iter()
                .map(|(class, runs)| {
                    let at = match args.at {
                        Some(n) => n,
                        None => runs
                            .last()
                            .and_then(|r| r.meta.points.iter().max().copied())
                            .unwrap_or(1),
                    };
                    let metric = metric.clone();
                    (class, history::build(workload, &runs, at, metric, &opts))
                })
                .collect()
        }
    };
    let regressed = series.iter().any(|(_, h)| h.newest_regressed);
    let mut out = crate::stdout::stdout();
    let chosen = args.output.chosen();
    if let Chosen::Json = chosen {
        if args.host_class {
            let classes: Vec<_> = series
                .iter()
                .map(|(class, h)| serde_json::json!({"host_class": class, "history": h}))
                .collect();
            lab::safe_text::write_json(&mut out, &classes)?;
        } else if let Some((_, h)) = series.first() {
            lab::safe_text::write_json(&mut out, h)?;
        }
    } else if let Chosen::Printed(format) = chosen {
        let mut p = crate::output::printer(&mut out, format);
        for (i, (class, h)) in series.iter().enumerate() {
            if let Some(class) = class {
                if i > 0 {
                    writeln!(p)?;
                }
                writeln!(p, "machine class: {}", lab::safe_text::printable(class))?;
            }
            present::history_table::write_history(&mut p, h)?;
        }
        p.finish()?;
    }
    if args.check && !regressed {
        let unjudged: Vec<String> = series
            .iter()
            .filter(|(_, h)| !h.judged)
            .map(|(class, h)| {
                let of = class
                    .as_ref()
                    .map(|c| format!(" of machine class {}", lab::safe_text::printable(c)))
                    .unwrap_or_default();
                format!("{} at N={}{of}", plural(h.points.len(), "run"), h.at)
            })
            .collect();
        if !unjudged.is_empty() {
            bail!(
                "--check cannot judge: {}, and change-point detection needs at least {} (two segments of --min-segment {}) — no verdict, neither regressed nor clear; measure more runs, or lower --min-segment",
                unjudged.join("; "),
                opts.fewest_values(),
                opts.min_segment
            );
        }
    }
    Ok(if args.check && regressed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
