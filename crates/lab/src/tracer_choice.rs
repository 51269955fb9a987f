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

/// The tracer [`TracerChoice`] opened: the in-kernel one `K`, or the perf one `P` it chose or
/// fell back to.
#[derive(Debug)]
pub(crate) enum Chosen<K, P> {
    Kernel(Box<K>),
    Perf(Box<P>),
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
    /// runs untraced).
    pub(crate) fn open<K, P, E: std::fmt::Display>(
        self,
        kernel: impl FnOnce() -> Result<K, E>,
        perf: impl FnOnce() -> Result<P, E>,
        says: OpenNotes,
        notes: &mut Vec<String>,
    ) -> Option<Chosen<K, P>> {
        if self == TracerChoice::Kernel {
            match kernel() {
                Ok(t) => return Some(Chosen::Kernel(Box::new(t))),
                Err(e) => notes.push(format!("{}: {e}", says.fallback)),
            }
        }
        match perf() {
            Ok(t) => Some(Chosen::Perf(Box::new(t))),
            Err(e) => {
                notes.push(format!("{}: {e}", says.unavailable));
                None
            }
        }
    }
}

/// A debug build's `SCALELAB_TEST_COLD_TRACERS`: the in-kernel tracers are opened as they were
/// before a 16-vCPU guest showed them losing records — chains written from their open with
/// nothing read ahead, the ring at [`COLD_RING_BYTES`], the rate never lowered and every drain
/// whole — so that the tests show what that lost on a slow machine. A release build never does.
pub(crate) fn cold_for_tests() -> bool {
    cfg!(debug_assertions) && std::env::var_os("SCALELAB_TEST_COLD_TRACERS").is_some()
}

/// The ring every machine had before it was sized from the CPU count and the sampling rate.
pub(crate) const COLD_RING_BYTES: u32 = 8 << 20;
