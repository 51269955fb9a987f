//! `spin`: a pure ALU loop that shares nothing, the achievable ideal for this machine's
//! placement: if `spin` does not scale to N, nothing will (SMT siblings, turbo, a noisy
//! neighbour or a hypervisor are taking CPU away).

use super::workload::{PrepareContext, Prepared, TaskLoop, Workload, WorkloadInfo};
use crate::error::LabError;
use model::params::Params;

const BATCH: u64 = 4096;

static INFO: WorkloadInfo = WorkloadInfo {
    name: "spin",
    op: "one xorshift64 step (3 shifts, 3 xors, register only)",
    stresses: "nothing shared: the CPU alone (baseline for SMT, frequency and placement effects)",
    params: &[],
    uses_files: false,
};

pub(super) struct Spin;

impl Workload for Spin {
    fn info(&self) -> &'static WorkloadInfo {
        &INFO
    }
    fn prepare(&self, _: &Params, _: &PrepareContext) -> Result<Box<dyn Prepared>, LabError> {
        Ok(Box::new(SpinPrepared))
    }
}

struct SpinPrepared;

impl Prepared for SpinPrepared {
    fn task(&self, index: usize) -> Result<Box<dyn TaskLoop + '_>, LabError> {
        Ok(Box::new(SpinTask {
            state: 0x9E37_79B9_7F4A_7C15 ^ (index as u64 + 1),
        }))
    }
}

struct SpinTask {
    state: u64,
}

impl TaskLoop for SpinTask {
    #[inline]
    fn step(&mut self) -> Result<u64, LabError> {
        let mut x = std::hint::black_box(self.state);
        for _ in 0..BATCH {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
        }
        self.state = std::hint::black_box(x);
        Ok(BATCH)
    }
}
