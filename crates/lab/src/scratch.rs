//! Scratch directories for file-based workloads: one fresh directory per trial under the
//! user's `--workdir`, removed after the trial whatever became of it, and stale ones (left by a
//! scalelab that was killed) removed by the next run.
//!
//! Each scalelab process owns one area, `<workdir>/scalelab-scratch.<random>/` (0700), holding
//! a `lock` file it keeps `flock`ed for as long as it lives, and one subdirectory per trial. The
//! name is random (122 bits from the OS) and made atomically (`mkdirat`, another name on a
//! clash), so another user can neither guess it nor stop the run by taking it first. The area
//! gets its name only once the lock is held: it is made as `scalelab-scratch-new.<random>`,
//! locked, then renamed.
//!
//! The sweep removes an area only when it can prove the owner dead: the kernel drops a dead
//! process's `flock` whatever PID namespace it ran in, so a lock this process can take belongs
//! to nobody, while a pid that is not alive here may well be alive in a container. Only real
//! directories owned by the effective user are looked at, never through a link; anything
//! without a lock file (another user's, an older scalelab's) is left alone.
//!
//! `--workdir` must be a directory no other user can rename things in (see
//! [`OwnedDir::open_anchor`]): workloads open their files by name below it.

use std::fs::File;
use std::path::{Path, PathBuf};

use rustix::fs::{FileType, FlockOperation};

use crate::error::LabError;
use sys::owned_dir::{self, NewEntryError, OwnedDir, PathError};

const PREFIX: &str = "scalelab-scratch.";
/// An area not yet locked: never swept.
const NEW_PREFIX: &str = "scalelab-scratch-new.";
const LOCK: &str = "lock";
/// Names tried before giving up (each clash means someone took a random 122-bit name).
const ATTEMPTS: usize = 16;

/// The scratch area of one scalelab process under `base`; removed when dropped.
#[derive(Debug)]
pub(crate) struct Scratch {
    base: OwnedDir,
    area: OwnedDir,
    /// Held (`flock`, exclusive) for the life of this value.
    _lock: File,
    next: u64,
}

impl Scratch {
    /// Checks `base` (`--workdir`) and makes this process's locked area in it.
    pub(crate) fn new(base: &Path) -> Result<Scratch, LabError> {
        if !std::fs::metadata(base)
            .map_err(|e| LabError::io(format!("--workdir {}", base.display()), e))?
            .is_dir()
        {
            return Err(LabError::BadOption(format!(
                "--workdir {} is not a directory",
                base.display()
            )));
        }
        let base = OwnedDir::open_anchor(base).map_err(|e| {
            LabError::BadOption(format!(
                "--workdir: {e} (workloads create their files below it by name)"
            ))
        })?;
        let (area, lock) = make_area(&base)?;
        Ok(Scratch {
            base,
            area,
            _lock: lock,
            next: 0,
        })
    }

    pub(crate) fn base(&self) -> &Path {
        self.base.path()
    }

    /// Creates the next trial's empty directory (0700).
    pub(crate) fn create(&mut self) -> Result<PathBuf, LabError> {
        self.next += 1;
        let dir = self
            .area
            .new_subdir(&self.next.to_string())
            .map_err(PathError::from)?;
        Ok(dir.path().to_path_buf())
    }

    /// Removes a trial's directory and everything in it (never following a link inside).
    pub(crate) fn remove(&self, dir: &Path) -> Result<(), LabError> {
        remove_tree(dir).map_err(|e| {
            LabError::io(
                format!("removing the scratch directory {}", dir.display()),
                e,
            )
        })
    }

    /// Removes the areas under `base` whose owner is provably gone; returns them.
    pub(crate) fn sweep_stale(&self) -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(self.base.path()) else {
            return Vec::new();
        };
        let me = owned_dir::euid();
        let mut removed = Vec::new();
        for entry in entries.flatten() {
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            if !name.starts_with(PREFIX) || name == self.area_name() {
                continue;
            }
            let ours = matches!(self.base.entry(&name), Ok(Some(st))
                if FileType::from_raw_mode(st.st_mode) == FileType::Directory && st.st_uid == me);
            if !ours {
                continue;
            }
            // Holding the dead owner's lock while removing keeps two sweepers from racing.
            let Some(_lock) = self.take_lock(&name) else {
                continue;
            };
            let path = self.base.join(&name);
            if remove_tree(&path).is_ok() {
                removed.push(path);
            }
        }
        removed
    }

    /// The area's lock, when nobody holds it: the proof its owner is gone.
    fn take_lock(&self, name: &str) -> Option<File> {
        let lock = self.base.subdir(name).ok()?.open_file(LOCK).ok()?;
        rustix::fs::flock(&lock, FlockOperation::NonBlockingLockExclusive)
            .ok()
            .map(|()| lock)
    }

    fn area_name(&self) -> &str {
        self.area
            .path()
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // Best effort: what is left is swept by the next run, once the lock is released.
        let _ = remove_tree(self.area.path());
    }
}

/// Makes a new area under `base`, locked, under its final name.
fn make_area(base: &OwnedDir) -> Result<(OwnedDir, File), LabError> {
    for _ in 0..ATTEMPTS {
        let random = uuid::Uuid::new_v4().simple().to_string();
        let new = format!("{NEW_PREFIX}{random}");
        let pending = match base.new_subdir(&new) {
            Ok(dir) => dir,
            Err(NewEntryError::Exists(_)) => continue,
            Err(NewEntryError::Refused(e)) => return Err(e.into()),
        };
        let lock = pending.create_file(LOCK).map_err(PathError::from)?;
        rustix::fs::flock(&lock, FlockOperation::NonBlockingLockExclusive).map_err(|e| {
            LabError::io(
                format!("locking {}", pending.join(LOCK).display()),
                e.into(),
            )
        })?;
        let name = format!("{PREFIX}{random}");
        match base.rename_new(&new, &name) {
            Ok(()) => {
                let area = base.subdir(&name)?;
                return Ok((area, lock));
            }
            Err(e) => {
                let _ = remove_tree(pending.path());
                match e {
                    NewEntryError::Exists(_) => continue,
                    NewEntryError::Refused(e) => return Err(e.into()),
                }
            }
        }
    }
    Err(LabError::BadOption(format!(
        "--workdir {}: every scratch name tried was taken — is another user filling it?",
        base.path().display()
    )))
}

/// `remove_dir_all` of a directory, which since Rust 1.58.1 never follows a link below it
/// (CVE-2022-21658) and removes a link at the top instead of its target; a missing one is fine.
fn remove_tree(dir: &Path) -> std::io::Result<()> {
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn directories_are_created_private_removed_and_the_area_goes_with_its_owner() {
        let base = tempfile::tempdir().unwrap();
        let mut s = Scratch::new(base.path()).unwrap();
        let a = s.create().unwrap();
        std::fs::write(a.join("f"), b"x").unwrap();
        let b = s.create().unwrap();
        assert_ne!(a, b);
        assert_eq!((mode(&a), mode(a.parent().unwrap())), (0o700, 0o700));
        s.remove(&a).unwrap();
        assert!(!a.exists() && b.exists());
        drop(s);
        assert_eq!(std::fs::read_dir(base.path()).unwrap().count(), 0);
    }

    #[test]
    fn scratch_names_cannot_be_predicted_from_the_process() {
        // The same pid, start time and trial number: once enough to pre-create the name.
        let base = tempfile::tempdir().unwrap();
        let mut one = Scratch::new(base.path()).unwrap();
        let mut two = Scratch::new(base.path()).unwrap();
        assert_ne!(one.create().unwrap(), two.create().unwrap());
    }

    #[test]
    fn only_areas_whose_lock_is_free_are_swept() {
        let base = tempfile::tempdir().unwrap();
        let live = Scratch::new(base.path()).unwrap();
        let other_live = Scratch::new(base.path()).unwrap();
        // A dead owner's area: its lock file is there and nobody holds it.
        let dead = base.path().join(format!("{PREFIX}dead"));
        std::fs::create_dir_all(dead.join("1/deep")).unwrap();
        std::fs::write(dead.join(LOCK), b"").unwrap();
        // No lock file: an older scalelab's, or not made by scalelab; unprovable, kept.
        let unknown = base.path().join(format!("{PREFIX}1234.5678.1"));
        std::fs::create_dir(&unknown).unwrap();
        let not_ours = base.path().join("not-ours");
        std::fs::create_dir(&not_ours).unwrap();
        let link = base.path().join(format!("{PREFIX}link"));
        std::os::unix::fs::symlink(&dead, &link).unwrap();

        assert_eq!(live.sweep_stale(), vec![dead.clone()]);
        assert!(!dead.exists());
        assert!(unknown.exists() && not_ours.exists() && link.is_symlink());
        assert!(other_live.area.path().exists() && live.area.path().exists());
    }

    #[test]
    fn workdir_must_be_a_directory() {
        assert!(Scratch::new(Path::new("/nonexistent/dir")).is_err());
        assert!(Scratch::new(Path::new("/proc/version")).is_err());
    }
}
