//! `fsync_write`: write 4 KiB into a file and `fsync` it, the durability path of every database
//! and mail spool ("write, then make sure it is on disk").
//!
//! Each task owns a file of `size` bytes, written in full and synced before the gate opens so
//! every block is already allocated; the measured ops then overwrite it 4 KiB at a time,
//! cycling through it, each write followed by `fsync(2)`. An overwrite changes the file's
//! modification time, so the inode is dirty too and every `fsync` on a journalling filesystem
//! (ext4, xfs) waits for a journal commit besides the data write itself (ext4 without a journal
//! writes the inode's block instead). The journal is one per filesystem, so this is what N tasks
//! share even though their files are separate; on tmpfs `fsync` does nothing and the op is a
//! plain buffered write.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;

use super::owned_path::{BLOCK, OwnedPath, file_size, scratch_dir};
use super::workload::{PrepareContext, Prepared, TaskLoop, Workload, WorkloadInfo};
use crate::error::LabError;
use model::params::{ParamKind, ParamSpec, Params};

const NAME: &str = "fsync_write";

static INFO: WorkloadInfo = WorkloadInfo {
    name: NAME,
    op: "one 4 KiB pwrite(2) over an allocated block of the task's file, then fsync(2)",
    stresses: "fsync: data writeback and wait, the journal commit for the inode's new timestamps (one journal per filesystem, shared by all tasks), the block device's flush",
    params: &[ParamSpec {
        name: "size",
        default: "1M",
        kind: ParamKind::Size {
            min: BLOCK,
            max: 1 << 30,
        },
        help: "bytes per task file (preallocated); writes cycle through it 4 KiB at a time",
    }],
    uses_files: true,
};

pub(super) struct FsyncWrite;

impl Workload for FsyncWrite {
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
        Ok(Box::new(FsyncWritePrepared { dir, size }))
    }
}

struct FsyncWritePrepared {
    dir: std::path::PathBuf,
    size: u64,
}

impl Prepared for FsyncWritePrepared {
    fn task(&self, index: usize) -> Result<Box<dyn TaskLoop + '_>, LabError> {
        let owned = OwnedPath::new(self.dir.join(format!("{NAME}.{index}")));
        let path = owned.path();
        let io = |what: &str, e| LabError::io(format!("{NAME}: {what} {}", path.display()), e);
        let mut file = File::create(path).map_err(|e| io("creating", e))?;
        let chunk = vec![0u8; 1 << 20];
        let mut left = self.size;
        while left > 0 {
            let n = left.min(chunk.len() as u64) as usize;
            file.write_all(&chunk[..n])
                .map_err(|e| io("preallocating", e))?;
            left -= n as u64;
        }
        file.sync_all().map_err(|e| io("syncing", e))?;
        Ok(Box::new(FsyncWriteTask {
            file,
            owned,
            blocks: self.size / BLOCK,
            next: 0,
            buf: [0x5a; BLOCK as usize],
        }))
    }
}

struct FsyncWriteTask {
    file: File,
    owned: OwnedPath,
    blocks: u64,
    next: u64,
    buf: [u8; BLOCK as usize],
}

impl TaskLoop for FsyncWriteTask {
    /// One op per step: an fsync takes from tens of microseconds to milliseconds.
    fn step(&mut self) -> Result<u64, LabError> {
        let io = |what: &str, e| {
            LabError::io(format!("{NAME}: {what} {}", self.owned.path().display()), e)
        };
        self.buf[0] = self.buf[0].wrapping_add(1); // new content each time
        self.file
            .write_all_at(&self.buf, self.next * BLOCK)
            .map_err(|e| io("writing", e))?;
        self.file.sync_all().map_err(|e| io("fsync of", e))?;
        self.next = (self.next + 1) % self.blocks;
        Ok(1)
    }
}
