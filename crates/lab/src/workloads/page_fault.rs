//! `page_fault`: anonymous page faults, the prezeroing / scrubd benchmark and will-it-scale's
//! `page_fault1`. Each task maps `size` bytes of private anonymous memory, touches `lines` cache
//! lines (64 bytes each) of every page in order, unmaps, and starts again. The first touch of a
//! page faults it in (allocate, zero, map); the further lines measure what the zeroing left in the
//! cache. With threads all tasks share one mm (the mmap lock and page-table locks); with
//! processes each has its own.

use std::sync::atomic::{AtomicU32, AtomicU64};

use super::workload::{
    PrepareContext, Prepared, TaskLoop, Workload, WorkloadInfo, steps_while, workload_error,
};
use crate::error::LabError;
use model::params::{ParamKind, ParamSpec, Params};

/// Pages touched per step: small enough to stop promptly, large enough to amortise the harness.
const PAGES_PER_STEP: usize = 16;
const LINE: usize = 64;

static INFO: WorkloadInfo = WorkloadInfo {
    name: "page_fault",
    op: "one page faulted in (first touch of a fresh anonymous page)",
    stresses: "anonymous page fault: page allocation, zeroing, page-table update; munmap and TLB flush; mmap lock when threads share an mm",
    params: &[
        ParamSpec {
            name: "size",
            default: "128M",
            kind: ParamKind::Size {
                min: 4096,
                max: 1 << 40,
            },
            help: "bytes mapped per task per cycle",
        },
        ParamSpec {
            name: "lines",
            default: "1",
            kind: ParamKind::Count { min: 1, max: 1024 },
            help: "64-byte cache lines touched per page (at most page size / 64)",
        },
    ],
    uses_files: false,
};

pub(super) struct PageFault;

impl Workload for PageFault {
    fn info(&self) -> &'static WorkloadInfo {
        &INFO
    }
    fn prepare(&self, params: &Params, _: &PrepareContext) -> Result<Box<dyn Prepared>, LabError> {
        let page = sys::page_size();
        let size = params.size("size")? as usize;
        let lines = params.count("lines")? as usize;
        if lines * LINE > page {
            return Err(workload_error(
                "page_fault",
                format!(
                    "lines={lines} exceeds the {} lines of a {page}-byte page",
                    page / LINE
                ),
            ));
        }
        if size < page {
            return Err(workload_error(
                "page_fault",
                format!("size must be at least one page ({page} bytes)"),
            ));
        }
        Ok(Box::new(PageFaultPrepared {
            pages: size / page,
            page,
            lines,
        }))
    }
}

struct PageFaultPrepared {
    pages: usize,
    page: usize,
    lines: usize,
}

impl Prepared for PageFaultPrepared {
    fn task(&self, _: usize) -> Result<Box<dyn TaskLoop + '_>, LabError> {
        Ok(Box::new(PageFaultTask {
            cfg: self,
            mapping: None,
            next_page: 0,
        }))
    }
}

struct PageFaultTask<'a> {
    cfg: &'a PageFaultPrepared,
    mapping: Option<sys::AnonMapping>,
    next_page: usize,
}

impl TaskLoop for PageFaultTask<'_> {
    // Inlined into `run_inline`, so that the faulting store is not in a function that returns
    // every 16 pages (`TaskLoop::run_inline` says why that costs: ~17% of the op here).
    #[inline(always)]
    fn step(&mut self) -> Result<u64, LabError> {
        let cfg = self.cfg;
        let mapping = match &mut self.mapping {
            Some(m) => m,
            None => {
                let m = sys::AnonMapping::new(cfg.pages * cfg.page)
                    .map_err(|e| LabError::sys("page_fault: mmap", e))?;
                self.next_page = 0;
                self.mapping.insert(m)
            }
        };
        let end = (self.next_page + PAGES_PER_STEP).min(cfg.pages);
        for page in self.next_page..end {
            let base = page * cfg.page;
            for line in 0..cfg.lines {
                mapping.write_byte(base + line * LINE, 1);
            }
        }
        let done = (end - self.next_page) as u64;
        self.next_page = end;
        if end == cfg.pages {
            self.mapping = None; // munmap; the next step maps afresh
        }
        Ok(done)
    }

    fn run_inline(
        &mut self,
        phase: &AtomicU32,
        seen: u32,
        counter: &AtomicU64,
        count: u64,
    ) -> Option<Result<u64, LabError>> {
        Some(steps_while(self, phase, seen, counter, count))
    }
}
