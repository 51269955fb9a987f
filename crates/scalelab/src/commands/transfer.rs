//! `scalelab export` and `scalelab import`: move a run between machines without loss.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};

use super::show;
use crate::arguments::ExportFormat;
use crate::db_path;

pub fn export(db: Option<&Path>, spec: &str, format: ExportFormat) -> Result<ExitCode> {
    let data = show::load(db, spec)?;
    let mut out = crate::stdout::stdout();
    match format {
        ExportFormat::Json => store::export_json(&data, &mut out)?,
        ExportFormat::Csv => store::export_csv(&data, &mut out)?,
        ExportFormat::Markdown => present::run_table::write_run_markdown(
            &mut out,
            &data.meta,
            &analysis::summary::summarize(&data),
        )?,
    }
    Ok(ExitCode::SUCCESS)
}

pub fn import(db: Option<&Path>, files: &[PathBuf]) -> Result<ExitCode> {
    // Opened once the first file reads as a run: a bad file creates no database.
    let mut store = None;
    for file in files {
        let export =
            store::read_export(file).with_context(|| format!("reading {}", file.display()))?;
        let store = match &mut store {
            Some(s) => s,
            None => store.insert(db_path::open(db)?),
        };
        // A run is known by its UUID: importing it again never stores a second copy.
        if let Some(id) = store.find_uuid(&export.run.meta.uuid)? {
            writeln!(
                crate::stdout::stdout(),
                "{} is already stored as run {id} (same run UUID); not imported again",
                model::safe_text::printable(&file.display().to_string()),
            )?;
            continue;
        }
        let id = store.import(&export)?;
        writeln!(
            crate::stdout::stdout(),
            "imported {} as run {id} ({})",
            model::safe_text::printable(&file.display().to_string()),
            model::number_text::plural(export.run.trials.len(), "trial")
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
