//! `sched_yield`: give up the CPU and get it back. With one pinned task per CPU there is nobody
//! to yield to, so the op is a system call plus a pass through the scheduler's pick-next path
//! on the task's own run queue: the floor under every "yield and retry" loop in user space
//! (spin-then-yield locks, `std::thread::yield_now`), and a check that the run queues of
//! different CPUs really are independent.

use super::workload::{PrepareContext, Prepared, TaskLoop, Workload, WorkloadInfo};
use crate::error::LabError;
use model::params::Params;

const BATCH: u64 = 64;

static INFO: WorkloadInfo = WorkloadInfo {
    name: "sched_yield",
    op: "one sched_yield() system call",
    stresses: "syscall entry/exit and the scheduler's yield and pick-next path on the task's own run queue (a context switch only if another task is runnable on that CPU)",
    params: &[],
    uses_files: false,
};

pub(super) struct SchedYield;

impl Workload for SchedYield {
    fn info(&self) -> &'static WorkloadInfo {
        &INFO
    }
    fn prepare(&self, _: &Params, _: &PrepareContext) -> Result<Box<dyn Prepared>, LabError> {
        Ok(Box::new(YieldPrepared))
    }
}

struct YieldPrepared;

impl Prepared for YieldPrepared {
    fn task(&self, _: usize) -> Result<Box<dyn TaskLoop + '_>, LabError> {
        Ok(Box::new(YieldTask))
    }
}

struct YieldTask;

impl TaskLoop for YieldTask {
    #[inline]
    fn step(&mut self) -> Result<u64, LabError> {
        for _ in 0..BATCH {
            sys::sched_yield();
        }
        Ok(BATCH)
    }
}
