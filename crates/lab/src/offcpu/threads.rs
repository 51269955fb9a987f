//! A command step's threads over the window: what ended each of their waits
//! ([`super::wake`]), which of them worked ([`super::roles`]), and their time summed by role and
//! name as [`ThreadGroup`]s.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::roles::{self, Assigned, Life, Wait};
use super::wake::{WakeCause, WakerIdentity, wake_cause};
use model::record::{ClockWindow, Nanos, WokenShare};
use model::thread_account::{ThreadGroup, ThreadRole};

/// Thread ids kept per group, to find them in a profile or a trace.
const GROUP_TIDS: usize = 8;
/// Wake causes kept per site, most time first (the rest summed as "other").
const SITE_CAUSES: usize = 4;

/// The command's threads, before their roles are known.
#[derive(Debug)]
pub(crate) struct TreeThreads {
    /// Every traced thread of the command (scalelab's and an excluded `perf record`'s left
    /// out).
    lives: Vec<perf::ThreadLife>,
    /// The names of every traced thread, the command's and the others', by thread id.
    names: HashMap<u32, (String, bool)>,
    /// The threads beside the command's whose waits are followed: the system under test's
    /// servers (`--server`, `--attach`, and what they started: [`ThreadRole::Server`]) and
    /// the kernel threads traced as they woke a traced thread ([`ThreadRole::Kernel`]).
    followed: HashMap<u32, ThreadRole>,
}

impl TreeThreads {
    /// The command's threads in `trace`: those of processes `excluded` does not drop; those of
    /// processes `system` (a server's, an attached one's) and the threads they created are
    /// servers.
    pub(crate) fn new(
        trace: &perf::OffCpuTrace,
        excluded: impl Fn(u32) -> bool,
        system: &HashSet<u32>,
    ) -> TreeThreads {
        let mut names = HashMap::new();
        let mut lives = Vec::new();
        let mut followed = HashMap::new();
        // Oldest first: a thread's creator comes before it.
        let mut by_age: Vec<&perf::ThreadLife> = trace.threads.iter().collect();
        by_age.sort_by_key(|t| (t.begin, t.tid));
        for t in by_age {
            let ours = !excluded(t.pid);
            names.insert(t.tid, (t.comm.clone(), ours));
            if ours {
                if t.kernel_waker {
                    followed.insert(t.tid, ThreadRole::Kernel);
                } else if system.contains(&t.pid)
                    || t.parent
                        .is_some_and(|p| followed.get(&p) == Some(&ThreadRole::Server))
                {
                    followed.insert(t.tid, ThreadRole::Server);
                }
                lives.push(t.clone());
            }
        }
        TreeThreads {
            lives,
            names,
            followed,
        }
    }

    /// Names what ended each of `episodes` (the window's, of the command's threads) and gives
    /// every thread its role.
    pub(crate) fn assign(
        self,
        trace: &perf::OffCpuTrace,
        episodes: &[&perf::BlockedEpisode],
        window: ClockWindow,
        kallsyms: &perf::Kallsyms,
        estimator: &super::estimate::Estimator,
    ) -> AssignedThreads {
        let chain_names = |i: u32| -> Vec<String> {
            trace
                .chains
                .get(i as usize)
                .into_iter()
                .flatten()
                .filter_map(|&ip| kallsyms.function(ip).map(|(s, _)| s.name.clone()))
                .collect()
        };
        let mut causes = HashMap::new();
        let mut waits = Vec::new();
        for e in episodes {
            let cause = match e.waker {
                None => WakeCause::NotSeen,
                Some(w) => {
                    let names = chain_names(w.chain);
                    let names: Vec<&str> = names.iter().map(String::as_str).collect();
                    wake_cause(&names, &self.identity(trace, w))
                }
            };
            let child_wait = chain_names(e.kernel_chain).iter().any(|f| {
                f == "do_wait"
                    || f == "kernel_wait4"
                    || f == "kernel_waitid"
                    || f.contains("sys_wait")
            });
            waits.push(Wait {
                tid: e.tid,
                blocked: estimator.blocked(e, e.blocked_within(window.start.0, window.end.0)),
                waker: e.waker.map(|w| w.tid),
                cause: cause.clone(),
                child_wait,
                ended: e.end <= window.end.0,
                end: e.end,
            });
            causes.insert((e.tid, e.begin), cause);
        }
        let lives: Vec<Life> = self
            .lives
            .iter()
            .map(|t| Life {
                tid: t.tid,
                parent: t.parent,
                on_cpu: t.on_cpu,
                blocked: t.blocked,
                life: t.life(),
                end: t.end,
            })
            .collect();
        let (mut roles, for_started) = roles::assign(&lives, &waits);
        for (&tid, &role) in &self.followed {
            roles.insert(
                tid,
                Assigned {
                    role,
                    waiting_for_started: 0,
                },
            );
        }
        let for_started = episodes
            .iter()
            .zip(for_started)
            .filter(|(_, yes)| *yes)
            .map(|(e, _)| (e.tid, e.begin))
            .collect();
        AssignedThreads {
            lives: self.lives,
            roles,
            causes,
            for_started,
            followed: self.followed,
        }
    }

    /// Who a wake-up ran as.
    fn identity(&self, trace: &perf::OffCpuTrace, w: perf::Waker) -> WakerIdentity {
        if w.tid == 0 {
            return WakerIdentity::Idle;
        }
        if self.followed.get(&w.tid) == Some(&ThreadRole::Kernel) {
            let comm = self.names.get(&w.tid).map(|n| n.0.clone());
            return WakerIdentity::KernelThread(comm.unwrap_or_default());
        }
        match self.names.get(&w.tid) {
            Some((comm, true)) => WakerIdentity::Tree(comm.clone()),
            Some((comm, false)) => WakerIdentity::Outside(comm.clone()),
            None => match trace.wakers.get(&w.tid) {
                Some(n) if n.kernel_thread => WakerIdentity::KernelThread(n.comm.clone()),
                Some(n) => WakerIdentity::Outside(n.comm.clone()),
                None => WakerIdentity::Outside(String::new()),
            },
        }
    }
}

/// The command's threads with their roles and what ended each wait.
#[derive(Debug)]
pub(crate) struct AssignedThreads {
    lives: Vec<perf::ThreadLife>,
    roles: HashMap<u32, Assigned>,
    /// By (thread, episode begin).
    causes: HashMap<(u32, u64), WakeCause>,
    /// The episodes, by (thread, begin), that waited for what their thread started.
    for_started: HashSet<(u32, u64)>,
    /// The threads whose waits are followed, with their role (server or kernel).
    followed: HashMap<u32, ThreadRole>,
}

impl AssignedThreads {
    /// Whether thread `tid` worked (a thread without a life, never switched, counts as one).
    fn is_worker(&self, tid: u32) -> bool {
        self.roles
            .get(&tid)
            .is_none_or(|a| a.role == ThreadRole::Worker)
    }

    /// The role of thread `tid` when its waits are followed (a server's, or a kernel thread
    /// traced as it woke one), else `None`.
    pub(crate) fn followed(&self, tid: u32) -> Option<ThreadRole> {
        self.followed.get(&tid).copied()
    }

    /// The followed threads' lives inside the window, with their role.
    pub(crate) fn followed_lives(&self) -> impl Iterator<Item = (&perf::ThreadLife, ThreadRole)> {
        self.lives
            .iter()
            .filter_map(|l| Some((l, self.followed(l.tid)?)))
    }

    /// Whether thread `tid` is one of the command's and worked.
    pub(crate) fn works(&self, tid: u32) -> bool {
        self.lives.iter().any(|l| l.tid == tid) && self.is_worker(tid)
    }

    /// Whether episode `e` can be a cause: a worker's wait, not for what it started.
    pub(crate) fn is_cause(&self, e: &perf::BlockedEpisode) -> bool {
        self.is_worker(e.tid) && !self.for_started.contains(&(e.tid, e.begin))
    }

    /// What ended episode `e`.
    pub(crate) fn wake_cause(&self, e: &perf::BlockedEpisode) -> WakeCause {
        self.causes
            .get(&(e.tid, e.begin))
            .cloned()
            .unwrap_or(WakeCause::NotSeen)
    }

    /// The threads summed by role and name, workers first, then by time.
    /// `cpu_serving`: a followed thread's CPU inside the waits it ended ([`ThreadGroup::cpu_serving`]).
    pub(crate) fn groups(&self, cpu_serving: &dyn Fn(u32) -> u64) -> Vec<ThreadGroup> {
        let mut groups: BTreeMap<(ThreadRole, String), ThreadGroup> = BTreeMap::new();
        for t in &self.lives {
            let assigned = self.roles.get(&t.tid);
            let role = assigned.map_or(ThreadRole::Worker, |a| a.role);
            let g = groups
                .entry((role, t.comm.clone()))
                .or_insert_with(|| ThreadGroup {
                    role,
                    comm: t.comm.clone(),
                    threads: 0,
                    life: Nanos(0),
                    on_cpu: Nanos(0),
                    runq: Nanos(0),
                    blocked: Nanos(0),
                    stolen: Nanos(0),
                    waiting_for_started: Nanos(0),
                    cpu_serving: Nanos(0),
                    tids: Vec::new(),
                });
            g.threads += 1;
            g.life.0 += t.life();
            g.on_cpu.0 += t.on_cpu;
            g.runq.0 += t.runq;
            g.blocked.0 += t.blocked;
            g.stolen.0 += t.stolen;
            g.waiting_for_started.0 += assigned.map_or(0, |a| a.waiting_for_started);
            g.cpu_serving.0 += cpu_serving(t.tid);
            if g.tids.len() < GROUP_TIDS {
                g.tids.push(t.tid);
            }
        }
        let mut out: Vec<ThreadGroup> = groups.into_values().filter(|g| g.life.0 > 0).collect();
        out.sort_by(|a, b| a.role.cmp(&b.role).then(b.life.cmp(&a.life)));
        out
    }
}

/// A site's blocked time by what ended it.
#[derive(Debug, Default)]
pub(crate) struct WokenBy(HashMap<WakeCause, u64>);

impl WokenBy {
    pub(crate) fn add(&mut self, cause: WakeCause, blocked: u64) {
        *self.0.entry(cause).or_default() += blocked;
    }

    /// Most time first, at most [`SITE_CAUSES`] and the rest as "other"; empty when nothing
    /// was added (a built-in's site).
    pub(crate) fn into_shares(self) -> Vec<WokenShare> {
        let mut v: Vec<(WakeCause, u64)> = self.0.into_iter().collect();
        v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let rest: u64 = v.iter().skip(SITE_CAUSES).map(|c| c.1).sum();
        let mut out: Vec<WokenShare> = v
            .into_iter()
            .take(SITE_CAUSES)
            .map(|(c, t)| WokenShare {
                by: c.to_string(),
                total: Nanos(t),
            })
            .collect();
        if rest > 0 {
            out.push(WokenShare {
                by: "other".into(),
                total: Nanos(rest),
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sites_wake_causes_are_most_time_first_and_the_tail_is_summed() {
        let mut w = WokenBy::default();
        w.add(WakeCause::Timer, 5);
        w.add(WakeCause::FutexWake, 50);
        w.add(WakeCause::FutexWake, 50);
        w.add(WakeCause::IoCompletion, 20);
        w.add(WakeCause::NotSeen, 3);
        w.add(WakeCause::Signal, 2);
        w.add(WakeCause::Exit, 1);
        let shares: Vec<(String, u64)> = w
            .into_shares()
            .into_iter()
            .map(|s| (s.by, s.total.0))
            .collect();
        assert_eq!(shares[0], (WakeCause::FutexWake.to_string(), 100));
        assert_eq!(shares[1], (WakeCause::IoCompletion.to_string(), 20));
        assert_eq!(shares.len(), 5);
        assert_eq!(shares[4], ("other".to_string(), 3));
        assert!(WokenBy::default().into_shares().is_empty());
    }
}
