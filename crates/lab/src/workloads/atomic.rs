//! `atomic`: one counter updated by every task, the cache-line ping-pong behind the gettimeofday
//! cmpxchg story. `fetch_add` is one locked add; `cmpxchg-retry` loops until its own value lands
//! (the jitter-compensation code); `cmpxchg-winner` tries once and on failure takes the winner's
//! value as its result (the "use the winner's cycle instead of retrying" fix); `private` gives
//! each task its own counter, 256 bytes apart, so nothing is shared. The counter lives in a
//! shared mapping, so processes contend exactly as threads do.

use std::sync::atomic::{AtomicU64, Ordering};

use super::workload::{PrepareContext, Prepared, TaskLoop, Workload, WorkloadInfo, workload_error};
use crate::error::LabError;
use model::params::{ParamKind, ParamSpec, Params};

const BATCH: u64 = 64;
/// Distance between private counters, in u64s: 256 bytes (two lines, against the adjacent-line prefetcher).
const STRIDE: usize = 32;

static INFO: WorkloadInfo = WorkloadInfo {
    name: "atomic",
    op: "one update of the counter (for cmpxchg-winner: one attempt, successful or adopting the winner's value)",
    stresses: "cache coherence: a contended cache line bouncing between CPUs (nothing in the kernel)",
    params: &[ParamSpec {
        name: "mode",
        default: "fetch_add",
        kind: ParamKind::Choice(&["fetch_add", "cmpxchg-retry", "cmpxchg-winner", "private"]),
        help: "how the counter is updated",
    }],
    uses_files: false,
};

pub(super) struct Atomic;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Update {
    FetchAdd,
    CmpxchgRetry,
    CmpxchgWinner,
    Private,
}

impl Workload for Atomic {
    fn info(&self) -> &'static WorkloadInfo {
        &INFO
    }
    fn prepare(
        &self,
        params: &Params,
        ctx: &PrepareContext,
    ) -> Result<Box<dyn Prepared>, LabError> {
        let update = match params.text("mode")? {
            "fetch_add" => Update::FetchAdd,
            "cmpxchg-retry" => Update::CmpxchgRetry,
            "cmpxchg-winner" => Update::CmpxchgWinner,
            _ => Update::Private,
        };
        let bytes = (ctx.tasks + 1) * STRIDE * 8;
        let region = sys::SharedRegion::new(bytes)
            .map_err(|e| LabError::sys("atomic: shared counter mapping", e))?;
        Ok(Box::new(AtomicPrepared { update, region }))
    }
}

struct AtomicPrepared {
    update: Update,
    region: sys::SharedRegion,
}

impl Prepared for AtomicPrepared {
    fn extra_names(&self) -> &'static [&'static str] {
        match self.update {
            Update::CmpxchgRetry => &["cas_retries"],
            Update::CmpxchgWinner => &["adopted_winner"],
            _ => &[],
        }
    }
    fn task(&self, index: usize) -> Result<Box<dyn TaskLoop + '_>, LabError> {
        let slot = if self.update == Update::Private {
            (index + 1) * STRIDE
        } else {
            0
        };
        let counter =
            self.region.u64s().get(slot).ok_or_else(|| {
                workload_error("atomic", format!("task {index} has no counter slot"))
            })?;
        Ok(Box::new(AtomicTask {
            update: self.update,
            counter,
            retries: 0,
            adopted: 0,
        }))
    }
}

struct AtomicTask<'a> {
    update: Update,
    counter: &'a AtomicU64,
    retries: u64,
    adopted: u64,
}

impl TaskLoop for AtomicTask<'_> {
    #[inline]
    fn step(&mut self) -> Result<u64, LabError> {
        let c = self.counter;
        match self.update {
            Update::FetchAdd | Update::Private => {
                for _ in 0..BATCH {
                    c.fetch_add(1, Ordering::Relaxed);
                }
            }
            Update::CmpxchgRetry => {
                for _ in 0..BATCH {
                    let mut current = c.load(Ordering::Relaxed);
                    while let Err(actual) = c.compare_exchange(
                        current,
                        current + 1,
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                    ) {
                        current = actual;
                        self.retries += 1;
                    }
                }
            }
            Update::CmpxchgWinner => {
                for _ in 0..BATCH {
                    let current = c.load(Ordering::Relaxed);
                    let result = match c.compare_exchange(
                        current,
                        current + 1,
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                    ) {
                        Ok(_) => current + 1,
                        Err(winner) => {
                            self.adopted += 1;
                            winner
                        }
                    };
                    std::hint::black_box(result);
                }
            }
        }
        Ok(BATCH)
    }
    fn extras(&self) -> Vec<(&'static str, u64)> {
        match self.update {
            Update::CmpxchgRetry => vec![("cas_retries", self.retries)],
            Update::CmpxchgWinner => vec![("adopted_winner", self.adopted)],
            _ => Vec::new(),
        }
    }
}
