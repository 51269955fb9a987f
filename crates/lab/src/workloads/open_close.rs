//! `open_close`: `open(2)` and `close(2)` of an existing file, over and over — the path walk,
//! `struct file` allocation and the fd table, the family of will-it-scale's `open` tests.
//!
//! With `shared=false` each task opens its own file (all in the trial's scratch directory), so
//! tasks share only the directory they look the name up in, which the RCU path walk reads
//! without writing. With `shared=true` every task opens the same file: each open takes and each
//! close drops a reference on that one dentry and inode, a cache line every CPU writes. With
//! `--mode threads` all tasks also share one fd table (`files_struct`, its `file_lock` taken to
//! allocate and free a descriptor); with processes each has its own.

use std::fs::File;
use std::path::PathBuf;

use super::owned_path::{OwnedPath, scratch_dir};
use super::workload::{PrepareContext, Prepared, TaskLoop, Workload, WorkloadInfo};
use crate::error::LabError;
use model::params::{ParamKind, ParamSpec, Params};

const NAME: &str = "open_close";
/// Open+close pairs per step: a few tens of microseconds.
const BATCH: u64 = 16;

static INFO: WorkloadInfo = WorkloadInfo {
    name: NAME,
    op: "one open(2) (read-only, by absolute path) and close(2) of an existing empty file",
    stresses: "path walk (RCU lookup, then a reference on the final dentry), struct file allocation and release, fd allocation (one shared fd table and its file_lock with threads); shared=true: one dentry/inode refcount written by every CPU",
    params: &[ParamSpec {
        name: "shared",
        default: "false",
        kind: ParamKind::Bool,
        help: "true: every task opens the same file; false: one file per task",
    }],
    uses_files: true,
};

pub(super) struct OpenClose;

impl Workload for OpenClose {
    fn info(&self) -> &'static WorkloadInfo {
        &INFO
    }
    fn prepare(
        &self,
        params: &Params,
        ctx: &PrepareContext,
    ) -> Result<Box<dyn Prepared>, LabError> {
        let dir = scratch_dir(ctx, NAME)?;
        let shared = params.flag("shared")?;
        let names: Vec<String> = if shared {
            vec![format!("{NAME}.shared")]
        } else {
            (0..ctx.tasks).map(|i| format!("{NAME}.{i}")).collect()
        };
        let mut files = Vec::with_capacity(names.len());
        for name in names {
            let path = dir.join(name);
            File::create(&path)
                .map_err(|e| LabError::io(format!("{NAME}: creating {}", path.display()), e))?;
            files.push(OwnedPath::new(path));
        }
        Ok(Box::new(OpenClosePrepared { files }))
    }
}

struct OpenClosePrepared {
    /// One file when shared, else one per task.
    files: Vec<OwnedPath>,
}

impl Prepared for OpenClosePrepared {
    fn task(&self, index: usize) -> Result<Box<dyn TaskLoop + '_>, LabError> {
        let file = &self.files[index.min(self.files.len() - 1)];
        Ok(Box::new(OpenCloseTask {
            path: file.path().to_path_buf(),
        }))
    }
}

struct OpenCloseTask {
    path: PathBuf,
}

impl TaskLoop for OpenCloseTask {
    #[inline]
    fn step(&mut self) -> Result<u64, LabError> {
        for _ in 0..BATCH {
            let file = File::open(&self.path)
                .map_err(|e| LabError::io(format!("{NAME}: opening {}", self.path.display()), e))?;
            drop(file); // close(2)
        }
        Ok(BATCH)
    }
}
