//! `--offcpu`: the traced threads' time off a CPU, traced two ways that return one
//! [`crate::OffCpuTrace`].
//!
//! `events` (the scheduler records and the trace's types, pure), `timeline` (the perf tracer's
//! pairing of them into lives and episodes), `perf` ([`crate::OffCpuTracer`]), `bpf`
//! ([`crate::BpfOffCpuTracer`]) with `bpf_records` (its records decoded) and `sampling` (its
//! counts), `waker_name` (a waker named from `/proc`), `idle_probe` (does a CPU record its idle
//! wake-ups) and `throughput` (timing tests only). Both tracers implement [`crate::Tracer`];
//! nothing here imports `locks`.

pub(crate) mod bpf;
pub(crate) mod bpf_records;
pub(crate) mod events;
pub(crate) mod idle_probe;
pub(crate) mod perf;
pub(crate) mod sampling;
mod throughput;
pub(crate) mod timeline;
pub(crate) mod waker_name;
