//! Built-in workloads: what a trial's tasks do, and how each counts its ops.
//!
//! A workload is prepared once per trial (before any task exists, so state it puts in a
//! `sys::SharedRegion` is shared by forked task processes too), then each task builds its own
//! loop after it has been pinned, so the memory it touches is local to its CPU. The runner calls
//! [`TaskLoop::step`](workload::TaskLoop::step) until told to stop; a step does a small batch of ops and returns how many,
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
pub(crate) mod workload;

use crate::error::LabError;

pub use self::workload::WorkloadInfo;
pub(crate) use self::workload::{PrepareContext, Prepared, Workload};

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

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

    use model::params::Params;
    use model::record::Mode;

    use super::workload::{TaskLoop, steps_while};
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
