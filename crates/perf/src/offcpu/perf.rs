//! [`OffCpuTracer`]: when the calling thread and every thread and process it creates afterwards
//! block, for how long and in what call chain, from the scheduler's tracepoints read through
//! per-CPU perf ring buffers and fed, in time order, to [`crate::offcpu::timeline`].
//!
//! Open it before the tasks exist and drain it every 10 ms or so. It follows only the tree it
//! was opened in, decodes only its own records and owns its fds (closed on drop). Which ring
//! holds which record, and what was measured: `docs/notes/perf-tracers.md`.

use std::collections::{HashMap, HashSet};

use perf_event::events::Tracepoint;
use perf_event::{Builder, Clock, Counter, SampleFlag, Sampler};

use crate::offcpu::events::{
    IdleCpu, IdleTally, OffCpuTrace, SchedEvent, TimedSched, WakerName, is_blocked,
};
use crate::offcpu::timeline::Timeline;
use crate::offcpu::waker_name::waker_name;
use crate::trace::mappings::{MappingStream, TaskChange, TaskRecord};
use crate::trace::pairing::PairingEngine;
use crate::trace::ring::{
    PERF_RECORD_SAMPLE, PERF_RECORD_SWITCH_CPU_WIDE, TRACER_BUDGET_BYTES, UnwindCache, UnwindState,
    cached_user_chain, online_cpus, ring_bytes, set_filter,
};
use crate::trace::sample::{ChainTable, Field, parse_sample, split_chain};
use crate::trace::stream::{FreshChains, Stream, read_streams};
use crate::trace::tracefs::TracepointFormat;
use crate::tracer::Tracer;
use perf_read::error::PerfError;
use perf_read::unwind::{DEFAULT_STACK_SIZE, REGS_MASK, Unwinder};

/// Frames kept per call chain (kernel and user together).
const MAX_STACK: u16 = 64;
/// Records read from one ring buffer per drain, at most: a drain must end while tasks keep
/// switching (as fast as a pipe ping-pong does).
const MAX_RECORDS_PER_DRAIN: usize = 16384;
/// Kernel frames kept per wake-up chain: enough to reach an interrupt's entry from an I/O
/// completion's wake-up (about 25 deep through virtio and the block layer).
const WAKER_STACK: u16 = 32;
/// `PERF_RECORD_MISC_SWITCH_OUT`.
const MISC_SWITCH_OUT: u16 = 1 << 13;
/// `PERF_RECORD_MISC_SWITCH_OUT_PREEMPT`: switched out while still runnable.
const MISC_SWITCH_OUT_PREEMPT: u16 = 1 << 14;
/// Keeps only switches out of a blocked task (`TASK_REPORT` bits; 0x100 is a preemption).
const BLOCKED_FILTER: &str = "prev_state & 255";
/// Counts only switches to the idle task.
const IDLE_FILTER: &str = "next_pid == 0";

/// What to trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffCpuTraceConfig {
    /// Ring buffer data size of the switch events per CPU, in bytes (a power of two).
    pub buffer_bytes: usize,
    /// Bytes of user stack copied with each blocking switch for unwinding (a multiple of 8 up
    /// to 65528); 0 unwinds by frame pointer only.
    pub stack_size: u32,
}

impl Default for OffCpuTraceConfig {
    fn default() -> Self {
        OffCpuTraceConfig {
            buffer_bytes: 16 << 20,
            stack_size: DEFAULT_STACK_SIZE,
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Switch {
        prev_state: Field,
        next_pid: Field,
    },
    Wakeup {
        pid: Field,
    },
    Waking {
        pid: Field,
    },
    /// The CPU's context switches.
    Cpu,
}

/// Open scheduler tracepoint events with their ring buffers; `Drop` unmaps and closes them.
#[derive(Debug)]
pub struct OffCpuTracer {
    streams: Vec<Stream<Kind>>,
    pending: PairingEngine<Timeline>,
    chains: ChainTable,
    /// Threads the switch event has recorded (traced ones), so that wakers outside them are
    /// named while they live.
    seen: HashSet<u32>,
    /// Wakers outside the traced threads, by thread id.
    wakers: HashMap<u32, WakerName>,
    /// Threads seen blocking: only their wake-ups are kept (the switch buffers are read
    /// before the wake-up buffers, so a thread's first block is known before its wake-up).
    traced: HashSet<u32>,
    lost: u64,
    malformed: u64,
    idle: IdleTally,
    /// Per CPU, the counter of its switches to the idle task; `None` when the kernel refused
    /// the filter (a count of every switch would say nothing).
    idle_entries: Option<Vec<(u32, Counter)>>,
    user_chains: FreshChains,
    unwinder: Unwinder,
    reloaded: Vec<i32>,
    /// Exec, fork and mmap records: mappings of processes gone before their samples drain.
    mappings: MappingStream,
    /// Unwound user chains: a task blocking over and over at one call site (every read of a
    /// pipe ping-pong) is unwound once.
    unwound: UnwindCache,
}

fn field(format: &TracepointFormat, name: &str) -> Result<Field, PerfError> {
    let f = format.field(name)?;
    Ok(Field {
        offset: f.offset,
        size: f.size,
        signed: f.signed,
    })
}

/// Each CPU's ring sizes (blocking switches, wake-ups and wakings, context switches): locked
/// memory stays bounded on big machines, the blocking switches (with stack copies) sharing half
/// of [`TRACER_BUDGET_BYTES`], the wake-ups and the wakings (with kernel chains) an eighth
/// each, the context switches a quarter ([`ring_bytes`]).
fn ring_sizes(config: &OffCpuTraceConfig, cpus: usize) -> (usize, usize, usize) {
    (
        ring_bytes(config.buffer_bytes, cpus, TRACER_BUDGET_BYTES / 2),
        ring_bytes(2 << 20, cpus, TRACER_BUDGET_BYTES / 8),
        ring_bytes(4 << 20, cpus, TRACER_BUDGET_BYTES / 4),
    )
}

/// One CPU's ring of a wake-up tracepoint (`id`), every record with its kernel call chain.
fn open_wake_stream(
    id: u64,
    cpu: usize,
    bytes: usize,
    name: &'static str,
) -> Result<Sampler, PerfError> {
    let mut builder = Builder::new(Tracepoint::with_id(id));
    builder
        .any_pid()
        .one_cpu(cpu)
        .include_kernel()
        .exclude_hv(true)
        .sample_period(1)
        .sample(
            SampleFlag::TID
                | SampleFlag::TIME
                | SampleFlag::CPU
                | SampleFlag::CALLCHAIN
                | SampleFlag::RAW,
        )
        .exclude_callchain_user(true)
        .sample_max_stack(WAKER_STACK)
        .clockid(Clock::MONOTONIC)
        .enabled(true);
    let counter = builder.build().map_err(|e| PerfError::open(name, &e))?;
    counter
        .sampled(bytes)
        .map_err(|e| PerfError::open(name, &e))
}

impl OffCpuTracer {
    /// The ring buffer memory a tracer of `config` locks on a machine of `cpus` online CPUs,
    /// in bytes, its side-band mapping records' rings included.
    pub fn locked_bytes(config: &OffCpuTraceConfig, cpus: usize) -> usize {
        let (switch, wakeup, context) = ring_sizes(config, cpus);
        cpus.max(1) * (switch + 2 * wakeup + context) + MappingStream::locked_bytes(cpus)
    }

    /// Checks, without opening anything, that the scheduler tracepoints exist and their
    /// formats are readable; the error names the fix.
    pub fn check() -> Result<(), PerfError> {
        TracepointFormat::read("sched", "sched_switch")?.field("prev_state")?;
        TracepointFormat::read("sched", "sched_wakeup")?.field("pid")?;
        TracepointFormat::read("sched", "sched_waking")?.field("pid")?;
        Ok(())
    }

    /// Opens the events on the calling thread, inherited by the threads and processes it
    /// creates from now on. Call it from the thread that then creates every task.
    pub fn open(config: &OffCpuTraceConfig) -> Result<OffCpuTracer, PerfError> {
        let switch = TracepointFormat::read("sched", "sched_switch")?;
        let prev_state = field(&switch, "prev_state")?;
        let next_pid = field(&switch, "next_pid")?;
        let wakeup = TracepointFormat::read("sched", "sched_wakeup")?;
        let pid = field(&wakeup, "pid")?;
        let waking = TracepointFormat::read("sched", "sched_waking")?;
        let waking_pid = field(&waking, "pid")?;
        let cpus = online_cpus();
        let mappings = MappingStream::open(&cpus)?;
        let stack_size = config.stack_size.min(perf_read::MAX_STACK_SIZE) & !7;
        let (switch_bytes, wakeup_bytes, context_bytes) = ring_sizes(config, cpus.len());
        let mut streams = Vec::new();
        for &cpu in &cpus {
            let mut flags = SampleFlag::TID
                | SampleFlag::TIME
                | SampleFlag::CPU
                | SampleFlag::CALLCHAIN
                | SampleFlag::RAW;
            if stack_size > 0 {
                flags |= SampleFlag::REGS_USER | SampleFlag::STACK_USER;
            }
            let mut builder = Builder::new(Tracepoint::with_id(switch.id));
            builder
                .observe_self()
                .one_cpu(cpu)
                .inherit(true)
                .include_kernel()
                .exclude_hv(true)
                .sample_period(1)
                .sample(flags)
                .sample_id_all(true)
                .sample_max_stack(MAX_STACK)
                .clockid(Clock::MONOTONIC)
                .enabled(true);
            if stack_size > 0 {
                builder
                    .sample_regs_user(REGS_MASK)
                    .sample_stack_user(stack_size);
            }
            let name = "sched:sched_switch";
            let counter = builder.build().map_err(|e| PerfError::open(name, &e))?;
            // Without the filter (an old kernel refusing `&`), preemptions are dropped here.
            let _ = set_filter(&counter, BLOCKED_FILTER);
            let sampler = counter
                .sampled(switch_bytes)
                .map_err(|e| PerfError::open(name, &e))?;
            streams.push(Stream {
                kind: Kind::Switch {
                    prev_state,
                    next_pid,
                },
                sampler,
            });

            for (id, kind, name) in [
                (wakeup.id, Kind::Wakeup { pid }, "sched:sched_wakeup"),
                (
                    waking.id,
                    Kind::Waking { pid: waking_pid },
                    "sched:sched_waking",
                ),
            ] {
                streams.push(Stream {
                    kind,
                    sampler: open_wake_stream(id, cpu, wakeup_bytes, name)?,
                });
            }

            let mut builder = Builder::new(perf_event::events::Software::DUMMY);
            builder
                .any_pid()
                .one_cpu(cpu)
                .include_kernel()
                .exclude_hv(true)
                .context_switch(true)
                .sample_id_all(true)
                .sample(SampleFlag::TID | SampleFlag::TIME | SampleFlag::CPU)
                .clockid(Clock::MONOTONIC)
                .enabled(true);
            let name = "context switches (dummy, context_switch)";
            let counter = builder.build().map_err(|e| PerfError::open(name, &e))?;
            let sampler = counter
                .sampled(context_bytes)
                .map_err(|e| PerfError::open(name, &e))?;
            streams.push(Stream {
                kind: Kind::Cpu,
                sampler,
            });
        }
        let idle_entries = open_idle_counters(switch.id, &cpus);
        // Every switch buffer before any wake-up buffer (see `traced`).
        streams.sort_by_key(|s| matches!(s.kind, Kind::Wakeup { .. } | Kind::Waking { .. }));
        Ok(OffCpuTracer {
            streams,
            pending: PairingEngine::default(),
            chains: ChainTable::default(),
            seen: HashSet::new(),
            wakers: HashMap::new(),
            traced: HashSet::new(),
            lost: 0,
            malformed: 0,
            idle: IdleTally::default(),
            idle_entries,
            user_chains: FreshChains::default(),
            unwinder: Unwinder::default(),
            reloaded: Vec::new(),
            mappings,
            unwound: UnwindCache::new(),
        })
    }

    /// Reads up to a bounded number of records from every ring buffer (so that a drain ends
    /// however fast tasks switch: what does not fit waits, or is dropped by the kernel and
    /// counted as lost) and pairs what is old enough to be in order.
    pub fn drain(&mut self) {
        let now = sys::clock_gettime_vdso(sys::ClockId::Monotonic);
        self.reloaded.clear();
        self.apply_side_band();
        self.read_all(MAX_RECORDS_PER_DRAIN);
        self.name_wakers();
        self.pending.settle(now);
    }

    /// Accounts the threads' time only from `from` on (CLOCK_MONOTONIC ns: the window's
    /// start); by default from the first record.
    pub fn account_from(&mut self, from: u64) {
        self.pending.pairing.accrue_from(from);
    }

    /// Accounts the threads' time only up to `until` (the window's end, just passed): the
    /// tasks run on once it closed, and the drains before [`finish_at`](Self::finish_at) read
    /// their records (seen: 1.23 s on a CPU in a 1 s window for a built-in's task).
    pub fn account_until(&mut self, until: u64) {
        self.pending.pairing.accrue_until(until);
    }

    /// Applies the side band's records to the unwinder, and queues its thread creations and
    /// exits for the timeline (their names are applied at once).
    fn apply_side_band(&mut self) {
        for TaskRecord {
            time,
            pid,
            tid,
            what,
        } in self.mappings.apply(&mut self.unwinder)
        {
            let event = match what {
                TaskChange::Fork { parent } => SchedEvent::Fork { parent },
                TaskChange::Exit => SchedEvent::Exit,
                TaskChange::Comm(comm) => {
                    self.pending.pairing.name(pid, tid, &comm, time);
                    continue;
                }
            };
            self.seen.insert(tid);
            self.pending.push(TimedSched {
                time,
                pid,
                tid,
                cpu: 0,
                event,
            });
        }
    }

    /// Names the wakers of kept wake-ups that are not traced threads, while they live (their
    /// `comm`, and whether they are kernel threads).
    fn name_wakers(&mut self) {
        let new: Vec<(u32, u32)> = self
            .pending
            .held()
            .iter()
            .filter(|e| {
                matches!(
                    e.event,
                    SchedEvent::Wakeup { .. } | SchedEvent::Waking { .. }
                )
            })
            .filter(|e| e.tid != 0 && !self.seen.contains(&e.tid))
            .filter(|e| !self.wakers.contains_key(&e.tid))
            .map(|e| (e.pid, e.tid))
            .collect();
        for (pid, tid) in new {
            self.wakers
                .entry(tid)
                .or_insert_with(|| waker_name(pid, tid));
        }
    }

    /// The user call chains of blocking switches first seen (per process) since the last
    /// call, as `(pid, addresses)`: a command's processes may be gone by
    /// [`finish`](OffCpuTracer::finish), so name them while they live.
    pub fn new_user_chains(&mut self) -> Vec<(u32, Vec<u64>)> {
        self.user_chains.take(&self.chains)
    }

    /// Stops tracing and returns every episode seen, and every thread's life up to now.
    pub fn finish(self) -> OffCpuTrace {
        let now = sys::clock_gettime_vdso(sys::ClockId::Monotonic);
        self.finish_at(now)
    }

    /// Stops tracing and returns every episode seen, and every thread's life up to `until`
    /// (CLOCK_MONOTONIC ns, the window's end: later records are not accounted).
    pub fn finish_at(mut self, until: u64) -> OffCpuTrace {
        for s in &mut self.streams {
            s.disable();
        }
        self.mappings.disable();
        self.apply_side_band();
        self.read_all(usize::MAX);
        self.name_wakers();
        let timeline = self.pending.finish(until);
        let out_of_step = timeline.out_of_step;
        let late_switch_ins = timeline.late_switch_ins;
        let (episodes, threads) = timeline.close(until);
        let traced: HashSet<u32> = threads.iter().map(|t| t.tid).collect();
        self.wakers.retain(|tid, _| !traced.contains(tid));
        let pids: std::collections::BTreeSet<u32> = episodes.iter().map(|e| e.pid).collect();
        let maps = self.unwinder.maps_of(pids);
        // A blocking switch's chain begins in the tracepoint's own frame on this kernel
        // (`__traceiter_sched_switch`), which a wait's caller must not be: create_unlink's every
        // rwsem wait was named "from __traceiter_sched_switch" under --tracer perf.
        let mut chains = std::mem::take(&mut self.chains).into_chains();
        crate::bpf::frames::trim_bpf_frames(&mut chains);
        OffCpuTrace {
            episodes,
            chains,
            maps,
            lost: self.lost + self.mappings.lost,
            malformed: self.malformed,
            idle_cpus: self.idle_cpus(),
            threads,
            wakers: std::mem::take(&mut self.wakers),
            out_of_step,
            late_switch_ins,
            sampling: None,
            programs_ns: None,
            runq_holders: Vec::new(),
        }
    }

    /// Per CPU, its counted idle entries against the idle wake-ups recorded (empty when the
    /// idle entries were not counted).
    fn idle_cpus(&mut self) -> Vec<IdleCpu> {
        let Some(counters) = &mut self.idle_entries else {
            return Vec::new();
        };
        let entries: Vec<(u32, u64)> = counters
            .iter_mut()
            .filter_map(|(cpu, c)| Some((*cpu, c.read().ok()?)))
            .collect();
        self.idle.with_idle_entries(&entries)
    }

    fn read_all(&mut self, max_records: usize) {
        let mut deferred: Vec<(Kind, Vec<u8>)> = Vec::new();
        // Out of `self` while read, so that each record can be handed to `self.accept`.
        let mut streams = std::mem::take(&mut self.streams);
        self.lost += read_streams(&mut streams, max_records, |kind, record| {
            let event = match record.ty {
                PERF_RECORD_SAMPLE => {
                    let unwind = UnwindState {
                        unwinder: &mut self.unwinder,
                        reloaded: &mut self.reloaded,
                        defer: true,
                    };
                    let cache = &mut self.unwound;
                    match decode_sample(kind, record.body, &mut self.chains, unwind, cache) {
                        Decoded::Event(e) => e,
                        Decoded::Skip => return,
                        Decoded::Defer { tid } => {
                            // Known as blocking now, so that its wake-up is kept.
                            self.traced.insert(tid);
                            deferred.push((kind, record.body.to_vec()));
                            return;
                        }
                        Decoded::Malformed => {
                            self.malformed += 1;
                            return;
                        }
                    }
                }
                PERF_RECORD_SWITCH_CPU_WIDE => match decode_switch(record.body, record.misc) {
                    Some(e) => e,
                    None => {
                        self.malformed += 1;
                        return;
                    }
                },
                _ => return,
            };
            self.accept(event);
        });
        self.streams = streams;
        if deferred.is_empty() {
            return;
        }
        // Their processes' exec and mmap records were written before them: read them now.
        self.apply_side_band();
        for (kind, body) in deferred {
            let unwind = UnwindState {
                unwinder: &mut self.unwinder,
                reloaded: &mut self.reloaded,
                defer: false,
            };
            match decode_sample(kind, &body, &mut self.chains, unwind, &mut self.unwound) {
                Decoded::Event(e) => self.accept(e),
                Decoded::Skip => {}
                Decoded::Defer { .. } | Decoded::Malformed => self.malformed += 1,
            }
        }
    }

    /// Keeps a decoded event, counted first in the idle tally: a blocking switch marks its
    /// thread traced (its wake-ups are kept from now on) and hands out a new user chain; a
    /// wake-up of an untraced thread is dropped.
    fn accept(&mut self, event: TimedSched) {
        self.idle.note(&event);
        match event.event {
            SchedEvent::Blocked { user_chain, .. } => {
                self.traced.insert(event.tid);
                self.seen.insert(event.tid);
                self.user_chains.note(event.pid, user_chain);
            }
            SchedEvent::Wakeup { tid, .. } | SchedEvent::Waking { tid, .. }
                if !self.traced.contains(&tid) =>
            {
                return;
            }
            _ => {}
        }
        self.pending.push(event);
    }
}

/// One counter per CPU of `sched_switch` to the idle task, by any task; `None` when one cannot
/// be opened or filtered (idle entries are then not counted, and no CPU is judged silent).
fn open_idle_counters(switch_id: u64, cpus: &[usize]) -> Option<Vec<(u32, Counter)>> {
    cpus.iter()
        .map(|&cpu| {
            let mut counter = Builder::new(Tracepoint::with_id(switch_id))
                .any_pid()
                .one_cpu(cpu)
                .include_kernel()
                .exclude_hv(true)
                .enabled(false)
                .build()
                .ok()?;
            set_filter(&counter, IDLE_FILTER).ok()?;
            counter.enable().ok()?;
            Some((cpu as u32, counter))
        })
        .collect()
}

enum Decoded {
    Event(TimedSched),
    /// A preempted switch the filter let through.
    Skip,
    /// A blocking switch of thread `tid` whose user stack waits for its process's mappings
    /// ([`UnwindState::defer`]).
    Defer {
        tid: u32,
    },
    Malformed,
}

fn decode_sample(
    kind: Kind,
    body: &[u8],
    chains: &mut ChainTable,
    mut unwind: UnwindState<'_>,
    cache: &mut UnwindCache,
) -> Decoded {
    let with_stack = matches!(kind, Kind::Switch { .. });
    // A sample without a stack copy has no regs/stack words: try both layouts.
    let Some(s) = parse_sample(body, true, with_stack).or_else(|| parse_sample(body, true, false))
    else {
        return Decoded::Malformed;
    };
    let event = match kind {
        Kind::Switch {
            prev_state,
            next_pid,
        } => {
            let (Some(state), Some(next)) = (prev_state.read(s.raw), next_pid.read(s.raw)) else {
                return Decoded::Malformed;
            };
            if !is_blocked(state) {
                return Decoded::Skip;
            }
            let (kernel, user_fp) = split_chain(&s.callchain);
            let Some(user_chain) = cached_user_chain(
                &s,
                user_fp,
                &mut unwind,
                cache,
                chains,
                usize::from(MAX_STACK),
            ) else {
                return Decoded::Defer { tid: s.tid };
            };
            SchedEvent::Blocked {
                state,
                kernel_chain: chains.intern(kernel.into_iter()),
                user_chain,
                next_tid: next as u32,
            }
        }
        Kind::Wakeup { pid } => match pid.read(s.raw) {
            Some(tid) => SchedEvent::Wakeup {
                tid: tid as u32,
                chain: chains.intern(split_chain(&s.callchain).0.into_iter()),
            },
            None => return Decoded::Malformed,
        },
        Kind::Waking { pid } => match pid.read(s.raw) {
            Some(tid) => SchedEvent::Waking {
                tid: tid as u32,
                chain: chains.intern(split_chain(&s.callchain).0.into_iter()),
            },
            None => return Decoded::Malformed,
        },
        // The dummy event of context switches takes no samples.
        Kind::Cpu => return Decoded::Skip,
    };
    Decoded::Event(TimedSched {
        time: s.time,
        pid: s.pid,
        tid: s.tid,
        cpu: s.cpu,
        event,
    })
}

/// A `PERF_RECORD_SWITCH_CPU_WIDE` body: the other task's pid and tid, then its `sample_id`
/// (`TID | TIME | CPU`: the task leaving for an out record, the one arriving for an in record);
/// `misc` says in or out, and whether an out was a preemption.
fn decode_switch(body: &[u8], misc: u16) -> Option<TimedSched> {
    let u32_at = |o: usize| Some(u32::from_le_bytes(body.get(o..o + 4)?.try_into().ok()?));
    let (other_pid, other_tid) = (u32_at(0)?, u32_at(4)?);
    let event = if misc & MISC_SWITCH_OUT == 0 {
        SchedEvent::SwitchIn
    } else {
        SchedEvent::SwitchOut {
            preempt: misc & MISC_SWITCH_OUT_PREEMPT != 0,
            next_pid: other_pid,
            next_tid: other_tid,
        }
    };
    Some(TimedSched {
        pid: u32_at(8)?,
        tid: u32_at(12)?,
        time: u64::from_le_bytes(body.get(16..24)?.try_into().ok()?),
        cpu: u32_at(24)?,
        event,
    })
}

/// Every switch and wake-up through perf's ring buffers, accounted over the window; it cannot
/// follow processes outside the tree it was opened in. Its records carry no stack copy.
impl Tracer for OffCpuTracer {
    type Trace = OffCpuTrace;

    fn drain(&mut self) -> u64 {
        OffCpuTracer::drain(self);
        0
    }

    fn new_user_chains(&mut self) -> Vec<(u32, Vec<u64>)> {
        OffCpuTracer::new_user_chains(self)
    }

    fn window_opens(&mut self, at: u64) {
        self.account_from(at);
    }

    fn window_closes(&mut self, at: u64) {
        self.account_until(at);
    }

    fn finish(self: Box<Self>, until: u64) -> OffCpuTrace {
        (*self).finish_at(until)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Needs root (or CAP_PERFMON) and a mounted tracefs; says why it skipped otherwise.
    #[test]
    fn a_sleeping_thread_is_one_blocked_episode_as_long_as_its_sleep() {
        let mut tracer = match OffCpuTracer::open(&OffCpuTraceConfig::default()) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("skipped: off-CPU tracing unavailable here: {e}");
                return;
            }
        };
        let sleeper = std::thread::spawn(|| {
            let tid = sys::gettid() as u32;
            for _ in 0..5 {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            tid
        });
        let tid = sleeper.join().unwrap();
        tracer.drain();
        let trace = tracer.finish();
        let mine: Vec<_> = trace.episodes.iter().filter(|e| e.tid == tid).collect();
        assert!(
            mine.len() >= 5,
            "{} episodes of the sleeper: {mine:?}",
            mine.len()
        );
        let long: Vec<_> = mine
            .iter()
            .filter(|e| e.end != u64::MAX && e.end - e.begin >= 19_000_000)
            .collect();
        assert_eq!(long.len(), 5, "sleeps of 20 ms: {mine:?}");
        // Woken by its timer, not switched in much later: the episode is the sleep, not more.
        assert!(
            long.iter().all(|e| e.end - e.begin < 200_000_000),
            "{long:?}"
        );
        let kernel = &trace.chains[long[0].kernel_chain as usize];
        let user = &trace.chains[long[0].user_chain as usize];
        assert!(kernel.len() >= 3, "kernel chain too short: {kernel:x?}");
        assert!(user.len() >= 2, "user chain too short: {user:x?}");
        assert_eq!(trace.lost, 0);
        // Its whole life: created, blocked in its five sleeps, exited.
        let life = trace
            .threads
            .iter()
            .find(|t| t.tid == tid)
            .expect("the sleeper's life");
        assert!(life.end.is_some(), "it exited: {life:?}");
        assert!(
            life.blocked >= 95_000_000 && life.blocked < 400_000_000,
            "{life:?}"
        );
        assert!(life.on_cpu < life.blocked, "{life:?}");
        // Each sleep was ended by its timer, and the wake-up's chain says so (where the
        // kernel recorded the wake-up: a CPU idle at that moment may record none).
        let kallsyms = perf_read::Kallsyms::load().expect("kallsyms");
        let woken: Vec<_> = long.iter().filter_map(|e| e.waker).collect();
        for w in &woken {
            let names: Vec<String> = trace.chains[w.chain as usize]
                .iter()
                .filter_map(|&ip| kallsyms.function(ip).map(|(s, _)| s.name.clone()))
                .collect();
            assert!(
                names.iter().any(|n| n.contains("hrtimer_wakeup")),
                "a sleep's wake-up: {names:?}"
            );
        }
    }
}
