//! CPU affinity of the calling thread, or of another thread by id (`sched_setaffinity` /
//! `sched_getaffinity`).
//!
//! The masks are sized to the CPUs asked for rather than glibc's fixed 1024-bit `cpu_set_t`,
//! so machines with more than 1024 CPUs work (up to [`MAX_CPU`]).

use crate::error::{Errno, SysError};

/// The largest CPU number [`set_current_affinity`] accepts.
pub const MAX_CPU: usize = 8191;

const WORD_BITS: usize = libc::c_ulong::BITS as usize;

/// Restricts the calling thread (for a single-threaded process: the process, and every thread
/// and child it creates afterwards) to run only on `cpus`.
pub fn set_current_affinity(cpus: &[usize]) -> Result<(), SysError> {
    set_thread_affinity(0, cpus)
}

/// Restricts thread `tid` (0: the calling thread) to run only on `cpus`; threads and children
/// it creates afterwards inherit the set.
pub fn set_thread_affinity(tid: i32, cpus: &[usize]) -> Result<(), SysError> {
    const CALL: &str = "sched_setaffinity";
    let Some(&highest) = cpus.iter().max() else {
        return Err(SysError::InvalidArgument {
            call: CALL,
            reason: "the CPU list is empty; give at least one CPU".to_string(),
        });
    };
    if highest > MAX_CPU {
        return Err(SysError::InvalidArgument {
            call: CALL,
            reason: format!("CPU {highest} is above the supported maximum {MAX_CPU}"),
        });
    }
    let mut mask = vec![0 as libc::c_ulong; (highest + 1).div_ceil(WORD_BITS)];
    for &cpu in cpus {
        mask[cpu / WORD_BITS] |= 1 << (cpu % WORD_BITS);
    }
    let bytes = mask.len() * size_of::<libc::c_ulong>();
    // SAFETY: `mask` is a live buffer of exactly `bytes` bytes that the kernel only reads;
    // pid 0 means the calling thread.
    let rc = unsafe { libc::syscall(libc::SYS_sched_setaffinity, tid, bytes, mask.as_ptr()) };
    if rc != 0 {
        return Err(SysError::with_fix(CALL, Errno::last(), |e| match e.0 {
            libc::EINVAL => Some(
                "none of the requested CPUs is online and allowed to this process: check \
                 `nproc` and the cgroup's cpuset.cpus.effective",
            ),
            libc::EPERM => Some("not permitted to change this thread's affinity (CAP_SYS_NICE)"),
            libc::ESRCH => Some("the thread has exited"),
            _ => None,
        }));
    }
    Ok(())
}

/// The CPUs the calling thread may run on, in increasing order.
pub fn current_affinity() -> Result<Vec<usize>, SysError> {
    // Start at 8192 CPUs and grow if the kernel was built for more (it answers EINVAL when the
    // buffer is smaller than its nr_cpu_ids).
    let mut words = (MAX_CPU + 1) / WORD_BITS;
    loop {
        let mut mask = vec![0 as libc::c_ulong; words];
        let bytes = words * size_of::<libc::c_ulong>();
        // SAFETY: `mask` is a live, writable buffer of exactly `bytes` bytes; the kernel writes
        // at most that many and returns how many it wrote. pid 0 means the calling thread.
        let rc = unsafe { libc::syscall(libc::SYS_sched_getaffinity, 0, bytes, mask.as_mut_ptr()) };
        if rc < 0 {
            let errno = Errno::last();
            if errno.0 == libc::EINVAL && words < (1 << 16) {
                words *= 2;
                continue;
            }
            return Err(SysError::with_fix("sched_getaffinity", errno, |_| None));
        }
        let written_words = usize::try_from(rc)
            .unwrap_or(0)
            .div_ceil(size_of::<libc::c_ulong>());
        let cpus = mask[..written_words.min(words)]
            .iter()
            .enumerate()
            .flat_map(|(index, &word)| {
                (0..WORD_BITS)
                    .filter(move |bit| word & (1 << bit) != 0)
                    .map(move |bit| index * WORD_BITS + bit)
            })
            .collect();
        return Ok(cpus);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `f` on a fresh thread so that changing its affinity cannot disturb other tests.
    fn on_fresh_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::spawn(f).join().unwrap()
    }

    #[test]
    fn affinity_set_to_one_cpu_reads_back() {
        let allowed = current_affinity().unwrap();
        assert!(!allowed.is_empty());
        let last = *allowed.last().unwrap();
        let (now, after_widen) = on_fresh_thread(move || {
            set_current_affinity(&[last]).unwrap();
            let now = current_affinity().unwrap();
            set_current_affinity(&allowed).unwrap();
            (now, current_affinity().unwrap())
        });
        assert_eq!(now, vec![last]);
        assert_eq!(after_widen, current_affinity().unwrap());
    }

    #[test]
    fn high_cpu_numbers_build_a_large_mask_and_are_rejected_by_the_kernel_only_if_absent() {
        // CPU 8000 does not exist here: the kernel ignores it, so with a real CPU alongside it
        // the call succeeds, and alone it fails with EINVAL and the fix.
        let first = current_affinity().unwrap()[0];
        on_fresh_thread(move || {
            set_current_affinity(&[first, 8000]).unwrap();
            assert_eq!(current_affinity().unwrap(), vec![first]);
            let err = set_current_affinity(&[8000]).unwrap_err();
            let text = err.to_string();
            assert!(text.contains("EINVAL") && text.contains("nproc"), "{text}");
        });
    }

    #[test]
    fn bad_lists_are_rejected_before_the_syscall() {
        assert!(
            set_current_affinity(&[])
                .unwrap_err()
                .to_string()
                .contains("empty")
        );
        let err = set_current_affinity(&[MAX_CPU + 1]).unwrap_err();
        assert!(err.to_string().contains("8191"), "{err}");
    }
}
