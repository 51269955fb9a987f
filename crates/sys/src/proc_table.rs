//! What /proc says about other processes, for keeping track of the ones scalelab starts: a
//! process's state, parent, process group and start time (`stat`), its children, one variable
//! of its environment, its command line, and this process's pid namespace.
//!
//! Every reader returns `None` or an empty list for a process that is gone or unreadable: a
//! process can end between any two reads, and that is never an error here.

use std::collections::BTreeSet;

/// The fields of `/proc/PID/stat` scalelab uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    /// `R`, `S`, `D`, `Z` (zombie), `T`, …
    pub state: char,
    /// The parent's pid.
    pub ppid: i32,
    /// The process group.
    pub pgrp: i32,
    /// Start time in clock ticks after boot: with the pid, it names one process for good.
    pub start: u64,
}

impl ProcStat {
    /// Whether it has exited and waits to be reaped (`Z`), or is being reaped (`X`).
    pub fn is_zombie(&self) -> bool {
        self.state == 'Z' || self.state == 'X'
    }
}

/// `/proc/PID/stat`, or `None` when the process is gone.
pub fn stat(pid: i32) -> Option<ProcStat> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// The command name (field 2) may hold spaces and parentheses, so fields are counted after
/// its last `)`.
fn parse_stat(text: &str) -> Option<ProcStat> {
    let (_, rest) = text.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state(3) ppid(4) pgrp(5) … starttime(22).
    Some(ProcStat {
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

/// Every process id in /proc.
pub fn all_pids() -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect()
}

/// The children of `pid` (of all its threads: a child belongs to the thread that forked it, and
/// orphans re-parented to a subreaper to one of its threads). Read from
/// `/proc/PID/task/*/children`, or by scanning every process's parent where the kernel lacks
/// that file (CONFIG_PROC_CHILDREN).
pub fn children(pid: i32) -> Vec<i32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut found = BTreeSet::new();
    for task in tasks.flatten() {
        match std::fs::read_to_string(task.path().join("children")) {
            Ok(list) => found.extend(
                list.split_whitespace()
                    .filter_map(|c| c.parse::<i32>().ok()),
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && task.path().exists() => {
                return all_pids()
                    .into_iter()
                    .filter(|&p| stat(p).is_some_and(|s| s.ppid == pid))
                    .collect();
            }
            // The thread ended while we looked: its children moved to another thread.
            Err(_) => {}
        }
    }
    found.into_iter().collect()
}

/// `pid`'s descendants (children, their children, …), at most `limit` of them.
pub fn descendants(pid: i32, limit: usize) -> Vec<i32> {
    let mut seen = BTreeSet::new();
    let mut queue = vec![pid];
    while let Some(p) = queue.pop() {
        for c in children(p) {
            if seen.len() >= limit {
                return seen.into_iter().collect();
            }
            if seen.insert(c) {
                queue.push(c);
            }
        }
    }
    seen.into_iter().collect()
}

/// The value of `name` in `pid`'s environment as it was at its `exec` (`/proc/PID/environ`);
/// `None` when unset, unreadable, or the process is a zombie (whose environment is empty).
pub fn env_var(pid: i32, name: &str) -> Option<String> {
    let environ = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
    let prefix = format!("{name}=");
    environ
        .split(|&b| b == 0)
        .find_map(|entry| entry.strip_prefix(prefix.as_bytes()))
        .map(|v| String::from_utf8_lossy(v).into_owned())
}

/// The thread ids of process `pid` (`/proc/PID/task`); empty when it is gone.
pub fn threads(pid: i32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut tids: Vec<i32> = dir
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort_unstable();
    tids
}

/// `pid`'s command name (`/proc/PID/comm`, at most 15 bytes), or `None` when it is gone.
pub fn comm(pid: i32) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    Some(text.trim_end_matches('\n').to_string())
}

/// Whether `pid` is a kernel thread: it has no memory map (an empty `/proc/PID/cmdline` and
/// the `PF_KTHREAD` flag, bit 21 of field 9 of `stat`).
pub fn is_kernel_thread(pid: i32) -> bool {
    let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let Some((_, rest)) = text.rsplit_once(')') else {
        return false;
    };
    // After the name: state(3) … flags(9).
    rest.split_whitespace()
        .nth(6)
        .and_then(|f| f.parse::<u64>().ok())
        .is_some_and(|flags| flags & 0x0020_0000 != 0)
}

/// `pid`'s command line with its arguments joined by spaces (at most `max` characters, then
/// `…`), or `[name]` for a process without one (a kernel thread, a zombie).
pub fn cmdline(pid: i32, max: usize) -> String {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let text = String::from_utf8_lossy(&raw)
        .trim_end_matches('\0')
        .replace('\0', " ");
    if text.is_empty() {
        let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        return format!("[{}]", comm.trim());
    }
    if text.chars().count() > max {
        let cut: String = text.chars().take(max).collect();
        return format!("{cut}…");
    }
    text
}

/// This process's pid namespace: the inode of `/proc/self/ns/pid` (`pid:[4026531836]`).
pub fn pid_namespace() -> Option<u64> {
    let link = std::fs::read_link("/proc/self/ns/pid").ok()?;
    link.to_str()?
        .strip_prefix("pid:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_last_parenthesis() {
        let line = "42 (a) b (c) S 7 42 42 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 12345 0 0";
        assert_eq!(
            parse_stat(line),
            Some(ProcStat {
                state: 'S',
                ppid: 7,
                pgrp: 42,
                start: 12345
            })
        );
        assert_eq!(parse_stat("garbage"), None);
        let me = stat(std::process::id() as i32).unwrap();
        assert_eq!(me.ppid, std::os::unix::process::parent_id() as i32);
        assert!(!me.is_zombie());
    }

    #[test]
    fn children_environment_and_command_line_of_a_real_child() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .env("PROC_TABLE_TEST", "yes =1")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let me = std::process::id() as i32;
        assert!(children(me).contains(&pid));
        assert!(descendants(me, 1000).contains(&pid));
        // The environment is the one at exec: wait until sleep has replaced the forked copy.
        let start = std::time::Instant::now();
        while cmdline(pid, 100) != "sleep 30" && start.elapsed().as_secs() < 5 {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(cmdline(pid, 100), "sleep 30");
        assert_eq!(cmdline(pid, 3), "sle…");
        assert_eq!(env_var(pid, "PROC_TABLE_TEST").as_deref(), Some("yes =1"));
        assert_eq!(env_var(pid, "PROC_TABLE_TEST_NOT_SET"), None);
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!children(me).contains(&pid));
        assert!(pid_namespace().is_some());
        assert!(threads(me).contains(&me));
        assert!(threads(pid).is_empty());
        assert!(!is_kernel_thread(me));
        assert_eq!(comm(pid), None);
    }
}
