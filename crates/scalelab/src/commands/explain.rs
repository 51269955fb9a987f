//! `scalelab explain RUN`: why a run stops scaling — its cost per op accounted per N and the
//! growth attributed to named causes, from the profile, lock and off-CPU evidence it carries
//! (`app::explain`), as text, Markdown or JSON. `run --explain` prints the same after a run.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use model::record::RunData;
use present::explain_table;
use present::explain_text::Detail;

use super::show;
use crate::arguments::ExplainArgs;
use crate::output::Chosen;

pub fn run(db: Option<&Path>, args: &ExplainArgs) -> Result<ExitCode> {
    let data = show::load_with_profiles(db, &args.run)?;
    let detail = if args.verbose {
        Detail::Full
    } else {
        Detail::Brief
    };
    print(&data, args.output.chosen(), detail)?;
    Ok(ExitCode::SUCCESS)
}

/// Explains `data` on stdout; profiles that cannot be read are left out with a warning (the
/// explanation then says CPU time is not split by function).
pub(crate) fn print(data: &RunData, format: Chosen, detail: Detail) -> Result<()> {
    let explained = app::explain::explain(data)?;
    if let Some(e) = &explained.profiles_left_out {
        eprintln!(
            "{} the profiles of run {} are left out: {e}",
            crate::output::stderr().warning(),
            data.meta.id
        );
    }
    let e = explained.explanation;
    crate::output::print_result(format, &e, |p| explain_table::write(p, &e, detail))
}
