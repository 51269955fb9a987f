//! [`TracerChoice`]: which tracer `--tracer` picks for `--offcpu` and `--locks` (and
//! `--explain`, which runs both).

use serde::{Deserialize, Serialize};

/// How `--offcpu` and `--locks` trace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TracerChoice {
    /// Summed in the kernel by a BPF program, with the call chains of a sample of the events
    /// (`perf::BpfOffCpuTracer`, `perf::BpfLockTracer`); the perf tracer, with a note, where
    /// the kernel or this build cannot.
    #[default]
    Kernel,
    /// Every event through perf's ring buffers, paired in user space (`perf::OffCpuTracer`,
    /// `perf::LockTracer`): every event's chains, at several times the cost where tasks block
    /// or contend often.
    Perf,
}
