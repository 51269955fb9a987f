//! Built-in workloads: what a trial's tasks do, and how each counts its ops.
//!
//! A workload is prepared once per trial (before any task exists, so state it puts in a
//! `sys::SharedRegion` is shared by forked task processes too), then each task builds its own
//! loop after it has been pinned, so the memory it touches is local to its CPU. The runner calls
//! [`TaskLoop::step`] until told to stop; a step does a small batch of ops and returns how many,
//! so the harness's per-step cost (one relaxed load, one relaxed store) is amortised.

mod atomic;
mod clock;
mod create_unlink;
mod file_write;
mod fsync_write;
mod futex_mutex;
mod mmap_munmap;
mod null_syscall;
mod open_close;
mod owned_path;
mod page_fault;
mod pipe_pingpong;
mod pread;
mod sched_yield;
mod spawn;
mod spin;
mod tree_hash;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::error::LabError;
use crate::params::{ParamSpec, Params};
use crate::record::Mode;

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
    /// Why a workload would: on the AMD KVM guest scalelab is developed on, an anonymous page
    /// fault taken inside a function that returns soon after costs about 22% more kernel time
    /// than one taken in a loop that does not return (`bench/fault-shape`: the same C loop with
    /// its store moved into a small function). `page_fault`'s step returned every 16 pages and
    /// read 0.83–0.88 of will-it-scale's `page_fault1`, whose loop never returns.
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

static REGISTRY: &[&dyn Workload] = &[
    &page_fault::PageFault,
    &clock::Clock,
    &null_syscall::NullSyscall,
    &atomic::Atomic,
    &spin::Spin,
    &open_close::OpenClose,
    &create_unlink::CreateUnlink,
    &fsync_write::FsyncWrite,
    &file_write::FileWrite,
    &pread::Pread,
    &mmap_munmap::MmapMunmap,
    &pipe_pingpong::PipePingpong,
    &futex_mutex::FutexMutex,
    &sched_yield::SchedYield,
    &spawn::Spawn,
    &tree_hash::TreeHash,
];

/// What `scalelab list` shows of every built-in workload, in its order.
pub fn workload_infos() -> impl Iterator<Item = &'static WorkloadInfo> {
    all().iter().map(|w| w.info())
}

/// What `scalelab list` shows of the built-in workload `name`; the error suggests the nearest
/// names.
pub fn workload_info(name: &str) -> Result<&'static WorkloadInfo, LabError> {
    find(name).map(|w| w.info())
}

/// Every built-in workload, in `scalelab list` order.
pub(crate) fn all() -> &'static [&'static dyn Workload] {
    REGISTRY
}

/// Finds a workload by name; the error suggests the nearest names.
pub(crate) fn find(name: &str) -> Result<&'static dyn Workload, LabError> {
    if let Some(w) = REGISTRY.iter().find(|w| w.info().name == name) {
        return Ok(*w);
    }
    let mut near: Vec<(f64, &str)> = REGISTRY
        .iter()
        .map(|w| (strsim::jaro_winkler(name, w.info().name), w.info().name))
        .filter(|(score, _)| *score > 0.7)
        .collect();
    near.sort_by(|a, b| b.0.total_cmp(&a.0));
    let suggestion = match near.as_slice() {
        [] => String::new(),
        [(_, one)] => format!("; did you mean `{one}`?"),
        many => format!(
            "; did you mean one of: {}?",
            many.iter()
                .take(3)
                .map(|(_, n)| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    Err(LabError::UnknownWorkload {
        name: name.to_string(),
        suggestion,
    })
}

fn workload_error(workload: &str, message: impl Into<String>) -> LabError {
    LabError::Workload {
        workload: workload.to_string(),
        message: message.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A loop whose step does `ops` ops and, at its `flip_at`-th step, moves the phase on (as the
    /// trial's sampler does while tasks run); a step past `fail_at` fails.
    struct Flipping<'a> {
        phase: &'a AtomicU32,
        ops: u64,
        steps: u32,
        flip_at: u32,
        fail_at: u32,
    }

    impl TaskLoop for Flipping<'_> {
        fn step(&mut self) -> Result<u64, LabError> {
            self.steps += 1;
            if self.steps > self.fail_at {
                return Err(LabError::Internal("step failed".into()));
            }
            if self.steps == self.flip_at {
                self.phase.fetch_add(1, Ordering::Relaxed);
            }
            Ok(self.ops)
        }
    }

    #[test]
    fn steps_while_counts_every_step_until_the_phase_moves_and_stores_each_count() {
        let phase = AtomicU32::new(2);
        let counter = AtomicU64::new(0);
        let mut work = Flipping {
            phase: &phase,
            ops: 16,
            steps: 0,
            flip_at: 5,
            fail_at: u32::MAX,
        };
        // Counting on from 100 ops: the step that moved the phase is counted, none after it.
        assert_eq!(
            steps_while(&mut work, &phase, 2, &counter, 100).unwrap(),
            180
        );
        assert_eq!(counter.load(Ordering::Relaxed), 180);
        assert_eq!(work.steps, 5);
        // Called when the phase already differs: no step, the count unchanged.
        assert_eq!(
            steps_while(&mut work, &phase, 2, &counter, 180).unwrap(),
            180
        );
        assert_eq!(work.steps, 5);
        // A failing step ends the loop with its error; the count stored is the last good one.
        work.fail_at = 7;
        let err = steps_while(&mut work, &phase, 3, &counter, 180).unwrap_err();
        assert!(err.to_string().contains("step failed"), "{err}");
        assert_eq!(counter.load(Ordering::Relaxed), 212);
    }

    #[test]
    fn unknown_names_get_suggestions() {
        let err = find("page_falt").err().unwrap().to_string();
        assert!(err.contains("did you mean `page_fault`"), "{err}");
        let err = find("zzzz").err().unwrap().to_string();
        assert!(
            !err.contains("did you mean") && err.contains("scalelab list"),
            "{err}"
        );
    }

    #[test]
    fn every_workload_documents_its_op_and_defaults_validate() {
        for w in all() {
            let info = w.info();
            assert!(
                !info.op.is_empty() && !info.stresses.is_empty(),
                "{}",
                info.name
            );
            Params::resolve(info.name, info.params, &[]).expect("defaults are valid");
        }
    }

    /// Every workload, run for a few steps in-process, does ops and reports plausible counts;
    /// file workloads get a scratch directory and leave nothing in it.
    #[test]
    fn every_workload_steps() {
        for w in all() {
            let info = w.info();
            let mut given = Vec::new();
            match info.name {
                "page_fault" => given.push(("size".to_string(), "1M".to_string())),
                "file_write" | "pread" => given.push(("size".to_string(), "1M".to_string())),
                _ => {}
            }
            let params = Params::resolve(info.name, info.params, &given).unwrap();
            let scratch = tempfile::tempdir().unwrap();
            let ctx = PrepareContext {
                tasks: 2,
                mode: Mode::Threads,
                workdir: info.uses_files.then(|| scratch.path().to_path_buf()),
            };
            let prepared = w.prepare(&params, &ctx).unwrap();
            let mut task = prepared.task(1).unwrap();
            let mut ops = 0;
            for _ in 0..100 {
                ops += task.step().unwrap();
            }
            assert!(ops >= 100, "{}: {ops} ops in 100 steps", info.name);
            let extras = task.extras();
            assert!(
                extras
                    .iter()
                    .all(|(n, _)| prepared.extra_names().contains(n)),
                "{}: {extras:?}",
                info.name
            );
            drop(task);
            drop(prepared);
            let left: Vec<_> = std::fs::read_dir(scratch.path())
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            assert!(left.is_empty(), "{} left {left:?}", info.name);
        }
    }
}
