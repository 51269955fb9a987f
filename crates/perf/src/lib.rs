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

mod bpf_load;
mod bpf_locks;
mod bpf_offcpu;
mod bpf_offcpu_records;
mod drain_pace;
mod event;
mod idle_probe;
mod inherited;
mod inherited_group;
mod lock_events;
mod lock_tracer;
mod mapping_stream;
mod offcpu_events;
mod offcpu_tracer;
mod pairing_engine;
mod self_cost;
mod thread_timeline;
mod trace_ring;
mod trace_stream;
mod trace_throughput;
mod tracefs;

pub use bpf_locks::{BpfLockConfig, BpfLockTracer, FutexTiming};
pub use bpf_offcpu::{BpfOffCpuConfig, BpfOffCpuTracer};
pub use bpf_offcpu_records::SamplingTally;
pub use event::{CounterReading, HwEvent};
pub use idle_probe::{IdleProbe, probe_idle_tracing};
pub use inherited::InheritedCounters;
pub use lock_events::{FutexWait, KernelWait, LockSamplingTally, LockTotal, LockTrace};
pub use lock_tracer::{FUTEX_FLAG_BITS, LockTraceConfig, LockTracer};
pub use offcpu_events::{
    BlockedEpisode, IdleCpu, OffCpuTrace, RunqHolder, ThreadLife, Waker, WakerName,
};
pub use offcpu_tracer::{OffCpuTraceConfig, OffCpuTracer};
pub use self_cost::ProgramRuns;
pub use trace_ring::record_ring_bytes;
// The offline side, re-exported so that the engine names one `perf` (the analysis depends on
// `perf_read` alone).
pub use perf_read::{
    DEFAULT_STACK_SIZE, DsoCost, FunctionCost, Kallsyms, KernelSymbol, MAX_STACK_SIZE, MappedFile,
    NO_KALLSYMS_NOTE, PerfError, Profile, ProfileOptions, StackCost, UserFrame, UserSymbols,
    check_stack_size, kallsyms_has_addresses, read_profile,
};
