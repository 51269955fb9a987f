//! `scalelab ab --a CMD --b CMD`: two external commands measured in interleaved pairs, each
//! pair in a random order ([`schedule`]), stored as two runs (variants `a` and `b`, each trial
//! committed as it ends, like `run`), then compared exactly as `compare` does.
//!
//! With `--max-runs`, when the first pairs leave some N unable to decide a change of ±threshold
//! (the comparison's "runs needed", or an interval wider than 1.4 thresholds; both read only the
//! spread of the pairs' changes), the
//! schedule grows — the same seed's longer order, of which the first one is a prefix — and
//! both runs' planned count and `ab_order` tag are updated in the store before the new trials.
//!
//! Both runs share one environment fingerprint and the tags `ab_seed` (which, with the points
//! and runs, repeats the order) and `ab_order` (the order itself: the side that went first in
//! each pair, in execution order). Ctrl-C (SIGINT) or SIGTERM
//! stops between trials: both runs keep what finished and are marked `interrupted`.

mod schedule;

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use lab::env::Fingerprint;
use lab::plan::{Plan, RunConfig, parse_duration};
use lab::record::{Nanos, RunStatus, TrialOutcome, TrialRecord};
use lab::report::compare_view::{CompareView, Side};
use lab::report::compare_warning::list;
use lab::report::percent::percent;
use lab::runner::{CommandExecutor, CommandSpec, Execution, Executor, OpsSource};
use lab::timestamp;
use stats::Change;

use super::{compare, pairs};
use crate::cli::AbArgs;
use crate::db_path;

pub fn run(db: Option<&Path>, args: AbArgs) -> Result<ExitCode> {
    let max_runs = args.max_runs.unwrap_or(args.runs);
    if max_runs < args.runs {
        bail!(
            "--max-runs {max_runs} is below --runs {}: --max-runs is the most pairs ab may grow \
             to when the first --runs cannot decide; raise it or drop it",
            args.runs
        );
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
    let mut plan_a = plan(&args, &args.a, "a", cpus)?;
    let mut plan_b = plan(&args, &args.b, "b", cpus)?;
    lab::plan::check_runs("--max-runs", max_runs, plan_a.points.len())?;
    let seed = args.seed.unwrap_or_else(clock_seed);
    let mut planned = plan_a.runs;
    let mut slots = schedule::schedule(&plan_a.points, planned, seed);
    let order = schedule::letters(&slots);
    for p in [&mut plan_a, &mut plan_b] {
        p.tags.insert("ab_seed".into(), seed.to_string());
        p.tags.insert("ab_order".into(), schedule::firsts(&slots));
    }

    let process_warnings = super::guard::before_trials();
    let mut store = db_path::open(db)?;
    let cwd = std::env::current_dir().context("reading the working directory")?;
    let fingerprint = Fingerprint::capture(&cwd);
    let id_a = store.begin_run(&plan_a.run_meta(
        fingerprint.clone(),
        process_warnings.clone(),
        command_line(),
    ))?;
    let id_b =
        store.begin_run(&plan_b.run_meta(fingerprint.clone(), process_warnings, command_line()))?;
    if !args.quiet {
        eprintln!(
            "ab: A is run {id_a}, B is run {id_b}; {} trials in pairs of random order \
             (seed {seed}; --seed {seed} repeats it)\norder: {order}",
            slots.len()
        );
    }

    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .context("installing the Ctrl-C handler")?;
    }
    let bar = progress_bar(slots.len() as u64, args.quiet);
    let mut executor = CommandExecutor;
    let mut stored = 0usize;
    let mut interrupted = false;
    let mut failure = None;
    loop {
        for slot in &slots[stored..] {
            if stop.load(Ordering::SeqCst) {
                interrupted = true;
                break;
            }
            let (plan, id) = match slot.side {
                Side::A => (&plan_a, id_a),
                Side::B => (&plan_b, id_b),
            };
            bar.set_message(format!(
                "{} N={} trial {}",
                slot.side,
                slot.n,
                slot.index + 1
            ));
            let started_at = timestamp::now_rfc3339();
            let outcome = match executor.execute(&plan.trial_spec(slot.n), plan.deadline(), &stop) {
                Execution::Interrupted => {
                    interrupted = true;
                    break;
                }
                Execution::Finished(outcome) => outcome,
            };
            if let TrialOutcome::Failed { reason } = &outcome {
                bar.suspend(|| {
                    eprintln!(
                        "trial {} N={} #{} failed: {}",
                        slot.side,
                        slot.n,
                        slot.index + 1,
                        lab::report::format::printable_lines(reason)
                    )
                });
            }
            let record = TrialRecord {
                n: slot.n,
                index: slot.index,
                started_at,
                outcome,
            };
            if let Err(e) = store.add_trial(id, &record) {
                failure = Some(e);
                break;
            }
            stored += 1;
            bar.inc(1);
        }
        if interrupted || failure.is_some() || planned >= max_runs {
            break;
        }
        let so_far = compare::build(
            &store.load_run(id_a)?,
            &store.load_run(id_b)?,
            &args.verdict,
            true,
        )?;
        let Some(more) = extension(&so_far, planned, max_runs) else {
            break;
        };
        bar.suspend(|| {
            if !args.quiet {
                eprintln!(
                    "ab: {planned} pairs cannot yet tell ±{} from no change at N={}; adding pairs up \
                     to {more} (--max-runs {max_runs})",
                    percent(args.verdict.threshold),
                    undecided(&so_far)
                );
            }
        });
        planned = more;
        slots = schedule::schedule(&plan_a.points, planned, seed);
        let firsts = schedule::firsts(&slots);
        for id in [id_a, id_b] {
            store.extend_plan(id, planned, &[("ab_order", firsts.as_str())])?;
        }
        bar.set_length(slots.len() as u64);
    }
    bar.finish_and_clear();
    let status = if interrupted || failure.is_some() {
        RunStatus::Interrupted
    } else {
        RunStatus::Complete
    };
    let now = timestamp::now_rfc3339();
    store.finish_run(id_a, status, &now)?;
    store.finish_run(id_b, status, &now)?;
    if let Some(e) = failure {
        return Err(e).with_context(|| {
            format!(
                "runs {id_a} and {id_b} stopped after {stored} trials (kept, marked interrupted)"
            )
        });
    }
    if interrupted {
        eprintln!(
            "error: interrupted: runs {id_a} (A) and {id_b} (B) keep their {stored} finished trials and are marked \
             interrupted; `scalelab compare {id_a} {id_b}` compares what finished"
        );
        return Ok(ExitCode::from(2));
    }
    let (a, b) = (store.load_run(id_a)?, store.load_run(id_b)?);
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
    compare::print(&view, args.json)
}

/// An interval wider than this many thresholds is too imprecise to decide a change of
/// ±threshold: a change the noise estimate (robust, so blind to a few wild pairs) says is
/// detectable can still leave a rank interval this wide when two of ten pairs are outliers.
/// 1.4 is the width of a 95% interval (2 × 1.96 standard errors) when the minimum detectable
/// effect at 80% power (2.8 standard errors) equals the threshold.
const WIDE: f64 = 1.4;

/// Pairs per point to grow to, at most `max_runs`, while some N cannot yet decide a change of
/// ±threshold ([`imprecise`]); `None` when every N can. Both tests read only the spread of the
/// pairs — `runs_needed` from their robust spread, the interval's width, which does not move
/// when every pair's change moves alike — never the verdict or where the interval lies.
fn extension(view: &CompareView, planned: u32, max_runs: u32) -> Option<u32> {
    let threshold = view.options.threshold;
    let want = view
        .points
        .iter()
        .filter_map(|p| p.change)
        .filter(|c| imprecise(c, threshold))
        .map(|c| {
            let needed = c
                .runs_needed
                .map_or(0, |k| u32::try_from(k).unwrap_or(u32::MAX));
            // Wide with enough runs by the noise estimate: half as many again, then look again.
            needed.max(planned.saturating_add(planned.div_ceil(2)))
        })
        .max()?;
    Some(want.max(planned + 1).min(max_runs))
}

/// Whether a point's pairs cannot yet decide a change of ±threshold: the noise hides it (runs
/// needed) or the interval is more than [`WIDE`] thresholds wide. Never with a threshold of 0.
fn imprecise(c: &Change, threshold: f64) -> bool {
    let r = c.relative_shift;
    threshold > 0.0 && (c.runs_needed.is_some() || r.upper - r.lower > WIDE * threshold)
}

/// The N that cannot yet decide a change of ±threshold, as `1,2`.
fn undecided(view: &CompareView) -> String {
    let ns: Vec<u32> = view
        .points
        .iter()
        .filter(|p| {
            p.change
                .is_some_and(|c| imprecise(&c, view.options.threshold))
        })
        .map(|p| p.n)
        .collect();
    list(&ns)
}

/// One side's sweep: the command, completions as ops, no warm-up, as `run --cmd` plans it.
fn plan(args: &AbArgs, command: &str, variant: &str, cpus: u32) -> Result<Plan> {
    let mut cfg = RunConfig::new("cmd");
    cfg.command = Some(CommandSpec {
        steps: vec![("cmd".to_string(), command.to_string())],
        prepare: args.prepare.clone(),
        cleanup: args.cleanup.clone(),
        ops: OpsSource::Completion,
    });
    cfg.warmup = Nanos(0);
    if let Some(t) = &args.timeout {
        cfg.timeout = Some(parse_duration(t).context("--timeout")?);
    }
    cfg.tasks = args.tasks.clone();
    cfg.runs = args.runs;
    cfg.variant = Some(variant.to_string());
    cfg.tags = pairs("--tag", &args.tags)?;
    cfg.name = args.name.clone();
    Plan::new(cfg, cpus).with_context(|| format!("--{variant}"))
}

/// A seed nobody chose: the clock's nanoseconds mixed with the pid.
fn clock_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    nanos ^ u64::from(std::process::id()).rotate_left(32)
}

fn progress_bar(trials: u64, quiet: bool) -> ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(trials), ProgressDrawTarget::stderr());
    let style = ProgressStyle::with_template(
        "ab [{bar:30}] {pos}/{len} trials, {elapsed} elapsed, ~{eta} left · {msg}",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar())
    .progress_chars("=> ");
    bar.set_style(style);
    bar
}

fn command_line() -> String {
    std::env::args().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use stats::{Estimate, Method, Verdict};

    fn change(lower: f64, upper: f64, runs_needed: Option<usize>) -> Change {
        Change {
            method: Method::SignedRank,
            median_a: 100.0,
            median_b: 97.0,
            relative: -0.03,
            shift: Estimate {
                point: -3.0,
                lower: lower * 100.0,
                upper: upper * 100.0,
                level: 0.95,
            },
            relative_shift: Estimate {
                point: -0.03,
                lower,
                upper,
                level: 0.95,
            },
            p_value: 0.002,
            exact: true,
            verdict: Verdict::Inconclusive,
            min_detectable: Some(0.005),
            runs_needed,
            min_achievable_p: 0.002,
        }
    }

    #[test]
    fn a_wide_interval_or_too_much_noise_is_imprecise_whatever_its_centre() {
        // Two wild pairs of ten: the robust noise says 1% is detectable, the interval disagrees.
        assert!(imprecise(&change(-0.0325, 0.0068, None), 0.01));
        // Tight, wherever it lies: decided (as REGRESSED, or as NO CHANGE).
        assert!(!imprecise(&change(-0.035, -0.025, None), 0.01));
        assert!(!imprecise(&change(-0.004, 0.004, None), 0.01));
        // The same width moved anywhere is judged alike: the rule never reads the centre.
        assert_eq!(
            imprecise(&change(-0.02, 0.0, None), 0.01),
            imprecise(&change(0.05, 0.07, None), 0.01)
        );
        assert!(imprecise(&change(-0.035, -0.025, Some(40)), 0.01));
        // A threshold of 0 has no precision to reach.
        assert!(!imprecise(&change(-0.5, 0.5, Some(40)), 0.0));
    }
}
