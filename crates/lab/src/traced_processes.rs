//! Whose events a tracing session (`--locks`, `--offcpu`) keeps, and where their user
//! addresses are named.
//!
//! Two scopes ([`Scope`]): a built-in trial child traces itself and the tasks it creates, and
//! names user addresses in itself (its task processes share its mappings). A command step is
//! traced from scalelab's own thread that then spawns it (so the tracer sees every process of
//! the step from its first instruction): scalelab's own events (and a `perf record` wrapper's)
//! are dropped by process id, and the command's user addresses are named in their own process
//! while it lives, after each drain.

use std::collections::{HashMap, HashSet};

/// Whose events a session keeps, and where user addresses are resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// A built-in trial child: every event of it and its tasks; addresses resolved in it.
    Own,
    /// A command step spawned by the tracing thread: the events of every process but scalelab
    /// (and those [`TracedProcesses::exclude`]d); addresses resolved in each process while it
    /// lives.
    Command,
}

/// User frames resolved ahead, per (pid, address).
pub(crate) type ResolvedFrames = HashMap<(u32, u64), perf::UserFrame>;

/// A session's scope, the processes it drops and the user frames it named while they lived.
#[derive(Debug)]
pub(crate) struct TracedProcesses {
    scope: Scope,
    /// Processes whose events are not the command's (scalelab, a `perf record` wrapper).
    excluded: HashSet<u32>,
    /// With [`Scope::Command`]: user frames resolved while their process lived.
    frames: ResolvedFrames,
}

impl TracedProcesses {
    pub(crate) fn new(scope: Scope) -> TracedProcesses {
        let excluded = match scope {
            Scope::Own => HashSet::new(),
            Scope::Command => HashSet::from([std::process::id()]),
        };
        TracedProcesses {
            scope,
            excluded,
            frames: HashMap::new(),
        }
    }

    /// Drops the events of process `pid` (a `perf record` wrapping the command).
    pub(crate) fn exclude(&mut self, pid: u32) {
        self.excluded.insert(pid);
    }

    /// Whether the events of process `pid` are dropped.
    pub(crate) fn is_excluded(&self, pid: u32) -> bool {
        self.excluded.contains(&pid)
    }

    /// With [`Scope::Command`], names the user addresses of the call chains a drain found new
    /// (pid, chain) in their process, which is still alive now.
    pub(crate) fn name_new_chains(&mut self, chains: Vec<(u32, Vec<u64>)>) {
        if self.scope != Scope::Command {
            return;
        }
        let mut by_pid: HashMap<u32, Vec<u64>> = HashMap::new();
        for (pid, chain) in chains {
            if !self.excluded.contains(&pid) {
                by_pid.entry(pid).or_default().extend(chain);
            }
        }
        for (pid, mut addrs) in by_pid {
            addrs.retain(|a| !self.frames.contains_key(&(pid, *a)));
            let symbols = perf::UserSymbols::resolve(pid, &addrs);
            for a in addrs {
                self.frames.insert((pid, a), symbols.frame(a));
            }
        }
    }

    /// The frames named ahead, for a command step; `None` for a built-in (resolve in this
    /// process).
    pub(crate) fn resolved(&self) -> Option<&ResolvedFrames> {
        (self.scope == Scope::Command).then_some(&self.frames)
    }
}
