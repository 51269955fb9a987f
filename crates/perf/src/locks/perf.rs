//! [`LockTracer`]: kernel lock contention (`lock:contention_begin/end`) and futex waits
//! (`syscalls:sys_enter_futex/sys_exit_futex`) of the calling thread and every thread and process
//! it creates afterwards, every one read through per-CPU perf ring buffers and paired in user
//! space.
//!
//! Open it before the tasks exist and drain it often (every 10 ms or so under contention); futex
//! waits carry a copy of the user stack, unwound at drain time, so their chains go on through
//! code built without frame pointers. It decodes only its four tracepoints and owns its fds
//! (closed on drop). How the events are opened, and why: `docs/notes/perf-tracers.md`.

use perf_event::events::Tracepoint;
use perf_event::{Builder, Clock, Counter, SampleFlag};

use crate::locks::events::{LockEvent, LockTrace, Pairing, TimedEvent};
use crate::trace::mappings::MappingStream;
use crate::trace::pairing::PairingEngine;
use crate::trace::ring::{
    PERF_RECORD_SAMPLE, TRACER_BUDGET_BYTES, UnwindCache, UnwindState, cached_user_chain,
    online_cpus, ring_bytes, set_filter,
};
use crate::trace::sample::{ChainTable, Field, parse_sample, split_chain};
use crate::trace::stream::{FreshChains, Stream, read_streams};
use crate::trace::tracefs::TracepointFormat;
use crate::tracer::Tracer;
use perf_read::error::PerfError;
use perf_read::unwind::{DEFAULT_STACK_SIZE, REGS_MASK, Unwinder};

/// Frames kept per call chain.
const MAX_STACK: u16 = 48;

/// The futex operations that wait (`FUTEX_CMD_MASK` applied): WAIT, LOCK_PI, WAIT_BITSET,
/// WAIT_REQUEUE_PI, LOCK_PI2.
pub(crate) const FUTEX_WAIT_OPS: [u32; 5] = [0, 6, 9, 11, 13];
/// `FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME`.
pub const FUTEX_FLAG_BITS: u32 = 128 | 256;

/// What to trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LockTraceConfig {
    /// Trace kernel lock contention (`lock:contention_begin`/`end`).
    pub kernel: bool,
    /// Trace futex waits (`syscalls:sys_enter_futex`/`sys_exit_futex`), the user-space locks.
    pub user: bool,
    /// Ring buffer data size per event per CPU, in bytes (rounded up to a power of two; lowered
    /// so that all buffers together stay under 64 MiB on machines with many CPUs).
    pub buffer_bytes: usize,
    /// Bytes of user stack copied with each futex wait for unwinding (`--stack-size`; a
    /// multiple of 8 up to 65528, see [`check_stack_size`](crate::check_stack_size)); 0
    /// unwinds by frame pointer only.
    pub stack_size: u32,
}

impl Default for LockTraceConfig {
    fn default() -> Self {
        LockTraceConfig {
            kernel: true,
            user: true,
            buffer_bytes: 1 << 20,
            stack_size: DEFAULT_STACK_SIZE,
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Begin {
        lock: Field,
        flags: Field,
    },
    End {
        lock: Field,
    },
    /// `stack`: the samples carry `REGS_USER | STACK_USER`.
    Enter {
        uaddr: Field,
        op: Field,
        stack: bool,
    },
    Exit {
        ret: Field,
    },
}

impl Kind {
    fn callchain(self) -> bool {
        matches!(self, Kind::Begin { .. } | Kind::Enter { .. })
    }
}

/// Open lock/futex tracepoint events with their ring buffers; `Drop` unmaps and closes them.
#[derive(Debug)]
pub struct LockTracer {
    streams: Vec<Stream<Kind>>,
    pending: PairingEngine<Pairing>,
    chains: ChainTable,
    lost: u64,
    malformed: u64,
    /// The user chains of futex wait entries, those not yet handed out by
    /// [`LockTracer::new_user_chains`] apart.
    user_chains: FreshChains,
    unwinder: Unwinder,
    /// Processes whose maps were re-read during this drain (at most once each).
    reloaded: Vec<i32>,
    /// Exec, fork and mmap records: mappings of processes gone before their samples drain.
    mappings: MappingStream,
    /// Unwound user chains: a hot lock's waits, all from one call site, are unwound once.
    unwound: UnwindCache,
    /// Futex wait entries read.
    futex_seen: u64,
    /// The kernel's count of futex wait entries (no ring buffer: nothing lost).
    wait_counter: Option<Counter>,
}

/// True for a stream whose records carry a user stack copy.
fn has_stack(kind: &Kind) -> bool {
    matches!(kind, Kind::Enter { stack: true, .. })
}

/// The ring buffer sizes of a lock tracer: locked memory stays bounded on big machines, half
/// of [`TRACER_BUDGET_BYTES`] for the futex entries' rings (their records carry a stack copy:
/// room for 1024 of them as far as it goes), half for the other streams' ([`ring_bytes`]).
struct RingSizes {
    /// Rings with stack copies, and each one's size.
    stack_rings: usize,
    stack: usize,
    /// The other rings, and each one's size.
    plain_rings: usize,
    plain: usize,
}

impl RingSizes {
    fn new(config: &LockTraceConfig, kinds: &[Kind], cpus: usize) -> RingSizes {
        let cpus = cpus.max(1);
        let stack_size = config.stack_size.min(perf_read::MAX_STACK_SIZE) & !7;
        let stack_rings = cpus * kinds.iter().filter(|k| has_stack(k)).count();
        let plain_rings = cpus * kinds.len() - stack_rings;
        RingSizes {
            stack_rings,
            stack: ring_bytes(
                (1024 * stack_size as usize).max(config.buffer_bytes),
                stack_rings,
                TRACER_BUDGET_BYTES / 2,
            ),
            plain_rings,
            plain: ring_bytes(config.buffer_bytes, plain_rings, TRACER_BUDGET_BYTES / 2),
        }
    }

    fn total(&self) -> usize {
        self.stack_rings * self.stack + self.plain_rings * self.plain
    }
}

fn field(format: &TracepointFormat, name: &str) -> Result<Field, PerfError> {
    let f = format.field(name)?;
    Ok(Field {
        offset: f.offset,
        size: f.size,
        signed: f.signed,
    })
}

/// A counting event of the traced tasks' futex wait entries (the filter `filter`), inherited:
/// what exited children counted is added to it. `None` where the kernel refuses one.
fn open_wait_counter(filter: &str) -> Option<Counter> {
    let format = TracepointFormat::read("syscalls", "sys_enter_futex").ok()?;
    let mut counter = Builder::new(Tracepoint::with_id(format.id))
        .observe_self()
        .any_cpu()
        .inherit(true)
        .include_kernel()
        .exclude_hv(true)
        .enabled(false)
        .build()
        .ok()?;
    set_filter(&counter, filter).ok()?;
    counter.enable().ok()?;
    Some(counter)
}

/// The kernel filter keeping only the futex wait operations, e.g. `op == 0 || op == 128 || …`.
fn futex_wait_filter() -> String {
    let mut terms = Vec::new();
    for cmd in FUTEX_WAIT_OPS {
        for flags in [0, 128, 256, 384] {
            terms.push(format!("op == {}", cmd | flags));
        }
    }
    terms.join(" || ")
}

impl LockTracer {
    /// Checks, without opening anything, that the tracepoints `config` needs exist and their
    /// formats are readable; the error names the fix.
    pub fn check(config: &LockTraceConfig) -> Result<(), PerfError> {
        if config.kernel {
            let b = TracepointFormat::read("lock", "contention_begin")?;
            b.field("lock_addr")?;
            b.field("flags")?;
            TracepointFormat::read("lock", "contention_end")?.field("lock_addr")?;
        }
        if config.user {
            let e = TracepointFormat::read("syscalls", "sys_enter_futex")?;
            e.field("uaddr")?;
            e.field("op")?;
            TracepointFormat::read("syscalls", "sys_exit_futex")?.field("ret")?;
        }
        Ok(())
    }

    /// The ring buffer memory a tracer of `config` locks on a machine of `cpus` online CPUs,
    /// in bytes, its side-band mapping records' rings included (see [`RingSizes`]).
    pub fn locked_bytes(config: &LockTraceConfig, cpus: usize) -> usize {
        let field = Field {
            offset: 0,
            size: 8,
            signed: false,
        };
        let mut kinds = Vec::new();
        if config.kernel {
            kinds.extend([
                Kind::Begin {
                    lock: field,
                    flags: field,
                },
                Kind::End { lock: field },
            ]);
        }
        if config.user {
            kinds.extend([
                Kind::Enter {
                    uaddr: field,
                    op: field,
                    stack: config.stack_size >= 8,
                },
                Kind::Exit { ret: field },
            ]);
        }
        RingSizes::new(config, &kinds, cpus).total() + MappingStream::locked_bytes(cpus)
    }

    /// Opens the events on the calling thread, inherited by the threads and processes it
    /// creates from now on. Call it from the thread that then creates every task.
    pub fn open(config: &LockTraceConfig) -> Result<LockTracer, PerfError> {
        let mut specs: Vec<(&'static str, TracepointFormat, Kind)> = Vec::new();
        if config.kernel {
            let b = TracepointFormat::read("lock", "contention_begin")?;
            let kind = Kind::Begin {
                lock: field(&b, "lock_addr")?,
                flags: field(&b, "flags")?,
            };
            specs.push(("lock:contention_begin", b, kind));
            let e = TracepointFormat::read("lock", "contention_end")?;
            let kind = Kind::End {
                lock: field(&e, "lock_addr")?,
            };
            specs.push(("lock:contention_end", e, kind));
        }
        if config.user {
            let en = TracepointFormat::read("syscalls", "sys_enter_futex")?;
            let kind = Kind::Enter {
                uaddr: field(&en, "uaddr")?,
                op: field(&en, "op")?,
                stack: config.stack_size >= 8,
            };
            specs.push(("syscalls:sys_enter_futex", en, kind));
            let ex = TracepointFormat::read("syscalls", "sys_exit_futex")?;
            let kind = Kind::Exit {
                ret: field(&ex, "ret")?,
            };
            specs.push(("syscalls:sys_exit_futex", ex, kind));
        }
        let filter = futex_wait_filter();
        let cpus = online_cpus();
        let mappings = MappingStream::open(&cpus)?;
        let stack_size = config.stack_size.min(perf_read::MAX_STACK_SIZE) & !7;
        let kinds: Vec<Kind> = specs.iter().map(|(_, _, k)| *k).collect();
        let sizes = RingSizes::new(config, &kinds, cpus.len());
        let (buffer_bytes, stack_bytes) = (sizes.plain, sizes.stack);
        let mut streams = Vec::new();
        for cpu in cpus {
            for (name, format, kind) in &specs {
                let mut flags =
                    SampleFlag::TID | SampleFlag::TIME | SampleFlag::CPU | SampleFlag::RAW;
                if kind.callchain() {
                    flags |= SampleFlag::CALLCHAIN;
                }
                let user_stack = matches!(kind, Kind::Enter { stack: true, .. });
                if user_stack {
                    flags |= SampleFlag::REGS_USER | SampleFlag::STACK_USER;
                }
                let mut builder = Builder::new(Tracepoint::with_id(format.id));
                builder
                    .observe_self()
                    .one_cpu(cpu)
                    .inherit(true)
                    .include_kernel()
                    .exclude_hv(true)
                    .sample_period(1)
                    .sample(flags)
                    .clockid(Clock::MONOTONIC)
                    .enabled(true);
                match kind {
                    Kind::Begin { .. } => {
                        builder
                            .exclude_callchain_user(true)
                            .sample_max_stack(MAX_STACK);
                    }
                    Kind::Enter { .. } => {
                        builder
                            .exclude_callchain_kernel(true)
                            .sample_max_stack(MAX_STACK);
                        if user_stack {
                            builder
                                .sample_regs_user(REGS_MASK)
                                .sample_stack_user(stack_size);
                        }
                    }
                    _ => {}
                }
                let counter = builder.build().map_err(|e| PerfError::open(name, &e))?;
                if matches!(kind, Kind::Enter { .. }) {
                    set_filter(&counter, &filter).map_err(|e| PerfError::open(name, &e))?;
                }
                // A stack copy makes futex records large (the kernel writes the whole copy,
                // however little of it is in use).
                let bytes = if user_stack {
                    stack_bytes
                } else {
                    buffer_bytes
                };
                let sampler = counter
                    .sampled(bytes)
                    .map_err(|e| PerfError::open(name, &e))?;
                streams.push(Stream {
                    kind: *kind,
                    sampler,
                });
            }
        }
        let wait_counter = if config.user {
            open_wait_counter(&filter)
        } else {
            None
        };
        Ok(LockTracer {
            streams,
            pending: PairingEngine::default(),
            chains: ChainTable::default(),
            lost: 0,
            malformed: 0,
            user_chains: FreshChains::default(),
            unwinder: Unwinder::default(),
            reloaded: Vec::new(),
            mappings,
            unwound: UnwindCache::new(),
            futex_seen: 0,
            wait_counter,
        })
    }

    /// Empties every ring buffer and pairs what is old enough to be in order; returns the
    /// futex wait entries read, so that a caller draining a busy trace can drain sooner (each
    /// carries a stack copy: the rings hold about a thousand).
    pub fn drain(&mut self) -> u64 {
        let now = sys::clock_gettime_vdso(sys::ClockId::Monotonic);
        let before = self.futex_seen;
        self.reloaded.clear();
        self.mappings.apply(&mut self.unwinder);
        self.read_all();
        self.pending.settle(now);
        self.futex_seen - before
    }

    /// The user call chains of futex wait entries first seen (per process) since the last
    /// call, as `(pid, addresses)`, read by the last [`drain`](LockTracer::drain). A command's
    /// processes may be gone by [`finish`](LockTracer::finish): their addresses must be
    /// symbolised while they live (`UserSymbols::resolve(pid, …)`), so call this after each drain.
    pub fn new_user_chains(&mut self) -> Vec<(u32, Vec<u64>)> {
        self.user_chains.take(&self.chains)
    }

    /// Stops tracing and returns every wait seen.
    pub fn finish(mut self) -> LockTrace {
        for s in &mut self.streams {
            s.disable();
        }
        self.mappings.disable();
        self.mappings.apply(&mut self.unwinder);
        self.read_all();
        let pairing = self.pending.finish(u64::MAX);
        let unpaired = pairing.still_open() + pairing.unmatched_ends;
        let pids: std::collections::BTreeSet<u32> = pairing.futex.iter().map(|w| w.pid).collect();
        let maps = self.unwinder.maps_of(pids);
        LockTrace {
            maps,
            kernel: pairing.kernel,
            futex: pairing.futex,
            chains: std::mem::take(&mut self.chains).into_chains(),
            lost: self.lost + self.mappings.lost,
            unpaired: unpaired + self.malformed,
            futex_seen: self.futex_seen,
            futex_counted: self.wait_counter.as_mut().and_then(|c| {
                let _ = c.disable();
                c.read().ok()
            }),
            totals: None,
            sampling: None,
            programs_ns: None,
            thread_programs_ns: std::collections::HashMap::new(),
        }
    }

    fn read_all(&mut self) {
        let mut deferred: Vec<(Kind, Vec<u8>)> = Vec::new();
        // Out of `self` while read, so that each record can be handed to `self.accept`.
        let mut streams = std::mem::take(&mut self.streams);
        self.lost += read_streams(&mut streams, usize::MAX, |kind, record| {
            if record.ty != PERF_RECORD_SAMPLE {
                return;
            }
            let unwind = UnwindState {
                unwinder: &mut self.unwinder,
                reloaded: &mut self.reloaded,
                defer: true,
            };
            let cache = &mut self.unwound;
            match decode(kind, record.body, &mut self.chains, Some(unwind), cache) {
                Decoded::Event(e) => self.accept(e),
                Decoded::Defer => deferred.push((kind, record.body.to_vec())),
                Decoded::Malformed => self.malformed += 1,
            }
        });
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
            match decode(
                kind,
                &body,
                &mut self.chains,
                Some(unwind),
                &mut self.unwound,
            ) {
                Decoded::Event(e) => self.accept(e),
                Decoded::Defer | Decoded::Malformed => self.malformed += 1,
            }
        }
    }

    fn accept(&mut self, e: TimedEvent) {
        if let LockEvent::FutexEnter { chain, .. } = e.event {
            self.futex_seen += 1;
            self.user_chains.note(e.pid, chain);
        }
        self.pending.push(e);
    }
}

/// A decoded sample, or why there is none.
enum Decoded {
    Event(TimedEvent),
    /// Its user stack waits for its process's mappings ([`UnwindState::defer`]).
    Defer,
    Malformed,
}

fn decode(
    kind: Kind,
    body: &[u8],
    chains: &mut ChainTable,
    unwind: Option<UnwindState<'_>>,
    cache: &mut UnwindCache,
) -> Decoded {
    let user_stack = matches!(kind, Kind::Enter { stack: true, .. });
    let Some(s) = parse_sample(body, kind.callchain(), user_stack) else {
        return Decoded::Malformed;
    };
    let event = match kind {
        Kind::Begin { lock, flags } => match (lock.read(s.raw), flags.read(s.raw)) {
            (Some(lock), Some(flags)) => LockEvent::Begin {
                lock,
                flags: flags as u32,
                chain: chains.intern(s.callchain.into_iter()),
            },
            _ => return Decoded::Malformed,
        },
        Kind::End { lock } => match lock.read(s.raw) {
            Some(lock) => LockEvent::End { lock },
            None => return Decoded::Malformed,
        },
        Kind::Enter { uaddr, op, .. } => {
            let (Some(uaddr), Some(op)) = (uaddr.read(s.raw), op.read(s.raw)) else {
                return Decoded::Malformed;
            };
            let chain = match unwind {
                Some(mut u) => {
                    let user_fp = split_chain(&s.callchain).1;
                    let max = usize::from(MAX_STACK);
                    match cached_user_chain(&s, user_fp, &mut u, cache, chains, max) {
                        Some(chain) => chain,
                        None => return Decoded::Defer,
                    }
                }
                None => chains.intern(s.callchain.clone().into_iter()),
            };
            LockEvent::FutexEnter {
                uaddr,
                op: op as u32,
                chain,
            }
        }
        Kind::Exit { ret } => match ret.read(s.raw) {
            Some(ret) => LockEvent::FutexExit { ret: ret as i64 },
            None => return Decoded::Malformed,
        },
    };
    Decoded::Event(TimedEvent {
        time: s.time,
        pid: s.pid,
        tid: s.tid,
        event,
    })
}

/// Every wait through perf's ring buffers: no window, no sampling, no process to add.
impl Tracer for LockTracer {
    type Trace = LockTrace;

    fn drain(&mut self) -> u64 {
        LockTracer::drain(self)
    }

    fn new_user_chains(&mut self) -> Vec<(u32, Vec<u64>)> {
        LockTracer::new_user_chains(self)
    }

    fn finish(self: Box<Self>, _until: u64) -> LockTrace {
        LockTracer::finish(*self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The figures docs/locks.md gives: a lock tracer's locked memory (kernel and user, 16 KiB
    /// stacks) and an off-CPU tracer's, by CPU count, never above their budgets (64 MiB each
    /// plus the side band's 8 MiB) up to 1024 CPUs; beyond, rings reach their one-page floor
    /// and the memory grows with the CPUs (4096 CPUs: 96 MiB for --locks).
    #[test]
    fn tracer_memory_is_bounded_whatever_the_cpu_count() {
        let locks = LockTraceConfig::default();
        let offcpu = crate::offcpu::perf::OffCpuTraceConfig::default();
        for cpus in [1usize, 2, 64, 512, 1024] {
            let l = LockTracer::locked_bytes(&locks, cpus);
            let o = crate::offcpu::perf::OffCpuTracer::locked_bytes(&offcpu, cpus);
            eprintln!(
                "{cpus} CPUs: --locks {:.1} MiB, --offcpu {:.1} MiB",
                l as f64 / (1 << 20) as f64,
                o as f64 / (1 << 20) as f64
            );
            assert!(l <= (64 + 8) << 20, "{cpus} CPUs: --locks {l} bytes");
            assert!(o <= (64 + 8) << 20, "{cpus} CPUs: --offcpu {o} bytes");
        }
        // At 512 CPUs each futex ring still holds 2 stack-carrying records per ring page.
        let sizes = RingSizes::new(
            &locks,
            &[
                Kind::Enter {
                    uaddr: Field {
                        offset: 0,
                        size: 8,
                        signed: false,
                    },
                    op: Field {
                        offset: 0,
                        size: 8,
                        signed: false,
                    },
                    stack: true,
                },
                Kind::Exit {
                    ret: Field {
                        offset: 0,
                        size: 8,
                        signed: true,
                    },
                },
            ],
            512,
        );
        assert_eq!(sizes.stack, 64 << 10);
        assert_eq!(sizes.plain, 64 << 10);
    }

    #[test]
    fn the_filter_lists_every_wait_op_with_every_flag_combination() {
        let f = futex_wait_filter();
        assert!(f.starts_with("op == 0 || op == 128 || op == 256 || op == 384 || op == 6"));
        assert!(f.contains("op == 393")); // WAIT_BITSET | PRIVATE | CLOCK_REALTIME
        assert_eq!(f.matches("op ==").count(), 20);
    }

    /// `lock:contention_begin`'s format as tracefs gives it (Linux 6.1, x86_64).
    const BEGIN_FORMAT: &str = "name: contention_begin\nID: 408\nformat:\n\
        \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
        \tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
        \tfield:void * lock_addr;\toffset:8;\tsize:8;\tsigned:0;\n\
        \tfield:unsigned int flags;\toffset:16;\tsize:4;\tsigned:0;\n";

    /// A sample body as the kernel writes it for `TID | TIME | CPU | [CALLCHAIN] | RAW`.
    fn sample_body(chain: Option<&[u64]>, raw: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&4242u32.to_le_bytes()); // pid
        b.extend_from_slice(&4243u32.to_le_bytes()); // tid
        b.extend_from_slice(&1_000_000u64.to_le_bytes()); // time
        b.extend_from_slice(&1u32.to_le_bytes()); // cpu
        b.extend_from_slice(&0u32.to_le_bytes()); // reserved
        if let Some(chain) = chain {
            b.extend_from_slice(&(chain.len() as u64).to_le_bytes());
            for ip in chain {
                b.extend_from_slice(&ip.to_le_bytes());
            }
        }
        b.extend_from_slice(&(raw.len() as u32).to_le_bytes());
        b.extend_from_slice(raw);
        b
    }

    /// Every other case, one number of a format text replaced by an extreme one (byte edits
    /// alone rarely make a number huge).
    fn big_number(case: u64, text: &[u8]) -> Vec<u8> {
        const EXTREMES: [&str; 5] = [
            "0",
            "65536",
            "4294967295",
            "9223372036854775807",
            "18446744073709551615",
        ];
        let mut runs = Vec::new();
        let mut at = 0;
        while at < text.len() {
            let len = text[at..].iter().take_while(|b| b.is_ascii_digit()).count();
            if len > 0 {
                runs.push(at..at + len);
            }
            at += len.max(1);
        }
        let mut out = text.to_vec();
        if case % 2 == 0 && !runs.is_empty() {
            let run = runs[(case / 2) as usize % runs.len()].clone();
            let extreme = EXTREMES[(case / 7) as usize % EXTREMES.len()];
            out.splice(run, extreme.bytes());
        }
        out
    }

    /// CI's fuzzing of the tracepoint decoding: 2,000 seeded mutations of each tracepoint's
    /// sample (decoded as every kind, so layouts mismatch too) and 2,000 of a tracefs format
    /// (its fields then read from a record). A sample decodes or is refused; nothing panics.
    #[test]
    fn mutated_tracepoint_records_decode_or_are_refused_never_panic() {
        use std::io::Write;
        use std::panic::{AssertUnwindSafe, catch_unwind};

        use crate::trace::tracefs::parse_format;
        use perf_read::mutation::Mutator;

        const CASES: u64 = 2_000;
        const SEED: u64 = 0x10c5_7ace;
        let field = |offset, size, signed| Field {
            offset,
            size,
            signed,
        };
        let kinds = [
            Kind::Begin {
                lock: field(8, 8, false),
                flags: field(16, 4, false),
            },
            Kind::End {
                lock: field(8, 8, false),
            },
            Kind::Enter {
                uaddr: field(16, 8, false),
                op: field(24, 8, false),
                stack: false,
            },
            Kind::Enter {
                uaddr: field(16, 8, false),
                op: field(24, 8, false),
                stack: true,
            },
            Kind::Exit {
                ret: field(16, 8, true),
            },
        ];
        let mut raw = vec![0u8; 32];
        raw[8..16].copy_from_slice(&0xffff_8880_1234_5678u64.to_le_bytes());
        let seeds = [
            sample_body(
                Some(&[-128i64 as u64, 0xffff_ffff_8100_0000, 0xffff_ffff_8200_0000]),
                &raw[..20],
            ),
            sample_body(None, &raw[..16]),
            sample_body(Some(&[-512i64 as u64, 0x5555_0000_1000]), &raw),
            sample_body(None, &raw[..24]),
            {
                // With REGS_USER (abi, BP, SP, IP) and a 64-byte STACK_USER copy.
                let mut b = sample_body(Some(&[-512i64 as u64, 0x5555_0000_1000]), &raw);
                for v in [
                    2u64,
                    0x7ffd_0000_0100,
                    0x7ffd_0000_0000,
                    0x5555_0000_1000,
                    64,
                ] {
                    b.extend_from_slice(&v.to_le_bytes());
                }
                b.extend_from_slice(&[0x55; 64]);
                b.extend_from_slice(&48u64.to_le_bytes());
                b
            },
        ];
        let hot = [0..24, 24..48];
        let mutator = Mutator::new(SEED);
        let (mut decoded, mut refused, mut fields_read) = (0u64, 0u64, 0u64);
        let mut chains = ChainTable::default();
        let mut pairing = Pairing::default();
        let mut unwinder = Unwinder::default();
        let mut reloaded = Vec::new();
        let mut cache = UnwindCache::new();
        let mut panics = Vec::new();
        for case in 0..CASES {
            let body = mutator.mutate(case, &seeds[case as usize % seeds.len()], &hot);
            let text = big_number(case, &mutator.mutate(case, BEGIN_FORMAT.as_bytes(), &[]));
            let outcome = catch_unwind(AssertUnwindSafe(|| {
                for kind in kinds {
                    let unwind = UnwindState {
                        unwinder: &mut unwinder,
                        reloaded: &mut reloaded,
                        defer: false,
                    };
                    match decode(kind, &body, &mut chains, Some(unwind), &mut cache) {
                        Decoded::Event(e) => {
                            pairing.feed(&e);
                            decoded += 1;
                        }
                        Decoded::Defer | Decoded::Malformed => refused += 1,
                    }
                }
                let text = String::from_utf8_lossy(&text);
                if let Some(format) = parse_format("lock:contention_begin", &text) {
                    for f in &format.fields {
                        let f = field(f.offset, f.size, f.signed);
                        fields_read += u64::from(f.read(&body).is_some());
                    }
                }
            }));
            if outcome.is_err() {
                panics.push(case);
            }
        }
        assert!(
            panics.is_empty(),
            "mutated tracepoint records panicked in cases {panics:?} (seed {SEED:#x})"
        );
        assert!(
            decoded > 0 && refused > 0,
            "{decoded} decoded, {refused} refused"
        );
        // Straight to stderr, past libtest's capture: CI's log shows how many mutations ran.
        let _ = writeln!(
            std::io::stderr(),
            "tracepoint mutations: {CASES} samples x {} decoders and {CASES} formats ran (seed {SEED:#x}): \
             {decoded} decoded, {refused} refused, {fields_read} fields read, 0 panics",
            kinds.len()
        );
    }

    /// Needs root (or CAP_PERFMON) and a mounted tracefs; says why it skipped otherwise.
    #[test]
    fn futex_waits_of_a_new_thread_are_traced_with_their_call_chains() {
        use std::sync::atomic::{AtomicU32, Ordering};
        let config = LockTraceConfig::default();
        let mut tracer = match LockTracer::open(&config) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("skipped: lock tracing unavailable here: {e}");
                return;
            }
        };
        static WORD: AtomicU32 = AtomicU32::new(0);
        let waiter = std::thread::spawn(|| {
            while WORD.load(Ordering::Acquire) == 0 {
                sys::futex_wait(&WORD, 0, Some(std::time::Duration::from_millis(20))).unwrap();
            }
        });
        std::thread::sleep(std::time::Duration::from_millis(50));
        tracer.drain();
        WORD.store(1, Ordering::Release);
        sys::futex_wake(&WORD, 1).unwrap();
        waiter.join().unwrap();
        let trace = tracer.finish();
        let addr = WORD.as_ptr() as u64;
        let mine: Vec<_> = trace.futex.iter().filter(|w| w.uaddr == addr).collect();
        assert!(
            !mine.is_empty(),
            "no futex wait on {addr:#x}: {:?}",
            trace.futex
        );
        assert!(
            mine.iter()
                .all(|w| w.op & !FUTEX_FLAG_BITS == 0 && w.wait() > 0)
        );
        let chain = &trace.chains[mine[0].chain as usize];
        assert!(chain.len() >= 2, "user call chain too short: {chain:x?}");
        assert_eq!(trace.lost, 0);
    }
}
