//! `scalelab run`: the arguments become a [`Plan`]; the run's owner (`lab::lifecycle::run`)
//! measures and stores it; the tables are printed.
//!
//! Ctrl-C (SIGINT) or SIGTERM stops the sweep: the trial in flight is killed, every finished
//! trial is kept and the run is marked `interrupted` (exit 2).

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result};
use lab::lifecycle::{self, Helpers, Session, SweepEnd};
use lab::plan::{Plan, RunConfig, parse_duration};
use lab::record::{Mode, Pin};
use lab::runner::{CommandSpec, OpsSource, ProfileSettings, perf_record};

use super::{guard, pairs, show};
use crate::cli::{LocksArg, ModeArg, PinArg, RunArgs};
use crate::db_path;
use crate::progress::TerminalProgress;

/// The hidden subcommand a trial child runs.
const TRIAL_SUBCOMMAND: &str = "__trial";

fn config(args: &RunArgs) -> Result<RunConfig> {
    let mut cfg = RunConfig::new(args.workload.as_deref().unwrap_or("cmd"));
    if let Some(cmd) = &args.cmd {
        let mut steps = vec![("cmd".to_string(), cmd.clone())];
        steps.extend(pairs("--step", &args.steps)?);
        cfg.command = Some(CommandSpec {
            steps,
            prepare: args.prepare.clone(),
            cleanup: args.cleanup.clone(),
            ops: match (&args.ops, &args.ops_regex) {
                (Some(n), _) => OpsSource::Fixed(*n),
                (None, Some(re)) => OpsSource::Regex(re.clone()),
                (None, None) => OpsSource::Completion,
            },
        });
        cfg.warmup = lab::record::Nanos(0);
        if let Some(t) = &args.timeout {
            cfg.timeout = Some(parse_duration(t).context("--timeout")?);
        }
    }
    cfg.params = pairs("-p", &args.params)?;
    cfg.tasks = args.tasks.clone();
    cfg.mode = match args.mode {
        ModeArg::Threads => Mode::Threads,
        ModeArg::Processes => Mode::Processes,
    };
    cfg.pin = match args.pin {
        PinArg::Auto => Pin::Auto,
        PinArg::Core => Pin::Core,
        PinArg::None => Pin::None,
    };
    cfg.runs = args.runs;
    cfg.duration = parse_duration(&args.duration).context("--duration")?;
    if args.cmd.is_none() {
        cfg.warmup = parse_duration(&args.warmup).context("--warmup")?;
    }
    cfg.counters = !args.no_counters;
    cfg.locks = args.locks.map(|which| lab::locks::LockRequest {
        kernel: which != LocksArg::User,
        user: which != LocksArg::Kernel,
    });
    if args.profile {
        cfg.profile = Some(ProfileSettings {
            trials: args.profile_trials,
            dir: None,
            event: perf_record::choose_event(),
            frequency: perf_record::frequency(),
        });
    }
    cfg.workdir = args.workdir.clone();
    cfg.variant = args.variant.clone();
    cfg.tags = pairs("--tag", &args.tags)?;
    cfg.name = args.name.clone();
    Ok(cfg)
}

fn online_cpus() -> u32 {
    std::thread::available_parallelism().map_or(1, |n| n.get() as u32)
}

pub fn run(db: Option<&Path>, args: RunArgs) -> Result<ExitCode> {
    let plan = Plan::new(config(&args)?, online_cpus())?;
    let locks = plan.locks.is_some();
    let db_file = db_path::resolve(db)?;
    let mut store = db_path::open(db)?;
    let stop = stop_flag()?;
    let helpers = helpers()?;
    let mut progress = TerminalProgress::new(args.quiet, false);
    let mut session = Session {
        store: &mut store,
        stop: &stop,
        progress: &mut progress,
        db_file: &db_file,
        command_line: command_line(),
        helpers: Some(&helpers),
    };
    let outcome = lifecycle::run(plan, &mut session, None);
    progress.finish();
    let outcome = outcome?;
    let id = outcome.id;
    let data = store.load_run(id)?;
    if !args.quiet {
        show::print_run(&data, args.json)?;
        if locks && !args.json {
            eprintln!(
                "lock contention: `scalelab locks {id}` (what grows with N), `scalelab locks {id} --at N` (one point)"
            );
        }
        if let Some(dir) = &outcome.profile_dir {
            let files: Vec<&str> = data
                .trials
                .iter()
                .filter_map(|t| t.outcome.measurement()?.profile.as_ref())
                .map(|p| p.path.as_str())
                .collect();
            eprintln!(
                "profiles: {} perf.data files in {} (`scalelab profile {id}`; `perf report -i {}`)",
                files.len(),
                dir.display(),
                files.first().copied().unwrap_or("FILE")
            );
        }
    }
    if outcome.end == SweepEnd::Interrupted {
        eprintln!(
            "error: interrupted: run {id} keeps its {} finished trials and is marked interrupted",
            outcome.stored
        );
        return Ok(ExitCode::from(2));
    }
    Ok(ExitCode::SUCCESS)
}

/// Raised by Ctrl-C (SIGINT) and SIGTERM; the run's owner stops between and during trials.
pub fn stop_flag() -> Result<Arc<AtomicBool>> {
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .context("installing the Ctrl-C handler")?;
    }
    Ok(stop)
}

/// This binary, with the hidden subcommands of the trial child and the guard.
pub fn helpers() -> Result<Helpers> {
    Ok(Helpers {
        exe: std::env::current_exe().context("locating the scalelab binary to run trials")?,
        trial_subcommand: TRIAL_SUBCOMMAND.into(),
        guard_subcommand: guard::SUBCOMMAND.into(),
    })
}

/// The command line, stored with each run.
pub fn command_line() -> String {
    std::env::args().collect::<Vec<_>>().join(" ")
}
