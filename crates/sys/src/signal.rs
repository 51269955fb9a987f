//! Sending signals (`kill`) and naming them ("SIGSEGV") for messages like "trial 3 killed by
//! SIGKILL — out of memory?".

use rustix::process::{self, Pid, Signal};

use crate::error::SysError;

/// Sends `signal` to process `pid` (`kill(2)`); a negative `pid` targets the process group
/// `-pid`. Signal 0 only checks that the target exists and may be signalled. `pid` 0 and -1
/// (this process's group, every process) are refused: no caller means them, and a pid that
/// went wrong must not become "signal everything".
pub fn send_signal(pid: i32, signal: i32) -> Result<(), SysError> {
    const CALL: &str = "kill";
    let target = Pid::from_raw(pid.checked_abs().unwrap_or(0))
        .filter(|p| p.as_raw_nonzero().get() > 1 || pid > 0)
        .ok_or_else(|| SysError::InvalidArgument {
            call: CALL,
            reason: format!(
                "pid {pid} would signal more than one process or group; give a pid or -pgid"
            ),
        })?;
    let group = pid < 0;
    let sent = if signal == 0 {
        if group {
            process::test_kill_process_group(target)
        } else {
            process::test_kill_process(target)
        }
    } else {
        let sig = Signal::from_named_raw(signal).ok_or_else(|| SysError::InvalidArgument {
            call: CALL,
            reason: format!("{} is not a signal scalelab sends", signal_name(signal)),
        })?;
        if group {
            process::kill_process_group(target, sig)
        } else {
            process::kill_process(target, sig)
        }
    };
    sent.map_err(|e| {
        SysError::with_fix(CALL, e.into(), |e| match e.0 {
            libc::ESRCH => Some("no such process or process group: it has already exited"),
            libc::EPERM => Some("not allowed to signal that process (another user's?)"),
            _ => None,
        })
    })
}

/// The symbolic name of a signal: `"SIGSEGV"`, `"SIGRTMIN+3"`, or `"signal 99"` when unknown.
pub fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGSTKFLT => "SIGSTKFLT",
        libc::SIGCHLD => "SIGCHLD",
        libc::SIGCONT => "SIGCONT",
        libc::SIGSTOP => "SIGSTOP",
        libc::SIGTSTP => "SIGTSTP",
        libc::SIGTTIN => "SIGTTIN",
        libc::SIGTTOU => "SIGTTOU",
        libc::SIGURG => "SIGURG",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        libc::SIGVTALRM => "SIGVTALRM",
        libc::SIGPROF => "SIGPROF",
        libc::SIGWINCH => "SIGWINCH",
        libc::SIGIO => "SIGIO",
        libc::SIGPWR => "SIGPWR",
        libc::SIGSYS => "SIGSYS",
        _ => return realtime_name(signal).unwrap_or_else(|| format!("signal {signal}")),
    };
    name.to_string()
}

/// `SIGRTMIN+n` / `SIGRTMAX-n` names as `kill -l` prints them (the kernel's range 32..=64).
fn realtime_name(signal: i32) -> Option<String> {
    const RTMIN: i32 = 32;
    const RTMAX: i32 = 64;
    if !(RTMIN..=RTMAX).contains(&signal) {
        return None;
    }
    let from_min = signal - RTMIN;
    let from_max = RTMAX - signal;
    Some(match (from_min, from_max) {
        (0, _) => "SIGRTMIN".to_string(),
        (_, 0) => "SIGRTMAX".to_string(),
        (n, m) if n <= m => format!("SIGRTMIN+{n}"),
        (_, m) => format!("SIGRTMAX-{m}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_standard_and_realtime_signals() {
        assert_eq!(signal_name(libc::SIGSEGV), "SIGSEGV");
        assert_eq!(signal_name(9), "SIGKILL");
        assert_eq!(signal_name(34), "SIGRTMIN+2");
        assert_eq!(signal_name(63), "SIGRTMAX-1");
        assert_eq!(signal_name(64), "SIGRTMAX");
        assert_eq!(signal_name(99), "signal 99");
    }

    #[test]
    fn pids_that_mean_many_processes_are_refused() {
        for pid in [0, -1, i32::MIN] {
            let err = send_signal(pid, libc::SIGKILL).unwrap_err();
            assert!(
                err.to_string().contains("more than one process"),
                "{pid}: {err}"
            );
        }
    }

    #[test]
    fn signal_zero_probes_and_missing_process_is_named() {
        send_signal(std::process::id() as i32, 0).unwrap();
        // pid_max is at most 2^22, so this pid cannot exist.
        let err = send_signal(i32::MAX, 0).unwrap_err();
        assert!(
            err.to_string().contains("ESRCH") && err.to_string().contains("exited"),
            "{err}"
        );
    }
}
