//! The crate's one error type, [`PerfError`]: which event failed, the errno text, and what to
//! do about it ("set kernel.perf_event_paranoid <= 2 or run with CAP_PERFMON").
//!
//! The fix for a failed `perf_event_open` depends on the errno and, for permission errors, on
//! the current `kernel.perf_event_paranoid`, so it is worked out here once for every caller.

use std::io;

use sys::Errno;

/// Where the kernel's perf permission knob lives.
const PARANOID_PATH: &str = "/proc/sys/kernel/perf_event_paranoid";

/// Everything that can go wrong while opening or reading a counter.
#[derive(Debug, thiserror::Error)]
pub enum PerfError {
    /// `perf_event_open` refused the event.
    #[error("{event}: perf_event_open: {cause}{}", fix_suffix(.fix.as_deref()))]
    Open {
        /// The event's name, as `perf stat` prints it ("cycles").
        event: &'static str,
        /// The errno, when the failure was one.
        errno: Option<Errno>,
        /// The errno text ("No such file or directory (ENOENT)") or another cause.
        cause: String,
        /// What to do about it, when something can be done.
        fix: Option<String>,
    },
    /// Reading an open counter failed.
    #[error("{event}: reading the counter: {source}")]
    Read {
        /// The event's name.
        event: &'static str,
        /// The I/O error from `read(2)`.
        #[source]
        source: io::Error,
    },
    /// The kernel could not schedule the counter on the PMU and put it in an error state.
    #[error(
        "{event}: the kernel could not schedule the counter on the PMU — too many pinned or \
         exclusive counters are in use (another perf, or the NMI watchdog: try \
         kernel.nmi_watchdog=0)"
    )]
    NotScheduled {
        /// The event's name.
        event: &'static str,
    },
    /// A tracepoint (lock or futex tracing) is missing, unreadable or unparsable.
    #[error("{event}: {cause} — {fix}")]
    Tracepoint {
        /// `system:name`, as perf names it.
        event: String,
        /// What went wrong.
        cause: String,
        /// What to do about it.
        fix: String,
    },
    /// The in-kernel (BPF) off-CPU accounting is not in this build, or the kernel refused it.
    #[error("in-kernel tracing (BPF): {what}: {cause} — {fix}")]
    Bpf {
        /// The step that failed ("loading the program").
        what: String,
        /// What went wrong.
        cause: String,
        /// What to do about it.
        fix: String,
    },
    /// A file the user named (perf.data, kallsyms) is missing, a device, or past its limit.
    #[error(transparent)]
    Input(#[from] sys::SysError),
    /// A perf.data file could not be read or parsed.
    #[error("{path}: {cause}")]
    ProfileData {
        /// The perf.data (or kallsyms) file.
        path: String,
        /// What went wrong, with the fix where one exists.
        cause: String,
    },
}

fn fix_suffix(fix: Option<&str>) -> String {
    fix.map(|fix| format!(" — {fix}")).unwrap_or_default()
}

impl PerfError {
    /// Classifies a failed `perf_event_open` for `event`.
    pub fn open(event: &'static str, error: &io::Error) -> PerfError {
        let Some(code) = error.raw_os_error() else {
            // perf-event2 turns E2BIG (attr layout newer than the kernel) into a custom error.
            return PerfError::Open {
                event,
                errno: None,
                cause: error.to_string(),
                fix: Some("the kernel is older than this perf_event_attr layout".to_string()),
            };
        };
        let errno = Errno(code);
        PerfError::Open {
            event,
            errno: Some(errno),
            cause: errno.to_string(),
            fix: open_fix(errno),
        }
    }

    /// True when the failure was a permission check (`EACCES`/`EPERM`).
    pub fn is_permission_denied(&self) -> bool {
        matches!(
            self,
            PerfError::Open {
                errno: Some(Errno(libc::EACCES | libc::EPERM)),
                ..
            }
        )
    }
}

fn open_fix(errno: Errno) -> Option<String> {
    use libc::{E2BIG, EACCES, EBUSY, EINVAL, EMFILE, ENODEV, ENOENT, ENOSYS, EOPNOTSUPP, EPERM};
    let fix = match errno.0 {
        ENOENT => "the PMU does not expose this event; common in VMs without a virtual PMU".into(),
        EOPNOTSUPP => {
            "the PMU cannot count this event in this mode; common in VMs without a virtual PMU"
                .into()
        }
        ENODEV => "this CPU has no such event".into(),
        EACCES | EPERM => permission_fix(paranoid_level()),
        EBUSY => "the PMU is held exclusively by another user (another perf session?)".into(),
        EMFILE => "too many open files: raise the limit with `ulimit -n`".into(),
        E2BIG => "the kernel is older than this perf_event_attr layout".into(),
        EINVAL => "the kernel rejected the event attributes for this CPU".into(),
        ENOSYS => "the kernel was built without perf events (CONFIG_PERF_EVENTS)".into(),
        _ => return None,
    };
    Some(fix)
}

/// The current `kernel.perf_event_paranoid`, if readable.
pub fn paranoid_level() -> Option<i32> {
    std::fs::read_to_string(PARANOID_PATH)
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn permission_fix(paranoid: Option<i32>) -> String {
    let now = paranoid
        .map(|p| format!(" (it is {p})"))
        .unwrap_or_default();
    format!("permission denied — set kernel.perf_event_paranoid <= 2{now} or run with CAP_PERFMON")
}

/// Why kernel-mode counting was dropped, for the run record.
pub fn kernel_exclusion_reason() -> String {
    let now = paranoid_level()
        .map(|p| format!(" = {p}"))
        .unwrap_or_default();
    format!(
        "kernel.perf_event_paranoid{now} forbids counting kernel events, so only user space is \
         counted — set it <= 1 or run with CAP_PERFMON to include the kernel"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn enoent_names_event_syscall_errno_and_the_vm_hint() {
        let err = PerfError::open("cycles", &io::Error::from_raw_os_error(libc::ENOENT));
        assert_eq!(
            err.to_string(),
            "cycles: perf_event_open: No such file or directory (ENOENT) — the PMU does not \
             expose this event; common in VMs without a virtual PMU"
        );
        assert!(!err.is_permission_denied());
    }

    #[test]
    fn permission_errors_name_the_sysctl_and_capability() {
        let err = PerfError::open("instructions", &io::Error::from_raw_os_error(libc::EACCES));
        assert!(err.is_permission_denied());
        let text = err.to_string();
        assert!(text.starts_with("instructions: perf_event_open: Permission denied (EACCES)"));
        assert!(
            text.contains("perf_event_paranoid <= 2") && text.contains("CAP_PERFMON"),
            "{text}"
        );
        assert_eq!(
            permission_fix(Some(3)),
            "permission denied — set kernel.perf_event_paranoid <= 2 (it is 3) or run with \
             CAP_PERFMON"
        );
    }

    #[test]
    fn non_errno_failures_keep_their_text() {
        let err = PerfError::open(
            "cycles",
            &io::Error::new(io::ErrorKind::Unsupported, "E2BIG"),
        );
        assert!(err.to_string().contains("older than"), "{err}");
    }
}
