//! The scratch files of file-based workloads: where they go ([`scratch_dir`]), how big they
//! are ([`file_size`], whole [`BLOCK`]s) and [`OwnedPath`], a file or directory a workload
//! created and removes again when dropped.
//!
//! The runner removes each trial's scratch directory after the trial whatever happened; a
//! workload still cleans up what it made as soon as it is done with it, so a long sweep never
//! holds more than one trial's files and a crash leaves as little as possible behind.

use std::path::{Path, PathBuf};

use super::workload::{PrepareContext, workload_error};
use crate::error::LabError;
use model::params::Params;

/// The unit file workloads read and write: one page.
pub(super) const BLOCK: u64 = 4096;

/// The `size` parameter, which must be a whole number of [`BLOCK`]s.
pub(super) fn file_size(params: &Params, workload: &str) -> Result<u64, LabError> {
    let size = params.size("size")?;
    if size % BLOCK != 0 {
        return Err(workload_error(
            workload,
            format!("size={size} is not a multiple of 4 KiB"),
        ));
    }
    Ok(size)
}

/// The trial's scratch directory as an absolute, symlink-free path (so every op walks the same
/// path whatever the current directory), or an error if the runner gave none (a workload
/// declaring `uses_files` always gets one).
pub(super) fn scratch_dir(ctx: &PrepareContext, workload: &str) -> Result<PathBuf, LabError> {
    let dir = ctx.workdir.as_deref().ok_or_else(|| {
        workload_error(
            workload,
            "no scratch directory was given for its files (internal: the workload must declare uses_files)",
        )
    })?;
    std::fs::canonicalize(dir).map_err(|e| {
        LabError::io(
            format!("{workload}: scratch directory {}", dir.display()),
            e,
        )
    })
}

/// A path this workload created; `Drop` removes it (a directory with everything in it).
#[derive(Debug)]
pub(super) struct OwnedPath {
    path: PathBuf,
}

impl OwnedPath {
    /// Takes ownership of an existing file or directory.
    pub(super) fn new(path: PathBuf) -> OwnedPath {
        OwnedPath { path }
    }

    /// Creates the directory `path` (its parent must exist) and owns it.
    pub(super) fn create_dir(path: PathBuf) -> Result<OwnedPath, LabError> {
        std::fs::create_dir(&path)
            .map_err(|e| LabError::io(format!("creating {}", path.display()), e))?;
        Ok(OwnedPath { path })
    }

    pub(super) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for OwnedPath {
    fn drop(&mut self) {
        // Best effort: the runner removes the whole scratch directory after the trial anyway.
        let _ = if self.path.is_dir() {
            std::fs::remove_dir_all(&self.path)
        } else {
            std::fs::remove_file(&self.path)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_and_directories_are_removed_on_drop() {
        let base = tempfile::tempdir().unwrap();
        let file = base.path().join("f");
        std::fs::write(&file, b"x").unwrap();
        drop(OwnedPath::new(file.clone()));
        assert!(!file.exists());
        let dir = OwnedPath::create_dir(base.path().join("d")).unwrap();
        std::fs::write(dir.path().join("inside"), b"x").unwrap();
        let kept = dir.path().to_path_buf();
        drop(dir);
        assert!(!kept.exists());
        assert!(OwnedPath::create_dir(base.path().join("no/such/parent")).is_err());
    }

    #[test]
    fn the_scratch_dir_is_made_absolute() {
        let ctx = PrepareContext {
            tasks: 1,
            mode: model::record::Mode::Threads,
            workdir: Some(PathBuf::from(".")),
        };
        let dir = scratch_dir(&ctx, "open_close").unwrap();
        assert!(dir.is_absolute(), "{}", dir.display());
    }

    #[test]
    fn a_missing_scratch_dir_is_an_error_naming_the_workload() {
        let ctx = PrepareContext {
            tasks: 1,
            mode: model::record::Mode::Threads,
            workdir: None,
        };
        let err = scratch_dir(&ctx, "open_close").unwrap_err().to_string();
        assert!(
            err.contains("open_close") && err.contains("scratch"),
            "{err}"
        );
    }
}
