//! The scheduler's records as the off-CPU perf tracer decodes them, and what both off-CPU
//! tracers return ([`OffCpuTrace`]: blocked episodes, thread lives, idle CPUs).
//!
//! A blocking switch (`sched_switch` with `prev_state` blocked) opens an episode; the first
//! wake-up of the thread afterwards ends its blocked time; its next switch-in closes it (at the
//! switch-in when no wake-up was seen). A preemption opens nothing. [`IdleTally`] finds CPUs that
//! record nothing while they idle. Pure: no system calls, tested on synthetic records. Where a
//! silent CPU was seen: `docs/notes/perf-tracers.md`.

use std::collections::{BTreeMap, HashMap};

/// `prev_state` bits that mean blocked (`TASK_REPORT`: S, D, T, t, X, Z, P, I); `TASK_REPORT_MAX`
/// (0x100, printed `R+`) is a preempted task, and 0 one that yielded while runnable.
const BLOCKED_STATES: u64 = 0xff;

/// True when a `sched_switch` `prev_state` is a blocked state, not a preemption or a yield.
pub(crate) fn is_blocked(prev_state: u64) -> bool {
    prev_state & BLOCKED_STATES != 0
}

/// A decoded scheduler record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SchedEvent {
    /// A traced task went off CPU blocked, with its interned kernel and user chains, and task
    /// `next_tid` got the CPU (this sample is written as it is picked, before the context
    /// switch record and after the kernel began charging it CPU).
    Blocked {
        state: u64,
        kernel_chain: u32,
        user_chain: u32,
        next_tid: u32,
    },
    /// The record's task left its CPU, preempted or yielding (still runnable) or not (it
    /// blocks, and a `Blocked` record came just before, unless it was lost), and the task
    /// `next_tid` got the CPU (written as it was picked: when it starts to be charged CPU).
    SwitchOut {
        preempt: bool,
        next_pid: u32,
        next_tid: u32,
    },
    /// Thread `tid` was woken (any CPU, any waker; the record's own pid and `tid` are the
    /// waker's context — the interrupted task when it ran in an interrupt, 0 for a wake-up
    /// taken while the CPU idled — and `chain` the interned kernel chain of the wake-up).
    Wakeup { tid: u32, chain: u32 },
    /// Thread `tid` is being woken (`sched_waking`, in `try_to_wake_up` itself): the record's
    /// pid, `tid` and `chain` are the real waker's, also where the wake-up is then queued to
    /// another CPU and its `Wakeup` record written there, in an interrupt, without them.
    Waking { tid: u32, chain: u32 },
    /// The record's task was switched in (written after the switch and perf's own work for
    /// it: it counts only where the switch-out record naming the task is missing).
    SwitchIn,
    /// The record's thread was created by thread `parent` (`fork`, `clone`).
    Fork { parent: u32 },
    /// The record's thread exited (the kernel records nothing of it after this).
    Exit,
}

/// Who ended a blocked episode: the context its wake-up ran in and the wake-up's kernel chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Waker {
    /// The process of the task the wake-up ran in (the interrupted one when it ran in an
    /// interrupt; 0 on an idle CPU).
    pub pid: u32,
    /// That task's thread id.
    pub tid: u32,
    /// Index of the wake-up's kernel call chain (innermost first) in [`OffCpuTrace::chains`]:
    /// `futex_wake`, a timer's `hrtimer_wakeup`, an I/O completion, an exit.
    pub chain: u32,
}

/// One record with its thread and CLOCK_MONOTONIC time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TimedSched {
    pub time: u64,
    pub pid: u32,
    pub tid: u32,
    /// The CPU the record was taken on.
    pub cpu: u32,
    pub event: SchedEvent,
}

impl crate::trace::pairing::Stamped for TimedSched {
    fn time(&self) -> u64 {
        self.time
    }
}

/// One blocked episode of one thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockedEpisode {
    /// The thread's process (thread group) id.
    pub pid: u32,
    /// The thread.
    pub tid: u32,
    /// `prev_state` of the switch out (1 = S, interruptible sleep; 2 = D, uninterruptible).
    pub state: u64,
    /// When it went off CPU, CLOCK_MONOTONIC nanoseconds.
    pub begin: u64,
    /// When it was woken (or switched in, when its wake-up was not seen); `u64::MAX` when it
    /// had not been woken when tracing stopped.
    pub end: u64,
    /// Whether `end` is its wake-up. When no `sched_wakeup` record named the thread (the
    /// kernel traced none: seen for I/O waits on a VM), `end` is the switch-in, and the
    /// episode includes the wait for a CPU after the wake-up.
    pub woken: bool,
    /// Who woke it, when its wake-up was recorded.
    pub waker: Option<Waker>,
    /// Index of the kernel call chain (innermost first) in [`OffCpuTrace::chains`]
    /// (`u32::MAX`: none, its blocking switch's record was lost).
    pub kernel_chain: u32,
    /// Index of the user call chain (innermost first) in [`OffCpuTrace::chains`] (`u32::MAX`:
    /// none).
    pub user_chain: u32,
    /// How many episodes this one stands for: 1 when every episode is recorded (the perf
    /// tracer), `k` when its chains were sampled 1 in `k` (the in-kernel accounting).
    pub weight: u32,
}

impl BlockedEpisode {
    /// Blocked nanoseconds inside `[start, end]`.
    pub fn blocked_within(&self, start: u64, end: u64) -> u64 {
        self.end.min(end).saturating_sub(self.begin.max(start))
    }
}

/// Every blocked episode seen, with interned call chains and the losses.
#[derive(Debug, Clone, Default)]
pub struct OffCpuTrace {
    /// Episodes, in the order they ended (those still open last).
    pub episodes: Vec<BlockedEpisode>,
    /// Call chains, innermost frame first, context markers removed.
    pub chains: Vec<Vec<u64>>,
    /// The executable mappings of each process with episodes, as read while tracing.
    pub maps: HashMap<u32, Vec<perf_read::MappedFile>>,
    /// Records the kernel dropped because a ring buffer was full.
    pub lost: u64,
    /// Samples that could not be decoded.
    pub malformed: u64,
    /// Per CPU, how often it went idle against the wake-ups it recorded while idle (empty when
    /// idle entries could not be counted).
    pub idle_cpus: Vec<IdleCpu>,
    /// Every traced thread's time: on a CPU, waiting for one, blocked, from its creation (or
    /// first record) to its exit (or the end).
    pub threads: Vec<ThreadLife>,
    /// The name of each thread that woke a traced one and is not traced itself (a kernel
    /// thread such as `jbd2/vda1-8` or `kworker/1:2`, another program), read while it lived.
    pub wakers: HashMap<u32, WakerName>,
    /// Records that did not fit their thread's state (after a lost record): the gap went
    /// unaccounted.
    pub out_of_step: u64,
    /// Switch-ins of traced threads taken from their own switch-in record, no context switch
    /// record having named them as they were picked (a CPU leaving idle records none on this
    /// project's VM), against all their switch-ins: those run from a little after the kernel
    /// starts charging them CPU.
    pub late_switch_ins: (u64, u64),
    /// The in-kernel accounting's sampling counts (`None` from the perf tracer, which records
    /// every episode).
    pub sampling: Option<super::sampling::SamplingTally>,
    /// The in-kernel tracer's programs' own time in the traced threads' context inside the
    /// window (estimated: [`ProgramRuns`](crate::ProgramRuns)); `None` from the perf tracer.
    pub programs_ns: Option<u64>,
    /// Who held the CPUs while the traced threads waited for one, inside the window, most
    /// first (the in-kernel tracer; empty from the perf tracer).
    pub runq_holders: Vec<RunqHolder>,
}

/// A process that held a CPU while traced threads waited for it: their wait for a CPU
/// during its stints on that CPU.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RunqHolder {
    /// Its process id (0: the idle task, a CPU coming out of idle).
    pub pid: u32,
    /// The `comm` of its thread seen first.
    pub comm: String,
    /// True for a kernel thread.
    pub kernel_thread: bool,
    /// The traced threads' wait for a CPU while it ran, ns.
    pub ns: u64,
}

/// A waker outside the traced threads, named.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WakerName {
    /// Its `comm`.
    pub comm: String,
    /// True for a kernel thread (a child of `kthreadd`).
    pub kernel_thread: bool,
}

/// A CPU's switches to its idle task (by any task) during the trace, against the wake-ups it
/// recorded in its idle task's context.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IdleCpu {
    /// The CPU.
    pub cpu: u32,
    /// Switches to the idle task there (`sched_switch` with `next_pid` 0, counted).
    pub went_idle: u64,
    /// `sched_wakeup` records taken there in the idle task's context (of any thread).
    pub idle_wakeups: u64,
}

impl IdleCpu {
    /// Idle entries without one idle wake-up that make a CPU [`silent`](IdleCpu::silent). A CPU
    /// leaves idle for a task woken there, and a kernel that traces its idle task records
    /// that wake-up in the idle task's context (an interrupt taken while idle, or the wake-up
    /// IPI of a task queued to an idle CPU), so a hundred idle entries without one such record
    /// is no accident of timing.
    pub const SILENT_MIN: u64 = 100;

    /// True when this CPU's kernel recorded nothing while it idled: the wake-ups it took then
    /// are missing, whichever CPU the woken task runs on.
    pub fn silent(&self) -> bool {
        self.went_idle >= Self::SILENT_MIN && self.idle_wakeups == 0
    }
}

/// Counts, per CPU, the wake-ups recorded in the idle task's context over every decoded record
/// (before wake-ups of untraced threads are dropped); [`IdleTally::with_idle_entries`] joins
/// them with each CPU's counted idle entries.
#[derive(Debug, Default)]
pub(crate) struct IdleTally {
    idle_wakeups: BTreeMap<u32, u64>,
}

impl IdleTally {
    pub(crate) fn note(&mut self, e: &TimedSched) {
        if matches!(e.event, SchedEvent::Wakeup { .. }) && e.tid == 0 {
            *self.idle_wakeups.entry(e.cpu).or_default() += 1;
        }
    }

    /// One [`IdleCpu`] per `(cpu, idle entries)`.
    pub(crate) fn with_idle_entries(&self, entries: &[(u32, u64)]) -> Vec<IdleCpu> {
        entries
            .iter()
            .map(|&(cpu, went_idle)| IdleCpu {
                cpu,
                went_idle,
                idle_wakeups: self.idle_wakeups.get(&cpu).copied().unwrap_or(0),
            })
            .collect()
    }
}

/// One thread's time while traced.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ThreadLife {
    /// Its process (thread group).
    pub pid: u32,
    /// The thread.
    pub tid: u32,
    /// The thread that created it (its `fork`/`clone`), when that was traced.
    pub parent: Option<u32>,
    /// A kernel thread traced from its first wake-up of a traced thread on (the in-kernel
    /// tracer's [`follow_kernel_wakers`](crate::BpfOffCpuConfig::follow_kernel_wakers)), not
    /// one the traced threads created.
    pub kernel_waker: bool,
    /// Its name: the last `comm` recorded for it (empty when none was).
    pub comm: String,
    /// When it was first traced (its creation, or its first record), CLOCK_MONOTONIC ns.
    pub begin: u64,
    /// When it exited; `None` when it was alive when tracing stopped.
    pub end: Option<u64>,
    /// Nanoseconds on a CPU.
    pub on_cpu: u64,
    /// Nanoseconds runnable, waiting for a CPU (preempted, yielded, woken or new).
    pub runq: u64,
    /// Nanoseconds blocked (from the blocking switch to the wake-up, or to the switch-in when
    /// no wake-up was recorded).
    pub blocked: u64,
    /// Nanoseconds on a CPU that the hypervisor took from it (steal: its wall-clock time on a
    /// CPU beyond its CPU time), as the in-kernel tracer measures it; 0 from the perf tracer,
    /// whose time on a CPU is wall-clock time and holds it.
    pub stolen: u64,
    /// Nanoseconds of its CPU time that the in-kernel off-CPU tracer's own programs took,
    /// run in its context (estimated: [`ProgramRuns::thread_ns`](crate::ProgramRuns::thread_ns));
    /// 0 from the perf tracer.
    pub programs: u64,
}

impl ThreadLife {
    /// Its traced life: its parts together.
    pub fn life(&self) -> u64 {
        self.on_cpu + self.runq + self.blocked + self.stolen
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(time: u64, tid: u32, event: SchedEvent) -> TimedSched {
        TimedSched {
            time,
            pid: 1,
            tid,
            cpu: 0,
            event,
        }
    }
    const BLOCKED: SchedEvent = SchedEvent::Blocked {
        state: 1,
        kernel_chain: 0,
        user_chain: 1,
        next_tid: 0,
    };

    #[test]
    fn a_cpu_that_went_idle_again_and_again_with_no_idle_wake_up_is_silent() {
        let on = |cpu: u32, e: TimedSched| TimedSched { cpu, ..e };
        let mut tally = IdleTally::default();
        for k in 0..IdleCpu::SILENT_MIN {
            // CPU 0: wake-ups taken in the idle task's context (tid 0).
            tally.note(&on(0, ev(k, 0, SchedEvent::Wakeup { tid: 7, chain: 0 })));
            // CPU 1: wake-ups only from running tasks; blocking switches count nothing here.
            tally.note(&on(1, ev(k, 55, SchedEvent::Wakeup { tid: 8, chain: 0 })));
            tally.note(&on(1, ev(k, 8, BLOCKED)));
        }
        let cpus = tally.with_idle_entries(&[(0, 100), (1, 100), (2, 0), (3, 99)]);
        let idle = |cpu: u32, went_idle: u64, idle_wakeups: u64| IdleCpu {
            cpu,
            went_idle,
            idle_wakeups,
        };
        assert_eq!(
            cpus,
            [
                idle(0, 100, 100),
                idle(1, 100, 0),
                idle(2, 0, 0),
                idle(3, 99, 0)
            ]
        );
        let silent: Vec<u32> = cpus.iter().filter(|c| c.silent()).map(|c| c.cpu).collect();
        assert_eq!(
            silent,
            [1],
            "CPU 2 never idle, CPU 3 idle too rarely to tell"
        );
    }

    #[test]
    fn preemption_and_yield_are_not_blocked() {
        assert!(is_blocked(1) && is_blocked(2) && is_blocked(0x80));
        assert!(!is_blocked(0x100), "R+ (preempted) is run-queue wait");
        assert!(!is_blocked(0), "R (yield) is run-queue wait");
    }
}
