//! Linux performance observation through `perf_event_open`, every item from the crate root:
//! - [`InheritedCounters`]: hardware counters inherited by a trial's threads and children.
//! - [`LockTracer`]: the lock and futex tracepoints, paired into waits ([`LockTrace`]).
//! - [`OffCpuTracer`]: the scheduler's switch and wake-up tracepoints, paired into blocked
//!   episodes with their call chains ([`OffCpuTrace`]).
//! - [`read_profile`]: a `perf record` file read, symbolised and aggregated ([`Profile`]).
//! - [`Kallsyms`], [`UserSymbols`]: kernel and user addresses to names.
//!
//! Counters are owned by types whose `Drop` closes the fds, and an unavailable counter is
//! never silently zero: it carries a [`PerfError`] text naming the event, the errno and the fix.
#![warn(missing_docs, unreachable_pub)]

mod elf_symbols;
mod error;
mod event;
mod idle_probe;
mod inherited;
mod inherited_group;
mod kallsyms;
mod lock_events;
mod lock_tracer;
mod mapping_stream;
#[cfg(test)]
mod mutation;
mod offcpu_events;
mod offcpu_tracer;
mod profile;
mod thread_timeline;
mod trace_ring;
mod tracefs;
mod unwind;
mod user_symbols;

pub use error::PerfError;
pub use event::{CounterReading, HwEvent};
pub use idle_probe::{IdleProbe, probe_idle_tracing};
pub use inherited::InheritedCounters;
pub use kallsyms::{Kallsyms, KernelSymbol};
pub use lock_events::{FutexWait, KernelWait, LockTrace};
pub use lock_tracer::{FUTEX_FLAG_BITS, LockTraceConfig, LockTracer};
pub use offcpu_events::{BlockedEpisode, IdleCpu, OffCpuTrace, Waker, WakerName};
pub use offcpu_tracer::{OffCpuTraceConfig, OffCpuTracer};
pub use profile::{
    DsoCost, FunctionCost, NO_KALLSYMS_NOTE, Profile, ProfileOptions, StackCost,
    kallsyms_has_addresses, read_profile,
};
pub use thread_timeline::ThreadLife;
pub use trace_ring::record_ring_bytes;
pub use unwind::{DEFAULT_STACK_SIZE, MAX_STACK_SIZE, MappedFile, check_stack_size};
pub use user_symbols::{UserFrame, UserSymbols};
