//! `scalelab report RUN [RUN…] -o FILE.html` (`-o -`: stdout): one self-contained HTML page with every run's
//! plots and tables, the comparison of each run against the first, and the history of the first
//! run's workload when the database holds enough runs of it. `app::report` assembles what the
//! page shows; `present::html` renders it.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use model::record::RunData;
use present::html;
use stats::{CompareOptions, Direction};

use super::show;
use crate::arguments::ReportArgs;
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
    let opts = CompareOptions {
        alpha: args.alpha,
        threshold: args.threshold,
        direction: Direction::HigherIsBetter,
        ..CompareOptions::default()
    };
    let store = db_path::open_existing(db).ok();
    let data = app::report::with_history(store.as_ref(), &runs, &opts)?;
    let with_history = data.history.is_some();
    let title = args
        .title
        .clone()
        .unwrap_or_else(|| html::default_title(&data));
    let page = html::render(&data, &title)?;
    write_page(&args.output, &page)?;
    let written = shown(&args.output);
    eprintln!(
        "wrote {written} ({}{})",
        model::number_text::plural(runs.len(), "run"),
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
        sys::owned_dir::create_output(output)
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
