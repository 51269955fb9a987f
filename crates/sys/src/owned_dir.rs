//! Creating files and directories as root without being steered by another user: nothing is
//! created through a symbolic link, and a directory is checked for owner and mode before
//! anything goes into it. SECURITY.md states the same rules for users.
//!
//! - **Links.** Walking a path, a symbolic link is followed only when it is owned by the
//!   effective user or root; a link any other user made is refused wherever it is. The last
//!   component of a file scalelab creates or writes is never a link (`O_NOFOLLOW`).
//! - **Descriptors, not names.** An [`OwnedDir`] is an open directory (`O_PATH|O_NOFOLLOW`);
//!   what is made below it is made with `mkdirat`/`openat` relative to it, so nobody can swap
//!   a directory for a link between the check and the use.
//! - **Private storage.** Directories scalelab makes are 0700 and its files 0600, created with
//!   `O_EXCL`; an existing directory it stores into must be the effective user's (or root's)
//!   and writable by nobody else.
//! - **Anchors.** Storage is made under a directory the user named (the database's folder,
//!   `--workdir`): [`OwnedDir::open_anchor`] accepts it only when no other user can rename
//!   anything in it or above it — every directory from `/` down is owned by the effective user
//!   or root and not writable by group or others unless sticky (as `/tmp` is). Otherwise that
//!   user could rename scalelab's directory away and put a link in its place, and `perf record`
//!   or a workload, which open files by name, would follow it.
//!
//! Uses rustix's safe `openat`/`mkdirat`/`fstat`, so this module needs no unsafe code.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat};
use rustix::io::Errno;

/// A file or directory scalelab will not create or use, and why; the message names the fix.
#[derive(Debug, thiserror::Error)]
#[error("{}: {problem}{}", path.display(), os.as_ref().map(|e| format!(": {e}")).unwrap_or_default())]
pub struct PathError {
    /// The path refused or that failed.
    pub path: PathBuf,
    /// What is wrong with it, and the fix.
    pub problem: String,
    /// The operating system's error behind it; `None` when scalelab refused on its own (a
    /// link, an owner, a mode).
    pub os: Option<std::io::Error>,
}

impl PathError {
    fn new(path: impl Into<PathBuf>, problem: impl Into<String>) -> PathError {
        PathError {
            path: path.into(),
            problem: problem.into(),
            os: None,
        }
    }

    fn io(path: impl Into<PathBuf>, doing: &str, e: Errno) -> PathError {
        PathError {
            path: path.into(),
            problem: doing.into(),
            os: Some(e.into()),
        }
    }
}

/// Directories scalelab makes.
const DIR_MODE: u32 = 0o700;
/// Files scalelab makes for itself (profiles, snapshots, locks, the database).
const FILE_MODE: u32 = 0o600;
/// Files the user names for output (`report -o`, `--flamegraph`), meant to be shared.
const OUTPUT_MODE: u32 = 0o644;
/// Links followed in one path before giving up (the kernel's own limit).
const MAX_LINKS: usize = 40;

/// The effective user id.
pub fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// The effective user and root: the only owners whose links and directories are trusted.
fn trusted(uid: u32) -> bool {
    uid == 0 || uid == euid()
}

fn who(uid: u32) -> String {
    format!("uid {uid} (neither you, uid {}, nor root)", euid())
}

/// How [`walk`] treats the directories it passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Walk {
    /// Only links are checked (a path the user chose, e.g. the database's folder).
    Links,
    /// Links, and missing directories are made (0700).
    Create,
    /// Links, and every directory must be one no other user can rename entries in.
    Anchor,
}

/// An open directory and the path it was reached by (for messages and for tools that take
/// names, such as `perf record -o`).
#[derive(Debug)]
pub struct OwnedDir {
    fd: std::os::fd::OwnedFd,
    path: PathBuf,
}

impl PartialEq for OwnedDir {
    fn eq(&self, other: &OwnedDir) -> bool {
        self.path == other.path
    }
}

impl Eq for OwnedDir {}

impl OwnedDir {
    /// Opens the directory `path`, under which scalelab will make its own storage; refused
    /// unless every directory from `/` down to it is trusted (see the module doc).
    pub fn open_anchor(path: &Path) -> Result<OwnedDir, PathError> {
        walk(path, Walk::Anchor)
    }

    /// Opens the directory `path`, following only trusted links, without checking owners.
    pub fn open(path: &Path) -> Result<OwnedDir, PathError> {
        walk(path, Walk::Links)
    }

    /// Opens the directory `path`, making the missing ones (0700); only trusted links are
    /// followed.
    pub fn open_or_create(path: &Path) -> Result<OwnedDir, PathError> {
        walk(path, Walk::Create)
    }

    /// The path this directory was reached by, with trusted links resolved.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The path of entry `name`.
    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// The subdirectory `name`, made (0700) when missing. An existing one must be a real
    /// directory owned by you (or root) that nobody else can write to.
    pub fn private_subdir(&self, name: &str) -> Result<OwnedDir, PathError> {
        let path = self.join(check_name(name)?);
        match rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(DIR_MODE)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(PathError::io(path, "cannot create directory", e)),
        }
        let dir = self.subdir(name)?;
        let st = stat(&dir.fd, &dir.path)?;
        if !trusted(st.st_uid) {
            return Err(PathError::new(
                &dir.path,
                format!(
                    "owned by {}: that user made it and could redirect what scalelab stores in it — remove it (rm -r {})",
                    who(st.st_uid),
                    dir.path.display()
                ),
            ));
        }
        if st.st_mode & 0o022 != 0 {
            return Err(PathError::new(
                &dir.path,
                format!(
                    "writable by others (mode {:o}), so they could redirect what scalelab stores in it — chmod go-w {}",
                    st.st_mode & 0o7777,
                    dir.path.display()
                ),
            ));
        }
        Ok(dir)
    }

    /// Makes the new subdirectory `name` (0700); an existing entry of that name is an error
    /// with `Errno::EXIST` as its cause, so callers can pick another name.
    pub fn new_subdir(&self, name: &str) -> Result<OwnedDir, NewEntryError> {
        let path = self.join(check_name(name)?);
        rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(DIR_MODE)).map_err(|e| {
            if e == Errno::EXIST {
                NewEntryError::Exists(path.clone())
            } else {
                PathError::io(&path, "cannot create directory", e).into()
            }
        })?;
        Ok(self.subdir(name)?)
    }

    /// Makes the new file `name` (0600, `O_EXCL|O_NOFOLLOW`), open for writing.
    pub fn create_file(&self, name: &str) -> Result<File, NewEntryError> {
        let path = self.join(check_name(name)?);
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW;
        match rustix::fs::openat(
            &self.fd,
            name,
            flags | OFlags::CLOEXEC,
            Mode::from_raw_mode(FILE_MODE),
        ) {
            Ok(fd) => Ok(File::from(fd)),
            Err(Errno::EXIST) => Err(NewEntryError::Exists(path)),
            Err(e) => Err(PathError::io(path, "cannot create file", e).into()),
        }
    }

    /// Renames entry `from` of this directory to `to`, failing with `Exists` when `to` is taken.
    pub fn rename_new(&self, from: &str, to: &str) -> Result<(), NewEntryError> {
        let path = self.join(check_name(to)?);
        check_name(from)?;
        let fd = &self.fd;
        match rustix::fs::renameat_with(fd, from, fd, to, rustix::fs::RenameFlags::NOREPLACE) {
            Ok(()) => Ok(()),
            Err(Errno::EXIST) => Err(NewEntryError::Exists(path)),
            // A file system without RENAME_NOREPLACE: a plain rename still cannot replace a
            // non-empty directory (and names here are random).
            Err(Errno::INVAL) => match rustix::fs::renameat(fd, from, fd, to) {
                Ok(()) => Ok(()),
                Err(Errno::EXIST | Errno::NOTEMPTY) => Err(NewEntryError::Exists(path)),
                Err(e) => Err(PathError::io(path, "cannot rename into place", e).into()),
            },
            Err(e) => Err(PathError::io(path, "cannot rename into place", e).into()),
        }
    }

    /// Opens the existing regular file `name` for reading, not through a link.
    pub fn open_file(&self, name: &str) -> Result<File, PathError> {
        let path = self.join(check_name(name)?);
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&self.fd, name, flags, Mode::empty())
            .map_err(|e| refuse_link_or(&path, "cannot open", e))?;
        let st = stat(&fd, &path)?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            return Err(PathError::new(path, "not a regular file"));
        }
        Ok(File::from(fd))
    }

    /// What entry `name` is, without following a link; `None` when there is none.
    pub fn entry(&self, name: &str) -> Result<Option<Stat>, PathError> {
        let path = self.join(check_name(name)?);
        match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(st)),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(PathError::io(path, "cannot inspect", e)),
        }
    }

    /// Opens the existing subdirectory `name`, never through a link.
    pub fn subdir(&self, name: &str) -> Result<OwnedDir, PathError> {
        let path = self.join(check_name(name)?);
        let fd = open_dir_at(&self.fd, OsStr::new(name))
            .map_err(|e| refuse_link_or(&path, "cannot open directory", e))?;
        Ok(OwnedDir { fd, path })
    }
}

/// Why a new file or directory was not made: the name is taken, or anything else.
#[derive(Debug, thiserror::Error)]
pub enum NewEntryError {
    /// Something of that name is there already.
    #[error("{}: already exists", .0.display())]
    Exists(PathBuf),
    /// The folder or the name was refused, or the call failed.
    #[error(transparent)]
    Refused(#[from] PathError),
}

impl From<NewEntryError> for PathError {
    fn from(e: NewEntryError) -> PathError {
        match e {
            NewEntryError::Exists(path) => PathError::new(
                path,
                "already exists, and scalelab only writes files it has just created — move it away",
            ),
            NewEntryError::Refused(e) => e,
        }
    }
}

/// Opens the file `path` the user named for output (`report -o`, `--flamegraph`) and empties
/// it. Written are a new file (0644 less the umask) or an existing regular file owned by you
/// with no other hard link; never a link, another user's file, a device or a FIFO. Links in
/// the directory part are followed only when trusted.
pub fn create_output(path: &Path) -> Result<File, PathError> {
    let (dir, name) = split(path)?;
    let dir = OwnedDir::open(&dir)?;
    let target = dir.join(&name);
    let new = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match rustix::fs::openat(&dir.fd, &name, new, Mode::from_raw_mode(OUTPUT_MODE)) {
        Ok(fd) => return Ok(File::from(fd)),
        Err(Errno::EXIST) => {}
        Err(e) => return Err(PathError::io(path, "cannot create", e)),
    }
    let existing = OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(&dir.fd, &name, existing, Mode::empty())
        .map_err(|e| refuse_link_or(path, "cannot open", e))?;
    let st = stat(&fd, &target)?;
    let refuse = |why: String| {
        Err(PathError::new(
            path,
            format!("{why}; scalelab replaces only a regular file of yours — name a new file"),
        ))
    };
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return refuse("exists and is not a regular file".into());
    }
    if st.st_uid != euid() {
        return refuse(format!("exists and belongs to uid {}", st.st_uid));
    }
    if st.st_nlink != 1 {
        return refuse(format!("exists with {} hard links", st.st_nlink));
    }
    rustix::fs::ftruncate(&fd, 0).map_err(|e| PathError::io(path, "cannot truncate", e))?;
    Ok(File::from(fd))
}

/// Resolves `path` to a directory path without links, following only trusted ones; the
/// missing tail is kept as written. The database's location is resolved this way before SQLite
/// opens it with `SQLITE_OPEN_NOFOLLOW`.
pub fn resolve_dir(path: &Path) -> Result<PathBuf, PathError> {
    let (existing, missing) = walk_existing(path, Walk::Links)?;
    let mut out = existing.path;
    for c in missing {
        out.push(c);
    }
    Ok(out)
}

/// `path` split into its directory (`.` when none) and a plain file name.
pub fn split(path: &Path) -> Result<(PathBuf, String), PathError> {
    let name = path
        .file_name()
        .and_then(OsStr::to_str)
        .filter(|_| !path.as_os_str().as_bytes().ends_with(b"/"))
        .ok_or_else(|| PathError::new(path, "not a file name"))?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((dir, name.to_string()))
}

fn check_name(name: &str) -> Result<&str, PathError> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') {
        return Err(PathError::new(name, "not a plain file name"));
    }
    Ok(name)
}

fn stat(fd: impl std::os::fd::AsFd, path: &Path) -> Result<Stat, PathError> {
    rustix::fs::fstat(fd).map_err(|e| PathError::io(path, "cannot inspect", e))
}

fn open_dir_at(dir: impl std::os::fd::AsFd, name: &OsStr) -> Result<std::os::fd::OwnedFd, Errno> {
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    rustix::fs::openat(dir, name, flags, Mode::empty())
}

/// An `O_NOFOLLOW` failure on a link gets its own message.
fn refuse_link_or(path: &Path, doing: &str, e: Errno) -> PathError {
    if e == Errno::LOOP || e == Errno::NOTDIR {
        // O_NOFOLLOW on a link gives ELOOP; O_DIRECTORY on a link or file gives ENOTDIR.
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
            return link_refused(path);
        }
    }
    PathError::io(path, doing, e)
}

fn link_refused(path: &Path) -> PathError {
    PathError::new(
        path,
        "is a symbolic link, and scalelab never creates or writes files through one — remove it, or name the real path",
    )
}

/// Walks `path` from `/` (or the working directory), one component at a time, with
/// `O_PATH|O_NOFOLLOW` opens; see [`Walk`].
fn walk(path: &Path, how: Walk) -> Result<OwnedDir, PathError> {
    let (mut dir, missing) = walk_existing(path, how)?;
    for name in missing {
        if how != Walk::Create {
            let p = dir.path.join(&name);
            return Err(PathError::new(p, "no such directory"));
        }
        let p = dir.path.join(&name);
        match rustix::fs::mkdirat(&dir.fd, name.as_os_str(), Mode::from_raw_mode(DIR_MODE)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(PathError::io(p, "cannot create directory", e)),
        }
        let fd = open_dir_at(&dir.fd, &name)
            .map_err(|e| refuse_link_or(&p, "cannot open directory", e))?;
        dir = OwnedDir { fd, path: p };
    }
    Ok(dir)
}

/// The deepest existing directory on `path` (links resolved) and the components below it.
fn walk_existing(path: &Path, how: Walk) -> Result<(OwnedDir, Vec<OsString>), PathError> {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(|e| PathError::new(path, format!("cannot read the working directory: {e}")))?
            .join(path)
    };
    let root = || -> Result<OwnedDir, PathError> {
        let fd = rustix::fs::open(
            "/",
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| PathError::io("/", "cannot open", e))?;
        Ok(OwnedDir {
            fd,
            path: PathBuf::from("/"),
        })
    };
    // The directories walked so far, `/` first: `..` pops one.
    let mut stack = vec![root()?];
    if how == Walk::Anchor {
        check_anchor(&stack[0])?;
    }
    let mut pending: Vec<OsString> = components(&absolute);
    pending.reverse(); // a stack: next component last
    let mut links = 0;
    while let Some(name) = pending.pop() {
        let top = stack.last().expect("the root is never popped");
        if name == ".." {
            if stack.len() > 1 {
                stack.pop();
            }
            continue;
        }
        let next = top.path.join(&name);
        match open_dir_at(&top.fd, &name) {
            Ok(fd) => {
                let dir = OwnedDir { fd, path: next };
                if how == Walk::Anchor {
                    check_anchor(&dir)?;
                }
                stack.push(dir);
            }
            Err(Errno::NOENT) => {
                let mut missing = vec![name];
                while let Some(rest) = pending.pop() {
                    missing.push(rest);
                }
                let dir = stack.pop().expect("non-empty");
                return Ok((dir, missing));
            }
            Err(e @ (Errno::LOOP | Errno::NOTDIR)) => {
                let st = match rustix::fs::statat(
                    &top.fd,
                    name.as_os_str(),
                    AtFlags::SYMLINK_NOFOLLOW,
                ) {
                    Ok(st) => st,
                    Err(e) => return Err(PathError::io(next, "cannot inspect", e)),
                };
                if FileType::from_raw_mode(st.st_mode) != FileType::Symlink {
                    return Err(PathError::io(next, "not a directory", e));
                }
                if !trusted(st.st_uid) {
                    return Err(PathError::new(
                        &next,
                        format!(
                            "is a symbolic link owned by {}, and scalelab follows a link only when it is yours or root's — name the real path, or remove the link",
                            who(st.st_uid)
                        ),
                    ));
                }
                links += 1;
                if links > MAX_LINKS {
                    return Err(PathError::new(next, "too many levels of symbolic links"));
                }
                let target = rustix::fs::readlinkat(&top.fd, name.as_os_str(), Vec::new())
                    .map_err(|e| PathError::io(&next, "cannot read link", e))?;
                let target = PathBuf::from(OsStr::from_bytes(target.as_bytes()));
                if target.is_absolute() {
                    stack.truncate(1);
                }
                let mut more = components(&target);
                more.reverse();
                pending.extend(more);
            }
            Err(e) => return Err(PathError::io(next, "cannot open directory", e)),
        }
    }
    let dir = stack.pop().expect("non-empty");
    Ok((dir, Vec::new()))
}

/// The normal and `..` components of `path` (the root and `.` dropped).
fn components(path: &Path) -> Vec<OsString> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => None,
        })
        .collect()
}

/// A directory others cannot rename entries in: owned by you or root, and writable by group or
/// others only when sticky.
fn check_anchor(dir: &OwnedDir) -> Result<(), PathError> {
    let st = stat(&dir.fd, &dir.path)?;
    if !trusted(st.st_uid) {
        return Err(PathError::new(
            &dir.path,
            format!(
                "owned by {}: that user could swap what scalelab creates below it for a link — use a directory owned by you or root",
                who(st.st_uid)
            ),
        ));
    }
    let sticky = st.st_mode & 0o1000 != 0;
    if st.st_mode & 0o022 != 0 && !sticky {
        return Err(PathError::new(
            &dir.path,
            format!(
                "writable by group or others (mode {:o}) and not sticky, so they could swap what scalelab creates below it for a link — chmod go-w (or +t) {}",
                st.st_mode & 0o7777,
                dir.path.display()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};

    fn mode(p: &Path) -> u32 {
        std::fs::symlink_metadata(p).unwrap().mode() & 0o7777
    }

    #[test]
    fn storage_is_private_and_made_only_once() {
        let base = tempfile::tempdir().unwrap();
        let anchor = OwnedDir::open_anchor(base.path()).unwrap();
        let a = anchor.private_subdir("a").unwrap();
        assert_eq!(mode(a.path()), 0o700);
        // Opening it again is fine; a new subdirectory or file of a taken name is not.
        anchor.private_subdir("a").unwrap();
        a.new_subdir("b").unwrap();
        assert!(matches!(a.new_subdir("b"), Err(NewEntryError::Exists(_))));
        let mut f = a.create_file("f").unwrap();
        f.write_all(b"x").unwrap();
        assert_eq!(mode(&a.join("f")), 0o600);
        assert!(matches!(a.create_file("f"), Err(NewEntryError::Exists(_))));
        assert!(a.open_file("f").is_ok());
        assert!(a.private_subdir("../x").is_err());
    }

    #[test]
    fn links_are_never_created_through() {
        let base = tempfile::tempdir().unwrap();
        let victim = base.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        let anchor = OwnedDir::open_anchor(base.path()).unwrap();
        symlink(&victim, base.path().join("file-link")).unwrap();
        symlink(base.path(), base.path().join("dir-link")).unwrap();
        assert!(matches!(
            anchor.create_file("file-link"),
            Err(NewEntryError::Exists(_))
        ));
        let err = anchor.private_subdir("dir-link").unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{err}");
        let err = anchor.open_file("file-link").unwrap_err().to_string();
        assert!(err.contains("symbolic link"), "{err}");
        let err = create_output(&base.path().join("file-link"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("symbolic link"), "{err}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
    }

    #[test]
    fn your_own_links_in_a_directory_path_are_followed() {
        let base = tempfile::tempdir().unwrap();
        let real = base.path().join("real");
        std::fs::create_dir(&real).unwrap();
        symlink("real", base.path().join("rel")).unwrap();
        symlink(&real, base.path().join("abs")).unwrap();
        let canonical = real.canonicalize().unwrap();
        for via in ["rel", "abs", "real/../rel", "abs/."] {
            let d = OwnedDir::open(&base.path().join(via)).unwrap();
            assert_eq!(d.path(), canonical, "{via}");
        }
        assert_eq!(
            resolve_dir(&base.path().join("rel/new/deeper")).unwrap(),
            canonical.join("new/deeper")
        );
        let made = OwnedDir::open_or_create(&base.path().join("abs/x/y")).unwrap();
        assert_eq!(made.path(), canonical.join("x/y"));
        assert_eq!(mode(&real.join("x")), 0o700);
        assert!(OwnedDir::open(&base.path().join("missing")).is_err());
    }

    #[test]
    fn an_anchor_others_can_write_must_be_sticky() {
        let base = tempfile::tempdir().unwrap();
        let open = base.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = OwnedDir::open_anchor(&open.join("."))
            .unwrap_err()
            .to_string();
        assert!(err.contains("not sticky"), "{err}");
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
        OwnedDir::open_anchor(&open).unwrap();
        // Storage inside must not be writable by others.
        let shared = open.join("shared");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
        let anchor = OwnedDir::open_anchor(&open).unwrap();
        let err = anchor.private_subdir("shared").unwrap_err().to_string();
        assert!(err.contains("writable by others"), "{err}");
    }

    #[test]
    fn outputs_replace_only_your_own_single_link_regular_files() {
        let base = tempfile::tempdir().unwrap();
        let out = base.path().join("out.html");
        create_output(&out).unwrap().write_all(b"first").unwrap();
        create_output(&out).unwrap().write_all(b"2").unwrap();
        assert_eq!(std::fs::read(&out).unwrap(), b"2");
        std::fs::hard_link(&out, base.path().join("second-name")).unwrap();
        let err = create_output(&out).unwrap_err().to_string();
        assert!(err.contains("hard links"), "{err}");
        assert_eq!(std::fs::read(&out).unwrap(), b"2");
        let err = create_output(Path::new("/dev/null"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a regular file"), "{err}");
        assert!(create_output(base.path()).is_err());
    }
}
