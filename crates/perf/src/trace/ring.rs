//! What the tracepoint readers ([`crate::LockTracer`], [`crate::OffCpuTracer`]) share: the
//! online CPUs their per-CPU ring buffers are opened on, the ftrace filter ioctl, the count of
//! records the kernel dropped, and the user-stack unwinding of a sample at drain time.

use std::os::unix::io::AsRawFd;

use crate::trace::sample::{PERF_CONTEXT_MAX, Sample};
use perf_read::unwind::Unwinder;

pub(crate) const PERF_RECORD_LOST: u32 = 2;
pub(crate) const PERF_RECORD_SAMPLE: u32 = 9;
pub(crate) const PERF_RECORD_LOST_SAMPLES: u32 = 13;
pub(crate) const PERF_RECORD_SWITCH_CPU_WIDE: u32 = 15;

/// The smallest ring buffer data area: one page (`perf_event_open` maps one control page and
/// at least one data page).
pub(crate) const MIN_RING_BYTES: usize = 4096;

/// Locked memory of one tracer's ring buffers, all CPUs together, at most (bytes) — unless
/// every ring is already at [`MIN_RING_BYTES`] (more than 16,384 rings).
pub(crate) const TRACER_BUDGET_BYTES: usize = 64 << 20;

/// The data size of each of `rings` ring buffers that share `budget` bytes: the largest power
/// of two no larger than `wanted` nor `budget / rings`, and at least [`MIN_RING_BYTES`]. So a
/// tracer with R rings per CPU on C CPUs locks `min(wanted, budget / (R·C))` rounded down to a
/// power of two per ring, and R·C times that in all: never more than the budget while rings of
/// one page fit it. The ring buffer a record does not fit in drops it, and the loss is counted.
pub(crate) fn ring_bytes(wanted: usize, rings: usize, budget: usize) -> usize {
    let share = budget / rings.max(1);
    let cap = wanted.min(share).max(MIN_RING_BYTES);
    // The largest power of two ≤ cap.
    1usize << (usize::BITS - 1 - cap.leading_zeros())
}

/// The ring buffer size for `perf record -m` on a machine of `cpus` CPUs (perf maps one ring
/// per CPU): perf's default 512 KiB while the rings fit [`TRACER_BUDGET_BYTES`], less on big
/// machines (128 KiB at 512 CPUs).
pub fn record_ring_bytes(cpus: usize) -> usize {
    ring_bytes(512 << 10, cpus, TRACER_BUDGET_BYTES)
}

/// The online CPUs, from `/sys/devices/system/cpu/online` (`0-3,6`).
pub(crate) fn online_cpus() -> Vec<usize> {
    let text = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<usize>(), b.parse::<usize>()) {
                    cpus.extend(a..=b);
                }
            }
            None => cpus.extend(part.parse::<usize>().ok()),
        }
    }
    if cpus.is_empty() {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        cpus.extend(0..n);
    }
    cpus
}

/// The records a `PERF_RECORD_LOST` or `PERF_RECORD_LOST_SAMPLES` record says were dropped;
/// 0 for any other record.
pub(crate) fn lost_records(ty: u32, body: &[u8]) -> u64 {
    let at = match ty {
        PERF_RECORD_LOST => 8..16,
        PERF_RECORD_LOST_SAMPLES => 0..8,
        _ => return 0,
    };
    body.get(at)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

/// `PERF_EVENT_IOC_SET_FILTER`: a tracepoint filter in ftrace syntax.
pub(crate) fn set_filter(counter: &perf_event::Counter, filter: &str) -> std::io::Result<()> {
    let text = std::ffi::CString::new(filter)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    // _IOW('$', 6, char *)
    const PERF_EVENT_IOC_SET_FILTER: libc::c_ulong = 0x4008_2406;
    // SAFETY: the fd is a perf event fd owned by `counter` and open for the duration of the
    // call; the argument is a NUL-terminated string that outlives the call, which the kernel
    // only reads (copied with strndup_user).
    let rc = unsafe {
        libc::ioctl(
            counter.as_raw_fd(),
            PERF_EVENT_IOC_SET_FILTER,
            text.as_ptr(),
        )
    };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// What identifies a sample's user stack for the unwinding cache: the process and the
/// generation of its mappings, the user instruction pointer, the frame pointer's distance from
/// the stack pointer, the first words of the stack (the return address of a frameless system
/// call wrapper) and the frame-pointer chain the kernel walked. A task waiting over and over at
/// one call site (every wait of a hot lock, every read of a pipe ping-pong) is unwound once per
/// state of its mappings: a chain that stopped at a mapping not yet known is not reused once
/// it is. (Kept for the process's life, such a chain is the suspect in a sysbench run where 40%
/// of the futex waits, about one trial's, read "unknown: unwinding stopped at" a libc frame.)
pub(crate) type UnwindKey = ((u32, u64), u64, u64, [u64; 2], Vec<u64>);

/// Unwound user chains (interned in the tracer's chain table) by [`UnwindKey`].
pub(crate) type UnwindCache = std::collections::HashMap<UnwindKey, u32>;

/// The interned user chain of sample `s` (`user_fp`: its frame-pointer chain, markers
/// removed): from `cache`, else unwound (or the frame-pointer chain without a stack copy) and
/// interned in `chains`; `None` when [`UnwindState::chain`] defers it.
pub(crate) fn cached_user_chain(
    s: &crate::trace::sample::Sample<'_>,
    user_fp: Vec<u64>,
    unwind: &mut UnwindState<'_>,
    cache: &mut UnwindCache,
    chains: &mut super::sample::ChainTable,
    max: usize,
) -> Option<u32> {
    let Some(r) = s.regs else {
        return Some(chains.intern(call_sites(&user_fp).into_iter()));
    };
    let word = |i: usize| {
        s.stack
            .get(8 * i..8 * i + 8)
            .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap_or([0; 8])))
    };
    let key = (
        (s.pid, unwind.unwinder.generation(s.pid as i32)),
        r.ip,
        r.bp.wrapping_sub(r.sp),
        [word(0), word(1)],
        user_fp,
    );
    if let Some(&i) = cache.get(&key) {
        return Some(i);
    }
    let user = unwind.chain(s, &key.4, max)?;
    let i = chains.intern(user.into_iter());
    cache.insert(key, i);
    Some(i)
}

/// What decoding needs to unwind a sample's user stack.
pub(crate) struct UnwindState<'a> {
    pub(crate) unwinder: &'a mut Unwinder,
    /// Processes whose maps were re-read during this drain (at most once each).
    pub(crate) reloaded: &'a mut Vec<i32>,
    /// Give up on a sample whose process has no mapping holding its instruction pointer
    /// ([`chain`](Self::chain) returns `None`) instead of unwinding it without: its exec and
    /// mmap records may be in a side-band buffer read before the process ran (the draining
    /// thread was preempted between the two reads), so the tracer reads them and retries.
    pub(crate) defer: bool,
}

impl UnwindState<'_> {
    /// The user chain unwound from the sample's stack copy, or `frame_pointer` (the user part
    /// of its frame-pointer chain) where that found more (a process whose mappings are
    /// unknown). `None` with [`defer`](Self::defer) when the process's mappings do not hold
    /// the sample's instruction pointer.
    pub(crate) fn chain(
        &mut self,
        s: &Sample<'_>,
        frame_pointer: &[u64],
        max: usize,
    ) -> Option<Vec<u64>> {
        let Some(regs) = s.regs else {
            return Some(call_sites(frame_pointer));
        };
        let pid = s.pid as i32;
        if !self.unwinder.covers(pid, regs.ip) && !self.reloaded.contains(&pid) {
            // New process, or new code since its maps were read (exec, dlopen).
            self.reloaded.push(pid);
            self.unwinder.load_process(pid);
        }
        if self.defer && !self.unwinder.covers(pid, regs.ip) {
            return None;
        }
        let unwound = self.unwinder.unwind(pid, regs, s.stack, max);
        let found = frame_pointer
            .iter()
            .filter(|&&a| a < PERF_CONTEXT_MAX)
            .count();
        Some(if unwound.len() >= found {
            unwound
        } else {
            call_sites(frame_pointer)
        })
    }
}

/// A frame-pointer user chain (the instruction pointer, then return addresses) as the unwinder
/// gives chains: each return address less one, inside its call instruction.
pub(crate) fn call_sites(frame_pointer: &[u64]) -> Vec<u64> {
    frame_pointer
        .iter()
        .enumerate()
        .map(|(i, &a)| if i == 0 { a } else { a.saturating_sub(1) })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rings_share_the_budget_in_powers_of_two_and_never_exceed_it() {
        // 2 CPUs, 4 rings each, 1 MiB wanted: all of it.
        assert_eq!(ring_bytes(1 << 20, 8, TRACER_BUDGET_BYTES), 1 << 20);
        // 512 CPUs, 4 rings each: 64 MiB / 2048 = 32 KiB per ring.
        assert_eq!(ring_bytes(1 << 20, 2048, TRACER_BUDGET_BYTES), 32 << 10);
        // A share that is not a power of two is rounded down.
        assert_eq!(ring_bytes(1 << 20, 3, 3 << 20), 1 << 20);
        assert_eq!(ring_bytes(1 << 20, 3, 2 << 20), 512 << 10);
        // Never below one page.
        assert_eq!(
            ring_bytes(1 << 20, 1 << 20, TRACER_BUDGET_BYTES),
            MIN_RING_BYTES
        );
        for cpus in [1usize, 2, 6, 64, 96, 384, 512, 1024] {
            for per_cpu in [1usize, 2, 3, 4] {
                let rings = cpus * per_cpu;
                let each = ring_bytes(16 << 20, rings, TRACER_BUDGET_BYTES);
                assert!(each.is_power_of_two());
                assert!(
                    rings * each <= TRACER_BUDGET_BYTES,
                    "{cpus} CPUs × {per_cpu}"
                );
            }
        }
    }

    #[test]
    fn online_cpus_are_listed() {
        let cpus = online_cpus();
        assert!(!cpus.is_empty());
        assert!(cpus.contains(&0));
    }

    #[test]
    fn lost_counts_come_from_either_lost_record() {
        let mut lost = vec![0u8; 16];
        lost[8..16].copy_from_slice(&7u64.to_le_bytes());
        assert_eq!(lost_records(PERF_RECORD_LOST, &lost), 7);
        assert_eq!(
            lost_records(PERF_RECORD_LOST_SAMPLES, &9u64.to_le_bytes()),
            9
        );
        assert_eq!(lost_records(PERF_RECORD_SAMPLE, &lost), 0);
        assert_eq!(lost_records(PERF_RECORD_LOST, &[1, 2]), 0);
    }
}
