//! Which scalelab a process belongs to, and the rules every child of scalelab is started by.
//!
//! [`adopt`] prepares each `Command` scalelab spawns: it dies with scalelab (the parent-death
//! signal, [`sys::die_with_parent`]), scalelab is a child subreaper (so the child's descendants
//! that escape it — double fork, `setsid` — are re-parented to scalelab, where
//! [`Leftovers`](super::leftovers::Leftovers) finds them), and it carries the environment
//! variable [`OWNER_VAR`], which every descendant inherits:
//!
//! `SCALELAB_OWNER=<pid>:<start>:<pidns>:<spawn>` — the owning scalelab's pid, its start time
//! (clock ticks after boot, from `/proc/PID/stat`, so a reused pid is not mistaken for it), its
//! pid namespace (the inode of `/proc/self/ns/pid`) and a number unique to the spawn within
//! that scalelab.
//!
//! A process whose owner has died was left behind ([`find_orphans`]): `run` and `ab` report
//! such processes before they measure anything, since they compete for the CPUs. Marks from
//! another pid namespace are not judged: the pid there means nothing here.

use std::fmt;
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use model::warnings::Warning;
use sys::proc_table;

/// The environment variable that marks every process scalelab starts, and their descendants.
pub(crate) const OWNER_VAR: &str = "SCALELAB_OWNER";

/// One scalelab process, named so that a later pid reuse cannot pass for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Owner {
    pub pid: i32,
    /// Start time, clock ticks after boot.
    pub start: u64,
    /// Inode of the owner's pid namespace.
    pub pid_ns: u64,
}

impl Owner {
    /// This process.
    pub(crate) fn current() -> Owner {
        static CURRENT: OnceLock<Owner> = OnceLock::new();
        *CURRENT.get_or_init(|| {
            let pid = std::process::id() as i32;
            Owner {
                pid,
                start: proc_table::stat(pid).map_or(0, |s| s.start),
                pid_ns: proc_table::pid_namespace().unwrap_or(0),
            }
        })
    }

    /// Whether this process still runs (judged only in this pid namespace; elsewhere assumed).
    pub(crate) fn is_alive(&self) -> bool {
        if Some(self.pid_ns) != proc_table::pid_namespace() {
            return true;
        }
        proc_table::stat(self.pid).is_some_and(|s| s.start == self.start && !s.is_zombie())
    }
}

impl fmt::Display for Owner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.pid, self.start, self.pid_ns)
    }
}

impl std::str::FromStr for Owner {
    type Err = String;

    fn from_str(s: &str) -> Result<Owner, String> {
        let bad = || format!("`{s}` is not an owner (PID:START:PIDNS)");
        let mut parts = s.split(':');
        let mut next = || parts.next().ok_or_else(bad);
        Ok(Owner {
            pid: next()?.parse().map_err(|_| bad())?,
            start: next()?.parse().map_err(|_| bad())?,
            pid_ns: next()?.parse().map_err(|_| bad())?,
        })
    }
}

/// The mark of one spawned child: its owner and the spawn's number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Mark {
    pub owner: Owner,
    pub spawn: u64,
}

impl Mark {
    /// A mark no earlier spawn of this process had.
    pub(crate) fn next() -> Mark {
        static SPAWNS: AtomicU64 = AtomicU64::new(1);
        Mark {
            owner: Owner::current(),
            spawn: SPAWNS.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// The mark `pid` carries, if any.
    pub(crate) fn of(pid: i32) -> Option<Mark> {
        Mark::parse(&proc_table::env_var(pid, OWNER_VAR)?)
    }

    /// The mark this process was started with, if any.
    pub(crate) fn of_self() -> Option<Mark> {
        Mark::parse(&std::env::var(OWNER_VAR).ok()?)
    }

    fn parse(value: &str) -> Option<Mark> {
        let (owner, spawn) = value.rsplit_once(':')?;
        Some(Mark {
            owner: owner.parse().ok()?,
            spawn: spawn.parse().ok()?,
        })
    }
}

impl fmt::Display for Mark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.owner, self.spawn)
    }
}

/// Prepares `command` as every child of scalelab is started (see the module doc) and returns
/// its mark. Spawn it from a thread that outlives it — the one that waits for it — since the
/// parent-death signal fires when the spawning *thread* ends.
pub(crate) fn adopt(command: &mut Command) -> Mark {
    // Without it, escaped descendants go to init and only their mark could find them. It fails
    // only on kernels before 3.4, where the process group is all that can be killed.
    let _ = sys::set_child_subreaper(true);
    let mark = Mark::next();
    command.env(OWNER_VAR, mark.to_string());
    sys::die_with_parent(command);
    mark
}

/// For a child whose parent is not scalelab itself (the trial child under `perf record`):
/// arms the parent-death signal, then checks that the owner in its mark still runs — had the
/// parent already died, the signal would never come. Err when the owner is gone.
pub fn die_with_owner() -> Result<(), String> {
    sys::set_parent_death_signal(libc::SIGKILL).map_err(|e| e.to_string())?;
    match Mark::of_self() {
        Some(mark) if !mark.owner.is_alive() => Err(format!(
            "the scalelab that started this process (pid {}) has exited",
            mark.owner.pid
        )),
        _ => Ok(()),
    }
}

/// A process left running by a scalelab that has died.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Orphan {
    pub pid: i32,
    pub cmdline: String,
    pub owner: Owner,
}

/// Every live process in this pid namespace whose mark names an owner that has died.
pub(crate) fn find_orphans() -> Vec<Orphan> {
    let me = std::process::id() as i32;
    let ns = proc_table::pid_namespace();
    let mut orphans = Vec::new();
    for pid in proc_table::all_pids() {
        if pid == me || proc_table::stat(pid).is_none_or(|s| s.is_zombie()) {
            continue;
        }
        let Some(mark) = Mark::of(pid) else { continue };
        if Some(mark.owner.pid_ns) == ns && !mark.owner.is_alive() {
            orphans.push(Orphan {
                pid,
                cmdline: proc_table::cmdline(pid, 80),
                owner: mark.owner,
            });
        }
    }
    orphans
}

/// The warning for processes left running by scalelabs that died, if there are any.
pub(crate) fn left_running_warning() -> Option<Warning> {
    let orphans = find_orphans();
    (!orphans.is_empty()).then(|| Warning::LeftRunning {
        processes: orphans.into_iter().map(|o| (o.pid, o.cmdline)).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_round_trip_and_name_this_process() {
        let a = Mark::next();
        let b = Mark::next();
        assert_ne!(a, b);
        assert_eq!(a.owner, Owner::current());
        assert_eq!(Mark::parse(&a.to_string()), Some(a));
        assert_eq!(a.owner.to_string().parse::<Owner>(), Ok(a.owner));
        assert!(Mark::parse("1:2:x:4").is_none() && Mark::parse("").is_none());
        assert!(Owner::current().is_alive());
        let reused = Owner {
            start: Owner::current().start + 1,
            ..Owner::current()
        };
        assert!(
            !reused.is_alive(),
            "same pid, other start time: another process"
        );
    }

    #[test]
    fn an_adopted_child_carries_the_mark_and_is_no_orphan_while_its_owner_lives() {
        let mut sleep = Command::new("sleep");
        sleep.arg("30");
        let mark = adopt(&mut sleep);
        let mut child = sleep.spawn().unwrap();
        let pid = child.id() as i32;
        let start = std::time::Instant::now();
        while Mark::of(pid).is_none() && start.elapsed().as_secs() < 5 {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(Mark::of(pid), Some(mark));
        assert!(!find_orphans().iter().any(|o| o.pid == pid));
        child.kill().unwrap();
        child.wait().unwrap();
    }
}
