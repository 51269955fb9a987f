//! Lock contention: what `--locks` asks the trial child to trace ([`LockRequest`]), how the
//! child turns the raw waits into a [`LockReport`](model::record::LockReport) ([`collect`]).
//! How a run's reports aggregate per N and rank what grows with N is analysis
//! ([`analysis::lock_contention`]).
//!
//! Kernel locks come from the `lock:contention_begin/end` tracepoints, user locks from futex
//! waits (the `futex` system call's entry and exit, or, [`FutexWaits::Sleeps`], the sleeps
//! inside it, from the scheduler's switches), summed per lock in the kernel by
//! `perf::BpfLockTracer` with a sample of their call chains, or every one read through perf's
//! ring buffers by `perf::LockTracer` (`--tracer perf`, and where BPF cannot load).

pub(crate) mod collect;
pub(crate) mod rows;

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::tracer_choice::TracerChoice;

/// Which locks a run traces (`--locks`, `--locks=kernel`, `--locks=user`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockRequest {
    /// Trace kernel lock contention (`lock:contention_begin`/`end`).
    pub kernel: bool,
    /// Trace futex waits, the user-space locks.
    pub user: bool,
    /// Bytes of user stack copied with each futex wait to unwind its call chain through code
    /// without frame pointers (`--stack-size`, [`LockRequest::DEFAULT_STACK_SIZE`]); 0 keeps
    /// frame-pointer chains only.
    #[serde(default = "default_stack_size")]
    pub stack_size: u32,
    /// Which tracer (`--tracer`).
    #[serde(default)]
    pub tracer: TracerChoice,
    /// What the kernel tracer times as a futex wait (`--futex-waits`; the perf tracer times
    /// every call).
    #[serde(default)]
    pub futex: FutexWaits,
    /// The in-kernel tracer records the call chains of 1 in this many waits (`--chain-every`;
    /// 1: every one); 0 picks it from the rate (see `perf::BpfLockConfig`).
    #[serde(default)]
    pub chain_every: u32,
}

/// What the kernel tracer times as a futex wait (`--futex-waits`): every call that waits,
/// entry to exit, or each sleep inside one (see `perf::FutexTiming`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FutexWaits {
    /// Every call, entry to exit: counts every contended call, at the cost of the system call
    /// tracepoints' slow path for every system call on the machine.
    #[default]
    Calls,
    /// Each sleep, blocking switch to switch back in: cheap, and what blocked time is made
    /// of; a call that returns without sleeping is not seen.
    Sleeps,
}

fn default_stack_size() -> u32 {
    perf::DEFAULT_STACK_SIZE
}

impl LockRequest {
    #[cfg(test)]
    pub(crate) const ALL: LockRequest = LockRequest {
        kernel: true,
        user: true,
        stack_size: perf::DEFAULT_STACK_SIZE,
        tracer: TracerChoice::Kernel,
        futex: FutexWaits::Calls,
        chain_every: 0,
    };

    /// The user stack copied per futex wait unless `--stack-size` says otherwise: 16 KiB.
    pub const DEFAULT_STACK_SIZE: u32 = perf::DEFAULT_STACK_SIZE;

    /// Parses a `--stack-size` in bytes: a multiple of 8 up to 65528, perf's limits (as
    /// `perf record --call-graph dwarf,SIZE`); the error names them.
    pub fn parse_stack_size(text: &str) -> Result<u32, String> {
        let bytes: u32 = text
            .trim()
            .parse()
            .map_err(|_| format!("{text:?} is not a number of bytes (e.g. 16384)"))?;
        perf::check_stack_size(bytes)
    }

    /// The in-kernel tracer's configuration for this request.
    pub(crate) fn bpf_config(self) -> perf::BpfLockConfig {
        let config = perf::BpfLockConfig {
            kernel: self.kernel,
            user: self.user,
            futex: match self.futex {
                FutexWaits::Calls => perf::FutexTiming::Calls,
                FutexWaits::Sleeps => perf::FutexTiming::Sleeps,
            },
            fixed_k: self.chain_every,
            ..perf::BpfLockConfig::default()
        };
        if crate::tracer_choice::cold_for_tests() {
            return perf::BpfLockConfig {
                ring_bytes: crate::tracer_choice::COLD_RING_BYTES,
                paced: false,
                ..config
            };
        }
        config
    }

    /// The perf tracer's configuration for this request.
    pub(crate) fn trace_config(self) -> perf::LockTraceConfig {
        perf::LockTraceConfig {
            kernel: self.kernel,
            user: self.user,
            stack_size: self.stack_size,
            ..perf::LockTraceConfig::default()
        }
    }

    /// Checks before a run that the tracepoints exist and are readable; the error text names
    /// the fix (mount tracefs, run as root…).
    pub(crate) fn preflight(self) -> Result<(), String> {
        perf::LockTracer::check(&self.trace_config()).map_err(|e| e.to_string())
    }
}

impl fmt::Display for LockRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match (self.kernel, self.user) {
            (true, true) => "kernel and user locks",
            (true, false) => "kernel locks",
            (false, true) => "user locks",
            (false, false) => "no locks",
        })
    }
}

/// The bits of a kernel wait's flags that are the kernel's `LCB_F_*`; the in-kernel tracer
/// carries a name above them ([`task_lock_name`]).
const LCB_FLAGS: u32 = 0xffff;

/// The name the in-kernel tracer gave a kernel lock from what its waiter's task points at
/// (`LOCK_NAME_*` in locks.bpf.c, above the `LCB_F_*` flags), as `perf lock contention -b`
/// names them; `None` for any other lock.
pub(crate) fn task_lock_name(flags: u32) -> Option<&'static str> {
    match flags >> 16 {
        1 => Some("mmap_lock"),
        2 => Some("siglock"),
        3 => Some("file_lock"),
        _ => None,
    }
}

/// Human name of a kernel lock type from the `contention_begin` flags (`LCB_F_*` in
/// include/trace/events/lock.h: SPIN 1, READ 2, WRITE 4, RT 8, PERCPU 16, MUTEX 32), named as
/// `perf lock contention` names them.
pub(crate) fn kernel_lock_kind(flags: u32) -> String {
    let flags = flags & LCB_FLAGS;
    const SPIN: u32 = 1;
    const READ: u32 = 2;
    const WRITE: u32 = 4;
    const RT: u32 = 8;
    const PERCPU: u32 = 16;
    const MUTEX: u32 = 32;
    let rw = |base: &str| -> String {
        if flags & READ != 0 {
            format!("{base}:read")
        } else if flags & WRITE != 0 {
            format!("{base}:write")
        } else {
            base.to_string()
        }
    };
    if flags & PERCPU != 0 {
        rw("percpu-rwsem")
    } else if flags & RT != 0 {
        if flags & (READ | WRITE) != 0 {
            rw("rwlock-rt")
        } else {
            "rtmutex".into()
        }
    } else if flags & SPIN != 0 {
        if flags & (READ | WRITE) != 0 {
            rw("rwlock")
        } else {
            "spinlock".into()
        }
    } else if flags & (READ | WRITE) != 0 {
        rw("rwsem")
    } else if flags & MUTEX != 0 || flags == 0 {
        "mutex".into()
    } else {
        format!("flags={flags:#x}")
    }
}

/// Name of a futex wait operation (`FUTEX_CMD_MASK` applied) for the kind column.
pub(crate) fn futex_kind(op: u32) -> &'static str {
    match op & !perf::FUTEX_FLAG_BITS {
        6 | 13 => "futex-pi",
        11 => "futex-requeue-pi",
        _ => "futex",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_kinds_follow_the_lcb_flags() {
        assert_eq!(kernel_lock_kind(1), "spinlock");
        assert_eq!(kernel_lock_kind(1 | 2), "rwlock:read");
        assert_eq!(kernel_lock_kind(4), "rwsem:write");
        assert_eq!(kernel_lock_kind(2), "rwsem:read");
        assert_eq!(kernel_lock_kind(32), "mutex");
        assert_eq!(kernel_lock_kind(16 | 4), "percpu-rwsem:write");
        // The in-kernel tracer's name above the flags changes neither.
        assert_eq!(kernel_lock_kind(1 << 16 | 4), "rwsem:write");
        assert_eq!(task_lock_name(1 << 16 | 4), Some("mmap_lock"));
        assert_eq!(task_lock_name(2 << 16 | 1), Some("siglock"));
        assert_eq!(task_lock_name(4), None);
        assert_eq!(kernel_lock_kind(8), "rtmutex");
        assert_eq!(kernel_lock_kind(0), "mutex");
    }

    #[test]
    fn stack_sizes_are_bytes_within_perfs_limits() {
        assert_eq!(LockRequest::parse_stack_size("8192"), Ok(8192));
        assert!(
            LockRequest::parse_stack_size("65536")
                .unwrap_err()
                .contains("65528")
        );
        assert!(
            LockRequest::parse_stack_size("100")
                .unwrap_err()
                .contains("multiple of 8")
        );
        assert!(
            LockRequest::parse_stack_size("16k")
                .unwrap_err()
                .contains("bytes")
        );
        // Requests stored before --stack-size existed read back with the default.
        let old: LockRequest = serde_json::from_str(r#"{"kernel":true,"user":true}"#).unwrap();
        assert_eq!(old.stack_size, LockRequest::DEFAULT_STACK_SIZE);
    }

    #[test]
    fn futex_kinds_ignore_the_flag_bits() {
        assert_eq!(futex_kind(128), "futex");
        assert_eq!(futex_kind(9 | 256), "futex");
        assert_eq!(futex_kind(6 | 128), "futex-pi");
    }
}
