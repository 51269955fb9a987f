//! The plumbing of the perf-ring tracers ([`crate::LockTracer`], [`crate::OffCpuTracer`]):
//! tracefs formats, per-CPU ring buffers, the record-reading loop, sample parsing, the
//! side band of mappings and the pairing engine.
//!
//! Shared by both tracers and by the in-kernel ones' unwinding; it knows no tracepoint's
//! meaning (locks, scheduler) and imports nothing from `locks`, `offcpu` or `bpf`.

pub(crate) mod mappings;
pub(crate) mod pairing;
pub(crate) mod ring;
pub(crate) mod sample;
pub(crate) mod stream;
pub(crate) mod tracefs;
