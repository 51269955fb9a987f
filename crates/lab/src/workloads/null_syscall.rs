//! `null_syscall`: the cheapest round trip into the kernel and back — the C library's getppid(),
//! which is always a system call (never answered from a cache), called as will-it-scale's
//! `getppid1` and every real program call it, so the two tools count the same op. The floor under
//! every syscall-heavy workload.

use super::workload::{PrepareContext, Prepared, TaskLoop, Workload, WorkloadInfo};
use crate::error::LabError;
use model::params::Params;

const BATCH: u64 = 64;

static INFO: WorkloadInfo = WorkloadInfo {
    name: "null_syscall",
    op: "one getppid() system call",
    stresses: "syscall entry/exit (including speculation mitigations on the way in and out)",
    params: &[],
    uses_files: false,
};

pub(super) struct NullSyscall;

impl Workload for NullSyscall {
    fn info(&self) -> &'static WorkloadInfo {
        &INFO
    }
    fn prepare(&self, _: &Params, _: &PrepareContext) -> Result<Box<dyn Prepared>, LabError> {
        Ok(Box::new(NullPrepared))
    }
}

struct NullPrepared;

impl Prepared for NullPrepared {
    fn task(&self, _: usize) -> Result<Box<dyn TaskLoop + '_>, LabError> {
        Ok(Box::new(NullTask))
    }
}

struct NullTask;

impl TaskLoop for NullTask {
    #[inline]
    fn step(&mut self) -> Result<u64, LabError> {
        for _ in 0..BATCH {
            std::hint::black_box(sys::getppid());
        }
        Ok(BATCH)
    }
}
