//! What the lock tracers return ([`LockTrace`]: waits, per-lock sums, the sampling tally) and
//! the pairing of lock and futex events into waits.
//!
//! `lock:contention_begin`/`end` pair per (thread, lock address), a nested begin keeping the
//! first one (as `perf lock` does); a futex wait entry pairs with the same thread's next exit.
//! Events arrive merged in time order ([`crate::trace::pairing`]). Pure: no system calls, tested
//! on synthetic events.

use std::collections::HashMap;

use perf_read::unwind::MappedFile;

/// A decoded sample of one of the four tracepoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LockEvent {
    Begin { lock: u64, flags: u32, chain: u32 },
    End { lock: u64 },
    FutexEnter { uaddr: u64, op: u32, chain: u32 },
    FutexExit { ret: i64 },
}

/// One event with the sample's thread and CLOCK_MONOTONIC time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TimedEvent {
    pub time: u64,
    /// The sample's process (thread group) id.
    pub pid: u32,
    pub tid: u32,
    pub event: LockEvent,
}

impl crate::trace::pairing::Stamped for TimedEvent {
    fn time(&self) -> u64 {
        self.time
    }
}

/// A kernel lock wait: from `contention_begin` to `contention_end` of one thread on one lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelWait {
    /// The waiting thread's process (thread group) id.
    pub pid: u32,
    /// The waiting thread.
    pub tid: u32,
    /// The lock's kernel address.
    pub lock: u64,
    /// `LCB_F_*` flags of the begin event (lock type).
    pub flags: u32,
    /// When the wait began (`contention_begin`), CLOCK_MONOTONIC nanoseconds.
    pub begin: u64,
    /// When it ended (`contention_end`), CLOCK_MONOTONIC nanoseconds.
    pub end: u64,
    /// Index of the kernel call chain in [`LockTrace::chains`].
    pub chain: u32,
    /// How many waits it stands for: 1 when every wait is traced (the perf tracer), `k` when
    /// it was sampled 1 in `k` (the in-kernel tracer, whose [`LockTrace::totals`] are exact).
    pub weight: u32,
}

/// A futex wait: one `futex(FUTEX_WAIT…)` system call, entry to exit (the perf tracer), or
/// one sleep inside it, its blocking switch to its switch back in (the in-kernel tracer, which
/// does not see a call that returned without sleeping: [`crate::BpfLockTracer`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FutexWait {
    /// The waiting thread's process (thread group) id.
    pub pid: u32,
    /// The waiting thread.
    pub tid: u32,
    /// The futex word's user address.
    pub uaddr: u64,
    /// The futex op as passed (with `FUTEX_PRIVATE_FLAG`/`FUTEX_CLOCK_REALTIME`).
    pub op: u32,
    /// System call entry (or the blocking switch), CLOCK_MONOTONIC nanoseconds.
    pub begin: u64,
    /// System call exit (or the switch back in), CLOCK_MONOTONIC nanoseconds.
    pub end: u64,
    /// The system call's return value (0, or `-EAGAIN` when the word had already changed…);
    /// 0 from the in-kernel tracer, which ends the wait before the call returns.
    pub ret: i64,
    /// Index of the user call chain in [`LockTrace::chains`].
    pub chain: u32,
    /// How many waits it stands for (see [`KernelWait::weight`]).
    pub weight: u32,
}

/// The exact sums of one lock's waits inside the measurement window, counted in the kernel
/// (the in-kernel tracer, [`crate::BpfLockTracer`]): every wait, sampled or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockTotal {
    /// The waiting threads' process.
    pub pid: u32,
    /// A kernel lock (`lock:contention_*`), else a futex.
    pub kernel: bool,
    /// The lock's kernel address, or the futex word's user address.
    pub lock: u64,
    /// A kernel lock's `LCB_F_*` flags, or the futex op as passed.
    pub op: u32,
    /// Waits that ended inside the window.
    pub count: u64,
    /// Their summed time, ns.
    pub sum: u64,
    /// The longest, ns.
    pub max: u64,
    /// The shortest, ns.
    pub min: u64,
}

/// What the in-kernel tracer counted and sampled, over the whole trace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LockSamplingTally {
    /// Waits of traced threads that ended (any time).
    pub waits: u64,
    /// Of them, those that ended inside the window and are in [`LockTrace::totals`].
    pub counted: u64,
    /// Waits recorded with their call chains.
    pub sampled: u64,
    /// Waits picked for a chain that the ring buffer had no room for.
    pub sample_lost: u64,
    /// Waits inside the window not summed: the kernel's table of locks was full.
    pub totals_full: u64,
    /// Threads created by traced ones but not traced: the kernel's table was full.
    pub threads_untraced: u64,
    /// Kernel waits not timed: more locks waited for at once than the program keeps.
    pub nested_full: u64,
    /// Sampled futex waits whose user stack copy was shorter than the full copy.
    pub short_stacks: u64,
    /// Spinning kernel waits dropped as unpaired: their thread switched between the begin and
    /// the end, which a spinning wait never does (one of the two was not seen).
    pub stale_spins: u64,
    /// The lowest sampled waits a second per CPU the drain lowered the tracer to, when it fell
    /// behind (`drain_pace`); `None` when it kept up at the rate set.
    pub rate_lowered_to: Option<u64>,
}

impl KernelWait {
    /// How long the thread waited, in nanoseconds (0 if the end precedes the begin).
    pub fn wait(&self) -> u64 {
        self.end.saturating_sub(self.begin)
    }
}

impl FutexWait {
    /// How long the system call waited, in nanoseconds (0 if the exit precedes the entry).
    pub fn wait(&self) -> u64 {
        self.end.saturating_sub(self.begin)
    }
}

/// Every wait seen, with interned call chains and the losses.
#[derive(Debug, Clone, Default)]
pub struct LockTrace {
    /// Kernel lock waits, in the order they ended.
    pub kernel: Vec<KernelWait>,
    /// Futex waits, in the order they returned.
    pub futex: Vec<FutexWait>,
    /// Call chains, innermost frame first, context markers removed. A futex wait's chain is
    /// unwound from the user stack copy with the binaries' unwind information
    /// (`LockTraceConfig::stack_size`), or by frame pointer where that found less.
    pub chains: Vec<Vec<u64>>,
    /// The executable mappings of each process with futex waits, as read while tracing, so
    /// that its addresses can be named after it has exited ([`UserSymbols::resolve_mapped`]).
    ///
    /// [`UserSymbols::resolve_mapped`]: crate::UserSymbols::resolve_mapped
    pub maps: HashMap<u32, Vec<MappedFile>>,
    /// Samples the kernel dropped because a ring buffer was full.
    pub lost: u64,
    /// Begins or futex entries still open when tracing stopped, and ends without a begin (the
    /// in-kernel tracer: sampled futex waits whose end was not read).
    pub unpaired: u64,
    /// Futex wait entries the tracer read, of every traced process, over its whole life.
    pub futex_seen: u64,
    /// Futex wait entries the kernel counted over the same life (a counting event beside the
    /// sampled one, which no full ring buffer can lose): `futex_seen` against it is the share
    /// of the waits the trace saw. `None` when the counter could not be opened.
    pub futex_counted: Option<u64>,
    /// The exact per-lock sums of the in-kernel tracer, whose [`kernel`](Self::kernel) and
    /// [`futex`](Self::futex) waits are then a sample, each standing for its `weight`; `None`
    /// from the perf tracer, whose waits are every one seen.
    pub totals: Option<Vec<LockTotal>>,
    /// The in-kernel tracer's counts; `None` from the perf tracer.
    pub sampling: Option<LockSamplingTally>,
    /// The in-kernel tracer's programs' own time in the traced threads' context inside the
    /// window (estimated: [`ProgramRuns`](crate::ProgramRuns)); `None` from the perf tracer.
    pub programs_ns: Option<u64>,
    /// Its share in each thread alive at both of the window's edges, by thread id (estimated:
    /// [`ProgramRuns::thread_ns`](crate::ProgramRuns::thread_ns)); empty from the perf
    /// tracer, or where the window's edges were not read.
    pub thread_programs_ns: std::collections::HashMap<u32, u64>,
}

/// Pairs merged events into waits.
#[derive(Debug, Default)]
pub(crate) struct Pairing {
    open_locks: HashMap<(u32, u64), (u64, u32, u32)>,
    open_futex: HashMap<u32, (u32, u64, u64, u32, u32)>,
    pub(crate) kernel: Vec<KernelWait>,
    pub(crate) futex: Vec<FutexWait>,
    pub(crate) unmatched_ends: u64,
}

impl Pairing {
    /// Feeds events, which must be in timestamp order.
    pub(crate) fn feed(&mut self, e: &TimedEvent) {
        match e.event {
            LockEvent::Begin { lock, flags, chain } => {
                self.open_locks
                    .entry((e.tid, lock))
                    .or_insert((e.time, flags, chain));
            }
            LockEvent::End { lock } => match self.open_locks.remove(&(e.tid, lock)) {
                Some((begin, flags, chain)) => self.kernel.push(KernelWait {
                    pid: e.pid,
                    tid: e.tid,
                    lock,
                    flags,
                    begin,
                    end: e.time,
                    chain,
                    weight: 1,
                }),
                None => self.unmatched_ends += 1,
            },
            LockEvent::FutexEnter { uaddr, op, chain } => {
                // A thread is in one system call at a time: a stale entry (its exit was lost)
                // is replaced.
                self.open_futex
                    .insert(e.tid, (e.pid, e.time, uaddr, op, chain));
            }
            LockEvent::FutexExit { ret } => {
                // Exits of the futex calls the filter dropped (wakes) have no entry: not waits.
                if let Some((pid, begin, uaddr, op, chain)) = self.open_futex.remove(&e.tid) {
                    self.futex.push(FutexWait {
                        pid,
                        tid: e.tid,
                        uaddr,
                        op,
                        begin,
                        end: e.time,
                        ret,
                        chain,
                        weight: 1,
                    });
                }
            }
        }
    }

    /// Waits still open (begun, never ended).
    pub(crate) fn still_open(&self) -> u64 {
        (self.open_locks.len() + self.open_futex.len()) as u64
    }
}

impl crate::trace::pairing::Pairing for Pairing {
    type Record = TimedEvent;

    fn feed(&mut self, record: &TimedEvent) {
        Pairing::feed(self, record);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(time: u64, tid: u32, event: LockEvent) -> TimedEvent {
        TimedEvent {
            time,
            pid: tid,
            tid,
            event,
        }
    }

    #[test]
    fn begins_and_ends_pair_per_thread_and_lock_keeping_the_first_begin() {
        let mut p = Pairing::default();
        let begin = |lock, chain| LockEvent::Begin {
            lock,
            flags: 4,
            chain,
        };
        for e in [
            ev(10, 1, begin(0xa, 0)),
            ev(12, 2, begin(0xa, 1)),
            ev(15, 1, begin(0xa, 2)), // nested: ignored
            ev(20, 1, LockEvent::End { lock: 0xa }),
            ev(30, 2, LockEvent::End { lock: 0xa }),
            ev(31, 3, LockEvent::End { lock: 0xb }),
            ev(40, 4, begin(0xc, 0)),
        ] {
            p.feed(&e);
        }
        assert_eq!(p.kernel.len(), 2);
        assert_eq!(
            (p.kernel[0].tid, p.kernel[0].wait(), p.kernel[0].chain),
            (1, 10, 0)
        );
        assert_eq!((p.kernel[1].tid, p.kernel[1].wait()), (2, 18));
        assert_eq!(p.unmatched_ends, 1);
        assert_eq!(p.still_open(), 1);
    }

    #[test]
    fn futex_exits_without_a_filtered_entry_are_not_waits() {
        let mut p = Pairing::default();
        p.feed(&ev(5, 7, LockEvent::FutexExit { ret: 1 }));
        p.feed(&ev(
            10,
            7,
            LockEvent::FutexEnter {
                uaddr: 0x1000,
                op: 128,
                chain: 3,
            },
        ));
        p.feed(&ev(25, 7, LockEvent::FutexExit { ret: 0 }));
        assert_eq!(p.futex.len(), 1);
        assert_eq!(
            (p.futex[0].uaddr, p.futex[0].wait(), p.futex[0].chain),
            (0x1000, 15, 3)
        );
    }
}
