//! Names the cause of one blocked episode from its call chain: what the task blocked in
//! (`futex`, `rwsem:read`, `rwsem:write`, `mutex`, `fsync`, `io`, `pipe`, `sleep`, `other`),
//! on what, and who blocked.
//!
//! The kernel chain decides the kind, innermost frames first: a futex wait (`futex_wait…`), a
//! kernel sleeping lock's slow path (`rwsem_down_{read,write}_slowpath`, `__mutex_lock…`),
//! `fsync`/`fdatasync` or another wait for I/O (`io_schedule`, `folio_wait…`, `jbd2…`,
//! `file_write_and_wait_range`), a pipe (`pipe_read`, `pipe_write`, `pipe_wait…`), a sleep
//! (`do_nanosleep`, `hrtimer_nanosleep`). A kernel lock's caller is the first kernel function
//! outside the lock and scheduler code (`do_unlinkat`); every other kind's is the first user
//! frame outside the C library and the lock wrappers (the rule of `--locks` for futex waits),
//! else the first kernel function outside the scheduler.

/// One frame of a chain, already named: a function name (no offset) or `None` when unknown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NamedFrame {
    pub function: Option<String>,
    /// True for a kernel frame in the lock or scheduler text (kallsyms ranges).
    pub lock_or_sched: bool,
}

/// The cause of an episode: kind, object, caller.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Cause {
    pub kind: String,
    pub object: String,
    pub caller: String,
}

fn has(kernel: &[NamedFrame], pred: impl Fn(&str) -> bool) -> Option<&str> {
    kernel
        .iter()
        .filter_map(|f| f.function.as_deref())
        .find(|f| pred(f))
}

/// Lock and scheduler functions, by name, for kernels whose kallsyms lacks the text ranges.
fn is_lock_or_sched_name(f: &str) -> bool {
    f.starts_with("schedule")
        || f.starts_with("__schedule")
        || f.starts_with("io_schedule")
        || f.starts_with("rwsem_")
        || f.starts_with("down_")
        || f.starts_with("__down")
        || f.starts_with("up_")
        || f.starts_with("mutex_")
        || f.starts_with("__mutex")
        || f.contains("_lock_slowpath")
        || f.starts_with("preempt_schedule")
        || is_percpu_rwsem_name(f)
}

/// The per-CPU rwsem's functions (kernel/locking/percpu-rwsem.c), which are not all in the
/// lock text: `percpu_rwsem_wait` is not.
/// A writer's wait for the readers' grace period (`rcu_sync_enter`) is part of taking it.
pub(crate) fn is_percpu_rwsem_name(f: &str) -> bool {
    f.starts_with("percpu_rwsem_wait")
        || f.starts_with("rcu_sync_enter")
        || f.starts_with("__percpu_down_read")
        || f.starts_with("percpu_down_read")
        || f.starts_with("percpu_down_write")
}

/// The first kernel function outside the scheduler (and, with `locks`, the lock code).
fn first_kernel(kernel: &[NamedFrame], locks: bool) -> Option<String> {
    kernel
        .iter()
        .filter(|f| !(locks && f.lock_or_sched))
        .filter_map(|f| f.function.as_deref())
        .find(|f| {
            let sched = f.starts_with("schedule")
                || f.starts_with("__schedule")
                || f.starts_with("io_schedule")
                || f.starts_with("preempt_schedule");
            !(sched || (locks && is_lock_or_sched_name(f)))
        })
        .map(str::to_string)
}

/// Classifies one episode. `kernel`: its kernel frames, innermost first; `user_caller`: the
/// first user frame outside the C library and lock wrappers, when one was found.
pub(crate) fn classify(kernel: &[NamedFrame], user_caller: Option<&str>) -> Cause {
    let cause = |kind: &str, object: &str, caller: Option<String>| Cause {
        kind: kind.to_string(),
        object: object.to_string(),
        caller: caller.unwrap_or_else(|| "(unknown)".to_string()),
    };
    let user_or_kernel = || {
        user_caller
            .map(str::to_string)
            .or_else(|| first_kernel(kernel, true))
    };
    if has(kernel, |f| {
        f.starts_with("futex_wait") || f.starts_with("__futex_wait")
    })
    .is_some()
    {
        return cause("futex", "futex_wait", user_or_kernel());
    }
    if has(kernel, |f| f.starts_with("rwsem_down_write")).is_some() {
        return cause("rwsem:write", "down_write", first_kernel(kernel, true));
    }
    if has(kernel, |f| f.starts_with("rwsem_down_read")).is_some() {
        return cause("rwsem:read", "down_read", first_kernel(kernel, true));
    }
    if has(kernel, |f| {
        f.starts_with("__mutex_lock") || f.starts_with("mutex_lock")
    })
    .is_some()
    {
        return cause("mutex", "mutex_lock", first_kernel(kernel, true));
    }
    if has(kernel, is_percpu_rwsem_name).is_some() {
        // A writer waits in percpu_down_write (for the other writer, for a grace period, then
        // for the readers to leave), a reader in __percpu_down_read; taken by the function
        // outside them (whatever it waited in below them: a completion, synchronize_rcu).
        let caller = kernel
            .iter()
            .rposition(|f| f.function.as_deref().is_some_and(is_percpu_rwsem_name))
            .and_then(|i| first_kernel(&kernel[i + 1..], true));
        return if has(kernel, |f| f.starts_with("percpu_down_write")).is_some() {
            cause("percpu-rwsem:write", "percpu_down_write", caller)
        } else {
            cause("percpu-rwsem:read", "percpu_down_read", caller)
        };
    }
    if has(kernel, |f| {
        f == "vfs_fsync_range" || f.ends_with("sys_fsync") || f.ends_with("sys_fdatasync")
    })
    .is_some()
    {
        let object = if has(kernel, |f| f.ends_with("sys_fdatasync")).is_some() {
            "fdatasync"
        } else {
            "fsync"
        };
        return cause("fsync", object, user_or_kernel());
    }
    if let Some(f) = has(kernel, |f| {
        f.starts_with("io_schedule")
            || f.starts_with("folio_wait")
            || f.starts_with("wait_on_page")
            || f.starts_with("jbd2")
            || f == "file_write_and_wait_range"
            || f == "submit_bio_wait"
            || f.starts_with("blk_")
    }) {
        let object = f.to_string();
        return cause("io", &object, user_or_kernel());
    }
    if let Some(f) = has(kernel, |f| {
        f.ends_with("pipe_read") || f.ends_with("pipe_write")
    }) {
        // `anon_pipe_read` on newer kernels.
        let object = if f.ends_with("pipe_read") {
            "pipe_read"
        } else {
            "pipe_write"
        };
        return cause("pipe", object, user_or_kernel());
    }
    if has(kernel, |f| {
        f == "do_nanosleep"
            || f == "hrtimer_nanosleep"
            || f.ends_with("sys_nanosleep")
            || f.ends_with("sys_clock_nanosleep")
    })
    .is_some()
    {
        return cause("sleep", "nanosleep", user_or_kernel());
    }
    let object = first_kernel(kernel, true).unwrap_or_else(|| "(no kernel frame)".into());
    cause(
        "other",
        &object,
        user_caller.map(str::to_string).or(Some(object.clone())),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chain(names: &[&str]) -> Vec<NamedFrame> {
        names
            .iter()
            .map(|n| NamedFrame {
                function: Some(n.to_string()),
                lock_or_sched: n.starts_with("__schedule")
                    || n.starts_with("schedule")
                    || n.starts_with("rwsem_")
                    || n.starts_with("down_write"),
            })
            .collect()
    }

    #[test]
    fn a_futex_wait_is_named_after_its_user_caller() {
        let k = chain(&[
            "__schedule",
            "schedule",
            "futex_wait_queue",
            "futex_wait",
            "do_futex",
        ]);
        let c = classify(&k, Some("futex_mutex_lock"));
        assert_eq!(
            (c.kind.as_str(), c.caller.as_str()),
            ("futex", "futex_mutex_lock")
        );
    }

    #[test]
    fn a_kernel_rwsem_is_named_after_the_first_kernel_function_outside_lock_code() {
        let k = chain(&[
            "__schedule",
            "schedule",
            "rwsem_down_write_slowpath",
            "down_write",
            "do_unlinkat",
            "__x64_sys_unlink",
        ]);
        let c = classify(&k, Some("unlink_loop"));
        assert_eq!(
            (c.kind.as_str(), c.object.as_str(), c.caller.as_str()),
            ("rwsem:write", "down_write", "do_unlinkat")
        );
        // A mutex taken inside pipe_write is the mutex, not the pipe.
        let k = chain(&[
            "__schedule",
            "schedule",
            "__mutex_lock.constprop.0",
            "pipe_write",
        ]);
        assert_eq!(classify(&k, None).kind, "mutex");
        assert_eq!(classify(&k, None).caller, "pipe_write");
    }

    #[test]
    fn a_percpu_rwsem_wait_is_the_rwsem_named_after_the_function_that_took_it() {
        // A reader of the file locks' per-CPU rwsem, as `stress-ng --flock` waits (its
        // percpu_rwsem_wait is outside the lock text, so named, not by its address).
        let k = chain(&[
            "__schedule",
            "schedule",
            "percpu_rwsem_wait",
            "__percpu_down_read",
            "flock_lock_inode",
            "locks_lock_inode_wait",
            "__do_sys_flock",
        ]);
        let c = classify(&k, Some("stress_flock"));
        assert_eq!(
            (c.kind.as_str(), c.object.as_str(), c.caller.as_str()),
            ("percpu-rwsem:read", "percpu_down_read", "flock_lock_inode")
        );
        // Its writer (the /proc/locks reader, a lease change).
        let k = chain(&[
            "__schedule",
            "schedule",
            "__wait_rcu_gp",
            "synchronize_rcu",
            "rcu_sync_enter",
            "percpu_down_write",
            "locks_start",
            "seq_read_iter",
        ]);
        let c = classify(&k, None);
        assert_eq!(
            (c.kind.as_str(), c.caller.as_str()),
            ("percpu-rwsem:write", "locks_start")
        );
    }

    #[test]
    fn pipes_sleeps_fsync_and_io_are_named() {
        let k = chain(&[
            "__schedule",
            "schedule",
            "pipe_read",
            "vfs_read",
            "ksys_read",
        ]);
        let c = classify(&k, Some("ping"));
        assert_eq!(
            (c.kind.as_str(), c.object.as_str(), c.caller.as_str()),
            ("pipe", "pipe_read", "ping")
        );
        let k = chain(&[
            "__schedule",
            "schedule",
            "do_nanosleep",
            "hrtimer_nanosleep",
        ]);
        assert_eq!(classify(&k, Some("main")).kind, "sleep");
        let k = chain(&[
            "__schedule",
            "io_schedule",
            "folio_wait_bit_common",
            "file_write_and_wait_range",
            "ext4_sync_file",
            "vfs_fsync_range",
            "__x64_sys_fdatasync",
        ]);
        let c = classify(&k, Some("writer"));
        assert_eq!((c.kind.as_str(), c.object.as_str()), ("fsync", "fdatasync"));
        let k = chain(&[
            "__schedule",
            "io_schedule",
            "folio_wait_bit_common",
            "filemap_read",
        ]);
        assert_eq!(classify(&k, None).kind, "io");
        let k = chain(&["__schedule", "schedule", "do_wait", "kernel_wait4"]);
        let c = classify(&k, None);
        assert_eq!(
            (c.kind.as_str(), c.object.as_str(), c.caller.as_str()),
            ("other", "do_wait", "do_wait")
        );
    }
}
