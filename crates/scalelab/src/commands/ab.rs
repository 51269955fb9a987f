//! `scalelab ab --a CMD --b CMD`: two external commands measured in interleaved pairs, each
//! pair in a random order, stored as two runs (variants `a` and `b`) by the run's owner
//! (`lab::lifecycle::ab`, which also grows the schedule with `--max-runs`), then compared
//! exactly as `compare` does. Ctrl-C (SIGINT) or SIGTERM stops between trials: both runs keep
//! what finished and are marked `interrupted` (exit 130). A side whose every trial failed is an
//! error (exit 2), not a comparison.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use lab::lifecycle::{self, AbPolicy, SweepEnd};
use lab::{Field, Plan, check_runs};

use super::compare;
use crate::arguments::AbArgs;
use crate::measure::{
    Bench, CommandRun, INTERRUPTED, Labels, command_config, online_cpus, ops_source,
    some_trial_measured,
};
use crate::progress::TerminalProgress;
use crate::stdout;

pub fn run(db: Option<&Path>, args: AbArgs) -> Result<ExitCode> {
    let max_runs = args.max_runs.unwrap_or(args.runs);
    check_runs(Field::MaxRuns, max_runs, 1)?;
    let cpus = online_cpus();
    let plan_a = plan(&args, &args.a, "a", cpus)?;
    let plan_b = plan(&args, &args.b, "b", cpus)?;
    let policy = AbPolicy {
        seed: args.seed.unwrap_or_else(clock_seed),
        max_runs,
        options: args.verdict.options(),
        metric: analysis::comparison::TrialMetric::Throughput,
    };
    policy.check(&plan_a)?;
    let mut bench = Bench::open(db)?;
    let mut progress = TerminalProgress::new(args.quiet, true);
    let outcome = lifecycle::ab(
        plan_a,
        plan_b,
        &policy,
        &mut bench.session(&mut progress),
        None,
    );
    progress.finish();
    let outcome = outcome?;
    let (id_a, id_b) = (outcome.id_a, outcome.id_b);
    if args.quiet {
        // Scripts need the ids of what was stored, whatever became of it: A, then B.
        let mut out = stdout::stdout();
        writeln!(out, "{id_a} {id_b}")?;
        out.flush()?;
    }
    if outcome.end == SweepEnd::Interrupted {
        eprintln!(
            "error: interrupted: runs {id_a} (A) and {id_b} (B) keep their {} finished trials and \
             are marked interrupted; `scalelab compare {id_a} {id_b}` compares what finished",
            outcome.stored
        );
        return Ok(ExitCode::from(INTERRUPTED));
    }
    let (a, b) = (bench.store.load_run(id_a)?, bench.store.load_run(id_b)?);
    some_trial_measured(&a).context("side A")?;
    some_trial_measured(&b).context("side B")?;
    // Both sides were planned alike (their differing commands are a note, not a mismatch);
    // forcing only guarantees that measured work is never thrown away by a refusal.
    let view = compare::build(&a, &b, &args.verdict, true)?;
    if args.quiet {
        return Ok(if view.regressed {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        });
    }
    compare::print(&view, args.output.chosen())
}

/// One side: the command, its ops counted as `--ops`/`--ops-regex` say (both sides alike), no
/// warm-up, as `run --cmd` plans it.
fn plan(args: &AbArgs, command: &str, variant: &str, cpus: u32) -> Result<Plan> {
    let cfg = command_config(
        CommandRun {
            steps: vec![("cmd".to_string(), command.to_string())],
            prepare: args.prepare.as_deref(),
            cleanup: args.cleanup.as_deref(),
            ops: ops_source(args.ops, args.ops_regex.as_deref()),
            timeout: args.timeout,
            metrics: crate::arguments::MetricArgs {
                metrics: args.metrics.clone(),
                metric_from: args.metric_from,
                primary: args.primary.clone(),
            }
            .specs()
            .map_err(anyhow::Error::msg)?,
            system: lab::runner::SystemSpec::default(),
        },
        Labels {
            tasks: args.tasks.as_ref(),
            runs: args.runs,
            variant: Some(variant),
            tags: &args.tags,
            name: args.name.as_deref(),
        },
    );
    Plan::new(cfg, cpus).with_context(|| format!("--{variant}"))
}

/// A seed nobody chose: the clock's nanoseconds mixed with the pid.
fn clock_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    nanos ^ u64::from(std::process::id()).rotate_left(32)
}
