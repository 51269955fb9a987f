//! [`BpfOffCpuTracer`]: the calling thread's and its descendants' time (on a CPU, waiting for
//! one, blocked), with the call chains of a sample of their blocking switches, from
//! `bpf/offcpu.bpf.c` on the scheduler's BTF tracepoints (loaded with aya).
//!
//! A thread's time is the kernel's own accounting read at the window's edges
//! ([`account_from`](BpfOffCpuTracer::account_from),
//! [`account_until`](BpfOffCpuTracer::account_until)); each sampled episode stands for its
//! [`BlockedEpisode::weight`], and the counts come back as a
//! [`SamplingTally`](crate::SamplingTally). It can follow other processes' trees
//! ([`trace_process`](BpfOffCpuTracer::trace_process)). How it differs from the perf tracer, and
//! what was measured: `docs/notes/perf-tracers.md`.

use std::collections::{HashMap, HashSet};

use aya::maps::{Array, HashMap as BpfHashMap, MapData, PerCpuArray, PerCpuHashMap, RingBuf};
use aya::{Ebpf, EbpfLoader};

use crate::bpf::drain_pace::DrainPace;
use crate::bpf::frames::trim_bpf_frames;
use crate::bpf::load::{self, StackUnwinding, bpf_error};
use crate::bpf::self_cost::ProgramRuns;
use crate::offcpu::bpf_records::{
    Counters, Record, SampledEpisodes, ThreadEntry, decode, window_life,
};
use crate::offcpu::events::{OffCpuTrace, RunqHolder, ThreadLife};
use crate::offcpu::sampling::SamplingTally;
use crate::offcpu::waker_name::waker_name;
use crate::trace::mappings::{MappingStream, TaskChange, TaskRecord};
use crate::trace::ring::online_cpus;
use crate::trace::sample::ChainTable;
use crate::trace::stream::FreshChains;
use crate::tracer::Tracer;
use perf_read::error::PerfError;

/// The compiled program, committed beside its source (`bpf/offcpu.bpf.o`, embedded by build.rs); aligned, as
/// the ELF parser reads it in place (a byte array at an odd address fails to parse).
#[cfg(offcpu_bpf)]
const OBJECT: Option<&[u8]> = Some(aya::include_bytes_aligned!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/bpf/offcpu.bpf.o"
)));
#[cfg(not(offcpu_bpf))]
const OBJECT: Option<&[u8]> = None;

/// Frames kept per user chain.
const MAX_USER_FRAMES: usize = 64;
/// The programs and the tracepoints they attach to.
const PROGRAMS: [(&str, &str); 4] = [
    ("on_switch", "sched_switch"),
    ("on_waking", "sched_waking"),
    ("on_fork", "sched_process_fork"),
    ("on_exit", "sched_process_exit"),
];

/// What to sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BpfOffCpuConfig {
    /// Blocking switches a second, per CPU, whose call chains are written (about).
    pub samples_per_cpu_s: u64,
    /// Sample 1 in this many blocking switches whatever the rate (0: from the rate).
    pub fixed_k: u32,
    /// The `records` ring buffer's bytes (a power of two; see [`Self::for_cpus`]).
    pub ring_bytes: u32,
    /// Lower the sampling rate while the drain falls behind (`drain_pace`), and read a
    /// bounded share of the ring per drain; false keeps the rate and drains whole.
    pub paced: bool,
    /// Time every run of the programs as well as the picked ones
    /// ([`ProgramRuns::all_ns`](crate::ProgramRuns::all_ns)), to check the estimate of their
    /// cost against the whole: two more clock reads a run.
    pub time_every_run: bool,
    /// Trace the kernel threads that wake traced threads from their first such wake-up on
    /// (jbd2, kworkers, ksoftirqd: [`ThreadLife::kernel_waker`](crate::ThreadLife::kernel_waker)),
    /// so that a wait they ended can be followed into what they did.
    pub follow_kernel_wakers: bool,
}

impl BpfOffCpuConfig {
    /// Sampled episodes a second, the whole machine's: each costs the kernel two stack walks
    /// and a 4 KiB copy, and user space a decode and (mostly cached) unwinding. Measured on
    /// `pipe_pingpong` N=2 (2 vCPUs, traced/untraced throughput, 5 interleaved pairs): 0.94 at
    /// 200 a second per CPU, 0.90 at 500, 0.84 at 2000. A 1 s trial then still holds ~1,000
    /// chains: a share of 50% within ±3 points (95%).
    pub const SAMPLES_PER_S: u64 = 1000;
    /// The least per CPU, however many CPUs.
    pub const MIN_PER_CPU_S: u64 = 10;

    /// The sampling rate for a machine of `cpus` CPUs: [`Self::SAMPLES_PER_S`] shared out.
    /// Its `records` ring holds a second of sampled episodes at twice that rate
    /// (`load::records_ring_bytes`): 8 MiB lost records at 16 CPUs.
    pub fn for_cpus(cpus: usize) -> BpfOffCpuConfig {
        let samples_per_cpu_s = load::per_cpu_rate(Self::SAMPLES_PER_S, Self::MIN_PER_CPU_S, cpus);
        BpfOffCpuConfig {
            samples_per_cpu_s,
            fixed_k: 0,
            paced: true,
            ring_bytes: load::records_ring_bytes(
                cpus,
                samples_per_cpu_s,
                crate::offcpu::bpf_records::EPISODE_BYTES,
            ),
            time_every_run: false,
            follow_kernel_wakers: false,
        }
    }
}

impl Default for BpfOffCpuConfig {
    /// [`BpfOffCpuConfig::for_cpus`] of this machine's online CPUs.
    fn default() -> Self {
        BpfOffCpuConfig::for_cpus(online_cpus().len())
    }
}

/// The loaded, attached program with its maps; dropping it detaches everything.
pub struct BpfOffCpuTracer {
    bpf: Ebpf,
    records: RingBuf<MapData>,
    /// The sampling rate the kernel reads, lowered while the drain falls behind.
    rate_target: Array<MapData, u64>,
    /// When the kernel begins writing chains (`sample_from`).
    sample_from: Array<MapData, u64>,
    pace: Option<DrainPace>,
    threads: BpfHashMap<MapData, u32, ThreadEntry>,
    holders: PerCpuHashMap<MapData, u32, HolderEntry>,
    cpu_stints: PerCpuArray<MapData, CpuStintsHead>,
    /// `holders` at the window's start and end.
    holders_from: Holders,
    holders_until: Option<Holders>,
    mappings: MappingStream,
    stacks: StackUnwinding,
    chains: ChainTable,
    user_chains: FreshChains,
    episodes: SampledEpisodes,
    /// Threads that exited: their entry, exit time, counters at the exit and name.
    exited: Vec<(u32, ThreadEntry, u64, Counters, String)>,
    /// Names from the side band (comm records), by thread.
    names: HashMap<u32, String>,
    /// Thread ids of traced threads seen (exits, sampled episodes).
    traced: HashSet<u32>,
    /// Waker thread ids to name while they live.
    wakers_seen: HashSet<(u32, u32)>,
    /// The live threads' counters at the window's start, and that start.
    at_from: Option<(u64, HashMap<u32, Counters>)>,
    /// The live threads' counters at the window's end, and that end.
    at_until: Option<(u64, HashMap<u32, Counters>)>,
    /// The programs' runs counted at the window's start and end.
    runs_from: Option<ProgramRuns>,
    runs_until: Option<ProgramRuns>,
    malformed: u64,
}

impl std::fmt::Debug for BpfOffCpuTracer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BpfOffCpuTracer")
            .field("episodes", &self.episodes.episodes.len())
            .finish_non_exhaustive()
    }
}

/// A process that held a CPU while traced threads waited, as the kernel's `holders` map
/// holds it (`struct holder`).
#[derive(Debug, Clone, Copy, Default)]
#[repr(C)]
struct HolderEntry {
    ns: u64,
    kernel: u32,
    pad: u32,
    comm: [u8; 16],
}

// SAFETY: `HolderEntry` is `repr(C)`, integers and a byte array with no padding (8+4+4+16
// bytes, each field at a multiple of its alignment), so every bit pattern is a valid value.
unsafe impl aya::Pod for HolderEntry {}

/// A CPU's `cpu_stints` entry (`struct cpu_stints`): user space reads its `idle_ns`, and
/// keeps its stints as opaque bytes (the value's size must match the map's).
#[derive(Debug, Clone, Copy)]
#[repr(C)]
struct CpuStintsHead {
    since: u64,
    head: u32,
    pad: u32,
    idle_ns: u64,
    stints: [u8; STINT_BYTES * STINTS],
}

/// `struct stint`'s size and the ring's length (offcpu.bpf.c's `STINTS`).
const STINT_BYTES: usize = 8 + 8 + 4 + 4 + 16;
const STINTS: usize = 16;

// SAFETY: `CpuStintsHead` is `repr(C)`: integers and a byte array with no padding
// (8+4+4+8+640 bytes, each field at a multiple of its alignment), so every bit pattern is a
// valid value.
unsafe impl aya::Pod for CpuStintsHead {}

/// The `holders` map as read at an instant: per process, its wait charged so far, its name
/// and whether a kernel thread.
type Holders = HashMap<u32, (u64, String, bool)>;

// SAFETY: `ThreadEntry` is `repr(C)`, plain integers with no padding
// (4+4+8+8+8+4+4+8+4+4+8+8+8+8+8+8+8+8 bytes, each field at a multiple of its size), so
// every bit pattern the kernel writes is a valid value.
unsafe impl aya::Pod for ThreadEntry {}

impl BpfOffCpuTracer {
    /// Whether this build holds the BPF program (every x86_64 build but `SCALELAB_NO_BPF=1`).
    pub fn built() -> bool {
        OBJECT.is_some()
    }

    /// A load test (`scalelab doctor`): loads the object and each of its programs into this
    /// kernel and attaches them, then detaches and drops them, tracing nothing. Needs what
    /// [`Self::open`] needs (root or CAP_BPF and CAP_PERFMON, the kernel's BTF).
    pub fn load_test() -> Result<(), PerfError> {
        load::load_test(OBJECT, &PROGRAMS)
    }

    /// Loads and attaches the program, tracing the calling thread and every thread and process
    /// it creates from now on. Call it from the thread that then creates every task.
    pub fn open(config: &BpfOffCpuConfig) -> Result<BpfOffCpuTracer, PerfError> {
        let object = load::object(OBJECT)?;
        let btf = load::kernel_btf()?;
        let mut bpf = EbpfLoader::new()
            .btf(Some(&btf))
            .set_max_entries("records", config.ring_bytes)
            .set_global("samples_per_cpu_s", &config.samples_per_cpu_s, true)
            .set_global("fixed_k", &config.fixed_k, true)
            .set_global("time_every_run", &u8::from(config.time_every_run), true)
            .set_global(
                "follow_kernel_wakers",
                &u8::from(config.follow_kernel_wakers),
                true,
            )
            .load(object)
            .map_err(|e| bpf_error("loading the program", e))?;
        let mut threads: BpfHashMap<MapData, u32, ThreadEntry> =
            load::take_map(&mut bpf, "threads")?;
        let records: RingBuf<MapData> = load::take_map(&mut bpf, "records")?;
        let holders: PerCpuHashMap<MapData, u32, HolderEntry> =
            load::take_map(&mut bpf, "holders")?;
        let cpu_stints: PerCpuArray<MapData, CpuStintsHead> =
            load::take_map(&mut bpf, "cpu_stints")?;
        let rate_target: Array<MapData, u64> = load::take_map(&mut bpf, "rate_target")?;
        let sample_from: Array<MapData, u64> = load::take_map(&mut bpf, "sample_from")?;
        let pace = (config.fixed_k == 0 && config.paced)
            .then(|| DrainPace::new(config.ring_bytes, config.samples_per_cpu_s));
        let now = sys::clock_gettime_vdso(sys::ClockId::Monotonic);
        let me = sys::gettid() as u32;
        let entry = ThreadEntry {
            pid: std::process::id(),
            begin: now,
            // It runs now: its stint on the CPU began before this.
            on_cpu_since: now,
            ..ThreadEntry::default()
        };
        threads
            .insert(me, entry, 0)
            .map_err(|e| bpf_error("tracing the calling thread", e))?;
        let mappings = MappingStream::open_cpu_wide(&online_cpus(), std::process::id())?;
        load::attach(&mut bpf, &btf, &PROGRAMS)?;
        Ok(BpfOffCpuTracer {
            bpf,
            records,
            rate_target,
            sample_from,
            pace,
            threads,
            holders,
            cpu_stints,
            holders_from: Holders::new(),
            holders_until: None,
            mappings,
            stacks: StackUnwinding::new(),
            chains: ChainTable::default(),
            user_chains: FreshChains::default(),
            episodes: SampledEpisodes::default(),
            exited: Vec::new(),
            names: HashMap::new(),
            traced: HashSet::new(),
            wakers_seen: HashSet::new(),
            at_from: None,
            at_until: None,
            runs_from: None,
            runs_until: None,
            malformed: 0,
        })
    }

    /// Traces process `pid` too from now on (a server of the system under test, or a process
    /// attached to it): each of its threads, and every thread and process they create later,
    /// its mappings followed for unwinding. Returns the threads added (0: it is gone, or each
    /// was traced already). A thread blocked now is seen from its next wait on.
    pub fn trace_process(&mut self, pid: u32) -> usize {
        let now = sys::clock_gettime_vdso(sys::ClockId::Monotonic);
        let mut added = 0;
        for tid in sys::proc_table::threads(pid as i32) {
            let entry = ThreadEntry {
                pid,
                begin: now,
                ..ThreadEntry::default()
            };
            // BPF_NOEXIST: a thread traced already (the command's own) keeps its entry.
            if self.threads.insert(tid as u32, entry, 1).is_ok() {
                added += 1;
            }
        }
        if added > 0 {
            self.mappings.follow(pid);
            self.stacks.preload(pid);
        }
        added
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

    /// Reads the records written since the last drain (call it every 10 ms or so; the ring
    /// buffer holds 8 MiB, about 1,700 sampled episodes).
    pub fn drain(&mut self) {
        self.stacks.next_drain();
        self.apply_side_band();
        let budget = self.pace.as_ref().map_or(u64::MAX, DrainPace::drain_budget);
        let bytes = self.read_records(budget);
        let changed = self.pace.as_mut().and_then(|p| p.after_drain(bytes));
        if let Some(rate) = changed {
            let _ = self.rate_target.set(0, rate, 0);
        }
    }

    /// Accounts the threads' time only from `from` on (CLOCK_MONOTONIC ns: the window's
    /// start): their counters now are taken off at the end.
    pub fn account_from(&mut self, from: u64) {
        self.runs_from = ProgramRuns::read(&self.bpf);
        self.at_from = Some((from, self.live_counters(from)));
        self.holders_from = self.read_holders();
    }

    /// The `holders` map now, summed over the CPUs, with the idle CPUs' part as process 0.
    fn read_holders(&self) -> Holders {
        let mut holders: Holders = self
            .holders
            .iter()
            .filter_map(Result::ok)
            .map(|(pid, per_cpu)| {
                let ns = per_cpu.iter().map(|h| h.ns).sum();
                let named = per_cpu.iter().find(|h| h.comm[0] != 0).copied();
                let (comm, kernel) = named.map_or((String::new(), false), |h| {
                    let end = h.comm.iter().position(|&b| b == 0).unwrap_or(h.comm.len());
                    (
                        String::from_utf8_lossy(&h.comm[..end]).into_owned(),
                        h.kernel != 0,
                    )
                });
                (pid, (ns, comm, kernel))
            })
            .collect();
        let idle: u64 = self
            .cpu_stints
            .get(&0, 0)
            .map(|per_cpu| per_cpu.iter().map(|c| c.idle_ns).sum())
            .unwrap_or(0);
        holders.insert(0, (idle, "idle".to_string(), false));
        holders
    }

    /// Who held the CPUs the traced threads waited for inside the window, most first.
    fn runq_holders(&mut self) -> Vec<RunqHolder> {
        let until = self
            .holders_until
            .take()
            .unwrap_or_else(|| self.read_holders());
        let mut holders: Vec<RunqHolder> = until
            .into_iter()
            .filter_map(|(pid, (ns, comm, kernel_thread))| {
                let before = self.holders_from.get(&pid).map_or(0, |h| h.0);
                let ns = ns.saturating_sub(before);
                (ns > 0).then_some(RunqHolder {
                    pid,
                    comm,
                    kernel_thread,
                    ns,
                })
            })
            .collect();
        holders.sort_by(|a, b| b.ns.cmp(&a.ns).then_with(|| a.pid.cmp(&b.pid)));
        holders
    }

    /// Accounts the threads' time only up to `until` (the window's end, just passed): their
    /// counters now are those of the end (threads exiting later, as a built-in trial's tasks
    /// do once stopped, would otherwise count their winding down).
    ///
    /// The counters are read before the ring buffer is drained: the drain's work (symbolising,
    /// reading unwind information) is the calling thread's CPU time after `until`, and read
    /// after it, the caller's time on a CPU outgrew its life in the window. A thread exiting
    /// between the read and the drain keeps the counters read here.
    pub fn account_until(&mut self, until: u64) {
        self.at_until = Some((until, self.live_counters(until)));
        self.holders_until = Some(self.read_holders());
        self.runs_until = ProgramRuns::read(&self.bpf);
        self.drain();
    }

    /// The kernel's counters of every live traced thread as at `at` (just passed), a wait for
    /// a CPU in progress included.
    fn live_counters(&self, at: u64) -> HashMap<u32, Counters> {
        self.threads
            .iter()
            .filter_map(Result::ok)
            .filter_map(|(tid, t)| {
                let mut c = Counters::read(t.pid, tid)?;
                let read_at = sys::clock_gettime_vdso(sys::ClockId::Monotonic);
                let after = self.threads.get(&tid, 0).unwrap_or(t);
                // Its wall-clock time on a CPU as at the read, like its CPU time.
                c = c.with_entry(&after, read_at);
                // The same wait before and after the read: it was in progress throughout.
                let waiting = if after.queued_at == t.queued_at {
                    after.queued_at
                } else {
                    0
                };
                Some((tid, c.with_wait_in_progress(waiting, at)))
            })
            .collect()
    }

    /// The user call chains of sampled blocking switches first seen (per process) since the
    /// last call, as `(pid, addresses)`, to name while the process lives.
    pub fn new_user_chains(&mut self) -> Vec<(u32, Vec<u64>)> {
        self.user_chains.take(&self.chains)
    }

    /// Stops tracing and returns the sampled episodes and every thread's life inside
    /// `[from, until]` (CLOCK_MONOTONIC ns; `from` as given to
    /// [`account_from`](Self::account_from), else the trace's start).
    pub fn finish_at(mut self, until: u64) -> OffCpuTrace {
        // Without a window's end read before, the live threads' counters are read as at
        // `until` now, before the work below (the final drain) is charged to the caller.
        if self.at_until.is_none() {
            self.at_until = Some((until, self.live_counters(until)));
            self.holders_until = Some(self.read_holders());
        }
        let runq_holders = self.runq_holders();
        let runs_until = self.runs_until.or_else(|| ProgramRuns::read(&self.bpf));
        load::detach(&mut self.bpf, &PROGRAMS);
        self.mappings.disable();
        self.stacks.next_drain();
        self.apply_side_band();
        self.read_records(u64::MAX);
        let tally = self.tally();
        let (from, at_from) = self.at_from.take().unwrap_or_default();
        let (until, at_until) = self.at_until.take().unwrap_or((until, HashMap::new()));
        let window = (from, until);
        let programs = runs_until
            .map(|r| r.since(self.runs_from.unwrap_or_default()))
            .unwrap_or_default();
        let mut threads: Vec<ThreadLife> = Vec::new();
        for (tid, entry, end, counters, comm) in &self.exited {
            // Exited after the window: as it was at the window's end, where that was read.
            let (end, counters) = match at_until.get(tid) {
                Some(c) if *end > until => (None, c),
                _ => (Some(*end), counters),
            };
            if let Some(mut life) = window_life(
                *tid,
                entry,
                end,
                window,
                at_from.get(tid),
                counters,
                &programs,
            ) {
                life.comm = comm.clone();
                threads.push(life);
            }
        }
        let live: Vec<(u32, ThreadEntry)> = self.threads.iter().filter_map(Result::ok).collect();
        for (tid, entry) in live {
            let Some(counters) = at_until.get(&tid).copied().or_else(|| {
                let c = Counters::read(entry.pid, tid)?;
                Some(c.with_entry(&entry, sys::clock_gettime_vdso(sys::ClockId::Monotonic)))
            }) else {
                continue;
            };
            if let Some(mut life) = window_life(
                tid,
                &entry,
                None,
                window,
                at_from.get(&tid),
                &counters,
                &programs,
            ) {
                life.comm = self.names.get(&tid).cloned().unwrap_or_else(|| {
                    std::fs::read_to_string(format!("/proc/{}/task/{tid}/comm", entry.pid))
                        .map(|c| c.trim_end().to_string())
                        .unwrap_or_default()
                });
                threads.push(life);
            }
        }
        threads.sort_by_key(|t| (t.begin, t.tid));
        let traced: HashSet<u32> = threads.iter().map(|t| t.tid).collect();
        let wakers = std::mem::take(&mut self.wakers_seen)
            .into_iter()
            .filter(|(_, tid)| *tid != 0 && !traced.contains(tid))
            .map(|(pid, tid)| (tid, waker_name(pid, tid)))
            .collect();
        let mut chains = std::mem::take(&mut self.chains).into_chains();
        trim_bpf_frames(&mut chains);
        let episodes = std::mem::take(&mut self.episodes).close();
        let pids: std::collections::BTreeSet<u32> = episodes.iter().map(|e| e.pid).collect();
        let maps = self.stacks.unwinder.maps_of(pids);
        OffCpuTrace {
            episodes,
            chains,
            maps,
            lost: tally.lost() + self.mappings.lost,
            malformed: self.malformed,
            idle_cpus: Vec::new(),
            threads,
            wakers,
            out_of_step: 0,
            late_switch_ins: (0, 0),
            sampling: Some(tally),
            programs_ns: runs_until.map(|_| programs.estimated_ns()),
            runq_holders,
        }
    }

    /// The kernel's counters, summed over the CPUs.
    fn tally(&self) -> SamplingTally {
        SamplingTally {
            rate_lowered_to: self.pace.as_ref().and_then(DrainPace::lowest),
            ..SamplingTally::from_slots(&load::counters(&self.bpf))
        }
    }

    /// Applies the side band's mappings to the unwinder and keeps its names.
    fn apply_side_band(&mut self) {
        for TaskRecord { tid, what, .. } in self.mappings.apply(&mut self.stacks.unwinder) {
            if let TaskChange::Comm(comm) = what {
                self.names.insert(tid, comm);
            }
        }
    }

    /// Reads the records in the ring, `budget` bytes of them at most; returns their bytes.
    fn read_records(&mut self, budget: u64) -> u64 {
        let mut bytes = 0u64;
        while bytes < budget
            && let Some(item) = self.records.next()
        {
            bytes += item.len() as u64;
            match decode(&item) {
                Some(Record::Begin(b)) => {
                    let kernel = self.chains.intern(b.kernel.iter().copied());
                    let user = self.stacks.chain(
                        (b.pid, b.tid, b.time),
                        b.regs,
                        b.stack,
                        b.user.clone(),
                        &mut self.chains,
                        MAX_USER_FRAMES,
                    );
                    self.user_chains.note(b.pid, user);
                    self.traced.insert(b.tid);
                    self.episodes.begin(&b, kernel, user);
                }
                Some(Record::End(e)) => {
                    let chain = match &e.waker {
                        Some((pid, tid, kernel)) => {
                            if !self.traced.contains(tid) {
                                self.wakers_seen.insert((*pid, *tid));
                            }
                            self.chains.intern(kernel.iter().copied())
                        }
                        None => u32::MAX,
                    };
                    self.episodes.end(&e, chain);
                }
                Some(Record::Long(l)) => {
                    let kernel = self.chains.intern(l.kernel.iter().copied());
                    let waker = match &l.waker {
                        Some((pid, tid, chain)) => {
                            if !self.traced.contains(tid) {
                                self.wakers_seen.insert((*pid, *tid));
                            }
                            self.chains.intern(chain.iter().copied())
                        }
                        None => u32::MAX,
                    };
                    self.traced.insert(l.tid);
                    self.episodes.long(&l, kernel, waker);
                }
                Some(Record::Exit(x)) => {
                    let comm = self.names.get(&x.tid).cloned().unwrap_or(x.comm);
                    self.traced.insert(x.tid);
                    self.exited.push((x.tid, x.thread, x.end, x.counters, comm));
                }
                None => self.malformed += 1,
            }
        }
        bytes
    }
}

/// Threads' time from the kernel's accounting over the window, chains sampled from the tasks'
/// release; it follows other processes' trees too. Its records carry no stack copy.
impl Tracer for BpfOffCpuTracer {
    type Trace = OffCpuTrace;

    fn drain(&mut self) -> u64 {
        BpfOffCpuTracer::drain(self);
        0
    }

    fn new_user_chains(&mut self) -> Vec<(u32, Vec<u64>)> {
        BpfOffCpuTracer::new_user_chains(self)
    }

    fn hold_samples(&mut self) {
        BpfOffCpuTracer::hold_samples(self);
    }

    fn sample_from(&mut self, at: u64) {
        BpfOffCpuTracer::sample_from(self, at);
    }

    fn window_opens(&mut self, at: u64) {
        self.account_from(at);
    }

    fn window_closes(&mut self, at: u64) {
        self.account_until(at);
    }

    fn follow_processes(&mut self, pids: &[u32]) -> bool {
        for &pid in pids {
            self.trace_process(pid);
        }
        true
    }

    fn finish(self: Box<Self>, until: u64) -> OffCpuTrace {
        (*self).finish_at(until)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Needs root, BTF and a build that carries the program; says why it skipped otherwise (fails instead
    /// with `SCALELAB_REQUIRE_BPF=1`, as CI sets).
    /// The tracer opened with `config` and accounting from now; `None`, saying why, where it
    /// cannot load (a failure where `SCALELAB_REQUIRE_BPF` is set, as in CI).
    fn tracing_from_now(config: &BpfOffCpuConfig) -> Option<BpfOffCpuTracer> {
        let mut tracer = match BpfOffCpuTracer::open(config) {
            Ok(t) => t,
            Err(e) if std::env::var_os("SCALELAB_REQUIRE_BPF").is_some() => {
                panic!("SCALELAB_REQUIRE_BPF is set and the tracer cannot load: {e}")
            }
            Err(e) => {
                eprintln!("skipped: {e}");
                return None;
            }
        };
        tracer.account_from(sys::clock_gettime_vdso(sys::ClockId::Monotonic));
        Some(tracer)
    }

    #[test]
    fn a_spinning_threads_wall_clock_time_on_a_cpu_covers_its_cpu_time() {
        let Some(mut tracer) = tracing_from_now(&BpfOffCpuConfig::default()) else {
            return;
        };
        let spinner = std::thread::spawn(|| {
            let end = std::time::Instant::now() + std::time::Duration::from_millis(100);
            let mut x = 0u64;
            while std::time::Instant::now() < end {
                x = std::hint::black_box(x.wrapping_add(1));
            }
            sys::gettid() as u32
        });
        let tid = spinner.join().expect("spinner");
        tracer.drain();
        let (_, entry, end, counters, _) = tracer
            .exited
            .iter()
            .find(|(t, ..)| *t == tid)
            .cloned()
            .unwrap_or_else(|| panic!("the spinner {tid} exited traced"));
        let lived = end - entry.begin;
        // Its CPU time (the kernel's, less any steal) fits in its time on a CPU by the switches'
        // clock, which fits in its life; both are most of it, as it never blocked.
        assert!(
            counters.on_cpu <= counters.wall + 1_000_000 && counters.wall <= lived,
            "CPU {} ns, on a CPU {} ns, lived {lived} ns",
            counters.on_cpu,
            counters.wall
        );
        assert!(
            10 * counters.wall >= 5 * lived,
            "{counters:?}, lived {lived}"
        );
        let until = sys::clock_gettime_vdso(sys::ClockId::Monotonic);
        let trace = tracer.finish_at(until);
        let life = trace.threads.iter().find(|t| t.tid == tid).expect("traced");
        assert_eq!(life.life(), lived, "its parts add up to its life: {life:?}");
        assert_eq!(
            life.stolen,
            counters
                .wall
                .saturating_sub(counters.on_cpu)
                .min(lived - life.on_cpu - life.runq)
        );
    }

    #[test]
    fn a_sleeping_thread_is_blocked_for_its_sleep_and_its_episodes_are_sampled() {
        let Some(mut tracer) = tracing_from_now(&BpfOffCpuConfig::default()) else {
            return;
        };
        let sleeper = std::thread::spawn(|| {
            for _ in 0..5 {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            sys::gettid() as u32
        });
        let tid = sleeper.join().expect("sleeper");
        tracer.drain();
        let until = sys::clock_gettime_vdso(sys::ClockId::Monotonic);
        let trace = tracer.finish_at(until);
        let life = trace
            .threads
            .iter()
            .find(|t| t.tid == tid)
            .unwrap_or_else(|| panic!("the sleeper {tid} is traced: {:?}", trace.threads));
        assert!(
            (95_000_000..200_000_000).contains(&life.blocked),
            "five 20 ms sleeps: {life:?}"
        );
        assert!(life.end.is_some(), "it exited: {life:?}");
        let sampling = trace.sampling.expect("a BPF trace counts its sampling");
        assert!(sampling.blocking_switches >= 5, "{sampling:?}");
        let sleeps: Vec<_> = trace.episodes.iter().filter(|e| e.tid == tid).collect();
        // At this rate every blocking switch is sampled (k = 1).
        assert!(sleeps.len() >= 5, "{sleeps:?}");
        // Its five sleeps, and any other wait (a page fault on the mmap_lock, which tests
        // running beside it take).
        let kallsyms = perf_read::Kallsyms::load().expect("kallsyms");
        let chains: Vec<Vec<String>> = sleeps
            .iter()
            .map(|e| {
                trace.chains[e.kernel_chain as usize]
                    .iter()
                    .filter_map(|&ip| kallsyms.function(ip).map(|(s, _)| s.name.clone()))
                    .collect()
            })
            .collect();
        let in_nanosleep = chains
            .iter()
            .filter(|names| names.iter().any(|n| n.contains("nanosleep")))
            .count();
        assert!(
            in_nanosleep >= 5,
            "the sleeps' kernel chains name nanosleep: {chains:?}"
        );
        assert!(
            chains
                .iter()
                .all(|names| !names.first().is_some_and(|n| n.starts_with("bpf_"))),
            "the program's own frames are trimmed: {chains:?}"
        );
        assert!(
            sleeps.iter().all(|e| e.woken && e.weight == 1),
            "{sleeps:?}"
        );
    }

    /// A thread that shares its one CPU with a process spinning there waits for the CPU, and
    /// the wait is charged to that process, by name.
    #[test]
    fn the_wait_for_a_cpu_is_charged_to_the_process_that_held_it() {
        let Ok(before) = sys::current_affinity() else {
            return;
        };
        let cpu = *before.last().expect("a CPU");
        // The hog, pinned first (a child does not inherit what is set after it starts).
        sys::set_current_affinity(&[cpu]).expect("pin");
        let mut hog = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .expect("sh");
        let Some(tracer) = tracing_from_now(&BpfOffCpuConfig::default()) else {
            let _ = hog.kill();
            let _ = hog.wait();
            let _ = sys::set_current_affinity(&before);
            return;
        };
        let end = std::time::Instant::now() + std::time::Duration::from_millis(300);
        let mut x = 0u64;
        while std::time::Instant::now() < end {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let trace = tracer.finish_at(sys::clock_gettime_vdso(sys::ClockId::Monotonic));
        let _ = hog.kill();
        let _ = hog.wait();
        sys::set_current_affinity(&before).expect("unpin");
        let me = trace
            .threads
            .iter()
            .find(|t| t.tid == sys::gettid() as u32)
            .expect("this thread is traced");
        let top = trace
            .runq_holders
            .first()
            .unwrap_or_else(|| panic!("no holder for {} ns of waiting", me.runq));
        assert_eq!(
            (top.pid, top.comm.as_str(), top.kernel_thread),
            (hog.id(), "sh", false),
            "{:?}",
            trace.runq_holders
        );
        // Sharing one CPU for 300 ms, about half of it spent waiting; the holders cover most
        // of the wait (a wait spanning more stints than the ring keeps is charged in part).
        let charged: u64 = trace.runq_holders.iter().map(|h| h.ns).sum();
        assert!(me.runq > 50_000_000, "{me:?}");
        assert!(
            charged as f64 >= 0.5 * me.runq as f64 && charged <= me.runq + me.runq / 10,
            "{charged} ns charged of {} ns waited: {:?}",
            me.runq,
            trace.runq_holders
        );
    }

    /// A thread started here and this one hand a token back and forth `n` times through two
    /// pipes: each hand-off a waking and a blocking switch.
    fn pipe_hand_offs(n: usize) {
        use std::io::{Read, Write};
        let (mut to_partner_rx, mut to_partner_tx) = std::io::pipe().expect("a pipe");
        let (mut back_rx, mut back_tx) = std::io::pipe().expect("a pipe");
        let partner = std::thread::spawn(move || {
            let mut token = [0u8; 1];
            while to_partner_rx.read_exact(&mut token).is_ok() {
                back_tx.write_all(&token).expect("hand back");
            }
        });
        let mut token = [0u8; 1];
        for _ in 0..n {
            to_partner_tx.write_all(&token).expect("hand over");
            back_rx.read_exact(&mut token).expect("handed back");
        }
        drop(to_partner_tx);
        partner.join().expect("partner");
    }

    /// The programs time their own runs in the traced threads' context: two threads handing a
    /// token back and forth cost some of their CPU time in them, a plausible amount per
    /// blocking switch.
    #[test]
    fn the_programs_own_time_in_the_traced_threads_is_counted() {
        let Some(tracer) = tracing_from_now(&BpfOffCpuConfig::default()) else {
            return;
        };
        pipe_hand_offs(2_000);
        let trace = tracer.finish_at(sys::clock_gettime_vdso(sys::ClockId::Monotonic));
        let programs = trace
            .programs_ns
            .expect("the in-kernel tracer times its programs");
        let sampling = trace.sampling.expect("a BPF trace counts its sampling");
        let cpu: u64 = trace.threads.iter().map(|t| t.on_cpu).sum();
        assert!(
            sampling.blocking_switches >= 2_000,
            "every hand-off blocks a reader: {sampling:?}"
        );
        // Part of the threads' CPU time, not all of it; per blocking switch (with its waking
        // and switch-in), between a bare run's tens of nanoseconds and a chain walk's tens of
        // microseconds.
        assert!(
            programs > 0 && programs < cpu,
            "{programs} ns of {cpu} ns of CPU"
        );
        let per_switch = programs as f64 / sampling.blocking_switches as f64;
        assert!(
            (20.0..50_000.0).contains(&per_switch),
            "{per_switch} ns a blocking switch ({programs} ns, {sampling:?})"
        );
        // Each thread carries its own share (the thread whose context ran them), and the
        // shares are the whole, up to the runs between the last reads.
        let hand_offs: Vec<&ThreadLife> = trace.threads.iter().filter(|t| t.blocked > 0).collect();
        assert!(
            hand_offs.len() >= 2 && hand_offs.iter().all(|t| t.programs > 0),
            "{:?}",
            trace.threads
        );
        let shares: u64 = trace.threads.iter().map(|t| t.programs).sum();
        assert!(
            shares.abs_diff(programs) as f64 <= 0.1 * programs as f64,
            "the threads' {shares} ns against the whole {programs} ns: {:?}",
            trace.threads
        );
    }

    /// The programs' cost is estimated from a sample of their runs, each timed; timed all, the
    /// runs' whole agrees with it (a sample picked as every 16th run, in phase with a CPU's
    /// pattern of wakings and switches, would not).
    #[test]
    fn the_estimate_of_the_programs_cost_agrees_with_timing_every_run() {
        let config = BpfOffCpuConfig {
            time_every_run: true,
            ..BpfOffCpuConfig::default()
        };
        let Some(tracer) = tracing_from_now(&config) else {
            return;
        };
        pipe_hand_offs(4_000);
        let runs = ProgramRuns::read(&tracer.bpf).expect("the self_costs map reads");
        drop(tracer);
        let whole = (runs.walk_ns + runs.all_ns) as f64;
        let estimate = runs.estimated_ns() as f64;
        assert!(runs.timed_runs >= 300, "{runs:?}");
        assert!(
            (estimate - whole).abs() <= 0.15 * whole,
            "estimated {estimate} ns against {whole} ns timed whole: {runs:?}"
        );
    }

    /// Sampled 1 in a million, a thread's short sleeps leave nothing, and its one long sleep
    /// (50 ms or more) is in the trace all the same, whole, standing for itself.
    #[test]
    fn a_long_wait_is_recorded_whatever_the_sample() {
        let config = BpfOffCpuConfig {
            fixed_k: 1_000_000,
            ..BpfOffCpuConfig::default()
        };
        let Some(mut tracer) = tracing_from_now(&config) else {
            return;
        };
        let sleeper = std::thread::spawn(|| {
            for _ in 0..3 {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            std::thread::sleep(std::time::Duration::from_millis(70));
            sys::gettid() as u32
        });
        let tid = sleeper.join().expect("sleeper");
        tracer.drain();
        let until = sys::clock_gettime_vdso(sys::ClockId::Monotonic);
        let trace = tracer.finish_at(until);
        let sampling = trace.sampling.expect("a BPF trace counts its sampling");
        assert!(sampling.long >= 1, "{sampling:?}");
        let sleeps: Vec<_> = trace.episodes.iter().filter(|e| e.tid == tid).collect();
        assert_eq!(sleeps.len(), 1, "only the long sleep: {sleeps:?}");
        let long = sleeps[0];
        assert!(
            long.end - long.begin >= 65_000_000 && long.weight == 1 && long.woken,
            "{long:?}"
        );
        let kallsyms = perf_read::Kallsyms::load().expect("kallsyms");
        let names: Vec<String> = trace.chains[long.kernel_chain as usize]
            .iter()
            .filter_map(|&ip| kallsyms.function(ip).map(|(s, _)| s.name.clone()))
            .collect();
        assert!(
            names.iter().any(|n| n.contains("nanosleep")),
            "the chain where it slept names nanosleep: {names:?}"
        );
    }
}
