//! `scalelab run`: plan the sweep, fingerprint the machine, run every trial in a child process,
//! commit each trial as it ends, then print the tables.
//!
//! Ctrl-C (SIGINT) or SIGTERM stops the sweep: the trial in flight is killed, every finished
//! trial is kept and the run is marked `interrupted`.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use lab::env::Fingerprint;
use lab::plan::{Plan, RunConfig, parse_duration};
use lab::record::{Mode, Pin, RunStatus};
use lab::report::format::{printable, printable_lines};
use lab::runner::{
    ChildExecutor, CommandExecutor, CommandSpec, Executor, OpsSource, SweepEnd, SweepEvent,
    run_sweep,
};
use lab::runner::{ProfileSettings, perf_record};
use lab::scratch::Scratch;
use lab::timestamp;

use super::{pairs, show};
use crate::cli::{LocksArg, ModeArg, PinArg, RunArgs};
use crate::db_path;

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
    // --locks on a machine that cannot trace: run anyway, untraced, and say why (and the fix).
    let mut lock_warning = None;
    let plan = match plan.locks.map(|r| r.preflight()) {
        Some(Err(why)) => {
            let w = format!("--locks: lock tracing unavailable, trials run untraced: {why}");
            eprintln!("warning: {}", printable(&w));
            lock_warning = Some(w);
            Plan {
                locks: None,
                ..plan
            }
        }
        _ => plan,
    };
    // --profile without a usable perf: run anyway, unprofiled, and say why (and the fix).
    let mut profile_warnings = Vec::new();
    let mut plan = plan;
    if plan.profile.is_some() {
        if let Err(why) = perf_record::check_perf() {
            profile_warnings.push(format!("{why}; trials run unprofiled"));
            plan.profile = None;
        } else {
            profile_warnings.extend(perf_record::kallsyms_warning());
        }
        for w in &profile_warnings {
            eprintln!("warning: {}", printable(w));
        }
    }
    let process_warnings = super::guard::before_trials();
    let mut store = db_path::open(db)?;
    let cwd = std::env::current_dir().context("reading the working directory")?;
    let mut scratch = None;
    if plan.info.uses_files {
        let base = plan.workdir.clone().unwrap_or_else(std::env::temp_dir);
        let area = Scratch::new(&base)?;
        for stale in area.sweep_stale() {
            eprintln!(
                "note: removed {} left by a scalelab that was killed",
                stale.display()
            );
        }
        scratch = Some(area);
    }
    let fingerprint = Fingerprint::capture(scratch.as_ref().map_or(cwd.as_path(), |s| s.base()));
    let extra: Vec<String> = lock_warning
        .into_iter()
        .chain(profile_warnings)
        .chain(process_warnings)
        .collect();
    let meta = plan.run_meta(
        fingerprint,
        extra,
        std::env::args().collect::<Vec<_>>().join(" "),
    );
    if let Some(profile) = plan.profile.as_mut() {
        let db_file = db_path::resolve(db)?;
        let dir = perf_record::prepare_dir(&db_file, meta.uuid)
            .context("--profile: making the run's profile folder beside the database")?;
        profile.dir = Some(Arc::new(dir));
    }
    let run_id = store.begin_run(&meta)?;

    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .context("installing the Ctrl-C handler")?;
    }
    let mut executor: Box<dyn Executor> = if plan.command.is_some() {
        Box::new(CommandExecutor)
    } else {
        Box::new(
            ChildExecutor::current_binary(TRIAL_SUBCOMMAND)
                .context("locating the scalelab binary to run trials")?,
        )
    };
    let bar = progress_bar(&plan, run_id, args.quiet);
    let mut stored = 0usize;
    let outcome = run_sweep(
        &plan,
        executor.as_mut(),
        scratch.as_mut(),
        &stop,
        &mut |event| {
            match event {
                SweepEvent::Started { n, index, .. } => {
                    bar.set_message(format!("N={n} trial {}", index + 1))
                }
                SweepEvent::Finished(record) => {
                    store.add_trial(run_id, record)?;
                    stored += 1;
                    bar.inc(1);
                    if let lab::record::TrialOutcome::Failed { reason } = &record.outcome {
                        bar.suspend(|| {
                            eprintln!(
                                "trial N={} #{} failed: {}",
                                record.n,
                                record.index + 1,
                                printable_lines(reason)
                            )
                        });
                    }
                }
            }
            Ok(())
        },
    );
    bar.finish_and_clear();
    let status = match &outcome {
        Ok(SweepEnd::Complete) => RunStatus::Complete,
        Ok(SweepEnd::Interrupted) | Err(_) => RunStatus::Interrupted,
    };
    store.finish_run(run_id, status, &timestamp::now_rfc3339())?;
    let end = outcome.with_context(|| {
        format!("run {run_id} stopped after {stored} trials (kept, marked interrupted)")
    })?;
    let data = store.load_run(run_id)?;
    if !args.quiet {
        show::print_run(&data, args.json)?;
        if plan.locks.is_some() && !args.json {
            eprintln!(
                "lock contention: `scalelab locks {run_id}` (what grows with N), `scalelab locks {run_id} --at N` (one point)"
            );
        }
    }
    if let Some(dir) = plan.profile.as_ref().and_then(|p| p.dir.as_ref()) {
        if !args.quiet {
            let files: Vec<&str> = data
                .trials
                .iter()
                .filter_map(|t| t.outcome.measurement()?.profile.as_ref())
                .map(|p| p.path.as_str())
                .collect();
            eprintln!(
                "profiles: {} perf.data files in {} (`scalelab profile {run_id}`; `perf report -i {}`)",
                files.len(),
                dir.path().display(),
                files.first().copied().unwrap_or("FILE")
            );
        }
    }
    if end == SweepEnd::Interrupted {
        eprintln!(
            "error: interrupted: run {run_id} keeps its {stored} finished trials and is marked interrupted"
        );
        return Ok(ExitCode::from(2));
    }
    Ok(ExitCode::SUCCESS)
}

/// A progress bar on stderr, only when stderr is a terminal and not `--quiet`.
fn progress_bar(plan: &Plan, run_id: i64, quiet: bool) -> ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let trials = plan.trial_order().len() as u64;
    let bar = ProgressBar::with_draw_target(Some(trials), ProgressDrawTarget::stderr());
    let style = ProgressStyle::with_template(
        "run {prefix} [{bar:30}] {pos}/{len} trials, {elapsed} elapsed, ~{eta} left · {msg}",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar())
    .progress_chars("=> ");
    bar.set_style(style);
    bar.set_prefix(run_id.to_string());
    bar
}
