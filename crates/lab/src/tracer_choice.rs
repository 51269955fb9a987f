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

/// What a tracing option says when it opens its tracers: `fallback`, the note when the kernel
/// tracer fell back (the error follows), and `unavailable`, when neither opened.
pub(crate) struct OpenNotes {
    pub fallback: &'static str,
    pub unavailable: &'static str,
}

impl TracerChoice {
    /// Opens the chosen tracer: `kernel()` first when it is [`TracerChoice::Kernel`], falling
    /// back to `perf()` with a note saying why; when neither opens, a note and `None` (the trial
    /// runs untraced). Either is held behind [`perf::Tracer`]: callers never ask which opened.
    pub(crate) fn open<K, P, E: std::fmt::Display>(
        self,
        kernel: impl FnOnce() -> Result<K, E>,
        perf: impl FnOnce() -> Result<P, E>,
        says: OpenNotes,
        notes: &mut Vec<String>,
    ) -> Option<Box<dyn perf::Tracer<Trace = K::Trace>>>
    where
        K: perf::Tracer + 'static,
        P: perf::Tracer<Trace = K::Trace> + 'static,
    {
        if self == TracerChoice::Kernel {
            match kernel() {
                Ok(t) => return Some(Box::new(t)),
                Err(e) => notes.push(format!("{}: {e}", says.fallback)),
            }
        }
        match perf() {
            Ok(t) => Some(Box::new(t)),
            Err(e) => {
                notes.push(format!("{}: {e}", says.unavailable));
                None
            }
        }
    }
}

/// A debug build's `SCALELAB_TEST_COLD_TRACERS`: the in-kernel tracers are opened cold —
/// chains written from their open with nothing read ahead, the ring at [`COLD_RING_BYTES`], the
/// rate never lowered and every drain whole — so that the tests show what that loses on a slow
/// machine (docs/notes/tracing.md). A release build never does.
pub(crate) fn cold_for_tests() -> bool {
    cfg!(debug_assertions) && std::env::var_os("SCALELAB_TEST_COLD_TRACERS").is_some()
}

/// The ring every machine had before it was sized from the CPU count and the sampling rate.
pub(crate) const COLD_RING_BYTES: u32 = 8 << 20;
