//! The crate's one error type, [`SysError`], and [`Errno`], an errno value that prints as
//! "No such file or directory (ENOENT)".
//!
//! Every failing system call becomes a [`SysError::Syscall`] naming the call, the errno text and,
//! where one exists, the fix — so a message read at 3 a.m. in a CI log says what to do.

use std::fmt;

/// An `errno` value from a failed system call.
///
/// `Display` gives the C library's text and the symbolic name: `Permission denied (EACCES)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Errno(pub i32);

impl Errno {
    /// The calling thread's current `errno` (read right after a call returned -1).
    pub fn last() -> Errno {
        Errno(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
    }

    /// The symbolic name (`"ENOENT"`), or `None` for a value outside the common set.
    pub fn name(self) -> Option<&'static str> {
        let name = match self.0 {
            libc::EPERM => "EPERM",
            libc::ENOENT => "ENOENT",
            libc::ESRCH => "ESRCH",
            libc::EINTR => "EINTR",
            libc::EIO => "EIO",
            libc::ENXIO => "ENXIO",
            libc::E2BIG => "E2BIG",
            libc::ENOEXEC => "ENOEXEC",
            libc::EBADF => "EBADF",
            libc::ECHILD => "ECHILD",
            libc::EAGAIN => "EAGAIN",
            libc::ENOMEM => "ENOMEM",
            libc::EACCES => "EACCES",
            libc::EFAULT => "EFAULT",
            libc::EBUSY => "EBUSY",
            libc::EEXIST => "EEXIST",
            libc::ENODEV => "ENODEV",
            libc::ENOTDIR => "ENOTDIR",
            libc::EISDIR => "EISDIR",
            libc::EINVAL => "EINVAL",
            libc::ENFILE => "ENFILE",
            libc::EMFILE => "EMFILE",
            libc::ENOSPC => "ENOSPC",
            libc::ESPIPE => "ESPIPE",
            libc::EROFS => "EROFS",
            libc::EPIPE => "EPIPE",
            libc::ERANGE => "ERANGE",
            libc::EDEADLK => "EDEADLK",
            libc::ENAMETOOLONG => "ENAMETOOLONG",
            libc::ENOSYS => "ENOSYS",
            libc::EOVERFLOW => "EOVERFLOW",
            libc::EOPNOTSUPP => "EOPNOTSUPP",
            libc::ETIMEDOUT => "ETIMEDOUT",
            _ => return None,
        };
        Some(name)
    }

    /// The C library's description (`strerror`, through std), e.g. "No such file or directory".
    pub fn description(self) -> String {
        let text = std::io::Error::from_raw_os_error(self.0).to_string();
        // std appends " (os error N)"; the name or number is printed by `Display` instead.
        match text.rfind(" (os error ") {
            Some(end) => text[..end].to_string(),
            None => text,
        }
    }
}

impl From<rustix::io::Errno> for Errno {
    fn from(e: rustix::io::Errno) -> Errno {
        Errno(e.raw_os_error())
    }
}

impl fmt::Display for Errno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{} ({name})", self.description()),
            None => write!(f, "{} (errno {})", self.description(), self.0),
        }
    }
}

/// Everything that can go wrong in this crate.
#[derive(Debug, thiserror::Error)]
pub enum SysError {
    /// A system call failed.
    #[error("{call}: {errno}{}", fix_suffix(*.fix))]
    Syscall {
        /// The call, as a reader would grep for it: `"mmap"`, `"sched_setaffinity"`.
        call: &'static str,
        /// Why it failed.
        errno: Errno,
        /// What to do about it, when there is something to do.
        fix: Option<&'static str>,
    },
    /// `fork_single_threaded` was called in a process with more than one thread.
    #[error(
        "fork: refused because the process has {threads} threads; forking a multi-threaded \
         process can leave the child holding another thread's locks — fork before any thread is \
         started, or run the work in a fresh process (std::process::Command re-exec)"
    )]
    NotSingleThreaded {
        /// The thread count read from `/proc/self/status`.
        threads: usize,
    },
    /// An argument was rejected before any system call was made.
    #[error("{call}: {reason}")]
    InvalidArgument {
        /// The call the argument was meant for.
        call: &'static str,
        /// What is wrong with it, and the accepted range.
        reason: String,
    },
    /// A file the user named could not be opened or read.
    #[error("{}: {cause}", path.display())]
    Input {
        /// The file, as given.
        path: std::path::PathBuf,
        /// What it was read as ("a CSV series").
        what: &'static str,
        /// The operating system's error (not a `source`: the message carries it).
        cause: std::io::Error,
    },
    /// A file the user named is larger than scalelab reads of its kind.
    #[error(
        "{}: {} the {limit} scalelab reads of {what}{} — give a smaller file (or a copy of the part that matters)",
        path.display(),
        if .size.is_some() { "larger than" } else { "more than" },
        match .size { Some(s) => format!(" (it has {s} bytes)"), None => String::new() }
    )]
    InputTooLarge {
        /// The file, as given.
        path: std::path::PathBuf,
        /// What it was read as.
        what: &'static str,
        /// The limit, in words ("64 MiB").
        limit: String,
        /// Its stated size in bytes, when it states one.
        size: Option<u64>,
    },
    /// A file the user named is a device, a directory or another thing that is not read.
    #[error("{}: {found}, not {what}; give {allowed}", path.display())]
    InputNotAFile {
        /// The file, as given.
        path: std::path::PathBuf,
        /// What it was to be read as.
        what: &'static str,
        /// What it is ("a character device").
        found: &'static str,
        /// What it may be ("a regular file or a pipe").
        allowed: &'static str,
    },
    /// A `/proc` file could not be read or did not have the expected shape.
    #[error("reading {path}: {reason} — is /proc mounted?")]
    Proc {
        /// The file, e.g. `/proc/self/status`.
        path: &'static str,
        /// What went wrong.
        reason: String,
    },
}

fn fix_suffix(fix: Option<&'static str>) -> String {
    match fix {
        Some(fix) => format!(" — {fix}"),
        None => String::new(),
    }
}

impl SysError {
    /// A failed call with the current `errno` and no particular fix.
    pub(crate) fn last(call: &'static str) -> SysError {
        SysError::Syscall {
            call,
            errno: Errno::last(),
            fix: None,
        }
    }

    /// A failed call with the given `errno` and a fix chosen by `fix` from that errno.
    pub(crate) fn with_fix(
        call: &'static str,
        errno: Errno,
        fix: impl FnOnce(Errno) -> Option<&'static str>,
    ) -> SysError {
        SysError::Syscall {
            call,
            errno,
            fix: fix(errno),
        }
    }

    /// The errno of a failed call, if this error is one.
    pub fn errno(&self) -> Option<Errno> {
        match self {
            SysError::Syscall { errno, .. } => Some(*errno),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_prints_text_and_name() {
        assert_eq!(
            Errno(libc::ENOENT).to_string(),
            "No such file or directory (ENOENT)"
        );
        assert_eq!(Errno(libc::EACCES).name(), Some("EACCES"));
        assert!(Errno(4000).to_string().contains("errno 4000"));
    }

    #[test]
    fn syscall_error_names_call_errno_and_fix() {
        let err = SysError::Syscall {
            call: "mmap",
            errno: Errno(libc::ENOMEM),
            fix: Some("lower the length"),
        };
        assert_eq!(
            err.to_string(),
            "mmap: Cannot allocate memory (ENOMEM) — lower the length"
        );
        assert_eq!(err.errno(), Some(Errno(libc::ENOMEM)));
        let bare = SysError::Syscall {
            call: "kill",
            errno: Errno(libc::ESRCH),
            fix: None,
        };
        assert_eq!(bare.to_string(), "kill: No such process (ESRCH)");
    }
}
