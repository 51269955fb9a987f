//! Process and thread lifecycle: a `fork` that is only allowed where it is sound, `_exit`,
//! the parent-death signal (also for `std::process::Command` children: [`die_with_parent`]),
//! and the identity calls (`gettid`, `getppid`) plus `sched_yield`.
//!
//! Forking a multi-threaded process leaves the child with one thread and every lock some other
//! thread held (the allocator's, stdout's) locked forever. [`fork_single_threaded`] checks the
//! thread count first, which is what makes exposing it as a safe function sound.

use std::os::unix::process::CommandExt;
use std::process::Command;

use rustix::process::{self, Signal};

use crate::error::{Errno, SysError};

/// Which side of a [`fork_single_threaded`] the caller is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForkResult {
    /// The original process; `child` is the new process's pid.
    Parent {
        /// The child's process id.
        child: i32,
    },
    /// The new process.
    Child,
}

/// The number of threads in the calling process (`Threads:` in `/proc/self/status`).
pub fn thread_count() -> Result<usize, SysError> {
    const PATH: &str = "/proc/self/status";
    let status = std::fs::read_to_string(PATH).map_err(|e| SysError::Proc {
        path: PATH,
        reason: e.to_string(),
    })?;
    parse_thread_count(&status).ok_or_else(|| SysError::Proc {
        path: PATH,
        reason: "no `Threads:` line".to_string(),
    })
}

fn parse_thread_count(status: &str) -> Option<usize> {
    status
        .lines()
        .find_map(|line| line.strip_prefix("Threads:"))
        .and_then(|rest| rest.trim().parse().ok())
}

/// `fork()`, refused with [`SysError::NotSingleThreaded`] unless the calling process has
/// exactly one thread.
///
/// In the child, prefer to finish with [`exit_immediately`] so that the parent's buffered
/// output and exit handlers do not run twice.
pub fn fork_single_threaded() -> Result<ForkResult, SysError> {
    // A thread that was just joined is still counted for a moment: pthread_join returns when
    // the thread clears its tid, slightly before the kernel drops it from the thread group.
    // So re-check briefly (at most ~10 ms) before refusing.
    let mut threads = thread_count()?;
    for _ in 0..20 {
        if threads == 1 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_micros(500));
        threads = thread_count()?;
    }
    if threads != 1 {
        return Err(SysError::NotSingleThreaded { threads });
    }
    // SAFETY: the process has exactly one thread — the caller — so no other thread can hold a
    // lock (allocator, stdio, std's internal state) at the moment of the fork, and none can be
    // started between the check and the fork because only the caller could start it. The child
    // is therefore a consistent copy in which all safe Rust code may run.
    let pid = unsafe { libc::fork() };
    match pid {
        -1 => Err(SysError::with_fix("fork", Errno::last(), |e| match e.0 {
            libc::EAGAIN => {
                Some("the process limit was reached: check `ulimit -u` and pids.max of the cgroup")
            }
            libc::ENOMEM => Some("not enough memory to copy the process"),
            _ => None,
        })),
        0 => Ok(ForkResult::Child),
        child => Ok(ForkResult::Parent { child }),
    }
}

/// Ends the calling process at once with `code` (`_exit`): no destructors, no `atexit`
/// handlers, no stdio flush. For forked children.
pub fn exit_immediately(code: i32) -> ! {
    // SAFETY: _exit has no preconditions; it terminates the process without touching
    // user-space state, so no Rust invariant can be observed broken afterwards.
    unsafe { libc::_exit(code) }
}

/// Asks the kernel to send `signal` to the calling process when its parent thread exits
/// (`prctl(PR_SET_PDEATHSIG)`), so a trial child never outlives a killed runner.
///
/// The parent may already have died before this call: afterwards, compare
/// [`getppid`] with the parent's pid and exit if they differ.
pub fn set_parent_death_signal(signal: i32) -> Result<(), SysError> {
    let signal = match signal {
        0 => None,
        raw => Some(
            Signal::from_named_raw(raw).ok_or_else(|| SysError::InvalidArgument {
                call: "prctl(PR_SET_PDEATHSIG)",
                reason: format!("signal {raw} is not a valid signal number (SIGHUP..=SIGSYS)"),
            })?,
        ),
    };
    process::set_parent_process_death_signal(signal).map_err(|e| SysError::Syscall {
        call: "prctl(PR_SET_PDEATHSIG)",
        errno: e.into(),
        fix: None,
    })
}

/// The exit status of a child that found, right after `fork`, that its spawner had already died
/// (see [`die_with_parent`]).
pub const ORPHANED_AT_BIRTH: i32 = 125;

/// Makes the child that `command` spawns die by SIGKILL when its parent dies — even by SIGKILL,
/// which no cleanup code of the parent survives (`PR_SET_PDEATHSIG` in the child, before
/// `exec`; it survives `exec` of a program that is not set-user-ID).
///
/// The parent can die between `fork` and that `prctl`, leaving the child already orphaned and
/// the death signal never sent; so the child then compares `getppid()` with the spawner's pid
/// and exits at once with [`ORPHANED_AT_BIRTH`] when they differ.
///
/// The kernel sends the signal when the parent *thread* that forked the child exits, not only
/// when the whole process does: spawn from a thread that lives at least as long as the child
/// (e.g. the thread that then waits for it), never from a short-lived helper thread. The
/// setting is not inherited by the child's own children.
pub fn die_with_parent(command: &mut Command) -> &mut Command {
    let spawner = process::getpid();
    let arm = move || {
        // rustix's calls are raw system calls: no allocation, no lock, async-signal-safe.
        process::set_parent_process_death_signal(Some(Signal::KILL))?;
        if process::getppid() != Some(spawner) {
            // SAFETY: _exit has no preconditions and ends the child at once, running nothing.
            unsafe { libc::_exit(ORPHANED_AT_BIRTH) }
        }
        Ok(())
    };
    // SAFETY: the closure runs in the child between fork and exec, where the parent's other
    // threads may have left locks held, so only async-signal-safe code may run: it makes the
    // raw prctl and getppid system calls (rustix's error is an errno, converted to an `Os`
    // io::Error without allocating), may call _exit, and reads one captured pid; it allocates
    // nothing, takes no lock and touches no other memory.
    unsafe { command.pre_exec(arm) }
}

/// Makes the calling process a "child subreaper" (`prctl(PR_SET_CHILD_SUBREAPER)`): orphaned
/// descendants are re-parented to it instead of to init, so [`wait_child`](crate::wait_child)
/// can reap (and account for) grandchildren that a `--cmd` left behind. `false` turns it off.
pub fn set_child_subreaper(on: bool) -> Result<(), SysError> {
    let me = on.then(process::getpid);
    process::set_child_subreaper(me).map_err(|e| SysError::Syscall {
        call: "prctl(PR_SET_CHILD_SUBREAPER)",
        errno: e.into(),
        fix: None,
    })
}

/// The calling thread's id (`gettid`).
pub fn gettid() -> i32 {
    rustix::thread::gettid().as_raw_nonzero().get()
}

/// The parent's pid through the C library's `getppid()`, as will-it-scale's `getppid1` and
/// every real program call it: always a system call (glibc and musl never cache it), plus the
/// call into the library and its return — which, on a kernel that refills the return stack
/// buffer on the way out (a Spectre v2 mitigation), mispredicts (what that costs:
/// docs/notes/workloads.md); `null_syscall` counts the call the way programs pay for it.
#[inline]
pub fn getppid() -> i32 {
    i32::try_from(std::os::unix::process::parent_id()).unwrap_or(-1)
}

/// Gives up the CPU (`sched_yield`).
#[inline]
pub fn sched_yield() {
    rustix::thread::sched_yield();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fork_is_refused_in_the_multi_threaded_test_harness() {
        // Guarantee a second thread even if the harness runs this test on the main thread.
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let helper = std::thread::spawn(move || rx.recv());
        let err = fork_single_threaded().unwrap_err();
        drop(tx);
        helper.join().unwrap().ok();
        match &err {
            SysError::NotSingleThreaded { threads } => assert!(*threads >= 2),
            other => panic!("unexpected error {other}"),
        }
        let text = err.to_string();
        assert!(
            text.starts_with("fork: refused") && text.contains("Command"),
            "{text}"
        );
    }

    #[test]
    fn thread_count_parses_proc_status() {
        assert_eq!(
            parse_thread_count("Name:\tx\nThreads:\t7\nSigQ:\t0/1\n"),
            Some(7)
        );
        assert_eq!(parse_thread_count("Name:\tx\n"), None);
        assert!(thread_count().unwrap() >= 1);
    }

    #[test]
    fn identity_calls_agree_with_std() {
        assert_eq!(getppid(), std::os::unix::process::parent_id() as i32);
        let main_tid = gettid();
        let other_tid = std::thread::spawn(gettid).join().unwrap();
        assert!(main_tid > 0 && other_tid > 0 && main_tid != other_tid);
        sched_yield();
    }

    #[test]
    fn a_command_child_dies_with_the_thread_that_spawned_it() {
        // The spawning thread ends while the child sleeps: the death signal kills the child.
        let pid = std::thread::spawn(|| {
            let mut sleep = Command::new("/bin/sleep");
            sleep.arg("30");
            die_with_parent(&mut sleep).spawn().unwrap().id() as i32
        })
        .join()
        .unwrap();
        let started = std::time::Instant::now();
        let exit = crate::wait_child(pid).unwrap();
        assert_eq!(exit.status, crate::ExitKind::Signaled(libc::SIGKILL, false));
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
        // A child whose spawner lives runs normally.
        let mut sh = Command::new("/bin/sh");
        sh.args(["-c", "exit 7"]);
        let out = die_with_parent(&mut sh).status().unwrap();
        assert_eq!(out.code(), Some(7));
    }

    #[test]
    fn invalid_death_signal_is_rejected() {
        let err = set_parent_death_signal(1000).unwrap_err();
        assert!(err.to_string().contains("not a valid signal"), "{err}");
        assert!(set_parent_death_signal(-1).is_err());
        // 0 clears the setting: harmless for the test process.
        set_parent_death_signal(0).unwrap();
    }
}
