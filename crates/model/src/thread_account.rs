//! The record of a command's threads over a trial's window: who worked, who supervised, and
//! what each group's time was spent on (kept with the off-CPU report, in
//! [`OffCpuReport::threads`](crate::record::OffCpuReport::threads)).
//!
//! A built-in's tasks are its workers. A command's tree is not all workers: the shell wrapper
//! waits in `wait4`, a `main` in `pthread_join`, a benchmark's parent for its clients. Each
//! thread is given a [`ThreadRole`] (decided in `offcpu::roles`, the rule stated there and in
//! [`ThreadRole::rule`]); threads of one role, name and reason are kept as one
//! [`ThreadGroup`], so a build of thousands of compiler processes stays a handful of rows.

use serde::{Deserialize, Serialize};

use crate::nanos::Nanos;

/// What a thread was to the work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThreadRole {
    /// Did the work: its whole life is task time, its waits are causes.
    Worker,
    /// Started threads or processes of the tree and spent most of its life waiting for them:
    /// its waiting is not task time and never a cause; its CPU is.
    Supervisor,
    /// Did nothing in the window: blocked from its first wait to the end, never woken, next to
    /// no CPU (a parked pool thread). Treated as a supervisor.
    Idle,
    /// A thread of a server of the system under test (`--server`, `--attach`, and what they
    /// started): not the command's, so none of its time is task time and its waits are no
    /// causes of their own; a worker's wait that it ended is followed into what it did.
    Server,
    /// A kernel thread that woke the traced threads (jbd2, a kworker, ksoftirqd), traced from
    /// then on: as a server's, its time is not the command's, and a wait it ended is followed
    /// into what it did.
    Kernel,
}

impl ThreadRole {
    /// The rule that gives this role, in one sentence.
    pub fn rule(self) -> &'static str {
        match self {
            ThreadRole::Worker => "neither supervising nor idle",
            ThreadRole::Supervisor => {
                "started threads or processes of the command and was blocked for at least half of its life, at least half of that waiting for them (wait4/waitid, woken by one of them — a join, a condition they signalled — or by a timer while they ran)"
            }
            ThreadRole::Idle => {
                "blocked for at least 90% of its life and never woken, under 1% of it on a CPU"
            }
            ThreadRole::Server => {
                "of a process given by --server or --attach, or started by one; its time is not the command's, and a worker's wait it ended is followed into what it was doing"
            }
            ThreadRole::Kernel => {
                "a kernel thread that woke a traced thread, traced from then on; its time is not the command's, and a worker's wait it ended is followed into what it was doing"
            }
        }
    }

    /// The role's name as the output shows it.
    pub fn name(self) -> &'static str {
        match self {
            ThreadRole::Worker => "worker",
            ThreadRole::Supervisor => "supervising",
            ThreadRole::Idle => "idle",
            ThreadRole::Server => "server",
            ThreadRole::Kernel => "kernel",
        }
    }
}

/// Threads of one role and name over the window, summed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadGroup {
    /// Their role.
    pub role: ThreadRole,
    /// Their name (`comm`).
    pub comm: String,
    /// How many threads.
    pub threads: u32,
    /// Their lives inside the window, summed: `on_cpu + runq + blocked + stolen`.
    pub life: Nanos,
    /// On a CPU.
    pub on_cpu: Nanos,
    /// Runnable, waiting for a CPU.
    pub runq: Nanos,
    /// Blocked.
    pub blocked: Nanos,
    /// On a CPU that the hypervisor took from them (steal), where the in-kernel tracer measured
    /// it: neither CPU time, nor a wait for a CPU, nor blocked.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stolen: Nanos,
    /// The part of `blocked` spent waiting for the threads they started: a supervisor's (its
    /// progress timer's sleeps too), a worker's waits for them alone — neither is task time.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub waiting_for_started: Nanos,
    /// Of `on_cpu`, that of the threads that ended a wait of the command's threads themselves
    /// in the window (a server's or kernel thread that served the clients: a backend). The
    /// rest of a server's CPU is of threads that served nobody then, its background work (a
    /// checkpointer, a WAL writer, an autovacuum worker).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cpu_serving: Nanos,
    /// The first few thread ids, to find them in a profile or trace.
    pub tids: Vec<u32>,
}

fn is_zero(n: &Nanos) -> bool {
    n.0 == 0
}

/// A trial's threads, summed by role: what the accounting reads.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RoleTotals {
    /// Threads that worked.
    pub workers: u32,
    /// Their lives inside the window.
    pub worker_life: u64,
    /// Supervising and idle threads.
    pub others: u32,
    /// Their lives.
    pub other_life: u64,
    /// Their CPU and run-queue wait (task time: their waiting is not).
    pub other_busy: u64,
    /// Every thread's run-queue wait.
    pub runq: u64,
    /// Every thread's time on a CPU, as the trace saw it.
    pub on_cpu: u64,
    /// The workers' blocked time.
    pub worker_blocked: u64,
}

impl RoleTotals {
    /// Sums `groups` by role.
    pub fn of(groups: &[ThreadGroup]) -> RoleTotals {
        let mut t = RoleTotals::default();
        for g in groups {
            // A server's time is its own, outside the command's accounting (wait4's).
            if matches!(g.role, ThreadRole::Server | ThreadRole::Kernel) {
                continue;
            }
            t.runq += g.runq.0;
            t.on_cpu += g.on_cpu.0;
            match g.role {
                ThreadRole::Worker => {
                    // A worker's waits for what it started are the started threads' time.
                    t.workers += g.threads;
                    t.worker_life += g.life.0 - g.waiting_for_started.0.min(g.life.0);
                    t.worker_blocked += g.blocked.0 - g.waiting_for_started.0.min(g.blocked.0);
                }
                ThreadRole::Server | ThreadRole::Kernel => {}
                ThreadRole::Supervisor | ThreadRole::Idle => {
                    t.others += g.threads;
                    t.other_life += g.life.0;
                    t.other_busy += g.on_cpu.0 + g.runq.0;
                }
            }
        }
        t
    }

    /// Task time: the workers' lives and the others' CPU and run-queue wait.
    pub fn task_time(&self) -> u64 {
        self.worker_life + self.other_busy
    }
}
