//! `scalelab bisect`: the flags become a `lab::bisect::BisectSpec` and `lab::bisect::start`
//! drives the bisection (or `resume` takes one back); `next`, `mark`, `show` and `list` step a
//! `--no-build` bisection and read stored ones. The answer is printed by `present::bisect_text`
//! (or as JSON). Exit 0 when the first bad commit is found, 1 when the range is not a
//! regression, 2 on errors (also when only skipped commits are left), 130 when interrupted.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use analysis::comparison::TrialMetric;
use anyhow::{Result, bail};
use lab::bisect::{self, BisectEnd, BisectOutcome, BisectSpec, Measure, Pending};
use lab::runner::CommandSpec;
use store::{BisectStatus, Store};

use crate::arguments::{BisectAction, BisectArgs, BisectMetric};
use crate::measure::{Bench, INTERRUPTED, ops_source};
use crate::progress::TerminalProgress;
use crate::{db_path, output, stdout};

pub fn run(db: Option<&Path>, args: BisectArgs) -> Result<ExitCode> {
    match &args.action {
        Some(BisectAction::Next { id }) => return next(db, *id),
        Some(BisectAction::Mark { id, skip, quiet }) => return mark(db, *id, *skip, *quiet),
        Some(BisectAction::Show { id, output }) => return show(db, *id, output.json()),
        Some(BisectAction::List) => return list(db),
        None => {}
    }
    let mut bench = Bench::open(db)?;
    let mut progress = TerminalProgress::named(args.quiet, "bisect");
    let outcome = match args.resume {
        Some(id) => bisect::resume((id > 0).then_some(id), &mut bench.session(&mut progress)),
        None => {
            let spec = spec(&args)?;
            bisect::start(spec, &mut bench.session(&mut progress))
        }
    };
    progress.finish();
    let outcome = outcome?;
    finished(&bench.store, outcome, args.output.json())
}

/// The bisection the flags ask for; every missing flag is named with its fix.
fn spec(args: &BisectArgs) -> Result<BisectSpec> {
    let need = |value: Option<&str>, flag: &str, what: &str| -> Result<String> {
        match value {
            Some(v) => Ok(v.to_string()),
            None => bail!("{flag} is required: {what} (or --resume to continue a bisection)"),
        }
    };
    let repo = need(
        args.repo.as_ref().and_then(|p| p.to_str()),
        "--repo",
        "the git repository to bisect",
    )?;
    let good = need(args.good.as_deref(), "--good", "a commit known to be fast")?;
    let bad = need(args.bad.as_deref(), "--bad", "a commit known to be slow")?;
    if args.build.is_none() && !args.no_build {
        bail!(
            "--build CMD is required: how to build a commit in its worktree (`make -j8`); or \
             --no-build to boot or install each commit yourself (`scalelab bisect next`/`mark`)"
        );
    }
    if args.cmd.is_none() && args.workload.is_none() {
        bail!("give what to measure: --cmd CMD (run in each build's worktree) or a WORKLOAD");
    }
    let Some(tasks) = &args.tasks else {
        bail!("--tasks is required: the task counts to measure at (--tasks 1, or --tasks 1,8)");
    };
    if !args.params.is_empty() && args.cmd.is_some() {
        bail!("-p: built-in workload parameters do not apply to --cmd; put them in the command");
    }
    lab::check_runs(lab::Field::Runs, args.runs, 1)?;
    lab::check_runs(lab::Field::MaxRuns, args.max_runs, 1)?;
    if args.max_runs < args.runs {
        bail!(
            "--max-runs {} is below --runs {}: it is the most groups a step may grow to",
            args.max_runs,
            args.runs
        );
    }
    let reported = match &args.metric {
        BisectMetric::Reported(m) => vec![m.clone()],
        _ => Vec::new(),
    };
    if !reported.is_empty() && args.cmd.is_none() {
        bail!(
            "--metric {}: a figure the command prints needs --cmd (a built-in counts ops)",
            reported[0].name
        );
    }
    let command = args.cmd.as_ref().map(|cmd| CommandSpec {
        steps: vec![("cmd".to_string(), cmd.clone())],
        prepare: args.prepare.clone(),
        cleanup: args.cleanup.clone(),
        ops: ops_source(args.ops, args.ops_regex.as_deref()),
        dir: None,
        metrics: reported,
        ops_primary: false,
        system: Default::default(),
    });
    let repo = std::path::absolute(&repo).map_err(|e| anyhow::anyhow!("--repo {repo}: {e}"))?;
    Ok(BisectSpec {
        repo,
        good,
        bad,
        build: args.build.clone(),
        build_timeout: args.build_timeout,
        measure: Measure {
            workload: args.workload.clone().unwrap_or_else(|| "cmd".into()),
            params: args.params.clone(),
            command,
            tasks: Some(tasks.to_string()),
            timeout: args.timeout,
            duration: args.duration,
            warmup: None,
            tags: args.tags.clone(),
        },
        runs: args.runs,
        max_runs: args.max_runs,
        threshold: args.threshold,
        alpha: args.alpha,
        seed: args.seed.unwrap_or_else(clock_seed),
        metric: match args.metric {
            BisectMetric::Cpu => TrialMetric::CpuThroughput,
            // A reported figure is the trial's X, as throughput is.
            BisectMetric::Throughput | BisectMetric::Reported(_) => TrialMetric::Throughput,
        },
    })
}

/// Prints where the bisection stands and picks the exit status.
fn finished(store: &Store, outcome: BisectOutcome, json: bool) -> Result<ExitCode> {
    let id = outcome.id;
    match outcome.end {
        BisectEnd::Interrupted => {
            eprintln!(
                "error: interrupted: bisection {id} keeps every decided step; `scalelab bisect \
                 --resume {id}` continues it"
            );
            Ok(ExitCode::from(INTERRUPTED))
        }
        BisectEnd::Waiting => {
            let (_, pending) = bisect::next(store, Some(id))?;
            print_pending(id, &pending)?;
            Ok(ExitCode::SUCCESS)
        }
        BisectEnd::Finished(status) => {
            print_view(store, id, json)?;
            Ok(exit_for(status))
        }
    }
}

fn exit_for(status: BisectStatus) -> ExitCode {
    match status {
        BisectStatus::Found | BisectStatus::Running => ExitCode::SUCCESS,
        BisectStatus::NotRegression => ExitCode::from(1),
        BisectStatus::Unresolved | BisectStatus::Failed => ExitCode::from(2),
    }
}

fn print_view(store: &Store, id: i64, json: bool) -> Result<()> {
    let view = bisect::view(store, id)?;
    let mut out = stdout::stdout();
    if json {
        model::safe_text::write_json(&mut out, &view)?;
    } else {
        present::bisect_text::write_bisect(&mut out, &view, output::stdout().palette)?;
    }
    out.flush()?;
    Ok(())
}

fn print_pending(id: i64, pending: &Pending) -> Result<()> {
    let mut out = stdout::stdout();
    match pending {
        Pending::End { end, commit } => writeln!(
            out,
            "bisect {id}: boot (or install) the {end} end {} {}, then run `scalelab bisect \
             mark {id}`",
            commit.hash,
            model::safe_text::printable(&commit.subject)
        )?,
        Pending::Commit {
            step,
            commit,
            steps_left,
        } => writeln!(
            out,
            "bisect {id}: step {step} (about {steps_left} left): boot (or install) {} {}, then \
             run `scalelab bisect mark {id}` (or `mark {id} --skip` if it cannot be built or \
             booted)",
            commit.hash,
            model::safe_text::printable(&commit.subject)
        )?,
        Pending::Done(status) => writeln!(
            out,
            "bisect {id} is finished ({status}): `scalelab bisect show {id}`"
        )?,
    }
    out.flush()?;
    Ok(())
}

fn next(db: Option<&Path>, id: Option<i64>) -> Result<ExitCode> {
    let store = db_path::open_existing(db)?;
    let (id, pending) = bisect::next(&store, id)?;
    print_pending(id, &pending)?;
    Ok(ExitCode::SUCCESS)
}

fn mark(db: Option<&Path>, id: Option<i64>, skip: bool, quiet: bool) -> Result<ExitCode> {
    let mut bench = Bench::open(db)?;
    let mut progress = TerminalProgress::named(quiet, "bisect");
    let marked = bisect::mark(id, skip, &mut bench.session(&mut progress));
    progress.finish();
    let (outcome, pending) = marked?;
    match outcome.end {
        BisectEnd::Finished(_) | BisectEnd::Interrupted => finished(&bench.store, outcome, false),
        BisectEnd::Waiting => {
            print_pending(outcome.id, &pending)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn show(db: Option<&Path>, id: Option<i64>, json: bool) -> Result<ExitCode> {
    let store = db_path::open_existing(db)?;
    let id = match id {
        Some(id) => id,
        None => match store.bisect_ids()?.last() {
            Some(&id) => id,
            None => bail!("no bisection in this database: `scalelab bisect --repo …` starts one"),
        },
    };
    let status = store.bisect(id)?.status;
    print_view(&store, id, json)?;
    Ok(exit_for(status))
}

fn list(db: Option<&Path>) -> Result<ExitCode> {
    let store = db_path::open_existing(db)?;
    let mut out = stdout::stdout();
    for id in store.bisect_ids()? {
        let b = store.bisect(id)?;
        let tested = b
            .steps
            .iter()
            .filter(|s| s.step > 0 && s.verdict != store::StepVerdict::Measuring)
            .count();
        writeln!(
            out,
            "{id:>4}  {}  {:<14}  good {} bad {}  {}",
            b.started_at,
            b.status.to_string(),
            bisect::short(&b.good),
            bisect::short(&b.bad),
            model::number_text::plural(tested, "step"),
        )?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// A seed nobody chose: the clock's nanoseconds mixed with the pid.
fn clock_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    nanos ^ u64::from(std::process::id()).rotate_left(32)
}
