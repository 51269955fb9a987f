//! The scalelab engine: plans sweeps, runs trials and records them in the store. It re-exports
//! no other crate: its callers name `model`, `store` and `analysis` themselves.
//!
//! No module here depends on clap or on `present`; the binary converts arguments into the types
//! of this crate. All unsafe code lives in the `sys` and `perf` crates.
//!
//! The public surface, each item by one path:
//! - At the root: the request and its plan ([`RunConfig`], [`Plan`], [`LockRequest`],
//!   [`OffCpuRequest`], [`parse_duration`], [`check_runs`]), the built-in workloads
//!   ([`workload_infos`], [`workload_info`]), the errors ([`LabError`], [`Field`]), and the entry
//!   points of the binary's hidden helper processes ([`die_with_owner`], [`serve_guard`]),
//!   `doctor`'s probes ([`perf_checks`], [`probe_bpf_tracers`] and its [`bpf_tracers_check`]).
//! - [`lifecycle`]: the owner of a run ([`lifecycle::run`], [`lifecycle::ab`]).
//! - [`bisect`]: the commit that made it slower ([`bisect::start`], [`bisect::resume`], and
//!   [`bisect::next`] / [`bisect::mark`] for `--no-build`).
//! - [`runner`]: what one trial is ([`runner::TrialSpec`]) and who executes it; the tracers
//!   that watch its tasks (`--locks`, `--offcpu`) plug into it through one seam (`observer`,
//!   `observer_list`).
#![forbid(unsafe_code)]
#![warn(missing_docs, unreachable_pub)]

pub mod bisect;
mod error;
pub mod lifecycle;
mod locks;
mod observer;
mod observer_list;
mod offcpu;
mod plan;
mod process;
mod profile;
pub mod runner;
mod scratch;
#[cfg(any(test, feature = "test-support"))]
pub mod test_runs;
mod traced_processes;
mod tracer_choice;
mod workloads;

pub use error::{Field, LabError};
pub use locks::{FutexWaits, LockRequest};
pub use offcpu::OffCpuRequest;
pub use plan::{Plan, RunConfig, check_runs, parse_duration};
pub use process::{
    BpfTracerStatus, bpf_tracers_check, die_with_owner, perf_checks, probe_bpf_tracers, serve_guard,
};
pub use tracer_choice::TracerChoice;
pub use workloads::{WorkloadInfo, workload_info, workload_infos};
