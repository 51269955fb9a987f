//! Running trials in a given order and keeping each one: the loop both `run` (round-robin over
//! the points) and `ab` (random pairs of sides) go through.
//!
//! Each trial is executed with its scratch directory (removed after it, whatever became of it)
//! and its profile request (one at each N of a traced run after an untraced reference trial,
//! kept with it: what the traces cost, and how often the tasks switch, which decides where the
//! point's profile samples: `profile::scope`), then committed to the store the moment it ends and
//! reported to the [`Progress`]: an interrupted or killed sweep keeps everything it measured.
//! The stop flag is checked before every trial, and the executor checks it during one.

use std::sync::atomic::Ordering;

use super::deadlines::Deadlines;
use super::progress::TrialLabel;
use super::session::Session;
use crate::error::LabError;
use crate::plan::Plan;
use crate::runner::{Execution, Executor, TrialSpec};
use crate::scratch::Scratch;
use model::record::{RunStatus, TrialRecord, UntracedReference};
use model::timestamp;
use store::Store;

/// One trial to run: which of the session's runs it belongs to, its N and repetition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Slot {
    /// Index into the runs being measured (0 for `run`; 0 = A, 1 = B for `ab`; the plans'
    /// order in an interleaved experiment).
    pub run: usize,
    pub n: u32,
    pub index: u32,
}

/// A run being measured: its plan, its id in the store and, in an interleaved experiment, its
/// side's letter.
#[derive(Debug)]
pub(super) struct Underway<'p> {
    pub plan: &'p Plan,
    pub id: i64,
    pub side: Option<char>,
}

/// How a sweep ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepEnd {
    /// Every planned trial ran (failed trials included).
    Complete,
    /// The stop flag was raised: the trial in flight was killed, the finished ones are kept.
    Interrupted,
}

/// Runs `slots` in order, committing each finished trial to its run; `stored` counts them.
pub(super) fn run_slots(
    session: &mut Session<'_>,
    runs: &[Underway<'_>],
    slots: &[Slot],
    executor: &mut dyn Executor,
    mut scratch: Option<&mut Scratch>,
    stored: &mut usize,
) -> Result<SweepEnd, LabError> {
    let mut switch_rates = SwitchRates::new();
    let mut deadlines = Deadlines::default();
    for slot in slots {
        if session.stop.load(Ordering::SeqCst) {
            return Ok(SweepEnd::Interrupted);
        }
        let run = &runs[slot.run];
        let label = TrialLabel {
            side: run.side,
            n: slot.n,
            index: slot.index,
        };
        session.progress.trial_started(&label);
        let Some(record) = execute(
            run.plan,
            slot,
            executor,
            scratch.as_deref_mut(),
            session,
            (&mut switch_rates, &mut deadlines),
        )?
        else {
            return Ok(SweepEnd::Interrupted);
        };
        session.store.add_trial(run.id, &record)?;
        *stored += 1;
        session.progress.trial_finished(&label, &record);
    }
    Ok(SweepEnd::Complete)
}

/// Per run and N, the context switches a second per task its untraced reference measured:
/// every later profiled trial of the point is sampled where that rate says
/// (`profile::scope::choose`), so a point's trials share one scope.
type SwitchRates = std::collections::HashMap<(usize, u32), f64>;

/// Executes one trial; `None` when the stop flag interrupted it.
fn execute(
    plan: &Plan,
    slot: &Slot,
    executor: &mut dyn Executor,
    mut scratch: Option<&mut Scratch>,
    session: &Session<'_>,
    (switch_rates, deadlines): (&mut SwitchRates, &mut Deadlines),
) -> Result<Option<TrialRecord>, LabError> {
    let untraced = match untraced_reference(
        plan,
        slot,
        executor,
        scratch.as_deref_mut(),
        session,
        deadlines,
    )? {
        Reference::Interrupted => return Ok(None),
        Reference::Measured(r) => Some(r),
        Reference::None => None,
    };
    if let Some(rate) = untraced.and_then(|r| r.switches_per_task_second(slot.n)) {
        switch_rates.insert((slot.run, slot.n), rate);
    }
    let started_at = timestamp::now_rfc3339();
    let mut spec = plan.trial_spec(slot.n);
    spec.profile = match &plan.profile {
        Some(p) => p.request(
            slot.n,
            slot.index,
            plan.command.as_ref().map_or(0, |c| c.steps.len()),
            switch_rates.get(&(slot.run, slot.n)).copied(),
        )?,
        None => None,
    };
    let execution = execute_in_scratch(
        plan, slot.n, &mut spec, executor, scratch, session, deadlines,
    )?;
    Ok(match execution {
        Execution::Interrupted => None,
        Execution::Finished(mut outcome) => {
            if let (Some(r), Some(m)) = (untraced, outcome.measurement_mut())
                && let Some(harness) = m.harness.as_mut()
            {
                harness.untraced = Some(r);
            }
            Some(TrialRecord {
                n: slot.n,
                index: slot.index,
                started_at,
                outcome,
            })
        }
    })
}

/// Runs `spec` (at `n` tasks) with a fresh scratch directory when the workload uses files
/// (removed after it, whatever became of the trial), killed when it outlives `deadlines`, which
/// learn from how long it took.
fn execute_in_scratch(
    plan: &Plan,
    n: u32,
    spec: &mut TrialSpec,
    executor: &mut dyn Executor,
    mut scratch: Option<&mut Scratch>,
    session: &Session<'_>,
    deadlines: &mut Deadlines,
) -> Result<Execution, LabError> {
    let dir = match scratch.as_deref_mut() {
        Some(s) if plan.info.uses_files => Some(s.create()?),
        _ => None,
    };
    if let (Some(dir), crate::runner::Work::Builtin(work)) = (&dir, &mut spec.work) {
        work.workdir = Some(dir.clone());
    }
    let started = std::time::Instant::now();
    let execution = executor.execute(spec, deadlines.for_trial(plan, n), session.stop);
    if matches!(&execution, Execution::Finished(o) if o.measurement().is_some()) {
        deadlines.ended(plan, n, started.elapsed());
    }
    if let (Some(dir), Some(s)) = (&dir, scratch.as_deref()) {
        s.remove(dir)?;
    }
    Ok(execution)
}

/// What became of a trial's untraced reference.
enum Reference {
    /// None was asked for (not the trial of [`reference_index`], no trace, a command), or it
    /// failed.
    None,
    /// The stop flag interrupted it.
    Interrupted,
    Measured(UntracedReference),
}

/// The trial an untraced reference runs just before, at each N: the first one not profiled,
/// so that the two differ by the traces alone and are adjacent in time (a workload that drifts
/// over a run, as `create_unlink`'s growing directory does, drifts little between them); the
/// first trial when every trial is profiled.
fn reference_index(plan: &Plan) -> u32 {
    let profiled = plan.profile.as_ref().map_or(0, |p| p.trials);
    if profiled < plan.trials_per_point {
        profiled
    } else {
        0
    }
}

/// Before one trial at each N of a built-in run with lock or off-CPU traces: the same
/// trial without any trace or profile, whose ops per window show what the traces cost (a trace
/// adds work to every switch or lock wait it records, and `explain` describes the traced run).
/// A reference that fails is left out: the traced trial still runs.
fn untraced_reference(
    plan: &Plan,
    slot: &Slot,
    executor: &mut dyn Executor,
    scratch: Option<&mut Scratch>,
    session: &Session<'_>,
    deadlines: &mut Deadlines,
) -> Result<Reference, LabError> {
    let traced = plan.locks.is_some() || plan.offcpu.is_some();
    if slot.index != reference_index(plan) || !traced || plan.command.is_some() {
        return Ok(Reference::None);
    }
    // No profile either: the profiled trials get theirs in `execute`.
    let mut spec = plan.untraced_spec(slot.n);
    Ok(
        match execute_in_scratch(
            plan, slot.n, &mut spec, executor, scratch, session, deadlines,
        )? {
            Execution::Interrupted => Reference::Interrupted,
            Execution::Finished(outcome) => match outcome.measurement() {
                Some(m) => Reference::Measured(UntracedReference {
                    window: m.window,
                    ops: m.ops(),
                    switches: Some(m.usage.voluntary_switches + m.usage.involuntary_switches),
                    usage: Some(m.usage),
                }),
                None => Reference::None,
            },
        },
    )
}

/// The round-robin order of one plan: repetition 0 of every N, then repetition 1, … so a slow
/// drift in the machine (thermal, a background job) lands on every point alike.
pub(super) fn round_robin(plan: &Plan) -> Vec<Slot> {
    plan.trial_order()
        .into_iter()
        .map(|(n, index)| Slot { run: 0, n, index })
        .collect()
}

/// Runs every trial of `plan` round-robin and returns the records, storing nothing and
/// without a scratch area: for tests (with a fake executor).
#[cfg(any(test, feature = "test-support"))]
pub(crate) fn measure_unstored(
    plan: &Plan,
    executor: &mut dyn Executor,
    stop: &std::sync::atomic::AtomicBool,
) -> Vec<TrialRecord> {
    let mut records = Vec::new();
    for slot in round_robin(plan) {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let mut spec = plan.trial_spec(slot.n);
        spec.profile = None;
        let started_at = timestamp::now_rfc3339();
        match executor.execute(&spec, plan.deadline(), stop) {
            Execution::Interrupted => break,
            Execution::Finished(outcome) => records.push(TrialRecord {
                n: slot.n,
                index: slot.index,
                started_at,
                outcome,
            }),
        }
    }
    records
}

/// Marks the runs finished: `complete`, or `interrupted` when stopped or failed; a failure
/// becomes an error that says what was kept.
pub(super) fn finish(
    store: &mut Store,
    ids: &[i64],
    stored: usize,
    ended: Result<SweepEnd, LabError>,
) -> Result<SweepEnd, LabError> {
    let status = match &ended {
        Ok(SweepEnd::Complete) => RunStatus::Complete,
        Ok(SweepEnd::Interrupted) | Err(_) => RunStatus::Interrupted,
    };
    let now = timestamp::now_rfc3339();
    for &id in ids {
        store.finish_run(id, status, &now)?;
    }
    ended.map_err(|source| LabError::Stopped {
        runs: ids
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(" and "),
        stored,
        source: Box::new(source),
    })
}
