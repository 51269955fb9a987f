//! Which threads of a command's tree worked and which supervised ([`ThreadRole`]), from their
//! lives and what ended their waits.
//!
//! The rule, stated in [`ThreadRole::rule`] too:
//! - **supervising**: the thread started threads or processes of the tree (they descend from
//!   it), was blocked for at least half of its life, and at least half of that blocked time was
//!   spent waiting for them — in `wait4`/`waitid`, woken by one of them (its exit ending a
//!   `pthread_join`, a condition it signalled), ended within [`EXIT_SLACK_NS`] of one of them
//!   exiting (a join whose wake-up the kernel recorded on the joiner's CPU, in the interrupt
//!   that queued it there, without its waker), or woken by a timer while they ran (a progress
//!   reporter's sleeps). The shell wrapper of `--cmd`, a `main` joining its workers, dbench's
//!   parent and `make` are such threads.
//! - **idle**: blocked for at least 90% of its life, never woken in the window, and under 1% of
//!   it on a CPU (a parked pool thread): it did nothing.
//! - every other thread is a **worker**, however long it waited: a worker starved by a lock is
//!   the scaling problem, not a bystander. Peers handing a lock to each other are siblings, not
//!   descendants, so they stay workers. A worker's waits for what it started (in
//!   `wait4`/`waitid`, woken by one of them, or ended as one exited) are not its work either:
//!   the started threads' own time holds them (a gcc driver that waits for `cc1`, then spends
//!   1.7 s in `unlink` of its temporary file on an ext4 mounted with `discard`, works in the
//!   unlink, not in the `wait4`).

use std::collections::HashMap;

use super::wake::WakeCause;
use model::thread_account::ThreadRole;

/// How soon after a started thread's exit a wait that ends counts as waiting for it: a
/// wake-up queued to another CPU runs there within microseconds (sysbench's `main` joining
/// its workers: woken 3-40 µs after each exit, seen as an interrupt's wake-up).
pub(crate) const EXIT_SLACK_NS: u64 = 2_000_000;

/// One thread's life inside the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Life {
    pub tid: u32,
    /// The thread that created it, when traced.
    pub parent: Option<u32>,
    pub on_cpu: u64,
    pub blocked: u64,
    pub life: u64,
    /// When it exited, if it did while traced.
    pub end: Option<u64>,
}

/// One blocked episode inside the window, as the rule reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Wait {
    pub tid: u32,
    /// Its blocked time inside the window.
    pub blocked: u64,
    /// The waker's thread, when the wake-up was recorded.
    pub waker: Option<u32>,
    pub cause: WakeCause,
    /// Blocked in `wait4`/`waitid` (the kernel chain's `do_wait`).
    pub child_wait: bool,
    /// Ended inside the window (woken or switched in).
    pub ended: bool,
    /// When it ended (`u64::MAX` if it had not).
    pub end: u64,
}

/// A thread's role, and the time it spent waiting for what it started: for a supervisor every
/// such wait (its progress timer's too), for a worker its waits for them alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Assigned {
    pub role: ThreadRole,
    pub waiting_for_started: u64,
}

/// Every thread's role ([`Assigned`]) by thread id, and for each of `waits` (in order) whether
/// it was waiting for what its thread started ([`Assigned::waiting_for_started`]'s waits).
pub(crate) fn assign(lives: &[Life], waits: &[Wait]) -> (HashMap<u32, Assigned>, Vec<bool>) {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for l in lives {
        if let Some(p) = l.parent {
            children.entry(p).or_default().push(l.tid);
        }
    }
    let descendants = |tid: u32| -> Vec<u32> {
        let mut out = Vec::new();
        let mut stack = vec![tid];
        while let Some(t) = stack.pop() {
            for &c in children.get(&t).into_iter().flatten() {
                if c != tid && !out.contains(&c) {
                    out.push(c);
                    stack.push(c);
                }
            }
        }
        out
    };
    let mut by_tid: HashMap<u32, Vec<usize>> = HashMap::new();
    for (i, w) in waits.iter().enumerate() {
        by_tid.entry(w.tid).or_default().push(i);
    }
    let mut for_started = vec![false; waits.len()];
    let roles = lives
        .iter()
        .map(|l| {
            let mine = by_tid.get(&l.tid).map_or(&[][..], Vec::as_slice);
            let started = descendants(l.tid);
            let exits: Vec<u64> = lives
                .iter()
                .filter(|o| started.contains(&o.tid))
                .filter_map(|o| o.end)
                .collect();
            let after_an_exit = |w: &Wait| {
                exits
                    .iter()
                    .any(|&x| x <= w.end && w.end - x <= EXIT_SLACK_NS)
            };
            // Waiting for them: in wait4/waitid, woken by one, or ended as one exited.
            let for_them = |w: &Wait| {
                !started.is_empty()
                    && (w.child_wait
                        || w.waker.is_some_and(|t| started.contains(&t))
                        || after_an_exit(w))
            };
            // A supervisor's progress timer counts too: it sleeps while they run.
            let supervising_wait =
                |w: &Wait| for_them(w) || (!started.is_empty() && w.cause == WakeCause::Timer);
            let waiting: u64 = mine
                .iter()
                .map(|&i| &waits[i])
                .filter(|w| supervising_wait(w))
                .map(|w| w.blocked)
                .sum();
            let role = if !started.is_empty()
                && 2 * l.blocked >= l.life
                && 2 * waiting >= l.blocked
                && l.blocked > 0
            {
                ThreadRole::Supervisor
            } else if l.life > 0
                && 10 * l.blocked >= 9 * l.life
                && 100 * l.on_cpu < l.life
                && !mine.iter().any(|&i| waits[i].ended)
            {
                ThreadRole::Idle
            } else {
                ThreadRole::Worker
            };
            let counted = |w: &Wait| match role {
                ThreadRole::Supervisor => supervising_wait(w),
                ThreadRole::Worker => for_them(w),
                ThreadRole::Idle | ThreadRole::Server | ThreadRole::Kernel => false,
            };
            let mut waiting_for_started = 0;
            for &i in mine {
                if counted(&waits[i]) {
                    for_started[i] = true;
                    waiting_for_started += waits[i].blocked;
                }
            }
            (
                l.tid,
                Assigned {
                    role,
                    waiting_for_started,
                },
            )
        })
        .collect();
    (roles, for_started)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn life(tid: u32, parent: Option<u32>, on_cpu: u64, blocked: u64) -> Life {
        Life {
            tid,
            parent,
            on_cpu,
            blocked,
            life: on_cpu + blocked,
            end: None,
        }
    }

    fn wait(tid: u32, blocked: u64, waker: Option<u32>, cause: WakeCause) -> Wait {
        Wait {
            tid,
            blocked,
            waker,
            cause,
            child_wait: false,
            ended: true,
            end: u64::MAX,
        }
    }

    #[test]
    fn a_main_joining_its_workers_supervises_and_the_workers_handing_a_lock_around_work() {
        // main (1) starts workers 2 and 3, which hand a mutex to each other and exit.
        let lives = [
            life(1, None, 5, 995),
            life(2, Some(1), 400, 600),
            life(3, Some(1), 420, 580),
        ];
        let waits = [
            wait(1, 10, Some(1), WakeCause::FutexWake), // a start barrier, released by itself
            wait(1, 985, Some(3), WakeCause::Exit),     // the join
            wait(2, 600, Some(3), WakeCause::FutexWake),
            wait(3, 580, Some(2), WakeCause::FutexWake),
        ];
        let roles = assign(&lives, &waits).0;
        assert_eq!(roles[&1].role, ThreadRole::Supervisor);
        assert_eq!(roles[&1].waiting_for_started, 985);
        assert_eq!(roles[&2].role, ThreadRole::Worker);
        assert_eq!(roles[&3].role, ThreadRole::Worker);
    }

    #[test]
    fn a_join_woken_in_another_cpus_interrupt_just_after_an_exit_is_waiting_for_it() {
        // sysbench: main (1) joins workers 2 and 3; its wake-up is recorded on its own CPU, in
        // the interrupt that queued it there, 30 µs after worker 3 exits. A wait that ends
        // long after any exit (a lock it took) is not waiting for them.
        let mut lives = [
            life(1, None, 5, 995),
            life(2, Some(1), 400, 600),
            life(3, Some(1), 420, 580),
        ];
        lives[2].end = Some(1_000_000_000);
        let mut join = wait(1, 985, None, WakeCause::Interrupt);
        join.end = 1_000_030_000;
        let waits = [join, wait(2, 600, Some(3), WakeCause::FutexWake)];
        let roles = assign(&lives, &waits).0;
        assert_eq!(roles[&1].role, ThreadRole::Supervisor);
        assert_eq!(roles[&1].waiting_for_started, 985);
        let mut late = wait(1, 985, None, WakeCause::Interrupt);
        late.end = 1_000_000_000 + 2 * EXIT_SLACK_NS;
        let roles = assign(&lives, &[late]).0;
        assert_eq!(roles[&1].role, ThreadRole::Worker);
    }

    #[test]
    fn a_shell_in_wait4_and_a_parent_reporting_on_a_timer_supervise() {
        let lives = [
            life(10, None, 1, 999),      // sh -c, in wait4
            life(11, Some(10), 20, 980), // dbench's parent: sleeps, reports
            life(12, Some(11), 700, 300),
        ];
        let mut sh = wait(10, 999, None, WakeCause::NotSeen);
        sh.child_wait = true;
        let waits = [
            sh,
            wait(11, 900, None, WakeCause::Timer),
            wait(11, 80, Some(12), WakeCause::Exit),
            wait(12, 300, None, WakeCause::IoCompletion),
        ];
        let roles = assign(&lives, &waits).0;
        assert_eq!(roles[&10].role, ThreadRole::Supervisor);
        assert_eq!(roles[&11].role, ThreadRole::Supervisor);
        assert_eq!(roles[&12].role, ThreadRole::Worker);
    }

    #[test]
    fn a_worker_that_sleeps_without_starting_anything_is_still_a_worker() {
        // No descendants: sleeping is its own cost, not supervision.
        let lives = [life(5, None, 100, 900)];
        let waits = [wait(5, 900, None, WakeCause::Timer)];
        assert_eq!(assign(&lives, &waits).0[&5].role, ThreadRole::Worker);
        // A thread that starts helpers but computes most of the time works.
        let lives = [life(1, None, 800, 200), life(2, Some(1), 900, 100)];
        let waits = [wait(1, 200, Some(2), WakeCause::Exit)];
        assert_eq!(assign(&lives, &waits).0[&1].role, ThreadRole::Worker);
    }

    #[test]
    fn a_thread_parked_the_whole_window_is_idle_and_one_starved_by_a_lock_works() {
        let mut parked = wait(7, 999, None, WakeCause::NotSeen);
        parked.ended = false;
        let lives = [life(7, Some(1), 1, 999), life(8, Some(1), 5, 995)];
        // 8 waits almost all the time too, but its waits end: a lock it keeps losing.
        let waits = [parked, wait(8, 995, Some(9), WakeCause::FutexWake)];
        let roles = assign(&lives, &waits).0;
        assert_eq!(roles[&7].role, ThreadRole::Idle);
        assert_eq!(roles[&8].role, ThreadRole::Worker);
    }

    #[test]
    fn a_worker_that_waits_for_its_child_works_in_its_other_waits_only() {
        // A gcc driver (1) waits 400 ms for cc1 (2) in wait4, then 1.7 s in unlink on a
        // discard (woken by the disk's interrupt): it worked, and only the unlink is its own
        // wait.
        const MS: u64 = 1_000_000;
        let mut lives = [
            life(1, None, 4 * MS, 2_100 * MS),
            life(2, Some(1), 390 * MS, 10 * MS),
        ];
        lives[1].end = Some(500 * MS);
        let mut child = wait(1, 400 * MS, Some(2), WakeCause::Exit);
        child.child_wait = true;
        child.end = 500 * MS;
        let mut unlink = wait(1, 1_700 * MS, Some(0), WakeCause::Interrupt);
        unlink.end = 2_300 * MS;
        let (roles, for_started) = assign(&lives, &[child, unlink]);
        assert_eq!(roles[&1].role, ThreadRole::Worker);
        assert_eq!(roles[&1].waiting_for_started, 400 * MS);
        assert_eq!(for_started, [true, false]);
    }
}
