//! Sending signals (`kill`) and naming them ("SIGSEGV") for messages like "trial 3 killed by
//! SIGKILL — out of memory?".

use crate::error::{Errno, SysError};

/// Sends `signal` to process `pid` (`kill(2)`); a negative `pid` targets the process group
/// `-pid`. Signal 0 only checks that the target exists and may be signalled.
pub fn send_signal(pid: i32, signal: i32) -> Result<(), SysError> {
    // SAFETY: kill takes two integers and touches no memory of ours.
    let rc = unsafe { libc::kill(pid, signal) };
    if rc != 0 {
        return Err(SysError::with_fix("kill", Errno::last(), |e| match e.0 {
            libc::ESRCH => Some("no such process or process group: it has already exited"),
            libc::EPERM => Some("not allowed to signal that process (another user's?)"),
            libc::EINVAL => Some("not a valid signal number"),
            _ => None,
        }));
    }
    Ok(())
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
