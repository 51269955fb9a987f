//! Where the database file really is, and whether it may be opened, decided before SQLite sees
//! it: links are followed only when trusted (see [`sys::owned_dir`]), the file itself is never
//! a link, a new one is made private, and only creating commands make one. SQLite's side files
//! (`-journal`, `-wal`, `-shm`) are looked at first too: a link there is refused (SQLite would
//! fail on it, or delete it), and so, for a new database, is a file another user left there
//! (SQLite would read it as the new database's journal).

use std::io::Read;
use std::path::{Path, PathBuf};

use rustix::fs::FileType;

use crate::error::StoreError;
use sys::owned_dir::{self, NewEntryError, OwnedDir, PathError};

/// Where the database file really is, checked before SQLite sees it: links in its folder's
/// path are followed only when yours or root's, the file itself is never a link, and a
/// directory or a non-empty file that does not start with the SQLite header is refused. When
/// `create`, missing folders are made (0700) and a missing file is made empty (0600: it will
/// hold kernel lock addresses; SQLite gives its `-wal` and `-shm` files the same mode);
/// otherwise a missing or empty file is refused, so reading commands never create a database.
pub(super) fn locate(path: &Path, create: bool) -> Result<PathBuf, StoreError> {
    const MAGIC: &[u8; 16] = b"SQLite format 3\0";
    let refuse = |detail: &str| StoreError::NotADatabase {
        path: path.to_path_buf(),
        detail: detail.into(),
    };
    let open_failed = |e: PathError| match e.os {
        Some(_) => StoreError::Open {
            path: path.to_path_buf(),
            source: Box::new(e),
        },
        None => StoreError::Path(e),
    };
    let (dir, name) = owned_dir::split(path).map_err(|_| refuse("it is a directory"))?;
    let resolved = owned_dir::resolve_dir(&dir).map_err(open_failed)?;
    let real = resolved.join(&name);
    let missing = || StoreError::Missing {
        path: path.to_path_buf(),
    };
    let dir = if create {
        OwnedDir::open_or_create(&resolved).map_err(|e| match e.os {
            Some(source) => StoreError::CreateDir {
                dir: e.path,
                source,
            },
            None => StoreError::Path(e),
        })?
    } else if resolved.is_dir() {
        OwnedDir::open(&resolved).map_err(open_failed)?
    } else {
        return Err(missing());
    };
    let fresh = dir
        .entry(&name)
        .map_err(open_failed)?
        .is_none_or(|st| st.st_size == 0);
    check_side_files(path, &dir, &name, fresh).map_err(open_failed)?;
    let entry = match dir.entry(&name).map_err(open_failed)? {
        Some(st) => st,
        None if create => {
            match dir.create_file(&name) {
                Ok(_) | Err(NewEntryError::Exists(_)) => {}
                Err(NewEntryError::Refused(e)) => return Err(open_failed(e)),
            }
            dir.entry(&name).map_err(open_failed)?.ok_or_else(missing)?
        }
        None => return Err(missing()),
    };
    match FileType::from_raw_mode(entry.st_mode) {
        FileType::Symlink => {
            return Err(StoreError::Path(PathError {
                path: path.to_path_buf(),
                problem: format!(
                    "is a symbolic link, and scalelab never opens its database through one — remove the link, or if you trust it pass the file it points to (--db \"$(realpath {})\")",
                    path.display()
                ),
                os: None,
            }));
        }
        FileType::Directory => return Err(refuse("it is a directory")),
        FileType::RegularFile => {}
        _ => return Err(refuse("not a regular file")),
    }
    if entry.st_size == 0 {
        // SQLite's own fresh-file state: a database only once a creating command wrote it.
        return if create {
            Ok(real)
        } else {
            Err(StoreError::Empty {
                path: path.to_path_buf(),
            })
        };
    }
    let mut head = Vec::with_capacity(MAGIC.len());
    dir.open_file(&name)
        .map_err(open_failed)?
        .take(MAGIC.len() as u64)
        .read_to_end(&mut head)
        .map_err(|e| StoreError::Open {
            path: path.to_path_buf(),
            source: Box::new(e),
        })?;
    if head == MAGIC {
        Ok(real)
    } else {
        Err(refuse("not a SQLite file"))
    }
}

/// What SQLite keeps in each side file of a database.
const SIDE_FILES: [(&str, &str); 3] = [
    ("-journal", "rollback journal"),
    ("-wal", "write-ahead log"),
    ("-shm", "shared-memory index"),
];

/// `Err` naming the first side file of `name` in `dir` that is a link or not a regular file,
/// or, for a `fresh` (missing or empty) database, a file of another user than you or root.
fn check_side_files(path: &Path, dir: &OwnedDir, name: &str, fresh: bool) -> Result<(), PathError> {
    let me = rustix::process::geteuid().as_raw();
    for (suffix, what) in SIDE_FILES {
        let Some(st) = dir.entry(&format!("{name}{suffix}"))? else {
            continue;
        };
        let found = match FileType::from_raw_mode(st.st_mode) {
            FileType::Symlink => "a symbolic link",
            FileType::RegularFile if fresh && st.st_uid != me && st.st_uid != 0 => {
                "a file of another user"
            }
            FileType::RegularFile => continue,
            _ => "not a regular file",
        };
        let mut shown = path.as_os_str().to_owned();
        shown.push(suffix);
        return Err(PathError {
            path: PathBuf::from(shown),
            problem: format!(
                "{found} (owner uid {}) where SQLite keeps this database's {what}; SQLite would open or delete it, so scalelab does not open the database — remove it if it is not yours, or keep the database in a folder only you can write",
                st.st_uid
            ),
            os: None,
        });
    }
    Ok(())
}
