//! The calling thread's scheduling policy: [`run_realtime`] puts it in `SCHED_FIFO` so that it
//! runs the moment it wakes, ahead of every ordinary (`SCHED_OTHER`) thread.
//!
//! A trial's sampler wakes a few times a second to read the counters and, at the window's
//! edges, to open and close it. With many more tasks runnable than CPUs, an ordinary thread
//! waits for its turn behind them (how late: docs/notes/runner.md). At the lowest real-time
//! priority it preempts a task for the few microseconds each wake-up takes. The kernel's
//! real-time throttling (`sched_rt_runtime_us`, 95% of each second by default) bounds what a
//! real-time thread can take should it ever spin. By hand because rustix does not wrap
//! `sched_setscheduler`.

use crate::error::{Errno, SysError};

/// Puts the calling thread in `SCHED_FIFO` at `priority` (1 is the lowest), with
/// `SCHED_RESET_ON_FORK` so that nothing it creates inherits the policy. Needs CAP_SYS_NICE
/// (root) or an `RLIMIT_RTPRIO` allowing it; the error says so.
pub fn run_realtime(priority: i32) -> Result<(), SysError> {
    const CALL: &str = "sched_setscheduler";
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: pid 0 is the calling thread; `param` is a live, initialised sched_param the
    // kernel only reads for the duration of the call.
    let rc = unsafe {
        libc::sched_setscheduler(0, libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, &param)
    };
    if rc != 0 {
        return Err(SysError::with_fix(CALL, Errno::last(), |e| match e.0 {
            libc::EPERM => Some(
                "not permitted to use real-time scheduling: run as root, or with CAP_SYS_NICE \
                 or an RLIMIT_RTPRIO of at least 1",
            ),
            _ => None,
        }));
    }
    Ok(())
}

/// True when the calling thread runs in a real-time policy (`SCHED_FIFO` or `SCHED_RR`).
pub fn is_realtime() -> bool {
    // SAFETY: pid 0 is the calling thread; the call reads nothing from us.
    let policy = unsafe { libc::sched_getscheduler(0) };
    policy >= 0
        && matches!(
            policy & !libc::SCHED_RESET_ON_FORK,
            libc::SCHED_FIFO | libc::SCHED_RR
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_runs_realtime_when_permitted_and_its_children_do_not() {
        std::thread::spawn(|| match run_realtime(1) {
            Ok(()) => {
                assert!(is_realtime());
                // SCHED_RESET_ON_FORK: a thread it creates is ordinary again.
                let child = std::thread::spawn(is_realtime).join().unwrap();
                assert!(!child, "the policy was inherited");
            }
            Err(e) => {
                let text = e.to_string();
                assert!(text.contains("CAP_SYS_NICE"), "{text}");
                eprintln!("skipped: {text}");
            }
        })
        .join()
        .unwrap();
        assert!(!is_realtime(), "the test thread itself stays ordinary");
    }
}
