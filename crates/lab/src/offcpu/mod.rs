//! Blocked time: what `--offcpu` asks a trial to trace ([`OffCpuRequest`]), how the call
//! chain of a blocking switch names its cause ([`classify`]), and how a trial's episodes
//! become an [`OffCpuReport`](model::record::OffCpuReport) ([`collect`]).
//!
//! The episodes come from `perf::OffCpuTracer` (the scheduler's `sched_switch` and
//! `sched_wakeup` tracepoints): blocked from the switch out of a task that is not runnable to
//! its wake-up. Preemptions are run-queue wait, already in the accounting's run delay.
//!
//! For a command the tracer also gives every thread's life ([`threads`]): who worked and who
//! supervised ([`roles`]), and what ended each wait ([`wake`]).

pub(crate) mod chain;
pub(crate) mod classify;
pub(crate) mod collect;
pub(crate) mod estimate;
pub(crate) mod roles;
pub(crate) mod threads;
pub(crate) mod wake;

use serde::{Deserialize, Serialize};

use crate::tracer_choice::TracerChoice;

/// `--offcpu`: trace when the trial's tasks block, with call chains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OffCpuRequest {
    /// Bytes of user stack copied with each blocking switch to unwind through code without
    /// frame pointers ; 0 keeps frame-pointer chains only.
    pub stack_size: u32,
    /// Which tracer (`--tracer`).
    #[serde(default)]
    pub tracer: TracerChoice,
    /// The in-kernel tracer records the call chains of 1 in this many blocking switches
    /// (`--chain-every`; 1: every one); 0 picks it from the rate (see `perf::BpfOffCpuConfig`).
    #[serde(default)]
    pub chain_every: u32,
}

impl Default for OffCpuRequest {
    fn default() -> Self {
        OffCpuRequest {
            stack_size: OffCpuRequest::DEFAULT_STACK_SIZE,
            tracer: TracerChoice::default(),
            chain_every: 0,
        }
    }
}

impl OffCpuRequest {
    /// The user stack copied per blocking switch: 4 KiB, a quarter of `--locks`' — a blocking
    /// workload switches far more often than it waits on futexes, every copy costs kernel time
    /// and ring buffer space, and the blocking call's callers sit at the top of the stack.
    pub const DEFAULT_STACK_SIZE: u32 = 4096;

    /// The in-kernel tracer's configuration for this request.
    pub(crate) fn bpf_config(self) -> perf::BpfOffCpuConfig {
        let config = perf::BpfOffCpuConfig {
            fixed_k: self.chain_every,
            ..perf::BpfOffCpuConfig::default()
        };
        if crate::tracer_choice::cold_for_tests() {
            return perf::BpfOffCpuConfig {
                ring_bytes: crate::tracer_choice::COLD_RING_BYTES,
                paced: false,
                ..config
            };
        }
        config
    }

    /// The tracer configuration for this request.
    pub(crate) fn trace_config(self) -> perf::OffCpuTraceConfig {
        perf::OffCpuTraceConfig {
            stack_size: self.stack_size,
            ..perf::OffCpuTraceConfig::default()
        }
    }

    /// Checks before a run that the scheduler tracepoints exist and are readable; the error
    /// text names the fix (mount tracefs, run as root…).
    pub(crate) fn preflight(self) -> Result<(), String> {
        perf::OffCpuTracer::check().map_err(|e| e.to_string())
    }
}
