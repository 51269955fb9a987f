//! `create_unlink`: create a file and unlink it again, the metadata half of "untar a tree, then
//! delete it".
//!
//! History: in the Linux 1.3.x days every new in-core inode came from `get_empty_inode()`,
//! one global pool behind one lock, so creating files did not scale past one CPU however the
//! files were spread out. Today inodes come from per-CPU slab caches and the filesystem's
//! per-group bitmaps; what every create still shares is the superblock's inode list lock and
//! the journal (if any), plus — when the names are in one directory — that directory's inode
//! lock (`i_rwsem`, taken exclusively to add or remove a name). So `shared=true` (all tasks in
//! one directory) includes the directory lock and `shared=false` (one directory per task)
//! leaves it out: the difference between the two is that lock. It covers the create and the
//! name removal but not the freeing of the unlinked inode (done after the directory is
//! unlocked), the path walk or the close, so even `shared=true` keeps some parallelism at N=2.
//!
//! Expect drift on ext4 without a journal: it will not reuse an inode freed in the last few
//! seconds (`recently_deleted()`), so a tight create/unlink loop scans further through the inode
//! bitmap the longer it runs, and the cost of an op depends on what ran just before.

use std::fs::OpenOptions;
use std::path::PathBuf;

use super::owned_path::{OwnedPath, scratch_dir};
use super::workload::{PrepareContext, Prepared, TaskLoop, Workload, WorkloadInfo};
use crate::error::LabError;
use model::params::{ParamKind, ParamSpec, Params};

const NAME: &str = "create_unlink";
/// Creates+unlinks per step: tens of microseconds.
const BATCH: u64 = 4;

static INFO: WorkloadInfo = WorkloadInfo {
    name: NAME,
    op: "one file created (open O_CREAT|O_EXCL, close) and unlinked: 3 system calls",
    stresses: "directory entry insert/remove under the parent directory's inode lock (i_rwsem; shared=true: one directory for all tasks), inode allocation and freeing, the filesystem journal if it has one",
    params: &[ParamSpec {
        name: "shared",
        default: "false",
        kind: ParamKind::Bool,
        help: "true: all tasks create their files in one directory; false: one directory per task",
    }],
    uses_files: true,
};

pub(super) struct CreateUnlink;

impl Workload for CreateUnlink {
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
        let (dirs, paths) = if shared {
            let d = OwnedPath::create_dir(dir.join(format!("{NAME}.shared")))?;
            let paths = (0..ctx.tasks)
                .map(|i| d.path().join(format!("f.{i}")))
                .collect();
            (vec![d], paths)
        } else {
            let dirs = (0..ctx.tasks)
                .map(|i| OwnedPath::create_dir(dir.join(format!("{NAME}.{i}"))))
                .collect::<Result<Vec<_>, _>>()?;
            let paths = dirs.iter().map(|d| d.path().join("f")).collect();
            (dirs, paths)
        };
        Ok(Box::new(CreateUnlinkPrepared { paths, _dirs: dirs }))
    }
}

struct CreateUnlinkPrepared {
    /// The name each task creates and unlinks.
    paths: Vec<PathBuf>,
    /// Removed (with anything a killed task left in them) when the trial's state is dropped.
    _dirs: Vec<OwnedPath>,
}

impl Prepared for CreateUnlinkPrepared {
    fn task(&self, index: usize) -> Result<Box<dyn TaskLoop + '_>, LabError> {
        let path = self.paths[index].clone();
        // A file left by an earlier use of this name would make create_new fail.
        let _ = std::fs::remove_file(&path);
        Ok(Box::new(CreateUnlinkTask {
            path,
            options: {
                let mut o = OpenOptions::new();
                o.write(true).create_new(true);
                o
            },
        }))
    }
}

struct CreateUnlinkTask {
    path: PathBuf,
    options: OpenOptions,
}

impl TaskLoop for CreateUnlinkTask {
    #[inline]
    fn step(&mut self) -> Result<u64, LabError> {
        for _ in 0..BATCH {
            let file = self.options.open(&self.path).map_err(|e| {
                LabError::io(format!("{NAME}: creating {}", self.path.display()), e)
            })?;
            drop(file); // close(2)
            std::fs::remove_file(&self.path).map_err(|e| {
                LabError::io(format!("{NAME}: unlinking {}", self.path.display()), e)
            })?;
        }
        Ok(BATCH)
    }
}
