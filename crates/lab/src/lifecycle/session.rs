//! What a run is measured with ([`Session`]: the store, the stop flag, who watches, the helper
//! processes) and the steps every run's life shares before its trials: the executor its plan
//! calls for, and what an earlier scalelab left running reported before this one's guard starts.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use store::Store;

use super::progress::Progress;
use crate::error::LabError;
use crate::plan::Plan;
use crate::process::{guard, owner};
use crate::runner::{ChildExecutor, CommandExecutor, Executor};

/// How scalelab starts its own helper processes: this binary, with the hidden subcommands of
/// the trial child and the guard.
#[derive(Debug, Clone)]
pub struct Helpers {
    /// The scalelab binary to run (normally this process's own executable).
    pub exe: PathBuf,
    /// The hidden subcommand that makes it a trial child.
    pub trial_subcommand: String,
    /// The hidden subcommand that makes it the guard.
    pub guard_subcommand: String,
}

/// What a run is measured with: where it is stored, the stop flag, who watches.
pub struct Session<'a> {
    /// The database each trial is committed to as it ends.
    pub store: &'a mut Store,
    /// Raised by Ctrl-C or SIGTERM: the trial in flight is killed, the run ends `interrupted`.
    pub stop: &'a AtomicBool,
    /// Who is told of each trial, warning and note.
    pub progress: &'a mut dyn Progress,
    /// The database file, or for a PostgreSQL store the local default one: profiles are kept
    /// beside it.
    pub db_file: &'a Path,
    /// The command line stored with each run.
    pub command_line: String,
    /// The trial child and the guard. `None` starts no guard, and then an executor must be
    /// given (tests with a fake one).
    pub helpers: Option<&'a Helpers>,
}

impl std::fmt::Debug for Session<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("store", self.store.location())
            .field("db_file", &self.db_file)
            .field("helpers", &self.helpers)
            .finish_non_exhaustive()
    }
}

/// The executor a plan calls for: a trial child (this binary again) for a built-in workload,
/// the command executor for `--cmd`.
pub(crate) fn executor_for(
    plan: &Plan,
    helpers: Option<&Helpers>,
) -> Result<Box<dyn Executor>, LabError> {
    if plan.command.is_some() {
        return Ok(Box::new(CommandExecutor::default()));
    }
    let helpers = helpers.ok_or_else(|| {
        LabError::Internal("a built-in workload needs the trial child's binary".into())
    })?;
    Ok(Box::new(ChildExecutor {
        program: helpers.exe.clone(),
        args: vec![helpers.trial_subcommand.clone()],
    }))
}

/// Before the first trial, so that no process is left behind: report what an earlier, killed
/// scalelab left running, then start this process's guard. Returns the warnings to store.
pub(super) fn before_trials(session: &mut Session<'_>) -> Vec<String> {
    let mut warnings = Vec::new();
    if let Some(w) = owner::left_running_warning() {
        warnings.push(w.to_string());
    }
    if let Some(helpers) = session.helpers {
        if let Err(why) = guard::start(&helpers.exe, &helpers.guard_subcommand) {
            warnings.push(format!(
                "no guard process ({why}): if scalelab is killed, what its commands started may keep running"
            ));
        }
    }
    for w in &warnings {
        session.progress.warning(w);
    }
    warnings
}
