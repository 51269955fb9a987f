//! `file_write`: buffered sequential 4 KiB writes, the page-cache write path (ext4's
//! `ext4_buffered_write_iter`: inode lock, page-cache lookup or allocation, copy, mark dirty,
//! dirty-page throttling).
//!
//! Each task writes 4 KiB at a time at increasing offsets and wraps to the start after `size`
//! bytes. The first pass grows the file (page allocation and delayed block allocation); later
//! passes overwrite pages already in the cache, which background writeback meanwhile cleans, so
//! the steady state is "re-dirty a cached page". Make `--warmup` long enough to cover the first
//! pass if only the steady state is wanted. With `shared=false` each task has its own file; with
//! `shared=true` all tasks write disjoint `size`-byte regions of one file, so every write takes
//! the same inode lock (`i_rwsem`, held exclusively by a buffered write).

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::owned_path::{BLOCK, OwnedPath, file_size, scratch_dir};
use super::workload::{PrepareContext, Prepared, TaskLoop, Workload, WorkloadInfo};
use crate::error::LabError;
use model::params::{ParamKind, ParamSpec, Params};

const NAME: &str = "file_write";
/// Writes per step: a few tens of microseconds.
const BATCH: u64 = 16;

static INFO: WorkloadInfo = WorkloadInfo {
    name: NAME,
    op: "one buffered 4 KiB pwrite(2) (no sync) at the task's next offset",
    stresses: "buffered write: inode lock (i_rwsem, one per file: shared=true puts every task on one), page-cache lookup/allocation, copy from user, dirty accounting and throttling; delayed block allocation on the first pass",
    params: &[
        ParamSpec {
            name: "size",
            default: "64M",
            kind: ParamKind::Size {
                min: BLOCK,
                max: 1 << 40,
            },
            help: "bytes each task writes before wrapping to its start",
        },
        ParamSpec {
            name: "shared",
            default: "false",
            kind: ParamKind::Bool,
            help: "true: all tasks write disjoint regions of one file; false: one file per task",
        },
    ],
    uses_files: true,
};

pub(super) struct FileWrite;

impl Workload for FileWrite {
    fn info(&self) -> &'static WorkloadInfo {
        &INFO
    }
    fn prepare(
        &self,
        params: &Params,
        ctx: &PrepareContext,
    ) -> Result<Box<dyn Prepared>, LabError> {
        let dir = scratch_dir(ctx, NAME)?;
        let size = file_size(params, NAME)?;
        let shared = if params.flag("shared")? {
            let path = dir.join(format!("{NAME}.shared"));
            let file = create(&path)?;
            Some((file, OwnedPath::new(path)))
        } else {
            None
        };
        Ok(Box::new(FileWritePrepared { dir, size, shared }))
    }
}

fn create(path: &Path) -> Result<File, LabError> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(|e| LabError::io(format!("{NAME}: creating {}", path.display()), e))
}

struct FileWritePrepared {
    dir: PathBuf,
    size: u64,
    /// The one file of `shared=true` (opened once; every task writes through this description).
    shared: Option<(File, OwnedPath)>,
}

impl Prepared for FileWritePrepared {
    fn task(&self, index: usize) -> Result<Box<dyn TaskLoop + '_>, LabError> {
        let (file, owned, base) = match &self.shared {
            Some((file, _)) => {
                let dup = file
                    .try_clone()
                    .map_err(|e| LabError::io(format!("{NAME}: duplicating the shared fd"), e))?;
                (dup, None, index as u64 * self.size)
            }
            None => {
                let path = self.dir.join(format!("{NAME}.{index}"));
                (create(&path)?, Some(OwnedPath::new(path)), 0)
            }
        };
        let name = owned.as_ref().map_or_else(
            || format!("{NAME}.shared"),
            |o| o.path().display().to_string(),
        );
        Ok(Box::new(FileWriteTask {
            file,
            _owned: owned,
            name,
            base,
            blocks: self.size / BLOCK,
            next: 0,
            buf: [0xa5; BLOCK as usize],
        }))
    }
}

struct FileWriteTask {
    file: File,
    _owned: Option<OwnedPath>,
    name: String,
    base: u64,
    blocks: u64,
    next: u64,
    buf: [u8; BLOCK as usize],
}

impl TaskLoop for FileWriteTask {
    #[inline]
    fn step(&mut self) -> Result<u64, LabError> {
        for _ in 0..BATCH {
            self.file
                .write_all_at(&self.buf, self.base + self.next * BLOCK)
                .map_err(|e| LabError::io(format!("{NAME}: writing {}", self.name), e))?;
            self.next += 1;
            if self.next == self.blocks {
                self.next = 0;
            }
        }
        Ok(BATCH)
    }
}
