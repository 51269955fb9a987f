//! Creating child processes from any process, threaded or not, for the `spawn` workload:
//! [`fork_exit_wait`] (a fork whose child does nothing but `_exit(0)`) and [`Program`]
//! (`posix_spawn` of a fixed command line), each reaped with `wait4`.
//!
//! [`fork_single_threaded`](crate::fork_single_threaded) refuses in a multi-threaded process
//! because its child may run any code. Here the child of `fork` runs no Rust code at all: it calls
//! `_exit`, which is async-signal-safe, the one kind of function POSIX allows in the child of a
//! multi-threaded fork. `posix_spawn` never runs caller code in the child either (glibc clones
//! with `CLONE_VM | CLONE_VFORK` and goes straight to `execve`).

use std::ffi::{CString, c_char};

use crate::child::{ExitKind, wait_child};
use crate::error::{Errno, SysError};

fn fork_fix(e: Errno) -> Option<&'static str> {
    match e.0 {
        libc::EAGAIN => {
            Some("the process limit was reached: check `ulimit -u` and pids.max of the cgroup")
        }
        libc::ENOMEM => Some("not enough memory to create the process"),
        _ => None,
    }
}

/// Forks; the child calls `_exit(0)` at once; the parent waits for it (`wait4`) and returns how
/// it ended. Sound in a multi-threaded process.
pub fn fork_exit_wait() -> Result<ExitKind, SysError> {
    // SAFETY: in the child, the only code run before the process ends is the comparison below
    // and `_exit`, which is async-signal-safe and touches no lock or user-space state, so the
    // locks other threads held at the fork (allocator, stdio) are never needed. Rust binaries are
    // linked with `-z now`, so even `_exit`'s symbol needs no lazy resolution in the child.
    // In the parent, fork only returns the child's pid.
    let pid = unsafe { libc::fork() };
    match pid {
        -1 => Err(SysError::with_fix("fork", Errno::last(), fork_fix)),
        0 => {
            // SAFETY: see above: _exit has no preconditions and ends the child immediately,
            // without destructors or atexit handlers.
            unsafe { libc::_exit(0) }
        }
        child => wait_child(child).map(|exit| exit.status),
    }
}

/// A command line prepared once for repeated `posix_spawn`: the path, its arguments (`argv[0]`
/// is the path) and an empty environment, converted to C strings up front so spawning
/// allocates nothing.
#[derive(Debug)]
pub struct Program {
    /// Owns the strings `argv` points into (`strings[0]` is the path).
    strings: Vec<CString>,
    /// `argv` for posix_spawn: pointers into `strings`, NULL-terminated.
    argv: Vec<*mut c_char>,
    /// The empty environment: just the terminating NULL.
    envp: [*mut c_char; 1],
}

// SAFETY: the raw pointers point only into the heap buffers of `strings`, which this value owns,
// never mutates and frees only on drop; nothing is tied to the creating thread.
unsafe impl Send for Program {}
// SAFETY: `&Program` only reads the pointers and the strings (posix_spawn does not write through
// argv/envp), so sharing it between threads is race-free.
unsafe impl Sync for Program {}

impl Program {
    /// Prepares `path` with arguments `args` (not counting `argv[0]`, which is `path`).
    pub fn new(path: &str, args: &[&str]) -> Result<Program, SysError> {
        let strings = std::iter::once(path)
            .chain(args.iter().copied())
            .map(|s| {
                CString::new(s).map_err(|_| SysError::InvalidArgument {
                    call: "posix_spawn",
                    reason: format!("{s:?} contains a NUL byte"),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let argv = strings
            .iter()
            .map(|s| s.as_ptr().cast_mut())
            .chain(std::iter::once(std::ptr::null_mut()))
            .collect();
        Ok(Program {
            strings,
            argv,
            envp: [std::ptr::null_mut()],
        })
    }

    /// Starts the program (`posix_spawn`, empty environment, inheriting this process's
    /// non-close-on-exec descriptors); returns the child's pid, to be reaped with
    /// [`wait_child`](crate::wait_child).
    pub fn spawn(&self) -> Result<i32, SysError> {
        let mut pid: libc::pid_t = 0;
        // SAFETY: `pid` is a writable local; the path and every argv entry are NUL-terminated
        // C strings owned by `self` and alive for the call; argv and envp are NULL-terminated
        // arrays of such pointers; posix_spawn reads them and writes only `pid`. The null
        // file-actions and attributes pointers mean "none", which posix_spawn accepts.
        let rc = unsafe {
            libc::posix_spawn(
                &mut pid,
                self.strings[0].as_ptr(),
                std::ptr::null(),
                std::ptr::null(),
                self.argv.as_ptr(),
                self.envp.as_ptr(),
            )
        };
        if rc != 0 {
            return Err(SysError::with_fix("posix_spawn", Errno(rc), |e| {
                match e.0 {
                    libc::ENOENT => Some("no such program: give an absolute path that exists"),
                    libc::EACCES => Some(
                        "the program is not executable (or a directory on its path is not searchable)",
                    ),
                    other => fork_fix(Errno(other)),
                }
            }));
        }
        Ok(pid)
    }

    /// Spawns the program and waits for it; returns how it ended.
    pub fn run(&self) -> Result<ExitKind, SysError> {
        let pid = self.spawn()?;
        wait_child(pid).map(|exit| exit.status)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `f` while a second thread exists, so the process is certainly multi-threaded.
    fn with_another_thread<T>(f: impl FnOnce() -> T) -> T {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let helper = std::thread::spawn(move || rx.recv());
        assert!(crate::thread_count().unwrap() >= 2);
        let out = f();
        drop(tx);
        helper.join().unwrap().ok();
        out
    }

    #[test]
    fn fork_exit_wait_works_in_a_multi_threaded_process() {
        with_another_thread(|| {
            for _ in 0..50 {
                assert_eq!(fork_exit_wait().unwrap(), ExitKind::Exited(0));
            }
        });
    }

    #[test]
    fn forks_from_many_threads_at_once_all_reap_their_own_child() {
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..25 {
                        assert_eq!(fork_exit_wait().unwrap(), ExitKind::Exited(0));
                    }
                });
            }
        });
    }

    #[test]
    fn posix_spawn_runs_a_program_and_reports_its_exit() {
        with_another_thread(|| {
            let t = Program::new("/bin/true", &[]).unwrap();
            for _ in 0..10 {
                assert_eq!(t.run().unwrap(), ExitKind::Exited(0));
            }
            let f = Program::new("/bin/false", &[]).unwrap();
            assert_eq!(f.run().unwrap(), ExitKind::Exited(1));
            let sh = Program::new("/bin/sh", &["-c", "exit 7"]).unwrap();
            assert_eq!(sh.run().unwrap(), ExitKind::Exited(7));
        });
    }

    #[test]
    fn posix_spawn_gets_an_empty_environment() {
        // The shell exports PWD itself; nothing else may be there.
        let script = r#"[ "$(/usr/bin/env | /usr/bin/grep -cv '^PWD=')" = 0 ]"#;
        let sh = Program::new("/bin/sh", &["-c", script]).unwrap();
        assert_eq!(sh.run().unwrap(), ExitKind::Exited(0));
    }

    #[test]
    fn missing_programs_and_nul_bytes_are_errors_that_say_why() {
        let err = Program::new("/nonexistent/program", &[])
            .unwrap()
            .spawn()
            .unwrap_err();
        assert_eq!(err.errno(), Some(Errno(libc::ENOENT)));
        assert!(err.to_string().contains("absolute path"), "{err}");
        let err = Program::new("/bin/true", &["a\0b"]).unwrap_err();
        assert!(err.to_string().contains("NUL"), "{err}");
    }
}
