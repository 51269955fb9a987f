//! What the in-kernel (BPF) tracers share: loading their objects with aya, pacing their
//! drains, reading their programs' own cost and trimming the programs' frames from chains.
//!
//! Knows no tracer's records (those are `locks::bpf`'s and `offcpu::bpf_records`'); may use
//! `trace` for unwinding, never `locks` or `offcpu`.

pub(crate) mod drain_pace;
pub(crate) mod frames;
pub(crate) mod load;
pub(crate) mod self_cost;
