//! Scratch directories for file-based workloads: one fresh directory per trial under the
//! user's `--workdir`, removed after the trial whatever became of it, and stale ones (left by a
//! scalelab that was killed) removed by the next run.
//!
//! Names carry the owning scalelab's pid and its start time (`scalelab-scratch.<pid>.<start>.<k>`),
//! so a later run can tell a dead owner from a live concurrent one and never deletes the files
//! of a run still going.

use std::path::{Path, PathBuf};

use crate::error::LabError;

const PREFIX: &str = "scalelab-scratch.";

/// The scratch area of one scalelab process under `base`.
#[derive(Debug, Clone)]
pub struct Scratch {
    base: PathBuf,
    owner: String,
    next: u64,
}

impl Scratch {
    /// Checks `base` is a writable directory.
    pub fn new(base: &Path) -> Result<Scratch, LabError> {
        let meta = std::fs::metadata(base)
            .map_err(|e| LabError::io(format!("--workdir {}", base.display()), e))?;
        if !meta.is_dir() {
            return Err(LabError::BadOption(format!(
                "--workdir {} is not a directory",
                base.display()
            )));
        }
        let pid = std::process::id();
        Ok(Scratch {
            base: base.to_path_buf(),
            owner: format!("{pid}.{}", start_time(pid).unwrap_or(0)),
            next: 0,
        })
    }

    pub fn base(&self) -> &Path {
        &self.base
    }

    /// Creates the next trial's empty directory.
    pub fn create(&mut self) -> Result<PathBuf, LabError> {
        self.next += 1;
        let dir = self
            .base
            .join(format!("{PREFIX}{}.{}", self.owner, self.next));
        std::fs::create_dir(&dir).map_err(|e| {
            LabError::io(
                format!("creating the scratch directory {}", dir.display()),
                e,
            )
        })?;
        Ok(dir)
    }

    /// Removes a trial's directory and everything in it.
    pub fn remove(&self, dir: &Path) -> Result<(), LabError> {
        match std::fs::remove_dir_all(dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(LabError::io(
                format!("removing the scratch directory {}", dir.display()),
                e,
            )),
        }
    }

    /// Removes scratch directories under `base` whose owner is no longer running; returns them.
    pub fn sweep_stale(&self) -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(&self.base) else {
            return Vec::new();
        };
        let mut removed = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(PREFIX)) else {
                continue;
            };
            let mut fields = rest.split('.');
            let (Some(pid), Some(start)) = (
                fields.next().and_then(|p| p.parse::<u32>().ok()),
                fields.next().and_then(|s| s.parse::<u64>().ok()),
            ) else {
                continue;
            };
            if start_time(pid) == Some(start) {
                continue; // owner alive
            }
            if std::fs::remove_dir_all(entry.path()).is_ok() {
                removed.push(entry.path());
            }
        }
        removed
    }
}

/// A process's start time in clock ticks since boot (field 22 of /proc/PID/stat), `None` if gone.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may contain spaces and parentheses: fields resume after the last ')'.
    let after = &stat[stat.rfind(')')? + 2..];
    after.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_are_created_removed_and_stale_ones_swept() {
        let base = tempfile::tempdir().unwrap();
        let mut s = Scratch::new(base.path()).unwrap();
        let a = s.create().unwrap();
        std::fs::write(a.join("f"), b"x").unwrap();
        let b = s.create().unwrap();
        assert_ne!(a, b);
        s.remove(&a).unwrap();
        assert!(!a.exists());
        // A directory of a dead owner (pid 0 never has /proc/0) is swept; ours is kept.
        let stale = base.path().join(format!("{PREFIX}999999999.1.1"));
        std::fs::create_dir_all(stale.join("deep")).unwrap();
        let other = base.path().join("not-ours");
        std::fs::create_dir(&other).unwrap();
        assert_eq!(s.sweep_stale(), vec![stale.clone()]);
        assert!(!stale.exists() && b.exists() && other.exists());
    }

    #[test]
    fn workdir_must_be_a_directory() {
        assert!(Scratch::new(Path::new("/nonexistent/dir")).is_err());
        assert!(Scratch::new(Path::new("/proc/version")).is_err());
    }
}
