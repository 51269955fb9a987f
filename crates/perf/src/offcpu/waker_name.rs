//! [`waker_name`]: a thread that ended a wait, named from `/proc` while it lives (its `comm`,
//! and whether it is a kernel thread), for both off-CPU tracers.
//!
//! Reads `/proc` only; a thread gone by then gets an empty name, never an error.

use super::events::WakerName;

/// Thread `tid` of process `pid` by its `comm`, and whether it is a kernel thread (`kthreadd`
/// itself, pid 2, or one of its children); empty when it is gone.
pub(crate) fn waker_name(pid: u32, tid: u32) -> WakerName {
    let comm = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))
        .map(|c| c.trim_end().to_string())
        .unwrap_or_default();
    // Field 4 of stat, after the parenthesised comm (which may hold spaces and parentheses).
    let ppid = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let rest = s.rsplit_once(')')?.1;
            rest.split_whitespace().nth(1)?.parse::<u32>().ok()
        });
    WakerName {
        comm,
        kernel_thread: pid == 2 || ppid == Some(2),
    }
}
