//! `scalelab run`: the arguments become a [`Plan`]; the run's owner (`lab::lifecycle::run`)
//! measures and stores it; the tables are printed.
//!
//! Ctrl-C (SIGINT) or SIGTERM stops the sweep: the trial in flight is killed, every finished
//! trial is kept and the run is marked `interrupted` (exit 130). A run whose every trial failed
//! is stored and exits 2. Options of built-in workloads are refused with `--cmd`, never ignored.

use std::path::Path;
use std::process::ExitCode;

use std::io::Write;

use anyhow::{Result, bail};
use lab::lifecycle::{self, SweepEnd};
use lab::runner::{ProfileScope, ProfileSettings};
use lab::{FutexWaits, LockRequest, OffCpuRequest, Plan, RunConfig, TracerChoice};
use model::record::{Mode, Pin};

use super::show;
use crate::arguments::{
    FutexWaitsArg, LocksArg, ModeArg, ProfileScopeArg, RunArgs, ServerCpusArg, TracerArg,
};
use crate::measure::{
    Bench, CommandRun, INTERRUPTED, Labels, command_config, label, online_cpus, ops_source,
    some_trial_measured,
};
use crate::progress::TerminalProgress;
use crate::stdout;

/// An option given where it does not apply — a command's option with a built-in workload, a
/// built-in workload's with `--cmd` — refused with what to use instead, never ignored. (clap's
/// `requires = "cmd"` does not fire when WORKLOAD is given: WORKLOAD conflicts with --cmd, and
/// clap waives a requirement that conflicts with a present argument.)
fn refuse_what_does_not_apply(args: &RunArgs) -> Result<()> {
    if args.cmd.is_none() {
        let given = [
            (args.ops.is_some(), "--ops"),
            (args.ops_regex.is_some(), "--ops-regex"),
            (args.prepare.is_some(), "--prepare"),
            (args.cleanup.is_some(), "--cleanup"),
            (!args.steps.is_empty(), "--step"),
            (args.timeout.is_some(), "--timeout"),
            (!args.servers.is_empty(), "--server"),
            (!args.attach.is_empty(), "--attach"),
        ];
        if let Some((_, flag)) = given.into_iter().find(|(on, _)| *on) {
            bail!(
                "{flag} applies to --cmd, not to a built-in workload: a built-in workload counts \
                 its own ops and runs for --duration (see `scalelab list`)"
            );
        }
        return Ok(());
    }
    let given = [
        (
            args.duration.is_some(),
            "--duration",
            "a command trial runs the command once, start to end, and that time is measured; \
             for more trials per point use --runs K (`ab`: --runs or --max-runs)",
        ),
        (
            args.warmup.is_some(),
            "--warmup",
            "a command trial has no warm-up window; run the command unmeasured first with \
             --warmup-runs K, warm caches in every trial with --prepare (untimed), and use \
             --runs K for more trials per point",
        ),
        (
            args.mode.is_some(),
            "--mode",
            "the command makes its own threads or processes; tell it how many with {n}",
        ),
        (
            args.pin.is_some(),
            "--pin",
            "the command runs with its CPU affinity limited to the first N CPUs; pin inside \
             the command (e.g. `taskset`) for another placement",
        ),
        (
            args.membind.is_some(),
            "--membind",
            "the command allocates its own memory; run it under numactl for a policy \
             (numactl --interleave=all CMD, numactl --localalloc CMD)",
        ),
        (
            args.workdir.is_some(),
            "--workdir",
            "the command runs in the current directory; `cd DIR &&` in the command, or run \
             scalelab from DIR",
        ),
        (
            args.no_counters,
            "--no-counters",
            "no hardware counters are opened for a command",
        ),
    ];
    if let Some((_, flag, instead)) = given.into_iter().find(|(on, _, _)| *on) {
        bail!("{flag} applies to built-in workloads, not to --cmd: {instead}");
    }
    Ok(())
}

fn config(args: &RunArgs) -> Result<RunConfig> {
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
            let ops = ops_source(args.ops, args.ops_regex.as_deref());
            let command = CommandRun {
                steps,
                prepare: args.prepare.as_deref(),
                cleanup: args.cleanup.as_deref(),
                ops,
                timeout: args.timeout,
                metrics: args.metric.specs().map_err(anyhow::Error::msg)?,
                system: lab::runner::SystemSpec {
                    servers: args.servers.clone(),
                    ready: args.ready.clone(),
                    attach: args.attach.clone(),
                    server_cpus: match args.server_cpus {
                        ServerCpusArg::Same => lab::runner::ServerCpus::Same,
                        ServerCpusArg::Rest => lab::runner::ServerCpus::Rest,
                        ServerCpusArg::All => lab::runner::ServerCpus::All,
                    },
                },
            };
            command_config(command, labels)
        }
        None => {
            let mut cfg = RunConfig::new(args.workload.as_deref().unwrap_or_default());
            if let Some(warmup) = args.warmup {
                cfg.warmup = warmup;
            }
            label(&mut cfg, labels);
            cfg
        }
    };
    cfg.params = args.params.clone();
    cfg.warmup_runs = args.warmup_runs;
    cfg.mode = match args.mode.unwrap_or(ModeArg::Threads) {
        ModeArg::Threads => Mode::Threads,
        ModeArg::Processes => Mode::Processes,
    };
    cfg.pin = args.pin.clone().unwrap_or(Pin::Cores);
    cfg.membind = args.membind.unwrap_or_default();
    if let Some(duration) = args.duration {
        cfg.duration = duration;
    }
    cfg.counters = !args.no_counters;
    let tracer = match args.tracer {
        TracerArg::Kernel => TracerChoice::Kernel,
        TracerArg::Perf => TracerChoice::Perf,
    };
    let futex = futex_waits(args, tracer)?;
    let chain_every = chain_every(args, tracer)?;
    cfg.locks = args.locks.map(|which| LockRequest {
        kernel: which != LocksArg::User,
        user: which != LocksArg::Kernel,
        stack_size: args.stack_size,
        tracer,
        futex,
        chain_every,
    });
    if args.offcpu || args.explain {
        cfg.offcpu = Some(OffCpuRequest {
            tracer,
            chain_every,
            ..OffCpuRequest::default()
        });
    }
    if args.profile || args.explain {
        // explain judges a function's growth by its per-trial values when two or more trials
        // per N are profiled. A command's samples carry 16 KiB of stack each (DWARF), so only
        // its first trial is, unless asked.
        let every = args.explain && args.cmd.is_none();
        let trials = args
            .profile_trials
            .unwrap_or(if every { args.runs } else { 1 });
        let mut settings = ProfileSettings::new(trials);
        if args.cmd.is_some() {
            settings = settings.for_command();
        }
        if args.explain {
            settings = settings.for_explain();
        }
        if let Some(hz) = args.profile_frequency {
            settings = settings.at_frequency(hz).map_err(anyhow::Error::msg)?;
        }
        let scope = match args.profile_scope {
            ProfileScopeArg::Auto => ProfileScope::Auto,
            ProfileScopeArg::Tasks => ProfileScope::Tasks,
            ProfileScopeArg::EveryCpu => ProfileScope::EveryCpu,
        };
        settings = settings.in_scope(scope).map_err(anyhow::Error::msg)?;
        cfg.profile = Some(settings);
    }
    if args.explain && cfg.locks.is_none() {
        cfg.locks = Some(LockRequest {
            kernel: true,
            user: true,
            stack_size: args.stack_size,
            tracer,
            futex,
            chain_every,
        });
    }
    cfg.workdir = args.workdir.clone();
    Ok(cfg)
}

/// Where each part of the system under test runs, in one line (`None`: the command alone).
fn system_line(system: &lab::runner::SystemSpec) -> Option<String> {
    if system.is_empty() {
        return None;
    }
    let mut parts = vec!["the command on N CPUs".to_string()];
    let cpus = match system.server_cpus {
        lab::runner::ServerCpus::Same => "sharing the command's N CPUs",
        lab::runner::ServerCpus::Rest => "on the CPUs the command does not use",
        lab::runner::ServerCpus::All => "on every CPU",
    };
    for s in &system.servers {
        parts.push(format!("server `{s}` {cpus}"));
    }
    for a in &system.attach {
        parts.push(format!("{a} where it runs"));
    }
    Some(
        model::safe_text::printable(&format!("system under test: {}", parts.join("; ")))
            .into_owned(),
    )
}

/// 1 in how many episodes the in-kernel tracers record with call chains (`--chain-every`; 0:
/// from the rate).
fn chain_every(args: &RunArgs, tracer: TracerChoice) -> Result<u32> {
    let Some(k) = args.chain_every else {
        return Ok(0);
    };
    if args.locks.is_none() && !args.offcpu && !args.explain {
        bail!(
            "--chain-every says how often the traces record call chains: add --offcpu, --locks or --explain"
        );
    }
    if tracer == TracerChoice::Perf {
        bail!("--chain-every needs --tracer kernel: the perf tracer records every episode's chain");
    }
    Ok(k)
}

/// What a futex wait is (`--futex-waits`): as asked, else each sleep with `--explain` (its
/// off-CPU trace times blocked time, and its profile sees the calls that do not sleep) and
/// every call with `--locks` alone.
fn futex_waits(args: &RunArgs, tracer: TracerChoice) -> Result<FutexWaits> {
    let Some(asked) = args.futex_waits else {
        let sleeps = args.explain && tracer == TracerChoice::Kernel;
        return Ok(if sleeps {
            FutexWaits::Sleeps
        } else {
            FutexWaits::Calls
        });
    };
    if args.locks.is_none() && !args.explain {
        bail!("--futex-waits says how --locks times futex waits: add --locks (or --explain)");
    }
    if args.locks == Some(LocksArg::Kernel) {
        bail!(
            "--futex-waits with --locks=kernel: no futex waits are traced — use --locks or --locks=user"
        );
    }
    Ok(match asked {
        FutexWaitsArg::Calls => FutexWaits::Calls,
        FutexWaitsArg::Sleeps if tracer == TracerChoice::Perf => bail!(
            "--futex-waits sleeps needs --tracer kernel: the perf tracer times every call, entry to exit"
        ),
        FutexWaitsArg::Sleeps => FutexWaits::Sleeps,
    })
}

/// The default `--tasks`: powers of two and the topology's boundaries (see
/// `analysis::boundaries::default_points`).
fn topology_sweep(topology: &model::env::CpuTopology) -> Result<model::task_spec::TaskSpec> {
    let points: Vec<String> = analysis::boundaries::default_points(topology)
        .iter()
        .map(u32::to_string)
        .collect();
    Ok(points.join(",").parse()?)
}

/// `--pin 0,2,4-7` names only CPUs this process may use (online, cpuset, affinity mask).
fn refuse_unusable_pin_cpus(pin: Option<&Pin>) -> Result<()> {
    let Some(Pin::Cpus(cpus)) = pin else {
        return Ok(());
    };
    let topology = model::env::CpuTopology::read();
    let usable = topology.usable();
    if let Some(cpu) = cpus.iter().find(|cpu| usable.binary_search(cpu).is_err()) {
        bail!(
            "--pin: CPU {cpu} is not usable here (offline, or outside this process's cpuset or \
             affinity mask); usable CPUs: {} — list only those",
            model::env::format_cpu_list(&usable)
        );
    }
    Ok(())
}

pub fn run(db: Option<&Path>, args: RunArgs) -> Result<ExitCode> {
    refuse_what_does_not_apply(&args)?;
    refuse_unusable_pin_cpus(args.pin.as_ref())?;
    let mut cfg = config(&args)?;
    if cfg.tasks.is_none() {
        cfg.tasks = Some(topology_sweep(&model::env::CpuTopology::read())?);
    }
    let plan = Plan::new(cfg, online_cpus())?;
    if !args.quiet
        && let Some(line) = plan.command.as_ref().and_then(|c| system_line(&c.system))
    {
        eprintln!("{line}");
    }
    let locks = plan.locks.is_some();
    let mut bench = Bench::open(db)?;
    let mut progress = TerminalProgress::new(args.quiet, false);
    let outcome = lifecycle::run(plan, &mut bench.session(&mut progress), None);
    progress.finish();
    let outcome = outcome?;
    let id = outcome.id;
    let data = bench.store.load_run(id)?;
    let interrupted = outcome.end == SweepEnd::Interrupted;
    let measured = some_trial_measured(&data);
    if args.quiet {
        // Scripts need the id of what was stored, whatever became of it.
        let mut out = stdout::stdout();
        writeln!(out, "{id}")?;
        out.flush()?;
    } else if interrupted || measured.is_ok() {
        show::print_run(&data, args.output.json())?;
        // A command with steps: each step has its own profile and lock report.
        let steps = analysis::step::step_names(&data);
        let per_step = |what: &str| match steps.len() {
            0 | 1 => String::new(),
            _ => format!(
                "; a step's: `scalelab {what} {id} --step NAME` (steps: {})",
                model::safe_text::printable(&steps.join(", "))
            ),
        };
        if locks && !args.output.json() {
            eprintln!(
                "lock contention: `scalelab locks {id}` (what grows with N), `scalelab locks {id} --at N` (one point){}",
                per_step("locks")
            );
        }
        if let Some(dir) = &outcome.profile_dir {
            // The trial's own profile (a command's main step), then its further steps'.
            let files: Vec<&str> = data
                .trials
                .iter()
                .filter_map(|t| t.outcome.measurement())
                .flat_map(|m| {
                    m.profile
                        .iter()
                        .chain(m.steps.iter().skip(1).filter_map(|s| s.profile.as_ref()))
                })
                .map(|p| p.path.as_str())
                .collect();
            eprintln!(
                "profiles: {} perf.data files in {} (`scalelab profile {id}`; `perf report -i {}`){}",
                files.len(),
                dir.display(),
                files.first().copied().unwrap_or("FILE"),
                per_step("profile")
            );
        }
    }
    if args.explain && !args.quiet && measured.is_ok() {
        if args.output.json() {
            eprintln!("explanation: `scalelab explain {id} --json`");
        } else {
            writeln!(stdout::stdout())?;
            super::explain::print(
                &data,
                crate::output::Chosen::Printed(present::Format::Text),
                present::explain_text::Detail::Brief,
            )?;
        }
    }
    if interrupted {
        eprintln!(
            "error: interrupted: run {id} keeps its {} finished trials and is marked interrupted",
            outcome.stored
        );
        return Ok(ExitCode::from(INTERRUPTED));
    }
    measured?;
    Ok(ExitCode::SUCCESS)
}
