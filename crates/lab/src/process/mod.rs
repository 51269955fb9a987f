//! The processes scalelab starts and what becomes of them: every child is marked with its owner
//! and dies with scalelab ([`owner`]), what a step or trial leaves running is killed
//! ([`leftovers`]), a guard process cleans up after a scalelab that was killed outright
//! ([`guard`]), and `/proc` is read for all of it (`sys::proc_table`). `doctor`'s probes of
//! tracing live here too ([`perf_checks`], [`bpf_tracers`]).

mod bpf_tracers;
pub(crate) mod guard;
mod idle_tracing;
pub(crate) mod leftovers;
pub(crate) mod owner;

pub use bpf_tracers::{BpfTracerStatus, bpf_tracers_check, probe_bpf_tracers};
pub use guard::serve_guard;
pub use owner::die_with_owner;

/// `doctor`'s probes of `perf` and tracefs ([`model::env::perf_checks`], the `perf` child they
/// start made to die with scalelab like every other), and whether the kernel traces wake-ups
/// taken while a CPU idles (a 0.2 s probe).
pub fn perf_checks() -> Vec<model::env::Check> {
    let mut checks = model::env::perf_checks(|command| {
        owner::adopt(command);
    });
    checks.push(idle_tracing::probe_and_judge());
    checks
}
