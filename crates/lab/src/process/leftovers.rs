//! Ending what a command step or a trial child left running once it ended or was killed: its
//! process group, and the descendants that left the group (`setsid`, double fork) — scalelab is
//! a child subreaper ([`adopt`](super::owner::adopt)), so those were re-parented to it and are
//! found among its children by their [`Mark`] — along with everything below them. All of them
//! are killed (SIGKILL: a background job that ignores SIGTERM must not outlive its trial) and
//! the ones that became scalelab's children are reaped.
//!
//! A process that escaped *and* cleared its environment before its parent died cannot be told
//! apart from a stranger and is left alone.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use super::owner::Mark;
use sys::proc_table;

/// How long the kill-and-reap rounds may take before giving up on a process that will not die
/// (one stuck in uninterruptible sleep).
const LIMIT: Duration = Duration::from_secs(2);

/// A bound on one process tree, against a fork bomb outrunning the rounds.
const MAX_TREE: usize = 100_000;

/// What one spawned child may leave behind.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Leftovers {
    /// The child itself, reaped by its own waiter, never here.
    pub leader: i32,
    /// The child's process group (the child was spawned with `process_group(0)`).
    pub pgid: i32,
    /// The child's mark, inherited by its descendants.
    pub mark: Mark,
}

impl Leftovers {
    /// Kills everything left (see the module doc) and reaps what became scalelab's children;
    /// returns how many processes were killed.
    pub(crate) fn kill(&self) -> usize {
        let me = std::process::id() as i32;
        let started = Instant::now();
        let mut killed = BTreeSet::new();
        loop {
            // ESRCH (the group is gone) is the normal case.
            let _ = sys::send_signal(-self.pgid, libc::SIGKILL);
            let ours: Vec<i32> = proc_table::children(me)
                .into_iter()
                .filter(|&pid| pid != self.leader && self.left_by_child(pid, &killed))
                .collect();
            if ours.is_empty() {
                return killed.len();
            }
            for &pid in &ours {
                let mut tree = proc_table::descendants(pid, MAX_TREE);
                tree.push(pid);
                for p in tree {
                    let _ = sys::send_signal(p, libc::SIGKILL);
                    killed.insert(p);
                }
            }
            for &pid in &ours {
                // Reaps it once it has died; a later round retries the ones still dying.
                let _ = sys::try_wait_child(pid);
            }
            if started.elapsed() > LIMIT {
                return killed.len();
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Whether scalelab's child `pid` comes from this spawn: killed in an earlier round (now a
    /// zombie to reap), still in the group, or carrying the mark.
    fn left_by_child(&self, pid: i32, killed: &BTreeSet<i32>) -> bool {
        killed.contains(&pid)
            || proc_table::stat(pid).is_some_and(|s| s.pgrp == self.pgid)
            || Mark::of(pid) == Some(self.mark)
    }
}
