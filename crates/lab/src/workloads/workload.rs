//! What a built-in workload is ([`Workload`]: its description, and how it is prepared), what a
//! prepared one gives each task ([`Prepared`], [`TaskLoop`]), and the loop the runner drives
//! ([`steps_while`]). The registry of every workload is `workloads/mod.rs`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::error::LabError;
use model::params::{ParamSpec, Params};
use model::record::Mode;

/// What `scalelab list` shows about a workload.
#[derive(Debug)]
pub struct WorkloadInfo {
    /// The name `scalelab run` takes.
    pub name: &'static str,
    /// The unit one op stands for.
    pub op: &'static str,
    /// The kernel (or hardware) path the workload stresses.
    pub stresses: &'static str,
    /// The parameters it declares, with their defaults.
    pub params: &'static [ParamSpec],
    /// True when the workload creates files: each trial then gets a fresh scratch directory
    /// under `--workdir`, removed after the trial whatever its outcome.
    pub uses_files: bool,
}

/// Facts a workload may need when it prepares a trial.
#[derive(Debug, Clone)]
pub(crate) struct PrepareContext {
    pub tasks: usize,
    pub mode: Mode,
    /// This trial's scratch directory (exists, empty) when the workload `uses_files`.
    pub workdir: Option<PathBuf>,
}

/// A built-in workload.
pub(crate) trait Workload: Sync {
    fn info(&self) -> &'static WorkloadInfo;
    /// Builds the per-trial state shared by all tasks.
    fn prepare(&self, params: &Params, ctx: &PrepareContext)
    -> Result<Box<dyn Prepared>, LabError>;
}

/// Per-trial state; hands each task its loop.
pub(crate) trait Prepared: Send + Sync {
    /// Called inside task `index` after pinning and before the start gate opens.
    fn task(&self, index: usize) -> Result<Box<dyn TaskLoop + '_>, LabError>;
    /// Names of the workload-specific counts its tasks report (at most 4), in a fixed order.
    fn extra_names(&self) -> &'static [&'static str] {
        &[]
    }
    /// Called by the sampler right after the window closes: wake any task blocked in the
    /// workload (in a pipe read, a futex wait…) so it can see the stop and return.
    fn unblock(&self) {}
}

/// One task's work.
pub(crate) trait TaskLoop {
    /// Does a small batch of ops (microseconds, not milliseconds) and returns how many were done.
    fn step(&mut self) -> Result<u64, LabError>;
    /// Workload-specific counts reported at the end (summed over tasks).
    fn extras(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }
    /// The `(pid, tid)` of a thread this task keeps busy beside it on its CPU (pipe_pingpong's
    /// echo partner), whose CPU time the trial reads at the window's edges so that a profile can
    /// be checked over both: cpu-clock samples land in whichever of the two runs when the timer
    /// fires. `None` for a task that works alone.
    fn partner(&self) -> Option<(u32, u32)> {
        None
    }
    /// The task's hot loop, for a workload that keeps its op inline in a loop of its own:
    /// runs ops while `phase` reads `seen`, storing the running count in `counter` after each
    /// step, and returns the count (best written as `Some(steps_while(self, …))`). `None`, the
    /// default: the harness runs [`steps_while`] with the step called through the trait object,
    /// which keeps each workload's step a function of its own, named in profiles and stacks.
    ///
    /// Why a workload would: a page fault taken inside a function that returns soon after can
    /// cost more kernel time than one taken in a loop that does not return (the figures:
    /// docs/notes/workloads.md).
    fn run_inline(
        &mut self,
        _phase: &AtomicU32,
        _seen: u32,
        _counter: &AtomicU64,
        _count: u64,
    ) -> Option<Result<u64, LabError>> {
        None
    }
}

/// A task's hot loop: steps while `phase` reads `seen`, the count stored after each. The harness
/// runs it with the task's step called through the trait object; [`TaskLoop::run_inline`] runs it
/// on the workload's own type, where the step can be inlined. Always inlined itself, so that the
/// op then sits in the workload's own `run_inline`, named after its type in profiles.
#[inline(always)]
pub(crate) fn steps_while<T: TaskLoop + ?Sized>(
    work: &mut T,
    phase: &AtomicU32,
    seen: u32,
    counter: &AtomicU64,
    mut count: u64,
) -> Result<u64, LabError> {
    while phase.load(Ordering::Relaxed) == seen {
        count += work.step()?;
        counter.store(count, Ordering::Relaxed);
    }
    Ok(count)
}

/// A workload's failure, naming it.
pub(crate) fn workload_error(workload: &str, message: impl Into<String>) -> LabError {
    LabError::Workload {
        workload: workload.to_string(),
        message: message.into(),
    }
}
