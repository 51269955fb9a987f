//! `mmap_munmap`: map a little private anonymous memory, touch it, unmap it — the life of a
//! short-lived allocation that malloc hands to `mmap` (anything above `M_MMAP_THRESHOLD`).
//!
//! `mmap` and `munmap` take the address space's mmap lock for writing, and the touch faults
//! under it for reading (or a per-VMA lock on newer kernels). With `--mode threads` every task
//! works in one address space, so they all queue on that one lock (and `munmap` must flush the
//! TLBs of every CPU running the mm); with `--mode processes` each task has its own address
//! space and shares only the page allocator.

use super::workload::{PrepareContext, Prepared, TaskLoop, Workload, WorkloadInfo};
use crate::error::LabError;
use model::params::{ParamKind, ParamSpec, Params};

static INFO: WorkloadInfo = WorkloadInfo {
    name: "mmap_munmap",
    op: "one mmap(2) of `pages` private anonymous pages, a write to each page (a page fault each), and munmap(2)",
    stresses: "VMA creation and removal under the mmap lock (one per address space: shared by all tasks with threads), anonymous page faults, page freeing and the TLB flush of munmap",
    params: &[ParamSpec {
        name: "pages",
        default: "1",
        kind: ParamKind::Count { min: 1, max: 4096 },
        help: "pages mapped and touched per op",
    }],
    uses_files: false,
};

pub(super) struct MmapMunmap;

impl Workload for MmapMunmap {
    fn info(&self) -> &'static WorkloadInfo {
        &INFO
    }
    fn prepare(&self, params: &Params, _: &PrepareContext) -> Result<Box<dyn Prepared>, LabError> {
        Ok(Box::new(MmapPrepared {
            pages: params.count("pages")? as usize,
            page: sys::page_size(),
        }))
    }
}

struct MmapPrepared {
    pages: usize,
    page: usize,
}

impl Prepared for MmapPrepared {
    fn task(&self, _: usize) -> Result<Box<dyn TaskLoop + '_>, LabError> {
        // A few ops per step, each tens of microseconds at most (4096 pages: milliseconds).
        let batch = (64 / self.pages).max(1) as u64;
        Ok(Box::new(MmapTask { cfg: self, batch }))
    }
}

struct MmapTask<'a> {
    cfg: &'a MmapPrepared,
    batch: u64,
}

impl TaskLoop for MmapTask<'_> {
    #[inline]
    fn step(&mut self) -> Result<u64, LabError> {
        let cfg = self.cfg;
        for _ in 0..self.batch {
            let mut map = sys::AnonMapping::new(cfg.pages * cfg.page)
                .map_err(|e| LabError::sys("mmap_munmap: mmap", e))?;
            for page in 0..cfg.pages {
                map.write_byte(page * cfg.page, 1);
            }
            drop(map); // munmap
        }
        Ok(self.batch)
    }
}
