//! Clock reads for the `clock` workload, each through a stated path: the vDSO (no kernel
//! entry on a good clocksource) or the raw syscall (always a kernel entry). Comparing the two
//! shows what the clocksource costs and whether the vDSO is in use at all.
//!
//! Every function returns nanoseconds since that clock's epoch. They cannot fail for the
//! clocks offered here, so they return plain `u64` and panic only if the kernel breaks that.

/// A clock to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClockId {
    /// `CLOCK_MONOTONIC`: since boot (excluding suspend), never steps backwards.
    Monotonic,
    /// `CLOCK_REALTIME`: wall-clock time since the Unix epoch; may step.
    Realtime,
}

impl ClockId {
    fn raw(self) -> libc::clockid_t {
        match self {
            ClockId::Monotonic => libc::CLOCK_MONOTONIC,
            ClockId::Realtime => libc::CLOCK_REALTIME,
        }
    }
}

#[inline]
fn timespec_nanos(ts: &libc::timespec) -> u64 {
    let secs = u64::try_from(ts.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(ts.tv_nsec).unwrap_or(0);
    secs.wrapping_mul(1_000_000_000).wrapping_add(nanos)
}

#[inline]
fn timeval_nanos(tv: &libc::timeval) -> u64 {
    let secs = u64::try_from(tv.tv_sec).unwrap_or(0);
    let micros = u64::try_from(tv.tv_usec).unwrap_or(0);
    secs.wrapping_mul(1_000_000_000)
        .wrapping_add(micros * 1_000)
}

/// `clock_gettime` through the C library, which uses the vDSO when the clocksource allows.
#[inline]
pub fn clock_gettime_vdso(clock: ClockId) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec on our stack for the duration of the call.
    let rc = unsafe { libc::clock_gettime(clock.raw(), &mut ts) };
    assert_eq!(rc, 0, "clock_gettime({clock:?}) failed");
    timespec_nanos(&ts)
}

/// `clock_gettime` as a raw `syscall(SYS_clock_gettime, …)`: always enters the kernel.
#[inline]
pub fn clock_gettime_syscall(clock: ClockId) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: the kernel writes one timespec to `&mut ts`, a valid writable stack location that
    // outlives the call; the clock id is one the kernel always supports.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_clock_gettime,
            clock.raw(),
            &mut ts as *mut libc::timespec,
        )
    };
    assert_eq!(rc, 0, "SYS_clock_gettime({clock:?}) failed");
    timespec_nanos(&ts)
}

/// `gettimeofday` through the C library (vDSO where available): microsecond resolution,
/// returned as nanoseconds.
#[inline]
pub fn gettimeofday_vdso() -> u64 {
    let mut tv = libc::timeval {
        tv_sec: 0,
        tv_usec: 0,
    };
    // SAFETY: `tv` is a valid, writable timeval; a null timezone pointer is allowed.
    let rc = unsafe { libc::gettimeofday(&mut tv, std::ptr::null_mut()) };
    assert_eq!(rc, 0, "gettimeofday failed");
    timeval_nanos(&tv)
}

/// `gettimeofday` as the raw syscall: always enters the kernel. Nanoseconds, µs resolution.
#[inline]
pub fn gettimeofday_syscall() -> u64 {
    let mut tv = libc::timeval {
        tv_sec: 0,
        tv_usec: 0,
    };
    // SAFETY: the kernel writes one timeval to `&mut tv`, valid and writable for the call; the
    // timezone argument is null, which the kernel accepts and ignores.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_gettimeofday,
            &mut tv as *mut libc::timeval,
            std::ptr::null_mut::<libc::c_void>(),
        )
    };
    assert_eq!(rc, 0, "SYS_gettimeofday failed");
    timeval_nanos(&tv)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_gettime_syscall_is_monotonic() {
        let mut last = clock_gettime_syscall(ClockId::Monotonic);
        for _ in 0..1000 {
            let now = clock_gettime_syscall(ClockId::Monotonic);
            assert!(now >= last, "{now} < {last}");
            last = now;
        }
    }

    #[test]
    fn vdso_and_syscall_paths_read_the_same_clocks() {
        for clock in [ClockId::Monotonic, ClockId::Realtime] {
            let a = clock_gettime_vdso(clock);
            let b = clock_gettime_syscall(clock);
            let c = clock_gettime_vdso(clock);
            assert!(a <= b && b <= c, "{clock:?}: {a} {b} {c}");
        }
    }

    #[test]
    fn gettimeofday_agrees_with_realtime() {
        let before = clock_gettime_vdso(ClockId::Realtime) / 1_000 * 1_000;
        let vdso = gettimeofday_vdso();
        let raw = gettimeofday_syscall();
        let after = clock_gettime_vdso(ClockId::Realtime);
        assert!(
            before <= vdso && vdso <= raw && raw <= after,
            "{before} {vdso} {raw} {after}"
        );
        assert_eq!(
            vdso % 1_000,
            0,
            "microsecond resolution scaled to nanoseconds"
        );
        // Sanity: after 2020-01-01.
        assert!(vdso > 1_577_836_800 * 1_000_000_000);
    }
}

/// CPU time the calling thread has used (`CLOCK_THREAD_CPUTIME_ID`), in nanoseconds: what the
/// harness's own threads cost, read at a trial's window edges.
pub fn thread_cpu_time() -> u64 {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    let secs = u64::try_from(ts.tv_sec).unwrap_or(0);
    let nanos = u64::try_from(ts.tv_nsec).unwrap_or(0);
    secs.saturating_mul(1_000_000_000).saturating_add(nanos)
}

#[cfg(test)]
mod thread_cpu_tests {
    use super::thread_cpu_time;

    #[test]
    fn thread_cpu_time_grows_with_work_and_not_with_sleep() {
        // Spin until the thread has used 20 ms of CPU; a clock that did not count work would
        // never get there (the wall bound only keeps a broken clock from hanging the test).
        let before = thread_cpu_time();
        let give_up = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut x = 0u64;
        while thread_cpu_time() - before < 20_000_000 && std::time::Instant::now() < give_up {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let spun = thread_cpu_time() - before;
        assert!(
            spun >= 20_000_000,
            "10 s of spinning counted only {spun} ns of CPU"
        );
        let before = thread_cpu_time();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let slept = thread_cpu_time() - before;
        assert!(
            slept < 40_000_000,
            "a 50 ms sleep counted {slept} ns of CPU"
        );
    }
}
