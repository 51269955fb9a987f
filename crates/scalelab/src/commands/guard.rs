//! `scalelab __guard OWNER`: the guard process (`lab::runner::guard`), which the run's owner
//! (`lab::lifecycle`) starts before the first trial so that no process is left behind.

use std::process::ExitCode;

use anyhow::Result;
use lab::process::guard;

pub fn run(owner: &str) -> Result<ExitCode> {
    guard::serve(owner)?;
    Ok(ExitCode::SUCCESS)
}
