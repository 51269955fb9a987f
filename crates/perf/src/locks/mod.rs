//! `--locks`: kernel lock and futex waits, traced two ways that return one [`crate::LockTrace`].
//!
//! `events` (the waits and their pairing, pure), `perf` ([`crate::LockTracer`]: every wait
//! through perf's ring buffers) and `bpf` ([`crate::BpfLockTracer`]: summed in the kernel, a
//! sample of the chains). Both implement [`crate::Tracer`]. Nothing here imports `offcpu`
//! outside tests.

pub(crate) mod bpf;
pub(crate) mod events;
pub(crate) mod perf;
