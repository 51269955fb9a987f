//! What `run` and `ab` share on the CLI side: one builder for a command's run configuration,
//! and the session a run's owner (`lab::lifecycle`) measures in — the database, the stop flag
//! that Ctrl-C (SIGINT) and SIGTERM raise, and this binary as the trial child and the guard.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result, bail};
use lab::RunConfig;
use lab::lifecycle::{Helpers, Progress, Session};
use lab::runner::{CommandSpec, OpsSource};
use model::record::{Nanos, RunData, TrialOutcome};
use model::task_spec::TaskSpec;
use store::Store;

use crate::db_path;

/// The hidden subcommand a trial child runs.
pub const TRIAL_SUBCOMMAND: &str = "__trial";
/// The hidden subcommand the guard runs.
pub const GUARD_SUBCOMMAND: &str = "__guard";
/// The exit status of a run stopped by Ctrl-C or SIGTERM (128 + SIGINT, as shells report it).
pub const INTERRUPTED: u8 = 130;

/// How a command's ops are counted: `--ops N`, `--ops-regex RE`, else one per completion.
pub fn ops_source(ops: Option<u64>, regex: Option<&str>) -> OpsSource {
    match (ops, regex) {
        (Some(n), _) => OpsSource::Fixed(n),
        (None, Some(re)) => OpsSource::Regex(re.to_string()),
        (None, None) => OpsSource::Completion,
    }
}

/// An error when no trial of the stored run measured anything: a run of failures is not a
/// result (`--cmd false` must not exit 0), but it stays stored with every reason.
pub fn some_trial_measured(data: &RunData) -> Result<()> {
    let mut reasons = data.trials.iter().map(|t| match &t.outcome {
        TrialOutcome::Failed { reason } => Some(reason.as_str()),
        TrialOutcome::Ok(_) => None,
    });
    let first = match reasons.next() {
        Some(Some(reason)) => reason,
        Some(None) => return Ok(()),
        None => "no trial ran",
    };
    if reasons.any(|r| r.is_none()) {
        return Ok(());
    }
    let id = data.meta.id;
    bail!(
        "every trial of run {id} failed (the first: {first}); the run is stored with every \
         reason (`scalelab show {id} --json`): fix the command or workload and run again"
    )
}

/// What an external command's run is: its timed steps (the first is `--cmd`), the untimed
/// prepare and cleanup, how ops are counted, and the trial's limit.
#[derive(Debug, Clone)]
pub struct CommandRun<'a> {
    pub steps: Vec<(String, String)>,
    pub prepare: Option<&'a str>,
    pub cleanup: Option<&'a str>,
    pub ops: OpsSource,
    pub timeout: Option<Nanos>,
    /// `--metric`s, the primary first, and whether X(N) stays ops per second instead.
    pub metrics: (Vec<model::record::MetricSpec>, bool),
    /// `--server`, `--ready`, `--attach`, `--server-cpus`.
    pub system: lab::runner::SystemSpec,
}

/// Labels a run carries.
#[derive(Debug, Clone, Copy)]
pub struct Labels<'a> {
    pub tasks: Option<&'a TaskSpec>,
    pub runs: u32,
    pub variant: Option<&'a str>,
    pub tags: &'a [(String, String)],
    pub name: Option<&'a str>,
}

/// The configuration of a command's run, as `run --cmd` and both sides of `ab` build it:
/// completions or the given ops, no warm-up (a command has none), the trial's `--timeout`.
pub fn command_config(command: CommandRun<'_>, labels: Labels<'_>) -> RunConfig {
    let mut cfg = RunConfig::new("cmd");
    cfg.command = Some(CommandSpec {
        steps: command.steps,
        prepare: command.prepare.map(str::to_string),
        cleanup: command.cleanup.map(str::to_string),
        ops: command.ops,
        dir: None,
        metrics: command.metrics.0,
        ops_primary: command.metrics.1,
        system: command.system,
    });
    cfg.warmup = Nanos(0);
    cfg.timeout = command.timeout;
    label(&mut cfg, labels);
    cfg
}

/// Sets the task counts, trials per point and labels of `cfg`.
pub fn label(cfg: &mut RunConfig, labels: Labels<'_>) {
    cfg.tasks = labels.tasks.cloned();
    cfg.trials_per_point = labels.runs;
    cfg.variant = labels.variant.map(str::to_string);
    cfg.tags = labels.tags.to_vec();
    cfg.name = labels.name.map(str::to_string);
}

/// The online CPUs a plan is made for.
pub fn online_cpus() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

/// Everything a run's owner needs from the CLI, opened once.
#[derive(Debug)]
pub struct Bench {
    pub store: Store,
    db_file: PathBuf,
    stop: Arc<AtomicBool>,
    helpers: Helpers,
}

impl Bench {
    /// Opens (creating it if needed) the database and installs the Ctrl-C / SIGTERM handler.
    pub fn open(db: Option<&Path>) -> Result<Bench> {
        let location = db_path::resolve(db)?;
        let db_file = db_path::local_file(&location)?;
        let store = db_path::open_location(&location, true)?;
        let stop = crate::stop_signal::install(store.interrupter())?;
        let helpers = Helpers {
            exe: std::env::current_exe().context("locating the scalelab binary to run trials")?,
            trial_subcommand: TRIAL_SUBCOMMAND.into(),
            guard_subcommand: GUARD_SUBCOMMAND.into(),
        };
        Ok(Bench {
            store,
            db_file,
            stop,
            helpers,
        })
    }

    /// The session a run's owner measures in, reporting to `progress`.
    pub fn session<'a>(&'a mut self, progress: &'a mut dyn Progress) -> Session<'a> {
        Session {
            store: &mut self.store,
            stop: &self.stop,
            progress,
            db_file: &self.db_file,
            // A `--db postgres://user:password@…` is stored without its password.
            command_line: store::redact_secrets(&std::env::args().collect::<Vec<_>>().join(" ")),
            helpers: Some(&self.helpers),
        }
    }
}
