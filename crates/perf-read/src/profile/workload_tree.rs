//! Which processes of a `perf record … -- program` file are the wrapped program's: perf forks
//! its child, names it `perf-exec` until it execs the program, and records that name (a
//! synthesized COMM, before any sample) whether it traces the child alone or every CPU (`-a`).
//! The program is the first process so named to exec; its tree is it and every process it and
//! its descendants fork (FORK records, in time order). A recording of every CPU also holds
//! every other process's samples and records; a per-task one holds the tree alone.
//!
//! A file with no `perf-exec` (recorded without `-- program`, or by another tool) names no
//! program: then every process counts as its, unless the reader names the program's processes
//! itself ([`WorkloadTree::with_roots`]: the servers of a system under test, sampled on every
//! CPU beside a command).

use rustc_hash::FxHashSet;

/// The wrapped program's processes, followed record by record.
#[derive(Debug, Default)]
pub(super) struct WorkloadTree {
    /// Processes named `perf-exec`: perf's child before its exec.
    forked: FxHashSet<i32>,
    /// The program's process, once it exec'd.
    root: Option<i32>,
    /// It and its descendants so far.
    members: FxHashSet<i32>,
    /// The program's processes were named by the reader ([`Self::with_roots`]).
    named: bool,
}

impl WorkloadTree {
    /// The program is processes `roots` (running when the recording began) and what they
    /// fork, whatever perf's own child does.
    pub(super) fn with_roots(roots: &[u32]) -> WorkloadTree {
        let members: FxHashSet<i32> = roots.iter().map(|&p| p as i32).collect();
        WorkloadTree {
            forked: FxHashSet::default(),
            root: roots.first().map(|&p| p as i32),
            members,
            named: true,
        }
    }

    /// A COMM record: process `pid` named `name`, by an exec or not (named roots stay the
    /// program).
    pub(super) fn comm(&mut self, pid: i32, name: &[u8], exec: bool) {
        if self.named {
            return;
        }
        if !exec && name == b"perf-exec" {
            self.forked.insert(pid);
        } else if exec && self.root.is_none() && self.forked.contains(&pid) {
            self.root = Some(pid);
            self.members.insert(pid);
        }
    }

    /// A FORK record: `pid` forked by `ppid` (a new thread has `pid == ppid`).
    pub(super) fn fork(&mut self, pid: i32, ppid: i32) {
        if pid != ppid && self.members.contains(&ppid) {
            self.members.insert(pid);
        }
    }

    /// The program's process, once it exec'd.
    pub(super) fn root(&self) -> Option<i32> {
        self.root
    }

    /// Whether the file names no program (no `perf-exec` so far).
    pub(super) fn names_no_program(&self) -> bool {
        !self.named && self.forked.is_empty()
    }

    /// Whether process `pid`'s samples are the program's: a member of its tree, or any
    /// process when the file names no program. Before the program's exec, perf's child is
    /// still perf's code, and no other process is the program's.
    pub(super) fn holds(&self, pid: i32) -> bool {
        self.names_no_program() || self.members.contains(&pid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_roots_are_the_program_with_what_they_fork_and_nothing_else() {
        let mut t = WorkloadTree::with_roots(&[500, 510]);
        t.comm(30834, b"perf-exec", false);
        t.comm(30834, b"pgbench", true);
        t.fork(520, 500);
        t.fork(521, 520);
        t.fork(700, 30834);
        for pid in [500, 510, 520, 521] {
            assert!(t.holds(pid), "{pid}");
        }
        for pid in [30834, 700, 1] {
            assert!(!t.holds(pid), "{pid}");
        }
    }

    #[test]
    fn the_program_is_perfs_child_after_its_exec_with_every_process_it_forks() {
        let mut t = WorkloadTree::default();
        // A recording of every CPU: perf's child, and other processes that exec and fork.
        t.comm(30834, b"perf-exec", false);
        t.comm(700, b"cron", true);
        assert!(!t.holds(30834), "perf's child before its exec is perf's");
        assert!(!t.holds(700));
        t.comm(30834, b"sh", true);
        assert_eq!(t.root(), Some(30834));
        t.fork(30835, 30834);
        t.fork(30835, 30835);
        t.fork(30836, 30835);
        t.fork(701, 700);
        t.comm(30835, b"dd", true);
        for pid in [30834, 30835, 30836] {
            assert!(t.holds(pid), "{pid}");
        }
        assert!(!t.holds(700) && !t.holds(701) && !t.holds(0));
        // A later perf-exec that execs is not the program.
        t.comm(900, b"perf-exec", false);
        t.comm(900, b"other", true);
        assert_eq!(t.root(), Some(30834));
        assert!(!t.holds(900));
    }

    #[test]
    fn a_file_without_perfs_child_holds_every_process() {
        let mut t = WorkloadTree::default();
        t.comm(5, b"dd", true);
        t.fork(6, 5);
        assert_eq!(t.root(), None);
        assert!(t.holds(5) && t.holds(6) && t.holds(1234));
    }
}
