//! [`ResourceUsage`]: the `getrusage`/`wait4` accounting people already read (user, sys, page
//! faults, context switches, block I/O, max RSS), for a thread, the process or its children.

use std::mem::MaybeUninit;
use std::time::Duration;

use crate::error::SysError;

/// One `struct rusage`, with times as [`Duration`]s and counts as `u64`.
///
/// Every field is a cumulative counter except `max_rss_kib`, a high-water mark:
/// [`saturating_sub`](Self::saturating_sub) keeps the later value and [`add`](Self::add) takes
/// the larger, as the kernel itself does for `RUSAGE_CHILDREN`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResourceUsage {
    /// CPU time spent in user mode.
    pub user: Duration,
    /// CPU time spent in the kernel.
    pub system: Duration,
    /// Page faults served without I/O.
    pub minor_faults: u64,
    /// Page faults that needed I/O.
    pub major_faults: u64,
    /// Context switches because the task blocked (waited for something).
    pub voluntary_switches: u64,
    /// Context switches because the task was preempted (time slice over, higher priority).
    pub involuntary_switches: u64,
    /// Filesystem input operations (512-byte blocks).
    pub block_in: u64,
    /// Filesystem output operations (512-byte blocks).
    pub block_out: u64,
    /// Largest resident set size seen, in KiB.
    pub max_rss_kib: u64,
}

impl ResourceUsage {
    /// The usage between `earlier` and `self` (counters subtract, saturating at zero; the
    /// `max_rss_kib` high-water mark is `self`'s).
    pub fn saturating_sub(&self, earlier: &ResourceUsage) -> ResourceUsage {
        ResourceUsage {
            user: self.user.saturating_sub(earlier.user),
            system: self.system.saturating_sub(earlier.system),
            minor_faults: self.minor_faults.saturating_sub(earlier.minor_faults),
            major_faults: self.major_faults.saturating_sub(earlier.major_faults),
            voluntary_switches: self
                .voluntary_switches
                .saturating_sub(earlier.voluntary_switches),
            involuntary_switches: self
                .involuntary_switches
                .saturating_sub(earlier.involuntary_switches),
            block_in: self.block_in.saturating_sub(earlier.block_in),
            block_out: self.block_out.saturating_sub(earlier.block_out),
            max_rss_kib: self.max_rss_kib,
        }
    }

    /// The combined usage of two tasks (counters add, saturating; `max_rss_kib` is the larger).
    pub fn add(&self, other: &ResourceUsage) -> ResourceUsage {
        ResourceUsage {
            user: self.user.saturating_add(other.user),
            system: self.system.saturating_add(other.system),
            minor_faults: self.minor_faults.saturating_add(other.minor_faults),
            major_faults: self.major_faults.saturating_add(other.major_faults),
            voluntary_switches: self
                .voluntary_switches
                .saturating_add(other.voluntary_switches),
            involuntary_switches: self
                .involuntary_switches
                .saturating_add(other.involuntary_switches),
            block_in: self.block_in.saturating_add(other.block_in),
            block_out: self.block_out.saturating_add(other.block_out),
            max_rss_kib: self.max_rss_kib.max(other.max_rss_kib),
        }
    }

    /// User plus system CPU time.
    pub fn cpu(&self) -> Duration {
        self.user.saturating_add(self.system)
    }

    /// Converts the kernel's struct (negative values, which the kernel never reports, become 0).
    pub(crate) fn from_raw(raw: &libc::rusage) -> ResourceUsage {
        let count = |v: libc::c_long| u64::try_from(v).unwrap_or(0);
        ResourceUsage {
            user: timeval_to_duration(raw.ru_utime),
            system: timeval_to_duration(raw.ru_stime),
            minor_faults: count(raw.ru_minflt),
            major_faults: count(raw.ru_majflt),
            voluntary_switches: count(raw.ru_nvcsw),
            involuntary_switches: count(raw.ru_nivcsw),
            block_in: count(raw.ru_inblock),
            block_out: count(raw.ru_oublock),
            max_rss_kib: count(raw.ru_maxrss),
        }
    }
}

fn timeval_to_duration(tv: libc::timeval) -> Duration {
    let secs = u64::try_from(tv.tv_sec).unwrap_or(0);
    let micros = u32::try_from(tv.tv_usec).unwrap_or(0);
    Duration::new(secs, 0).saturating_add(Duration::from_micros(micros.into()))
}

fn getrusage(who: libc::c_int, call: &'static str) -> Result<ResourceUsage, SysError> {
    let mut raw = MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `raw` is a writable, properly aligned `struct rusage`; getrusage writes only it.
    let rc = unsafe { libc::getrusage(who, raw.as_mut_ptr()) };
    if rc != 0 {
        return Err(SysError::last(call));
    }
    // SAFETY: zeroed is already a valid rusage (all integers), and getrusage succeeded.
    let raw = unsafe { raw.assume_init() };
    Ok(ResourceUsage::from_raw(&raw))
}

/// The calling thread's usage (`RUSAGE_THREAD`).
pub fn thread_usage() -> Result<ResourceUsage, SysError> {
    getrusage(libc::RUSAGE_THREAD, "getrusage(RUSAGE_THREAD)")
}

/// The whole process's usage, all threads (`RUSAGE_SELF`).
pub fn process_usage() -> Result<ResourceUsage, SysError> {
    getrusage(libc::RUSAGE_SELF, "getrusage(RUSAGE_SELF)")
}

/// The usage of all children (and their descendants) that have been waited for
/// (`RUSAGE_CHILDREN`).
pub fn children_usage() -> Result<ResourceUsage, SysError> {
    getrusage(libc::RUSAGE_CHILDREN, "getrusage(RUSAGE_CHILDREN)")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn busy(iterations: u64) -> u64 {
        let mut acc = 0u64;
        for i in 0..iterations {
            acc = std::hint::black_box(acc.wrapping_mul(31).wrapping_add(i));
        }
        acc
    }

    #[test]
    fn thread_usage_grows_after_a_busy_loop() {
        // A fixed amount of work, not a wall-clock interval: CPU time for it does not shrink
        // when the machine is busy with other tests.
        let before = thread_usage().unwrap();
        // About 100 ms optimised (this crate is, even in dev builds): 10 million iterations
        // took 10.8 ms, too near the bound.
        busy(100_000_000);
        let delta = thread_usage().unwrap().saturating_sub(&before);
        assert!(
            delta.cpu() >= Duration::from_millis(5),
            "cpu grew only {:?}",
            delta.cpu()
        );
        assert!(delta.user >= delta.system, "{delta:?}");
    }

    #[test]
    fn process_usage_is_at_least_thread_usage() {
        busy(1_000_000);
        let thread = thread_usage().unwrap();
        let process = process_usage().unwrap();
        assert!(process.cpu() >= thread.cpu());
        assert!(process.max_rss_kib > 0);
        children_usage().unwrap();
    }

    #[test]
    fn sub_and_add_treat_max_rss_as_a_high_water_mark() {
        let a = ResourceUsage {
            user: Duration::from_millis(5),
            minor_faults: 10,
            max_rss_kib: 100,
            ..Default::default()
        };
        let b = ResourceUsage {
            user: Duration::from_millis(8),
            minor_faults: 4,
            max_rss_kib: 300,
            ..Default::default()
        };
        let diff = b.saturating_sub(&a);
        assert_eq!(diff.user, Duration::from_millis(3));
        assert_eq!(diff.minor_faults, 0, "saturates instead of wrapping");
        assert_eq!(diff.max_rss_kib, 300);
        let sum = a.add(&b);
        assert_eq!(sum.user, Duration::from_millis(13));
        assert_eq!(sum.minor_faults, 14);
        assert_eq!(sum.max_rss_kib, 300);
    }

    #[test]
    fn timeval_conversion() {
        let tv = libc::timeval {
            tv_sec: 2,
            tv_usec: 500_000,
        };
        assert_eq!(timeval_to_duration(tv), Duration::from_millis(2500));
    }
}
