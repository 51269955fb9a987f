//! `scalelab show RUN`: a run's tables (or JSON, or Markdown). Also resolves `RUN` for every command that
//! takes one: an id, `last`, `last~K`, or the path of an exported JSON file.

use std::path::Path;
use std::process::ExitCode;

use analysis::summary::summarize;
use anyhow::{Context, Result};
use model::record::RunData;

use present::run_table::{write_run, write_run_markdown};

use crate::output::Chosen;
use crate::{db_path, output};

/// Loads the run `spec` names, from a file when it is one, else from the database.
pub fn load(db: Option<&Path>, spec: &str) -> Result<RunData> {
    let as_path = Path::new(spec);
    if as_path.is_file() {
        let export = store::read_export(as_path)
            .with_context(|| format!("reading the exported run {spec}"))?;
        return Ok(export.run);
    }
    let store = db_path::open_existing(db)?;
    let id = store.resolve(spec)?;
    Ok(store.load_run(id)?)
}

/// [`load`] for a command that reads the run's profiles: those recorded on another host are
/// read from the store's copies (`push --with-profiles`), written into this host's profiles
/// folder for the store on first use.
pub fn load_with_profiles(db: Option<&Path>, spec: &str) -> Result<RunData> {
    if Path::new(spec).is_file() {
        return load(db, spec);
    }
    let store = db_path::open_existing(db)?;
    let mut data = store.load_run(store.resolve(spec)?)?;
    let local = db_path::local_file(store.location())?;
    store::profile_files::fetch_profiles(&store, &mut data, &local)
        .with_context(|| format!("reading the stored profiles of run {}", data.meta.id))?;
    Ok(data)
}

pub fn run(db: Option<&Path>, spec: &str, format: Chosen) -> Result<ExitCode> {
    let data = load(db, spec)?;
    print(&data, format)?;
    Ok(ExitCode::SUCCESS)
}

/// Prints a run's summary as tables, or as JSON with the same figures.
pub fn print_run(data: &RunData, json: bool) -> Result<()> {
    print(
        data,
        if json {
            Chosen::Json
        } else {
            Chosen::Printed(present::Format::Text)
        },
    )
}

/// Prints a run's summary as tables, JSON with the same figures, or Markdown tables.
pub fn print(data: &RunData, format: Chosen) -> Result<()> {
    let summary = summarize(data);
    let mut out = crate::stdout::stdout();
    if format == Chosen::Json {
        let warnings: Vec<String> = summary
            .warnings
            .iter()
            .map(ToString::to_string)
            .chain(data.meta.warnings.iter().cloned())
            .collect();
        let (ok, failed) = data.trials.iter().fold((0, 0), |(o, f), t| {
            if t.outcome.measurement().is_some() {
                (o + 1, f)
            } else {
                (o, f + 1)
            }
        });
        let value = serde_json::json!({
            "run": data.meta,
            "points": summary.points,
            "scales_to": summary.scales_to,
            "warnings": warnings,
            "trials_ok": ok,
            "trials_failed": failed,
        });
        model::safe_text::write_json(&mut out, &value)?;
    } else if format != Chosen::Printed(present::Format::Text) {
        write_run_markdown(&mut out, &data.meta, &summary)?;
    } else {
        write_run(&mut out, &data.meta, &summary, &output::stdout())?;
    }
    Ok(())
}
