//! Decoding of the scheduler's switch and wake-up records, and their pairing into blocked
//! episodes.
//!
//! A traced task going off CPU in a blocked state (`sched:sched_switch` with `prev_state` not
//! running) opens an episode with its call chains; the first `sched:sched_wakeup` naming the
//! thread afterwards is when it stopped being blocked (from then on it waits for a CPU, which
//! the run-queue delay already counts); its next switch-in (`PERF_RECORD_SWITCH`) closes the
//! episode, at the wake-up when one was seen, else at the switch-in. A switch out of a
//! preempted (runnable) task opens nothing: that is run-queue wait, not blocked time.
//!
//! [`IdleTally`] checks the tracing itself, per CPU: a CPU that traced tasks left idle again
//! and again without one wake-up recorded in its idle task's context is a CPU whose kernel
//! records nothing while it idles (seen on this project's KVM guest), so the episodes of tasks
//! woken there end at their switch-in. Pure: no system calls here, so it is tested on
//! synthetic records.

use std::collections::{BTreeMap, HashMap};

use crate::trace_ring::PERF_CONTEXT_MAX;

/// `prev_state` bits that mean blocked (`TASK_REPORT`: S, D, T, t, X, Z, P, I); `TASK_REPORT_MAX`
/// (0x100, printed `R+`) is a preempted task, and 0 one that yielded while runnable.
const BLOCKED_STATES: u64 = 0xff;
/// `PERF_CONTEXT_KERNEL` and `PERF_CONTEXT_USER` call chain markers.
const CONTEXT_KERNEL: u64 = -128i64 as u64;
const CONTEXT_USER: u64 = -512i64 as u64;

/// True when a `sched_switch` `prev_state` is a blocked state, not a preemption or a yield.
pub(crate) fn is_blocked(prev_state: u64) -> bool {
    prev_state & BLOCKED_STATES != 0
}

/// Splits a raw call chain at its context markers into (kernel, user) frames.
pub(crate) fn split_chain(raw: &[u64]) -> (Vec<u64>, Vec<u64>) {
    let (mut kernel, mut user) = (Vec::new(), Vec::new());
    let mut in_user = false;
    for &ip in raw {
        match ip {
            CONTEXT_KERNEL => in_user = false,
            CONTEXT_USER => in_user = true,
            ip if ip >= PERF_CONTEXT_MAX => {}
            ip if in_user => user.push(ip),
            ip => kernel.push(ip),
        }
    }
    (kernel, user)
}

/// A decoded scheduler record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SchedEvent {
    /// A traced task went off CPU blocked, with its interned kernel and user chains.
    Blocked {
        state: u64,
        kernel_chain: u32,
        user_chain: u32,
        /// The CPU went idle (`next_pid` 0): nothing else was runnable there.
        into_idle: bool,
    },
    /// Thread `tid` was woken (any CPU, any waker; the record's own `tid` is the waker's
    /// context, 0 for a wake-up taken while the CPU idled).
    Wakeup { tid: u32 },
    /// A traced task was switched in.
    SwitchIn,
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

/// One blocked episode of one thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockedEpisode {
    /// The thread's process (thread group) id.
    pub pid: u32,
    /// The thread.
    pub tid: u32,
    /// The CPU it went off.
    pub cpu: u32,
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
    /// Index of the kernel call chain (innermost first) in [`OffCpuTrace::chains`].
    pub kernel_chain: u32,
    /// Index of the user call chain (innermost first) in [`OffCpuTrace::chains`].
    pub user_chain: u32,
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
    pub maps: HashMap<u32, Vec<crate::MappedFile>>,
    /// Records the kernel dropped because a ring buffer was full.
    pub lost: u64,
    /// Samples that could not be decoded.
    pub malformed: u64,
    /// Per CPU that traced tasks left idle or that recorded a wake-up while idle, by CPU.
    pub idle_cpus: Vec<IdleCpu>,
}

/// A traced task's blocking switches that left a CPU idle, against the wake-ups the CPU
/// recorded in its idle task's context.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IdleCpu {
    /// The CPU.
    pub cpu: u32,
    /// Blocking switches of traced tasks to the idle task there.
    pub went_idle: u64,
    /// `sched_wakeup` records taken there in the idle task's context (of any thread).
    pub idle_wakeups: u64,
}

impl IdleCpu {
    /// Idle entries without one idle wake-up that make a CPU [`silent`](IdleCpu::silent). A
    /// kernel that traces its idle task records a wake-up there for nearly every idle entry
    /// (the interrupt, timer or wake-up IPI that ends the idle wakes a task in the idle task's
    /// context), so a hundred without one is no accident of timing.
    pub const SILENT_MIN: u64 = 100;

    /// True when this CPU's kernel recorded nothing while it idled: the wake-ups of tasks
    /// blocked there (by interrupts taken while idle) are missing, and their episodes end at
    /// the switch-in.
    pub fn silent(&self) -> bool {
        self.went_idle >= Self::SILENT_MIN && self.idle_wakeups == 0
    }
}

/// Counts, per CPU, [`IdleCpu::went_idle`] and [`IdleCpu::idle_wakeups`] over every decoded
/// record (before wake-ups of untraced threads are dropped).
#[derive(Debug, Default)]
pub(crate) struct IdleTally {
    cpus: BTreeMap<u32, IdleCpu>,
}

impl IdleTally {
    pub(crate) fn note(&mut self, e: &TimedSched) {
        let went_idle = matches!(
            e.event,
            SchedEvent::Blocked {
                into_idle: true,
                ..
            }
        );
        let idle_wakeup = matches!(e.event, SchedEvent::Wakeup { .. }) && e.tid == 0;
        if !went_idle && !idle_wakeup {
            return;
        }
        let cpu = self.cpus.entry(e.cpu).or_insert(IdleCpu {
            cpu: e.cpu,
            ..IdleCpu::default()
        });
        cpu.went_idle += u64::from(went_idle);
        cpu.idle_wakeups += u64::from(idle_wakeup);
    }

    pub(crate) fn into_cpus(self) -> Vec<IdleCpu> {
        self.cpus.into_values().collect()
    }
}

#[derive(Debug, Clone, Copy)]
struct Open {
    pid: u32,
    cpu: u32,
    begin: u64,
    wake: Option<u64>,
    state: u64,
    kernel_chain: u32,
    user_chain: u32,
}

/// Pairs merged records into episodes.
#[derive(Debug, Default)]
pub(crate) struct SchedPairing {
    open: HashMap<u32, Open>,
    pub(crate) episodes: Vec<BlockedEpisode>,
}

impl SchedPairing {
    /// Feeds records, which must be in timestamp order.
    pub(crate) fn feed(&mut self, e: &TimedSched) {
        match e.event {
            SchedEvent::Blocked {
                state,
                kernel_chain,
                user_chain,
                into_idle: _,
            } => {
                // A thread blocks once at a time: a stale episode (its switch-in was lost) is
                // replaced.
                self.open.insert(
                    e.tid,
                    Open {
                        pid: e.pid,
                        cpu: e.cpu,
                        begin: e.time,
                        wake: None,
                        state,
                        kernel_chain,
                        user_chain,
                    },
                );
            }
            SchedEvent::Wakeup { tid } => {
                if let Some(o) = self.open.get_mut(&tid) {
                    o.wake.get_or_insert(e.time);
                }
            }
            SchedEvent::SwitchIn => {
                if let Some(o) = self.open.remove(&e.tid) {
                    self.episodes.push(Self::episode(e.tid, o, Some(e.time)));
                }
            }
        }
    }

    fn episode(tid: u32, o: Open, switch_in: Option<u64>) -> BlockedEpisode {
        BlockedEpisode {
            pid: o.pid,
            tid,
            cpu: o.cpu,
            state: o.state,
            begin: o.begin,
            end: o.wake.or(switch_in).unwrap_or(u64::MAX),
            woken: o.wake.is_some(),
            kernel_chain: o.kernel_chain,
            user_chain: o.user_chain,
        }
    }

    /// Ends the pairing: episodes still open are kept, ending at their wake-up or never.
    pub(crate) fn close(mut self) -> Vec<BlockedEpisode> {
        let mut open: Vec<(u32, Open)> = self.open.drain().collect();
        open.sort_by_key(|(tid, o)| (o.begin, *tid));
        for (tid, o) in open {
            self.episodes.push(Self::episode(tid, o, None));
        }
        self.episodes
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
        into_idle: false,
    };

    #[test]
    fn an_episode_runs_from_the_switch_out_to_the_wakeup_not_the_switch_in() {
        let mut p = SchedPairing::default();
        for e in [
            ev(10, 7, BLOCKED),
            ev(25, 99, SchedEvent::Wakeup { tid: 7 }),
            ev(30, 99, SchedEvent::Wakeup { tid: 7 }), // a second wake-up changes nothing
            ev(40, 7, SchedEvent::SwitchIn),
            ev(50, 8, BLOCKED),
            ev(60, 8, SchedEvent::SwitchIn), // wake-up not seen: ends at the switch-in
            ev(70, 9, SchedEvent::SwitchIn), // no episode open: nothing
            ev(80, 7, BLOCKED),
        ] {
            p.feed(&e);
        }
        let eps = p.close();
        let spans: Vec<(u32, u64, u64)> = eps.iter().map(|e| (e.tid, e.begin, e.end)).collect();
        assert_eq!(spans, [(7, 10, 25), (8, 50, 60), (7, 80, u64::MAX)]);
        let woken: Vec<bool> = eps.iter().map(|e| e.woken).collect();
        assert_eq!(
            woken,
            [true, false, false],
            "only the first ends at a wake-up"
        );
        assert_eq!(eps[2].blocked_within(0, 100), 20);
        assert_eq!(eps[0].blocked_within(20, 100), 5);
        assert_eq!(eps[0].blocked_within(30, 100), 0);
    }

    #[test]
    fn a_cpu_left_idle_again_and_again_with_no_idle_wake_up_is_silent() {
        let idle = SchedEvent::Blocked {
            state: 2,
            kernel_chain: 0,
            user_chain: 1,
            into_idle: true,
        };
        let on = |cpu: u32, e: TimedSched| TimedSched { cpu, ..e };
        let mut tally = IdleTally::default();
        for k in 0..IdleCpu::SILENT_MIN {
            // CPU 0: each idle entry ends in a wake-up taken in the idle task's context.
            tally.note(&on(0, ev(k, 7, idle)));
            tally.note(&on(0, ev(k, 0, SchedEvent::Wakeup { tid: 7 })));
            // CPU 1: idle entries, and wake-ups only from running tasks.
            tally.note(&on(1, ev(k, 8, idle)));
            tally.note(&on(1, ev(k, 55, SchedEvent::Wakeup { tid: 8 })));
            // CPU 2: busy, never idle; CPU 3: idle, but too rarely to tell.
            tally.note(&on(2, ev(k, 9, BLOCKED)));
        }
        tally.note(&on(3, ev(1, 10, idle)));
        let cpus = tally.into_cpus();
        let of = |c: u32| cpus.iter().find(|i| i.cpu == c).copied();
        assert_eq!(
            of(0),
            Some(IdleCpu {
                cpu: 0,
                went_idle: 100,
                idle_wakeups: 100
            })
        );
        assert_eq!(
            of(1),
            Some(IdleCpu {
                cpu: 1,
                went_idle: 100,
                idle_wakeups: 0
            })
        );
        assert_eq!(of(2), None, "a CPU never left idle is not counted");
        let silent: Vec<u32> = cpus.iter().filter(|c| c.silent()).map(|c| c.cpu).collect();
        assert_eq!(silent, [1], "{cpus:?}");
    }

    #[test]
    fn preemption_and_yield_are_not_blocked() {
        assert!(is_blocked(1) && is_blocked(2) && is_blocked(0x80));
        assert!(!is_blocked(0x100), "R+ (preempted) is run-queue wait");
        assert!(!is_blocked(0), "R (yield) is run-queue wait");
    }

    #[test]
    fn chains_split_at_their_context_markers() {
        let raw = [
            CONTEXT_KERNEL,
            0xffff_0001,
            0xffff_0002,
            CONTEXT_USER,
            0x5501,
            0x5502,
        ];
        assert_eq!(
            split_chain(&raw),
            (vec![0xffff_0001, 0xffff_0002], vec![0x5501, 0x5502])
        );
        assert_eq!(split_chain(&[]), (vec![], vec![]));
    }
}
