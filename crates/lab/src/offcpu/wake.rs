//! What ended a blocked episode, named from its wake-up: the wake-up's kernel call chain (what
//! the waker was doing) and the waker's identity (a thread of the traced tree, a kernel thread,
//! another program, an idle CPU). This is the wait-for view of wPerf (Zhou et al., OSDI '18):
//! a wait is explained by the thread or event that ended it.
//!
//! The chain decides first, in this order, because the identity can mislead: a wake-up taken in
//! an interrupt runs in the context of whatever task the interrupt found on that CPU.
//! - a thread or process exiting (`do_exit`, `exit_notify`, `mm_release`…): a child's exit
//!   ending `wait4`, a thread's exit ending `pthread_join`;
//! - a timer (`hrtimer_wakeup`, `process_timeout`): a sleep or a timeout;
//! - a futex wake (`futex_wake`, `futex_requeue`): a lock's release or a condition signalled;
//! - a kernel lock's release (`rwsem_wake`, `__mutex_unlock_slowpath`, `up_write`…);
//! - the ext4/jbd2 journal (`jbd2_…` frames, or a `jbd2/…` waker);
//! - an I/O completion (`blk_mq_end_request`, `bio_endio`, `folio_end_writeback`…);
//! - a pipe or socket partner (`pipe_write`, `sock_def_readable`…);
//! - a signal (`signal_wake_up_state`, `complete_signal`);
//! - another interrupt (`__sysvec_…`, `common_interrupt`, softirq handling);
//!
//! and otherwise the waker itself: a kernel thread by name (`kworker`), a thread of the tree, or
//! another program by name. An episode no wake-up record ended was "not seen".

use std::fmt;

/// What ended a wait.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum WakeCause {
    /// A thread or process exiting (a child's `wait4`, a `pthread_join`).
    Exit,
    /// A timer: the end of a sleep or a timeout.
    Timer,
    /// A futex wake from a thread of the traced tree: a lock handed over or a condition
    /// signalled.
    FutexWake,
    /// A futex wake from outside the traced tree.
    FutexWakeOutside,
    /// A kernel sleeping lock released (rwsem, mutex, semaphore).
    KernelLockRelease,
    /// The file system's journal (jbd2).
    Journal,
    /// A block I/O completion.
    IoCompletion,
    /// A pipe's other end (written to or read from).
    Pipe,
    /// A socket's other end.
    Socket,
    /// A signal.
    Signal,
    /// A signal sent by a named thread (PostgreSQL's latch: a backend's SIGURG to another).
    SignalFrom(String),
    /// An interrupt not otherwise named.
    Interrupt,
    /// A kernel thread (its name with the per-CPU suffix cut: `kworker`, `ksoftirqd`).
    KernelThread(String),
    /// A thread of the traced tree, by name, doing none of the above.
    TreeThread(String),
    /// Another program, by name.
    Outside(String),
    /// A CPU in its idle task (an interrupt taken while idle).
    IdleCpu,
    /// No wake-up was recorded.
    NotSeen,
}

impl fmt::Display for WakeCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WakeCause::Exit => f.write_str("a thread or child exiting"),
            WakeCause::Timer => f.write_str("a timer"),
            WakeCause::FutexWake => f.write_str("a futex wake by another thread (lock hand-off)"),
            WakeCause::FutexWakeOutside => f.write_str("a futex wake from outside the command"),
            WakeCause::KernelLockRelease => f.write_str("a kernel lock's release"),
            WakeCause::Journal => f.write_str("the journal (jbd2)"),
            WakeCause::IoCompletion => f.write_str("an I/O completion"),
            WakeCause::Pipe => f.write_str("the pipe's other end"),
            WakeCause::Socket => f.write_str("the socket's other end"),
            WakeCause::Signal => f.write_str("a signal"),
            WakeCause::SignalFrom(name) => write!(f, "a signal from {name}"),
            WakeCause::Interrupt => f.write_str("an interrupt"),
            WakeCause::KernelThread(name) => write!(f, "kernel thread {name}"),
            WakeCause::TreeThread(name) => write!(f, "thread {name} of the command"),
            WakeCause::Outside(name) => write!(f, "{name} (outside the command)"),
            WakeCause::IdleCpu => f.write_str("an interrupt on an idle CPU"),
            WakeCause::NotSeen => f.write_str("not seen (no wake-up recorded)"),
        }
    }
}

impl WakeCause {
    /// Whether the waker ended the wait by what it did itself (a lock's release, a write to a
    /// pipe or socket, a journal commit, an exit), so that what it was doing is what the wait
    /// waited for; not a timer, an interrupt (which runs in whatever task it finds) or a wait
    /// whose wake-up was not seen.
    pub(crate) fn by_the_waker(&self) -> bool {
        !matches!(
            self,
            WakeCause::Timer
                | WakeCause::IoCompletion
                | WakeCause::Signal
                | WakeCause::SignalFrom(_)
                | WakeCause::Interrupt
                | WakeCause::IdleCpu
                | WakeCause::NotSeen
        )
    }
}

/// Who the wake-up ran as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WakerIdentity {
    /// A thread of the traced tree, by name.
    Tree(String),
    /// A kernel thread, by name.
    KernelThread(String),
    /// Another program, by name (empty when it was gone before it could be named).
    Outside(String),
    /// The idle task.
    Idle,
}

fn any(chain: &[&str], pred: impl Fn(&str) -> bool) -> bool {
    chain.iter().any(|f| pred(f))
}

/// A kernel thread's name without its per-CPU or per-device suffix: `kworker/1:2H` →
/// `kworker`, `ksoftirqd/0` → `ksoftirqd`; the journal's `jbd2/vda1-8` is kept whole (it
/// names the device).
fn kernel_thread_name(comm: &str) -> String {
    if comm.starts_with("jbd2/") {
        return comm.to_string();
    }
    comm.split('/').next().unwrap_or(comm).to_string()
}

/// Names what ended a wait from the wake-up's kernel chain (function names, innermost first)
/// and the waker's identity.
pub(crate) fn wake_cause(chain: &[&str], waker: &WakerIdentity) -> WakeCause {
    if any(chain, |f| {
        matches!(
            f,
            "do_exit"
                | "do_group_exit"
                | "exit_notify"
                | "do_notify_parent"
                | "__wake_up_parent"
                | "mm_release"
                | "exit_mm_release"
                | "futex_exit_release"
                | "exit_mm"
        )
    }) {
        return WakeCause::Exit;
    }
    if any(chain, |f| {
        f == "hrtimer_wakeup" || f == "process_timeout" || f == "it_real_fn"
    }) {
        return WakeCause::Timer;
    }
    if any(chain, |f| {
        f.starts_with("futex_wake") || f.starts_with("futex_requeue") || f == "futex_wake_mark"
    }) {
        return match waker {
            WakerIdentity::Tree(_) => WakeCause::FutexWake,
            _ => WakeCause::FutexWakeOutside,
        };
    }
    if any(chain, |f| {
        f.starts_with("rwsem_wake")
            || f.starts_with("__mutex_unlock")
            || f == "up_write"
            || f == "up_read"
            || f == "up"
            || f.starts_with("__up")
            || f.starts_with("percpu_up_")
            || f.starts_with("rt_mutex_unlock")
    }) {
        return WakeCause::KernelLockRelease;
    }
    let journal_thread = matches!(waker, WakerIdentity::KernelThread(n) if n.starts_with("jbd2/"));
    if journal_thread
        || any(chain, |f| {
            f.starts_with("jbd2_") || f.starts_with("__jbd2_")
        })
    {
        return WakeCause::Journal;
    }
    if any(chain, |f| {
        f.starts_with("blk_mq_end_request")
            || f.starts_with("blk_update_request")
            || f.starts_with("blk_mq_complete_request")
            || f == "bio_endio"
            || f.starts_with("folio_end_writeback")
            || f.starts_with("__folio_end_writeback")
            || f.starts_with("end_page_writeback")
            || f.starts_with("end_buffer_")
            || f == "vring_interrupt"
            || f.starts_with("virtblk_")
            || f.starts_with("nvme_")
            || f.starts_with("scsi_")
    }) {
        return WakeCause::IoCompletion;
    }
    if any(chain, |f| {
        f.contains("pipe_write") || f.contains("pipe_read")
    }) {
        return WakeCause::Pipe;
    }
    if any(chain, |f| {
        f.starts_with("sock_def_")
            || f.starts_with("unix_")
            || f.starts_with("tcp_")
            || f.starts_with("sk_")
    }) {
        return WakeCause::Socket;
    }
    if any(chain, |f| {
        f.starts_with("signal_wake_up") || f == "complete_signal" || f.starts_with("__send_signal")
    }) {
        return match waker {
            WakerIdentity::Tree(name)
            | WakerIdentity::Outside(name)
            | WakerIdentity::KernelThread(name)
                if !name.is_empty() =>
            {
                WakeCause::SignalFrom(name.clone())
            }
            _ => WakeCause::Signal,
        };
    }
    if any(chain, |f| {
        f.starts_with("__sysvec_")
            || f.starts_with("sysvec_")
            || f == "common_interrupt"
            || f.starts_with("handle_irq")
            || f.starts_with("handle_softirqs")
            || f == "__do_softirq"
            || f.contains("irq_exit")
    }) {
        return WakeCause::Interrupt;
    }
    match waker {
        WakerIdentity::Idle => WakeCause::IdleCpu,
        WakerIdentity::KernelThread(name) => WakeCause::KernelThread(kernel_thread_name(name)),
        WakerIdentity::Tree(name) => WakeCause::TreeThread(name.clone()),
        WakerIdentity::Outside(name) if name.is_empty() => {
            WakeCause::Outside("another program".into())
        }
        WakerIdentity::Outside(name) => WakeCause::Outside(name.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> WakerIdentity {
        WakerIdentity::Tree("sysbench".into())
    }

    #[test]
    fn the_chain_names_the_wake_up_before_the_waker_does() {
        // A worker releasing the contended mutex: a lock hand-off.
        let unlock = [
            "try_to_wake_up",
            "wake_up_q",
            "futex_wake",
            "do_futex",
            "__x64_sys_futex",
        ];
        assert_eq!(wake_cause(&unlock, &tree()), WakeCause::FutexWake);
        assert_eq!(
            wake_cause(&unlock, &WakerIdentity::Outside("x".into())),
            WakeCause::FutexWakeOutside
        );
        // A worker thread exiting ends the main thread's pthread_join.
        let exit = [
            "try_to_wake_up",
            "futex_wake",
            "futex_exit_release",
            "exit_mm_release",
            "exit_mm",
            "do_exit",
        ];
        assert_eq!(wake_cause(&exit, &tree()), WakeCause::Exit);
        // A disk interrupt that happened to find a worker on the CPU is no thread's doing.
        let io = [
            "try_to_wake_up",
            "folio_wake_bit",
            "folio_end_writeback",
            "blk_mq_end_request",
            "virtblk_done",
            "vring_interrupt",
            "__handle_irq_event_percpu",
            "common_interrupt",
        ];
        assert_eq!(wake_cause(&io, &tree()), WakeCause::IoCompletion);
        let timer = ["try_to_wake_up", "hrtimer_wakeup", "__hrtimer_run_queues"];
        assert_eq!(wake_cause(&timer, &WakerIdentity::Idle), WakeCause::Timer);
        let rwsem = ["try_to_wake_up", "wake_up_q", "rwsem_wake", "up_write"];
        assert_eq!(wake_cause(&rwsem, &tree()), WakeCause::KernelLockRelease);
        let pipe = ["try_to_wake_up", "__wake_up_sync_key", "anon_pipe_write"];
        assert_eq!(wake_cause(&pipe, &tree()), WakeCause::Pipe);
    }

    #[test]
    fn the_journal_is_named_by_its_thread_or_its_functions() {
        let commit = [
            "try_to_wake_up",
            "__wake_up",
            "jbd2_journal_commit_transaction",
            "kjournald2",
        ];
        assert_eq!(
            wake_cause(&commit, &WakerIdentity::KernelThread("jbd2/vda1-8".into())),
            WakeCause::Journal
        );
        assert_eq!(
            wake_cause(
                &["try_to_wake_up", "__wake_up"],
                &WakerIdentity::KernelThread("jbd2/vda1-8".into())
            ),
            WakeCause::Journal
        );
    }

    #[test]
    fn without_a_telling_chain_the_waker_names_the_wake_up() {
        let plain = ["try_to_wake_up", "__wake_up_common", "__wake_up"];
        assert_eq!(
            wake_cause(&plain, &WakerIdentity::KernelThread("kworker/1:2H".into())),
            WakeCause::KernelThread("kworker".into())
        );
        assert_eq!(
            wake_cause(&plain, &tree()),
            WakeCause::TreeThread("sysbench".into())
        );
        assert_eq!(wake_cause(&plain, &WakerIdentity::Idle), WakeCause::IdleCpu);
        assert_eq!(
            wake_cause(&plain, &WakerIdentity::Outside(String::new())).to_string(),
            "another program (outside the command)"
        );
    }

    #[test]
    fn a_signal_is_named_by_its_sender_and_neither_it_nor_a_timer_is_followed() {
        let kill = [
            "try_to_wake_up",
            "signal_wake_up_state",
            "complete_signal",
            "__send_signal_locked",
        ];
        let from = wake_cause(&kill, &WakerIdentity::Tree("postgres".into()));
        assert_eq!(from.to_string(), "a signal from postgres");
        assert_eq!(wake_cause(&kill, &WakerIdentity::Idle), WakeCause::Signal);
        assert!(!from.by_the_waker());
        assert!(!WakeCause::Timer.by_the_waker());
        assert!(WakeCause::Socket.by_the_waker());
        assert!(WakeCause::Journal.by_the_waker());
    }
}
