//! A lock one process of a kind holds per machine: an exclusive `flock` on a file in a private
//! directory (`/run/scalelab` for root, `$XDG_RUNTIME_DIR/scalelab` or a private folder under the
//! temporary directory for others), held for the life of the [`MachineLock`]. The kernel drops
//! it when the process ends, however it ends; a host name, a UTS or PID namespace does not
//! change it.
//!
//! The file is opened without following a link and created 0600 in a 0700 directory
//! ([`owned_dir`](crate::owned_dir)); nothing is written into it.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rustix::fs::FlockOperation;

use crate::owned_dir::{NewEntryError, OwnedDir, PathError, euid};

/// A machine-wide lock, held while this value lives.
#[derive(Debug)]
pub struct MachineLock {
    _file: File,
    path: PathBuf,
}

/// Why the lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum MachineLockError {
    /// Another process holds it.
    #[error("{} is held by {}", path.display(), holder.map_or_else(|| "another process".to_owned(), |p| format!("pid {p}")))]
    Held {
        /// The lock file.
        path: PathBuf,
        /// The process holding it, when `/proc/locks` says.
        holder: Option<u32>,
    },
    /// Its directory or file could not be made or opened safely.
    #[error(transparent)]
    Path(#[from] PathError),
    /// `flock` failed otherwise.
    #[error("{}: flock: {source}", path.display())]
    Io {
        /// The lock file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

impl MachineLock {
    /// Takes the lock `name` (a plain file name, e.g. `agent.lock`) without waiting.
    pub fn take(name: &str) -> Result<MachineLock, MachineLockError> {
        let dir = OwnedDir::open_or_create(&lock_dir())?;
        let file = match dir.create_file(name) {
            Ok(file) => file,
            Err(NewEntryError::Exists(_)) => dir.open_file(name)?,
            Err(NewEntryError::Refused(e)) => return Err(e.into()),
        };
        let path = dir.join(name);
        match rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => Ok(MachineLock { _file: file, path }),
            Err(rustix::io::Errno::WOULDBLOCK) => Err(MachineLockError::Held {
                holder: file.metadata().ok().and_then(|m| holder_of(m.ino())),
                path,
            }),
            Err(e) => Err(MachineLockError::Io {
                path,
                source: e.into(),
            }),
        }
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Where the locks live for this user.
fn lock_dir() -> PathBuf {
    if euid() == 0 {
        return PathBuf::from("/run/scalelab");
    }
    match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        Some(dir) => Path::new(&dir).join("scalelab"),
        None => std::env::temp_dir().join(format!("scalelab-{}", euid())),
    }
}

/// The process holding a `flock` on the file of inode `ino`, from `/proc/locks`
/// (`1: FLOCK ADVISORY WRITE 1234 00:1a:5678 0 EOF`).
fn holder_of(ino: u64) -> Option<u32> {
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    locks.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let flock = fields.get(1) == Some(&"FLOCK");
        let inode = fields.get(5)?.rsplit(':').next()?.parse::<u64>().ok()?;
        (flock && inode == ino).then(|| fields.get(4)?.parse().ok())?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_of_the_same_name_is_refused_naming_the_holder() {
        let name = format!("test-{}.lock", std::process::id());
        let first = MachineLock::take(&name).unwrap();
        // A second open file description in this process conflicts as another process's would.
        match MachineLock::take(&name) {
            Err(MachineLockError::Held { holder, path }) => {
                assert_eq!(path, first.path());
                assert_eq!(holder, Some(std::process::id()));
            }
            other => panic!("{other:?}"),
        }
        let path = first.path().to_path_buf();
        drop(first);
        let again = MachineLock::take(&name).unwrap();
        drop(again);
        let _ = std::fs::remove_file(path);
    }
}
