//! One owner of a run's life, for `run` and `ab` alike: prepare (check the observers, report
//! what an earlier scalelab left running, start the guard, make the scratch area), begin
//! (fingerprint the machine, store the run as `running`), every trial (executed, committed the
//! moment it ends, reported to a [`Progress`]), finish (`complete`, or `interrupted` with every
//! finished trial kept).
//!
//! The CLI only turns arguments into a [`Plan`], owns the stop flag (Ctrl-C, SIGTERM) and shows
//! the progress. [`run`] measures one plan round-robin (`sweep`); [`ab`] measures two in
//! random pairs and grows the schedule while the pairs cannot decide (`interleave`,
//! `ab_schedule`, `ab_extension`); `bisect` measures three sides the same way.

mod ab;
pub(crate) mod ab_extension;
mod ab_policy;
pub(crate) mod ab_schedule;
mod deadlines;
pub(crate) mod interleave;
mod progress;
mod session;
#[cfg(test)]
mod summary_of_sweeps;
mod sweep;

use std::path::PathBuf;

pub use ab::{AbOutcome, ab};
pub use ab_policy::AbPolicy;
pub use progress::{Progress, Replan, TrialLabel, failure};
pub use session::{Helpers, Session};
pub use sweep::SweepEnd;

#[cfg(test)]
pub(crate) use progress::Silent;
#[cfg(any(test, feature = "test-support"))]
pub(crate) use sweep::measure_unstored;

use crate::error::LabError;
use crate::plan::Plan;
use crate::profile::perf_record;
use crate::runner::{Execution, Executor};
use crate::scratch::Scratch;
use model::env::Fingerprint;
use model::record::TrialOutcome;

use self::session::{before_trials, executor_for};
use self::sweep::{Underway, finish, round_robin, run_slots};

/// How a [`run`] ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOutcome {
    /// The run's id in the database.
    pub id: i64,
    /// Whether every planned trial ran or the stop flag ended the run.
    pub end: SweepEnd,
    /// Trials committed.
    pub stored: usize,
    /// Where the run's perf.data files are, with `--profile`.
    pub profile_dir: Option<PathBuf>,
}

/// Measures one plan: every point × every trial, round-robin, each trial committed as it ends.
/// `executor` overrides the one the plan calls for (a trial child for a built-in workload, the
/// command executor for `--cmd`).
///
/// A failure to store a trial stops the run, which is then marked `interrupted` with what it
/// had stored, and the error says so.
pub fn run(
    mut plan: Plan,
    session: &mut Session<'_>,
    executor: Option<&mut dyn Executor>,
) -> Result<RunOutcome, LabError> {
    let mut warnings = preflight(&mut plan, session.progress);
    warnings.extend(before_trials(session));
    let mut scratch = scratch_area(&plan, session.progress)?;
    let cwd =
        std::env::current_dir().map_err(|e| LabError::io("reading the working directory", e))?;
    let fingerprint = Fingerprint::capture(scratch.as_ref().map_or(cwd.as_path(), |s| s.base()));
    let meta = plan.run_meta(fingerprint, warnings, session.command_line.clone());
    let mut profile_dir = None;
    if let Some(profile) = plan.profile.as_mut() {
        let dir = perf_record::prepare_dir(session.db_file, meta.uuid)?;
        profile_dir = Some(dir.path().to_path_buf());
        profile.dir = Some(std::sync::Arc::new(dir));
    }
    let id = session.store.begin_run(&meta)?;
    let slots = round_robin(&plan);
    session.progress.begun(&[id], slots.len());
    let mut default_executor;
    let executor = match executor {
        Some(e) => e,
        None => {
            default_executor = executor_for(&plan, session.helpers)?;
            default_executor.as_mut()
        }
    };
    let runs = [Underway {
        plan: &plan,
        id,
        side: None,
    }];
    let mut stored = 0;
    let ended = match warm_up(&plan, id, executor, session) {
        Err(e) => Err(e),
        Ok(SweepEnd::Interrupted) => Ok(SweepEnd::Interrupted),
        Ok(SweepEnd::Complete) => run_slots(
            session,
            &runs,
            &slots,
            executor,
            scratch.as_mut(),
            &mut stored,
        ),
    };
    let end = finish(session.store, &[id], stored, ended)?;
    Ok(RunOutcome {
        id,
        end,
        stored,
        profile_dir,
    })
}

/// `--warmup-runs K`: the command K times at the largest N, untraced and unmeasured, before the
/// first trial (hyperfine's `--warmup`: a first run pays for cold caches, a new file system's
/// first writes, a first compile). A failed warm-up run is a warning, and the trials still run
/// (and fail on their own, each stored, if the command cannot run at all); the warning is
/// stored with run `id`, so that a reader of the run later sees that its caches may be cold.
fn warm_up(
    plan: &Plan,
    id: i64,
    executor: &mut dyn Executor,
    session: &mut Session<'_>,
) -> Result<SweepEnd, LabError> {
    let Some(&n) = plan.points.iter().max() else {
        return Ok(SweepEnd::Complete);
    };
    for k in 1..=plan.warmup_runs {
        if session.stop.load(std::sync::atomic::Ordering::SeqCst) {
            return Ok(SweepEnd::Interrupted);
        }
        let spec = plan.untraced_spec(n);
        let started = std::time::Instant::now();
        match executor.execute(&spec, plan.deadline(), session.stop) {
            Execution::Interrupted => return Ok(SweepEnd::Interrupted),
            Execution::Finished(TrialOutcome::Failed { reason }) => {
                let warning = format!(
                    "warm-up run {k} of {} at N={n} failed: {reason}",
                    plan.warmup_runs
                );
                session.progress.warning(&warning);
                session.store.add_warnings(id, &[warning])?;
            }
            Execution::Finished(_) => session.progress.note(&format!(
                "warm-up run {k} of {} at N={n}: {:.1} s, not measured",
                plan.warmup_runs,
                started.elapsed().as_secs_f64()
            )),
        }
    }
    Ok(SweepEnd::Complete)
}

/// `--locks` on a machine that cannot trace, or `--profile` without a usable perf: the run goes
/// on without them, and says why (and the fix). Returns the warnings to store with the run.
fn preflight(plan: &mut Plan, progress: &mut dyn Progress) -> Vec<String> {
    let mut warnings = Vec::new();
    if let Some(Err(why)) = plan.locks.map(|r| r.preflight()) {
        warnings.push(format!(
            "--locks: lock tracing unavailable, trials run untraced: {why}"
        ));
        plan.locks = None;
    }
    if let Some(Err(why)) = plan.offcpu.map(|r| r.preflight()) {
        warnings.push(format!(
            "--offcpu: off-CPU tracing unavailable, trials run untraced: {why}"
        ));
        plan.offcpu = None;
    }
    if plan.profile.is_some() {
        match perf_record::check_perf() {
            Err(why) => {
                warnings.push(format!("{why}; trials run unprofiled"));
                plan.profile = None;
            }
            Ok(()) => {
                warnings.extend(perf_record::kallsyms_warning());
                if let (Some(p), Some(_)) = (&plan.profile, &plan.command) {
                    warnings.push(format!(
                        "--profile: the first {} trial(s) of each point run each step under `perf record`; their times are the command's own, from its exec to its exit as perf saw them, but the sampling's interrupts are in them: compare runs profiled alike, or rerun without --profile for the cleanest times",
                        p.trials
                    ));
                }
            }
        }
    }
    for w in &warnings {
        progress.warning(w);
    }
    warnings
}

/// The scratch area of a workload that uses files (under `--workdir`, else the system
/// temporary directory), after removing the areas killed scalelabs left there.
fn scratch_area(plan: &Plan, progress: &mut dyn Progress) -> Result<Option<Scratch>, LabError> {
    if !plan.info.uses_files {
        return Ok(None);
    }
    let base = plan.workdir.clone().unwrap_or_else(std::env::temp_dir);
    let area = Scratch::new(&base)?;
    for stale in area.sweep_stale() {
        progress.note(&format!(
            "note: removed {} left by a scalelab that was killed",
            stale.display()
        ));
    }
    Ok(Some(area))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use model::record::RunStatus;
    use store::Store;

    use super::*;
    use crate::plan::RunConfig;
    use crate::runner::{CommandSpec, FakeExecutor};
    use model::record::{TrialOutcome, TrialRecord};

    fn plan(tasks: &str, runs: u32) -> Plan {
        let mut cfg = RunConfig::new("spin");
        cfg.tasks = Some(tasks.parse().unwrap());
        cfg.trials_per_point = runs;
        Plan::new(cfg, 2).unwrap()
    }

    /// Records what happened, and raises `stop` after `stop_after` finished trials.
    #[derive(Default)]
    struct Recorder {
        finished: Vec<(u32, u32)>,
        notes: Vec<String>,
        warnings: Vec<String>,
        stop_after: Option<usize>,
        stop: Option<std::sync::Arc<AtomicBool>>,
    }

    impl Progress for Recorder {
        fn begun(&mut self, _: &[i64], _: usize) {}
        fn trial_started(&mut self, _: &TrialLabel) {}
        fn trial_finished(&mut self, _: &TrialLabel, r: &TrialRecord) {
            self.finished.push((r.n, r.index));
            if Some(self.finished.len()) == self.stop_after {
                if let Some(stop) = &self.stop {
                    stop.store(true, Ordering::SeqCst);
                }
            }
        }
        fn replanned(&mut self, _: &Replan) {}
        fn warning(&mut self, w: &str) {
            self.warnings.push(w.to_string());
        }
        fn note(&mut self, n: &str) {
            self.notes.push(n.to_string());
        }
    }

    fn with_session<T>(
        stop: &AtomicBool,
        progress: &mut dyn Progress,
        f: impl FnOnce(&mut Session<'_>) -> T,
    ) -> (T, Store, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("s.db");
        let mut store = Store::open(&db).unwrap();
        let out = {
            let mut session = Session {
                store: &mut store,
                stop,
                progress,
                db_file: &db,
                command_line: "test".into(),
                helpers: None,
            };
            f(&mut session)
        };
        (out, store, dir)
    }

    #[test]
    fn a_run_goes_round_robin_and_commits_every_trial() {
        let stop = AtomicBool::new(false);
        let mut seen = Recorder::default();
        let mut exec = FakeExecutor::new(1e6, 0.1);
        let (outcome, store, _dir) = with_session(&stop, &mut seen, |s| {
            run(plan("1,2", 3), s, Some(&mut exec)).unwrap()
        });
        assert_eq!(outcome.end, SweepEnd::Complete);
        assert_eq!(outcome.stored, 6);
        assert_eq!(
            seen.finished,
            vec![(1, 0), (2, 0), (1, 1), (2, 1), (1, 2), (2, 2)]
        );
        let data = store.load_run(outcome.id).unwrap();
        assert_eq!(data.trials.len(), 6);
        assert_eq!(data.meta.status, RunStatus::Complete);
    }

    #[test]
    fn a_traced_run_measures_an_untraced_reference_before_the_first_trial_at_each_n() {
        let stop = AtomicBool::new(false);
        let mut seen = Recorder::default();
        let mut exec = FakeExecutor::new(1e6, 0.1);
        exec.harness = true;
        let mut traced = plan("1,2", 2);
        traced.offcpu = Some(crate::offcpu::OffCpuRequest::default());
        let (outcome, store, _dir) = with_session(&stop, &mut seen, |s| {
            run(traced, s, Some(&mut exec)).unwrap()
        });
        // Two references (one per N, untraced) besides the four traced trials, which alone are
        // the run's trials.
        assert_eq!(
            exec.traced,
            vec![false, true, false, true, true, true],
            "reference, trial (1,0), reference, trial (2,0), (1,1), (2,1)"
        );
        assert_eq!(outcome.stored, 4);
        assert_eq!(seen.finished, vec![(1, 0), (2, 0), (1, 1), (2, 1)]);
        let data = store.load_run(outcome.id).unwrap();
        for t in &data.trials {
            let m = t.outcome.measurement().unwrap();
            let reference = m.harness.unwrap().untraced;
            if t.index == 0 {
                // The fake's rate, 1e6 × N ÷ (1 + 0.1 (N − 1)) ops/s, over the 5 s window.
                let r = reference.expect("the first trial at each N carries its reference");
                let expected = if t.n == 1 { 5_000_000 } else { 9_090_908 };
                assert!(r.ops.abs_diff(expected) <= 2, "{r:?} at N={}", t.n);
                let ns = r.ns_per_op_task(t.n).unwrap();
                assert!(
                    (ns - f64::from(t.n) * 5e9 / expected as f64).abs() < 0.01,
                    "{ns}"
                );
            } else {
                assert_eq!(reference, None, "trial {} at N={}", t.index, t.n);
            }
        }
    }

    #[test]
    fn the_reference_runs_before_the_first_trial_that_is_not_profiled() {
        let stop = AtomicBool::new(false);
        let mut exec = FakeExecutor::new(1e6, 0.1);
        let mut traced = plan("1,2", 3);
        traced.locks = Some(crate::locks::LockRequest::ALL);
        traced.profile = Some(crate::runner::ProfileSettings::new(1));
        with_session(&stop, &mut Silent, |s| {
            run(traced, s, Some(&mut exec)).unwrap()
        });
        // (1,0) (2,0) are profiled; the references run before (1,1) and (2,1).
        assert_eq!(
            exec.traced,
            vec![true, true, false, true, false, true, true, true]
        );
    }

    #[test]
    fn an_untraced_run_measures_no_reference() {
        let stop = AtomicBool::new(false);
        let mut exec = FakeExecutor::new(1e6, 0.1);
        exec.harness = true;
        with_session(&stop, &mut Silent, |s| {
            run(plan("1,2", 2), s, Some(&mut exec)).unwrap()
        });
        assert_eq!(exec.calls, 4);
    }

    #[test]
    fn a_failed_trial_does_not_stop_the_run() {
        let stop = AtomicBool::new(false);
        let mut exec = FakeExecutor::new(1e6, 0.1);
        exec.fail = Some((2, 1));
        let (outcome, store, _dir) = with_session(&stop, &mut Silent, |s| {
            run(plan("1,2", 2), s, Some(&mut exec)).unwrap()
        });
        let data = store.load_run(outcome.id).unwrap();
        let failed = data
            .trials
            .iter()
            .filter(|t| matches!(t.outcome, TrialOutcome::Failed { .. }))
            .count();
        assert_eq!((data.trials.len(), failed), (4, 1));
        assert_eq!(data.meta.status, RunStatus::Complete);
    }

    #[test]
    fn the_stop_flag_ends_the_run_interrupted_with_what_finished() {
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let mut seen = Recorder {
            stop_after: Some(2),
            stop: Some(stop.clone()),
            ..Recorder::default()
        };
        let mut exec = FakeExecutor::new(1e6, 0.1);
        let (outcome, store, _dir) = with_session(&stop, &mut seen, |s| {
            run(plan("1,2", 3), s, Some(&mut exec)).unwrap()
        });
        assert_eq!((outcome.end, outcome.stored), (SweepEnd::Interrupted, 2));
        let data = store.load_run(outcome.id).unwrap();
        assert_eq!(data.trials.len(), 2);
        assert_eq!(data.meta.status, RunStatus::Interrupted);
    }

    /// A plan of command `c` at N=1,2 with `runs` trials a point and `warmup_runs`.
    fn command_plan(c: &str, runs: u32, warmup_runs: u32) -> RunConfig {
        let mut cfg = RunConfig::new("cmd");
        cfg.command = Some(CommandSpec::one_step(c));
        cfg.warmup = model::record::Nanos(0);
        cfg.tasks = Some("1,2".parse().unwrap());
        cfg.trials_per_point = runs;
        cfg.warmup_runs = warmup_runs;
        cfg
    }

    /// Runs `cfg` on `exec` with the stop flag at `stop`: the outcome, the store and what the
    /// progress saw.
    fn warmed(
        cfg: RunConfig,
        exec: &mut FakeExecutor,
        stop: bool,
    ) -> (RunOutcome, Store, tempfile::TempDir, Recorder) {
        let stop = AtomicBool::new(stop);
        let mut seen = Recorder::default();
        let (outcome, store, dir) = with_session(&stop, &mut seen, |s| {
            run(Plan::new(cfg, 2).unwrap(), s, Some(exec)).unwrap()
        });
        (outcome, store, dir, seen)
    }

    #[test]
    fn warm_up_runs_go_first_at_the_largest_n_and_are_never_stored() {
        let mut exec = FakeExecutor::new(1e3, 0.0);
        let (outcome, store, _dir, seen) = warmed(command_plan("true", 2, 3), &mut exec, false);
        assert_eq!(outcome.end, SweepEnd::Complete);
        assert_eq!(outcome.stored, 4);
        assert_eq!(exec.calls, 3 + 4);
        assert_eq!(exec.tasks[..3], [2, 2, 2], "{:?}", exec.tasks);
        assert_eq!(exec.tasks[3..], [1, 2, 1, 2]);
        assert_eq!(store.load_run(outcome.id).unwrap().trials.len(), 4);
        assert_eq!(seen.notes.len(), 3, "{:?}", seen.notes);
        assert!(seen.notes[0].starts_with("warm-up run 1 of 3 at N=2"));
    }

    #[test]
    fn a_failed_warm_up_run_is_a_warning_and_the_trials_still_run() {
        let mut exec = FakeExecutor::new(1e3, 0.0);
        exec.fail = Some((2, 0));
        let (outcome, store, _dir, seen) = warmed(command_plan("true", 1, 1), &mut exec, false);
        assert_eq!(outcome.stored, 2);
        let stored = store.load_run(outcome.id).unwrap().meta.warnings;
        assert!(
            stored
                .iter()
                .any(|w| w.contains("warm-up run 1 of 1 at N=2 failed")),
            "stored with the run: {stored:?}"
        );
        assert_eq!(seen.warnings.len(), 1, "{:?}", seen.warnings);
        assert!(
            seen.warnings[0].contains("warm-up run 1 of 1 at N=2 failed: planted failure"),
            "{:?}",
            seen.warnings
        );
    }

    #[test]
    fn a_stop_during_the_warm_up_stores_the_run_interrupted_without_trials() {
        let mut exec = FakeExecutor::new(1e3, 0.0);
        let (outcome, store, _dir, _) = warmed(command_plan("true", 2, 2), &mut exec, true);
        assert_eq!(outcome.end, SweepEnd::Interrupted);
        assert_eq!(exec.calls, 0);
        let data = store.load_run(outcome.id).unwrap();
        assert_eq!(data.meta.status, RunStatus::Interrupted);
        assert!(data.trials.is_empty());
    }

    #[test]
    fn warm_up_runs_of_a_built_in_workload_are_refused_naming_warmup() {
        let mut cfg = RunConfig::new("spin");
        cfg.warmup_runs = 1;
        let err = Plan::new(cfg, 2).unwrap_err().to_string();
        assert!(err.contains("--cmd") && err.contains("--warmup"), "{err}");
    }

    #[test]
    fn an_ab_experiment_stores_two_runs_in_random_pairs_with_their_order() {
        let command = |c: &str, variant: &str| {
            let mut cfg = command_plan(c, 4, 0);
            cfg.variant = Some(variant.into());
            Plan::new(cfg, 2).unwrap()
        };
        let policy = AbPolicy {
            seed: 7,
            max_runs: 4,
            options: stats::CompareOptions::default(),
            metric: analysis::comparison::TrialMetric::Throughput,
        };
        let stop = AtomicBool::new(false);
        let mut seen = Recorder::default();
        let mut exec = FakeExecutor::new(1e3, 0.0);
        let (outcome, store, _dir) = with_session(&stop, &mut seen, |s| {
            ab(
                command("true", "a"),
                command("true", "b"),
                &policy,
                s,
                Some(&mut exec),
            )
            .unwrap()
        });
        assert_eq!((outcome.end, outcome.stored), (SweepEnd::Complete, 16));
        let order = ab_schedule::schedule(&[1, 2], 4, 7);
        let a = store.load_run(outcome.id_a).unwrap();
        let b = store.load_run(outcome.id_b).unwrap();
        assert_eq!((a.trials.len(), b.trials.len()), (8, 8));
        assert_eq!(a.meta.tags["ab_seed"], "7");
        assert_eq!(a.meta.tags["ab_order"], ab_schedule::firsts(&order));
        assert_eq!(b.meta.tags, a.meta.tags);
        // Trials were executed in the schedule's order, both sides interleaved.
        let executed: Vec<(u32, u32)> = order.iter().map(|s| (s.n, s.index)).collect();
        assert_eq!(seen.finished, executed);
    }

    #[test]
    fn a_max_runs_below_runs_is_refused_before_anything_is_stored() {
        let policy = AbPolicy {
            seed: 1,
            max_runs: 2,
            options: stats::CompareOptions::default(),
            metric: analysis::comparison::TrialMetric::Throughput,
        };
        let err = policy.check(&plan("1", 3)).unwrap_err().to_string();
        assert!(err.contains("max_runs: 2 is below the 3 pairs"), "{err}");
    }
}
