//! `scalelab run`: the arguments become a [`Plan`]; the run's owner (`lab::lifecycle::run`)
//! measures and stores it; the tables are printed.
//!
//! Ctrl-C (SIGINT) or SIGTERM stops the sweep: the trial in flight is killed, every finished
//! trial is kept and the run is marked `interrupted` (exit 2).

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use lab::lifecycle::{self, SweepEnd};
use lab::record::{Mode, Pin};
use lab::runner::{OpsSource, ProfileSettings};
use lab::{LockRequest, Plan, RunConfig};

use super::show;
use crate::cli::{LocksArg, ModeArg, PinArg, RunArgs};
use crate::measure::{Bench, CommandRun, Labels, command_config, label, online_cpus};
use crate::progress::TerminalProgress;

fn config(args: &RunArgs) -> RunConfig {
    let labels = Labels {
        tasks: args.tasks.as_ref(),
        runs: args.runs,
        variant: args.variant.as_deref(),
        tags: &args.tags,
        name: args.name.as_deref(),
    };
    let mut cfg = match &args.cmd {
        Some(cmd) => {
            let mut steps = vec![("cmd".to_string(), cmd.clone())];
            steps.extend(args.steps.iter().cloned());
            let ops = match (&args.ops, &args.ops_regex) {
                (Some(n), _) => OpsSource::Fixed(*n),
                (None, Some(re)) => OpsSource::Regex(re.clone()),
                (None, None) => OpsSource::Completion,
            };
            let command = CommandRun {
                steps,
                prepare: args.prepare.as_deref(),
                cleanup: args.cleanup.as_deref(),
                ops,
                timeout: args.timeout,
            };
            command_config(command, labels)
        }
        None => {
            let mut cfg = RunConfig::new(args.workload.as_deref().unwrap_or_default());
            cfg.warmup = args.warmup;
            label(&mut cfg, labels);
            cfg
        }
    };
    cfg.params = args.params.clone();
    cfg.mode = match args.mode {
        ModeArg::Threads => Mode::Threads,
        ModeArg::Processes => Mode::Processes,
    };
    cfg.pin = match args.pin {
        PinArg::Auto => Pin::Auto,
        PinArg::Core => Pin::Core,
        PinArg::None => Pin::None,
    };
    cfg.duration = args.duration;
    cfg.counters = !args.no_counters;
    cfg.locks = args.locks.map(|which| LockRequest {
        kernel: which != LocksArg::User,
        user: which != LocksArg::Kernel,
        stack_size: args.stack_size,
    });
    if args.profile {
        cfg.profile = Some(ProfileSettings::new(args.profile_trials));
    }
    cfg.workdir = args.workdir.clone();
    cfg
}

pub fn run(db: Option<&Path>, args: RunArgs) -> Result<ExitCode> {
    let plan = Plan::new(config(&args), online_cpus())?;
    let locks = plan.locks.is_some();
    let mut bench = Bench::open(db)?;
    let mut progress = TerminalProgress::new(args.quiet, false);
    let outcome = lifecycle::run(plan, &mut bench.session(&mut progress), None);
    progress.finish();
    let outcome = outcome?;
    let id = outcome.id;
    let data = bench.store.load_run(id)?;
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
