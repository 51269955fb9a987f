//! `scalelab report RUN [RUN…] -o FILE.html` (`-o -`: stdout): one self-contained HTML page with every run's
//! plots and tables, the comparison of each run against the first, and the history of the first
//! run's workload when the database holds enough runs of it. Lab assembles what the page shows
//! (`analysis::report_data`); `present::html` renders it.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use lab::analysis::history::{self, Metric};
use lab::analysis::report_data::ReportData;
use lab::record::RunData;
use lab::store::{RunFilter, Store};
use present::html;
use stats::{ChangePointOptions, CompareOptions, Direction};

use super::show;
use crate::cli::ReportArgs;
use crate::db_path;

pub fn run(db: Option<&Path>, args: &ReportArgs) -> Result<ExitCode> {
    if let Some(id) = args.bisect {
        return bisect_report(db, id, args);
    }
    let runs: Vec<RunData> = args
        .runs
        .iter()
        .map(|spec| show::load_with_profiles(db, spec))
        .collect::<Result<_>>()?;
    let history = match db_path::open_existing(db) {
        Ok(store) => history_of(&store, &runs[0])?,
        Err(_) => None,
    };
    let opts = CompareOptions {
        alpha: args.alpha,
        threshold: args.threshold,
        direction: Direction::HigherIsBetter,
        ..CompareOptions::default()
    };
    let with_history = history.is_some();
    let data = ReportData::from_runs(&runs, history, &opts);
    let title = args
        .title
        .clone()
        .unwrap_or_else(|| html::default_title(&data));
    let page = html::render(&data, &title)?;
    write_page(&args.output, &page)?;
    let written = shown(&args.output);
    eprintln!(
        "wrote {written} ({}{})",
        lab::number_text::plural(runs.len(), "run"),
        if with_history { ", with history" } else { "" }
    );
    Ok(ExitCode::SUCCESS)
}

/// `report --bisect ID`: the bisection's page.
fn bisect_report(db: Option<&Path>, id: i64, args: &ReportArgs) -> Result<ExitCode> {
    let store = db_path::open_existing(db)?;
    let view = lab::bisect::view(&store, id)?;
    let title = args
        .title
        .clone()
        .unwrap_or_else(|| format!("scalelab bisect {id}: {}", view.measured));
    let page = html::render_bisect(&view, &title)?;
    write_page(&args.output, &page)?;
    eprintln!("wrote {} (bisection {id})", shown(&args.output));
    Ok(ExitCode::SUCCESS)
}

/// Writes `page` to `output` (`-`: stdout).
fn write_page(output: &Path, page: &str) -> Result<()> {
    if output == Path::new("-") {
        let mut out = crate::stdout::stdout();
        out.write_all(page.as_bytes())
            .and_then(|()| out.flush())
            .context("-o -: writing the page to stdout")?;
    } else {
        // Never through a link, never another user's file (see owned_dir::create_output).
        lab::create_output(output)
            .map_err(anyhow::Error::from)
            .and_then(|mut f| Ok(f.write_all(page.as_bytes())?))
            .with_context(|| format!("-o: writing {}", output.display()))?;
    }
    Ok(())
}

fn shown(output: &Path) -> String {
    if output == Path::new("-") {
        "the page to stdout".to_owned()
    } else {
        output.display().to_string()
    }
}

/// The throughput history at the run's largest N over every stored run with the same workload
/// and parameters, when there are at least two such runs.
fn history_of(store: &Store, run: &RunData) -> Result<Option<history::History>> {
    let meta = &run.meta;
    let Some(&at) = meta.points.iter().max() else {
        return Ok(None);
    };
    let filter = RunFilter {
        workload: Some(meta.workload.clone()),
        ..RunFilter::default()
    };
    let mut series = Vec::new();
    for m in store.list_runs(&filter)? {
        if m.params == meta.params {
            series.push(store.load_run(m.id)?);
        }
    }
    if series.len() < 2 {
        return Ok(None);
    }
    Ok(Some(history::build(
        &meta.workload,
        &series,
        at,
        Metric::Throughput,
        &ChangePointOptions::default(),
    )))
}
