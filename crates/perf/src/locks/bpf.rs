//! [`BpfLockTracer`]: the same lock and futex waits timed and summed per lock in the kernel by
//! `bpf/locks.bpf.c` (loaded with aya), with the call chains of a sample of them.
//!
//! The sums ([`LockTrace::totals`]) are exact and cover the waits that end inside the window
//! ([`window_opens`](BpfLockTracer::window_opens), [`window_closes`](BpfLockTracer::window_closes));
//! each sampled wait stands for its `weight`. Futex waits are timed per call or per sleep
//! ([`FutexTiming`]). The record layouts are the C structs of `locks.bpf.c`: change both
//! together. What was measured against the perf tracer: `docs/notes/perf-tracers.md`.

use std::collections::{BTreeSet, HashMap};

use aya::maps::{Array, HashMap as BpfHashMap, MapData, RingBuf};
use aya::{Ebpf, EbpfLoader};

use crate::bpf::drain_pace::DrainPace;
use crate::bpf::load::{self, StackUnwinding, bpf_error, frames, u32_at, u64_at};
use crate::bpf::self_cost::ProgramRuns;
use crate::locks::events::{FutexWait, KernelWait, LockSamplingTally, LockTotal, LockTrace};
use crate::trace::mappings::MappingStream;
use crate::trace::ring::online_cpus;
use crate::trace::sample::ChainTable;
use crate::trace::stream::FreshChains;
use crate::tracer::Tracer;
use perf_read::error::PerfError;
use perf_read::unwind::UserRegs;

/// The compiled program, committed beside its source (`bpf/locks.bpf.o`, embedded by build.rs); aligned, as
/// the ELF parser reads it in place.
#[cfg(locks_bpf)]
const OBJECT: Option<&[u8]> = Some(aya::include_bytes_aligned!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/bpf/locks.bpf.o"
)));
#[cfg(not(locks_bpf))]
const OBJECT: Option<&[u8]> = None;

/// The programs and the tracepoints they attach to: kernel locks, futex waits, the threads.
const KERNEL_PROGRAMS: [(&str, &str); 2] = [
    ("on_contention_begin", "contention_begin"),
    ("on_contention_end", "contention_end"),
];
const FUTEX_CALL_PROGRAMS: [(&str, &str); 2] =
    [("on_sys_enter", "sys_enter"), ("on_sys_exit", "sys_exit")];
const FUTEX_SLEEP_PROGRAMS: [(&str, &str); 1] = [("on_switch", "sched_switch")];
const THREAD_PROGRAMS: [(&str, &str); 2] = [
    ("on_fork", "sched_process_fork"),
    ("on_exit", "sched_process_exit"),
];
/// Every program, for the load test.
const ALL_PROGRAMS: [(&str, &str); 7] = [
    THREAD_PROGRAMS[0],
    THREAD_PROGRAMS[1],
    KERNEL_PROGRAMS[0],
    KERNEL_PROGRAMS[1],
    FUTEX_CALL_PROGRAMS[0],
    FUTEX_CALL_PROGRAMS[1],
    FUTEX_SLEEP_PROGRAMS[0],
];

/// Frames kept per user chain.
const MAX_USER_FRAMES: usize = 64;
/// Record layouts (`struct kernel_rec`, `struct futex_rec` in `locks.bpf.c`).
const KERNEL_FRAMES: usize = 48;
const USER_FRAMES: usize = 32;
const STACK_BYTES: usize = 16384;
const KERNEL_REC_SIZE: usize = 48 + 8 * KERNEL_FRAMES;
const FUTEX_STACK_AT: usize = 88 + 8 * USER_FRAMES;
const FUTEX_REC_SIZE: usize = FUTEX_STACK_AT + STACK_BYTES;
const FUTEX_END_REC_SIZE: usize = 24;

/// What to sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BpfLockConfig {
    /// Trace kernel lock contention.
    pub kernel: bool,
    /// Trace futex waits.
    pub user: bool,
    /// Waits a second, per CPU, whose call chains are written (about).
    pub samples_per_cpu_s: u64,
    /// Sample 1 in this many waits whatever the rate (0: from the rate).
    pub fixed_k: u32,
    /// The `records` ring buffer's bytes (a power of two; see [`Self::for_cpus`]).
    pub ring_bytes: u32,
    /// Lower the sampling rate while the drain falls behind (`drain_pace`), and read a
    /// bounded share of the ring per drain; false keeps the rate and drains whole.
    pub paced: bool,
    /// What a futex wait is.
    pub futex: FutexTiming,
}

/// What the in-kernel tracer times as a futex wait.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum FutexTiming {
    /// Every `futex` call that waits, entry to exit (the raw system call tracepoints: every
    /// system call on the machine takes the kernel's slow path meanwhile).
    #[default]
    Calls,
    /// Each sleep inside such a call, its blocking switch to its switch back in (the
    /// scheduler's `sched_switch`: a call that returns without sleeping is not seen).
    Sleeps,
}

impl BpfLockConfig {
    /// Sampled waits a second, the whole machine's: a futex wait's costs the kernel a 16 KiB
    /// copy and user space a decode and (mostly cached) unwinding; a kernel wait's a stack
    /// walk. A 1 s trial then holds ~1,000 chains: a caller's share of 50% within ±3 points.
    pub const SAMPLES_PER_S: u64 = 1000;
    /// The least per CPU, however many CPUs.
    pub const MIN_PER_CPU_S: u64 = 10;

    /// Both kinds of lock, the sampling rate shared out over `cpus` CPUs.
    /// Its `records` ring holds a second of sampled futex waits (the largest records) at twice
    /// that rate (`load::records_ring_bytes`): 8 MiB lost records at 16 CPUs.
    pub fn for_cpus(cpus: usize) -> BpfLockConfig {
        let samples_per_cpu_s = load::per_cpu_rate(Self::SAMPLES_PER_S, Self::MIN_PER_CPU_S, cpus);
        BpfLockConfig {
            kernel: true,
            user: true,
            samples_per_cpu_s,
            fixed_k: 0,
            paced: true,
            ring_bytes: load::records_ring_bytes(
                cpus,
                samples_per_cpu_s,
                FUTEX_REC_SIZE + FUTEX_END_REC_SIZE,
            ),
            futex: FutexTiming::Calls,
        }
    }
}

impl Default for BpfLockConfig {
    /// [`BpfLockConfig::for_cpus`] of this machine's online CPUs.
    fn default() -> Self {
        BpfLockConfig::for_cpus(online_cpus().len())
    }
}

/// A kernel lock a traced thread waits for (`struct open_lock`).
#[derive(Debug, Clone, Copy, Default)]
#[repr(C)]
struct OpenLock {
    lock: u64,
    begin: u64,
    flags: u32,
    pad: u32,
}

/// A traced thread as the kernel's `threads` map holds it (`struct thread`).
#[derive(Debug, Clone, Copy, Default)]
#[repr(C)]
struct ThreadSlot {
    pid: u32,
    futex_op: u32,
    futex_uaddr: u64,
    futex_begin: u64,
    futex_sampled: u32,
    pad: u32,
    locks: [OpenLock; 4],
    /// The programs' runs in its context without a walk, and its walks' time.
    prog_runs: u64,
    prog_walk_ns: u64,
}

/// `struct total_key`.
#[derive(Debug, Clone, Copy, Default)]
#[repr(C)]
struct TotalKey {
    pid: u32,
    kind: u32,
    lock: u64,
    op: u32,
    pad: u32,
}

/// `struct total`.
#[derive(Debug, Clone, Copy, Default)]
#[repr(C)]
struct Total {
    count: u64,
    sum: u64,
    max: u64,
    min: u64,
}

/// `struct window`.
#[derive(Debug, Clone, Copy, Default)]
#[repr(C)]
struct Window {
    start: u64,
    end: u64,
}

// SAFETY: each is `repr(C)` of plain integers laid out without padding (every field is
// naturally aligned and the sizes sum to the struct's: 24, 144, 24, 32 and 16 bytes), so every
// bit pattern the kernel writes is a valid value.
unsafe impl aya::Pod for OpenLock {}
// SAFETY: as above.
unsafe impl aya::Pod for ThreadSlot {}
// SAFETY: as above.
unsafe impl aya::Pod for TotalKey {}
// SAFETY: as above.
unsafe impl aya::Pod for Total {}
// SAFETY: as above.
unsafe impl aya::Pod for Window {}

const KIND_KERNEL: u32 = 1;

/// A decoded SAMPLE record.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Record<'a> {
    Kernel {
        wait: KernelWait,
        chain: Vec<u64>,
    },
    /// A futex wait with its chain and stack: a call's, whole; a sleep's as it begins (its
    /// `end` is 0, and a [`Record::FutexEnd`] follows).
    Futex {
        wait: FutexWait,
        regs: UserRegs,
        user: Vec<u64>,
        stack: &'a [u8],
    },
    /// The end of thread `tid`'s sampled futex wait; `counted`: inside the window.
    FutexEnd {
        tid: u32,
        end: u64,
        counted: bool,
    },
}

/// Decodes one ring buffer record; `None` for a record of unknown type or size.
fn decode(b: &[u8]) -> Option<Record<'_>> {
    if b.len() < 8 {
        return None;
    }
    match u32_at(b, 0) {
        1 if b.len() >= KERNEL_REC_SIZE => Some(Record::Kernel {
            wait: KernelWait {
                tid: u32_at(b, 4),
                pid: u32_at(b, 8),
                weight: u32_at(b, 12).max(1),
                lock: u64_at(b, 16),
                begin: u64_at(b, 24),
                end: u64_at(b, 32),
                flags: u32_at(b, 40),
                chain: u32::MAX,
            },
            chain: frames(b, 48, KERNEL_FRAMES, u32_at(b, 44) as i32),
        }),
        2 if b.len() >= FUTEX_REC_SIZE => {
            let stack_bytes = (u32_at(b, 80) as usize).min(STACK_BYTES);
            Some(Record::Futex {
                wait: FutexWait {
                    tid: u32_at(b, 4),
                    pid: u32_at(b, 8),
                    weight: u32_at(b, 12).max(1),
                    uaddr: u64_at(b, 16),
                    begin: u64_at(b, 24),
                    end: u64_at(b, 32),
                    ret: u64_at(b, 40) as i64,
                    op: u32_at(b, 48),
                    chain: u32::MAX,
                },
                regs: UserRegs {
                    ip: u64_at(b, 56),
                    sp: u64_at(b, 64),
                    bp: u64_at(b, 72),
                },
                user: frames(b, 88, USER_FRAMES, u32_at(b, 52) as i32),
                stack: &b[FUTEX_STACK_AT..FUTEX_STACK_AT + stack_bytes],
            })
        }
        3 if b.len() >= FUTEX_END_REC_SIZE => Some(Record::FutexEnd {
            tid: u32_at(b, 4),
            end: u64_at(b, 8),
            counted: u32_at(b, 16) != 0,
        }),
        _ => None,
    }
}

/// Sampled futex sleeps begun, by thread, until their END record is read (a thread sleeps in
/// one wait at a time, and its END follows its BEGIN in the ring buffer: the BEGIN is written
/// before the thread leaves its CPU, the END once it is back on one).
#[derive(Debug, Default)]
struct OpenSleeps {
    open: std::collections::HashMap<u32, FutexWait>,
    /// Begins never ended and ends never begun (a record lost to a full ring buffer).
    unended: u64,
}

impl OpenSleeps {
    fn begins(&mut self, wait: FutexWait) {
        if self.open.insert(wait.tid, wait).is_some() {
            self.unended += 1;
        }
    }

    /// The wait thread `tid` began, ended at `end`; `None` when none was open or it ended
    /// outside the window (`counted` false: the kernel did not sum it).
    fn ends(&mut self, tid: u32, end: u64, counted: bool) -> Option<FutexWait> {
        let Some(mut wait) = self.open.remove(&tid) else {
            self.unended += 1;
            return None;
        };
        wait.end = end;
        counted.then_some(wait)
    }

    /// How many were not paired, counting those still open (sleeping as tracing stopped).
    fn finish(&mut self) -> u64 {
        self.unended + std::mem::take(&mut self.open).len() as u64
    }
}

/// The loaded, attached program with its maps; dropping it detaches everything.
pub struct BpfLockTracer {
    bpf: Ebpf,
    records: RingBuf<MapData>,
    /// The sampling rate the kernel reads, lowered while the drain falls behind.
    rate_target: Array<MapData, u64>,
    /// When the kernel begins writing chains (`sample_from`).
    sample_from: Array<MapData, u64>,
    pace: Option<DrainPace>,
    windows: Array<MapData, Window>,
    mappings: MappingStream,
    stacks: StackUnwinding,
    chains: ChainTable,
    user_chains: FreshChains,
    kernel: Vec<KernelWait>,
    futex: Vec<FutexWait>,
    futex_open: OpenSleeps,
    /// The window's start, once it opened.
    window_start: u64,
    /// The programs' runs counted at the window's start and end.
    runs_from: Option<ProgramRuns>,
    runs_until: Option<ProgramRuns>,
    /// Each thread's programs' counts (`prog_runs`, `prog_walk_ns`) at the window's edges.
    threads_from: HashMap<u32, (u64, u64)>,
    threads_until: HashMap<u32, (u64, u64)>,
    malformed: u64,
}

impl std::fmt::Debug for BpfLockTracer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BpfLockTracer")
            .field("kernel", &self.kernel.len())
            .field("futex", &self.futex.len())
            .finish_non_exhaustive()
    }
}

impl BpfLockTracer {
    /// Whether this build holds the BPF program (every x86_64 build but `SCALELAB_NO_BPF=1`).
    pub fn built() -> bool {
        OBJECT.is_some()
    }

    /// A load test (`scalelab doctor`): loads the object and each of its programs into this
    /// kernel and attaches them, then detaches and drops them, tracing nothing. Needs what
    /// [`Self::open`] needs (root or CAP_BPF and CAP_PERFMON, the kernel's BTF).
    pub fn load_test() -> Result<(), PerfError> {
        load::load_test(OBJECT, &ALL_PROGRAMS)
    }

    /// Loads and attaches the program, tracing the calling thread and every thread and process
    /// it creates from now on. Call it from the thread that then creates every task.
    pub fn open(config: &BpfLockConfig) -> Result<BpfLockTracer, PerfError> {
        let object = load::object(OBJECT)?;
        let btf = load::kernel_btf()?;
        let futex_nr = libc::SYS_futex as u32;
        let mut bpf = EbpfLoader::new()
            .btf(Some(&btf))
            .set_max_entries("records", config.ring_bytes)
            .set_global("samples_per_cpu_s", &config.samples_per_cpu_s, true)
            .set_global("fixed_k", &config.fixed_k, true)
            .set_global("futex_nr", &futex_nr, true)
            .set_global("trace_kernel", &u8::from(config.kernel), true)
            .set_global("trace_futex", &u8::from(config.user), true)
            .set_global(
                "futex_sleeps",
                &u8::from(config.futex == FutexTiming::Sleeps),
                true,
            )
            .load(object)
            .map_err(|e| bpf_error("loading the program", e))?;
        let mut windows: Array<MapData, Window> = load::take_map(&mut bpf, "windows")?;
        windows
            .set(
                0,
                Window {
                    start: 0,
                    end: u64::MAX,
                },
                0,
            )
            .map_err(|e| bpf_error("the `windows` map", e))?;
        let records: RingBuf<MapData> = load::take_map(&mut bpf, "records")?;
        let rate_target: Array<MapData, u64> = load::take_map(&mut bpf, "rate_target")?;
        let sample_from: Array<MapData, u64> = load::take_map(&mut bpf, "sample_from")?;
        let pace = (config.fixed_k == 0 && config.paced)
            .then(|| DrainPace::new(config.ring_bytes, config.samples_per_cpu_s));
        {
            let mut threads: BpfHashMap<&mut MapData, u32, ThreadSlot> = bpf
                .map_mut("threads")
                .ok_or_else(|| bpf_error("the program", "no `threads` map"))?
                .try_into()
                .map_err(|e| bpf_error("the `threads` map", e))?;
            let me = sys::gettid() as u32;
            let entry = ThreadSlot {
                pid: std::process::id(),
                ..ThreadSlot::default()
            };
            threads
                .insert(me, entry, 0)
                .map_err(|e| bpf_error("tracing the calling thread", e))?;
        }
        let mappings = MappingStream::open_cpu_wide(&online_cpus(), std::process::id())?;
        let mut programs: Vec<(&str, &str)> = THREAD_PROGRAMS.to_vec();
        if config.kernel {
            programs.extend(KERNEL_PROGRAMS);
        }
        if config.user {
            match config.futex {
                FutexTiming::Calls => programs.extend(FUTEX_CALL_PROGRAMS),
                FutexTiming::Sleeps => programs.extend(FUTEX_SLEEP_PROGRAMS),
            }
        }
        load::attach(&mut bpf, &btf, &programs)?;
        Ok(BpfLockTracer {
            bpf,
            records,
            rate_target,
            sample_from,
            pace,
            windows,
            mappings,
            stacks: StackUnwinding::new(),
            chains: ChainTable::default(),
            user_chains: FreshChains::default(),
            kernel: Vec::new(),
            futex: Vec::new(),
            futex_open: OpenSleeps::default(),
            window_start: 0,
            runs_from: None,
            runs_until: None,
            threads_from: HashMap::new(),
            threads_until: HashMap::new(),
            malformed: 0,
        })
    }

    /// Sums from `at` on (CLOCK_MONOTONIC ns, the window's start): the sums so far are
    /// dropped, and waits that end from now are summed.
    pub fn window_opens(&mut self, at: u64) {
        self.window_start = at;
        self.runs_from = ProgramRuns::read(&self.bpf);
        self.threads_from = self.thread_programs();
        let _ = self.windows.set(
            0,
            Window {
                start: at,
                end: u64::MAX,
            },
            0,
        );
        // Waits that ended before `at` but were summed before the window was set: none are
        // kept, as the sums start over.
        if let Some(map) = self.bpf.map_mut("totals")
            && let Ok(mut totals) = BpfHashMap::<&mut MapData, TotalKey, Total>::try_from(map)
        {
            let keys: Vec<TotalKey> = totals.keys().filter_map(Result::ok).collect();
            for k in keys {
                let _ = totals.remove(&k);
            }
        }
    }

    /// Sums up to `at` (the window's end, just passed): waits ending later are not summed.
    pub fn window_closes(&mut self, at: u64) {
        let start = self.window_start;
        let _ = self.windows.set(0, Window { start, end: at }, 0);
        self.runs_until = ProgramRuns::read(&self.bpf);
        self.threads_until = self.thread_programs();
    }

    /// Every traced thread's programs' counts now: `(prog_runs, prog_walk_ns)` by thread id.
    fn thread_programs(&self) -> HashMap<u32, (u64, u64)> {
        let Some(map) = self.bpf.map("threads") else {
            return HashMap::new();
        };
        let Ok(threads) = BpfHashMap::<&MapData, u32, ThreadSlot>::try_from(map) else {
            return HashMap::new();
        };
        threads
            .iter()
            .filter_map(Result::ok)
            .map(|(tid, t)| (tid, (t.prog_runs, t.prog_walk_ns)))
            .collect()
    }

    /// Writes no call chains until [`Self::sample_from`] says when (every wait is still counted
    /// and summed): a trial holds them back while it sets up, since no report uses them and a
    /// slow machine's setup filled the ring buffer before its first drain.
    /// The calling process's unwind information is read meanwhile, ahead of its first
    /// sampled stack.
    pub fn hold_samples(&mut self) {
        let _ = self.sample_from.set(0, u64::MAX, 0);
        self.stacks.preload(std::process::id());
    }

    /// Writes call chains from `at` (CLOCK_MONOTONIC ns) on.
    pub fn sample_from(&mut self, at: u64) {
        let _ = self.sample_from.set(0, at, 0);
    }

    /// Reads the sampled waits written since the last drain (call it every 10 ms or so; the
    /// ring buffer holds 8 MiB, about 500 sampled futex waits); returns how many.
    pub fn drain(&mut self) -> u64 {
        self.stacks.next_drain();
        self.mappings.apply(&mut self.stacks.unwinder);
        let budget = self.pace.as_ref().map_or(u64::MAX, DrainPace::drain_budget);
        let (read, bytes) = self.read_records(budget);
        let changed = self.pace.as_mut().and_then(|p| p.after_drain(bytes));
        if let Some(rate) = changed {
            let _ = self.rate_target.set(0, rate, 0);
        }
        read
    }

    /// The user call chains of sampled futex waits first seen (per process) since the last
    /// call, as `(pid, addresses)`, to name while the process lives.
    pub fn new_user_chains(&mut self) -> Vec<(u32, Vec<u64>)> {
        self.user_chains.take(&self.chains)
    }

    /// Stops tracing and returns the sampled waits and every lock's sums.
    pub fn finish(mut self) -> LockTrace {
        let mut all: Vec<(&str, &str)> = THREAD_PROGRAMS.to_vec();
        all.extend(KERNEL_PROGRAMS);
        all.extend(FUTEX_CALL_PROGRAMS);
        all.extend(FUTEX_SLEEP_PROGRAMS);
        let runs_until = self.runs_until.or_else(|| ProgramRuns::read(&self.bpf));
        let window = runs_until
            .map(|r| r.since(self.runs_from.unwrap_or_default()))
            .unwrap_or_default();
        // A thread that exited inside the window took its counts with it (the kernel's entry
        // goes at its exit): only those alive at both edges are shared out.
        let thread_programs_ns = self
            .threads_until
            .iter()
            .filter_map(|(tid, &(runs, walk))| {
                let &(runs0, walk0) = self.threads_from.get(tid)?;
                Some((
                    *tid,
                    window.thread_ns(runs.saturating_sub(runs0), walk.saturating_sub(walk0)),
                ))
            })
            .collect();
        load::detach(&mut self.bpf, &all);
        self.mappings.disable();
        self.stacks.next_drain();
        self.mappings.apply(&mut self.stacks.unwinder);
        self.read_records(u64::MAX);
        let unended = self.futex_open.finish();
        let sampling = self.tally();
        let totals = self.totals();
        let pids: BTreeSet<u32> = self.futex.iter().map(|w| w.pid).collect();
        let maps = self.stacks.unwinder.maps_of(pids);
        let mut chains = std::mem::take(&mut self.chains).into_chains();
        crate::bpf::frames::trim_bpf_frames(&mut chains);
        LockTrace {
            kernel: std::mem::take(&mut self.kernel),
            futex: std::mem::take(&mut self.futex),
            chains,
            maps,
            lost: sampling.sample_lost + self.mappings.lost,
            unpaired: self.malformed + unended,
            // Nothing is read wait by wait: the totals count every one.
            futex_seen: 0,
            futex_counted: None,
            totals: Some(totals),
            sampling: Some(sampling),
            programs_ns: runs_until.map(|_| window.estimated_ns()),
            thread_programs_ns,
        }
    }

    /// Every lock's sums, as the kernel holds them now.
    fn totals(&self) -> Vec<LockTotal> {
        let Some(map) = self.bpf.map("totals") else {
            return Vec::new();
        };
        let Ok(totals) = BpfHashMap::<&MapData, TotalKey, Total>::try_from(map) else {
            return Vec::new();
        };
        totals
            .iter()
            .filter_map(Result::ok)
            .filter(|(_, t)| t.count > 0)
            .map(|(k, t)| LockTotal {
                pid: k.pid,
                kernel: k.kind == KIND_KERNEL,
                lock: k.lock,
                op: k.op,
                count: t.count,
                sum: t.sum,
                max: t.max,
                min: t.min.min(t.max),
            })
            .collect()
    }

    /// The kernel's counters, summed over the CPUs.
    fn tally(&self) -> LockSamplingTally {
        let slots = load::counters(&self.bpf);
        let at = |i: usize| slots.get(i).copied().unwrap_or(0);
        LockSamplingTally {
            waits: at(0),
            counted: at(1),
            sampled: at(2),
            sample_lost: at(3),
            totals_full: at(4),
            threads_untraced: at(5),
            nested_full: at(6),
            short_stacks: at(7),
            stale_spins: at(8),
            rate_lowered_to: self.pace.as_ref().and_then(DrainPace::lowest),
        }
    }

    /// Reads the records in the ring, `budget` bytes of them at most; returns how many, and
    /// their bytes.
    fn read_records(&mut self, budget: u64) -> (u64, u64) {
        let (mut read, mut bytes) = (0, 0u64);
        while bytes < budget
            && let Some(item) = self.records.next()
        {
            read += 1;
            bytes += item.len() as u64;
            match decode(&item) {
                Some(Record::Kernel { mut wait, chain }) => {
                    wait.chain = self.chains.intern(chain.into_iter());
                    self.kernel.push(wait);
                }
                Some(Record::Futex {
                    mut wait,
                    regs,
                    user,
                    stack,
                }) => {
                    // Unwound now, while the process's mappings are the ones it waited in.
                    wait.chain = self.stacks.chain(
                        (wait.pid, wait.tid, wait.begin),
                        regs,
                        stack,
                        user,
                        &mut self.chains,
                        MAX_USER_FRAMES,
                    );
                    self.user_chains.note(wait.pid, wait.chain);
                    if wait.end != 0 {
                        self.futex.push(wait);
                    } else {
                        self.futex_open.begins(wait);
                    }
                }
                Some(Record::FutexEnd { tid, end, counted }) => {
                    if let Some(wait) = self.futex_open.ends(tid, end, counted) {
                        self.futex.push(wait);
                    }
                }
                None => self.malformed += 1,
            }
        }
        (read, bytes)
    }
}

/// Sums waits in the kernel inside the window, with chains sampled from the tasks' release.
impl Tracer for BpfLockTracer {
    type Trace = LockTrace;

    fn drain(&mut self) -> u64 {
        BpfLockTracer::drain(self)
    }

    fn new_user_chains(&mut self) -> Vec<(u32, Vec<u64>)> {
        BpfLockTracer::new_user_chains(self)
    }

    fn hold_samples(&mut self) {
        BpfLockTracer::hold_samples(self);
    }

    fn sample_from(&mut self, at: u64) {
        BpfLockTracer::sample_from(self, at);
    }

    fn window_opens(&mut self, at: u64) {
        BpfLockTracer::window_opens(self, at);
    }

    fn window_closes(&mut self, at: u64) {
        BpfLockTracer::window_closes(self, at);
    }

    fn finish(self: Box<Self>, _until: u64) -> LockTrace {
        BpfLockTracer::finish(*self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn futex_and_kernel_records_decode_with_their_stacks_chains_and_ends() {
        let mut b = vec![0u8; FUTEX_REC_SIZE];
        b[0..4].copy_from_slice(&2u32.to_le_bytes());
        b[4..8].copy_from_slice(&11u32.to_le_bytes());
        b[8..12].copy_from_slice(&10u32.to_le_bytes());
        b[12..16].copy_from_slice(&4u32.to_le_bytes());
        b[16..24].copy_from_slice(&0x7f00u64.to_le_bytes());
        b[24..32].copy_from_slice(&100u64.to_le_bytes());
        b[32..40].copy_from_slice(&350u64.to_le_bytes());
        b[40..48].copy_from_slice(&(-11i64).to_le_bytes());
        b[48..52].copy_from_slice(&128u32.to_le_bytes());
        b[52..56].copy_from_slice(&16i32.to_le_bytes());
        b[64..72].copy_from_slice(&0x7ffcu64.to_le_bytes());
        b[80..84].copy_from_slice(&1024u32.to_le_bytes());
        b[88..96].copy_from_slice(&0x401000u64.to_le_bytes());
        b[96..104].copy_from_slice(&0x401100u64.to_le_bytes());
        let Some(Record::Futex {
            wait,
            regs,
            user,
            stack,
        }) = decode(&b)
        else {
            panic!("a futex record")
        };
        assert_eq!(
            (wait.tid, wait.pid, wait.weight, wait.uaddr, wait.op),
            (11, 10, 4, 0x7f00, 128)
        );
        assert_eq!((wait.wait(), wait.ret), (250, -11));
        assert_eq!(regs.sp, 0x7ffc);
        assert_eq!(user, vec![0x401000, 0x401100]);
        assert_eq!(stack.len(), 1024);

        let mut k = vec![0u8; KERNEL_REC_SIZE];
        k[0..4].copy_from_slice(&1u32.to_le_bytes());
        k[16..24].copy_from_slice(&0xffff_8000u64.to_le_bytes());
        k[40..44].copy_from_slice(&32u32.to_le_bytes());
        k[44..48].copy_from_slice(&(-14i32).to_le_bytes());
        let Some(Record::Kernel { wait, chain }) = decode(&k) else {
            panic!("a kernel record")
        };
        assert_eq!((wait.lock, wait.flags, wait.weight), (0xffff_8000, 32, 1));
        assert!(chain.is_empty(), "a failed walk has no frames");
        assert_eq!(decode(&k[..40]), None, "a short record is malformed");

        let mut e = vec![0u8; FUTEX_END_REC_SIZE];
        e[0..4].copy_from_slice(&3u32.to_le_bytes());
        e[4..8].copy_from_slice(&11u32.to_le_bytes());
        e[8..16].copy_from_slice(&900u64.to_le_bytes());
        e[16..20].copy_from_slice(&1u32.to_le_bytes());
        assert_eq!(
            decode(&e),
            Some(Record::FutexEnd {
                tid: 11,
                end: 900,
                counted: true
            })
        );
    }

    #[test]
    fn a_sleeps_end_completes_its_begin_and_strays_are_counted() {
        let wait = |tid| FutexWait {
            pid: 1,
            tid,
            uaddr: 0x10,
            op: 128,
            begin: 100,
            end: 0,
            ret: 0,
            chain: 0,
            weight: 2,
        };
        let mut open = OpenSleeps::default();
        open.begins(wait(7));
        open.begins(wait(8));
        let ended = open.ends(7, 400, true).expect("7's wait");
        assert_eq!((ended.tid, ended.wait(), ended.weight), (7, 300, 2));
        assert_eq!(open.ends(8, 500, false), None, "outside the window");
        assert_eq!(open.ends(9, 600, true), None, "an end without its begin");
        open.begins(wait(7));
        open.begins(wait(7));
        assert_eq!(
            open.finish(),
            3,
            "one stray end, one begin replaced, one still open"
        );
    }

    /// Takes the mutex 400 times, holding it across a sleep; never inlined, so it is a frame.
    #[inline(never)]
    fn take_turns(m: &std::sync::Mutex<u64>) {
        for _ in 0..400 {
            let mut g = m.lock().expect("lock");
            *g += 1;
            std::thread::sleep(std::time::Duration::from_micros(50));
        }
    }

    /// The programs' time is read per thread at a window's edges, as a trial's are: each
    /// thread's share (explain counts a built-in's tasks', not their partners'), adding up to
    /// the whole.
    /// The tracer, or `None` (said) where it cannot load here; with `SCALELAB_REQUIRE_BPF=1`,
    /// as CI sets, a failure instead.
    fn opened(config: &BpfLockConfig) -> Option<BpfLockTracer> {
        match BpfLockTracer::open(config) {
            Ok(t) => Some(t),
            Err(e) if std::env::var_os("SCALELAB_REQUIRE_BPF").is_some() => {
                panic!("SCALELAB_REQUIRE_BPF is set and the tracer cannot load: {e}")
            }
            Err(e) => {
                eprintln!("skipped: {e}");
                None
            }
        }
    }

    #[test]
    fn each_threads_share_of_the_programs_time_is_read_across_the_window() {
        let config = BpfLockConfig {
            fixed_k: 4,
            ..BpfLockConfig::default()
        };
        let Some(mut tracer) = opened(&config) else {
            return;
        };
        // Two workers taking turns on a mutex; the window opens once both exist and closes
        // before they end, as a trial's does.
        let m = std::sync::Arc::new(std::sync::Mutex::new(0u64));
        let edges = std::sync::Arc::new(std::sync::Barrier::new(3));
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let (m, edges) = (m.clone(), edges.clone());
                std::thread::spawn(move || {
                    edges.wait();
                    take_turns(&m);
                    edges.wait();
                    // Alive until the window has closed.
                    edges.wait();
                })
            })
            .collect();
        let now = || sys::clock_gettime_vdso(sys::ClockId::Monotonic);
        tracer.window_opens(now());
        edges.wait();
        edges.wait();
        tracer.window_closes(now());
        edges.wait();
        for w in workers {
            w.join().expect("worker");
        }
        tracer.drain();
        let trace = tracer.finish();
        let programs = trace
            .programs_ns
            .expect("the in-kernel tracer times its programs");
        // The workers' shares above all (the main thread only waits at the two edges), and
        // the shares are the whole, up to the runs between the reads.
        let busy = trace
            .thread_programs_ns
            .values()
            .filter(|&&ns| ns > 0)
            .count();
        let shares: u64 = trace.thread_programs_ns.values().sum();
        assert!(
            programs > 0 && busy >= 2,
            "{programs} ns; the threads' {:?}",
            trace.thread_programs_ns
        );
        assert!(
            shares.abs_diff(programs) as f64 <= 0.1 * programs as f64,
            "the threads' {:?} against the whole {programs} ns",
            trace.thread_programs_ns
        );
    }

    /// Needs root, BTF and a build that carries the program; says why it skipped otherwise (fails instead
    /// with `SCALELAB_REQUIRE_BPF=1`, as CI sets).
    #[test]
    fn contended_futex_waits_are_summed_exactly_and_sampled_with_their_chains() {
        futex_waits_are_summed_and_sampled(FutexTiming::Calls);
    }

    /// The same, timed at the scheduler: every contended take sleeps (the holder sleeps with
    /// the mutex held), so the sleeps are the waits, and each sampled one's chain, taken at its
    /// blocking switch and ended by its switch back in, unwinds the same.
    #[test]
    fn futex_sleeps_are_summed_exactly_and_sampled_with_their_chains() {
        futex_waits_are_summed_and_sampled(FutexTiming::Sleeps);
    }

    fn futex_waits_are_summed_and_sampled(futex: FutexTiming) {
        let config = BpfLockConfig {
            fixed_k: 4,
            futex,
            ..BpfLockConfig::default()
        };
        let Some(mut tracer) = opened(&config) else {
            return;
        };
        // Two threads taking turns on one std mutex, each holding it across a sleep: every
        // other take waits in the kernel.
        let m = std::sync::Arc::new(std::sync::Mutex::new(0u64));
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let m = m.clone();
                std::thread::spawn(move || take_turns(&m))
            })
            .collect();
        for w in workers {
            w.join().expect("worker");
        }
        tracer.drain();
        let trace = tracer.finish();
        let totals = trace.totals.as_ref().expect("the kernel's sums");
        let lock = std::sync::Arc::as_ptr(&m) as u64;
        let mine: Vec<&LockTotal> = totals.iter().filter(|t| !t.kernel).collect();
        let waits: u64 = mine.iter().map(|t| t.count).sum();
        assert!(waits >= 50, "the mutex was contended: {totals:?}");
        assert!(
            mine.iter().any(|t| t.lock >= lock && t.lock < lock + 16),
            "the mutex's futex word {lock:#x} is summed: {mine:?}"
        );
        let sampling = trace.sampling.expect("a BPF trace counts its sampling");
        assert_eq!(
            sampling.counted,
            waits
                + totals
                    .iter()
                    .filter(|t| t.kernel)
                    .map(|t| t.count)
                    .sum::<u64>()
        );
        // The programs timed their own runs in the workers' context: at least the sampled
        // waits' chain walks, each microseconds.
        let programs = trace
            .programs_ns
            .expect("the in-kernel tracer times its programs");
        assert!(
            programs >= trace.futex.len() as u64 * 200,
            "{programs} ns for {} sampled waits",
            trace.futex.len()
        );
        // 1 in 4 sampled: about a quarter, each standing for 4.
        let sampled = trace.futex.len() as u64;
        assert!(
            sampled * 8 > waits && sampled * 2 < waits,
            "{sampled} of {waits} sampled at 1 in 4"
        );
        assert!(trace.futex.iter().all(|w| w.weight == 4));
        // Each sampled wait has its end, and lasted about as long as the holder's sleep or
        // longer (a wait for the mutex held across a 50 µs sleep; at least 20 µs of it).
        assert!(
            trace.futex.iter().all(|w| w.end > w.begin),
            "every sampled wait ended: {:?}",
            &trace.futex[..trace.futex.len().min(5)]
        );
        let long = trace.futex.iter().filter(|w| w.wait() >= 20_000).count();
        assert!(
            long * 2 >= trace.futex.len(),
            "most sampled waits span most of the holder's sleep: {long} of {}",
            trace.futex.len()
        );
        let names: BTreeSet<String> = trace
            .futex
            .iter()
            .filter_map(|w| trace.chains.get(w.chain as usize))
            .flat_map(|c| {
                let symbols = perf_read::UserSymbols::resolve(0, c);
                c.iter()
                    .filter_map(move |&a| symbols.frame(a).function)
                    .collect::<Vec<_>>()
            })
            .collect();
        assert!(
            names.iter().any(|n| n.ends_with("take_turns")),
            "the chains unwind through the lock's wrappers to the function taking it: {names:?}"
        );
    }
}
