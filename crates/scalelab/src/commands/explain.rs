//! `scalelab explain RUN`: why a run stops scaling — its cost per op accounted per N and the
//! growth attributed to named causes, from the profile, lock and off-CPU evidence it carries
//! (`lab::analysis::explain`), as text, Markdown or JSON. `run --explain` prints the same after a run.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Result, bail};
use lab::analysis::explain::explain;
use lab::analysis::profile;
use lab::record::RunData;
use present::explain_table;

use super::show;
use crate::cli::ExplainArgs;
use crate::output::Chosen;

pub fn run(db: Option<&Path>, args: &ExplainArgs) -> Result<ExitCode> {
    let data = show::load_with_profiles(db, &args.run)?;
    print(&data, args.output.chosen())?;
    Ok(ExitCode::SUCCESS)
}

/// Explains `data` on stdout; profiles that cannot be read are left out with a warning (the
/// explanation then says CPU time is not split by function).
pub(crate) fn print(data: &RunData, format: Chosen) -> Result<()> {
    let profiled = data
        .trials
        .iter()
        .filter_map(|t| t.outcome.measurement())
        .any(|m| m.profile.is_some());
    let profiles = if profiled {
        profile::load_run(data).unwrap_or_else(|e| {
            eprintln!(
                "{} the profiles of run {} are left out: {e}",
                crate::output::stderr().warning(),
                data.meta.id
            );
            Vec::new()
        })
    } else {
        Vec::new()
    };
    let Some(e) = explain(data, &profiles) else {
        bail!(
            "run {} has no measured trial: nothing to explain (see `scalelab show {}`)",
            data.meta.id,
            data.meta.id
        );
    };
    crate::output::print_result(format, &e, |p| explain_table::write(p, &e))
}
