//! Waits followed across processes: a worker's wait that a thread of a server ended (a client
//! blocked in `poll` until its PostgreSQL backend answered) is charged to what that thread was
//! doing — its CPU, its wait for a CPU, or its own waits, each followed in turn when another
//! server thread ended them — instead of stopping at "the socket's other end". This is the
//! wait-for graph of wPerf (Zhou et al., OSDI '18), with its cycles cut: a server thread's
//! waits that a worker ended (a backend idle until its client's next query) or that a thread
//! already on the chain ended are not part of what the worker waited for.
//!
//! The charge is aggregate, not interval by interval: a server thread's time inside the window
//! (on a CPU, waiting for one, and its waits by cause, as sampled) is shared out over the
//! worker waits it ended in proportion. For a server thread that works only while a client
//! waits for it (a backend per connection), the two are the same time; for one shared by many
//! clients the proportions are its whole window's. Chains stop after [`MAX_DEPTH`] server
//! threads.

use std::collections::{HashMap, HashSet};

use super::classify::Cause;
use super::wake::WakeCause;

/// Server threads a chain passes through at most.
pub(crate) const MAX_DEPTH: usize = 3;

/// Where a followed wait ends.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum End {
    /// The server thread ran on a CPU.
    Cpu,
    /// It waited for a CPU.
    RunQueue,
    /// It waited itself: its wait's cause and what ended it.
    Wait { cause: Cause, woken: WakeCause },
}

/// A share of a worker's wait: the server thread's name (`comm`) where the chain ended, the
/// end, its representative episode (pid, kernel chain, user chain) where it is a wait, and the
/// share.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reached {
    pub server: String,
    /// The thread is a kernel thread (jbd2, a kworker), not a server's.
    pub kernel_thread: bool,
    pub end: End,
    pub longest: Option<(u32, u32, u32)>,
    pub share: f64,
}

/// One group of a server thread's waits: their cause, what ended them, the thread whose
/// wake-up it was (followed only where that thread ended it itself:
/// [`WakeCause::by_the_waker`]).
type WaitKey = (Cause, WakeCause, Option<u32>);

#[derive(Debug, Default)]
struct Waits {
    ns: f64,
    /// The longest episode's (pid, kernel chain, user chain) and its length.
    longest: (u32, u32, u32),
    max: u64,
}

#[derive(Debug, Default)]
struct ServerThread {
    comm: String,
    kernel_thread: bool,
    on_cpu: u64,
    runq: u64,
    waits: HashMap<WaitKey, Waits>,
}

/// The server threads of a trial and what they did inside the window.
#[derive(Debug, Default)]
pub(crate) struct ServerThreads {
    threads: HashMap<u32, ServerThread>,
}

impl ServerThreads {
    /// A server thread's life inside the window.
    /// A followed thread's life inside the window: its name and whether a kernel thread.
    pub(crate) fn add_life(
        &mut self,
        tid: u32,
        (comm, kernel): (&str, bool),
        on_cpu: u64,
        runq: u64,
    ) {
        let t = self.threads.entry(tid).or_default();
        t.comm = comm.to_string();
        t.kernel_thread = kernel;
        t.on_cpu += on_cpu;
        t.runq += runq;
    }

    /// One of a server thread's waits: `ns` of blocked time it stands for, its cause, what
    /// ended it and which thread did, and its episode's (pid, kernel chain, user chain) and
    /// length.
    pub(crate) fn add_wait(
        &mut self,
        tid: u32,
        (cause, woken, waker): WaitKey,
        ns: f64,
        (episode, length): ((u32, u32, u32), u64),
    ) {
        let w = self
            .threads
            .entry(tid)
            .or_default()
            .waits
            .entry((cause, woken, waker))
            .or_default();
        w.ns += ns;
        if length >= w.max {
            w.max = length;
            w.longest = episode;
        }
    }

    /// Whether `tid` is a server thread.
    pub(crate) fn contains(&self, tid: u32) -> bool {
        self.threads.contains_key(&tid)
    }

    /// What a worker's wait ended by server thread `tid` was spent on, by share (adding up to
    /// 1); empty when the thread did nothing that can be told (no time in the window).
    /// `is_worker` says which threads are the command's workers (their waking a server thread
    /// ends the chain there: the server was waiting for them).
    pub(crate) fn follow(&self, tid: u32, is_worker: &dyn Fn(u32) -> bool) -> Vec<Reached> {
        let mut out = Vec::new();
        let mut on_chain = HashSet::from([tid]);
        self.follow_from(tid, 1.0, 1, &mut on_chain, is_worker, &mut out);
        // One entry per end.
        let mut merged: Vec<Reached> = Vec::new();
        for r in out {
            match merged.iter_mut().find(|m| {
                m.server == r.server && m.kernel_thread == r.kernel_thread && m.end == r.end
            }) {
                Some(m) => m.share += r.share,
                None => merged.push(r),
            }
        }
        merged
    }

    fn follow_from(
        &self,
        tid: u32,
        weight: f64,
        depth: usize,
        on_chain: &mut HashSet<u32>,
        is_worker: &dyn Fn(u32) -> bool,
        out: &mut Vec<Reached>,
    ) {
        let Some(t) = self.threads.get(&tid) else {
            return;
        };
        let counted: Vec<(&WaitKey, &Waits)> = t
            .waits
            .iter()
            .filter(|((_, _, waker), _)| {
                !waker.is_some_and(|w| is_worker(w) || (on_chain.contains(&w) && w != tid))
            })
            .collect();
        let total =
            t.on_cpu as f64 + t.runq as f64 + counted.iter().map(|(_, w)| w.ns).sum::<f64>();
        if total <= 0.0 {
            return;
        }
        let reached = |end: End, longest, share: f64| Reached {
            server: t.comm.clone(),
            kernel_thread: t.kernel_thread,
            end,
            longest,
            share,
        };
        if t.on_cpu > 0 {
            out.push(reached(End::Cpu, None, weight * t.on_cpu as f64 / total));
        }
        if t.runq > 0 {
            out.push(reached(End::RunQueue, None, weight * t.runq as f64 / total));
        }
        for ((cause, woken, waker), w) in counted {
            let share = weight * w.ns / total;
            let next = waker.filter(|&n| {
                woken.by_the_waker()
                    && n != tid
                    && depth < MAX_DEPTH
                    && self.threads.contains_key(&n)
                    && !on_chain.contains(&n)
            });
            match next {
                Some(n) => {
                    let before = out.len();
                    on_chain.insert(n);
                    self.follow_from(n, share, depth + 1, on_chain, is_worker, out);
                    on_chain.remove(&n);
                    if out.len() > before {
                        continue;
                    }
                    out.push(reached(
                        End::Wait {
                            cause: cause.clone(),
                            woken: woken.clone(),
                        },
                        Some(w.longest),
                        share,
                    ));
                }
                None => out.push(reached(
                    End::Wait {
                        cause: cause.clone(),
                        woken: woken.clone(),
                    },
                    Some(w.longest),
                    share,
                )),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cause(object: &str) -> Cause {
        Cause {
            kind: "io".into(),
            object: object.into(),
            caller: String::new(),
        }
    }

    fn wait(s: &mut ServerThreads, tid: u32, object: &str, waker: Option<u32>, ns: f64) {
        let woken = match waker {
            Some(_) => WakeCause::Socket,
            None => WakeCause::Journal,
        };
        s.add_wait(
            tid,
            (cause(object), woken, waker),
            ns,
            ((tid, 0, 0), ns as u64),
        );
    }

    #[test]
    fn a_backends_time_is_shared_out_and_its_wait_for_the_client_is_left_out() {
        let mut s = ServerThreads::default();
        s.add_life(10, ("postgres", false), 300, 100);
        wait(&mut s, 10, "fdatasync", None, 600.0);
        // Idle until its client (worker 1) sent the next query: not what the client waited for.
        wait(&mut s, 10, "recv", Some(1), 5_000.0);
        let reached = s.follow(10, &|t| t == 1);
        let share = |e: &End| reached.iter().find(|r| &r.end == e).map(|r| r.share);
        assert_eq!(share(&End::Cpu), Some(0.3));
        assert_eq!(share(&End::RunQueue), Some(0.1));
        let fsync = End::Wait {
            cause: cause("fdatasync"),
            woken: WakeCause::Journal,
        };
        assert_eq!(share(&fsync), Some(0.6));
        assert_eq!(reached.len(), 3);
        assert!(reached.iter().all(|r| r.server == "postgres"));
    }

    #[test]
    fn a_wait_another_server_thread_ended_is_followed_into_it_and_cycles_are_cut() {
        let mut s = ServerThreads::default();
        // Backend 10: half CPU, half waiting for backend 11's lock.
        s.add_life(10, ("postgres", false), 500, 0);
        wait(&mut s, 10, "semop", Some(11), 500.0);
        // Backend 11: all in fdatasync, and a wait ended by 10 (a cycle back).
        s.add_life(11, ("postgres", false), 0, 0);
        wait(&mut s, 11, "fdatasync", None, 300.0);
        wait(&mut s, 11, "semop", Some(10), 300.0);
        let reached = s.follow(10, &|_| false);
        let total: f64 = reached.iter().map(|r| r.share).sum();
        assert!((total - 1.0).abs() < 1e-9, "{reached:?}");
        let fsync = reached
            .iter()
            .find(|r| {
                r.end
                    == End::Wait {
                        cause: cause("fdatasync"),
                        woken: WakeCause::Journal,
                    }
            })
            .unwrap();
        // 11's own: its wait ended by 10 is on the chain already, so all of 11 is fdatasync.
        assert!((fsync.share - 0.5).abs() < 1e-9, "{reached:?}");
        assert!(
            reached
                .iter()
                .all(|r| !matches!(&r.end, End::Wait { cause, .. } if cause.object == "semop"))
        );
    }

    #[test]
    fn a_thread_that_did_nothing_in_the_window_reaches_nothing() {
        let mut s = ServerThreads::default();
        s.add_life(10, ("postgres", false), 0, 0);
        assert!(s.follow(10, &|_| false).is_empty());
        assert!(s.follow(99, &|_| false).is_empty());
    }
}
