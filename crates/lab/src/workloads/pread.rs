//! `pread`: 4 KiB reads of a file that is entirely in the page cache — the read side of every
//! file server, with no device involved.
//!
//! The file (`size` bytes, one per task or one shared by all) is written, synced and read once
//! before the gate opens, so every page is cached and clean when the window starts; tasks then
//! read it 4 KiB at a time in order, wrapping at the end. Per-task files are written by their
//! task after it is pinned, so their pages sit on that task's NUMA node. With `shared=true`
//! every task reads the same pages, taking and dropping references on the same `struct folio`s;
//! with `shared=false` they share nothing but the code path.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::owned_path::{BLOCK, OwnedPath, file_size, scratch_dir};
use super::workload::{PrepareContext, Prepared, TaskLoop, Workload, WorkloadInfo, workload_error};
use crate::error::LabError;
use model::params::{ParamKind, ParamSpec, Params};

const NAME: &str = "pread";
/// Reads per step: ten-odd microseconds.
const BATCH: u64 = 16;

static INFO: WorkloadInfo = WorkloadInfo {
    name: NAME,
    op: "one 4 KiB pread(2) served from the page cache",
    stresses: "page-cache read: folio lookup (RCU xarray walk), folio reference get/put, copy to user; shared=true: the same folios' refcounts written by every CPU",
    params: &[
        ParamSpec {
            name: "size",
            default: "16M",
            kind: ParamKind::Size {
                min: BLOCK,
                max: 1 << 40,
            },
            help: "bytes per file (cached before the measurement; must fit in memory)",
        },
        ParamSpec {
            name: "shared",
            default: "false",
            kind: ParamKind::Bool,
            help: "true: all tasks read one file; false: one file per task",
        },
    ],
    uses_files: true,
};

pub(super) struct Pread;

impl Workload for Pread {
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
            let owned = OwnedPath::new(path);
            let file = cached_file(owned.path(), size)?;
            Some((file, owned))
        } else {
            None
        };
        Ok(Box::new(PreadPrepared { dir, size, shared }))
    }
}

/// Creates `path` with `size` bytes of non-zero data, syncs it (so no writeback runs during the
/// window) and reads it back once (so every page is cached); returns it open for reading.
fn cached_file(path: &Path, size: u64) -> Result<File, LabError> {
    let io = |what: &str, e| LabError::io(format!("{NAME}: {what} {}", path.display()), e);
    let mut file = File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(|e| io("creating", e))?;
    let mut chunk: Vec<u8> = (0..1 << 20).map(|i| (i % 251) as u8 + 1).collect();
    let mut left = size;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        file.write_all(&chunk[..n]).map_err(|e| io("writing", e))?;
        left -= n as u64;
    }
    file.sync_data().map_err(|e| io("syncing", e))?;
    let mut reader = File::open(path).map_err(|e| io("opening", e))?;
    while reader.read(&mut chunk).map_err(|e| io("reading", e))? > 0 {}
    Ok(file)
}

struct PreadPrepared {
    dir: PathBuf,
    size: u64,
    shared: Option<(File, OwnedPath)>,
}

impl Prepared for PreadPrepared {
    fn task(&self, index: usize) -> Result<Box<dyn TaskLoop + '_>, LabError> {
        let (file, owned) = match &self.shared {
            Some((file, _)) => (
                file.try_clone()
                    .map_err(|e| LabError::io(format!("{NAME}: duplicating the shared fd"), e))?,
                None,
            ),
            None => {
                let owned = OwnedPath::new(self.dir.join(format!("{NAME}.{index}")));
                (cached_file(owned.path(), self.size)?, Some(owned))
            }
        };
        Ok(Box::new(PreadTask {
            file,
            _owned: owned,
            blocks: self.size / BLOCK,
            next: 0,
            buf: [0; BLOCK as usize],
        }))
    }
}

struct PreadTask {
    file: File,
    _owned: Option<OwnedPath>,
    blocks: u64,
    next: u64,
    buf: [u8; BLOCK as usize],
}

impl TaskLoop for PreadTask {
    #[inline]
    fn step(&mut self) -> Result<u64, LabError> {
        for _ in 0..BATCH {
            let n = self
                .file
                .read_at(&mut self.buf, self.next * BLOCK)
                .map_err(|e| LabError::io(format!("{NAME}: reading"), e))?;
            if n as u64 != BLOCK {
                return Err(workload_error(
                    NAME,
                    format!(
                        "short read: {n} bytes at offset {} (the file changed under the workload)",
                        self.next * BLOCK
                    ),
                ));
            }
            self.next += 1;
            if self.next == self.blocks {
                self.next = 0;
            }
        }
        Ok(BATCH)
    }
}
