//! `scalelab __guard OWNER`: the guard process (`lab::serve_guard`), which the run's owner
//! (`lab::lifecycle`) starts before the first trial so that no process is left behind.

use std::process::ExitCode;

use anyhow::Result;

pub fn run(owner: &str) -> Result<ExitCode> {
    lab::serve_guard(owner)?;
    Ok(ExitCode::SUCCESS)
}
