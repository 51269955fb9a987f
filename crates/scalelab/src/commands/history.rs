//! `scalelab history`: the series of one metric at one N over every stored run of a workload
//! and its parameters, with change points; `--check` exits 1 when the newest segment regressed,
//! and 2 when a series is too short to judge (it never reads "no regression" there). An `--at N`
//! no run measured is an error naming the N measured. `--host NAME` keeps one host's runs;
//! `--host-class` makes one series per machine class.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use std::io::Write;

use analysis::history;
use app::history::{Classes, HistoryQuery, Verdict};
use app::{AppError, Input};
use model::number_text::plural;
use model::params::Params;
use stats::ChangePointOptions;

use crate::arguments::HistoryArgs;
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
            let text = model::csv_rows::read_file(file)
                .with_context(|| format!("reading --csv {shown}"))?;
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
            let query = HistoryQuery {
                workload: workload.to_owned(),
                params: Some(wanted),
                variant: args.variant.clone(),
                host: args.host.clone(),
                classes: if args.host_class {
                    Classes::Each
                } else {
                    Classes::Together
                },
                metric: Some(args.metric.clone()),
                at: args.at,
                options: opts,
            };
            let load = |ids: &[i64]| Ok(store.load_runs(ids)?);
            match app::history::histories(&store, &query, load) {
                Ok(series) => series.into_iter().map(|s| (s.class, s.history)).collect(),
                Err(AppError::NotFound(e)) => {
                    bail!("{e} (see `scalelab ls --workload {workload}`)")
                }
                Err(AppError::Invalid { input, source }) => {
                    let source = anyhow::Error::new(source);
                    return Err(match input {
                        Input::Metric => source.context("--metric"),
                        Input::At(at) => source.context(format!("--at {at}")),
                        Input::Series => source,
                    });
                }
                Err(e) => return Err(e.into()),
            }
        }
    };
    let regressed = series
        .iter()
        .any(|(_, h)| Verdict::of(h) == Verdict::Regressed);
    let mut out = crate::stdout::stdout();
    let chosen = args.output.chosen();
    if let Chosen::Json = chosen {
        if args.host_class {
            let classes: Vec<_> = series
                .iter()
                .map(|(class, h)| serde_json::json!({"host_class": class, "history": h}))
                .collect();
            model::safe_text::write_json(&mut out, &classes)?;
        } else if let Some((_, h)) = series.first() {
            model::safe_text::write_json(&mut out, h)?;
        }
    } else if let Chosen::Printed(format) = chosen {
        let mut p = crate::output::printer(&mut out, format);
        for (i, (class, h)) in series.iter().enumerate() {
            if let Some(class) = class {
                if i > 0 {
                    writeln!(p)?;
                }
                writeln!(p, "machine class: {}", model::safe_text::printable(class))?;
            }
            present::history_table::write_history(&mut p, h)?;
        }
        p.finish()?;
    }
    if args.check && !regressed {
        let unjudged: Vec<String> = series
            .iter()
            .filter(|(_, h)| Verdict::of(h) == Verdict::Unjudged)
            .map(|(class, h)| {
                let of = class
                    .as_ref()
                    .map(|c| format!(" of machine class {}", model::safe_text::printable(c)))
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
