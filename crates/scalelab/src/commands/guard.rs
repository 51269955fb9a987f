//! `scalelab __guard OWNER`: the guard process (`lab::runner::guard`); and what `run` and `ab`
//! do before their first trial so that no process is left behind: report the processes an
//! earlier, killed scalelab left running, then start this run's guard.

use std::process::ExitCode;

use anyhow::Result;
use lab::runner::{guard, owner};

/// The hidden subcommand the guard runs.
pub const SUBCOMMAND: &str = "__guard";

pub fn run(owner: &str) -> Result<ExitCode> {
    guard::serve(owner)?;
    Ok(ExitCode::SUCCESS)
}

/// Prints the warnings (on stderr) and returns them, to be stored with the run.
pub fn before_trials() -> Vec<String> {
    let mut warnings = Vec::new();
    if let Some(w) = owner::left_running_warning() {
        warnings.push(w.to_string());
    }
    let started = std::env::current_exe()
        .map_err(|e| e.to_string())
        .and_then(|exe| guard::start(&exe, SUBCOMMAND).map_err(|e| e.to_string()));
    if let Err(why) = started {
        warnings.push(format!(
            "no guard process ({why}): if scalelab is killed, what its commands started may keep running"
        ));
    }
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    warnings
}
