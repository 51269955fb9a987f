//! Reaping children with `wait4`: how a child ended ([`ExitKind`]) together with the resource
//! usage of it and its waited-for descendants ([`ChildExit`]) — `make -j{n}`'s whole tree.

use std::fmt;
use std::mem::MaybeUninit;

use crate::error::{Errno, SysError};
use crate::rusage::ResourceUsage;
use crate::signal::signal_name;

/// How a child process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitKind {
    /// It called `exit` with this code.
    Exited(i32),
    /// It was killed by this signal; the flag says whether a core was dumped.
    Signaled(i32, bool),
}

impl ExitKind {
    /// True for `Exited(0)`.
    pub fn success(&self) -> bool {
        matches!(self, ExitKind::Exited(0))
    }

    fn from_status(status: libc::c_int) -> ExitKind {
        if libc::WIFSIGNALED(status) {
            ExitKind::Signaled(libc::WTERMSIG(status), libc::WCOREDUMP(status))
        } else {
            ExitKind::Exited(libc::WEXITSTATUS(status))
        }
    }
}

impl fmt::Display for ExitKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ExitKind::Exited(code) => write!(f, "exited with code {code}"),
            ExitKind::Signaled(signal, core) => {
                write!(f, "killed by {}", signal_name(signal))?;
                if core {
                    write!(f, " (core dumped)")?;
                }
                Ok(())
            }
        }
    }
}

/// A reaped child: how it ended and what it (and its waited-for descendants) used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChildExit {
    /// How it ended.
    pub status: ExitKind,
    /// Its accounting, from `wait4`.
    pub usage: ResourceUsage,
}

/// One `wait4` call; `Ok(None)` when `WNOHANG` found the child still running.
fn wait4(
    pid: i32,
    options: libc::c_int,
    call: &'static str,
) -> Result<Option<ChildExit>, SysError> {
    loop {
        let mut status: libc::c_int = 0;
        let mut raw = MaybeUninit::<libc::rusage>::zeroed();
        // SAFETY: `status` and `raw` are valid, writable, aligned locals that outlive the call;
        // wait4 writes only them.
        let rc = unsafe { libc::wait4(pid, &mut status, options, raw.as_mut_ptr()) };
        if rc == 0 {
            return Ok(None);
        }
        if rc < 0 {
            let errno = Errno::last();
            if errno.0 == libc::EINTR {
                continue;
            }
            return Err(SysError::with_fix(call, errno, |e| match e.0 {
                libc::ECHILD => Some(
                    "no such child: it was already reaped, is not a child of this process, or \
                     SIGCHLD is set to SIG_IGN",
                ),
                _ => None,
            }));
        }
        // SAFETY: a zeroed rusage is valid (all integer fields) and wait4 filled it in.
        let raw = unsafe { raw.assume_init() };
        return Ok(Some(ChildExit {
            status: ExitKind::from_status(status),
            usage: ResourceUsage::from_raw(&raw),
        }));
    }
}

/// Waits for child `pid` to end (`wait4`, retrying on `EINTR`).
pub fn wait_child(pid: i32) -> Result<ChildExit, SysError> {
    match wait4(pid, 0, "wait4")? {
        Some(exit) => Ok(exit),
        None => Err(SysError::InvalidArgument {
            call: "wait4",
            reason: "returned 0 without WNOHANG".to_string(),
        }),
    }
}

/// A child's own CPU time, its descendants' left out, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OwnCpu {
    /// In user mode.
    pub user_ns: u64,
    /// In the kernel.
    pub sys_ns: u64,
}

/// Waits for child `pid` to end, reads its own CPU time while it is still a zombie
/// (`waitid(WEXITED | WNOWAIT)` leaves it unreaped), then reaps it with `wait4`, whose
/// accounting holds it and its waited-for descendants together. The own time is
/// `/proc/PID/schedstat`'s run time (nanoseconds, of its main thread: meant for a
/// single-threaded observer such as `perf record`), split between user and kernel as
/// `/proc/PID/stat`'s tick counts split it; `None` when they cannot be read.
pub fn wait_child_own_cpu(pid: i32) -> Result<(ChildExit, Option<OwnCpu>), SysError> {
    use rustix::process::{Pid, WaitId, WaitIdOptions, waitid};
    let Some(id) = Pid::from_raw(pid) else {
        return Err(SysError::InvalidArgument {
            call: "waitid",
            reason: format!("pid {pid} is not a process id"),
        });
    };
    loop {
        match waitid(
            WaitId::Pid(id),
            WaitIdOptions::EXITED | WaitIdOptions::NOWAIT,
        ) {
            Ok(_) => break,
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => {
                return Err(SysError::with_fix(
                    "waitid",
                    Errno(e.raw_os_error()),
                    |_| None,
                ));
            }
        }
    }
    let own = own_cpu(pid);
    Ok((wait_child(pid)?, own))
}

/// Process `pid`'s own CPU time from `/proc` (see [`wait_child_own_cpu`]).
fn own_cpu(pid: i32) -> Option<OwnCpu> {
    let schedstat = std::fs::read_to_string(format!("/proc/{pid}/schedstat")).ok()?;
    let run: u64 = schedstat.split_whitespace().next()?.parse().ok()?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields 14 and 15 (utime, stime), counted after the parenthesised name.
    let rest = stat.rsplit_once(')')?.1;
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    let user_ns = if utime + stime == 0 {
        0
    } else {
        (run as u128 * u128::from(utime) / u128::from(utime + stime)) as u64
    };
    Some(OwnCpu {
        user_ns,
        sys_ns: run - user_ns,
    })
}

/// Reaps child `pid` if it has ended, without blocking (`wait4(WNOHANG)`).
pub fn try_wait_child(pid: i32) -> Result<Option<ChildExit>, SysError> {
    wait4(pid, libc::WNOHANG, "wait4(WNOHANG)")
}

/// True when some child of this process has ended and waits to be reaped, without reaping it
/// (`waitid(P_ALL, WEXITED | WNOHANG | WNOWAIT)`): one system call however many children
/// there are, where asking each with [`try_wait_child`] is one per child. False when every
/// child still runs, or there is none.
pub fn any_child_ended() -> Result<bool, SysError> {
    use rustix::process::{WaitId, WaitIdOptions, waitid};
    match waitid(
        WaitId::All,
        WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT,
    ) {
        Ok(status) => Ok(status.is_some()),
        Err(rustix::io::Errno::CHILD) => Ok(false),
        Err(e) => Err(SysError::with_fix(
            "waitid",
            Errno(e.raw_os_error()),
            |_| None,
        )),
    }
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;

    #[test]
    fn an_ended_child_is_seen_without_being_reaped() {
        let mut child = Command::new("sleep").arg("0.2").spawn().unwrap();
        let pid = child.id() as i32;
        assert!(try_wait_child(pid).unwrap().is_none());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !any_child_ended().unwrap() {
            assert!(std::time::Instant::now() < deadline, "sleep did not end");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        // Not reaped: wait4 still finds it, once.
        assert!(try_wait_child(pid).unwrap().is_some());
        let _ = child.try_wait();
    }

    #[test]
    #[expect(
        clippy::zombie_processes,
        reason = "reaped by wait_child_own_cpu, the code under test"
    )]
    fn a_childs_own_cpu_leaves_out_the_descendants_it_waited_for() {
        // The outer shell forks an inner one that burns CPU, and waits for it (`; :` keeps
        // it from exec'ing the inner one).
        let child = Command::new("/bin/sh")
            .args([
                "-c",
                "/bin/sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done'; :",
            ])
            .spawn()
            .unwrap();
        let (exit, own) = wait_child_own_cpu(child.id() as i32).unwrap();
        assert!(exit.status.success());
        let own = own.expect("the zombie's /proc entries");
        let tree = exit.usage.cpu().as_nanos() as u64;
        let mine = own.user_ns + own.sys_ns;
        assert!(tree > 20_000_000, "the inner loop burned CPU: {tree} ns");
        assert!(
            mine * 10 < tree,
            "the outer shell's own {mine} ns against the tree's {tree} ns"
        );
    }

    #[test]
    fn exit_kind_decodes_and_prints() {
        assert_eq!(ExitKind::from_status(3 << 8), ExitKind::Exited(3));
        assert_eq!(
            ExitKind::from_status(libc::SIGKILL),
            ExitKind::Signaled(libc::SIGKILL, false)
        );
        assert_eq!(
            ExitKind::from_status(libc::SIGSEGV | 0x80),
            ExitKind::Signaled(libc::SIGSEGV, true)
        );
        assert_eq!(ExitKind::Exited(3).to_string(), "exited with code 3");
        assert_eq!(
            ExitKind::Signaled(libc::SIGSEGV, true).to_string(),
            "killed by SIGSEGV (core dumped)"
        );
        assert!(ExitKind::Exited(0).success() && !ExitKind::Exited(1).success());
    }

    #[test]
    #[expect(
        clippy::zombie_processes,
        reason = "reaped by wait_child, the code under test"
    )]
    fn waits_for_a_spawned_child_and_reports_its_usage() {
        // The child burns a little CPU in a shell loop so its usage is non-zero.
        let child = Command::new("/bin/sh")
            .args([
                "-c",
                "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done; exit 7",
            ])
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let exit = wait_child(pid).unwrap();
        assert_eq!(exit.status, ExitKind::Exited(7));
        assert!(
            exit.usage.cpu() > std::time::Duration::ZERO,
            "{:?}",
            exit.usage
        );
        assert!(exit.usage.max_rss_kib > 0);
    }

    #[test]
    #[expect(
        clippy::zombie_processes,
        reason = "reaped by wait_child, the code under test"
    )]
    fn try_wait_sees_a_running_child_then_its_signal() {
        let child = Command::new("/bin/sleep").arg("30").spawn().unwrap();
        let pid = child.id() as i32;
        assert_eq!(try_wait_child(pid).unwrap(), None);
        crate::send_signal(pid, libc::SIGKILL).unwrap();
        let exit = wait_child(pid).unwrap();
        assert_eq!(exit.status, ExitKind::Signaled(libc::SIGKILL, false));
    }

    #[test]
    fn waiting_for_a_stranger_names_the_cause() {
        let err = wait_child(1).unwrap_err();
        let text = err.to_string();
        assert!(
            text.starts_with("wait4: ") && text.contains("ECHILD"),
            "{text}"
        );
    }
}
