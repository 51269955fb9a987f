//! The sweep: every point × every trial, in an order that spreads drift over all points.
//!
//! Trials run round-robin (repetition 0 of every N, then repetition 1, …) so a slow drift in the
//! machine (thermal, a background job) lands on every point alike instead of on the last N.
//! Each finished trial is handed to the caller at once (which commits it), so an interrupted or
//! killed sweep keeps everything it measured.

use std::sync::atomic::{AtomicBool, Ordering};

use super::executor::{Execution, Executor};
use crate::error::LabError;
use crate::plan::Plan;
use crate::record::TrialRecord;
use crate::scratch::Scratch;
use crate::timestamp;

/// Progress notifications for the caller.
#[derive(Debug)]
pub enum SweepEvent<'a> {
    Started {
        n: u32,
        index: u32,
        done: usize,
        total: usize,
    },
    Finished(&'a TrialRecord),
}

/// How a sweep ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SweepEnd {
    Complete,
    Interrupted,
}

/// Runs every trial of `plan`; `on_event` sees each start and each finished record (an error
/// from it, e.g. a failed database write, stops the sweep).
pub fn run_sweep(
    plan: &Plan,
    executor: &mut dyn Executor,
    mut scratch: Option<&mut Scratch>,
    stop: &AtomicBool,
    on_event: &mut dyn FnMut(SweepEvent<'_>) -> Result<(), LabError>,
) -> Result<SweepEnd, LabError> {
    let order = plan.trial_order();
    let total = order.len();
    for (done, (n, index)) in order.into_iter().enumerate() {
        if stop.load(Ordering::SeqCst) {
            return Ok(SweepEnd::Interrupted);
        }
        on_event(SweepEvent::Started {
            n,
            index,
            done,
            total,
        })?;
        let started_at = timestamp::now_rfc3339();
        let mut spec = plan.trial_spec(n);
        spec.profile = match &plan.profile {
            Some(p) => p.request(n, index)?,
            None => None,
        };
        let dir = match (plan.info.uses_files, scratch.as_deref_mut()) {
            (true, Some(s)) => Some(s.create()?),
            _ => None,
        };
        spec.workdir.clone_from(&dir);
        let execution = executor.execute(&spec, plan.deadline(), stop);
        if let (Some(dir), Some(s)) = (&dir, scratch.as_deref()) {
            s.remove(dir)?;
        }
        match execution {
            Execution::Interrupted => return Ok(SweepEnd::Interrupted),
            Execution::Finished(outcome) => {
                let record = TrialRecord {
                    n,
                    index,
                    started_at,
                    outcome,
                };
                on_event(SweepEvent::Finished(&record))?;
            }
        }
    }
    Ok(SweepEnd::Complete)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Plan, RunConfig};
    use crate::record::TrialOutcome;
    use crate::runner::FakeExecutor;

    fn plan(tasks: &str, runs: u32) -> Plan {
        let mut cfg = RunConfig::new("spin");
        cfg.tasks = Some(tasks.into());
        cfg.runs = runs;
        Plan::new(cfg, 2).unwrap()
    }

    #[test]
    fn runs_round_robin_and_reports_every_trial() {
        let p = plan("1,2", 3);
        let mut exec = FakeExecutor::new(1e6, 0.1);
        let mut seen = Vec::new();
        let end = run_sweep(&p, &mut exec, None, &AtomicBool::new(false), &mut |e| {
            if let SweepEvent::Finished(r) = e {
                seen.push((r.n, r.index));
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(end, SweepEnd::Complete);
        assert_eq!(seen, vec![(1, 0), (2, 0), (1, 1), (2, 1), (1, 2), (2, 2)]);
    }

    #[test]
    fn a_failed_trial_does_not_stop_the_sweep() {
        let p = plan("1,2", 2);
        let mut exec = FakeExecutor::new(1e6, 0.1);
        exec.fail = Some((2, 1));
        let mut failed = 0;
        let mut ok = 0;
        run_sweep(&p, &mut exec, None, &AtomicBool::new(false), &mut |e| {
            if let SweepEvent::Finished(r) = e {
                match r.outcome {
                    TrialOutcome::Failed { .. } => failed += 1,
                    TrialOutcome::Ok(_) => ok += 1,
                }
            }
            Ok(())
        })
        .unwrap();
        assert_eq!((ok, failed), (3, 1));
    }

    #[test]
    fn stop_flag_ends_the_sweep_as_interrupted() {
        let p = plan("1,2", 3);
        let mut exec = FakeExecutor::new(1e6, 0.1);
        let stop = AtomicBool::new(false);
        let mut finished = 0;
        let end = run_sweep(&p, &mut exec, None, &stop, &mut |e| {
            if let SweepEvent::Finished(_) = e {
                finished += 1;
                if finished == 2 {
                    stop.store(true, Ordering::SeqCst);
                }
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(end, SweepEnd::Interrupted);
        assert_eq!(finished, 2);
    }
}
