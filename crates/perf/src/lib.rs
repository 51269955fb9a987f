//! Linux performance observation through `perf_event_open` (the live side), every item from the
//! crate root:
//! - [`InheritedCounters`]: hardware counters inherited by a trial's threads and children.
//! - [`LockTracer`]: the lock and futex tracepoints, paired into waits ([`LockTrace`]).
//! - [`OffCpuTracer`]: the scheduler's switch and wake-up tracepoints, paired into blocked
//!   episodes with their call chains ([`OffCpuTrace`]).
//! - [`BpfOffCpuTracer`]: the same threads' time summed in the kernel by a BPF program, with
//!   a sample of the blocking switches' call chains (the cheap path for `--offcpu`).
//! - [`BpfLockTracer`]: lock and futex waits summed per lock in the kernel by a BPF program,
//!   with a sample of their call chains (the cheap path for `--locks`).
//! - [`read_profile`]: a `perf record` file read, symbolised and aggregated ([`Profile`]), and
//!   [`Kallsyms`], [`UserSymbols`] (kernel and user addresses to names): the offline side,
//!   which lives in `perf_read` (the analysis reads profiles without linking this crate's live
//!   capture) and is re-exported here.
//!
//! Counters are owned by types whose `Drop` closes the fds, and an unavailable counter is
//! never silently zero: it carries a [`PerfError`] text naming the event, the errno and the fix.
#![warn(missing_docs, unreachable_pub)]

mod bpf;
mod counters;
mod locks;
mod offcpu;
mod trace;
mod tracer;

pub use bpf::self_cost::ProgramRuns;
pub use counters::event::{CounterReading, HwEvent};
pub use counters::inherited::InheritedCounters;
pub use locks::bpf::{BpfLockConfig, BpfLockTracer, FutexTiming};
pub use locks::events::{FutexWait, KernelWait, LockSamplingTally, LockTotal, LockTrace};
pub use locks::perf::{FUTEX_FLAG_BITS, LockTraceConfig, LockTracer};
pub use offcpu::bpf::{BpfOffCpuConfig, BpfOffCpuTracer};
pub use offcpu::events::{
    BlockedEpisode, IdleCpu, OffCpuTrace, RunqHolder, ThreadLife, Waker, WakerName,
};
pub use offcpu::idle_probe::{IdleProbe, probe_idle_tracing};
pub use offcpu::perf::{OffCpuTraceConfig, OffCpuTracer};
pub use offcpu::sampling::SamplingTally;
pub use trace::ring::record_ring_bytes;
pub use tracer::Tracer;
// The offline side, re-exported so that the engine names one `perf` (the analysis depends on
// `perf_read` alone).
pub use perf_read::{
    DEFAULT_STACK_SIZE, DsoCost, FunctionCost, Kallsyms, KernelSymbol, MAX_STACK_SIZE, MappedFile,
    NO_KALLSYMS_NOTE, PerfError, Profile, ProfileOptions, StackCost, UserFrame, UserSymbols,
    check_stack_size, kallsyms_has_addresses, read_profile,
};
