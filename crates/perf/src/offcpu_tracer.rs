//! [`OffCpuTracer`]: when the calling thread and every thread and process it creates
//! afterwards block, for how long and in what call chain, read directly with
//! `perf_event_open` from the scheduler's tracepoints.
//!
//! Per online CPU, two ring buffers (opened as the lock tracer opens its own: per CPU, on the
//! calling thread with `inherit`, stamped with CLOCK_MONOTONIC):
//! - `sched:sched_switch` of the traced tasks, kept in the kernel only when `prev_state` is a
//!   blocked state (a filter), with the kernel and user call chains and a copy of the user
//!   stack (`REGS_USER | STACK_USER`, unwound at drain time with the binaries' `.eh_frame`, as
//!   the lock tracer's futex waits are); the same event asks for `PERF_RECORD_SWITCH` records
//!   (`context_switch`), which say when a traced task runs again;
//! - `sched:sched_wakeup` of the whole CPU (a wake-up runs in the waker's context, often an
//!   interrupt or an untraced task), kept only for threads with an open episode; before that,
//!   every one is counted in [`IdleTally`] (a CPU that records no wake-up in its idle task's
//!   context is one whose kernel traces nothing while it idles);
//! - a counter (no ring buffer) of `sched:sched_switch` to the idle task (`next_pid == 0`, any
//!   task): how often the CPU went idle, the other half of that check.
//!
//! [`drain`](OffCpuTracer::drain) empties the buffers (call it every 10 ms or so), merges the
//! streams by timestamp, holding back the last milliseconds, and pairs them
//! ([`crate::offcpu_events`]).

use std::collections::{HashMap, HashSet};

use perf_event::events::Tracepoint;
use perf_event::{Builder, Clock, Counter, SampleFlag, Sampler};

use crate::error::PerfError;
use crate::lock_events::{ChainTable, Field, parse_sample};
use crate::mapping_stream::MappingStream;
use crate::offcpu_events::{
    IdleCpu, IdleTally, OffCpuTrace, SchedEvent, SchedPairing, TimedSched, is_blocked, split_chain,
};
use crate::trace_ring::{
    PERF_RECORD_SAMPLE, PERF_RECORD_SWITCH, TRACER_BUDGET_BYTES, UnwindState, lost_records,
    online_cpus, ring_bytes, set_filter,
};
use crate::tracefs::TracepointFormat;
use crate::unwind::{DEFAULT_STACK_SIZE, REGS_MASK, Unwinder};

/// Records newer than this (relative to the drain) wait for the next drain.
const HOLD_BACK_NS: u64 = 2_000_000;
/// Frames kept per call chain (kernel and user together).
const MAX_STACK: u16 = 64;
/// Records read from one ring buffer per drain, at most: a drain must end while tasks keep
/// switching (as fast as a pipe ping-pong does).
const MAX_RECORDS_PER_DRAIN: usize = 16384;
/// `PERF_RECORD_MISC_SWITCH_OUT`.
const MISC_SWITCH_OUT: u16 = 1 << 13;
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
    Switch { prev_state: Field },
    Wakeup { pid: Field },
}

struct Stream {
    kind: Kind,
    sampler: Sampler,
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream").field("kind", &self.kind).finish()
    }
}

/// Open scheduler tracepoint events with their ring buffers; `Drop` unmaps and closes them.
#[derive(Debug)]
pub struct OffCpuTracer {
    streams: Vec<Stream>,
    pending: Vec<TimedSched>,
    pairing: SchedPairing,
    chains: ChainTable,
    /// Threads seen blocking: only their wake-ups are kept (the switch buffers are read
    /// before the wake-up buffers, so a thread's first block is known before its wake-up).
    traced: HashSet<u32>,
    lost: u64,
    malformed: u64,
    idle: IdleTally,
    /// Per CPU, the counter of its switches to the idle task; `None` when the kernel refused
    /// the filter (a count of every switch would say nothing).
    idle_entries: Option<Vec<(u32, Counter)>>,
    user_chains: HashSet<(u32, u32)>,
    fresh_user_chains: Vec<(u32, u32)>,
    unwinder: Unwinder,
    reloaded: Vec<i32>,
    /// Exec, fork and mmap records: mappings of processes gone before their samples drain.
    mappings: MappingStream,
    /// Unwound user chains by [`UnwindKey`]: a task blocking over and over at one call site
    /// (every read of a pipe ping-pong) is unwound once.
    unwound: HashMap<UnwindKey, u32>,
}

/// What identifies a blocking switch's user stack for the unwinding cache: the process, the
/// user instruction pointer, the frame pointer's distance from the stack pointer, the first
/// words of the stack (the return address of a frameless system call wrapper) and the
/// frame-pointer chain the kernel walked.
type UnwindKey = (u32, u64, u64, [u64; 2], Vec<u64>);

fn field(format: &TracepointFormat, name: &str) -> Result<Field, PerfError> {
    let f = format.field(name)?;
    Ok(Field {
        offset: f.offset,
        size: f.size,
        signed: f.signed,
    })
}

/// Each CPU's switch and wake-up ring sizes: locked memory stays bounded on big machines, the
/// switch rings (with stack copies) sharing three quarters of [`TRACER_BUDGET_BYTES`], the
/// wake-up rings the rest ([`ring_bytes`]).
fn ring_sizes(config: &OffCpuTraceConfig, cpus: usize) -> (usize, usize) {
    (
        ring_bytes(config.buffer_bytes, cpus, TRACER_BUDGET_BYTES / 4 * 3),
        ring_bytes(1 << 20, cpus, TRACER_BUDGET_BYTES / 4),
    )
}

impl OffCpuTracer {
    /// The ring buffer memory a tracer of `config` locks on a machine of `cpus` online CPUs,
    /// in bytes, its side-band mapping records' rings included.
    pub fn locked_bytes(config: &OffCpuTraceConfig, cpus: usize) -> usize {
        let (switch, wakeup) = ring_sizes(config, cpus);
        cpus.max(1) * (switch + wakeup) + MappingStream::locked_bytes(cpus)
    }

    /// Checks, without opening anything, that the scheduler tracepoints exist and their
    /// formats are readable; the error names the fix.
    pub fn check() -> Result<(), PerfError> {
        TracepointFormat::read("sched", "sched_switch")?.field("prev_state")?;
        TracepointFormat::read("sched", "sched_wakeup")?.field("pid")?;
        Ok(())
    }

    /// Opens the events on the calling thread, inherited by the threads and processes it
    /// creates from now on. Call it from the thread that then creates every task.
    pub fn open(config: &OffCpuTraceConfig) -> Result<OffCpuTracer, PerfError> {
        let switch = TracepointFormat::read("sched", "sched_switch")?;
        let prev_state = field(&switch, "prev_state")?;
        let wakeup = TracepointFormat::read("sched", "sched_wakeup")?;
        let pid = field(&wakeup, "pid")?;
        let cpus = online_cpus();
        let mappings = MappingStream::open(&cpus)?;
        let stack_size = config.stack_size.min(crate::MAX_STACK_SIZE) & !7;
        let (switch_bytes, wakeup_bytes) = ring_sizes(config, cpus.len());
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
                .context_switch(true)
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
                kind: Kind::Switch { prev_state },
                sampler,
            });

            let mut builder = Builder::new(Tracepoint::with_id(wakeup.id));
            builder
                .any_pid()
                .one_cpu(cpu)
                .include_kernel()
                .exclude_hv(true)
                .sample_period(1)
                .sample(SampleFlag::TID | SampleFlag::TIME | SampleFlag::CPU | SampleFlag::RAW)
                .clockid(Clock::MONOTONIC)
                .enabled(true);
            let name = "sched:sched_wakeup";
            let counter = builder.build().map_err(|e| PerfError::open(name, &e))?;
            let sampler = counter
                .sampled(wakeup_bytes)
                .map_err(|e| PerfError::open(name, &e))?;
            streams.push(Stream {
                kind: Kind::Wakeup { pid },
                sampler,
            });
        }
        let idle_entries = open_idle_counters(switch.id, &cpus);
        // Every switch buffer before any wake-up buffer (see `traced`).
        streams.sort_by_key(|s| matches!(s.kind, Kind::Wakeup { .. }));
        Ok(OffCpuTracer {
            streams,
            pending: Vec::new(),
            pairing: SchedPairing::default(),
            chains: ChainTable::default(),
            traced: HashSet::new(),
            lost: 0,
            malformed: 0,
            idle: IdleTally::default(),
            idle_entries,
            user_chains: HashSet::new(),
            fresh_user_chains: Vec::new(),
            unwinder: Unwinder::default(),
            reloaded: Vec::new(),
            mappings,
            unwound: HashMap::new(),
        })
    }

    /// Reads up to a bounded number of records from every ring buffer (so that a drain ends
    /// however fast tasks switch: what does not fit waits, or is dropped by the kernel and
    /// counted as lost) and pairs what is old enough to be in order.
    pub fn drain(&mut self) {
        let now = sys::clock_gettime_vdso(sys::ClockId::Monotonic);
        self.reloaded.clear();
        self.mappings.apply(&mut self.unwinder);
        self.read_all(MAX_RECORDS_PER_DRAIN);
        self.pair_until(now.saturating_sub(HOLD_BACK_NS));
    }

    /// The user call chains of blocking switches first seen (per process) since the last
    /// call, as `(pid, addresses)`: a command's processes may be gone by
    /// [`finish`](OffCpuTracer::finish), so name them while they live.
    pub fn new_user_chains(&mut self) -> Vec<(u32, Vec<u64>)> {
        std::mem::take(&mut self.fresh_user_chains)
            .into_iter()
            .filter_map(|(pid, i)| Some((pid, self.chains.get(i)?.to_vec())))
            .collect()
    }

    /// Stops tracing and returns every episode seen.
    pub fn finish(mut self) -> OffCpuTrace {
        for s in &mut self.streams {
            let _ = s.sampler.as_counter_mut().disable();
        }
        self.mappings.disable();
        self.mappings.apply(&mut self.unwinder);
        self.read_all(usize::MAX);
        self.pair_until(u64::MAX);
        let episodes = std::mem::take(&mut self.pairing).close();
        let mut pids: Vec<u32> = episodes.iter().map(|e| e.pid).collect();
        pids.sort_unstable();
        pids.dedup();
        let maps = pids
            .into_iter()
            .map(|pid| (pid, self.unwinder.maps(pid as i32).to_vec()))
            .filter(|(_, m)| !m.is_empty())
            .collect();
        OffCpuTrace {
            episodes,
            chains: std::mem::take(&mut self.chains).into_chains(),
            maps,
            lost: self.lost + self.mappings.lost,
            malformed: self.malformed,
            idle_cpus: self.idle_cpus(),
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
        for stream in &mut streams {
            let kind = stream.kind;
            let mut budget = max_records;
            while budget > 0 {
                budget -= 1;
                let Some(record) = stream.sampler.next_record() else {
                    break;
                };
                let ty = record.ty();
                let body = record.to_contiguous();
                let event = match ty {
                    PERF_RECORD_SAMPLE => {
                        let unwind = UnwindState {
                            unwinder: &mut self.unwinder,
                            reloaded: &mut self.reloaded,
                            defer: true,
                        };
                        let cache = &mut self.unwound;
                        match decode_sample(kind, &body, &mut self.chains, unwind, cache) {
                            Decoded::Event(e) => e,
                            Decoded::Skip => continue,
                            Decoded::Defer { tid } => {
                                // Known as blocking now, so that its wake-up is kept.
                                self.traced.insert(tid);
                                deferred.push((kind, body.into_owned()));
                                continue;
                            }
                            Decoded::Malformed => {
                                self.malformed += 1;
                                continue;
                            }
                        }
                    }
                    PERF_RECORD_SWITCH if record.misc() & MISC_SWITCH_OUT == 0 => {
                        match decode_switch_in(&body) {
                            Some(e) => e,
                            None => {
                                self.malformed += 1;
                                continue;
                            }
                        }
                    }
                    ty => {
                        self.lost += lost_records(ty, &body);
                        continue;
                    }
                };
                self.accept(event);
            }
        }
        self.streams = streams;
        if deferred.is_empty() {
            return;
        }
        // Their processes' exec and mmap records were written before them: read them now.
        self.mappings.apply(&mut self.unwinder);
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
                if self.user_chains.insert((event.pid, user_chain)) {
                    self.fresh_user_chains.push((event.pid, user_chain));
                }
            }
            SchedEvent::Wakeup { tid } if !self.traced.contains(&tid) => return,
            _ => {}
        }
        self.pending.push(event);
    }

    fn pair_until(&mut self, cutoff: u64) {
        self.pending.sort_by_key(|e| e.time);
        let ready = self.pending.partition_point(|e| e.time < cutoff);
        for e in self.pending.drain(..ready) {
            self.pairing.feed(&e);
        }
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
    cache: &mut HashMap<UnwindKey, u32>,
) -> Decoded {
    let with_chain = matches!(kind, Kind::Switch { .. });
    // A sample without a stack copy has no regs/stack words: try both layouts.
    let Some(s) = parse_sample(body, with_chain, with_chain)
        .or_else(|| parse_sample(body, with_chain, false))
    else {
        return Decoded::Malformed;
    };
    let event = match kind {
        Kind::Switch { prev_state } => {
            let Some(state) = prev_state.read(s.raw) else {
                return Decoded::Malformed;
            };
            if !is_blocked(state) {
                return Decoded::Skip;
            }
            let (kernel, user_fp) = split_chain(&s.callchain);
            let word = |i: usize| {
                s.stack
                    .get(8 * i..8 * i + 8)
                    .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
            };
            let user_chain = match s.regs {
                Some(r) => {
                    let key = (
                        s.pid,
                        r.ip,
                        r.bp.wrapping_sub(r.sp),
                        [word(0), word(1)],
                        user_fp,
                    );
                    match cache.get(&key) {
                        Some(&i) => i,
                        None => {
                            let Some(user) = unwind.chain(&s, &key.4, usize::from(MAX_STACK))
                            else {
                                return Decoded::Defer { tid: s.tid };
                            };
                            let i = chains.intern(user.into_iter());
                            cache.insert(key, i);
                            i
                        }
                    }
                }
                None => chains.intern(user_fp.into_iter()),
            };
            SchedEvent::Blocked {
                state,
                kernel_chain: chains.intern(kernel.into_iter()),
                user_chain,
            }
        }
        Kind::Wakeup { pid } => match pid.read(s.raw) {
            Some(tid) => SchedEvent::Wakeup { tid: tid as u32 },
            None => return Decoded::Malformed,
        },
    };
    Decoded::Event(TimedSched {
        time: s.time,
        pid: s.pid,
        tid: s.tid,
        cpu: s.cpu,
        event,
    })
}

/// A `PERF_RECORD_SWITCH` body: only its `sample_id` (`TID | TIME | CPU`).
fn decode_switch_in(body: &[u8]) -> Option<TimedSched> {
    let u32_at = |o: usize| Some(u32::from_le_bytes(body.get(o..o + 4)?.try_into().ok()?));
    Some(TimedSched {
        pid: u32_at(0)?,
        tid: u32_at(4)?,
        time: u64::from_le_bytes(body.get(8..16)?.try_into().ok()?),
        cpu: u32_at(16)?,
        event: SchedEvent::SwitchIn,
    })
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
    }
}
